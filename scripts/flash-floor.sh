#!/bin/sh
# The flash floor (issue 19, item 9; Docs/benchmarks.md, "Flash"): builds
# Benchmarks/FlashFloor, small programs that each use one library the project's brief
# names (and one that uses all of them), with the release build's size measures
# (Makefile RELEASE_SIZE_FLAGS: static Swift runtime, -Osize, function sections, lld
# with the wrapper that leaves unused objects out, identical code folded, no unwind
# tables, packed relocations), strips each and prints its size. MediaRoute's own code is in none of them.
#
# Usage: scripts/flash-floor.sh     (about 4 minutes from clean; the packages come
#                                    from the same mirror as the main package's)
set -eu
# The traits' -D flags in one order from run to run (the Makefile says why).
export SWIFT_DETERMINISTIC_HASHING=1
cd "$(dirname "$0")/.."
flags=$(make -s release-size-flags)
# The same package requirements as the daemon's, taken from its manifest.
dependencies=$(grep -E '^[[:space:]]*\.package\(url:' Package.swift)
[ -n "$dependencies" ] || { echo "flash-floor: no dependencies found in Package.swift" >&2; exit 1; }
cd Benchmarks/FlashFloor
DEPENDENCIES="$dependencies" awk '$0 == "@DEPENDENCIES@" { print ENVIRON["DEPENDENCIES"]; next } { print }' \
    Package.swift.in > Package.swift
# $flags splits into its words on purpose (the Makefile's paths have no spaces).
# shellcheck disable=SC2086
swift build $flags --scratch-path .build-release >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| program | stripped bytes | MB |"
echo "|---|---|---|"
for product in floor-hello floor-cli floor-json floor-nio floor-tls floor-protobuf floor-all; do
    strip -o "$work/$product" ".build-release/release/$product"
    bytes=$(stat -c %s "$work/$product")
    echo "| $product | $bytes | $(awk "BEGIN { printf \"%.2f\", $bytes / 1000000 }") |"
done

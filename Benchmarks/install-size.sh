#!/bin/sh
# What MediaRoute costs a box's flash (issue 41; figures in Docs/benchmarks.md, "Flash"):
#  1. everything `make install-files` installs, uncompressed, and as it lands in a squashfs image
#     (`mksquashfs … -comp xz -b 256K`, the common firmware layout);
#  2. the Debian packages each feature adds to a box's root at run time (the binary opens
#     libavcodec and libpipewire only when a feature needs them): the installed size of each
#     package's dependency closure beyond a minimal Debian 12 root with systemd, udev and D-Bus
#     (the boot test's root, Tests/Package/boot-test.sh, when it is cached; else only part 1).
#
#   Benchmarks/install-size.sh [BINARIES]   (default .build-release/release, as `make release` leaves it)
set -eu
cd "$(dirname "$0")/.."
binaries=${1:-.build-release/release}
[ -x "$binaries/mediarouted" ] || { echo "install-size: $binaries/mediarouted missing (make release)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make --no-print-directory install-files BINARIES="$binaries" DESTDIR="$work/root" PREFIX=/usr >/dev/null
installed=$(find "$work/root" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
binary=$(stat -c %s "$work/root/usr/bin/mediarouted")
mksquashfs "$work/root" "$work/image.squashfs" -comp xz -b 256K -noappend -quiet -no-progress >/dev/null
squashed=$(stat -c %s "$work/image.squashfs")
mb() { awk -v b="$1" 'BEGIN {printf "%.2f MB", b / 1000000}'; }
echo "installed by make install-files: $installed bytes ($(mb "$installed")); the binary $binary bytes ($(mb "$binary"))"
echo "as a squashfs image (xz, 256 KiB blocks): $squashed bytes ($(mb "$squashed"))"

# Part 2: the run-time packages, beyond the boot test's root.
root=$(ls .build-boot/bookworm-*.tar 2>/dev/null | head -1 || true)
if [ -z "$root" ]; then
    echo "run-time packages: skipped (no cached Debian root: run Tests/Package/boot-test.sh once)"
    exit 0
fi
tar -C "$work" -xf "$root" ./var/lib/dpkg/status
# What apt would add to that root for a package, as it resolves it (alternatives chosen once).
added() {
    apt-get install --simulate --no-install-recommends -o Dir::State::status="$work/var/lib/dpkg/status" "$@" 2>/dev/null \
        | awk '/^Inst / {print $2}' | sort -u
}
size_of() {
    # Installed-Size is in KiB; the candidate version's.
    [ -s "$1" ] || { echo 0; return; }
    apt-cache show --no-all-versions $(cat "$1") 2>/dev/null | awk '/^Installed-Size:/ {s += $2} END {print s * 1024}'
}
for feature in "the package's own dependencies:mediaroute-depends" "AirPlay's ALAC (libavcodec59):libavcodec59" "the PipeWire nodes (libpipewire-0.3-0):libpipewire-0.3-0" "Bluetooth (bluez):bluez" "aptX and aptX HD (libfreeaptx0):libfreeaptx0" "LDAC (libldacbt-enc2 libldacbt-abr2):libldacbt-enc2 libldacbt-abr2" "real-time video's H.264 (libopenh264-7):libopenh264-7"; do
    name=${feature%%:*}
    packages=${feature##*:}
    if [ "$packages" = mediaroute-depends ]; then
        packages="dbus-system-bus-common libc6 libgcc-s1 libudev1 systemd"
    fi
    # shellcheck disable=SC2086
    added $packages >"$work/added"
    echo "$name: $(wc -l <"$work/added") packages beyond the root, $(size_of "$work/added") bytes installed ($(mb "$(size_of "$work/added")"))"
done

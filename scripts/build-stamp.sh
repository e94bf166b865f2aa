#!/bin/sh
# Stamps the commit being built into the binaries (Sources/CBuildStamp): writes
# Sources/CBuildStamp/generated/commit.h when what it would say changed, and only then, so an
# unchanged tree rebuilds nothing. MEDIAROUTE_COMMIT overrides git (a build from a tarball).
set -eu
cd "$(dirname "$0")/.."
commit=${MEDIAROUTE_COMMIT:-}
if [ -z "$commit" ] && git rev-parse --git-dir >/dev/null 2>&1; then
    commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
    git diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
fi
commit=${commit:-unknown}
# Only what a commit name may hold reaches the C string.
case "$commit" in *[!A-Za-z0-9._+-]*) echo "build-stamp: refusing commit name '$commit'" >&2; exit 1;; esac
header=Sources/CBuildStamp/generated/commit.h
line="#define MEDIAROUTE_COMMIT \"$commit\""
if [ "$(cat "$header" 2>/dev/null)" != "$line" ]; then
    mkdir -p "$(dirname "$header")"
    printf '%s\n' "$line" >"$header"
    touch Sources/CBuildStamp/stamp.c
fi

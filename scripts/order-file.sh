#!/bin/sh
# Regenerates Packaging/mediarouted.order, the link order of the release daemon
# (see Makefile RELEASE_FLAGS and Docs/benchmarks.md): runs the release
# mediarouted under callgrind on a private bus, asks it to discover (as the
# daemon benchmark does), lets it idle, and lists the functions it ran.
# Needs valgrind, dbus-daemon, busctl, binutils. Run after larger changes;
# names that no longer exist are ignored by the linker.
set -eu
cd "$(dirname "$0")/.."
make release
work=$(mktemp -d)
trap 'kill $(cat "$work/bus.pid") 2>/dev/null; rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the DWARF 5 that swiftc writes: profile a copy without it.
strip --strip-debug -o "$work/mediarouted" .build-release/release/mediarouted
address=$(dbus-daemon --session --print-address --fork --print-pid 3 3>"$work/bus.pid" | head -1)
valgrind --tool=callgrind --callgrind-out-file="$work/profile" "$work/mediarouted" --bus "$address" --log-level error &
daemon=$!
for _ in $(seq 1 300); do
    busctl --address="$address" status org.mediaroute >/dev/null 2>&1 && break
    sleep 0.1
done
busctl --address="$address" call org.mediaroute /org/mediaroute org.mediaroute.Manager1 StartDiscovery
sleep 15
kill -INT $daemon
wait $daemon || true
mkdir -p Packaging
python3 scripts/order-file.py "$work/profile" "$work/mediarouted" > Packaging/mediarouted.order
echo "Packaging/mediarouted.order: $(wc -l < Packaging/mediarouted.order) functions"

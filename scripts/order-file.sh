#!/bin/sh
# Regenerates Packaging/mediarouted.order, the link order of the release daemon
# (see Makefile RELEASE_FLAGS and Docs/benchmarks.md): links the release
# mediarouted with a link map, runs it under callgrind on a private bus, asks it
# to discover (as the daemon benchmark does), lets it idle, and lists the
# sections whose code ran (scripts/order-file.py). Needs valgrind, dbus-daemon,
# busctl, binutils and no other mediarouted running (its push endpoint's port).
# Run after larger changes; names that no longer exist are ignored by the linker.
set -eu
# The traits' -D flags in one order from run to run (the Makefile says why).
export SWIFT_DETERMINISTIC_HASHING=1
cd "$(dirname "$0")/.."
make release
work=$(mktemp -d)
trap 'kill $(cat "$work/bus.pid") 2>/dev/null || true; rm -rf "$work"' EXIT
# The map must describe the profiled binary: link it once more with one.
rm -f .build-release/release/mediarouted
# shellcheck disable=SC2046 # the flags are words
swift build $(make -s release-flags) --product mediarouted -Xlinker -Map="$work/map" -Xlinker --no-demangle
# valgrind 3.19 cannot read the DWARF 5 that swiftc writes: profile a copy without it.
strip --strip-debug -o "$work/mediarouted" .build-release/release/mediarouted
# `busctl status` also reads the owner's credentials, which a chroot may not give.
has_name() {
    busctl --address="$address" call org.freedesktop.DBus / org.freedesktop.DBus NameHasOwner s org.mediaroute 2>/dev/null | grep -q true
}
# With the LAN extension on, as on the system bus, so that its start-up code is placed too.
address=$(dbus-daemon --session --print-address --fork --print-pid 3 3>"$work/bus.pid" | head -1)
# With a household key, so that the box's presence (its mDNS responder and coordination medium) is placed too.
(umask 077; head -c 32 /dev/urandom > "$work/household.key")
valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$work/profile" \
    "$work/mediarouted" --bus "$address" --lan on --household-key "$work/household.key" --log-level error 2>"$work/log" &
daemon=$!
for _ in $(seq 1 300); do
    has_name && break
    sleep 0.1
done
busctl --address="$address" call org.mediaroute /org/mediaroute org.mediaroute.Manager1 StartDiscovery
sleep 15
kill -INT $daemon
wait $daemon || true
# A profile of a daemon that failed to start a part (e.g. its push port taken) lacks that part's code.
if grep "error mediarouted" "$work/log"; then
    echo "order-file.sh: the profiled daemon reported errors; nothing written" >&2
    exit 1
fi
python3 scripts/order-file.py "$work/profile" "$work/map" mediarouted > "$work/order"
mv "$work/order" Packaging/mediarouted.order
echo "Packaging/mediarouted.order: $(wc -l < Packaging/mediarouted.order) symbols"
# The next `make release` relinks without the map, in the new order.
make release

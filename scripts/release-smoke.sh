#!/bin/sh
# Checks the release binaries that `make install` installs (CI runs it after `make release`):
# they need no C library of ours at run time (they are linked in, Packaging/link); the daemon
# takes its name on a private bus, answers a discovery with the loopback devices when asked to
# simulate them (--simulate), and stops cleanly on SIGTERM; mediaroutectl runs its demo to the end.
set -eu
cd "$(dirname "$0")/.."
binary=.build-release/release/mediarouted
control=.build-release/release/mediaroutectl
fail() { echo "release-smoke: $*" >&2; exit 1; }

for file in "$binary" "$control"; do
    libraries=$(ldd "$file")
    for library in libdbus-1 libexpat libnl-3 libsbc libstdc++ libsystemd libicu libxml2; do
        case "$libraries" in *"$library"*) fail "$file still loads $library" ;; esac
    done
done
"$control" demo | tail -1 | grep -q "Demo finished." || fail "$control demo did not finish"

work=$(mktemp -d)
daemon=""
cleanup() {
    kill "$(cat "$work/bus.pid")" 2>/dev/null || true
    [ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
# `busctl status` also reads the owner's credentials, which a chroot may not give.
has_name() {
    busctl --address="$address" call org.freedesktop.DBus / org.freedesktop.DBus NameHasOwner s org.mediaroute 2>/dev/null | grep -q true
}
address=$(dbus-daemon --session --print-address --fork --print-pid 3 3>"$work/bus.pid" | head -1)
"$binary" --bus "$address" --simulate --push-listen off --log-level error &
daemon=$!
for _ in $(seq 1 100); do
    has_name && break
    sleep 0.1
done
has_name || fail "no org.mediaroute on the bus"
busctl --address="$address" call org.mediaroute /org/mediaroute org.mediaroute.Manager1 StartDiscovery
sleep 1
objects=$(busctl --address="$address" call org.mediaroute /org/mediaroute org.freedesktop.DBus.ObjectManager GetManagedObjects)
case "$objects" in *org.mediaroute.Device1*) ;; *) fail "no devices after StartDiscovery: $objects" ;; esac
kill -TERM "$daemon"
status=0
wait "$daemon" || status=$?
daemon=""
[ "$status" -eq 0 ] || fail "exit status $status after SIGTERM"
echo "release-smoke: $binary and $control ok"

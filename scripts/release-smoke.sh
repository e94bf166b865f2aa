#!/bin/sh
# Checks the release binaries that `make install` installs (CI runs it after `make release`):
# they need no C library of ours at run time (they are linked in, Packaging/link); nothing
# simulated is in them (built without the SimulatedDevices trait) and they say so when asked;
# the daemon takes its name on a private bus, answers a discovery and stops cleanly on SIGTERM;
# mediaroutectl finds a real renderer (gmediarender, in a network namespace of its own) and
# plays to it, through the daemon and in its own process.
set -eu
cd "$(dirname "$0")/.."
binary=.build-release/release/mediarouted
control=.build-release/release/mediaroutectl
fail() { echo "release-smoke: $*" >&2; exit 1; }

for file in "$binary" "$control"; do
    libraries=$(ldd "$file")
    # libexpat is linked shared on purpose (Packaging/link/ld-static-system-libs says why).
    for library in libdbus-1 libnl-3 libsbc libstdc++ libsystemd libicu libxml2; do
        case "$libraries" in *"$library"*) fail "$file still loads $library" ;; esac
    done
done
# Nothing simulated ships: no loopback code, and the options say why they are refused.
if nm "$binary" | grep -q 'Loopback\(Transport\|Extension\|Scenario\)'; then fail "$binary has the simulated devices in it"; fi
# The link leaves out unused objects (Packaging/link/lazy-objects), but never one whose conformance
# the runtime finds only by scanning: NIO's datagram bootstrap needs swift-atomics' `Bool: AtomicValue`.
nm "$binary" | grep -q ' \$sSb7Atomics11AtomicValueAAMc$' || fail "$binary lost the conformance Bool: AtomicValue"
# The Unicode scalar names are left out (Packaging/link/no-scalar-names.c), answered "no name".
nm "$binary" | grep -q ' __wrap__swift_stdlib_getScalarName$' || fail "$binary lost the scalar-name stub"
if nm "$binary" | grep -q '_swift_stdlib_names$'; then fail "$binary still has the Unicode scalar names"; fi
refusal=$("$binary" --simulate 2>&1) && fail "$binary --simulate was accepted"
case "$refusal" in *"development builds only"*) ;; *) fail "$binary --simulate: $refusal" ;; esac
refusal=$("$control" devices --simulate 2>&1) && fail "$control --simulate was accepted"
case "$refusal" in *"development builds only"*) ;; *) fail "$control devices --simulate: $refusal" ;; esac
"$control" demo >/dev/null 2>&1 && fail "$control has a demo"

work=$(mktemp -d)
daemon=""
renderer=""
room=""
cleanup() {
    kill "$(cat "$work/bus.pid")" 2>/dev/null || true
    [ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true
    [ -z "$renderer" ] || kill "$renderer" 2>/dev/null || true
    [ -z "$room" ] || { ip link del "${room}a" 2>/dev/null || true; ip netns del "$room" 2>/dev/null || true; }
    rm -rf "$work"
}
trap cleanup EXIT
# `busctl status` also reads the owner's credentials, which a chroot may not give.
has_name() {
    busctl --address="$address" call org.freedesktop.DBus / org.freedesktop.DBus NameHasOwner s org.mediaroute 2>/dev/null | grep -q true
}
# A real renderer in a room of its own: gmediarender behind a veth pair (10.77.1.0/24).
if command -v gmediarender >/dev/null && ip netns list >/dev/null 2>&1; then
    room=mrsmoke$$
    ip netns add "$room"
    ip link add "${room}a" type veth peer name "${room}b"
    ip link set "${room}b" netns "$room"
    ip addr add 10.77.1.1/24 dev "${room}a"
    ip link set "${room}a" up
    ip -n "$room" addr add 10.77.1.2/24 dev "${room}b"
    ip -n "$room" link set "${room}b" up
    ip -n "$room" link set lo up
    ip -n "$room" route add 224.0.0.0/4 dev "${room}b"
    ip netns exec "$room" gmediarender -I "${room}b" -p 49494 -f "Smoke TV" -u 0a1b2c3d-0000-4000-8000-00000000050e \
        --gstout-audiopipe="fakesink sync=true" --gstout-videosink=fakesink >"$work/renderer.log" 2>&1 &
    renderer=$!
    for _ in $(seq 1 100); do
        grep -q "Ready for rendering" "$work/renderer.log" && break
        sleep 0.1
    done
    # In the tool's own process, the LAN only, on the room's link.
    found=$("$control" devices --no-daemon --transports lan --lan-interface "${room}a" --seconds 4 2>&1) || fail "devices: $found"
    case "$found" in *"Smoke TV"*) ;; *) fail "mediaroutectl did not find the renderer: $found" ;; esac
else
    echo "release-smoke: no gmediarender or no network namespaces here: the real-renderer steps are skipped"
fi

address=$(dbus-daemon --session --print-address --fork --print-pid 3 3>"$work/bus.pid" | head -1)
if [ -n "$room" ]; then
    # The daemon serves local files only from the directories it is told (here, the smoke test's own).
    "$binary" --bus "$address" --lan on --lan-interfaces "${room}a" --adapters off --push-listen off --log-level error --serve-from "$work" &
else
    "$binary" --bus "$address" --adapters off --push-listen off --log-level error &
fi
daemon=$!
for _ in $(seq 1 100); do
    has_name && break
    sleep 0.1
done
has_name || fail "no org.mediaroute on the bus"
busctl --address="$address" call org.mediaroute /org/mediaroute org.mediaroute.Manager1 StartDiscovery
if [ -n "$room" ]; then
    # Through the daemon: found, played to, stopped.
    found=$("$control" devices --bus "$address" --seconds 4 2>&1) || fail "devices through the daemon: $found"
    case "$found" in *"Smoke TV"*) ;; *) fail "the daemon did not find the renderer: $found" ;; esac
    # Ten seconds of silence (8 kHz, 16-bit mono), served to the renderer by the tool.
    python3 -c 'import sys, wave; w = wave.open(sys.argv[1], "wb"); w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000); w.writeframes(bytes(160000)); w.close()' "$work/smoke.wav"
    played=$("$control" play --bus "$address" "$work/smoke.wav" --to "Smoke TV" 2>&1) || fail "play: $played"
    case "$played" in *"on Smoke TV"*) ;; *) fail "play: $played" ;; esac
    "$control" stop --bus "$address" --to "Smoke TV" >/dev/null 2>&1 || fail "stop"
else
    status=$("$control" status --bus "$address" 2>&1) || fail "status through the daemon: $status"
fi
kill -TERM "$daemon"
status=0
wait "$daemon" || status=$?
daemon=""
[ "$status" -eq 0 ] || fail "exit status $status after SIGTERM"
echo "release-smoke: $binary and $control ok"

#!/bin/sh
# The minimal build a box maker may choose (UPnP/DLNA and Bluetooth: `make release TRAITS=Bluetooth`),
# built and checked as CI's last step, so that a protocol left out still builds and says so:
# --help names the protocols, a left-out option is one line, a left-out configuration key is one
# notice, and neither BoringSSL nor swift-protobuf is linked in.
set -eu
cd "$(dirname "$0")/.."
make --no-print-directory release-binaries TRAITS=Bluetooth >/dev/null
binary=.build-release-Bluetooth/release/mediarouted
status=0
check() { if "$@"; then echo "traits: ok $description"; else echo "traits: FAIL $description"; status=1; fi; }
help=$("$binary" --help)
description="--help names this build's protocols"
check test "$(echo "$help" | tail -1)" = "Protocols in this build: UPnP/DLNA, Bluetooth (left out: Cast, AirPlay, PipeWire, WiFi)"
description="--help has no AirPlay option"
check sh -c "! echo \"\$1\" | grep -q -- --airplay-latency" _ "$help"
said=$("$binary" --airplay-latency 1 2>&1 || true)
description="a left-out protocol's option is one line"
check test "$said" = "mediarouted: --airplay-latency: this build leaves AirPlay out (built without the AirPlay trait)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[daemon]\nairplay-latency = 1\n[wifi]\nscan-mode = p2p\n[bluetooth]\na2dp-source = yes\n' >"$work/box.conf"
notices=$("$binary" --config "$work/box.conf" --check-config 2>&1 >/dev/null | grep 'is ignored' || true)
description="left-out configuration keys are one notice each"
check test "$notices" = "mediarouted: $work/box.conf:2: airplay-latency in [daemon] is ignored: this build leaves AirPlay out (built without the AirPlay trait)
mediarouted: $work/box.conf:3: [wifi] is ignored: this build leaves WiFi out (built without the WiFi trait)"
description="neither BoringSSL nor swift-protobuf is linked in"
check test "$(nm "$binary" | grep -c -E 'CNIOBoringSSL|SwiftProtobuf' || true)" = 0
description="mediaroutectl offers only this build's transports"
check sh -c "\"\$1\" devices --help | grep -q '(lan, bluez; default'" _ "$(dirname "$binary")/mediaroutectl"
exit $status

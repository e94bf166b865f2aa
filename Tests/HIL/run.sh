#!/bin/sh
# The virtual hardware-in-the-loop rig (issue 23), first part: Debian's own kernel in
# QEMU (TCG) with mac80211_hwsim radios, a hostapd "TV" beaconing a P2P + Wi-Fi Display
# element and a speaker in setup mode; MediaRoute's release binary finds both through the
# real nl80211 scan path, and the daemon follows a station joining, through rtnetlink and
# nl80211 MLME events.
#
# Everything comes from Debian packages: the kernel package is downloaded and unpacked
# (not installed) into .build-hil/ and its modules indexed with depmod; the guest's root
# is an initramfs of busybox, hostapd, iw and dbus-daemon with the libraries they load, plus the
# project's release binary (`make release` first). Prints one line per check; on
# failure the console log is kept in .build-hil/logs/.
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)
cache="$root/.build-hil"
mkdir -p "$cache/logs"
binary="$root/.build-release/release/mediarouted"
[ -x "$binary" ] || { echo "hil: $binary missing (make release)" >&2; exit 1; }

# The newest 6.1 kernel Debian offers, unless HIL_KERNEL names one.
version=${HIL_KERNEL:-$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' | sort -V | tail -1 | sed 's/^linux-image-//')}
kernel="$cache/kernel-$version"
if [ ! -f "$kernel/boot/vmlinuz-$version" ]; then
    rm -rf "$kernel" "$cache/download"
    mkdir -p "$cache/download"
    (cd "$cache/download" && apt-get download "linux-image-$version" >/dev/null 2>&1)
    dpkg-deb -x "$cache"/download/linux-image-"$version"_*.deb "$kernel"
    /sbin/depmod -b "$kernel" "$version"
    rm -rf "$cache/download"
fi

# The guest's root: rebuilt each run (a few MB, seconds), so it always has this build.
image="$cache/initramfs"
rm -rf "$image"
mkdir -p "$image/bin" "$image/lib/modules" "$image/etc" "$image/proc" "$image/sys" "$image/dev" "$image/tmp" "$image/run" "$image/var/run"
cp /bin/busybox "$image/bin/busybox"
for tool in sh mount insmod ip sleep cat grep ls poweroff echo mkdir wc cp; do ln -s busybox "$image/bin/$tool"; done
copy_with_libraries() {
    cp "$1" "$image/bin/"
    ldd "$1" | awk '/=>/ {print $3} /ld-linux/ {print $1}' | while read -r library; do
        [ -f "$library" ] || continue
        mkdir -p "$image$(dirname "$library")"
        cp -L "$library" "$image$library"
    done
}
copy_with_libraries "$(command -v hostapd)"
copy_with_libraries "$(command -v iw)"
copy_with_libraries "$(command -v dbus-daemon)"
copy_with_libraries /usr/libexec/bluetooth/bluetoothd
copy_with_libraries "$(command -v btattach)"
copy_with_libraries "$(command -v btvirt)"
# Round 5, an experiment (HIL_PIPEWIRE=1; Docs/hil.md): Debian's PipeWire and WirePlumber as an
# aptX sink (libspa-0.2-bluetooth); their modules and SPA plugins come from the host's library
# folder over 9p, their configuration with them here.
pipewire_round=${HIL_PIPEWIRE:-0}
if [ "$pipewire_round" = 1 ]; then
for tool in pipewire wireplumber pw-cli pw-cat; do copy_with_libraries "$(command -v "$tool")"; done
ln -sf pw-cat "$image/bin/pw-record"
mkdir -p "$image/usr/share" "$image/etc/wireplumber/bluetooth.lua.d"
cp -r /usr/share/pipewire /usr/share/wireplumber /usr/share/spa-0.2 "$image/usr/share/"
cat >"$image/etc/wireplumber/bluetooth.lua.d/51-hil.lua" <<'LUA'
-- The rig's guest has no logind; PipeWire is the A2DP sink, with aptX (and SBC).
bluez_monitor.properties["with-logind"] = false
bluez_monitor.properties["bluez5.roles"] = "[ a2dp_sink ]"
bluez_monitor.properties["bluez5.codecs"] = "[ aptx sbc ]"
-- It waits to be connected to: left to itself it connects to bonded devices as a source.
table.insert(bluez_monitor.rules, {
  matches = { { { "device.name", "matches", "bluez_card.*" } } },
  apply_properties = { ["bluez5.auto-connect"] = "[ ]" },
})
LUA
fi
# The guest's byte pump between the sink's console port and btvirt's socket (Tests/HIL/h4_bridge.c).
clang -O2 -o "$cache/h4_bridge" "$root/Tests/HIL/h4_bridge.c"
copy_with_libraries "$cache/h4_bridge"
# The tone the box streams over A2DP: 6 s of 1 kHz at half scale, 16-bit stereo, 44.1 kHz (long enough
# that a route which steps its bit rate down at first, as AAC does in this emulated guest, settles).
/usr/bin/python3 - "$image/etc/tone.wav" <<'PY'
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as out:
    out.setnchannels(2); out.setsampwidth(2); out.setframerate(44100)
    out.writeframes(b"".join(struct.pack("<hh", v, v) for v in (int(16384 * math.sin(2 * math.pi * 1000 * i / 44100)) for i in range(6 * 44100))))
PY
printf 'root:x:0:0:root:/:/bin/sh\n' >"$image/etc/passwd"
printf 'root:x:0:\n' >"$image/etc/group"
copy_with_libraries "$binary"
ln -s mediarouted "$image/bin/mediaroutectl"
modules="$kernel/lib/modules/$version"
# mac80211_hwsim and what it needs, loaded in the guest in reverse modules.dep order.
needed=$(grep -E '^kernel/drivers/net/wireless/mac80211_hwsim.ko:' "$modules/modules.dep" | cut -d: -f2)
for module in $needed kernel/drivers/net/wireless/mac80211_hwsim.ko; do cp "$modules/$module" "$image/lib/modules/"; done
for module in $needed; do basename "$module" .ko; done | tac | grep -v mac80211_hwsim >"$image/etc/modules"
# Bluetooth over a serial line: hci_uart (H4) and what it needs; LE pairing's crypto, which the
# kernel would ask modprobe for: cmac(aes), and the DRBG that ECDH key generation draws from.
needed=$(grep -E '^kernel/drivers/bluetooth/hci_uart.ko:' "$modules/modules.dep" | cut -d: -f2)
# btvirt's emulated controllers: hci_vhci, the kernel crypto API's sockets (AF_ALG) its pairing
# uses, and the virtio console the host's A2DP sink arrives on.
crypto="kernel/crypto/jitterentropy_rng.ko kernel/crypto/drbg.ko kernel/crypto/cmac.ko kernel/crypto/ecb.ko kernel/crypto/af_alg.ko kernel/crypto/algif_hash.ko kernel/crypto/algif_skcipher.ko"
virtio=$(grep -E '^kernel/drivers/(virtio/virtio_pci|char/virtio_console).ko:' "$modules/modules.dep" | cut -d: -f2 | tr ' ' '\n' | awk 'NF && !seen[$0]++')
virtio="$virtio kernel/drivers/virtio/virtio_pci.ko kernel/drivers/char/virtio_console.ko"
# 9p over virtio: the host's library folder, shared read-only, holds the codec libraries the
# daemon opens at run time (libavcodec and what it links are too big for this image).
ninep="kernel/fs/netfs/netfs.ko kernel/fs/fscache/fscache.ko kernel/net/9p/9pnet.ko kernel/net/9p/9pnet_virtio.ko kernel/fs/9p/9p.ko"
for module in $crypto $needed $virtio $ninep kernel/drivers/bluetooth/hci_uart.ko kernel/drivers/bluetooth/hci_vhci.ko; do cp "$modules/$module" "$image/lib/modules/"; done
{ for module in $crypto; do basename "$module" .ko; done; for module in $needed; do basename "$module" .ko; done | tac; echo hci_uart; echo hci_vhci
  for module in $virtio $ninep; do basename "$module" .ko; done; } >"$image/etc/modules-bluetooth"
cp "$root/Tests/HIL/guest-init" "$image/init"
cp "$root"/Tests/HIL/*.conf "$image/etc/"
chmod +x "$image/init"
(cd "$image" && find . | cpio -o -H newc --quiet | gzip -1) > "$cache/initramfs.gz"

# The Bluetooth world on the host (Tests/HIL/bluetooth_peer.py, bumble from PyPI in
# .build-hil/python): the box's controller, reached by the guest's second serial port, and
# the speaker, on one virtual link.
python="$cache/python"
# Without bumble (PyPI unreachable) the Bluetooth checks cannot run: they are skipped, said on
# their own line, and the Wi-Fi checks still run. CI installs it, so nothing is skipped there.
bluetooth=1
if ! PYTHONPATH="$python" /usr/bin/python3 -c 'import bumble' 2>/dev/null; then
    certificates=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
    if ! /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --cert "$certificates" --target "$python" "bumble==0.0.236" >"$cache/logs/pip.log" 2>&1; then
        bluetooth=0
        echo "hil: skipped every Bluetooth check: bumble 0.0.236 could not be installed from PyPI ($(tail -1 "$cache/logs/pip.log"))"
    fi
fi
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
sink_port=$(free_port)
peer_log="$cache/logs/peer.log"
sink_output="$cache/logs/sink"
rm -f "$sink_output"-*.rtp "$cache"/logs/sink-*.pcm
peer=
watcher=
trap 'kill $peer $watcher 2>/dev/null || true' EXIT
: >"$peer_log"
bluetooth_devices=
if [ "$bluetooth" = 1 ]; then
    BUMBLE_LOGLEVEL=${HIL_PEER_LOG_LEVEL:-warning} PYTHONPATH="$python" /usr/bin/python3 "$root/Tests/HIL/bluetooth_peer.py" \
        --hci "tcp-server:127.0.0.1:$port" --sink-hci "tcp-server:127.0.0.1:$sink_port" --sink-output "$sink_output" --sink-rounds aac+sbc,opus+sbc,opus+sbc,opus+sbc:self >"$peer_log" 2>&1 &
    peer=$!
    for _ in $(seq 50); do grep -q 'waiting for the box' "$peer_log" && break; sleep 0.2; done
    sleep 0.5
    bluetooth_devices="-serial tcp:127.0.0.1:$port -device virtio-serial-pci -chardev socket,id=sink,host=127.0.0.1,port=$sink_port -device virtconsole,chardev=sink"
    bluetooth_devices="$bluetooth_devices -virtfs local,path=/usr/lib/x86_64-linux-gnu,mount_tag=hostlib,security_model=none,readonly=on"
    # What the guest's PipeWire sink recorded (round 5) comes back through a writable share.
    rm -rf "$cache/guest-out" && mkdir -p "$cache/guest-out"
    [ "$pipewire_round" = 1 ] && bluetooth_devices="$bluetooth_devices -virtfs local,path=$cache/guest-out,mount_tag=hostout,security_model=none"
fi

log="$cache/logs/console.log"
rm -f "$log"
# The sink powers on once the guest says its pump joined the console port to btvirt.
if [ "$bluetooth" = 1 ]; then
    (for _ in $(seq 600); do grep -q 'rig: sink bridge up' "$log" 2>/dev/null && { kill -USR1 $peer; exit 0; }; sleep 0.5; done) &
    watcher=$!
fi
# $bluetooth_devices splits into its words on purpose.
# shellcheck disable=SC2086
timeout 420 qemu-system-x86_64 -accel tcg -smp 2 -m 1024 -nographic -no-reboot -nic none \
    -serial mon:stdio $bluetooth_devices \
    -kernel "$kernel/boot/vmlinuz-$version" -initrd "$cache/initramfs.gz" \
    -append "console=ttyS0 panic=-1 quiet hil.bluetooth=$bluetooth hil.pipewire=$pipewire_round" >"$log" 2>&1 || true
[ -n "$peer" ] && kill $peer 2>/dev/null || true
for name in daemon bluetoothd; do
    tr -d '\r' <"$log" | sed -n "/^rig: $name log begins/,/^rig: $name log ends/p" | sed '1d;$d' >"$cache/logs/$name.log"
done
grep '^hil: ' "$log" | tr -d '\r' | grep -v '^hil: done' || true
ok_bluetooth=1
if [ "$bluetooth" = 1 ]; then
    # What the speaker itself saw: the box's VCS write (40% of 255 is 102) and its pairing.
    if ! grep -q 'HIL Sink is discoverable' "$peer_log"; then
        echo "hil: FAIL the A2DP sink never became discoverable: $(grep 'sink' "$peer_log" | tail -2 | tr '\n' ' ')"
    fi
    if grep -q 'peer: paired' "$peer_log"; then echo "hil: ok the speaker paired (bumble: LE Secure Connections with its passkey)"; else echo "hil: FAIL the speaker did not pair"; fi
    if grep -q 'peer: VCS write: volume 102 ' "$peer_log"; then echo "hil: ok the speaker saw the box's VCS write (volume 102 of 255)"; else echo "hil: FAIL the speaker saw no VCS write of 102"; fi
    # What the A2DP sink received in each round, decoded by an independent decoder (FFmpeg for
    # AAC, BlueZ's sbcdec for SBC) and compared with the tone 50 ms at a time: each window gets
    # its own 1 kHz sine fit, so an underrun (the emulated guest's writer late: the sender plays
    # silence for what it missed, by design) disturbs one window, not the phase of all that
    # follows. A round passes when 9 windows in 10 match (≥ 0.99) at the tone's level (16 384,
    # half scale, within 2 %) and the codec is the one the round expects.
    # Whether PCM (argument 1: little-endian 16-bit stereo at 44.1 kHz) is the tone: its 50 ms
    # windows against a 1 kHz sine fit; argument 2 the frames the daemon dropped, 3 the fewest
    # windows, 4 "any" for a sink whose level is its own. Prints "OK MATCHING WINDOWS AMPLITUDE ALLOWED".
    tone_verdict() {
        /usr/bin/python3 - "$@" <<'PY'
import math, struct, sys
# Little-endian 16-bit stereo PCM at 44.1 kHz.
data = open(sys.argv[1], "rb").read() if len(sys.argv) > 1 else b""
left = [struct.unpack_from("<h", data, 4 * i)[0] for i in range(len(data) // 4)]
rate = 44100
window = rate // 20
w = 2 * math.pi * 1000 / rate
s = [math.sin(w * i) for i in range(window)]
c = [math.cos(w * i) for i in range(window)]
matching, amplitudes, total = 0, [], 0
# The first and last windows hold the encoder's start and its padded last frame.
for start in range(window, len(left) - 2 * window + 1, window):
    x = left[start:start + window]
    mean = sum(x) / window
    x = [v - mean for v in x]
    a = 2 * sum(v * t for v, t in zip(x, s)) / window
    b = 2 * sum(v * t for v, t in zip(x, c)) / window
    fit = [a * p + b * q for p, q in zip(s, c)]
    den = math.sqrt(sum(v * v for v in x) * sum(f * f for f in fit)) or 1
    total += 1
    amplitudes.append(math.hypot(a, b))
    if sum(v * f for v, f in zip(x, fit)) / den >= 0.99:
        matching += 1
amplitudes.sort()
median = amplitudes[len(amplitudes) // 2] if amplitudes else 0
dropped_buffers = (int(sys.argv[2]) + 440) // 441
allowed = max(total // 10, 2 * dropped_buffers)
# With drops the windows they touch are partly another phase (their fitted amplitude is low)
# and fewer match: a quarter must still match; the amplitude is held to 2 % without drops.
# At least a second of the tone must have come through (a quarter of one for each part of a
# round that moved to SBC): how much more depends on how fast the emulated guest is that run
# (the daemon counts and prints what it dropped), not on the product.
# A sink that applies its own volume (PipeWire's) is not held to the level (argument 4: any).
level = len(sys.argv) > 4 and sys.argv[4] == "any"
ok = total >= int(sys.argv[3]) and total - matching <= allowed and matching * 4 >= total and (dropped_buffers > 0 or level or abs(median - 16384) <= 16384 * 0.02)
print(f"{int(ok)} {matching} {total} {median:.0f} {allowed}")
PY
    }
    decoded=1
    # A guest too slow for AAC at every rate moves round 1 to SBC mid-stream (the daemon's line
    # then says AAC→SBC): both parts are decoded, the AAC part needs only a quarter second.
    switched=0
    grep -q "^hil: ok streamed the 6 s tone.*(AAC→SBC;" "$log" && switched=1
    if [ "$switched" = 1 ] && [ ! -s "$sink_output-1-sbc.rtp" ] && [ -s "$sink_output-1-aac.rtp" ]; then
        # bumble's sink hands the packets of the stream set up again on its SBC endpoint to the
        # AAC endpoint's handler: they are told apart by the new stream's sequence numbers
        # starting again and SBC's sync word (0x9C) after the one-byte payload header.
        /usr/bin/python3 - "$sink_output-1-aac.rtp" "$sink_output-1-sbc.rtp" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
offset, previous, split = 0, None, None
while offset + 13 <= len(data):
    length, _, sequence, _ = struct.unpack_from(">HBHd", data, offset)
    payload = data[offset + 13:offset + 13 + length]
    if previous is not None and sequence != (previous + 1) & 0xFFFF and len(payload) > 1 and payload[1] == 0x9C:
        split = offset
        break
    previous = sequence
    offset += 13 + length
if split is not None:
    open(sys.argv[2], "wb").write(data[split:])
    open(sys.argv[1], "wb").write(data[:split])
PY
    fi
    for expected in "1 aac AAC" "1 sbc SBC" "2 sbc SBC" "3 sbc SBC" "4 sbc SBC"; do
        read -r round codec name <<ROUND
$expected
ROUND
        [ "$round $codec" = "1 sbc" ] && [ "$switched" = 0 ] && continue
        least=20
        # A round that moved to SBC mid-stream: where it moved depends on how fast the emulated
        # guest is that run, so each part needs only a quarter second (19 windows of SBC once).
        [ "$round" = 1 ] && [ "$switched" = 1 ] && least=5
        records="$sink_output-$round-$codec.rtp"
        pcm="$cache/logs/sink-$round-$codec.pcm"
        if [ ! -s "$records" ]; then
            echo "hil: FAIL round $round: the sink received no $name packets ($(ls "$sink_output"-"$round"-*.rtp 2>/dev/null | sed 's/.*-//' | tr '\n' ' '))"
            decoded=0
            continue
        fi
        # The records as the decoder's input: LATM elements joined up to the marker bit, in LOAS
        # sync frames for FFmpeg; SBC frames with each packet's one-byte header taken off.
        /usr/bin/python3 - "$records" "$codec" "$records.in" <<'PY'
import struct, sys
data, codec, out = open(sys.argv[1], "rb").read(), sys.argv[2], open(sys.argv[3], "wb")
offset, element, sequences, arrivals = 0, b"", [], []
while offset + 13 <= len(data):
    length, marker, sequence, arrival = struct.unpack_from(">HBHd", data, offset)
    payload = data[offset + 13:offset + 13 + length]
    offset += 13 + length
    sequences.append(sequence)
    arrivals.append(arrival)
    if codec == "sbc":
        out.write(payload[1:])
        continue
    element += payload
    if marker:
        out.write(bytes([0x56, 0xE0 | (len(element) >> 8), len(element) & 0xFF]) + element)
        element = b""
# A stream set up again starts its sequence numbers afresh: a jump back is a new stream, not loss.
gaps = [(b - a - 1) & 0xFFFF for a, b in zip(sequences, sequences[1:])]
lost = sum(gap for gap in gaps if gap < 0x8000)
streams = 1 + sum(1 for gap in gaps if gap >= 0x8000)
span = arrivals[-1] - arrivals[0] if arrivals else 0
print(f"hil: info round {sys.argv[1][-10:]}: {len(sequences)} packets arrived over {span:.1f} s ({len(sequences) / max(span, 0.001):.0f}/s) in {streams} stream(s), {lost} missing from the sequence")
PY
        if [ "$codec" = aac ]; then
            ffmpeg -v error -f loas -i "$records.in" -f s16le -ac 2 -ar 44100 "$pcm" -y 2>"$cache/logs/ffmpeg-$round.log"
        else
            # Sun .au as sbcdec writes it: a big-endian header (its data offset at byte 4), big-endian PCM.
            sbcdec -f "$pcm.au" "$records.in" 2>/dev/null && /usr/bin/python3 -c 'import sys, array, struct; raw = open(sys.argv[1], "rb").read(); a = array.array("h", raw[struct.unpack_from(">I", raw, 4)[0]:][: (len(raw) // 2) * 2 - 64]); a.byteswap(); open(sys.argv[2], "wb").write(a.tobytes())' "$pcm.au" "$pcm"
        fi
        # What the daemon dropped in this round (the guest's line: "N frames delivered, D dropped"):
        # an emulated guest too slow for the encoder drops 10 ms buffers, each of which breaks
        # the window it falls in (at most two), and is allowed for as that, counted, never more.
        dropped=$(grep "^hil: \(ok streamed the 6 s tone\|FAIL streaming\)" "$log" | tr -d '\r' | sed -n "${round}p" | sed -n 's/.* \([0-9]*\) dropped.*/\1/p')
        verdict=$(tone_verdict "$pcm" "${dropped:-0}" "$least")
        read -r good matching windows amplitude allowed <<VERDICT
$verdict
VERDICT
        if [ "$good" = 1 ]; then
            echo "hil: ok round $round: the sink got $name and decoded the tone back: $matching of $windows 50 ms windows match a 1 kHz sine (≥ 0.99; up to $allowed may not: a tenth, or two per buffer the daemon dropped), median amplitude $amplitude of 16384 ($(($(stat -c %s "$records") / 1024)) KiB)"
        else
            echo "hil: FAIL round $round: the sink's $name audio does not match the tone ($matching of $windows 50 ms windows match, $allowed allowed to differ, median amplitude $amplitude)"
            decoded=0
        fi
    done
    # Round 5: what PipeWire's bluez5 sink decoded from aptX and played, as pw-record wrote it.
    recorded="$cache/guest-out/pipewire-aptx.wav"
    pcm="$cache/logs/sink-5-aptx.pcm"
    if [ "$pipewire_round" != 1 ]; then
        :
    elif grep -q "^hil: ok round 5" "$log" && [ -s "$recorded" ]; then
        /usr/bin/python3 - "$recorded" "$pcm" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
offset = 12
while offset + 8 <= len(data):
    name, size = data[offset:offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
    if name == b"data":
        body = data[offset + 8:] if size in (0, 0xFFFFFFFF) else data[offset + 8:offset + 8 + size]
        open(sys.argv[2], "wb").write(body)
        break
    offset += 8 + size + (size & 1)
PY
        read -r good matching windows amplitude allowed <<VERDICT
$(tone_verdict "$pcm" 0 20 any)
VERDICT
        if [ "$good" = 1 ]; then
            echo "hil: ok round 5: PipeWire's bluez5 sink decoded the aptX stream back to the tone: $matching of $windows 50 ms windows match a 1 kHz sine (≥ 0.99; up to $allowed may not), median amplitude $amplitude (its own volume)"
        else
            echo "hil: info round 5 (experiment): what PipeWire's sink played does not match the tone ($matching of $windows windows, $allowed allowed to differ, median amplitude $amplitude)"
        fi
    else
        echo "hil: info round 5 (experiment): nothing recorded from PipeWire's sink ($(ls -l "$cache/guest-out" 2>/dev/null | tail -n +2 | tr '\n' ' '))"
    fi
    grep -q 'peer: paired' "$peer_log" && grep -q 'peer: VCS write: volume 102 ' "$peer_log" \
        && grep -q 'HIL Sink is discoverable' "$peer_log" && [ "$decoded" = 1 ] || ok_bluetooth=0
fi
if grep -q '^hil: FAIL' "$log" || ! grep -q '^hil: done' "$log" || [ "$ok_bluetooth" = 0 ]; then
    echo "hil: failed; logs kept in $cache/logs: console.log, daemon.log, bluetoothd.log, peer.log (the host's bumble devices)" >&2
    exit 1
fi
echo "hil: done"

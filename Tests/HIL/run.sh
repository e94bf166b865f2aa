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
crypto="kernel/crypto/jitterentropy_rng.ko kernel/crypto/drbg.ko kernel/crypto/cmac.ko"
for module in $crypto $needed kernel/drivers/bluetooth/hci_uart.ko; do cp "$modules/$module" "$image/lib/modules/"; done
{ for module in $crypto; do basename "$module" .ko; done; for module in $needed; do basename "$module" .ko; done | tac; echo hci_uart; } >"$image/etc/modules-bluetooth"
cp "$root/Tests/HIL/guest-init" "$image/init"
cp "$root"/Tests/HIL/*.conf "$image/etc/"
chmod +x "$image/init"
(cd "$image" && find . | cpio -o -H newc --quiet | gzip -1) > "$cache/initramfs.gz"

# The Bluetooth world on the host (Tests/HIL/bluetooth_peer.py, bumble from PyPI in
# .build-hil/python): the box's controller, reached by the guest's second serial port, and
# the speaker, on one virtual link.
python="$cache/python"
if ! PYTHONPATH="$python" /usr/bin/python3 -c 'import bumble' 2>/dev/null; then
    /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --target "$python" "bumble==0.0.236" >&2
fi
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
peer_log="$cache/logs/peer.log"
BUMBLE_LOGLEVEL=${HIL_PEER_LOG_LEVEL:-warning} PYTHONPATH="$python" /usr/bin/python3 "$root/Tests/HIL/bluetooth_peer.py" --hci "tcp-server:127.0.0.1:$port" >"$peer_log" 2>&1 &
peer=$!
trap 'kill $peer 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q 'waiting for the box' "$peer_log" && break; sleep 0.2; done
sleep 0.5

log="$cache/logs/console.log"
timeout 420 qemu-system-x86_64 -accel tcg -m 1024 -nographic -no-reboot -nic none \
    -serial mon:stdio -serial "tcp:127.0.0.1:$port" \
    -kernel "$kernel/boot/vmlinuz-$version" -initrd "$cache/initramfs.gz" \
    -append "console=ttyS0 panic=-1 quiet" >"$log" 2>&1 || true
kill $peer 2>/dev/null || true
grep '^hil: ' "$log" | tr -d '\r' | grep -v '^hil: done' || true
# What the speaker itself saw: the box's VCS write (40% of 255 is 102) and its pairing.
if grep -q 'peer: paired' "$peer_log"; then echo "hil: ok the speaker paired (bumble: LE Secure Connections with its passkey)"; else echo "hil: FAIL the speaker did not pair"; fi
if grep -q 'peer: VCS write: volume 102 ' "$peer_log"; then echo "hil: ok the speaker saw the box's VCS write (volume 102 of 255)"; else echo "hil: FAIL the speaker saw no VCS write of 102"; fi
if grep -q '^hil: FAIL' "$log" || ! grep -q '^hil: done' "$log" || ! grep -q 'peer: paired' "$peer_log" || ! grep -q 'peer: VCS write: volume 102 ' "$peer_log"; then
    echo "hil: failed; console log kept in $log, the speaker's in $peer_log" >&2
    exit 1
fi
echo "hil: done"

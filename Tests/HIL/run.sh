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
printf 'root:x:0:0:root:/:/bin/sh\n' >"$image/etc/passwd"
printf 'root:x:0:\n' >"$image/etc/group"
copy_with_libraries "$binary"
ln -s mediarouted "$image/bin/mediaroutectl"
modules="$kernel/lib/modules/$version"
# mac80211_hwsim and what it needs, loaded in the guest in reverse modules.dep order.
needed=$(grep -E '^kernel/drivers/net/wireless/mac80211_hwsim.ko:' "$modules/modules.dep" | cut -d: -f2)
for module in $needed kernel/drivers/net/wireless/mac80211_hwsim.ko; do cp "$modules/$module" "$image/lib/modules/"; done
for module in $needed; do basename "$module" .ko; done | tac | grep -v mac80211_hwsim >"$image/etc/modules"
cp "$root/Tests/HIL/guest-init" "$image/init"
cp "$root"/Tests/HIL/*.conf "$image/etc/"
chmod +x "$image/init"
(cd "$image" && find . | cpio -o -H newc --quiet | gzip -1) > "$cache/initramfs.gz"

log="$cache/logs/console.log"
timeout 300 qemu-system-x86_64 -accel tcg -m 1024 -nographic -no-reboot -nic none \
    -kernel "$kernel/boot/vmlinuz-$version" -initrd "$cache/initramfs.gz" \
    -append "console=ttyS0 panic=-1 quiet" >"$log" 2>&1 || true
grep '^hil: ' "$log" | tr -d '\r' || true
if grep -q '^hil: FAIL' "$log" || ! grep -q '^hil: done' "$log"; then
    echo "hil: failed; console log kept in $log" >&2
    exit 1
fi

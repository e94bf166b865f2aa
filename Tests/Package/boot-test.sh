#!/bin/sh
# The Debian package, booted for real (issue 41): a Debian 12 root with systemd as PID 1 in
# QEMU (TCG), where the package is installed with
# `apt install ./mediaroute_<version>_<arch>.deb` and checked as a box maker would: the system
# user, the unit enabled and running as that user with its hardening, org.mediaroute on the
# system bus, the policy (a member of the group controls, anyone else only looks), udev starting
# the daemon for a new network interface, `apt remove` keeping an edited conffile and
# `apt purge` removing the package's files and state (the system user stays).
#
# The root comes from debootstrap (Debian's mirror, as apt is configured here), kernel and
# initramfs included, and is cached in .build-boot/ as a tarball; each run unpacks it afresh,
# adds the package and the checks (Tests/Package/guest-checks.sh), and boots it from an ext4
# image. Needs `make deb` first. Prints one line per check; the console log stays in
# .build-boot/logs/ on failure.
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)
cache="$root/.build-boot"
mkdir -p "$cache/logs"
version=$(dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
package="$root/.build-deb/mediaroute_${version}_${arch}.deb"
[ -f "$package" ] || { echo "boot: $package missing (make deb)" >&2; exit 1; }

# What the root holds besides minbase: systemd as init, udev, the system bus, the kernel, and
# what the checks use. The package's own dependencies come from its Depends at install time,
# and must be in the root already: the guest has no network.
include="systemd,systemd-sysv,udev,dbus,iproute2,kmod,procps,linux-image-amd64,initramfs-tools"
mirror=${BOOT_MIRROR:-$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}
mirror=${mirror:-http://deb.debian.org/debian}
key=$(printf '%s %s %s' "$include" "$mirror" "$arch" | sha256sum | cut -c1-12)
tarball="$cache/bookworm-$key.tar"
if [ ! -f "$tarball" ]; then
    rm -rf "$cache/bootstrap"
    echo "boot: debootstrap bookworm from $mirror (once; cached in $tarball)"
    debootstrap --variant=minbase --include="$include" bookworm "$cache/bootstrap" "$mirror" >"$cache/logs/debootstrap.log" 2>&1 \
        || { tail -20 "$cache/logs/debootstrap.log" >&2; exit 1; }
    # The checks must not depend on the mirror's lists: the guest installs from the file.
    rm -rf "$cache/bootstrap/var/cache/apt/archives/"*.deb "$cache/bootstrap/var/lib/apt/lists/"*
    tar -C "$cache/bootstrap" -cf "$tarball.partial" .
    mv "$tarball.partial" "$tarball"
    rm -rf "$cache/bootstrap"
fi

guest="$cache/guest"
rm -rf "$guest"
mkdir -p "$guest"
tar -C "$guest" -xf "$tarball"
echo mediaroute-boot >"$guest/etc/hostname"
: >"$guest/etc/fstab"
cp "$package" "$guest/root/"
install -m 0755 "$root/Tests/Package/guest-checks.sh" "$guest/usr/local/sbin/mediaroute-guest-checks"
cat >"$guest/etc/systemd/system/mediaroute-guest-checks.service" <<UNIT
[Unit]
Description=MediaRoute package checks (Tests/Package/boot-test.sh)
After=multi-user.target
[Service]
Type=oneshot
Environment=PACKAGE=/root/$(basename "$package") VERSION=$version
ExecStart=/usr/local/sbin/mediaroute-guest-checks
StandardOutput=journal+console
StandardError=journal+console
ExecStopPost=/usr/bin/systemctl --no-block poweroff
UNIT
mkdir -p "$guest/etc/systemd/system/multi-user.target.wants"
ln -sf ../mediaroute-guest-checks.service "$guest/etc/systemd/system/multi-user.target.wants/mediaroute-guest-checks.service"
# No login prompt on the console, so the checks' lines stay readable.
ln -sf /dev/null "$guest/etc/systemd/system/serial-getty@ttyS0.service"
image="$cache/root.ext4"
rm -f "$image"
mkfs.ext4 -q -F -L root -d "$guest" "$image" 3G
kernel=$(ls "$guest"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$guest"/boot/initrd.img-* | sort -V | tail -1)

log="$cache/logs/console.log"
rm -f "$log"
# TCG, as the HIL rig: KVM is exposed in this container but a guest under it never gets past the
# kernel's first lines (measured: nothing on the console in 60 s; under TCG the kernel is up in 9 s).
timeout 900 qemu-system-x86_64 -accel tcg -m 1024 -smp 2 -nographic -no-reboot -nic none \
    -drive "file=$image,format=raw,if=virtio" \
    -kernel "$kernel" -initrd "$initrd" \
    -append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=0 loglevel=3" >"$log" 2>&1 || true
rm -rf "$guest"
# The checks' lines come through the journal to the console, after its time stamp and unit name.
tr -d '\r' <"$log" | grep -o 'boot: \(ok\|FAIL\) .*' || true
if grep -q 'boot: FAIL' "$log" || ! grep -q 'boot: done' "$log"; then
    echo "boot: failed; the console log is in $log" >&2
    exit 1
fi
rm -f "$image"

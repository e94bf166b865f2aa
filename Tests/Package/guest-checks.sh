#!/bin/sh
# Runs inside the booted Debian 12 guest (Tests/Package/boot-test.sh), as root, once the system
# is up under systemd: installs the package and checks what a box maker checks. One line per
# check, "boot: ok …" or "boot: FAIL …", then "boot: done".
set -u
ok() { echo "boot: ok $*"; }
fail() { echo "boot: FAIL $*"; }
check() { description=$1; shift; if "$@" >/tmp/check.out 2>&1; then ok "$description"; else fail "$description: $(tail -3 /tmp/check.out | tr '\n' ' ')"; fi; }
# Waits up to $1 seconds for a command to succeed.
within() { seconds=$1; shift; i=0; while [ "$i" -lt $((seconds * 5)) ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; i=$((i + 1)); done; return 1; }

unit=mediarouted.service
config=/etc/mediaroute/mediaroute.conf

# The install a box maker does, without network: every dependency is in the root already.
if apt-get install -y --no-install-recommends "$PACKAGE" >/tmp/apt-install.log 2>&1; then
    ok "apt install ./$(basename "$PACKAGE") succeeded"
else
    fail "apt install: $(tail -5 /tmp/apt-install.log | tr '\n' ' ')"
    echo "boot: done"; exit 0
fi

# The system user and group (sysusers), a system account without a shell.
entry=$(getent passwd mediaroute)
uid=$(echo "$entry" | cut -d: -f3)
if [ -n "$entry" ] && [ "$uid" -lt 1000 ] && [ "$(echo "$entry" | cut -d: -f7)" = /usr/sbin/nologin ]; then
    ok "the system user exists: $entry"
else
    fail "no system user mediaroute (getent: '$entry')"
fi
check "the group mediaroute exists" getent group mediaroute

# The unit: enabled, running, as that user, with its hardening in force.
[ "$(systemctl is-enabled $unit)" = enabled ] && ok "the unit is enabled" || fail "the unit is $(systemctl is-enabled $unit)"
if within 30 systemctl is-active --quiet $unit; then ok "the unit is running"; else fail "the unit is $(systemctl is-active $unit): $(journalctl -u $unit -n 5 --no-pager | tr '\n' ' ')"; fi
pid=$(systemctl show -P MainPID $unit)
user=$(ps -o user= -p "$pid" 2>/dev/null | tr -d ' ')
[ "$user" = mediaroute ] && ok "the daemon (pid $pid) runs as mediaroute" || fail "the daemon (pid $pid) runs as '$user'"
capabilities=$(grep '^CapEff' "/proc/$pid/status" | awk '{print $2}')
# CAP_NET_ADMIN (bit 12) and CAP_NET_BIND_SERVICE (bit 10, AirPlay 2's PTP on 319/320): 0x1400.
[ "$capabilities" = 0000000000001400 ] && ok "its effective capabilities are CAP_NET_ADMIN and CAP_NET_BIND_SERVICE alone" || fail "its effective capabilities are $capabilities"
nonewprivs=$(grep '^NoNewPrivs' "/proc/$pid/status" | awk '{print $2}')
seccomp=$(grep '^Seccomp:' "/proc/$pid/status" | awk '{print $2}')
[ "$nonewprivs" = 1 ] && [ "$seccomp" = 2 ] && ok "no new privileges and a system call filter (seccomp mode 2)" || fail "NoNewPrivs $nonewprivs, Seccomp $seccomp"
hardening=$(systemctl show -p ProtectSystem -p ProtectHome -p PrivateTmp -p PrivateDevices -p RestrictNamespaces -p MemoryDenyWriteExecute $unit | sort | tr '\n' ' ')
expected="MemoryDenyWriteExecute=yes PrivateDevices=yes PrivateTmp=yes ProtectHome=tmpfs ProtectSystem=strict RestrictNamespaces=yes "
[ "$hardening" = "$expected" ] && ok "the unit's sandbox is in force: $hardening" || fail "the unit's sandbox: $hardening"
# The daemon cannot write outside its own directories.
if nsenter -t "$pid" -m -- touch /usr/mediaroute-write-test 2>/dev/null; then fail "the daemon's mount namespace lets it write /usr"; rm -f /usr/mediaroute-write-test; else ok "the daemon's /usr is read-only"; fi
exposure=$(systemd-analyze security $unit --no-pager 2>/dev/null | awk '/Overall exposure level/ {print $(NF-2), $(NF-1)}')
ok "systemd-analyze security: exposure $exposure"

# The system bus: the name, and the version the daemon was built as.
check "busctl sees org.mediaroute on the system bus" sh -c 'busctl --system list --no-pager | grep -q "^org.mediaroute "'
said=$(busctl --system get-property org.mediaroute /org/mediaroute org.mediaroute.Manager1 Version 2>&1)
[ "$said" = "s \"$VERSION\"" ] && ok "Manager1.Version is $VERSION" || fail "Manager1.Version: $said"
first=$(journalctl -u $unit -o cat --no-pager | grep -m1 'mediarouted ')
case "$first" in *"mediarouted $VERSION (commit "*) ok "the daemon's first line: $first" ;; *) fail "the daemon's first line: $first" ;; esac

# The box's audio by default: the session helper's user unit is installed and enabled for every
# user (it starts with a session's PipeWire); without a system-wide PipeWire the daemon says so once.
helper=mediaroute-pipewire.service
[ "$(systemctl --global is-enabled $helper 2>&1)" = enabled ] && ok "the user unit $helper is enabled for every user" || fail "the user unit $helper: $(systemctl --global is-enabled $helper 2>&1)"
[ -L /etc/systemd/user/pipewire.service.wants/$helper ] && ok "it starts with a session's pipewire.service" || fail "no /etc/systemd/user/pipewire.service.wants/$helper"
notices=$(journalctl -u $unit --no-pager -o cat | grep -c 'no system-wide PipeWire')
starts=$(journalctl -u $unit --no-pager -o cat | grep -c "mediarouted $VERSION .*starting")
[ "$notices" -ge 1 ] && [ "$notices" = "$starts" ] && ok "the daemon says once per start that sink nodes come from the sessions' PipeWire" || fail "'no system-wide PipeWire' said $notices times in $starts starts"

# The policy: a member of the group controls routes; anyone else may only look.
useradd --create-home --groups mediaroute member
useradd --create-home outsider
check "a member of mediaroute may start discovery" runuser -u member -- busctl --system call org.mediaroute /org/mediaroute org.mediaroute.Manager1 StartDiscovery
check "a member of mediaroute lists what the daemon pinned (mediaroutectl --bus system trust list)" runuser -u member -- mediaroutectl trust list --bus system
check "another user may look (Manager1.Protocols)" runuser -u outsider -- busctl --system get-property org.mediaroute /org/mediaroute org.mediaroute.Manager1 Protocols
if runuser -u outsider -- busctl --system call org.mediaroute /org/mediaroute org.mediaroute.Manager1 StartDiscovery >/tmp/denied.out 2>&1; then
    fail "another user started discovery"
elif grep -qi 'access denied\|AccessDenied' /tmp/denied.out; then
    ok "another user may not control: $(head -1 /tmp/denied.out)"
else
    fail "another user's call failed otherwise: $(cat /tmp/denied.out)"
fi
if runuser -u outsider -- mediaroutectl trust list --bus system >/tmp/denied.out 2>&1; then fail "another user ran mediaroutectl trust list on the daemon"; else ok "mediaroutectl trust list on the daemon refuses another user: $(head -1 /tmp/denied.out)"; fi

# udev: the daemon, stopped, is started when a usable network interface appears (veth carries no DEVTYPE).
systemctl stop $unit
if systemctl is-active --quiet $unit; then fail "the unit did not stop"; fi
ip link add mrtest0 type veth peer name mrtest1
if within 30 systemctl is-active --quiet $unit; then
    ok "a new network interface started the daemon ($(udevadm info -q property /sys/class/net/mrtest0 | grep MEDIAROUTE_TRANSPORT))"
else
    fail "the daemon did not start for mrtest0: $(udevadm info -q property /sys/class/net/mrtest0 | grep -E 'MEDIAROUTE|SYSTEMD' | tr '\n' ' ')"
fi
ip link del mrtest0

# A user's edit of the conffile survives a reinstall and `apt remove`; purge removes everything.
echo "# edited on the box" >>$config
apt-get install -y --reinstall --no-install-recommends "$PACKAGE" >/tmp/apt-reinstall.log 2>&1 || fail "reinstall: $(tail -3 /tmp/apt-reinstall.log | tr '\n' ' ')"
grep -q '^# edited on the box' $config && ok "the edited conffile survives a reinstall" || fail "the reinstall replaced the edited conffile"
within 30 systemctl is-active --quiet $unit && ok "the unit runs again after the reinstall" || fail "the unit is $(systemctl is-active $unit) after the reinstall"
mkdir -p /var/lib/mediaroute
apt-get remove -y mediaroute >/tmp/apt-remove.log 2>&1 || fail "apt remove: $(tail -3 /tmp/apt-remove.log | tr '\n' ' ')"
state=$(systemctl is-active $unit)
[ "$state" != active ] && ok "apt remove stopped the daemon ($state)" || fail "the daemon still runs after apt remove"
[ ! -e /usr/bin/mediarouted ] && ok "apt remove removed the binary" || fail "apt remove left /usr/bin/mediarouted"
grep -q '^# edited on the box' $config && ok "apt remove kept the edited conffile" || fail "apt remove did not keep $config"
apt-get purge -y mediaroute >/tmp/apt-purge.log 2>&1 || fail "apt purge: $(tail -3 /tmp/apt-purge.log | tr '\n' ' ')"
left=""
for path in $config /etc/mediaroute /var/lib/mediaroute /lib/systemd/system/$unit /usr/share/dbus-1/system.d/org.mediaroute.conf /lib/udev/rules.d/70-mediaroute.rules /usr/lib/sysusers.d/mediaroute.conf; do
    [ -e "$path" ] && left="$left $path"
done
[ -z "$left" ] && ok "apt purge removed the package's files and state" || fail "apt purge left:$left"
[ -z "$(dpkg-query -W -f '${Status}' mediaroute 2>/dev/null | grep -v 'not-installed')" ] && ok "dpkg knows mediaroute no more" || fail "dpkg: $(dpkg-query -W -f '${Status}' mediaroute)"
getent passwd mediaroute >/dev/null && ok "the system user stays after purge (Debian policy)" || fail "purge removed the system user"
echo "boot: done"

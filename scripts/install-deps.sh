#!/usr/bin/env bash
# Installs the Debian packages MediaRoute needs to build and test, only when one is missing.
# Idempotent: a machine that has everything is left alone (no apt-get update).
set -euo pipefail

packages=(
  # What swiftc needs to compile and link on Debian 12.
  binutils libc6-dev libgcc-12-dev libstdc++-12-dev libcurl4 libxml2 libsqlite3-0 libncurses6 tzdata
  git pkg-config
  # D-Bus: libdbus-1 to build against; dbus-daemon and gdbus for the tests' private buses.
  libdbus-1-dev dbus-daemon dbus-bin libglib2.0-bin
  # busctl (for the tests that drive the daemon the way an operator would).
  systemd
  # Box deployment: libudev to build against; udevadm, iproute2 (veth hot-plug), dbus.socket and
  # systemd-analyze/systemd-sysusers (in systemd) for the tests of the rules, the unit and make install.
  libudev-dev udev iproute2 dbus-system-bus-common make
  # Wi-Fi: libnl (nl80211, rtnetlink); python3 runs the SSDP listener inside the tests' network namespace.
  libnl-3-dev libnl-genl-3-dev python3
  # The hostile-network test asks the renderer its state with curl; the fuzzers link libFuzzer (in the Swift toolchain).
  curl
  # BlueZ without Bluetooth: python3-dbusmock runs our bluetoothd stand-in (MediaRouteTesting's BlueZMock).
  python3-dbusmock python3-dbus python3-gi libsbc-dev
  # The box's audio: PipeWire's headers to build the sink node against (libpipewire itself is opened at
  # run time); pipewire, wireplumber and pw-play/pw-cli (pipewire-bin) for the headless PipeWire tests.
  libpipewire-0.3-dev pipewire wireplumber pipewire-bin
  # MPRIS: playerctl, the client the Now Playing tests drive the bridge with.
  playerctl
  # The push endpoint benchmark's load generator (make benchmarks).
  wrk
  # UPnP: Expat to parse device documents (the release binaries link its static archive, Packaging/link);
  # gmediarender and rygel (Playbin) are the real renderers the LAN tests start in network namespaces
  # (GStreamer's base/good plugins play and fetch the test media); gupnp-tools' gssdp-discover is a
  # benchmark peer.
  libexpat1-dev gmediarender rygel rygel-playbin gstreamer1.0-plugins-base gstreamer1.0-plugins-good gupnp-tools
  # GStreamer's bad plugins: faad, the AAC decoder gmediarender plays the AAC live stream with.
  gstreamer1.0-plugins-bad
  # AirPlay: shairport-sync 3.3.8 is the real receiver the RAOP tests start in a network namespace,
  # with an Avahi of its own there (avahi-daemon; neither runs as a service of the machine).
  shairport-sync avahi-daemon
  # AirPlay's ALAC encoder: FFmpeg's libavcodec (headers to build against; the library is opened at run time);
  # libmd's MD5 for the digest authentication of password-protected receivers.
  libavcodec-dev libmd-dev
  # The AirPlay group benchmark's anchors (mediaroute-bench raop-group): Snapcast 0.26 and PulseAudio 16.1's RAOP sink;
  # iptables-legacy's NFQUEUE target for its delayed link (this kernel has no netem).
  snapserver snapclient pulseaudio pulseaudio-module-raop pulseaudio-utils iptables
  # Cast: the test receiver (Tests/Peers/cast_receiver.py) is Python with its own TLS certificate (openssl
  # makes it) announced with python3-zeroconf; pychromecast is the benchmark's anchor (mediaroute-bench cast).
  openssl python3-zeroconf python3-pychromecast
  # The virtual HIL rig (make hil, Tests/HIL): QEMU boots Debian's kernel package (downloaded, not
  # installed; kmod's depmod indexes its modules) with an initramfs (cpio) of busybox, hostapd and iw.
  qemu-system-x86 busybox-static iw hostapd kmod cpio
  # Its Bluetooth half: bluez (bluetoothd, btattach) and bluez-test-tools (btvirt, BlueZ's emulator) in the
  # guest; pip fetches bumble (PyPI) for the host-side controllers, speaker and A2DP sink
  # (Tests/HIL/bluetooth_peer.py); sbc-tools' sbcdec decodes what the sink received.
  bluez bluez-test-tools sbc-tools python3-pip
  # The Debian package (make deb): dpkg-buildpackage, debhelper, lintian; its boot test (make deb-boot-test)
  # builds a Debian 12 root with debootstrap and an ext4 image of it (e2fsprogs' mkfs.ext4 -d);
  # Benchmarks/install-size.sh measures the squashfs image (squashfs-tools).
  # (dpkg-checkbuilddeps wants build-essential on every package build.)
  build-essential dpkg-dev debhelper lintian fakeroot debootstrap e2fsprogs squashfs-tools
  # Bluetooth codecs beyond SBC, opened at run time like libavcodec: aptX / aptX HD (libfreeaptx) and
  # LDAC (libldacbt-enc, its adaptive bit rate in libldacbt-abr). The codec tests decode what we encode
  # with independent decoders: FFmpeg's (AAC, in the HIL rig too) and freeaptx-utils' (aptX).
  libfreeaptx0 libldacbt-enc2 libldacbt-abr2 freeaptx-utils ffmpeg
  # AirPlay 2 pairing (HAP): libgcrypt's headers to build against (libgcrypt20 itself is in every Debian
  # root and is opened at run time); the AirPlay 2 test receiver's side of pairing is python3-cryptography
  # and PyPI's srptools (installed below with pip, python3-pip above).
  libgcrypt20-dev python3-cryptography
  # Live streams' clock-drift correction: libsoxr's headers to build against (libsoxr0 comes with
  # libavcodec59 through libswresample4, and is opened at run time).
  libsoxr-dev
  # Real-time video (mediaroutectl mirror, Session1.AcquireVideo): OpenH264's headers to build against
  # (libopenh264-7 is opened at run time); gstreamer1.0-libav's H.264 decoder is what gmediarender shows
  # the video with in the tests (FFmpeg's ffmpeg/ffprobe above read it back on bytes).
  libopenh264-dev gstreamer1.0-libav
  # The PipeWire video node's tests: GStreamer's PipeWire elements (pipewiresink sends a pattern to the
  # node, or provides a Video/Source node for mirror --source pipewire:NODE) and gst-launch-1.0.
  gstreamer1.0-pipewire gstreamer1.0-tools
)

# srptools (PyPI; not in Debian 12) for the AirPlay 2 test receiver (Tests/Peers/airplay2_receiver.py),
# in its own directory (the tests put it on PYTHONPATH): nothing of the system's python is changed.
install_peer_python() {
  local target=/usr/local/lib/mediaroute-test-python
  if PYTHONPATH="$target" /usr/bin/python3 -c "import srptools" 2>/dev/null; then return 0; fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  local certificates=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
  echo "install-deps: installing srptools 2.0.0 (PyPI) into $target"
  # Not fatal: without it the AirPlay 2 pairing tests skip, each saying why.
  if ! $sudo /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-deps --cert "$certificates" \
      --target "$target" "srptools==2.0.0"; then
    echo "install-deps: srptools could not be installed from PyPI: the AirPlay 2 pairing tests will skip"
  fi
}

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  install_peer_python
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
install_peer_python

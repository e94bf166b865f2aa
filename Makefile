# The two commands of the README: `make demo` and `make test`.
SWIFT ?= swift
# SwiftPM 6.3 passes the enabled traits to the compiler as -D flags in the order of a Set, which
# Swift hashes with a random seed per process: with more than one trait on, every invocation of
# swift build or swift test wrote other command lines and rebuilt every module of the package
# (measured: 480 files again on each of `swift build --build-tests` and `swift test` in turn).
# A fixed seed keeps the order from one invocation to the next.
export SWIFT_DETERMINISTIC_HASHING = 1
TEST_TIMEOUT ?= 1200
# An import of a target that is not declared a dependency fails the build (#38).
IMPORT_CHECK = --explicit-target-dependency-import-check error
# Compiles the release link's one C object; the Swift toolchain brings clang.
RELEASE_CC ?= clang

PREFIX ?= /usr/local
DESTDIR ?=

# Where `make install` puts what is not a binary (standard places on Debian).
DBUSPOLICYDIR ?= /usr/share/dbus-1/system.d
UNITDIR ?= /lib/systemd/system
USERUNITDIR ?= /usr/lib/systemd/user
SYSUSERSDIR ?= /usr/lib/sysusers.d
UDEVRULESDIR ?= /usr/lib/udev/rules.d
CONFDIR ?= /etc/mediaroute
DOCDIR ?= $(PREFIX)/share/doc/mediaroute
MANDIR ?= $(PREFIX)/share/man
# The binaries `install-files` copies (`install` builds them first), stripped unless INSTALL_STRIP= (the
# Debian package strips them itself, keeping the debug information in mediaroute-dbgsym).
INSTALL_STRIP ?= -s
BINARIES ?= .build-release/release

.PHONY: deps build-stamp release-binaries deb deb-boot-test build demo test fuzz fuzz-ci release release-flags release-size-flags install install-files uninstall benchmarks hil clean

deps:
	@./scripts/install-deps.sh

# The commit every binary says it was built from (scripts/build-stamp.sh; rebuilds only when it changed).
build-stamp:
	@./scripts/build-stamp.sh

build: deps build-stamp
	$(SWIFT) build $(IMPORT_CHECK)

# The demo builds only the tool, in the configuration `make test` uses (debug, every default
# trait, the same import check), so that either command after the other reuses what the first
# built; the binary runs directly (`swift run` plans the build once more).
demo: deps build-stamp
	$(SWIFT) build $(IMPORT_CHECK) --product mediaroutectl
	.build/debug/mediaroutectl demo

# The suites run one after another: many talk to real peers (dbus-daemon, dbusmock,
# playerctl, namespaces) in real time, and on a two-core machine running them all at
# once starved some for seconds (~40 s serial vs ~12 s parallel here).
# The timeout keeps a hung test from hanging CI.
test: deps build-stamp
	$(SWIFT) build --build-tests $(IMPORT_CHECK)
	SWIFT=$(SWIFT) TEST_TIMEOUT=$(TEST_TIMEOUT) ./scripts/test.sh

# libFuzzer over every parser of untrusted bytes (Fuzz/, Docs/reliability.md):
# FUZZ_SECONDS per harness; `make fuzz FUZZ_SECONDS=3600` is the long run.
FUZZ_SECONDS ?= 60
fuzz: deps
	./scripts/fuzz.sh --seconds $(FUZZ_SECONDS)

# CI's share: 39 harnesses x 5 s (about 3 minutes of fuzzing; the long runs are in Docs/reliability.md).
fuzz-ci: deps
	./scripts/fuzz.sh --seconds 5

# Release binaries: static Swift runtime and -Osize (the smallest resident set
# measured for the daemon; see Docs/benchmarks.md), linked by lld so that the
# code the daemon runs from start-up to idle sits together (the kernel maps 64 KB
# around every code page a process touches):
# - each function in a section of its own, placed by Packaging/mediarouted.order
#   (scripts/order-file.sh writes it from a profile of the daemon);
# - Packaging/link/private-functions.ld gathers Swift's private helpers, which
#   have no symbol the order could name;
# - the C libraries (libdbus, libnl, libsbc, libmd, libstdc++; not libexpat, which every box has) come
#   from their static archives (Packaging/link/ld-static-system-libs says why;
#   no-socket-activation.c answers libdbus's two libsystemd calls);
# - the Swift runtime's Unicode scalar names left out (Packaging/link/no-scalar-names.c says
#   why nothing asks for them: 550 KB, 168 KB of squashfs-xz);
# - relative relocations packed (RELR: the loader reads 11 KB instead of 1.3 MB)
#   and no dynamic symbol table of its own (the loader searched 1.2 MB of it for
#   every symbol of every library);
# - objects of any package that no symbol needs are left out, unless the runtime could
#   find one of their conformances by scanning, and a symbol several objects define is taken
#   from one the link needs anyway (Packaging/link/lazy-objects says which and how);
# - for flash: identical functions folded into one (--icf=all; generic
#   specialisations and thunks repeat, 0.5 MB) and no unwind tables
#   (Packaging/link/no-unwind-tables.ld says why nothing needs them, 2.9 MB).
# - BoringSSL (swift-nio-ssl's, for Cast's TLS) without its assembly (OPENSSL_NO_ASM): its
#   portable, constant-time C instead, and no 151 KB P-256 table: 209 KB less squashfs-xz
#   (issue 39). TLS here is a control channel of a few messages a second and one handshake
#   a connection.
ORDER_FILE = $(CURDIR)/Packaging/mediarouted.order
# The protocols the release carries (package traits, Package.swift): all by default; a box maker
# names the ones the box needs, e.g. `make release TRAITS=Bluetooth` (UPnP/DLNA is always in).
# A build with other traits goes to a folder of its own, so the two do not rebuild each other.
ALL_TRAITS = Cast,AirPlay,PipeWire,WiFi,Bluetooth
TRAITS ?= $(ALL_TRAITS)
RELEASE_DIR ?= $(if $(filter $(ALL_TRAITS),$(TRAITS)),.build-release,.build-release-$(subst $(comma),-,$(if $(TRAITS),$(TRAITS),none)))
comma := ,
RELEASE_LINK = $(CURDIR)/Packaging/link
# The measures for size alone, which scripts/flash-floor.sh applies to the libraries on their own.
RELEASE_SIZE_FLAGS = -c release --static-swift-stdlib -Xswiftc -Osize \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld \
	-Xswiftc -ld-path=$(RELEASE_LINK)/ld-static-system-libs \
	-Xlinker -T -Xlinker $(RELEASE_LINK)/no-unwind-tables.ld -Xlinker --icf=all \
	-Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic -Xlinker -O2 \
	-Xcc -DOPENSSL_NO_ASM
RELEASE_FLAGS = $(RELEASE_SIZE_FLAGS) --disable-default-traits $(if $(TRAITS),--traits $(TRAITS)) --scratch-path $(RELEASE_DIR) \
	-Xlinker $(CURDIR)/$(RELEASE_DIR)/no-socket-activation.o \
	-Xlinker $(CURDIR)/$(RELEASE_DIR)/no-scalar-names.o \
	-Xlinker --wrap=_swift_stdlib_getScalarName -Xlinker --wrap=_swift_stdlib_getNameAlias \
	-Xlinker -T -Xlinker $(RELEASE_LINK)/private-functions.ld \
	-Xlinker --symbol-ordering-file=$(ORDER_FILE) -Xlinker --no-warn-symbol-ordering \
	-Xlinker --build-id

# One file, mediarouted, is the daemon and, run as mediaroutectl (a link), the tool:
# flash on a box is counted in megabytes, and the two static binaries were 95 %
# the same code. Its debug information is kept apart in mediarouted.debug (matched
# by build id; `make install` installs the binary stripped).
release: deps
	$(MAKE) release-binaries

# The release build alone, without the package check: what debian/rules runs (a package
# build installs nothing; its build dependencies are in debian/control).
release-binaries: build-stamp $(RELEASE_DIR)/order-stamp $(RELEASE_DIR)/no-socket-activation.o $(RELEASE_DIR)/no-scalar-names.o
	$(SWIFT) build $(RELEASE_FLAGS) --product mediarouted
	rm -f $(RELEASE_DIR)/release/mediaroutectl
	ln -s mediarouted $(RELEASE_DIR)/release/mediaroutectl
	objcopy --only-keep-debug $(RELEASE_DIR)/release/mediarouted $(RELEASE_DIR)/release/mediarouted.debug

# For scripts/order-file.sh, which links the daemon once more with a link map.
release-flags:
	@echo $(RELEASE_FLAGS)

# For scripts/flash-floor.sh.
release-size-flags:
	@echo $(RELEASE_SIZE_FLAGS)

$(RELEASE_DIR)/no-socket-activation.o: $(RELEASE_LINK)/no-socket-activation.c
	mkdir -p $(RELEASE_DIR)
	$(RELEASE_CC) -O2 -fPIC -c $< -o $@

$(RELEASE_DIR)/no-scalar-names.o: $(RELEASE_LINK)/no-scalar-names.c
	mkdir -p $(RELEASE_DIR)
	$(RELEASE_CC) -O2 -fPIC -c $< -o $@

# SwiftPM does not see the linker's inputs: a change to them relinks by removing the binaries.
$(RELEASE_DIR)/order-stamp: $(ORDER_FILE) $(RELEASE_LINK)/no-scalar-names.c $(RELEASE_LINK)/ld-static-system-libs $(RELEASE_LINK)/lazy-objects $(RELEASE_LINK)/private-functions.ld $(RELEASE_LINK)/no-unwind-tables.ld
	rm -f $(RELEASE_DIR)/release/mediarouted $(RELEASE_DIR)/release/mediaroutectl
	mkdir -p $(RELEASE_DIR) && touch $@

# Installs the release binary (stripped) and its mediaroutectl link, the D-Bus policy, the systemd unit and sysusers
# entry, the udev rules and the configuration file (an existing one is kept).
# Afterwards, on the box: systemd-sysusers; udevadm control --reload;
# systemctl reload dbus; systemctl daemon-reload; systemctl --global enable
# mediaroute-pipewire.service (see Docs/operations.md).
install: release
	$(MAKE) install-files

install-files:
	install -D -m 0755 $(INSTALL_STRIP) $(BINARIES)/mediarouted $(DESTDIR)$(PREFIX)/bin/mediarouted
	ln -sf mediarouted $(DESTDIR)$(PREFIX)/bin/mediaroutectl
	install -D -m 0644 dbus/org.mediaroute.conf $(DESTDIR)$(DBUSPOLICYDIR)/org.mediaroute.conf
	install -d $(DESTDIR)$(UNITDIR)
	sed 's#/usr/local/bin/#$(PREFIX)/bin/#g; s#/usr/local/share/doc/mediaroute#$(DOCDIR)#g' systemd/mediarouted.service > $(DESTDIR)$(UNITDIR)/mediarouted.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/mediarouted.service
	install -d $(DESTDIR)$(USERUNITDIR)
	sed 's#/usr/local/bin/#$(PREFIX)/bin/#g; s#/usr/local/share/doc/mediaroute#$(DOCDIR)#g' systemd/mediaroute-pipewire.service > $(DESTDIR)$(USERUNITDIR)/mediaroute-pipewire.service
	chmod 0644 $(DESTDIR)$(USERUNITDIR)/mediaroute-pipewire.service
	install -D -m 0644 systemd/mediaroute.sysusers $(DESTDIR)$(SYSUSERSDIR)/mediaroute.conf
	install -D -m 0644 udev/70-mediaroute.rules $(DESTDIR)$(UDEVRULESDIR)/70-mediaroute.rules
	install -d -m 0755 $(DESTDIR)$(CONFDIR)
	[ -e $(DESTDIR)$(CONFDIR)/mediaroute.conf ] || install -m 0644 config/mediaroute.conf $(DESTDIR)$(CONFDIR)/mediaroute.conf
	install -D -m 0644 Docs/operations.md $(DESTDIR)$(DOCDIR)/operations.md
	install -D -m 0644 Docs/dbus-api.md $(DESTDIR)$(DOCDIR)/dbus-api.md
	install -D -m 0644 Docs/audio.md $(DESTDIR)$(DOCDIR)/audio.md
	install -D -m 0644 man/mediarouted.8 $(DESTDIR)$(MANDIR)/man8/mediarouted.8
	install -D -m 0644 man/mediaroutectl.1 $(DESTDIR)$(MANDIR)/man1/mediaroutectl.1

# The Debian package (debian/, Docs/operations.md "The Debian package"): mediaroute_<version>_<arch>.deb
# and mediaroute-dbgsym, built by dpkg-buildpackage into .build-deb/ (it writes them next to the
# source tree; they are moved here). `lintian` runs on the result.
DEB_OUT = .build-deb
deb: deps
	rm -f ../mediaroute_*.deb ../mediaroute-dbgsym_*.deb ../mediaroute_*.buildinfo ../mediaroute_*.changes
	dpkg-buildpackage -b -us -uc
	mkdir -p $(DEB_OUT)
	mv ../mediaroute_*.deb ../mediaroute-dbgsym_*.deb ../mediaroute_*.buildinfo ../mediaroute_*.changes $(DEB_OUT)/
	lintian --fail-on error $(DEB_OUT)/mediaroute_*.changes

# Boots a Debian 12 root under systemd in QEMU, installs the package there and checks it
# (Tests/Package/boot-test.sh; the root is cached in .build-boot/).
deb-boot-test: deb
	./Tests/Package/boot-test.sh

# Reverses install; the configuration file goes only if it is still the shipped one.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/mediarouted $(DESTDIR)$(PREFIX)/bin/mediaroutectl
	rm -f $(DESTDIR)$(DBUSPOLICYDIR)/org.mediaroute.conf
	rm -f $(DESTDIR)$(UNITDIR)/mediarouted.service
	rm -f $(DESTDIR)$(USERUNITDIR)/mediaroute-pipewire.service
	rm -f $(DESTDIR)$(SYSUSERSDIR)/mediaroute.conf
	rm -f $(DESTDIR)$(UDEVRULESDIR)/70-mediaroute.rules
	if cmp -s config/mediaroute.conf $(DESTDIR)$(CONFDIR)/mediaroute.conf; then rm -f $(DESTDIR)$(CONFDIR)/mediaroute.conf; fi
	-rmdir $(DESTDIR)$(CONFDIR) 2>/dev/null
	rm -f $(DESTDIR)$(DOCDIR)/operations.md $(DESTDIR)$(DOCDIR)/dbus-api.md $(DESTDIR)$(DOCDIR)/audio.md
	rm -f $(DESTDIR)$(MANDIR)/man8/mediarouted.8 $(DESTDIR)$(MANDIR)/man1/mediaroutectl.1
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null

# The virtual hardware-in-the-loop rig (Tests/HIL, Docs/hil.md): Debian's kernel in QEMU with
# mac80211_hwsim radios and a hostapd TV; the release binary must find it through nl80211.
hil: release
	./Tests/HIL/run.sh

# The figures of Docs/benchmarks.md.
benchmarks: deps .build-release/order-stamp .build-release/no-socket-activation.o .build-release/no-scalar-names.o
	$(SWIFT) build $(RELEASE_FLAGS) --product mediarouted
	$(SWIFT) build -c release --product mediaroute-bench
	$(SWIFT) build -c release --product dbus-signal-floor
	.build/release/mediaroute-bench clocksync
	.build/release/mediaroute-bench dbus
	.build/release/mediaroute-bench daemon .build-release/release/mediarouted
	.build/release/mediaroute-bench push
	.build/release/mediaroute-bench wifi
	.build/release/mediaroute-bench bluez
	$(SWIFT) build -c release --product mediaroutectl
	.build/release/mediaroute-bench upnp .build/release/mediaroutectl
	ln -sf mediarouted .build-release/release/mediaroutectl
	.build/release/mediaroute-bench cast 7 .build-release/release/mediarouted .build-release/release/mediaroutectl

clean:
	rm -rf .build

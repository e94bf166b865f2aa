# The two commands of the README: `make demo` and `make test`.
SWIFT ?= swift
TEST_TIMEOUT ?= 1200

PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: deps build demo test release install benchmarks clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

demo: build
	$(SWIFT) run mediaroutectl demo

# Swift Testing runs the suites in parallel; the timeout keeps a hung test from hanging CI.
test: deps
	$(SWIFT) build --build-tests
	timeout $(TEST_TIMEOUT) $(SWIFT) test --disable-xctest

# Release binaries: static Swift runtime and -Osize (the smallest resident set
# measured for the daemon; see Docs/benchmarks.md).
RELEASE_FLAGS = -c release --static-swift-stdlib -Xswiftc -Osize --scratch-path .build-release

release: deps
	$(SWIFT) build $(RELEASE_FLAGS)

# Installs the release binaries, the D-Bus policy and the systemd unit.
install: release
	install -D -m 0755 .build-release/release/mediarouted $(DESTDIR)$(PREFIX)/bin/mediarouted
	install -D -m 0755 .build-release/release/mediaroutectl $(DESTDIR)$(PREFIX)/bin/mediaroutectl
	install -D -m 0644 dbus/org.mediaroute.conf $(DESTDIR)/usr/share/dbus-1/system.d/org.mediaroute.conf
	install -D -m 0644 systemd/mediarouted.service $(DESTDIR)/lib/systemd/system/mediarouted.service
	install -D -m 0644 Docs/operations.md $(DESTDIR)$(PREFIX)/share/doc/mediaroute/operations.md

# The figures of Docs/benchmarks.md.
benchmarks: deps
	$(SWIFT) build $(RELEASE_FLAGS) --product mediarouted
	$(SWIFT) build -c release --product mediaroute-bench
	.build/release/mediaroute-bench clocksync
	.build/release/mediaroute-bench dbus
	.build/release/mediaroute-bench daemon .build-release/release/mediarouted
	.build/release/mediaroute-bench push

clean:
	rm -rf .build

# The two commands of the README: `make demo` and `make test`.
SWIFT ?= swift
TEST_TIMEOUT ?= 1200

.PHONY: deps build demo test release clean

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

release: deps
	$(SWIFT) build -c release

clean:
	rm -rf .build

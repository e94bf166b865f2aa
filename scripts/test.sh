#!/usr/bin/env bash
# The README's test command: the whole suite, one suite after another (see the Makefile),
# with its output kept in .build/test.log. When something fails, the failing tests and what
# they recorded are printed again at the end, where a log's tail (CI's summary) shows them.
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
log=.build/test.log
mkdir -p .build
# The build with the traits' -D flags in one order from run to run (the Makefile says why), and
# the same import check as `make test`'s build, so it finds nothing to do after that one. The
# tests then run without the fixed hash seed: the daemons and peers they start must not get it
# (a fixed seed is what a hash-flooding peer would want).
SWIFT_DETERMINISTIC_HASHING=1 "$swift" build --build-tests --explicit-target-dependency-import-check error 2>&1 | tee "$log"
build=${PIPESTATUS[0]}
if [ "$build" -ne 0 ]; then
  echo "=== make test failed: the build (exit $build)"
  exit "$build"
fi
unset SWIFT_DETERMINISTIC_HASHING
timeout "${TEST_TIMEOUT:-1200}" "$swift" test --skip-build --disable-xctest --no-parallel 2>&1 | tee -a "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo
  echo "=== make test failed (exit $status); what failed, from $log:"
  grep -a -E '^✘ (Test|Suite) .* failed' "$log" | grep -a -v '^✘ Test run with' | tail -n 20
  grep -a -E -A4 '^✘ Test .* recorded an issue|Fatal error|time limit' "$log" | tail -n 80
  [ "$status" -eq 124 ] && echo "(the suite ran over ${TEST_TIMEOUT:-1200} s and was stopped)"
fi
exit "$status"

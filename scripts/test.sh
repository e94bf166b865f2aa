#!/usr/bin/env bash
# The README's test command: the whole suite, one suite after another (see the Makefile),
# with its output kept in .build/test.log. When something fails, the failing tests and what
# they recorded are printed again at the end, where a log's tail (CI's summary) shows them.
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
log=.build/test.log
mkdir -p .build
# The same check as `make test`'s build, so the test run does not plan another build.
timeout "${TEST_TIMEOUT:-1200}" "$swift" test --disable-xctest --no-parallel --explicit-target-dependency-import-check error 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo
  echo "=== make test failed (exit $status); what failed, from $log:"
  grep -a -E '^✘ (Test|Suite) .* failed' "$log" | grep -a -v '^✘ Test run with' | tail -n 20
  grep -a -E -A4 '^✘ Test .* recorded an issue|Fatal error|time limit' "$log" | tail -n 80
  [ "$status" -eq 124 ] && echo "(the suite ran over ${TEST_TIMEOUT:-1200} s and was stopped)"
fi
exit "$status"

#!/usr/bin/env bash
# Builds the libFuzzer binary and runs every harness (or those named) for a set time.
#   scripts/fuzz.sh [--seconds N] [--runs N] [--timeout S] [harness ...]
# --runs stops a harness after N inputs (the long run: --runs 10000000 --seconds 3600,
# whichever comes first). --timeout (default 10) is libFuzzer's per-input limit, in
# wall-clock seconds: a long run sharing the machine at low priority wants more.
# Corpora grow in .build-fuzz/corpus/<harness> (seeded from Fuzz/Corpus, never written
# back); a finding lands in .build-fuzz/findings/<harness>/ and fails the run. Copy it
# to Fuzz/Regressions/<harness>/ once fixed: the test suite replays those.
set -euo pipefail
# The traits' -D flags in one order from run to run (the Makefile says why).
export SWIFT_DETERMINISTIC_HASHING=1
cd "$(dirname "$0")/.."
seconds=60
runs_limit=()
timeout=10
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs_limit=(-runs="$2"); shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --) shift; break ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done

build=.build-fuzz
# Optimised (the harnesses run as fast as the daemon's code does) with overflow checks kept,
# ASan for memory errors in the C libraries the parsers call (Expat, llhttp).
MEDIAROUTE_FUZZ=1 swift build --build-path "$build" -c release --product mediaroute-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xcc -fsanitize=address >&2
binary="$build/release/mediaroute-fuzz"

harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  mapfile -t harnesses < <(ls Fuzz/Corpus)
fi

failed=()
for harness in "${harnesses[@]}"; do
  corpus="$build/corpus/$harness"
  findings="$build/findings/$harness"
  mkdir -p "$corpus" "$findings"
  ln -sf "$(realpath "$binary")" "$build/fuzz-$harness"
  case "$harness" in
    xml|upnp-*|soap|gena-event) dict=(-dict=Fuzz/Dictionaries/xml.dict) ;;
    ssdp|http-*|rtsp-*) dict=(-dict=Fuzz/Dictionaries/http.dict) ;;
    push-json|loopback-*|cast-*) dict=(-dict=Fuzz/Dictionaries/json.dict) ;;
    *) dict=() ;;
  esac
  log="$build/findings/$harness.log"
  # -rss_limit_mb/-malloc_limit_mb: an input that makes a parser allocate without bound
  # is a finding too; -timeout: so is one that makes it spin.
  if SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=64 "$build/fuzz-$harness" "$corpus" Fuzz/Corpus/"$harness" \
      "${dict[@]}" "${runs_limit[@]}" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -malloc_limit_mb=256 \
      -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -m1 -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo '?')
    ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo '?')
    took=$(grep -m1 -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
    echo "fuzz: $harness: $runs inputs ($took/s), coverage $cov edges, $ft features, no finding"
  else
    echo "fuzz: $harness: FINDING (log $log):" >&2
    grep -E 'ERROR|Fatal error|mediaroute-fuzz:|Test unit written|SUMMARY' "$log" | head -8 >&2 || true
    failed+=("$harness")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi

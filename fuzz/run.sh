#!/usr/bin/env bash
# run.sh - builds the fuzz targets, gathers seeds and runs each target for a bounded time.
#
# Usage: fuzz/run.sh [BUILD_DIR] [SECONDS] [TARGET...]   (`make fuzz` calls it)
# Targets are the names after fuzz_ (saved_model pbtxt table bundle npy pyliteral example graph
# idx json keras grpc pb_decode media records kernels; default every one fuzz/build.sh built), run one after another. New interesting
# inputs accumulate in BUILD_DIR/corpus/fuzz_<t>/; a crash, leak, hang or invariant failure leaves its input in BUILD_DIR/artifacts/fuzz_<t>/ and makes the run fail.
# A crash input, once fixed, belongs in tests/fixtures/fuzz-regressions/fuzz_<t>/ (replayed by
# test_fuzz_regressions in the normal build).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-fuzz}
SECS=${2:-60}
shift 2 2>/dev/null || shift $#
targets=("$@")
build_failed=0
fuzz/build.sh "$B" || { build_failed=1; echo "fuzz: some targets did not build (see above); running the others"; }
if [ ${#targets[@]} -eq 0 ]; then
  for t in "$B"/fuzz_*; do [ -x "$t" ] && [ -f "fuzz/$(basename "$t").c" ] && targets+=("${t##*/fuzz_}"); done
fi
fuzz/make_corpus.sh "$B" "${CLI:-build/savedmodel}" || exit 1

# fuzz_bundle writes two files per input: on tmpfs it runs about 5 times faster than on disk.
[ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm

failed=()
for t in "${targets[@]}"; do
  n=fuzz_$t
  if [ ! -x "$B/$n" ]; then echo "== $n: not built (see fuzz/build.sh), skipped"; continue; fi
  mkdir -p "$B/artifacts/$n"
  extra=()
  [ -f "fuzz/$t.dict" ] && extra+=("-dict=fuzz/$t.dict")
  [ -n "${FUZZ_RUNS:-}" ] && extra+=("-runs=$FUZZ_RUNS")
  dirs=("$B/corpus/$n")
  [ -d "tests/fixtures/fuzz-regressions/$n" ] && dirs+=("tests/fixtures/fuzz-regressions/$n")
  echo "== $n for ${SECS}s"
  # A single input running 25 s, or 2 GiB of memory, counts as a failure.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
    "$B/$n" -max_total_time="$SECS" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$B/artifacts/$n/" "${extra[@]}" "${dirs[@]}" >"$B/$n.log" 2>&1
  rc=$?
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$B/$n.log" | sed "s/^/  /"
  if [ $rc -ne 0 ]; then
    echo "  FAILED (exit $rc): see $B/$n.log; inputs in $B/artifacts/$n/"
    grep -E 'ERROR|SUMMARY|Test unit written' "$B/$n.log" | head -5 | sed "s/^/  /"
    failed+=("$n")
  fi
done
[ $build_failed -eq 0 ] || failed+=("(build)")
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}"
  exit 1
fi
echo "fuzz: ${targets[*]}: no crash in ${SECS}s each"

#!/bin/bash
# bench/ab_cpu.sh - CPU time per call of bench_run binaries, interleaved (not a test).
#
#   bench/ab_cpu.sh MODEL_DIR BATCH RUNS ROUNDS BENCH_RUN...
#
# For a shared machine, where wall-clock medians move 2x with the load: per round and binary, runs
# `BENCH_RUN MODEL_DIR serve serving_default BATCH N 1 2` (2 threads, 1 warm-up) with N = 1 and
# N = RUNS + 1 under /usr/bin/time and prints (user, sys) CPU ms per call = the difference / RUNS,
# so loading the model is excluded. /usr/bin/time counts in 10 ms steps: pick RUNS so that a run
# takes a few hundred ms. Build a "before" binary with bench_runtime.build_driver on the old tree
# and copy it away (bench/RESULTS.md, the transformer section of 2026-12-02, used it so).
set -u
if [ $# -lt 5 ]; then
  sed -n 3,10p "$0" >&2
  exit 2
fi
model=$1 batch=$2 runs=$3 rounds=$4
shift 4
cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1; }
for r in $(seq "$rounds"); do
  for bin in "$@"; do
    read -r u1 s1 < <(cpu "$bin" "$model" serve serving_default "$batch" 1 1 2)
    read -r u2 s2 < <(cpu "$bin" "$model" serve serving_default "$batch" $((runs + 1)) 1 2)
    awk -v b="$bin" -v n="$runs" -v u1="$u1" -v u2="$u2" -v s1="$s1" -v s2="$s2" -v r="$r" -v bt="$batch" \
      'BEGIN { printf "round %d  %-40s batch %d  user %.1f  sys %.1f  ms/call\n", r, b, bt, (u2-u1)*1000/n, (s2-s1)*1000/n }'
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

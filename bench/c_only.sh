#!/usr/bin/env bash
# bench/c_only.sh - the libsavedmodel half of bench/run.py, for a machine without TensorFlow.
#
# Usage: bench/c_only.sh BENCH_FORMAT SAVED_MODEL_PB [WORKDIR]
#   BENCH_FORMAT    a bench_format binary (run.py builds one at BUILD/bench/bench_format; link it
#                   with -static to carry it to another machine)
#   SAVED_MODEL_PB  a saved_model.pb to parse (e.g. the 20,000-node one run.py --keep leaves)
# Writes 8 x 32Mi float32 (1 GiB) with our own bundle writer into WORKDIR (default a temp dir),
# warms the page cache, then prints cat (best of 5), read-vars (best of 5) and parse-pb (50 runs).
# No TensorFlow comparison here: run.py does that. Removes the 1 GiB it wrote.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BENCH_FORMAT SAVED_MODEL_PB [WORKDIR]" >&2
  exit 2
fi
exe=$1
pb=$2
work=${3:-$(mktemp -d)}
mkdir -p "$work"
trap 'rm -f "$work"/vars.*' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), nproc $(nproc), $(uname -sr)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
"$exe" write-vars "$work/vars" 8 33554432
files=("$work"/vars.data-* "$work/vars.index")
cat "${files[@]}" > /dev/null
bytes=$(cat "${files[@]}" | wc -c)
best=
for _ in 1 2 3 4 5; do
  t0=$(date +%s.%N)
  cat "${files[@]}" > /dev/null
  t1=$(date +%s.%N)
  best=$(awk -v a="$t0" -v b="$t1" -v m="$best" 'BEGIN { d = b - a; if (m == "" || d < m) m = d; print m }')
done
awk -v n="$bytes" -v s="$best" 'BEGIN { printf "{\"mode\": \"cat\", \"bytes\": %d, \"best_s\": %.6f, \"best_gbps\": %.3f}\n", n, s, n / s / 1e9 }'
"$exe" read-vars "$work/vars" 5
"$exe" parse-pb "$pb" 50

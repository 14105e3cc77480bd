#!/bin/bash
# bench/ab_grpc.sh - `savedmodel serve` half_plus_two, gRPC Predict (h2load) and REST (wrk): CPU per
# request of the server and of the client, A/B over server environments, interleaved (not a test).
#
#   bench/ab_grpc.sh [-b BUILD] [-s SECONDS] [-r ROUNDS] [-m "grpc rest"] ENV_A [ENV_B ...]
#
# Each ENV is a space-separated list of VAR=value set for the server ("-" for none), e.g.
#   bench/ab_grpc.sh -r 3 "SM_GRPC_HANDOFF=1 SM_GRPC_ABSL_CHECKS=1 SM_GRPC_LEAN=0" -
# compares the gRPC server as it was before its per-call savings with as it is now. Per round and
# ENV: a fresh server, then for each mode a SECONDS-long run of 2 client threads and 32 connections
# (bench_serve.py's request and client settings), printing requests/s, the server's CPU us per
# request (/proc/PID/stat), the client's (/usr/bin/time), and with perf, context switches and futex
# calls per request. On a shared 2-core machine requests/s move 2x with the load; the per-request
# CPU figures move far less, and interleaving rounds spreads the load over A and B alike.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
build=$ROOT/build secs=5 rounds=3 modes="grpc rest"
while getopts "b:s:r:m:" o; do
  case $o in
    b) build=$OPTARG ;; s) secs=$OPTARG ;; r) rounds=$OPTARG ;; m) modes=$OPTARG ;;
    *) sed -n 3,15p "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then sed -n 3,15p "$0" >&2; exit 2; fi
base=$ROOT/../shared/fixtures/tf-serving/saved_model_half_plus_two_cpu
for t in h2load wrk; do command -v $t >/dev/null || { echo "skipped: $t absent (tools/install-deps.sh --bench)"; exit 0; }; done
[ -d "$base" ] || { echo "skipped: $base absent"; exit 0; }
tmp=$(mktemp -d /tmp/ab_grpc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'EOF'
import sys
sys.path.insert(0, "bench")
import bench_serve as b
open(sys.argv[1] + "/hpt.grpc", "wb").write(b.grpc_predict_frame("half_plus_two", "x", [3], [1.0, 2.0, 5.0]))
open(sys.argv[1] + "/post.lua", "w").write('wrk.method = "POST"\nwrk.body = \'{"instances": [1.0, 2.0, 5.0]}\'\n'
                                           'wrk.headers["Content-Type"] = "application/json"\n')
EOF
tck=$(getconf CLK_TCK)
perf=$(command -v perf)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for r in $(seq "$rounds"); do
  for envs in "$@"; do
    [ "$envs" = "-" ] && envs=""
    rp=$(free_port) gp=$(free_port)
    : >"$tmp/server.log" # emptied here: the background job's own truncation may come after the grep below
    # shellcheck disable=SC2086
    env $envs "$build/savedmodel" serve --rest_api_port "$rp" --rest_api_bind 127.0.0.1 --port "$gp" \
      --model_name half_plus_two --model_base_path "$base" 2>>"$tmp/server.log" &
    sp=$!
    for _ in $(seq 100); do grep -q "Exporting HTTP" "$tmp/server.log" && break; sleep 0.1; done
    for mode in $modes; do
      c0=$(cpu $sp)
      pp=
      if [ -n "$perf" ]; then
        perf stat -x, -e context-switches,syscalls:sys_enter_futex -p $sp -o "$tmp/perf.txt" 2>/dev/null &
        pp=$!
      fi
      if [ "$mode" = grpc ]; then
        /usr/bin/time -f "%U %S" -o "$tmp/client" h2load -c32 -t2 -m1 -D"$secs" -d "$tmp/hpt.grpc" \
          -H 'content-type: application/grpc' -H 'te: trailers' \
          "http://127.0.0.1:$gp/tensorflow.serving.PredictionService/Predict" >"$tmp/out"
        n=$(grep -oP 'requests: \d+ total, \d+ started, \K\d+' "$tmp/out")
        rps=$(grep -oP 'finished in [\d.]+s, \K[\d.]+' "$tmp/out")
      else
        /usr/bin/time -f "%U %S" -o "$tmp/client" wrk -t2 -c32 -d"${secs}s" -s "$tmp/post.lua" \
          "http://127.0.0.1:$rp/v1/models/half_plus_two:predict" >"$tmp/out"
        n=$(grep -oP '\d+(?= requests in)' "$tmp/out")
        rps=$(grep -oP 'Requests/sec:\s+\K[\d.]+' "$tmp/out")
      fi
      c1=$(cpu $sp)
      cs=nan fx=nan
      if [ -n "$pp" ]; then
        kill -INT $pp; wait $pp
        cs=$(grep context-switches "$tmp/perf.txt" | cut -d, -f1)
        fx=$(grep futex "$tmp/perf.txt" | cut -d, -f1)
      fi
      read -r cu cs_ < "$tmp/client"
      awk -v r="$r" -v e="${envs:--}" -v m="$mode" -v rps="${rps:-0}" -v n="${n:-0}" -v s0="$c0" -v s1="$c1" \
        -v t="$tck" -v cu="$cu" -v cs_="$cs_" -v cs="$cs" -v fx="$fx" 'BEGIN { if (n == 0) n = 1;
        printf "round %d  %-5s %-55s %8.0f req/s  server %5.1f us/req  client %5.1f us/req  cs %s  futex %s /req\n",
          r, m, e, rps, (s1 - s0) / t * 1e6 / n, (cu + cs_) * 1e6 / n,
          cs == "nan" ? "-" : sprintf("%.2f", cs / n), fx == "nan" ? "-" : sprintf("%.2f", fx / n) }'
    done
    kill $sp; wait $sp 2>/dev/null
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

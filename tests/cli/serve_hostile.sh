#!/usr/bin/env bash
# serve_hostile.sh - `savedmodel serve` against hostile clients on loopback (issue 17): strict
# JSON and HTTP (trailing data, NULs, ambiguous Content-Length, the decoding limit), 2,000 idle
# plus 1,100 slowloris connections while a status request still answers, and a version directory
# copied in two steps (graph first, variables 2.5 s later) while 1,000 predicts run, none failing.
# usage: serve_hostile.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2 SHARED=$3
FIX=$SHARED/fixtures/tf-serving/saved_model_half_plus_two_cpu/00000123
if [ ! -d "$FIX" ]; then echo "skipped: $FIX absent"; exit 77; fi
if ! "$CLI" serve --help >/dev/null 2>&1; then echo "skipped: savedmodel serve absent"; exit 77; fi
if ! command -v python3 >/dev/null; then echo "skipped: python3 absent"; exit 77; fi
TMP=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- server log:"; tail -50 "$TMP/log"; exit 1; }
CHECK="python3 $SRC/tests/serve/serve_hostile.py"

mkdir -p "$TMP/base"
cp -r "$FIX" "$TMP/base/1"
"$CLI" serve --model_name hp --model_base_path "$TMP/base" --rest_api_port 0 --rest_api_bind 127.0.0.1 \
  --file_system_poll_wait_seconds 0.2 --rest_api_header_timeout_seconds 2 --rest_api_num_threads 4 \
  2>"$TMP/log" &
PID=$!
PORT=
for _ in $(seq 1 200); do
  PORT=$(sed -n 's/^Exporting HTTP\/REST API at:.*:\([0-9]*\) \.\.\.$/\1/p' "$TMP/log")
  [ -n "$PORT" ] && break
  kill -0 "$PID" 2>/dev/null || fail "server exited early"
  sleep 0.05
done
[ -n "$PORT" ] || fail "server did not report its port"

$CHECK "$PORT" strict hp || fail "strict HTTP/JSON"
$CHECK "$PORT" flood hp 2000 1100 || fail "connection flood"
$CHECK "$PORT" reload hp "$TMP/base" "$FIX" 1000 || fail "two-step copy"
grep -q "servable {name: hp version: 2} is not complete yet" "$TMP/log" || fail "no note of the incomplete version"
[ "$(grep -c 'http: ' "$TMP/log")" -le 21 ] || fail "the server's log was flooded"

kill -TERM "$PID"
for _ in $(seq 1 200); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
kill -0 "$PID" 2>/dev/null && fail "server still running 10 s after SIGTERM"
wait "$PID"
RC=$?
PID=
[ "$RC" = 0 ] || fail "exit status $RC after SIGTERM"
echo "serve_hostile.sh: all checks passed"

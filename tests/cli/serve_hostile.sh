#!/usr/bin/env bash
# serve_hostile.sh - `savedmodel serve` against hostile clients on loopback (issue 17): strict
# JSON and HTTP (trailing data, NULs, ambiguous Content-Length, the decoding limit), 2,000 idle
# plus 1,100 slowloris connections while a status request still answers, and a version directory
# copied in two steps (graph first, variables 2.5 s later) while 1,000 predicts run, none failing.
# usage: serve_hostile.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2 SHARED=$3
. "$SRC/tests/serve/serve_lib.sh"
CHECK="python3 $SRC/tests/serve/serve_hostile.py"

mkdir -p "$TMP/base"
cp -r "$FIX" "$TMP/base/1"
serve_start --model_name hp --model_base_path "$TMP/base" --rest_api_port 0 --rest_api_bind 127.0.0.1 \
  --file_system_poll_wait_seconds 0.2 --rest_api_header_timeout_seconds 2 --rest_api_num_threads 4 \
  --rest_api_max_connections_per_client 64

$CHECK "$PORT" strict hp || fail "strict HTTP/JSON"
$CHECK "$PORT" evict hp 64 || fail "eviction order"
$CHECK "$PORT" flood hp 2000 1100 || fail "connection flood"
$CHECK "$PORT" reload hp "$TMP/base" "$FIX" 1000 || fail "two-step copy"
grep -q "servable {name: hp version: 2} is not complete yet" "$TMP/log" || fail "no note of the incomplete version"
# libmicrohttpd's messages: at most 20 and one "not shown" notice per minute window (a run may span
# two windows), so never more than 21 lines per notice (+1 for a window that ended below the cap)
notices=$(grep -c 'http: more messages this minute are not shown' "$TMP/log" || true)
[ "$(grep -c 'http: ' "$TMP/log")" -le $((21 * (notices + 1))) ] || fail "the server's log was flooded"

serve_stop
echo "serve_hostile.sh: all checks passed"

#!/usr/bin/env bash
# serve.sh - `savedmodel serve` end to end on loopback: TF Serving's tutorial predict, status,
# metadata, error bodies, 413, metrics, a new version served within 2 s, a broken version that
# never interrupts serving, SIGTERM ending it cleanly, and version labels naming versions not
# yet loaded (--allow_version_labels_for_unavailable_models). The gRPC API listens beside REST
# (--port 0) when this CLI has it; a second server on a port in use exits non-zero.
# usage: serve.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2 SHARED=$3
. "$SRC/tests/serve/serve_lib.sh"
CHECK="python3 $SRC/tests/serve/serve_check.py"

mkdir -p "$TMP/base"
cp -r "$FIX" "$TMP/base/1"
GRPC=(--port 0)
"$CLI" serve --port 0 2>&1 | grep -q "gRPC is not built in" && GRPC=()
serve_start --model_name hp --model_base_path "$TMP/base" --rest_api_port 0 --rest_api_bind 127.0.0.1 \
  --file_system_poll_wait_seconds 0.2 --rest_api_max_request_bytes 100000 --rest_api_num_threads 4 \
  "${GRPC[@]}"
if [ ${#GRPC[@]} -gt 0 ]; then
  GPORT=$(sed -n 's/^Running gRPC ModelServer at 0.0.0.0:\([0-9]*\) \.\.\.$/\1/p' "$TMP/log")
  [ -n "$GPORT" ] || fail "no gRPC port reported"
  "$CLI" serve --model_name hp --model_base_path "$TMP/base" --rest_api_port 0 --port "$GPORT" \
    2>"$TMP/busy" && fail "a second server started on gRPC port $GPORT"
  grep -q "Address already in use" "$TMP/busy" || fail "busy gRPC port: $(cat "$TMP/busy")"
fi
# a busy REST port: refused, not shared (no SO_REUSEPORT)
"$CLI" serve --model_name hp --model_base_path "$TMP/base" --rest_api_bind 127.0.0.1 --rest_api_port "$PORT" \
  2>"$TMP/busy" && fail "a second server started on REST port $PORT"
grep -q "Failed to start HTTP Server at 127.0.0.1:$PORT: Address already in use" "$TMP/busy" ||
  fail "busy REST port: $(cat "$TMP/busy")"

$CHECK "$PORT" basic hp || fail "basic checks"

# hot reload: version 2 appears (written elsewhere, then renamed in), served within 2 s
cp -r "$FIX" "$TMP/v2" && mv "$TMP/v2" "$TMP/base/2"
$CHECK "$PORT" wait_version hp 2 2 || fail "version 2 not served within 2 s"
# a broken version 3 never interrupts serving
mkdir -p "$TMP/base/3" && echo garbage >"$TMP/base/3/saved_model.pb"
for _ in 1 2 3; do
  $CHECK "$PORT" predict hp || fail "serving interrupted by a broken version"
  sleep 0.1
done

# SIGTERM: stop accepting, finish in-flight, exit 0
serve_stop
# --allow_version_labels_for_unavailable_models: a config whose labels name versions that are
# not loaded yet is refused at startup without it (as TF Serving), served with it.
mkdir -p "$TMP/lab"
cp -r "$FIX" "$TMP/lab/1" && cp -r "$FIX" "$TMP/lab/2"
cat >"$TMP/models.config" <<EOF
model_config_list {
  config {
    name: 'lab'
    base_path: '$TMP/lab'
    model_platform: 'tensorflow'
    model_version_policy { all {} }
    version_labels { key: 'stable' value: 1 }
    version_labels { key: 'canary' value: 2 }
  }
}
EOF
"$CLI" serve --model_config_file "$TMP/models.config" --rest_api_port 0 --rest_api_bind 127.0.0.1 \
  2>"$TMP/log" && fail "labels naming unavailable versions accepted without the flag"
grep -q "not currently available" "$TMP/log" || fail "no 'not currently available' error without the flag"
serve_start --model_config_file "$TMP/models.config" --rest_api_port 0 --rest_api_bind 127.0.0.1 \
  --allow_version_labels_for_unavailable_models
$CHECK "$PORT" label lab stable 1 || fail "label stable"
$CHECK "$PORT" label lab canary 2 || fail "label canary"
serve_stop
echo "serve.sh: all checks passed"

#!/usr/bin/env bash
# serve_flags.sh - `savedmodel serve` as a drop-in for tensorflow_model_server's command line and
# log: --version; every flag of TF Serving's main.cc accepted, those without effect named in one
# warning line; a batching file with pad_variable_length_inputs taken without a warning; predicts parked
# while their batch forms (one REST thread serves two of them); TF Serving's load, unload,
# load-failure and retry log lines; the hint for a --model_base_path naming a version directory;
# docker/tf_serving_entrypoint.sh (MODEL_NAME, MODEL_BASE_PATH, arguments passed through).
# usage: serve_flags.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2 SHARED=$3
. "$SRC/tests/serve/serve_lib.sh"

predict() { # predict PORT MODEL JSON: prints the response body
  python3 -c 'import sys, urllib.request as u; print(u.urlopen(u.Request(sys.argv[1], sys.argv[2].encode())).read().decode())' \
    "http://127.0.0.1:$1/v1/models/$2:predict" "$3"
}
wait_log() { # wait_log TEXT: up to 10 s for a fixed string in the log
  for _ in $(seq 1 200); do grep -qF "$1" "$TMP/log" && return 0; sleep 0.05; done
  fail "not logged within 10 s: $1"
}

"$CLI" serve --version >"$TMP/ver" || fail "--version exited non-zero"
grep -q '^TensorFlow ModelServer: ' "$TMP/ver" || fail "--version: $(cat "$TMP/ver")"

mkdir -p "$TMP/base"
cp -r "$FIX" "$TMP/base/1"
echo "max_batch_size { value: 4 } pad_variable_length_inputs: true" >"$TMP/batching.config"
NO_EFFECT=(rest_api_enable_cors_support=true enable_per_model_batching_parameters=false num_load_threads=2
  num_unload_threads=2 flush_filesystem_caches=true tensorflow_session_config_file=/x
  tensorflow_inter_op_parallelism=2 use_alts_credentials=false ssl_config_file=/x platform_config_file=/x
  per_process_gpu_memory_fraction=0.5 num_request_iterations_for_warmup=3
  remove_unused_fields_from_bundle_metagraph=true prefer_tflite_model=false num_tflite_pools=1
  num_tflite_interpreters_per_pool=1 enable_signature_method_name_check=false xla_cpu_compilation_enabled=true
  xla_gpu_compilation_enabled=false enable_profiler=true thread_pool_factory_config_file=/x mixed_precision=bfloat16
  skip_initialize_tpu=true enable_grpc_healthcheck_service=false enable_serialization_as_tensor_content=false)
ARGS=()
for f in "${NO_EFFECT[@]}"; do ARGS+=("--$f"); done
serve_start --model_name hp --model_base_path "$TMP/base" --rest_api_port 0 --rest_api_bind 127.0.0.1 \
  --file_system_poll_wait_seconds 0.1 --file_system_settle_seconds 0 --max_num_load_retries 1 \
  --load_retry_interval_micros 1000 --tensorflow_session_parallelism 1 --enable_batching \
  --batching_parameters_file "$TMP/batching.config" --enable_model_warmup --monitoring_config_file=/x \
  --model_config_file_poll_wait_seconds 0 --rest_api_timeout_in_ms 30000 --grpc_channel_arguments= \
  --saved_model_tags serve --allow_version_labels_for_unavailable_models=false "${ARGS[@]}"
[ "$(grep -c 'accepted without effect here' "$TMP/log")" = 1 ] || fail "expected one warning line"
for f in "${NO_EFFECT[@]}"; do
  grep 'accepted without effect here' "$TMP/log" | grep -qF -- "--${f%%=*}" || fail "warning does not name --${f%%=*}"
done
grep -q 'pad_variable_length_inputs' "$TMP/log" && fail "pad_variable_length_inputs is done, not warned about"
wait_log "Successfully loaded servable version {name: hp version: 1}"
predict "$PORT" hp '{"instances": [1.0, 2.0]}' | grep -q '2.5' ||
  fail "predict with every flag given"

# a new version: 1 is unloaded, as TF Serving logs it
cp -r "$FIX" "$TMP/v2" && mv "$TMP/v2" "$TMP/base/2"
wait_log "Successfully loaded servable version {name: hp version: 2}"
wait_log "Done unloading servable version {name: hp version: 1}"
# a broken version: each try and the retry logged
mkdir -p "$TMP/v3" && echo garbage >"$TMP/v3/saved_model.pb" && mv "$TMP/v3" "$TMP/base/3"
wait_log "Encountered an error for servable version {name: hp version: 3}: "
grep -qF "Loading servable: {name: hp version: 3} failed: " "$TMP/log" || fail "no load failure line"
grep -qF "Retrying of Loading servable: {name: hp version: 3} retry: 1" "$TMP/log" || fail "no retry line"
serve_stop
# with --enable_batching, the exit line counts the requests that went through the batcher
grep -Eq '^Batching: [1-9][0-9]* requests in [1-9][0-9]* batches \([0-9.]+ a batch\)$' "$TMP/log" ||
  fail "no batching line at exit"

# A predict waiting for its batch is parked (its connection suspended), not holding a thread: with
# one REST thread and batches that close only when full (2 requests; the timeout is an hour), two
# requests on two connections are answered together. A thread that waited in the batcher would
# never read the second request.
mkdir -p "$TMP/pb" && cp -r "$FIX" "$TMP/pb/1"
echo "max_batch_size { value: 2 } batch_timeout_micros { value: 3600000000 } num_batch_threads { value: 1 }" \
  >"$TMP/b2.config"
serve_start --model_name pb --model_base_path "$TMP/pb" --rest_api_port 0 --rest_api_bind 127.0.0.1 \
  --rest_api_num_threads 1 --enable_batching --batching_parameters_file "$TMP/b2.config"
wait_log "Successfully loaded servable version {name: pb version: 1}"
grep -F 'thread pool size' "$TMP/log" && fail "libmicrohttpd warned about one REST thread"
python3 - "$PORT" <<'PY' || fail "two parked predicts on one REST thread"
import sys, threading, urllib.request as u
url = "http://127.0.0.1:%s/v1/models/pb:predict" % sys.argv[1]
out = {}
def post(x):
    out[x] = u.urlopen(u.Request(url, ('{"instances": [%s]}' % x).encode()), timeout=30).read().decode()
ts = [threading.Thread(target=post, args=(x,)) for x in ("1.0", "3.0")]
[t.start() for t in ts]
[t.join() for t in ts]
assert "2.5" in out.get("1.0", "") and "3.5" in out.get("3.0", ""), out
PY
# a request waiting for a batch that would not fill is answered when the server is told to stop
conns() { python3 -c 'import re, sys, urllib.request as u
m = u.urlopen("http://127.0.0.1:%s/monitoring/prometheus/metrics" % sys.argv[1]).read().decode()
print(re.search(r"^savedmodel_http_connections_open (\d+)", m, re.M).group(1))' "$PORT"; }
BEFORE=$(conns)
python3 - "$PORT" >"$TMP/late" 2>&1 <<'PY' &
import sys, urllib.request as u
print(u.urlopen(u.Request("http://127.0.0.1:%s/v1/models/pb:predict" % sys.argv[1], b'{"instances": [5.0]}'),
                timeout=30).read().decode())
PY
CLIENT=$!
for _ in $(seq 1 200); do [ "$(conns)" -gt "$BEFORE" ] && break; sleep 0.05; done # its connection is open
serve_stop
wait "$CLIENT" || fail "the request waiting for its batch got no answer at stop: $(cat "$TMP/late")"
grep -q '4.5' "$TMP/late" || fail "answer at stop: $(cat "$TMP/late")"
grep -q '^Batching: 3 requests in 2 batches' "$TMP/log" || fail "expected the two as one batch, the late one alone"

# --model_base_path naming a version directory: TF Serving's hint
serve_start --model_name hp --model_base_path "$TMP/base/1" --rest_api_port 0 --rest_api_bind 127.0.0.1
wait_log "No versions of servable hp found under base path $TMP/base/1. Did you forget to name your leaf directory as a number (eg. '/1/')?"
serve_stop

# the Docker entrypoint, without Docker: defaults overridden by env, extra arguments last
if "$CLI" serve --port 0 2>&1 | grep -q "gRPC is not built in"; then
  echo "entrypoint part skipped: gRPC not built in"
  exit 0
fi
mkdir -p "$TMP/models/hp2"
cp -r "$FIX" "$TMP/models/hp2/7"
: >"$TMP/log" # emptied before the start, not by the background job: the port is read from it below
(export SAVEDMODEL="$CLI" MODEL_NAME=hp2 MODEL_BASE_PATH="$TMP/models"
  CLI="$SRC/docker/tf_serving_entrypoint.sh"
  "$CLI" --port=0 --rest_api_port=0 --rest_api_bind=127.0.0.1 2>>"$TMP/log" &
  echo $! >"$TMP/pid"; wait) &
for _ in $(seq 1 100); do [ -s "$TMP/pid" ] && break; sleep 0.05; done
PID=$(cat "$TMP/pid")
for _ in $(seq 1 200); do
  PORT=$(sed -n 's/^Exporting HTTP\/REST API at:.*:\([0-9]*\) \.\.\.$/\1/p' "$TMP/log")
  [ -n "$PORT" ] && break
  sleep 0.05
done
[ -n "$PORT" ] || fail "entrypoint: no REST port"
wait_log "Successfully loaded servable version {name: hp2 version: 7}"
predict "$PORT" hp2 '{"instances": [1.0]}' | grep -q '2.5' ||
  fail "entrypoint: predict on hp2"
kill -TERM "$PID"
for _ in $(seq 1 200); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
kill -0 "$PID" 2>/dev/null && fail "entrypoint: server still running after SIGTERM"
PID=
exit 0

# serve_lib.sh - sourced by tests/cli/serve*.sh (with CLI, SRC and SHARED set): skips (exit 77)
# without TF Serving's half_plus_two fixture, `savedmodel serve` or python3; gives TMP (removed on
# exit, with the server), fail, serve_start ARGS (runs `savedmodel serve ARGS` in the background,
# its log in $TMP/log, and sets PID and PORT) and serve_stop (SIGTERM: it must exit 0 within 10 s).
FIX=$SHARED/fixtures/tf-serving/saved_model_half_plus_two_cpu/00000123
if [ ! -d "$FIX" ]; then echo "skipped: $FIX absent"; exit 77; fi
if ! "$CLI" serve --help >/dev/null 2>&1; then echo "skipped: savedmodel serve absent"; exit 77; fi
if ! command -v python3 >/dev/null; then echo "skipped: python3 absent"; exit 77; fi
TMP=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- server log:"; tail -50 "$TMP/log"; exit 1; }

serve_start() {
  # The log is emptied here, before the server starts: a `2>file &` redirection truncates in the
  # background child, which may run after the reads below, and they would then take the previous
  # server's port from its log (a test that fails only on a busy machine: "connection refused").
  : >"$TMP/log"
  "$CLI" serve "$@" 2>>"$TMP/log" &
  PID=$!
  PORT=
  for _ in $(seq 1 200); do
    PORT=$(sed -n 's/^Exporting HTTP\/REST API at:.*:\([0-9]*\) \.\.\.$/\1/p' "$TMP/log")
    [ -n "$PORT" ] && return 0
    kill -0 "$PID" 2>/dev/null || fail "server exited early"
    sleep 0.05
  done
  fail "server did not report its port"
}

serve_stop() {
  kill -TERM "$PID"
  for _ in $(seq 1 200); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$PID" 2>/dev/null && fail "server still running 10 s after SIGTERM"
  wait "$PID"
  local rc=$?
  PID=
  [ "$rc" = 0 ] || fail "exit status $rc after SIGTERM"
}

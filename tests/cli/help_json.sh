#!/usr/bin/env bash
# help_json.sh - what the CLI says about itself and prints for programs:
#  - `savedmodel --help` lists --version, and every command it lists answers `<command> --help`;
#  - the bash completion and the man page built from --help (build/savedmodel.bash, savedmodel.1)
#    offer exactly the commands and flags --help lists today (a stale or drifted one fails);
#  - `run --json`, `scan --json` and `validate --json` print one JSON document each, parsed with
#    python3's json module and checked against the schema their --help documents.
set -u
CLI=$1 SRC=$2
BUILD=$(dirname "$CLI")
ZOO=$SRC/tests/fixtures/zoo
fail=0
die() { echo "FAIL: $*"; fail=1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

top=$("$CLI" --help)
grep -q -- "--version" <<<"$top" || die "--help does not list --version"
[ "$("$CLI" --version)" = "savedmodel $(sed -n 's/^project(savedmodel VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")" ] ||
  die "--version: $("$CLI" --version)"
cmds=$(awk '/^commands:/ {on = 1; next} /^[^ ]/ {on = 0} on && /^  [a-z]/ {print $1}' <<<"$top")
[ "$(wc -w <<<"$cmds")" -ge 8 ] || die "commands in --help: $cmds"

# ---- completion: ask it as bash would, compare with --help ----------------------------------------
comp=$BUILD/savedmodel.bash
[ -f "$comp" ] || die "$comp not generated"
complete_words() { # WORDS... (the last one is being completed)
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _savedmodel; printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@" | sort
}
want=$( { printf '%s\n' $cmds; echo --help; echo --version; } | sort)
[ "$(complete_words savedmodel '')" = "$want" ] || die "completion of commands: $(complete_words savedmodel '' | tr '\n' ' ')"
[ "$(complete_words savedmodel 'tr')" = "train" ] || die "completion of 'tr'"
for c in $cmds; do
  help=$("$CLI" "$c" --help) || die "$c --help: exit $?"
  flags=$( { awk '/^flags:/ {on = 1; next} on && /^  --/ {print $1}' <<<"$help"; echo --help; } | sort)
  [ "$(wc -l <<<"$flags")" -ge 2 ] || die "$c --help lists no flags"
  got=$(complete_words savedmodel "$c" --)
  [ "$got" = "$flags" ] || die "completion of '$c --' differs from '$c --help': $(diff <(echo "$flags") <(echo "$got") | tr '\n' ' ')"
  # the man page has the command's section and each of its flags
  grep -qx ".SS $c" "$BUILD/savedmodel.1" || die "savedmodel.1 has no section for $c"
  for f in $flags; do [ "$f" = --help ] || grep -q -- "^  $f\b" "$BUILD/savedmodel.1" || die "savedmodel.1 lacks $c $f"; done
done
grep -q -- '--batch_size' <<<"$(complete_words savedmodel train --ba)" || die "completion of 'train --ba'"

# ---- --json ---------------------------------------------------------------------------------------
m=$ZOO/tf1_square/model
"$CLI" run --dir "$m" --tag_set serve --signature_def serving_default --input_exprs 'x=[1.5,-2.0]' --json \
  --outdir "$TMP/out" >"$TMP/run.json" || die "run --json: exit $?"
python3 - "$TMP/run.json" "$TMP/out/y.npy" <<'PY' || die "run --json: $(head -c 300 "$TMP/run.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d) == ["outputs"], d
y = d["outputs"]["y"]
assert y["dtype"] == "DT_FLOAT" and y["shape"] == [2], y
assert y["value"] == [2.25, 4.0], y
assert y["file"] == sys.argv[2], y
PY
[ -f "$TMP/out/y.npy" ] || die "run --json --outdir wrote no y.npy"
"$CLI" run --help | grep -q '"outputs": {KEY: {"dtype"' || die "run --help does not document --json"

"$CLI" validate --dir "$m" --json >"$TMP/v.json"; rc=$?
[ $rc -eq 0 ] || die "validate --json on a sound model: exit $rc"
"$CLI" validate --dir "$SRC/tests/fixtures/malformed/cycle" --json >"$TMP/bad.json"; rc=$?
[ $rc -eq 1 ] || die "validate --json on a faulty model: exit $rc"
python3 - "$TMP/v.json" "$TMP/bad.json" <<'PY' || die "validate --json: $(head -c 300 "$TMP/v.json") / $(head -c 300 "$TMP/bad.json")"
import json, sys
keys = {"dir", "sound", "faults", "warnings", "meta_graphs", "signatures", "checkpoint_tensors", "variables_checked", "findings"}
good, bad = (json.load(open(p)) for p in sys.argv[1:3])
for d in good, bad:
    assert set(d) == keys, d
    for f in d["findings"]:
        assert set(f) == {"kind", "context", "message"} and f["kind"] in ("fault", "warning", "note"), f
        assert f["context"] is None or isinstance(f["context"], str), f
    assert d["faults"] == sum(f["kind"] == "fault" for f in d["findings"]), d
    assert d["warnings"] == sum(f["kind"] == "warning" for f in d["findings"]), d
assert good["sound"] is True and good["faults"] == 0 and good["meta_graphs"] == 1 and good["signatures"] == 1, good
assert bad["sound"] is False and bad["faults"] >= 1, bad
assert any("cycle" in f["message"] for f in bad["findings"]), bad
PY
# the text and the JSON report the same faults
nt=$("$CLI" validate --dir "$SRC/tests/fixtures/malformed/cycle" | grep -c '^fault: ')
nj=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["faults"])' "$TMP/bad.json")
[ "$nt" = "$nj" ] || die "validate: $nt faults in text, $nj in --json"
# (scan --json and scan's exit status: tests/cli/scan.sh)

[ $fail -eq 0 ] && echo "help_json: ok"
exit $fail

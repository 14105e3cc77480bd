#!/usr/bin/env bash
# show_zoo.sh - `savedmodel show` against the zoo's goldens: the stdout of the real
# `saved_model_cli show` (run from tests/fixtures/zoo/<name> with --dir model) for every
# golden/show_*.txt, byte for byte, with the ops set sorted on both sides. The flags of each
# golden come from zoo/MANIFEST.json; a golden the manifest does not describe is a failure.
# usage: show_zoo.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") SRC=$2
. "$SRC/tests/cli/common.bash"
ZOO=${SM_ZOO_DIR:-$SRC/tests/fixtures/zoo}  # the interop suite points this at a freshly generated zoo
if [ ! -f "$ZOO/MANIFEST.json" ]; then echo "skipped: $ZOO absent"; exit 77; fi
command -v python3 >/dev/null || { echo "skipped: python3 absent (reads MANIFEST.json)"; exit 77; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail=0 n=0

# name \t file \t rc \t args... (args after "show")
python3 - "$ZOO/MANIFEST.json" >"$TMP/cases" <<'PY'
import json, sys
for m in json.load(open(sys.argv[1]))["models"]:
  for c in m.get("cli", []):
    if c["args"][:1] == ["show"]:
      print("\t".join([m["name"], c["file"], str(c["rc"])] + c["args"][1:]))
PY
for f in "$ZOO"/*/golden/show_*.txt; do
  name=$(basename "$(dirname "$(dirname "$f")")")
  grep -q "^$name	$(basename "$f")	" "$TMP/cases" || { echo "FAIL $name/$(basename "$f"): not in MANIFEST.json"; fail=1; }
done

while IFS=$'\t' read -r -a c; do
  name=${c[0]} file=${c[1]} want_rc=${c[2]} args=("${c[@]:3}")
  gold=$ZOO/$name/golden/$file
  [ -f "$gold" ] || { echo "FAIL $name/$file: golden missing"; fail=1; continue; }
  n=$((n + 1))
  (cd "$ZOO/$name" && "$CLI" show "${args[@]}") >"$TMP/out" 2>"$TMP/err"; rc=$?
  if [ "$want_rc" != 0 ]; then
    [ $rc -ne 0 ] || { echo "FAIL $name/$file: TF failed (rc $want_rc), we did not"; fail=1; }
  elif [ $rc -ne 0 ] || ! same_output "$TMP/out" "$gold"; then
    echo "FAIL $name/$file (rc=$rc) $(cat "$TMP/err")"; fail=1
  fi
done <"$TMP/cases"

echo "$n cases"
[ $fail -eq 0 ] && echo "ok" || exit 1

#!/usr/bin/env bash
# show_tfserving.sh - `savedmodel show` against goldens written by the real saved_model_cli
# (tools/make_tfserving_goldens.py) for the TF Serving SavedModels in ../shared: stdout must be
# byte-identical (the ops set sorted on both sides), errors must be TF's messages, exit 1.
# usage: show_tfserving.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2 SHARED=$3
. "$SRC/tests/cli/common.bash"
MODELS=$SHARED/fixtures/tf-serving
GOLD=$SRC/tests/fixtures/tf-serving-goldens
if [ ! -d "$MODELS" ]; then echo "skipped: $MODELS absent"; exit 77; fi
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail=0 n=0

for g in "$GOLD"/*/; do
  name=$(basename "$g")
  [ "$name" = zoo-inspect ] && continue  # vars.sh's goldens
  model=${name%_*} version=${name##*_}
  dir=$MODELS/$model/$version
  [ -d "$dir" ] || { echo "FAIL $name: $dir missing"; fail=1; continue; }
  if [ -f "$g/notsavedmodel.txt" ]; then
    n=$((n + 1))
    "$CLI" show --dir "$dir" >"$TMP/out" 2>"$TMP/err"; rc=$?
    if [ $rc -ne 1 ] || [ -s "$TMP/out" ] || ! grep -qi "savedmodel" "$TMP/err" ||
       ! grep -q "^savedmodel: " "$TMP/err"; then
      echo "FAIL $name: expected exit 1 and a not-a-SavedModel message, got $rc: $(cat "$TMP/err")"; fail=1
    fi
    continue
  fi
  while IFS=$'\t' read -r -a c; do
    file=${c[0]}; flags=("${c[@]:1}"); n=$((n + 1))
    "$CLI" show --dir "$dir" "${flags[@]}" >"$TMP/out" 2>"$TMP/err"; rc=$?
    case $file in
      err_*)
        # "Please choose from: a, b" lists a Python map in hash order: compare the keys sorted.
        printf 'savedmodel: %s\n' "$(cat "$g/$file")" | sort_choices >"$TMP/want"
        if [ $rc -ne 1 ] || ! cmp -s <(sort_choices <"$TMP/err") "$TMP/want"; then
          echo "FAIL $name $file (rc=$rc): got '$(cat "$TMP/err")'"; fail=1
        fi ;;
      *)
        if [ $rc -ne 0 ] || ! same_output "$TMP/out" "$g/$file"; then
          echo "FAIL $name $file (rc=$rc) $(cat "$TMP/err")"; fail=1
        fi ;;
    esac
  done <"$g/cases.tsv"
done

# Usage errors exit 2.
"$CLI" show >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: show without --dir should exit 2"; fail=1; }
"$CLI" show --dir "$MODELS/saved_model_counter/00000123" --bogus >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: unknown flag should exit 2"; fail=1; }
"$CLI" show --help | grep -q "usage: savedmodel show" || { echo "FAIL: show --help"; fail=1; }
# The same tag-set lookup rules as TF: blanks stripped with --signature_def, empty set refused.
"$CLI" show --dir "$MODELS/saved_model_counter/00000123" --tag_set " serve " --signature_def get_counter >/dev/null ||
  { echo "FAIL: --tag_set ' serve ' with --signature_def"; fail=1; }
"$CLI" show --dir "$MODELS/saved_model_counter/00000123" --tag_set "," --signature_def x 2>"$TMP/err" >/dev/null
grep -q "tag_set must contain at least one non-empty item." "$TMP/err" || { echo "FAIL: empty tag_set"; fail=1; }
# --json parses and names every signature.
if command -v python3 >/dev/null; then
  "$CLI" show --dir "$MODELS/saved_model_half_plus_two_cpu/00000123" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["meta_graphs"][0]["signatures"]
assert s["serving_default"]["inputs"]["x"] == {"name": "x:0", "dtype": "DT_FLOAT", "shape": [-1, 1]}, s
assert s["regress_x_to_y"]["inputs"]["inputs"]["shape"] is None
assert s["regress_x_to_y"]["method_name"] == "tensorflow/serving/regress"
' || { echo "FAIL: --json"; fail=1; }
fi

echo "$n cases"
[ $fail -eq 0 ] && echo "ok" || exit 1

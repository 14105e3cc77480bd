#!/usr/bin/env bash
# vars.sh - `savedmodel vars` against TensorFlow's inspect_checkpoint: byte-identical listings
# and numpy-printed values for the TF Serving models (goldens from tools/make_tfserving_goldens.py),
# the zoo's vars.json (keys, dtypes, shapes, values) when the zoo is there, and the error paths.
# usage: vars.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2 SHARED=$3
MODELS=$SHARED/fixtures/tf-serving
GOLD=$SRC/tests/fixtures/tf-serving-goldens
ZOO=${SM_ZOO_DIR:-$SRC/tests/fixtures/zoo}  # the interop suite points this at a freshly generated zoo
have_models=0; [ -d "$MODELS" ] && have_models=1
have_zoo=0; ls "$ZOO"/*/golden/vars.json >/dev/null 2>&1 && have_zoo=1
if [ $have_models -eq 0 ] && [ $have_zoo -eq 0 ]; then echo "skipped: $MODELS and $ZOO absent"; exit 77; fi
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail=0 n=0

if [ $have_models -eq 1 ]; then
  for g in "$GOLD"/*/; do
    [ -f "$g/vars.txt" ] || continue
    name=$(basename "$g"); dir=$MODELS/${name%_*}/${name##*_}
    n=$((n + 1))
    "$CLI" vars --dir "$dir" >"$TMP/out" 2>"$TMP/err" && cmp -s "$TMP/out" "$g/vars.txt" ||
      { echo "FAIL $name vars: $(cat "$TMP/err")"; diff "$g/vars.txt" "$TMP/out" | head; fail=1; }
    "$CLI" vars --file_name "$dir/variables/variables" --all_tensors >"$TMP/out" 2>"$TMP/err" &&
      cmp -s "$TMP/out" "$g/vars_all.txt" ||
      { echo "FAIL $name vars --all_tensors: $(cat "$TMP/err")"; diff "$g/vars_all.txt" "$TMP/out" | head; fail=1; }
  done
  # One value, as inspect_checkpoint --tensor_name prints it (README: conv2d/kernel = -0.522396).
  M=$MODELS/saved_model_half_plus_two_mkl/00000123
  printf 'tensor: conv2d/kernel (float32) [1, 1, 1, 1]\n[[[[-0.52239597]]]]\n# Total number of params: 9\n' >"$TMP/want"
  "$CLI" vars --dir "$M" --name conv2d/kernel >"$TMP/out" && cmp -s "$TMP/out" "$TMP/want" ||
    { echo "FAIL: --name conv2d/kernel"; cat "$TMP/out"; fail=1; }
  printf 'tensor: b (float32) []\n3.0\n# Total number of params: 3\n' >"$TMP/want"
  "$CLI" vars --dir "$MODELS/saved_model_half_plus_three/00000123" --name b >"$TMP/out" &&
    cmp -s "$TMP/out" "$TMP/want" || { echo "FAIL: half_plus_three b"; cat "$TMP/out"; fail=1; }
  # Errors: a missing tensor, a directory without variables, a legacy (non-bundle) export.
  "$CLI" vars --dir "$M" --name nope >/dev/null 2>"$TMP/err"
  [ $? -eq 1 ] && grep -q "^savedmodel: Tensor nope not found in checkpoint" "$TMP/err" ||
    { echo "FAIL: missing tensor"; fail=1; }
  "$CLI" vars --dir "$MODELS/matrix_half_plus_two/1" >/dev/null 2>"$TMP/err"
  [ $? -eq 1 ] && grep -q "^savedmodel: " "$TMP/err" || { echo "FAIL: no variables dir"; fail=1; }
  "$CLI" vars >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: vars without --dir should exit 2"; fail=1; }
  if command -v python3 >/dev/null; then
    "$CLI" vars --dir "$M" --name conv2d/kernel --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
v = d["variables"][0]
assert v["key"] == "conv2d/kernel" and v["dtype"] == "DT_FLOAT" and v["shape"] == [1, 1, 1, 1], v
assert abs(v["value"][0][0][0][0] + 0.522396) < 1e-6 and d["total_params"] == 9, d
' || { echo "FAIL: vars --json"; fail=1; }
  fi
  n=$((n + 6))
fi

if [ $have_zoo -eq 1 ] && command -v python3 >/dev/null; then
  for j in "$ZOO"/*/golden/vars.json; do
    m=$(dirname "$(dirname "$j")")/model
    n=$((n + 1))
    if [ ! -f "$m/variables/variables.index" ]; then  # no bundle: TF has nothing, we fail cleanly
      "$CLI" vars --dir "$m" >/dev/null 2>&1; rc=$?
      [ $rc -eq 1 ] && [ "$(tr -d ' \n' <"$j")" = "[]" ] || { echo "FAIL $m: no variables, rc $rc"; fail=1; }
      continue
    fi
    "$CLI" vars --dir "$m" --all_tensors --json >"$TMP/out.json" 2>"$TMP/err" ||
      { echo "FAIL $(basename "$(dirname "$m")"): $(cat "$TMP/err")"; fail=1; continue; }
    python3 "$SRC/tests/cli/vars_json_check.py" "$j" "$TMP/out.json" ||
      { echo "FAIL zoo $(basename "$(dirname "$m")") vars.json"; fail=1; }
  done
fi

# numpy's printing of every zoo dtype, as inspect_checkpoint --all_tensors shows it. These goldens
# describe the committed zoo; a freshly generated one (SM_ZOO_DIR) may hold other random weights.
for g in "$GOLD"/zoo-inspect/*.txt; do
  [ -z "${SM_ZOO_DIR:-}" ] || break
  [ -f "$g" ] || continue
  m=$ZOO/$(basename "$g" .txt)/model
  [ -d "$m" ] || continue
  n=$((n + 1))
  "$CLI" vars --dir "$m" --all_tensors >"$TMP/out" 2>"$TMP/err" && cmp -s "$TMP/out" "$g" ||
    { echo "FAIL zoo $(basename "$g" .txt) --all_tensors: $(cat "$TMP/err")"; diff "$g" "$TMP/out" | head; fail=1; }
done

echo "$n cases"
[ $fail -eq 0 ] && echo "ok" || exit 1

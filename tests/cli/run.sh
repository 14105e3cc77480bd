#!/bin/bash
# run.sh - `savedmodel run` against what saved_model_cli run printed (tests/fixtures/cli-run, made
# by tools/make_cli_run_goldens.py): stdout and exit status of every run case in cases.tsv, and
# the .npy files of --outdir cases byte for byte. Float text may differ within the runtime's
# tolerance (run_compare.py); such cases are counted apart. Cases on ../shared skip without it.
CLI=$1 SRC=$2 SHARED=$3
FX=$SRC/tests/fixtures/cli-run
ZOO=$SRC/tests/fixtures/zoo
[ -f "$FX/cases.tsv" ] || { echo "skipped: $FX/cases.tsv absent"; exit 77; }
have_shared=0; [ -d "$SHARED/fixtures/tf-serving" ] && have_shared=1

fail=0 exact=0 near=0 skipped=0
while IFS=$'\t' read -r -a f; do
  name=${f[0]} want_rc=${f[1]}
  case $name in scan*|ts_scan*) continue;; esac
  tmp=$(mktemp -d)
  args=()
  for a in "${f[@]:3}"; do
    a=${a//@ZOO@/$ZOO}; a=${a//@FX@/$FX}; a=${a//@SHARED@/$SHARED}; a=${a//@TMP@/$tmp}
    args+=("$a")
  done
  if [[ "${f[*]}" == *@SHARED@* ]] && [ $have_shared -eq 0 ]; then skipped=$((skipped + 1)); rm -rf "$tmp"; continue; fi
  (cd "$tmp" && "$CLI" "${args[@]}" >"$tmp/stdout" 2>"$tmp/stderr")
  rc=$?; [ $rc -ne 0 ] && rc=1
  sed "s|$tmp|@TMP@|g" "$tmp/stdout" >"$tmp/stdout.norm"
  ok=1
  if [ "$rc" != "$want_rc" ]; then
    echo "FAIL $name: exit $rc, TensorFlow's was $want_rc"; sed 's/^/    /' "$tmp/stderr" | head -5; ok=0
  elif [ "$want_rc" = 0 ] || [ -s "$FX/$name.out" ]; then
    python3 "$SRC/tests/cli/run_compare.py" "$FX/$name.out" "$tmp/stdout.norm"
    case $? in
      0) exact=$((exact + 1));;
      3) near=$((near + 1));;
      *) echo "FAIL $name: stdout differs from saved_model_cli's"; diff "$FX/$name.out" "$tmp/stdout.norm" | head -10; ok=0;;
    esac
  else
    exact=$((exact + 1))
  fi
  for g in "$FX/$name".*.npy; do
    [ -e "$g" ] || continue
    f=${g##*/$name.}
    if ! cmp -s "$g" "$tmp/out/$f"; then echo "FAIL $name: out/$f differs from TF's np.save"; ok=0; fi
  done
  [ $ok -eq 1 ] || fail=$((fail + 1))
  rm -rf "$tmp"
done <"$FX/cases.tsv"

# ours only: --outdir refuses existing files without --overwrite, as TF does, and accepts them with it
tmp=$(mktemp -d)
sq=(run --dir "$ZOO/tf1_square/model" --tag_set serve --signature_def serving_default --input_exprs 'x=[2.0]' --outdir "$tmp/o")
"$CLI" "${sq[@]}" >/dev/null 2>&1 || { echo "FAIL outdir: first run"; fail=$((fail + 1)); }
if "$CLI" "${sq[@]}" >/dev/null 2>"$tmp/err"; then echo "FAIL outdir: existing file overwritten"; fail=$((fail + 1)); fi
grep -q 'already exists. Add "--overwrite"' "$tmp/err" || { echo "FAIL outdir: message"; cat "$tmp/err"; fail=$((fail + 1)); }
"$CLI" "${sq[@]}" --overwrite >/dev/null 2>&1 || { echo "FAIL outdir: --overwrite refused"; fail=$((fail + 1)); }
# errors name what is wrong
"$CLI" run --dir "$ZOO/tf1_square/model" --tag_set serve --signature_def serving_default --input_exprs 'x=[1, 2' 2>"$tmp/err"
grep -q "never closed at offset" "$tmp/err" || { echo "FAIL literal error position"; cat "$tmp/err"; fail=$((fail + 1)); }
"$CLI" run --dir "$ZOO/tf1_square/model" --tag_set serve --signature_def nope --input_exprs 'x=[1]' 2>"$tmp/err"
grep -q 'SignatureDef "nope" is not' "$tmp/err" || { echo "FAIL unknown signature"; cat "$tmp/err"; fail=$((fail + 1)); }
"$CLI" run --dir "$ZOO/tf1_square/model" --tag_set serve --signature_def serving_default --inputs "x=$SRC/tests/fixtures/npy/object.npy" 2>"$tmp/err"
grep -q 'pickled' "$tmp/err" || { echo "FAIL object npy"; cat "$tmp/err"; fail=$((fail + 1)); }
# one signature needs an op without a kernel here: the other runs; that one fails naming op and node
UNR=$SRC/tests/fixtures/unrunnable_signature
"$CLI" run --dir "$UNR" --tag_set serve --signature_def square --input_exprs 'x=[1.0, 2.0, 3.0]' >"$tmp/out" 2>"$tmp/err" ||
  { echo "FAIL unrunnable_signature: square"; cat "$tmp/err"; fail=$((fail + 1)); }
printf 'Result for output key y:\n[1. 4. 9.]\n' | cmp -s - "$tmp/out" || { echo "FAIL unrunnable_signature: square output"; cat "$tmp/out"; fail=$((fail + 1)); }
if "$CLI" run --dir "$UNR" --tag_set serve --signature_def spectrogram --input_exprs 'audio=[[1.0], [2.0]]' >/dev/null 2>"$tmp/err"; then
  echo "FAIL unrunnable_signature: spectrogram ran"; fail=$((fail + 1))
fi
grep -qF "signature 'spectrogram': this runtime has no kernel for 1 node(s) this run needs: ZeroOut (node 'spec')" "$tmp/err" ||
  { echo "FAIL unrunnable_signature: spectrogram message"; cat "$tmp/err"; fail=$((fail + 1)); }
# budgets: --max_run_bytes refuses a step past it, naming node and budget; --timeout and both
# flags' values checked (stopping inside a kernel is test_budget's, deterministically)
OK=$SRC/tests/fixtures/malformed/ok
ok=(run --dir "$OK" --tag_set serve --signature_def serving_default --input_exprs 'x=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]')
"$CLI" "${ok[@]}" --max_run_bytes 24 --timeout 600 >"$tmp/out" 2>"$tmp/err" || { echo "FAIL budget: 24 bytes refused"; cat "$tmp/err"; fail=$((fail + 1)); }
if "$CLI" "${ok[@]}" --max_run_bytes 23 >/dev/null 2>"$tmp/err"; then echo "FAIL budget: 23 bytes accepted"; fail=$((fail + 1)); fi
grep -qF "node 'y' (AddV2)" "$tmp/err" && grep -qF "max_run_bytes 23;" "$tmp/err" ||
  { echo "FAIL budget: message"; cat "$tmp/err"; fail=$((fail + 1)); }
for bad in "--max_run_bytes=1Q" "--max_run_bytes=-5" "--timeout=0" "--timeout=abc" "--max_load_bytes=x"; do
  "$CLI" "${ok[@]}" "$bad" >/dev/null 2>"$tmp/err"
  [ $? -eq 2 ] || { echo "FAIL flag $bad: not a usage error"; fail=$((fail + 1)); }
done
"$CLI" "${ok[@]}" --max_load_bytes 1K >/dev/null 2>"$tmp/err" && { echo "FAIL --max_load_bytes 1K accepted"; fail=$((fail + 1)); }
grep -qF "max_load_bytes 1024" "$tmp/err" || { echo "FAIL --max_load_bytes message"; cat "$tmp/err"; fail=$((fail + 1)); }
# an .npz whose 2-element member inflates to 256 MiB: read as np.load reads it, only the bytes its
# .npy header describes (the rest is never inflated)
python3 "$SRC/tests/cli/make_big_npz.py" "$tmp/big.npz" 64
"$CLI" run --dir "$OK" --tag_set serve --signature_def serving_default --inputs "x=$tmp/big.npz[x]" >"$tmp/out" 2>"$tmp/err" ||
  { echo "FAIL npz bomb refused"; cat "$tmp/err"; fail=$((fail + 1)); }
printf 'Result for output key y:\n[[2. 4.]]\n' | cmp -s - "$tmp/out" || { echo "FAIL npz bomb output"; cat "$tmp/out"; fail=$((fail + 1)); }
rm -rf "$tmp"

echo "run: $exact identical to saved_model_cli, $near within float tolerance, $fail failed, $skipped skipped (no ../shared)"
[ $fail -eq 0 ]

#!/bin/bash
# validate.sh - `savedmodel validate`: sound on every zoo model and every tf-serving SavedModel,
# faults on every malformed case (with the message tests/unit/test_malformed.c expects from
# sm_model_load) and on the tf-serving directories that are not SavedModels; no crash or hang for
# a flipped byte anywhere in a small saved_model.pb (every 6th position: each run is a process;
# fuzz_saved_model and fuzz_graph cover the rest).
# Every flip and truncation of a variables bundle is checked in-process by test_malformed.
CLI=$1 SRC=$2 SHARED=$3
ZOO=$SRC/tests/fixtures/zoo
MAL=$SRC/tests/fixtures/malformed
fail=0 n=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# expect RC DIR [SUBSTRING]
expect() {
  local want=$1 dir=$2 sub=${3:-}
  n=$((n + 1))
  timeout 60 "$CLI" validate --dir "$dir" >"$tmp/out" 2>&1
  local rc=$?
  if [ $rc -ne "$want" ]; then
    bad "validate $dir: exit $rc, expected $want"; sed 's/^/    /' "$tmp/out" | head -8; return
  fi
  if [ -n "$sub" ] && ! grep -qF -- "$sub" "$tmp/out"; then
    bad "validate $dir: no '$sub' in the report"; sed 's/^/    /' "$tmp/out" | head -8
  fi
}

# the zoo
for d in "$ZOO"/*/model; do expect 0 "$d" "sound"; done

# tf-serving (shared, optional): every saved_model.pb is sound; the rest are not SavedModels
if [ -d "$SHARED/fixtures/tf-serving" ]; then
  while IFS= read -r pb; do expect 0 "$(dirname "$pb")" "sound"; done \
    < <(find "$SHARED/fixtures/tf-serving" -name saved_model.pb | sort)
  for d in bad_half_plus_two/00000123 session_bundle_half_plus_two/00000123 tf_text_regression/01; do
    [ -d "$SHARED/fixtures/tf-serving/$d" ] && expect 1 "$SHARED/fixtures/tf-serving/$d" "fault:"
  done
else
  echo "note: $SHARED/fixtures/tf-serving absent, tf-serving part skipped"
fi

# a signature without kernels is a warning (the model loads), not a fault, and the closing note on
# ops nothing runs does not name its op again; with no runnable signature left it is a fault
UNR=$SRC/tests/fixtures/unrunnable_signature
expect 0 "$UNR" "warning: MetaGraph ['serve']: signature 'spectrogram': this runtime has no kernel for 1 node(s) this run needs: ZeroOut (node 'spec') (the model loads"
grep -q "sound (1 MetaGraph, 2 signatures, .*1 warning)" "$tmp/out" || bad "unrunnable_signature: summary"
grep -q "^note:" "$tmp/out" && bad "unrunnable_signature: a note repeats the warning's op"
mkdir "$tmp/unr"
awk '/^  signature_def \{$/ { hold = $0; next }
     hold != "" { if ($0 ~ /key: "square"/) skip = 1; else print hold; hold = "" }
     skip && /^  \}$/ { skip = 0; next }
     !skip { print }' "$UNR/saved_model.pbtxt" >"$tmp/unr/saved_model.pbtxt"
grep -q 'key: "square"' "$tmp/unr/saved_model.pbtxt" && bad "unrunnable_signature: square signature not cut"
expect 1 "$tmp/unr" "fault: MetaGraph ['serve']: signature 'spectrogram': this runtime has no kernel"
grep -q "^warning:.*ZeroOut\|^note:" "$tmp/out" && bad "unrunnable_signature alone: a fault and a warning or note about one op"

# the malformed corpus, with test_malformed.c's table of expected messages
expect 0 "$MAL/ok" "sound"
ncase=0
while IFS=$'\t' read -r name sub; do
  ncase=$((ncase + 1))
  expect 1 "$MAL/$name" "$sub"
done < <(sed -n 's/^ *{"\([a-z_]*\)", "\(.*\)"},$/\1\t\2/p' "$SRC/tests/unit/test_malformed.c")
[ $ncase -ge 20 ] || bad "only $ncase malformed cases found in test_malformed.c"

# every 6th byte of a small saved_model.pb flipped: exit 0 or 1, never a crash or a hang
pbdir=$ZOO/tf1_square/model
cp -r "$pbdir" "$tmp/p"
size=$(stat -c %s "$pbdir/saved_model.pb")
for ((i = 0; i < size; i += 6)); do
  cp "$pbdir/saved_model.pb" "$tmp/p/saved_model.pb"
  byte=$(od -An -tu1 -j $i -N1 "$pbdir/saved_model.pb" | tr -d ' ')
  printf "$(printf '\\x%02x' $((byte ^ 0xff)))" | dd of="$tmp/p/saved_model.pb" bs=1 seek=$i conv=notrunc status=none
  n=$((n + 1))
  timeout 20 "$CLI" validate --dir "$tmp/p" >"$tmp/out" 2>&1
  rc=$?
  [ $rc -le 1 ] || { bad "saved_model.pb byte $i flipped: exit $rc"; sed 's/^/    /' "$tmp/out" | tail -4; }
done

# duplicated tag sets: one fault per set (order and repeats of tags do not matter), not per pair
mkdir -p "$tmp/dup"
{
  echo 'saved_model_schema_version: 1'
  for t in 'tags: "a"' 'tags: "a"' 'tags: "a" tags: "a"' 'tags: "b" tags: "c"' 'tags: "c" tags: "b"' 'tags: "d"'; do
    echo "meta_graphs { meta_info_def { $t } graph_def { node { name: \"x\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } } } } }"
  done
} >"$tmp/dup/saved_model.pbtxt"
expect 1 "$tmp/dup" "fault: MetaGraphs 0, 1 and 2 have the same tag set (MetaGraph ['a'])"
grep -qF "fault: MetaGraphs 3 and 4 have the same tag set" "$tmp/out" || bad "duplicated tag sets: 3 and 4 not reported"
[ "$(grep -c 'have the same tag set' "$tmp/out")" = 2 ] || { bad "duplicated tag sets: not one fault per set"; cat "$tmp/out"; }

echo "validate: $n runs, $fail failures"
[ $fail -eq 0 ]

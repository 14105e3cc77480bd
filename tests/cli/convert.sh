#!/usr/bin/env bash
# convert.sh - `savedmodel convert` round trips: for every TF Serving SavedModel and every zoo
# model, convert to .pb and to .pbtxt; `show --all` and `vars --all_tensors` of each copy must
# equal the original's, assets/ and assets.extra/ must be copied, and an existing DST refused.
# usage: convert.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2 SHARED=$3
dirs=()
for d in "$SHARED"/fixtures/tf-serving/*/*/ "$SRC"/tests/fixtures/zoo/*/model/; do
  [ -f "$d/saved_model.pb" ] || [ -f "$d/saved_model.pbtxt" ] && dirs+=("${d%/}")
done
if [ ${#dirs[@]} -eq 0 ]; then echo "skipped: no SavedModels (../shared and the zoo absent)"; exit 77; fi
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail=0 n=0 i=0

for d in "${dirs[@]}"; do
  i=$((i + 1))
  "$CLI" show --dir "$d" --all >"$TMP/show.orig" 2>&1
  "$CLI" vars --dir "$d" --all_tensors >"$TMP/vars.orig" 2>/dev/null
  for fmt in pb pbtxt; do
    out=$TMP/copy$i.$fmt; n=$((n + 1))
    flag=(); [ $fmt = pbtxt ] && flag=(--as_text)
    if ! "$CLI" convert --dir "$d" --out "$out" "${flag[@]}" 2>"$TMP/err"; then
      echo "FAIL convert $d ($fmt): $(cat "$TMP/err")"; fail=1; continue
    fi
    [ -f "$out/saved_model.$fmt" ] || { echo "FAIL $d: no saved_model.$fmt written"; fail=1; }
    "$CLI" show --dir "$out" --all >"$TMP/show.copy" 2>&1
    cmp -s "$TMP/show.orig" "$TMP/show.copy" || { echo "FAIL $d ($fmt): show --all differs"; diff "$TMP/show.orig" "$TMP/show.copy" | head -5; fail=1; }
    "$CLI" vars --dir "$out" --all_tensors >"$TMP/vars.copy" 2>/dev/null
    cmp -s "$TMP/vars.orig" "$TMP/vars.copy" || { echo "FAIL $d ($fmt): vars differ"; fail=1; }
    for sub in assets assets.extra fingerprint.pb; do
      if [ -e "$d/$sub" ]; then
        diff -r "$d/$sub" "$out/$sub" >/dev/null || { echo "FAIL $d ($fmt): $sub not copied"; fail=1; }
      fi
    done
    ls -d "$out".partial-* >/dev/null 2>&1 && { echo "FAIL: temporary directory left behind"; fail=1; }
  done
done

# Refuses an existing destination, and a source that is not a SavedModel leaves nothing behind.
mkdir "$TMP/exists"
"$CLI" convert --dir "${dirs[0]}" --out "$TMP/exists" 2>"$TMP/err"; rc=$?
[ $rc -eq 1 ] && grep -q "already exists" "$TMP/err" || { echo "FAIL: existing DST not refused (rc $rc)"; fail=1; }
"$CLI" convert --dir "$TMP/exists" --out "$TMP/never" 2>/dev/null; rc=$?
[ $rc -eq 1 ] && [ ! -e "$TMP/never" ] && ! ls -d "$TMP"/never.partial-* >/dev/null 2>&1 ||
  { echo "FAIL: failed convert left output (rc $rc)"; fail=1; }
"$CLI" convert --dir "${dirs[0]}" 2>/dev/null; [ $? -eq 2 ] || { echo "FAIL: missing --out should exit 2"; fail=1; }

# Missing parents of --out are created (as Keras and TF do); a failure names the --out given, never
# the internal staging directory (DST.partial-PID).
"$CLI" convert --dir "${dirs[0]}" --out "$TMP/new/parents/1" 2>"$TMP/err" && [ -d "$TMP/new/parents/1" ] ||
  { echo "FAIL: convert with missing parents of --out: $(head -2 "$TMP/err")"; fail=1; }
: >"$TMP/afile"
"$CLI" convert --dir "${dirs[0]}" --out "$TMP/afile/x/1" 2>"$TMP/err"; rc=$?
[ $rc -eq 1 ] && grep -qF "$TMP/afile/x/1: $TMP/afile exists and is not a directory" "$TMP/err" ||
  { echo "FAIL: a parent that is a file (rc $rc): $(head -2 "$TMP/err")"; fail=1; }
cp -r "${dirs[0]}" "$TMP/badasset"; mkdir -p "$TMP/badasset/assets"; ln -s "$TMP/nowhere" "$TMP/badasset/assets/dangling"
"$CLI" convert --dir "$TMP/badasset" --out "$TMP/badout" 2>"$TMP/err"; rc=$?
[ $rc -eq 1 ] && [ -s "$TMP/err" ] && ! grep -q 'partial-' "$TMP/err" && [ ! -e "$TMP/badout" ] ||
  { echo "FAIL: a failed convert's message (rc $rc): $(head -2 "$TMP/err")"; fail=1; }

# /proc refuses new directories, even to root: the staging directory cannot be made.
if [ -d /proc/self ]; then
  "$CLI" convert --dir "${dirs[0]}" --out /proc/sm_convert_out 2>"$TMP/err"; rc=$?
  [ $rc -eq 1 ] && grep -qF -- "--out /proc/sm_convert_out: cannot create directory" "$TMP/err" && ! grep -q 'partial-' "$TMP/err" ||
    { echo "FAIL: an --out that cannot be created (rc $rc): $(head -2 "$TMP/err")"; fail=1; }
fi

echo "$n conversions"
[ $fail -eq 0 ] && echo "ok" || exit 1

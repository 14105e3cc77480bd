#!/usr/bin/env bash
# files.sh - what the library and the CLI read: only regular files (a FIFO as a variables shard,
# an input or a vocabulary, and /dev/zero, are refused at once: every command runs under a
# timeout so that a block is a failure, not a hang), size limits (a sparse vocabulary past
# SM_MAX_VOCAB_FILE_BYTES), and confinement: a vocabulary path that leaves the export through a
# symlink or names /proc is refused by run (unless --allow_external_files) and reported by scan
# and validate, and convert copies no asset through a symlink out; names validate prints are escaped (a newline in an asset name stays on one line).
# usage: files.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2
MAL=$SRC/tests/fixtures/malformed
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail=0 n=0
bad() { echo "FAIL: $*"; sed 's/^/    /' "$TMP/out" | head -6; fail=1; }

# want RC SUBSTRING CMD...: exit status RC (124 = blocked: always a failure) and SUBSTRING in
# stdout+stderr
want() {
  local rc=$1 sub=$2
  shift 2
  n=$((n + 1))
  timeout 20 "$@" >"$TMP/out" 2>&1
  local got=$?
  [ $got -ne 124 ] || { bad "blocked (timeout): $*"; return; }
  [ $got -eq "$rc" ] || { bad "exit $got, expected $rc: $*"; return; }
  [ -z "$sub" ] || grep -qF -- "$sub" "$TMP/out" || bad "no '$sub' from: $*"
}
RUN=(run --tag_set serve --signature_def serving_default --input_exprs 'x=[[1,2]]')

# ---- regular files only -------------------------------------------------------------------------
cp -r "$MAL/ok" "$TMP/fifo"
rm "$TMP/fifo/variables/variables.data-00000-of-00001"
mkfifo "$TMP/fifo/variables/variables.data-00000-of-00001"
want 1 "not a regular file (a FIFO)" "$CLI" validate --dir "$TMP/fifo"
want 1 "not a regular file (a FIFO)" "$CLI" "${RUN[@]}" --dir "$TMP/fifo"
want 1 "not a regular file (a FIFO)" "$CLI" vars --dir "$TMP/fifo"
want 1 "not a regular file (a FIFO)" "$CLI" convert --dir "$TMP/fifo" --out "$TMP/fifo_out"
cp -r "$MAL/ok" "$TMP/ififo"
rm "$TMP/ififo/variables/variables.index"
mkfifo "$TMP/ififo/variables/variables.index"
want 1 "not a regular file (a FIFO)" "$CLI" "${RUN[@]}" --dir "$TMP/ififo"
mkfifo "$TMP/in.npy"
want 1 "not a regular file (a FIFO)" "$CLI" run --dir "$MAL/ok" --tag_set serve --signature_def serving_default \
  --inputs "x=$TMP/in.npy"
want 1 "not a regular file (a character device)" "$CLI" run --dir "$MAL/ok" --tag_set serve \
  --signature_def serving_default --inputs "x=/dev/zero"
mkdir "$TMP/data"
mkfifo "$TMP/data/train-images-idx3-ubyte" "$TMP/data/train-labels-idx1-ubyte"
want 1 "not a regular file (a FIFO)" "$CLI" train --data "$TMP/data" --epochs 1 --out "$TMP/never"
[ ! -e "$TMP/never" ] || bad "train wrote an export from FIFO data"

# ---- confinement: a vocabulary table whose Const path is a symlink out of the export -------------
mk_vocab_model() { # DIR PATH: the table_file_outside model reading PATH
  cp -r "$MAL/table_file_outside" "$1"
  sed -i "s|/etc/passwd|$2|" "$1/saved_model.pbtxt"
  mkdir -p "$1/assets"
}
printf 'a\nb\n' >"$TMP/outside.txt"
mk_vocab_model "$TMP/sym" "$TMP/sym/assets/vocab.txt"
ln -s "$TMP/outside.txt" "$TMP/sym/assets/vocab.txt"
want 1 "resolves to $TMP/outside.txt, outside the export directory" "$CLI" "${RUN[@]}" --dir "$TMP/sym"
want 0 "[[2. 4.]]" "$CLI" "${RUN[@]}" --dir "$TMP/sym" --allow_external_files
want 1 "OUTSIDE the export directory" "$CLI" scan --dir "$TMP/sym"
want 1 '"source": "const", "outside": true' "$CLI" scan --dir "$TMP/sym" --json
want 1 "fault: MetaGraph ['serve']: node 'init_table' (InitializeTableFromTextFileV2): $TMP/sym/assets/vocab.txt resolves to" \
  "$CLI" validate --dir "$TMP/sym"
want 0 "warning: " "$CLI" validate --dir "$TMP/sym" --allow_external_files
want 1 '"kind": "fault"' "$CLI" validate --dir "$TMP/sym" --json
want 1 "$TMP/sym/assets/vocab.txt: a symlink out of the export directory" "$CLI" convert --dir "$TMP/sym" --out "$TMP/conv"
[ ! -e "$TMP/conv" ] || bad "convert left $TMP/conv after refusing"
# '..' out of the export, the path spelled through it
mk_vocab_model "$TMP/dots" "$TMP/dots/assets/../../outside.txt"
want 1 "outside the export directory" "$CLI" "${RUN[@]}" --dir "$TMP/dots"
# the same file inside: read, and scan and validate say so
rm "$TMP/sym/assets/vocab.txt"
cp "$TMP/outside.txt" "$TMP/sym/assets/vocab.txt"
want 0 "[[2. 4.]]" "$CLI" "${RUN[@]}" --dir "$TMP/sym"
want 0 ": inside the export directory" "$CLI" scan --dir "$TMP/sym"
want 0 "reads $TMP/sym/assets/vocab.txt (const)" "$CLI" validate --dir "$TMP/sym"
want 0 "" "$CLI" convert --dir "$TMP/sym" --out "$TMP/conv"
# /proc-style path: refused by default; a /proc file is not read past its (zero) size either way
want 1 "/proc/self/environ resolves to /proc/" "$CLI" "${RUN[@]}" --dir "$MAL/table_file_proc"
# a FIFO or a too large (sparse) file as the vocabulary inside the export
rm "$TMP/sym/assets/vocab.txt"
mkfifo "$TMP/sym/assets/vocab.txt"
want 1 "not a regular file (a FIFO)" "$CLI" "${RUN[@]}" --dir "$TMP/sym"
rm "$TMP/sym/assets/vocab.txt"
truncate -s 8G "$TMP/sym/assets/vocab.txt"
want 1 "more than the 268435456-byte limit" "$CLI" "${RUN[@]}" --dir "$TMP/sym"

# ---- escaping: an asset name holding a newline stays one finding on one line ---------------------
cp -r "$MAL/asset_absolute" "$TMP/esc"
sed -i 's|filename: "/etc/passwd"|filename: "/x\\nfault: forged"|' "$TMP/esc/saved_model.pbtxt"
want 1 'asset '"'"'/x\nfault: forged'"'"': file name is an absolute path' "$CLI" validate --dir "$TMP/esc"
n=$((n + 1))
[ "$(grep -c '^fault:' "$TMP/out")" -eq 1 ] || bad "a newline in an asset name split a finding"

echo "files: $n checks"
exit $fail

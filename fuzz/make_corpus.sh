#!/usr/bin/env bash
# make_corpus.sh - gathers seed inputs for the fuzz targets into BUILD_DIR/corpus/<target>/.
#
# Usage: fuzz/make_corpus.sh [BUILD_DIR] [CLI]   (defaults: build-fuzz, build/savedmodel)
# Seeds come from the committed zoo (tests/fixtures/zoo), ../shared/fixtures/tf-serving when it
# is there, the .npy/.npz fixtures (tests/fixtures/npy), the malformed-model corpus
# (tests/fixtures/malformed, as text for pbtxt and, converted by the CLI, as binary for
# saved_model and graph) and the small hand-written seeds in fuzz/seeds/<target>/. Nothing here is committed:
# the shared fixtures must not be copied into the repository. With a built CLI, every binary
# SavedModel is also printed as text for the pbtxt target.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-fuzz}
CLI=${2:-build/savedmodel}
C="$B/corpus"
for f in fuzz/fuzz_*.c; do mkdir -p "$C/$(basename "$f" .c)"; done # one corpus per target, whatever targets there are

roots=(tests/fixtures/zoo)
[ -d ../shared/fixtures/tf-serving ] && roots+=(../shared/fixtures/tf-serving)

# A seed's name is a hash of its bytes, as libFuzzer names its own, so reruns add no duplicates.
put() { # target file
  local h
  h=$(sha1sum "$2" | cut -c1-40)
  cp "$2" "$1/$h"
}

for r in "${roots[@]}"; do
  while IFS= read -r -d '' f; do put "$C/fuzz_saved_model" "$f"; put "$C/fuzz_graph" "$f"; done \
    < <(find "$r" -name saved_model.pb -print0)
  # fuzz_pb_decode's first byte picks the root message: 0 is SavedModel.
  while IFS= read -r -d '' f; do
    tmp=$(mktemp)
    printf '\x00' >"$tmp"
    cat "$f" >>"$tmp"
    put "$C/fuzz_pb_decode" "$tmp"
    rm -f "$tmp"
  done < <(find "$r" -name saved_model.pb -size -200k -print0)
  while IFS= read -r -d '' f; do put "$C/fuzz_pbtxt" "$f"; done \
    < <(find "$r" -name saved_model.pbtxt -print0)
  while IFS= read -r -d '' f; do put "$C/fuzz_table" "$f"; done \
    < <(find "$r" -name '*.index' -print0)
  # fuzz_bundle takes LE32(len(index)) + index + data: only bundles with one data shard fit.
  while IFS= read -r -d '' idx; do
    data="${idx%.index}.data-00000-of-00001"
    [ -f "$data" ] || continue
    tmp=$(mktemp)
    n=$(stat -c %s "$idx")
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((n & 255)) $((n >> 8 & 255)) $((n >> 16 & 255)) $((n >> 24 & 255)))" >"$tmp"
    cat "$idx" "$data" >>"$tmp"
    put "$C/fuzz_bundle" "$tmp"
    rm -f "$tmp"
  done < <(find "$r" -name '*.index' -print0)
done

for f in tests/fixtures/npy/*.npy tests/fixtures/npy/*.npz; do [ -f "$f" ] && put "$C/fuzz_npy" "$f"; done
while IFS= read -r -d '' f; do put "$C/fuzz_pbtxt" "$f"; done \
  < <(find tests/fixtures/malformed -name saved_model.pbtxt -print0 2>/dev/null)

if [ -x "$CLI" ]; then
  # the malformed corpus as binary: each case's hostile graph is a seed for the graph target
  tmpm=$(mktemp -d)
  for d in tests/fixtures/malformed/*/; do
    [ -f "$d/saved_model.pbtxt" ] || continue
    rm -rf "$tmpm/o"
    if "$CLI" convert --dir "$d" --out "$tmpm/o" >/dev/null 2>&1 && [ -f "$tmpm/o/saved_model.pb" ]; then
      put "$C/fuzz_graph" "$tmpm/o/saved_model.pb"
      put "$C/fuzz_saved_model" "$tmpm/o/saved_model.pb"
    fi
  done
  rm -rf "$tmpm"

  tmpd=$(mktemp -d)
  trap 'rm -rf "$tmpd"' EXIT
  i=0
  while IFS= read -r -d '' f; do
    i=$((i + 1))
    if "$CLI" convert --dir "$(dirname "$f")" --out "$tmpd/$i" --as_text >/dev/null 2>&1; then
      # Big texts slow every execution down; the small ones cover the same syntax.
      [ "$(stat -c %s "$tmpd/$i/saved_model.pbtxt")" -le 65536 ] && put "$C/fuzz_pbtxt" "$tmpd/$i/saved_model.pbtxt"
    fi
  done < <(find "${roots[@]}" -name saved_model.pb -print0)
fi

for d in fuzz/seeds/*/; do
  t=$(basename "$d")
  [ -d "$C/$t" ] || continue
  for f in "$d"*; do [ -f "$f" ] && put "$C/$t" "$f"; done
done
for t in "$C"/*/; do echo "$(basename "$t"): $(find "$t" -type f | wc -l) seeds"; done

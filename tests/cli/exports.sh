#!/usr/bin/env bash
# exports.sh - libsavedmodel.so exports exactly the public API: every function and object declared
# in include/savedmodel/*.h (parsed here from the headers' text), and nothing else: no sm__*
# internals, no layer-private sm_* functions, no protobuf-c generated tensorflow__* code. The
# library is built with -fvisibility=hidden and each public declaration says SM_API
# (include/savedmodel/api.h); a declaration without it, or an internal function that gained it,
# fails here with the names.
# usage: exports.sh CLI SOURCE_DIR SHARED_DIR LIBSAVEDMODEL_SO (the .so defaults to the CLI's dir)
set -euo pipefail
src=$2
so=${4:-$(dirname "$1")/libsavedmodel.so}
command -v nm >/dev/null || { echo "skipped: nm absent"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: python3 absent (parses the headers)"; exit 77; }
[ -f "$so" ] || { echo "FAIL: $so does not exist"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The names the public headers declare: comments, preprocessor lines and the C++ guards removed,
# the text split into top-level statements; type declarations (typedef, struct, enum, union) and
# static inline definitions are skipped; a function's name is the identifier before its first
# "(", an object's the last identifier before "[", "=" or ";".
python3 - "$src"/include/savedmodel/*.h >"$tmp/api" <<'PY'
import re, sys
names = set()
def add(stmt, path):
    s = ' '.join(stmt.split())
    if not s or re.match(r'(typedef|struct|enum|union|static)\b', s):
        return
    s = re.sub(r'__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)', ' ', s)
    m = re.search(r'([A-Za-z_]\w*)\s*\(', s) or re.search(r'([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*(=.*)?$', s)
    if not m:
        sys.exit('exports.sh: cannot parse "%s" in %s' % (s, path))
    names.add(m.group(1))
for path in sys.argv[1:]:
    text = open(path).read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'\\\n', ' ', text)
    text = re.sub(r'^\s*#\s*ifdef\s+__cplusplus\b.*?^\s*#\s*endif[^\n]*', ' ', text, flags=re.S | re.M)
    text = re.sub(r'^\s*#[^\n]*', ' ', text, flags=re.M)
    depth, stmt = 0, ''
    for c in text:
        if c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0 and re.search(r'\)\s*\{', stmt):  # a function defined in the header
                add(stmt[:stmt.index('{')] + ';', path)
                stmt = ''
                continue
        if depth == 0 and c == ';':
            add(stmt, path)
            stmt = ''
        else:
            stmt += c
print('\n'.join(sorted(names)))
PY
# What the .so exports (defined, dynamic), without symbol versions. AddressSanitizer builds add an
# ODR indicator (__odr_asan.NAME) beside each exported object; that one is the sanitizer's.
nm -D --defined-only "$so" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | { grep -v '^__odr_asan[._]' || true; } |
  LC_ALL=C sort -u >"$tmp/so"
LC_ALL=C sort -o "$tmp/api" "$tmp/api"

n_api=$(wc -l <"$tmp/api")
[ "$n_api" -ge 100 ] || { echo "FAIL: only $n_api names parsed from $src/include/savedmodel/*.h"; exit 1; }
extra=$(LC_ALL=C comm -13 "$tmp/api" "$tmp/so")
missing=$(LC_ALL=C comm -23 "$tmp/api" "$tmp/so")
fail=0
if [ -n "$extra" ]; then
  echo "FAIL: $so exports $(echo "$extra" | wc -l) name(s) no public header declares" \
    "(make them static, or keep SM_API off them):"
  echo "$extra" | head -50 | sed 's/^/  + /'
  fail=1
fi
if [ -n "$missing" ]; then
  echo "FAIL: $(echo "$missing" | wc -l) name(s) declared in include/savedmodel/*.h are not exported by $so" \
    "(SM_API missing on the declaration, or no definition in the library):"
  echo "$missing" | head -50 | sed 's/^/  - /'
  fail=1
fi
[ $fail -eq 0 ] && echo "ok: $so exports the $n_api names of the public headers, nothing else"

# libsavedmodel_tf.so (beside it): exactly the TF_* functions src/compat/tf_c_api.h declares, none
# of the libsavedmodel code linked into it (src/compat/exports.map).
tfso=$(dirname "$so")/libsavedmodel_tf.so
if [ -f "$tfso" ]; then
  grep -v '^#' "$src/src/compat/tf_c_api.h" | grep -o 'SM_TF_API [^(]*(' | sed 's/($//; s/.*[ *]//' | LC_ALL=C sort -u >"$tmp/tfapi"
  nm -D --defined-only "$tfso" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | { grep -v '^__odr_asan[._]' || true; } |
    LC_ALL=C sort -u >"$tmp/tfso"
  n_tf=$(wc -l <"$tmp/tfapi")
  [ "$n_tf" -ge 40 ] || { echo "FAIL: only $n_tf names parsed from src/compat/tf_c_api.h"; exit 1; }
  if ! diff <(cat "$tmp/tfapi") <(cat "$tmp/tfso") >"$tmp/tfdiff"; then
    echo "FAIL: $tfso exports other names than the $n_tf TF_* functions of src/compat/tf_c_api.h" \
      "(> exported, not declared; < declared, not exported):"
    head -50 "$tmp/tfdiff"
    fail=1
  else
    echo "ok: $tfso exports the $n_tf TF_* functions of src/compat/tf_c_api.h, nothing else"
  fi
else
  echo "FAIL: $tfso does not exist"
  fail=1
fi
exit $fail

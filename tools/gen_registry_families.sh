#!/usr/bin/env bash
# Writes the kernel registry's family list (the one generator; CMake and fuzz/build.sh call it):
# one entry per `const sm_kernel sm_kernels_<family>[] =` table and per
# `const sm_rewrite_rule sm_rewrites_<family>[] =` table in SRC/src/ops/*.c, filled into the
# template SRC/src/runtime/registry_families.c.in. OUT is replaced only when its text changes,
# so that nothing rebuilds for nothing.
# Usage: tools/gen_registry_families.sh SRC_DIR OUT
set -euo pipefail
src=$1 out=$2
kdecl="" klist="" rdecl="" rlist=""
for f in "$src"/src/ops/*.c; do
  for fam in $(sed -n 's/^const sm_kernel \(sm_kernels_[a-z0-9_]*\)\[\] *=.*/\1/p' "$f"); do
    kdecl+="extern const sm_kernel $fam[];"$'\n'
    klist+="    $fam,"$'\n'
  done
  for fam in $(sed -n 's/^const sm_rewrite_rule \(sm_rewrites_[a-z0-9_]*\)\[\] *=.*/\1/p' "$f"); do
    rdecl+="extern const sm_rewrite_rule $fam[];"$'\n'
    rlist+="    $fam,"$'\n'
  done
done
t=$(<"$src/src/runtime/registry_families.c.in")
t=${t//@SM_FAMILIES_DECL@/"$kdecl"}
t=${t//@SM_FAMILIES_LIST@/"$klist"}
t=${t//@SM_REWRITES_DECL@/"$rdecl"}
t=${t//@SM_REWRITES_LIST@/"$rlist"}
mkdir -p "$(dirname "$out")"
printf '%s\n' "$t" >"$out.new"
if cmp -s "$out.new" "$out"; then rm -f "$out.new"; else mv "$out.new" "$out"; fi

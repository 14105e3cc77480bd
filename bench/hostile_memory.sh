#!/bin/bash
# hostile_memory.sh - peak RSS (and wall time) of `savedmodel validate` and `savedmodel run` on each
# hostile-memory case of issue #17: the inlining bomb (14 functions each calling the next three
# times), long inlined names, a [32768, 32768] Const from one value, a Const with more values than
# its shape, Fill / Tile / BroadcastTo / OneHot / RandomUniform / TensorListReserve fed a few
# numbers (run with --max_run_bytes), a 256 MiB .npz member behind a 2-element .npy header, and
# validate over 100,000 MetaGraphs (linear now, one fault per duplicated tag set). Goal: every
# peak under 256 MB. Appends a table to bench/RESULTS.md with the date, the git commit and the
# 1-minute load average (figures on a shared machine move with it).
#
# Usage: bench/hostile_memory.sh [BUILD_DIR] [--no-append]     (needs /usr/bin/time and python3)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build}
CLI=$B/savedmodel
MAL=$SRC/tests/fixtures/malformed
[ -x "$CLI" ] || { echo "no $CLI: build first"; exit 1; }
[ -d "$MAL/inline_bomb" ] || python3 "$SRC/tools/make_malformed.py" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOAL_KB=$((256 * 1024))
rows=() allok=yes

# measure LABEL cmd...: one row (exit status, seconds, peak RSS)
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? t kb
  t=$(tail -1 "$tmp/time" | cut -d' ' -f1); kb=$(tail -1 "$tmp/time" | cut -d' ' -f2)
  local ok=yes; [ "$kb" -lt $GOAL_KB ] || { ok=no; allok=no; }
  local why; why=$(grep -m1 -o "max_graph_nodes [0-9]*\|max_load_bytes [0-9]*\|max_run_bytes [0-9]*\|Too many elements\|Result for output key\|same tag set\|sound" "$tmp/out" "$tmp/err" | head -1 | sed 's/^[^:]*://')
  rows+=("| $label | $rc | $t s | $((kb / 1024)) MB | ${why:--} | $ok |")
  printf '%-58s exit %s  %6s s  %5d MB  %s\n' "$label" "$rc" "$t" $((kb / 1024)) "${why:--}"
}

run_args=(--tag_set serve --signature_def serving_default)
for c in inline_bomb inline_long_names const_broadcast_huge const_too_many_values; do
  measure "validate $c" "$CLI" validate --dir "$MAL/$c"
  measure "run $c" "$CLI" run --dir "$MAL/$c" "${run_args[@]}" --input_exprs 'x=[[1.0, 2.0]]'
done

# a model whose signature feeds shapes straight into allocating ops (one signature per op)
python3 - "$tmp/ops" <<'PY'
import os, sys
d = sys.argv[1]; os.makedirs(d + '/variables')
def a(k, b): return 'attr { key: "%s" value { %s } } ' % (k, b)
def n(name, op, ins, attrs): return 'node { name: "%s" op: "%s" %s %s}\n' % (name, op, ' '.join('input: "%s"' % i for i in ins), attrs)
T = lambda t: 'type: %s' % t
nodes = n('dims', 'Placeholder', (), a('dtype', T('DT_INT32'))) + n('k', 'Placeholder', (), a('dtype', T('DT_INT32')))
nodes += n('one', 'Const', (), a('dtype', T('DT_FLOAT')) + a('value', 'tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 }'))
nodes += n('zero', 'Const', (), a('dtype', T('DT_FLOAT')) + a('value', 'tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0 }'))
nodes += n('fill', 'Fill', ('dims', 'one'), a('T', T('DT_FLOAT')) + a('index_type', T('DT_INT32')))
nodes += n('tile', 'Tile', ('one1', 'dims'), a('T', T('DT_FLOAT')) + a('Tmultiples', T('DT_INT32')))
nodes += n('one1', 'Const', (), a('dtype', T('DT_FLOAT')) + a('value', 'tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } dim { size: 1 } } float_val: 1 }'))
nodes += n('bcast', 'BroadcastTo', ('one', 'dims'), a('T', T('DT_FLOAT')) + a('Tidx', T('DT_INT32')))
nodes += n('onehot', 'OneHot', ('dims', 'k', 'one', 'zero'), a('T', T('DT_FLOAT')) + a('TI', T('DT_INT32')) + a('axis', 'i: -1'))
nodes += n('rand', 'RandomUniform', ('dims',), a('T', T('DT_INT32')) + a('dtype', T('DT_FLOAT')))
nodes += n('eshape', 'Const', (), a('dtype', T('DT_INT32')) + a('value', 'tensor { dtype: DT_INT32 tensor_shape {} int_val: -1 }'))
nodes += n('list', 'TensorListReserve', ('eshape', 'k'), a('element_dtype', T('DT_FLOAT')) + a('shape_type', T('DT_INT32')))
nodes += n('len', 'TensorListLength', ('list',), '')
def sig(key, out, dt='DT_FLOAT', ins=('dims',)):
    s = ''.join('inputs { key: "%s" value { name: "%s:0" dtype: DT_INT32 } } ' % (i, i) for i in ins)
    return 'signature_def { key: "%s" value { %s outputs { key: "y" value { name: "%s:0" dtype: %s } } method_name: "tensorflow/serving/predict" } }\n' % (key, s, out, dt)
sigs = sig('fill', 'fill') + sig('tile', 'tile') + sig('bcast', 'bcast') + sig('onehot', 'onehot', ins=('dims', 'k'))
sigs += sig('rand', 'rand') + sig('list', 'len', 'DT_INT32', ins=('k',))
open(d + '/saved_model.pbtxt', 'w').write('saved_model_schema_version: 1\nmeta_graphs { meta_info_def { tags: "serve" } graph_def { %s versions { producer: 1000 } }\n%s}\n' % (nodes, sigs))
PY
for s in fill tile bcast rand; do
  measure "run $s [65536, 65536] --max_run_bytes 64M" "$CLI" run --dir "$tmp/ops" --tag_set serve --signature_def $s \
    --input_exprs 'dims=[65536, 65536]' --max_run_bytes 64M
done
measure "run onehot depth 2^30 --max_run_bytes 64M" "$CLI" run --dir "$tmp/ops" --tag_set serve --signature_def onehot \
  --input_exprs 'dims=[1, 2];k=1073741824' --max_run_bytes 64M
measure "run TensorListReserve 2^30 --max_run_bytes 64M" "$CLI" run --dir "$tmp/ops" --tag_set serve --signature_def list \
  --input_exprs 'k=1073741824' --max_run_bytes 64M

# the .npz member: 256 MiB of zeros (about 256 KB deflated) behind a 2-element header (read as
# np.load reads it: only the 8 bytes the header describes)
python3 "$SRC/tests/cli/make_big_npz.py" "$tmp/big.npz"
measure "run --inputs x=npz member of 256 MiB ($(($(stat -c %s "$tmp/big.npz") / 1024)) KB file)" "$CLI" run \
  --dir "$MAL/ok" "${run_args[@]}" --inputs "x=$tmp/big.npz[x]"

# 100,000 MetaGraphs, every tag set twice (50,000 duplicated sets)
python3 - "$tmp/mgs" <<'PY'
import os, sys
d = sys.argv[1]; os.makedirs(d)
mg = 'meta_graphs { meta_info_def { tags: "t%d" } graph_def { node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } } } }\n'
open(d + '/saved_model.pbtxt', 'w').write('saved_model_schema_version: 1\n' + ''.join(mg % (i // 2) for i in range(100000)))
PY
measure "validate 100,000 MetaGraphs (50,000 duplicated tag sets)" "$CLI" validate --dir "$tmp/mgs"
nf=$(grep -c "^fault: MetaGraphs" "$tmp/out"); echo "  fault lines for duplicated tag sets: $nf (one per set)"

[ "${2:-}" = "--no-append" ] && exit 0
{
  echo
  echo "### Hostile memory (issue #17): peak RSS of validate and run ($(date -u +%Y-%m-%d), git $(git -C "$SRC" rev-parse --short HEAD), load average $(cut -d' ' -f1 /proc/loadavg))"
  echo
  echo "Command: \`bench/hostile_memory.sh\` (GNU time's maximum resident set size; goal < 256 MB each)."
  echo
  echo "| case | exit | wall | peak RSS | refused by / result | < 256 MB |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "- validate over 100,000 MetaGraphs: $nf fault lines for the 50,000 duplicated tag sets."
  echo "- All under 256 MB: **$allok**"
} >>"$SRC/bench/RESULTS.md"
echo "appended to bench/RESULTS.md"

#!/usr/bin/env bash
# show_edge.sh - `savedmodel show` on hand-written SavedModels that exercise the corners of
# saved_model_cli's printing (expected text produced by saved_model_cli 2.21 on the same
# files, its ops set sorted): several MetaGraphs and their sort order, tags that need Python's
# quoting, repeated signature keys (the last wins), sparse / ref / unset TensorInfos, ops reached
# through library functions; plus damaged files, which must fail with exit 1 and a message.
# usage: show_edge.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1 SRC=$2
. "$SRC/tests/cli/common.bash"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail=0
mkdir -p "$TMP/m1" "$TMP/m2" "$TMP/bad1" "$TMP/bad2" "$TMP/bad3" "$TMP/empty"
cat >"$TMP/m1/saved_model.pbtxt" <<'EOF'
saved_model_schema_version: 1
meta_graphs {
  meta_info_def { tags: "serve" tags: "gpu" }
  graph_def {
    node { name: "a" op: "Placeholder" }
    node { name: "c" op: "StatefulPartitionedCall" attr { key: "f" value { func { name: "fn1" } } } }
    node { name: "d" op: "fn2" }
    library {
      function { signature { name: "fn1" } node_def { name: "x" op: "Mul" } node_def { name: "y" op: "fn3" } }
      function { signature { name: "fn2" } node_def { name: "x" op: "Sub" } }
      function { signature { name: "fn3" } node_def { name: "x" op: "Div" } }
      function { signature { name: "unused" } node_def { name: "x" op: "Unused" } }
    }
  }
  signature_def { key: "b" value { method_name: "m1" } }
  signature_def { key: "a" value {
    inputs { key: "sp" value { coo_sparse { values_tensor_name: "v:0" indices_tensor_name: "i:0" dense_shape_tensor_name: "s:0" } dtype: DT_INT64 tensor_shape { dim { size: -1 } dim { size: 5 } } } }
    inputs { key: "ref" value { name: "r:0" dtype: DT_FLOAT_REF tensor_shape { } } }
    inputs { key: "it's" value { name: "q:0" dtype: DT_STRING tensor_shape { unknown_rank: true } } }
    outputs { key: "o" value { name: "o:0" dtype: DT_BFLOAT16 tensor_shape { dim { size: 3 } } } }
    outputs { key: "nothing" value { } }
    method_name: "tensorflow/serving/predict" } }
  signature_def { key: "b" value { method_name: "m2" } }
}
meta_graphs {
  meta_info_def { tags: "serve" }
  graph_def { }
  signature_def { key: "z" value { method_name: "q" } }
}
meta_graphs {
  meta_info_def { tags: "b'q" tags: "ü\"x" }
}
EOF
cat >"$TMP/want_all" <<'EOF'

MetaGraphDef with tag-set: 'b'q, ü"x' contains the following SignatureDefs:
The MetaGraph with tag set ["b'q", 'ü"x'] contains the following ops: set()

MetaGraphDef with tag-set: 'serve' contains the following SignatureDefs:

signature_def['z']:
  The given SavedModel SignatureDef contains the following input(s):
  The given SavedModel SignatureDef contains the following output(s):
  Method name is: q
The MetaGraph with tag set ['serve'] contains the following ops: set()

MetaGraphDef with tag-set: 'serve, gpu' contains the following SignatureDefs:

signature_def['a']:
  The given SavedModel SignatureDef contains the following input(s):
    inputs['it's'] tensor_info:
        dtype: DT_STRING
        shape: unknown_rank
        name: q:0
    inputs['ref'] tensor_info:
        dtype: DT_FLOAT_REF
        shape: ()
        name: r:0
    inputs['sp'] tensor_info:
        dtype: DT_INT64
        shape: (-1, 5)
        name: 
  The given SavedModel SignatureDef contains the following output(s):
    outputs['nothing'] tensor_info:
        dtype: DT_INVALID
        shape: ()
        name: 
    outputs['o'] tensor_info:
        dtype: DT_BFLOAT16
        shape: (3)
        name: o:0
  Method name is: tensorflow/serving/predict

signature_def['b']:
  The given SavedModel SignatureDef contains the following input(s):
  The given SavedModel SignatureDef contains the following output(s):
  Method name is: m2
The MetaGraph with tag set ['serve', 'gpu'] contains the following ops: {'Div', 'Mul', 'Placeholder', 'StatefulPartitionedCall', 'Sub'}
EOF
cat >"$TMP/want_dir" <<'EOF'
The given SavedModel contains the following tag-sets:
'b\'q, ü"x'
'serve'
'gpu, serve'
EOF

"$CLI" show --dir "$TMP/m1" --all >"$TMP/out" 2>&1 && same_output "$TMP/out" "$TMP/want_all" ||
  { echo "FAIL: m1 --all"; fail=1; }
"$CLI" show --dir "$TMP/m1" >"$TMP/out" 2>&1 && cmp -s "$TMP/out" "$TMP/want_dir" ||
  { echo "FAIL: m1 tag-sets"; diff "$TMP/want_dir" "$TMP/out"; fail=1; }
"$CLI" show --dir "$TMP/m1" --tag_set gpu,serve,gpu --signature_def b >"$TMP/out" 2>&1 &&
  grep -q "^Method name is: m2$" "$TMP/out" || { echo "FAIL: repeated key, last wins"; fail=1; }
"$CLI" show --dir "$TMP/m1" --tag_set serve,x 2>"$TMP/err" >/dev/null
[ $? -eq 1 ] && grep -q "^savedmodel: MetaGraphDef associated with tag-set serve,x could not be found in the SavedModel. Please use one of the following tag-sets: \[" "$TMP/err" ||
  { echo "FAIL: unknown tag-set"; cat "$TMP/err"; fail=1; }

# A TF2-style object graph: functions listed from it, in load order, values printed as Python.
cat >"$TMP/m2/saved_model.pbtxt" <<'EOF'
meta_graphs {
  meta_info_def { tags: "serve" }
  graph_def { library {
    function { signature { name: "__inference_f_20" } }
    function { signature { name: "__inference_f_10" } } } }
  object_graph_def {
    nodes { children { node_id: 1 local_name: "f" } children { node_id: 2 local_name: "g" } user_object { } }
    nodes { function { concrete_functions: "__inference_f_20" concrete_functions: "__inference_f_10" } }
    nodes { bare_concrete_function { concrete_function_name: "__inference_g_5" argument_keywords: "k1" } }
    concrete_functions { key: "__inference_f_10" value { canonicalized_input_signature { tuple_value {
      values { tuple_value { values { list_value { values { int64_value: 1 } values { string_value: "s" } values { none_value { } } } } } }
      values { dict_value { } } } } } }
    concrete_functions { key: "__inference_f_20" value { canonicalized_input_signature { tuple_value {
      values { tuple_value { values { tensor_spec_value { name: "x" shape { dim { size: -1 } } dtype: DT_FLOAT } } values { float64_value: 1e-7 } } }
      values { dict_value { fields { key: "kw" value { bool_value: true } } } } } } } }
  }
}
EOF
printf '\nConcrete Functions:\n  Function Name: '"'f'"'\n    Option #1\n      Callable with:\n        Argument #1\n          DType: list\n          Value: [1, '"'s'"', None, \b\b]\n    Option #2\n      Callable with:\n        Argument #1\n          x: TensorSpec(shape=(None,), dtype=tf.float32, name='"'x'"')\n        Argument #2\n          DType: float\n          Value: 1e-07\n        Named Argument #1\n          kw\n\n  Function Name: '"'g'"'\n    Option #1\n      Callable with:\n        Argument #1\n          k1\n' >"$TMP/want_fn"
"$CLI" show --dir "$TMP/m2" --all >"$TMP/out" 2>&1 && sed -n '/^Concrete Functions:/,$p' "$TMP/out" | cat <(echo) - | cmp -s - "$TMP/want_fn" ||
  { echo "FAIL: concrete functions"; cat -A "$TMP/out"; fail=1; }

# Damaged input: a clear error, exit 1, nothing on stdout.
printf '\x0a\xff\xff\xff\xff\x0f' >"$TMP/bad1/saved_model.pb"
printf '\x08\x01\x12\x80\x01\x0a\x05abc' >"$TMP/bad2/saved_model.pb"  # a MetaGraph cut short
printf 'meta_graphs { meta_info_def { tags: "serve" }\n' >"$TMP/bad3/saved_model.pbtxt"
for d in bad1 bad2 bad3 empty nonexistent; do
  for args in "" "--all" "--tag_set serve"; do
    "$CLI" show --dir "$TMP/$d" $args >"$TMP/out" 2>"$TMP/err"; rc=$?
    if [ $rc -ne 1 ] || [ -s "$TMP/out" ] || ! grep -q "^savedmodel: ." "$TMP/err"; then
      echo "FAIL: $d $args: rc=$rc $(cat "$TMP/err")"; fail=1
    fi
  done
done

[ $fail -eq 0 ] && echo "ok" || exit 1

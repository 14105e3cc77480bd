#!/bin/bash
# device.sh - `--device cpu|gpu` of run, serve and train (the CUDA backend, device.h). Where no GPU
# can be used (no module, no driver, no GPU: CI and development machines), --device gpu fails
# cleanly (exit 1, no crash) with a message naming what is missing; where one can, its outputs are
# the CPU's within float tolerance (tools/gpu_check.sh compares every zoo model). A bad --device
# value is a usage error; train --device gpu without a GPU fails the same way, writing no export; validate --device gpu
# notes each signature's placement; the {serve, gpu} MetaGraph is chosen by --tag_set serve,gpu
# exactly as TensorFlow chooses it.
CLI=$1 SRC=$2
ZOO=$SRC/tests/fixtures/zoo
M=$ZOO/keras_conv
CASE=$M/golden/outputs/serve__serving_default
[ -f "$CASE/signature.json" ] || { echo "skipped: $CASE absent"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
IN="inputs=$CASE/inputs/inputs.npy"
[ -f "$CASE/inputs/inputs.npy" ] || { echo "FAIL: $CASE/inputs/inputs.npy absent"; exit 1; }

# cpu: as without the flag
"$CLI" run --dir "$M/model" --tag_set serve --signature_def serving_default --inputs "$IN" --device cpu \
  --outdir "$tmp/cpu" >/dev/null 2>"$tmp/err" || { echo "FAIL: --device cpu"; cat "$tmp/err"; fail=1; }

# gpu: works (outputs within tolerance of the CPU's) or fails with a clear message, never a crash
"$CLI" run --dir "$M/model" --tag_set serve --signature_def serving_default --inputs "$IN" --device gpu \
  --outdir "$tmp/gpu" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ]; then
  python3 - "$tmp/cpu" "$tmp/gpu" <<'PY' || fail=1
import sys, os, numpy as np
a, b = sys.argv[1], sys.argv[2]
for f in os.listdir(a):
    x, y = np.load(os.path.join(a, f)), np.load(os.path.join(b, f))
    scale = max(1.0, float(np.abs(x).max()) if x.size else 1.0)
    if x.shape != y.shape or not np.allclose(x, y, rtol=0, atol=1e-4 * scale):
        print(f"FAIL: --device gpu output {f} differs from the CPU's"); sys.exit(1)
PY
  echo "note: a GPU is present; --device gpu matched the CPU"
elif [ $rc -ne 1 ] || ! grep -q "GPU" "$tmp/err"; then
  echo "FAIL: --device gpu without a GPU: exit $rc (want 1, a message naming the GPU)"; cat "$tmp/err"; fail=1
fi
# the module named by SM_CUDA_MODULE is absent: that is the message
SM_CUDA_MODULE=$tmp/nonexistent.so "$CLI" run --dir "$M/model" --tag_set serve --signature_def serving_default \
  --inputs "$IN" --device gpu >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "no GPU backend: SM_CUDA_MODULE=$tmp/nonexistent.so" "$tmp/err"; then
  echo "FAIL: a missing module: exit $rc"; cat "$tmp/err"; fail=1
fi

# usage errors, and train --device gpu (on 64 Fashion-MNIST images, where the dataset is installed)
"$CLI" run --dir "$M/model" --tag_set serve --signature_def serving_default --inputs "$IN" --device tpu \
  >/dev/null 2>"$tmp/err"
rc=$?
{ [ $rc -eq 2 ] && grep -q -- "--device=tpu: expected cpu or gpu" "$tmp/err"; } || { echo "FAIL: --device tpu: exit $rc"; cat "$tmp/err"; fail=1; }
FASHION=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
"$CLI" train --data "$FASHION" --epochs 1 --limit 64 --out "$tmp/t" --device gpu >/dev/null 2>"$tmp/err"
rc=$?
if [ ! -f "$FASHION/train-images-idx3-ubyte.gz" ]; then
  echo "note: $FASHION absent, train --device gpu not checked"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  [ $rc -eq 0 ] && [ -f "$tmp/t/saved_model.pb" ] || { echo "FAIL: train --device gpu on a GPU: exit $rc"; cat "$tmp/err"; fail=1; }
elif ! { [ $rc -eq 1 ] && grep -q "fit: no GPU" "$tmp/err" && [ ! -e "$tmp/t" ]; }; then
  echo "FAIL: train --device gpu: exit $rc"; cat "$tmp/err"; fail=1
fi
"$CLI" serve --model_base_path "$tmp" --device npu >/dev/null 2>"$tmp/err"
rc=$?
{ [ $rc -eq 2 ] && grep -q -- "--device=npu: expected cpu or gpu" "$tmp/err"; } || { echo "FAIL: serve --device npu: exit $rc"; cat "$tmp/err"; fail=1; }

# validate --device gpu: the placement of each signature, without a GPU (the seed CNN: nothing but
# the flatten's shape arithmetic, on host int32 values, stays on the CPU)
"$CLI" validate --dir "$ZOO/keras_seed_cnn/model" --device gpu >"$tmp/v" 2>&1 || { echo "FAIL: validate --device gpu"; cat "$tmp/v"; fail=1; }
grep -q "signature 'serving_default' on the GPU: [1-9][0-9]* of [0-9]* steps on CUDA, [0-9]* host<->device copies; on the CPU: .*(StridedSlice)" "$tmp/v" ||
  { echo "FAIL: validate --device gpu: no placement note"; cat "$tmp/v"; fail=1; }
grep -q "(_FusedConv2D)\|(MatMul)\|(_FusedMatMul)" "$tmp/v" && { echo "FAIL: a conv or matmul falls back"; cat "$tmp/v"; fail=1; }

# {serve, gpu}: the MetaGraph whose tag set is exactly the one asked for (TF's loader)
T=$ZOO/tf1_multi_tags
G=$T/golden/outputs/serve_gpu__relu_only
if [ -f "$G/signature.json" ]; then
  args=$(python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(';'.join(k+'='+sys.argv[2]+'/'+v['file'] for k,v in d['inputs'].items()))" "$G/signature.json" "$G")
  "$CLI" run --dir "$T/model" --tag_set gpu,serve --signature_def relu_only --inputs "$args" >/dev/null 2>"$tmp/err" ||
    { echo "FAIL: --tag_set gpu,serve"; cat "$tmp/err"; fail=1; }
  "$CLI" run --dir "$T/model" --tag_set serve --signature_def relu_only --inputs "$args" >/dev/null 2>"$tmp/err" &&
    { echo "FAIL: relu_only found in the {serve} MetaGraph"; fail=1; }
fi
[ $fail -eq 0 ] && echo "device: ok"
exit $fail

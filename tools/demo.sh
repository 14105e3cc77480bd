#!/usr/bin/env bash
# The README's main job until training lands (issue #5): take the seeds' CNN as TensorFlow saved it
# (tests/fixtures/zoo/keras_seed_cnn: Conv2D(32,3,relu) MaxPooling2D Flatten Dense(64,relu) Dense(10)),
# inspect it, load it back and predict with the CLI that was just built, then check the prediction
# against the one TensorFlow made on the same image.
set -euo pipefail
build=${1:-build}
cli="$build/savedmodel"
model=tests/fixtures/zoo/keras_seed_cnn/model
case=tests/fixtures/zoo/keras_seed_cnn/golden/outputs/serve__serving_default__b1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== savedmodel show --dir $model --tag_set serve --signature_def serving_default"
"$cli" show --dir "$model" --tag_set serve --signature_def serving_default
echo "== savedmodel vars --dir $model"
"$cli" vars --dir "$model"
echo "== savedmodel run (one 28x28 image; the logits of the 10 classes)"
"$cli" run --dir "$model" --tag_set serve --signature_def serving_default \
  --inputs "inputs=$case/inputs/inputs.npy" --outdir "$out"
echo "== TensorFlow's logits for the same image"
python3 - "$case/outputs/output_0.npy" "$out/output_0.npy" <<'PY'
import struct, sys
def load(p):  # a float32 .npy: the header, then little-endian floats
    b = open(p, 'rb').read()
    hl = struct.unpack('<H', b[8:10])[0] if b[6] == 1 else struct.unpack('<I', b[8:12])[0]
    off = (10 if b[6] == 1 else 12) + hl
    return struct.unpack('<%df' % ((len(b) - off) // 4), b[off:])
tf, ours = load(sys.argv[1]), load(sys.argv[2])
print(' '.join('%.6g' % v for v in tf))
err = max(abs(a - b) / max(1e-6, abs(a)) for a, b in zip(tf, ours))
print('max relative difference: %.2g -> %s' % (err, 'same prediction' if err < 1e-4 else 'MISMATCH'))
sys.exit(0 if err < 1e-4 else 1)
PY

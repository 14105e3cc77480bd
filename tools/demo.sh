#!/usr/bin/env bash
# The README's main job (issue #5), all in C: train the seeds' CNN - Conv2D(32,3,relu)
# MaxPooling2D(2) Flatten Dense(64,relu) Dense(10) - on Fashion-MNIST with Adam for 5 epochs,
# export it as a SavedModel with its label names, load the export back and name the first test
# images. usage: tools/demo.sh [BUILD_DIR]
# env: DEMO_OUT=DIR keeps the export there; EPOCHS (default 5); LIMIT=N trains on N images only.
set -euo pipefail
build=${1:-build}
cli="$build/savedmodel"
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
epochs=${EPOCHS:-5}
if [ ! -f "$data/train-images-idx3-ubyte.gz" ] && [ ! -f "$data/train-images-idx3-ubyte" ]; then
  echo "demo: no Fashion-MNIST in $data (Debian package dataset-fashion-mnist; tools/install-deps.sh installs it)" >&2
  exit 1
fi
if [ -n "${DEMO_OUT:-}" ]; then
  out=$DEMO_OUT
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  out=$tmp/fashion_mnist/1
  mkdir -p "$(dirname "$out")"
fi

echo "== savedmodel train --epochs $epochs --batch_size 32${LIMIT:+ --limit $LIMIT} --out $out"
"$cli" train --data "$data" --epochs "$epochs" --batch_size 32 ${LIMIT:+--limit "$LIMIT"} --out "$out"
echo
echo "== savedmodel show --dir $out --tag_set serve --signature_def classify"
"$cli" show --dir "$out" --tag_set serve --signature_def classify
echo
echo "== examples/predict.c: sm_model_load, then the classify signature on the first 8 test images"
"$build/examples/predict" "$out" "$data" 8
[ -n "${DEMO_OUT:-}" ] && echo "(the export is in $out)"
exit 0

#!/usr/bin/env bash
# train.sh - `savedmodel train`: a tiny run on synthetic MNIST-format files written here (output
# format, export loads with show and run, --resume continues, every data error comes before
# training), then one quick run on the real Fashion-MNIST when Debian's dataset-fashion-mnist is
# installed (skipped, exit 77, when it is not); a model from a Keras model.to_json() (--model) with
# the optimizer, schedule and loss flags, and their errors. That resuming goes on from the saved optimizer
# state exactly is test_train_export's to check; this checks the CLI around it.
# usage: train.sh CLI SOURCE_DIR SHARED_DIR
set -u
CLI=$1
FASHION=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }

if ! "$CLI" train --help >/dev/null 2>&1; then echo "FAIL: savedmodel train --help"; exit 1; fi

# ---- synthetic MNIST-format data -----------------------------------------------------------------
# shellcheck source=mnist_data.inc
. "$(dirname "$0")/mnist_data.inc"
mkdata "$TMP/syn" 64 20

bar_re='^ *([0-9]+)/([0-9]+) \[=+\] - [0-9]+s [0-9]+(s|ms|us)/step - loss: [0-9.e+-]+ - accuracy: [0-9.e+-]+'
check_run() { # LOG EPOCH_FROM EPOCH_TO STEPS
  local log=$1
  grep -q $'\r' "$log" && die "$log: carriage returns in non-TTY output"
  grep -q 'Total params' "$log" || die "$log: no model summary"
  for ((e = $2; e <= $3; e++)); do
    grep -qx "Epoch $e/$3" "$log" || die "$log: no 'Epoch $e/$3' line"
  done
  local bars; bars=$(grep -cE "$bar_re" "$log")
  [ "$bars" -eq $(($3 - $2 + 1)) ] || die "$log: $bars progress lines for $(($3 - $2 + 1)) epochs"
  grep -qE "^ *$4/$4 \[==============================\] - " "$log" || die "$log: no final bar of $4 steps"
  tail -n 1 "$log" | grep -qE '^test accuracy: [01]\.[0-9]{4}$' || die "$log: last line is '$(tail -n 1 "$log")'"
}

# A tiny run: 64 images, batch 16, validation split (the last 16 images): 3 steps per epoch.
if "$CLI" train --data "$TMP/syn" --epochs 2 --batch_size 16 --validation_split 0.25 --num_threads 2 \
     --out "$TMP/a" >"$TMP/a.log" 2>"$TMP/a.err"; then
  check_run "$TMP/a.log" 1 2 3
  grep -qE "$bar_re - val_loss: [0-9.e+-]+ - val_accuracy: [0-9.]+$" "$TMP/a.log" || die "no validation metrics"
  [ -s "$TMP/a.err" ] && { echo "stderr of a quiet run:"; cat "$TMP/a.err"; }
  "$CLI" show --dir "$TMP/a" --all >"$TMP/show.log" 2>&1 || die "show --all on the export: $(head -3 "$TMP/show.log")"
  for w in serving_default classify "tag-set: 'serve'"; do grep -q "$w" "$TMP/show.log" || die "show --all lacks $w"; done
  [ -f "$TMP/a/assets/labels.txt" ] && [ "$(sed -n 10p "$TMP/a/assets/labels.txt")" = "Ankle boot" ] ||
    die "assets/labels.txt is not Fashion-MNIST's names"
  img="[$(printf '[0.5],%.0s' {1..7})[0.5]]"; row="$img"; for i in {1..7}; do row="$row,$img"; done
  if "$CLI" run --dir "$TMP/a" --tag_set serve --signature_def serving_default --input_exprs "inputs=[[$row]]" \
       --outdir "$TMP/run" >"$TMP/run.log" 2>&1; then
    [ -f "$TMP/run/outputs.npy" ] || [ -n "$(ls "$TMP/run")" ] || die "run wrote no output"
  else
    die "savedmodel run on the export: $(tail -3 "$TMP/run.log")"
  fi
  px="$(printf '0.25,%.0s' {1..63})0.25"
  "$CLI" run --dir "$TMP/a" --tag_set serve --signature_def classify --input_examples "inputs=[{\"inputs\":[$px]}]" \
    >"$TMP/cls.log" 2>&1 || die "run classify on the export: $(tail -3 "$TMP/cls.log")"
  grep -q "b'Ankle boot'" "$TMP/cls.log" || die "classify gave no label strings: $(head -5 "$TMP/cls.log")"
  # --resume continues: epochs numbered on, labels kept, a new export.
  if "$CLI" train --data "$TMP/syn" --epochs 1 --batch_size 16 --resume "$TMP/a" --out "$TMP/b" >"$TMP/b.log" 2>&1; then
    grep -q "^Resuming $TMP/a: 2 epoch(s), 6 step(s) done" "$TMP/b.log" || die "resume: $(grep Resum "$TMP/b.log")"
    check_run "$TMP/b.log" 3 3 4
  else
    die "resume: $(tail -3 "$TMP/b.log")"
  fi
  "$CLI" train --data "$TMP/syn" --epochs 1 --batch_size 16 --resume "$TMP/a" --learning_rate 0.1 --out "$TMP/c" \
    >/dev/null 2>&1 && die "--learning_rate with --resume accepted"
else
  die "tiny run: $(tail -5 "$TMP/a.err")"
fi

# Parents of --out are created (as Keras and TF do), and --batch_size defaults to Keras's 32:
# 64 images are 2 steps of 32.
if "$CLI" train --data "$TMP/syn" --epochs 1 --num_threads 2 --out "$TMP/new/parents/1" >"$TMP/p.log" 2>&1; then
  check_run "$TMP/p.log" 1 1 2
  [ -f "$TMP/new/parents/1/saved_model.pb" ] || die "no export in $TMP/new/parents/1"
else
  die "train with missing parents of --out and no --batch_size: $(tail -3 "$TMP/p.log")"
fi
"$CLI" train --help | grep -q -- "default 32" || die "train --help does not give --batch_size's default"

# A model from a Keras model.to_json() (the shape Keras 3 writes, trimmed to what is read):
# Rescaling, Conv2D(strides 2, same, no bias), BatchNormalization, GlobalAveragePooling2D,
# Dropout, Dense(10); SGD with Nesterov momentum, cosine decay, categorical cross-entropy.
keras_layer() { printf '{"module": "keras.layers", "class_name": "%s", "config": {"name": "%s"%s}}' "$@"; }
keras_model() { # FILE LAYER_JSON...
  local f=$1; shift
  local IFS=,
  printf '{"module": "keras", "class_name": "Sequential", "config": {"name": "sequential", "layers": [%s]}}' \
    "$(keras_layer InputLayer input_layer ', "batch_shape": [null, 8, 8, 1]'),$*" >"$f"
}
keras_model "$TMP/model.json" "$(keras_layer Rescaling rescaling ', "scale": 2.0, "offset": -1.0')" \
  "$(keras_layer Conv2D conv2d ', "filters": 6, "kernel_size": [3, 3], "strides": [2, 2], "padding": "same", "activation": "relu", "use_bias": false')" \
  "$(keras_layer BatchNormalization bn ', "momentum": 0.9, "epsilon": 0.001')" \
  "$(keras_layer GlobalAveragePooling2D gap '')" "$(keras_layer Dropout dropout ', "rate": 0.2')" \
  "$(keras_layer Dense dense ', "units": 10')"
if "$CLI" train --data "$TMP/syn" --model "$TMP/model.json" --epochs 1 --batch_size 16 --num_threads 2 \
     --optimizer sgd:momentum=0.9,nesterov=1 --lr_schedule cosine:8:0.1 --loss categorical_crossentropy \
     --out "$TMP/k" >"$TMP/k.log" 2>&1; then
  check_run "$TMP/k.log" 1 1 4
  grep -q '^bn (BatchNormalization) *(None, 4, 4, 6) *24$' "$TMP/k.log" || die "--model: no batch norm line in the summary"
  grep -q '^optimizer sgd learning_rate=0.00999999978 momentum=0.899999976 nesterov=1 schedule=cosine:8:0.100000001$' \
    "$TMP/k/assets.extra/libsavedmodel_train.txt" || die "--model: the optimizer settings were not kept"
  "$CLI" train --data "$TMP/syn" --epochs 1 --batch_size 16 --num_threads 2 --resume "$TMP/k" --out "$TMP/k2" \
    >"$TMP/k2.log" 2>&1 || die "--resume of a --model export: $(tail -3 "$TMP/k2.log")"
else
  die "--model run: $(tail -5 "$TMP/k.log")"
fi
# A model over the pixels in another shape, (8, 8) here, ending in softmax (from probabilities).
printf '{"class_name": "Sequential", "config": {"name": "s", "layers": [%s, %s, %s]}}' \
  "$(keras_layer InputLayer in ', "batch_shape": [null, 8, 8]')" "$(keras_layer Flatten flatten '')" \
  "$(keras_layer Dense dense ', "units": 10, "activation": "softmax"')" >"$TMP/flat.json"
"$CLI" train --data "$TMP/syn" --model "$TMP/flat.json" --epochs 1 --batch_size 16 --num_threads 2 --out "$TMP/flat" \
  >"$TMP/f.log" 2>&1 || die "--model with an (8, 8) input: $(tail -3 "$TMP/f.log")"
grep -q "serving_default: probabilities" "$TMP/f.log" || die "--model ending in softmax: export line lacks probabilities"
keras_model "$TMP/bad.json" "$(keras_layer Conv2D c1 ', "filters": 2, "kernel_size": 3, "dilation_rate": [2, 2]')"

# ---- errors: a clear message, exit 1 (2 for usage), and never a training step ----------------------
expect_error() { # CODE NEEDLE ARGS...
  local code=$1 needle=$2; shift 2
  "$CLI" train "$@" >"$TMP/e.log" 2>&1; local rc=$?
  [ $rc -eq "$code" ] || die "train $*: exit $rc, expected $code: $(head -2 "$TMP/e.log")"
  grep -qF -- "$needle" "$TMP/e.log" || die "train $*: message lacks '$needle': $(head -2 "$TMP/e.log")"
  grep -q '^Epoch ' "$TMP/e.log" && die "train $*: training started before the error"
  grep -qF ': : ' "$TMP/e.log" && die "train $*: a doubled ': ' in the message: $(head -2 "$TMP/e.log")"
}
base=(--epochs 1 --batch_size 16 --out "$TMP/never")
expect_error 2 "--out is required" --epochs 1 --batch_size 16
expect_error 2 "--epochs: expected an integer" --data "$TMP/syn" --epochs x --batch_size 16 --out "$TMP/never"
expect_error 2 "--validation_split" --data "$TMP/syn" "${base[@]}" --validation_split 1
expect_error 1 "$TMP/nodir: no such data directory" --data "$TMP/nodir" "${base[@]}"
expect_error 1 "already exists" --data "$TMP/syn" --epochs 1 --batch_size 16 --out "$TMP/a"
: >"$TMP/afile"
expect_error 1 "$TMP/afile exists and is not a directory" --data "$TMP/syn" --epochs 1 --batch_size 16 --out "$TMP/afile/such/x"
printf 'a\nb\n' >"$TMP/labels2"
expect_error 1 "$TMP/labels2: 2 label(s)" --data "$TMP/syn" "${base[@]}" --labels "$TMP/labels2"
expect_error 1 "$TMP/missing-labels" --data "$TMP/syn" "${base[@]}" --labels "$TMP/missing-labels"

mkdata "$TMP/d1" 64 20; rm "$TMP/d1/train-labels-idx1-ubyte"
expect_error 1 "neither train-labels-idx1-ubyte nor train-labels-idx1-ubyte.gz" --data "$TMP/d1" "${base[@]}"
mkdata "$TMP/d2" 64 20; labels "$TMP/d2/train-labels-idx1-ubyte" 63
expect_error 1 "holds 64 images but $TMP/d2/train-labels-idx1-ubyte holds 63 labels" --data "$TMP/d2" "${base[@]}"
mkdata "$TMP/d3" 64 20; labels "$TMP/d3/train-labels-idx1-ubyte" 64 12
expect_error 1 "train-labels-idx1-ubyte: label 12 of image 3 is out of range [0, 10)" --data "$TMP/d3" "${base[@]}"
mkdata "$TMP/d4" 64 20; printf '\x00\x01' | dd of="$TMP/d4/train-images-idx3-ubyte" bs=1 seek=0 conv=notrunc status=none
expect_error 1 "train-images-idx3-ubyte: not an IDX file (bad magic 00 01 08 03" --data "$TMP/d4" "${base[@]}"
mkdata "$TMP/d5" 64 20; truncate -s 1000 "$TMP/d5/train-images-idx3-ubyte"
expect_error 1 "train-images-idx3-ubyte: the IDX header says 4096 bytes of data, the file holds 984" --data "$TMP/d5" "${base[@]}"
mkdata "$TMP/d6" 64 20; f=$TMP/d6/t10k-images-idx3-ubyte.gz; head -c $(($(stat -c %s "$f") - 10)) "$f" >"$f.cut"; mv "$f.cut" "$f"
expect_error 1 "t10k-images-idx3-ubyte.gz: truncated gzip data" --data "$TMP/d6" "${base[@]}"
mkdata "$TMP/d7" 64 20; printf 'XXXXXXXX' | dd of="$TMP/d7/t10k-labels-idx1-ubyte.gz" bs=1 seek=12 conv=notrunc status=none
expect_error 1 "t10k-labels-idx1-ubyte.gz: corrupt gzip data" --data "$TMP/d7" "${base[@]}"
if [ -d "$TMP/a/assets" ]; then # the resumed export's labels, named after --resume once
  cp -r "$TMP/a" "$TMP/a2"; printf 'x\n\n' >"$TMP/a2/assets/labels.txt"
  expect_error 1 "--resume: $TMP/a2/assets/labels.txt: line 2 is empty" --data "$TMP/syn" "${base[@]}" --resume "$TMP/a2"
  # every piece verified: no silent Fashion-MNIST names, no damaged or missing saved_model.pb,
  # no training state past its ranges
  rm "$TMP/a2/assets/labels.txt"
  expect_error 1 "--resume: $TMP/a2/assets/labels.txt is missing" --data "$TMP/syn" "${base[@]}" --resume "$TMP/a2"
  rm -r "$TMP/a2"; cp -r "$TMP/a" "$TMP/a2"; rm "$TMP/a2/saved_model.pb"
  expect_error 1 "$TMP/a2/saved_model.pb is missing" --data "$TMP/syn" "${base[@]}" --resume "$TMP/a2"
  cp "$TMP/a/saved_model.pb" "$TMP/a2/"; truncate -s -1 "$TMP/a2/saved_model.pb"
  expect_error 1 "resuming from $TMP/a2" --data "$TMP/syn" "${base[@]}" --resume "$TMP/a2"
  cp "$TMP/a/saved_model.pb" "$TMP/a2/"
  sed -i 's/^epochs_done .*/epochs_done 9223372036854775807/' "$TMP/a2/assets.extra/libsavedmodel_train.txt"
  expect_error 1 'epochs_done: "9223372036854775807" is not an integer in [0, 1073741824]' --data "$TMP/syn" \
    "${base[@]}" --resume "$TMP/a2"
fi
expect_error 1 "$TMP/bad.json: layer \"c1\" (Conv2D): dilation_rate other than 1" --data "$TMP/syn" "${base[@]}" \
  --model "$TMP/bad.json"
expect_error 2 "--optimizer: unknown optimizer 'adagrad'" --data "$TMP/syn" "${base[@]}" --optimizer adagrad
expect_error 2 "--optimizer: unknown setting 'beta'" --data "$TMP/syn" "${base[@]}" --optimizer adam:beta=0.5
expect_error 1 "--lr_schedule: learning-rate schedule \"cosine:x\"" --data "$TMP/syn" "${base[@]}" --lr_schedule cosine:x
expect_error 2 "--loss: unknown loss 'hinge'" --data "$TMP/syn" "${base[@]}" --loss hinge
expect_error 2 "--model cannot be combined with --resume" --data "$TMP/syn" "${base[@]}" --model "$TMP/model.json" \
  --resume "$TMP/k"
[ -e "$TMP/never" ] && die "a failed run left $TMP/never behind"

# ---- the real Fashion-MNIST ----------------------------------------------------------------------
if [ ! -f "$FASHION/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: $FASHION absent (the synthetic checks ran: $([ $fail -eq 0 ] && echo ok || echo FAILED))"
  [ $fail -eq 0 ] && exit 77 || exit 1
fi
# 2000 images, batch 32: 63 steps.
if "$CLI" train --epochs 1 --batch_size 32 --limit 2000 --out "$TMP/f" >"$TMP/f.log" 2>&1; then
  check_run "$TMP/f.log" 1 1 63
  acc=$(tail -n 1 "$TMP/f.log" | awk '{print $3}')
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.55) }' || die "test accuracy $acc after one epoch on 2000 images"
  "$CLI" show --dir "$TMP/f" --tag_set serve --signature_def serving_default >"$TMP/fshow.log" 2>&1 ||
    die "show on the Fashion-MNIST export: $(head -3 "$TMP/fshow.log")"
  grep -q "shape: (-1, 28, 28, 1)" "$TMP/fshow.log" || die "serving_default input is not (-1, 28, 28, 1)"
  img="[$(printf '[0.0],%.0s' {1..27})[0.0]]"; row="$img"; for i in {1..27}; do row="$row,$img"; done
  "$CLI" run --dir "$TMP/f" --tag_set serve --signature_def serving_default --input_exprs "inputs=[[$row]]" \
    >"$TMP/frun.log" 2>&1 || die "run on the Fashion-MNIST export: $(tail -3 "$TMP/frun.log")"
else
  die "Fashion-MNIST run: $(tail -5 "$TMP/f.log")"
fi
# A damaged copy of the real data fails before training.
mkdir "$TMP/bad"; cp "$FASHION"/train-labels-idx1-ubyte.gz "$TMP/bad/"
head -c 100000 "$FASHION"/train-images-idx3-ubyte.gz >"$TMP/bad/train-images-idx3-ubyte.gz"
expect_error 1 "$TMP/bad/train-images-idx3-ubyte.gz: truncated gzip data" --data "$TMP/bad" "${base[@]}"
exit $fail

#!/usr/bin/env bash
# The README's main job for now (training arrives with a later issue): inspect a SavedModel that
# TensorFlow wrote — its tag-sets, signatures and variables — with the CLI that was just built.
set -euo pipefail
build=${1:-build}
cli="$build/savedmodel"
model=tests/fixtures/zoo/tf2_keras_cnn/model
echo "== savedmodel show --dir $model --all"
"$cli" show --dir "$model" --all
echo "== savedmodel vars --dir $model"
"$cli" vars --dir "$model"

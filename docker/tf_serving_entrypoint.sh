#!/bin/bash
# tf_serving_entrypoint.sh - the container's entrypoint, as the tensorflow/serving image's: serves
# ${MODEL_BASE_PATH}/${MODEL_NAME} (defaults /models and "model") with gRPC on 8500 and REST on 8501;
# arguments are passed through after these flags, so they override them (the last value wins).
# SAVEDMODEL names the CLI (default: savedmodel on PATH; the tests point it at the build).
set -u
MODEL_NAME=${MODEL_NAME:-model}
MODEL_BASE_PATH=${MODEL_BASE_PATH:-/models}
exec "${SAVEDMODEL:-savedmodel}" serve --port=8500 --rest_api_port=8501 \
  --model_name="${MODEL_NAME}" --model_base_path="${MODEL_BASE_PATH}/${MODEL_NAME}" "$@"

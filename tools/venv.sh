#!/usr/bin/env bash
# Creates (or reuses) a Python venv with TensorFlow (CPU) and numpy for tools/ and the interop suite,
# plus tf2onnx and onnxruntime for bench/bench_runtime.py, and TF Serving's Python client
# (tensorflow-serving-api, over the grpcio TensorFlow brings) for tests/interop/test_grpc_serving.py.
# Usage: tools/venv.sh DIR   (e.g. build/venv). Idempotent: when DIR already imports tensorflow and
# numpy it returns at once without touching the network.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 VENV_DIR" >&2
  exit 2
fi
dir=$1
py=${PYTHON:-python3}

if [ -x "$dir/bin/python" ] &&
   "$dir/bin/python" -c "import numpy, tensorflow, tensorflow_text, sentencepiece, tf2onnx, onnxruntime, grpc, tensorflow_serving.apis" \
     >/dev/null 2>&1; then
  exit 0
fi

if [ ! -x "$dir/bin/python" ]; then
  echo "venv: creating $dir"
  "$py" -m venv "$dir"
fi
echo "venv: installing tensorflow-cpu, numpy, tf2onnx, onnxruntime into $dir (a few hundred MB)"
"$dir/bin/python" -m pip install -q --upgrade pip
"$dir/bin/python" -m pip install -q tensorflow-cpu numpy
# ONNX Runtime is the benchmark's second reference (bench/bench_runtime.py); tf2onnx converts for it.
"$dir/bin/python" -m pip install -q tf2onnx onnxruntime
# SentencePiece trains the tiny models tools/gen_tftext_sp_cases.py checks TF Text against (generator only)
"$dir/bin/python" -m pip install -q sentencepiece
# TF Serving's client stubs: --no-deps, so that its pin does not replace the TensorFlow above
# (its other dependencies, grpcio and protobuf, come with TensorFlow).
"$dir/bin/python" -m pip install -q --no-deps tensorflow-serving-api
"$dir/bin/python" -c "import grpc, tensorflow_serving.apis.prediction_service_pb2_grpc"
# TensorFlow Text (its custom ops: tools/zoo_text.py's tftext_bert model, tools/gen_op_defs.py), the
# release of TensorFlow's minor version, without its dependencies (which would move TensorFlow).
tfmm=$("$dir/bin/python" -c "import tensorflow as tf; print('.'.join(tf.__version__.split('.')[:2]))")
"$dir/bin/python" -m pip install -q --no-deps "tensorflow-text==$tfmm.*"
"$dir/bin/python" -c "import tensorflow_text"
# Fail here, not later in a tool, if the install did not produce a working TensorFlow.
"$dir/bin/python" -c "import numpy, tensorflow as tf; print('venv: tensorflow', tf.__version__)"

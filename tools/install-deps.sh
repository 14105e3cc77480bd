#!/usr/bin/env bash
# Installs the Debian packages libsavedmodel builds and tests with. Idempotent: does nothing
# (and needs no root) when everything is already there. `--bench` adds what only bench/ uses
# (wrk, nginx-light, h2load from nghttp2-client for bench_serve.py; CI does not install them, the benches skip what is absent).
set -euo pipefail
bench=()
[ "${1:-}" = "--bench" ] && bench=(wrk nginx-light nghttp2-client)
pkgs=("${bench[@]}" build-essential cmake pkg-config clang protobuf-c-compiler libprotobuf-c-dev libsnappy-dev zlib1g-dev
      libopenblas-dev libmicrohttpd-dev libjansson-dev python3 python3-venv python3-pip time
      libre2-dev           # optional: the regex ops (RegexReplace & co.), opened at run time
      libsentencepiece-dev # optional: TF Text's Sentencepiece* ops (text.SentencepieceTokenizer), opened at run time
      libicu-dev           # optional: ICU for UnicodeTranscode/UnicodeScript and TF Text's normalizers (opened at run time)
      libjpeg62-turbo-dev libpng-dev libgif-dev libwebp-dev  # optional: DecodeJpeg/Png/Gif/WebP/Image, EncodeJpeg/Png (opened at run time)
      libdnnl-dev          # optional: oneDNN for float convolutions and matmuls (opened at run time)
      libgrpc-dev          # optional: TF Serving's gRPC API in `savedmodel serve --port`
      libopenmpi-dev openmpi-bin  # data-parallel `savedmodel train` under mpirun (optional: opened at run time)
      libclang-rt-14-dev   # clang runtimes for the fuzz targets (make fuzz)
      dataset-fashion-mnist)  # the training data of the main job (/usr/share/datasets/fashion-mnist)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# build.sh - builds the libFuzzer targets fuzz/fuzz_*.c with clang, ASan and UBSan.
#
# Usage: fuzz/build.sh [BUILD_DIR]   (default build-fuzz; binaries land in BUILD_DIR/fuzz_<name>)
# The library sources (every src/<layer>/*.c the CMake library globs, protoc-c output, and the
# CLI's Python-literal parser) are compiled here with coverage instrumentation, apart from the
# normal CMake build, which stays untouched. A target whose header comment says
# "fuzz-requires: PATH" is skipped (with a note) while PATH does not exist yet.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-fuzz}
CC=${FUZZ_CC:-clang}
mkdir -p "$B/gen" "$B/obj"

protos=(proto/*.proto)
stamp="$B/gen/.stamp"
if [ ! -f "$stamp" ] || [ -n "$(find proto -name '*.proto' -newer "$stamp")" ]; then
  # Generated into a scratch dir, and only files whose bytes changed replace the old ones: a new
  # .proto elsewhere must not make every object look stale.
  rm -rf "$B/gen.new" && mkdir -p "$B/gen.new"
  protoc-c --c_out="$B/gen.new" -Iproto "${protos[@]}"
  for f in "$B"/gen.new/*; do cmp -s "$f" "$B/gen/${f##*/}" || cp "$f" "$B/gen/"; done
  rm -rf "$B/gen.new"
  touch "$stamp"
fi

# The kernel registry's list of families, generated as CMakeLists.txt does it (one script).
bash tools/gen_registry_families.sh . "$B/gen/registry_families.c"

PKGS="libprotobuf-c openblas zlib"
pkg-config --exists jansson && PKGS="$PKGS jansson"
PKG_CFLAGS=$(pkg-config --cflags $PKGS)
PKG_LIBS=$(pkg-config --libs $PKGS)
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
VERSION=$(sed -n 's/^project(savedmodel VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
CFLAGS="-std=c11 -O1 -g -Wall -Wextra -Werror $SAN -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DSM_VERSION_STRING=\"$VERSION\"
        -Iinclude -I$B/gen -Isrc $PKG_CFLAGS"

# An object is rebuilt when it is missing or older than its source or any header its .d file
# (clang -MMD) lists: other layers' headers change all the time while the tree is worked on.
stale() { # obj
  [ -f "$1" ] && [ -f "$1.d" ] || return 0
  local dep
  for dep in $(sed -e 's/\\$//' -e 's/^[^:]*://' "$1.d"); do
    [ -e "$dep" ] || return 0
    [ "$dep" -nt "$1" ] && return 0
  done
  return 1
}
compile() { # src obj extra-flags
  # an object from before .d files were written: list its headers now (preprocessing is cheap)
  # shellcheck disable=SC2086
  [ -f "$2" ] && [ ! -f "$2.d" ] && $CC $CFLAGS $3 -MM -MT "$2" "$1" -MF "$2.d" 2>/dev/null
  # per-file flags changed (a codec header installed since): rebuild too
  if stale "$2" || [ "$(cat "$2.flags" 2>/dev/null)" != "$3" ]; then
    # shellcheck disable=SC2086
    $CC $CFLAGS -fsanitize=fuzzer-no-link $3 -MMD -MF "$2.d" -c "$1" -o "$2" && printf '%s' "$3" >"$2.flags"
  fi
}
export -f compile stale
export CC CFLAGS

objs=()
jobs=()
# The serve layer's JSON decoder and gRPC request handling (with the REST engine and the model
# manager it runs on) are fuzzed too; the rest of src/serve (HTTP, batching) is not needed.
srcs=(src/base/*.c src/format/*.c src/graph/*.c src/runtime/*.c src/runtime/gpu/*.c src/ops/*.c src/ops/gpu/*.c
      src/builder/*.c src/cli/pyliteral.c src/cli/pyfmt.c)
for f in src/train/*.c src/serve/json*.c src/serve/grpc_api.c src/serve/rest.c src/serve/manager.c src/serve/config.c; do [ -f "$f" ] && srcs+=("$f"); done
# Our sources get -Wshadow -Wmissing-prototypes as in the CMake build.
WEXTRA="-Wshadow -Wmissing-prototypes"
# The image codecs: image_codec.c dlopens libjpeg/libpng/giflib/libwebp and needs only their headers,
# found as CMakeLists.txt finds them; without a header that codec's ops are UNIMPLEMENTED (and unfuzzed).
has_hdr() { printf '%s\n' "$@" | sed 's/.*/#include <&>/' | $CC -x c -fsyntax-only - 2>/dev/null; }
CODEC=""
has_hdr stddef.h stdio.h jpeglib.h && CODEC="$CODEC -DSM_HAVE_JPEG=1"
has_hdr png.h && CODEC="$CODEC -DSM_HAVE_PNG=1"
has_hdr gif_lib.h && CODEC="$CODEC -DSM_HAVE_GIF=1"
has_hdr stdint.h stddef.h webp/decode.h webp/demux.h && CODEC="$CODEC -DSM_HAVE_WEBP=1"
echo "fuzz/build.sh: image codecs:${CODEC:- none}"
for f in "${srcs[@]}"; do
  o="$B/obj/$(basename "$(dirname "$f")")_$(basename "${f%.c}").o"
  extra=$WEXTRA
  [ "$f" = src/ops/image_codec.c ] && extra="$extra$CODEC"
  # nn_dwconv.c (AVX-512 kernels, always_inline + unrolled) takes ~10 CPU minutes under UBSan and
  # ~1.7 under ASan alone (session 19, d2): it keeps ASan only.
  [ "$f" = src/ops/nn_dwconv.c ] && extra="$extra -fno-sanitize=undefined"
  objs+=("$o"); jobs+=("$f $o $extra")
done
objs+=("$B/obj/gen_registry_families.o"); jobs+=("$B/gen/registry_families.c $B/obj/gen_registry_families.o $WEXTRA")
for f in "$B"/gen/*.pb-c.c; do
  o="$B/obj/gen_$(basename "${f%.c}").o"
  objs+=("$o"); jobs+=("$f $o -Wno-unused-parameter")
done
printf '%s\n' "${jobs[@]}" | xargs -P "${FUZZ_JOBS:-2}" -L 1 bash -c 'compile "$0" "$1" "${*:2}"'
rm -f "$B/libsm_fuzz.a"
ar rcs "$B/libsm_fuzz.a" "${objs[@]}"

for t in fuzz/fuzz_*.c; do
  n=$(basename "${t%.c}")
  req=$(sed -n 's/.*fuzz-requires: \([^ ]*\).*/\1/p' "$t" | head -1)
  if [ -n "$req" ] && [ ! -e "$req" ]; then
    echo "skipped $n: $req does not exist yet"
    rm -f "$B/$n"
    continue
  fi
  # shellcheck disable=SC2086
  if $CC $CFLAGS $WEXTRA -fsanitize=fuzzer "$t" "$B/libsm_fuzz.a" $PKG_LIBS -lsnappy -lm -lpthread -o "$B/$n"; then
    echo "built $B/$n"
  else
    echo "FAILED to build $B/$n"
    rm -f "$B/$n"
    failed=1
  fi
done
exit "${failed:-0}"

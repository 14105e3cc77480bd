#!/usr/bin/env bash
# build.sh - builds the libFuzzer targets fuzz/fuzz_*.c with clang, ASan and UBSan.
#
# Usage: fuzz/build.sh [BUILD_DIR]   (default build-fuzz; binaries land in BUILD_DIR/fuzz_<name>)
# The library sources (src/base, src/format, protoc-c output) are compiled here with coverage
# instrumentation, apart from the normal CMake build, which stays untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-fuzz}
CC=${FUZZ_CC:-clang}
mkdir -p "$B/gen" "$B/obj"

protos=(proto/*.proto)
stamp="$B/gen/.stamp"
if [ ! -f "$stamp" ] || [ -n "$(find proto -name '*.proto' -newer "$stamp")" ]; then
  protoc-c --c_out="$B/gen" -Iproto "${protos[@]}"
  touch "$stamp"
fi

PBC_CFLAGS=$(pkg-config --cflags libprotobuf-c)
PBC_LIBS=$(pkg-config --libs libprotobuf-c)
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-std=c11 -O1 -g -Wall -Wextra -Werror $SAN -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
        -Iinclude -I$B/gen -Isrc $PBC_CFLAGS"

# Any header newer than an object rebuilds it: coarse, but there are only a few dozen sources.
newest_hdr=$(find include src "$B/gen" -name '*.h' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2)
compile() { # src obj extra-flags
  if [ ! -f "$2" ] || [ "$1" -nt "$2" ] || [ "$newest_hdr" -nt "$2" ]; then
    # shellcheck disable=SC2086
    $CC $CFLAGS -fsanitize=fuzzer-no-link $3 -c "$1" -o "$2"
  fi
}
export -f compile
export CC CFLAGS newest_hdr

objs=()
jobs=()
for f in src/base/*.c src/format/*.c; do
  o="$B/obj/$(basename "$(dirname "$f")")_$(basename "${f%.c}").o"
  objs+=("$o"); jobs+=("$f $o")
done
for f in "$B"/gen/*.pb-c.c; do
  o="$B/obj/gen_$(basename "${f%.c}").o"
  objs+=("$o"); jobs+=("$f $o -Wno-unused-parameter")
done
printf '%s\n' "${jobs[@]}" | xargs -P "$(nproc)" -L 1 bash -c 'compile "$0" "$1" "$2"'
rm -f "$B/libsm_fuzz.a"
ar rcs "$B/libsm_fuzz.a" "${objs[@]}"

for t in fuzz/fuzz_*.c; do
  n=$(basename "${t%.c}")
  # shellcheck disable=SC2086
  $CC $CFLAGS -fsanitize=fuzzer "$t" "$B/libsm_fuzz.a" $PBC_LIBS -lsnappy -lm -o "$B/$n"
  echo "built $B/$n"
done

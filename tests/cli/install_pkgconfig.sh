#!/usr/bin/env bash
# `make install` puts the library, headers, savedmodel.pc, the CMake package config and the CLI
# (with its man page and bash completion) under a prefix, and a program built with
# `pkg-config --cflags --libs savedmodel`, or with CMake's find_package(savedmodel), reads a
# SavedModel with them.
set -euo pipefail
cli=$1 src=$2
build=$(dirname "$cli")
if grep -q '^SM_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: a sanitizer build is not installed for plain programs"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
test -x "$tmp/prefix/bin/savedmodel"
test -s "$tmp/prefix/share/man/man1/savedmodel.1"
test -s "$tmp/prefix/share/bash-completion/completions/savedmodel"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cat > "$tmp/t.c" <<'C'
#include <stdio.h>
#include <savedmodel/format.h>
#include <savedmodel/constants.h>
int main(int argc, char **argv) {
  (void)argc;
  Tensorflow__SavedModel *sm;
  sm_status *s = sm_saved_model_read(argv[1], &sm);
  if (s) { fprintf(stderr, "%s\n", sm_status_message(s)); sm_status_free(s); return 1; }
  const char *tags[] = {SM_TAG_SERVE};
  const Tensorflow__MetaGraphDef *mg;
  s = sm_saved_model_find_meta_graph(sm, tags, 1, &mg);
  printf("%zu meta graphs, serve found: %s\n", sm->n_meta_graphs, s ? "no" : "yes");
  sm_status_free(s);
  sm_saved_model_free(sm);
  return 0;
}
C
cc -std=c11 -Wall -Werror "$tmp/t.c" $(pkg-config --cflags --libs savedmodel) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/t"
out=$("$tmp/t" "$src/tests/fixtures/zoo/tf1_multi_tags/model")
echo "$out"
[ "$out" = "3 meta graphs, serve found: yes" ]

# The same install through CMake: find_package(savedmodel) gives savedmodel::savedmodel; the
# program includes only the umbrella header.
test -f "$tmp/prefix/lib/cmake/savedmodel/savedmodelConfig.cmake"
mkdir "$tmp/consumer"
cat > "$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(consumer LANGUAGES C)
find_package(savedmodel 0.1 REQUIRED)
add_executable(t t.c)
target_link_libraries(t PRIVATE savedmodel::savedmodel)
add_executable(t_static t.c)
target_link_libraries(t_static PRIVATE savedmodel::savedmodel_static)
CM
sed 's|#include <savedmodel/format.h>|#include <savedmodel/savedmodel.h>|; /#include <savedmodel\/constants.h>/d' "$tmp/t.c" > "$tmp/consumer/t.c"
grep -q '^#include <savedmodel/savedmodel.h>$' "$tmp/consumer/t.c"
[ "$(grep -c '#include <savedmodel/' "$tmp/consumer/t.c")" = 1 ]
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_C_FLAGS="-Wall -Werror" \
  -DCMAKE_BUILD_RPATH="$tmp/prefix/lib" > "$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; exit 1; }
cmake --build "$tmp/consumer/build" >> "$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; exit 1; }
for exe in t t_static; do
  out=$("$tmp/consumer/build/$exe" "$src/tests/fixtures/zoo/tf1_multi_tags/model")
  echo "cmake $exe: $out"
  [ "$out" = "3 meta graphs, serve found: yes" ]
done
# the shared one really is the installed libsavedmodel.so
libs=$(ldd "$tmp/consumer/build/t")
grep -q "$tmp/prefix/lib/libsavedmodel.so" <<<"$libs" || { echo "$libs"; exit 1; }

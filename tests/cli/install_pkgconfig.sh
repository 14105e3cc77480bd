#!/usr/bin/env bash
# `make install` puts the library, headers, savedmodel.pc and the CLI under a prefix, and a
# program built with `pkg-config --cflags --libs savedmodel` reads a SavedModel with them.
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

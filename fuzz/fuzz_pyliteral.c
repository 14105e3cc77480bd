/* fuzz_pyliteral.c - libFuzzer target: bytes as a Python literal (--input_exprs, --input_examples).
 *
 * The text (cut at its first NUL, as argv would) is parsed; a value that parses is printed the way
 * Python's str() prints it, into a memory stream, which walks every node of the tree.
 * tests/unit/test_fuzz_regressions.c includes this file with FUZZ_PYLITERAL_ENTRY renamed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/pyliteral.h"

#ifndef FUZZ_PYLITERAL_ENTRY
#define FUZZ_PYLITERAL_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_PYLITERAL_ENTRY(const uint8_t *data, size_t size);

int FUZZ_PYLITERAL_ENTRY(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) abort();
  memcpy(text, data, size);
  text[size] = 0;
  py_value *v = NULL;
  sm_status *s = sm__py_literal_parse(text, &v);
  if (s) {
    if (v) abort(); /* no value on error */
    (void)sm_status_message(s);
    sm_status_free(s);
  } else {
    if (!v) abort();
    (void)py_type_name(v);
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (f) {
      py_value_print(f, v);
      fclose(f);
    }
    free(buf);
  }
  py_value_free(v);
  free(text);
  return 0;
}

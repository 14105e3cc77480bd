/* pyliteral.h - Python literals as ast.literal_eval accepts them, parsed, never evaluated.
 *
 * saved_model_cli passes --input_exprs and --input_examples through ast.literal_eval; this is the
 * same language: numbers (ints of any size, floats, complex via 1+2j), strings and bytes (every
 * prefix but f, escapes, implicit concatenation), True/False/None, tuples, lists, dicts, sets and
 * set(). Anything else (names, calls, operators, np.ones(...)) is an error naming the offset. */
#ifndef SM_CLI_PYLITERAL_H
#define SM_CLI_PYLITERAL_H

#include <stddef.h>
#include <stdint.h>

#include "savedmodel/status.h"

typedef enum {
  PY_INT, PY_FLOAT, PY_COMPLEX, PY_BOOL, PY_NONE, PY_STR, PY_BYTES, PY_LIST, PY_TUPLE, PY_DICT, PY_SET
} py_kind;

typedef struct py_value {
  py_kind kind;
  /* PY_INT: i when it fits int64; big = 1 when it does not (u holds it when it fits uint64,
   * u_ok says so); f is its value as a double in every case. PY_BOOL: i is 0 or 1. */
  int64_t i;
  uint64_t u;
  int big, u_ok;
  double f, im; /* PY_FLOAT f; PY_COMPLEX f + im*j */
  char *s;      /* PY_STR (UTF-8) / PY_BYTES contents, NUL-terminated for convenience */
  size_t len;
  struct py_value **items; /* list/tuple/set elements; dict: key0, value0, key1, value1, ... */
  size_t n;                /* element count (dict: pairs x 2) */
} py_value;

/* Parses `text` as literal_eval would. On error the message names the offset (1-based) and what
 * was expected. The caller owns *out (py_value_free). */
sm_status *sm__py_literal_parse(const char *text, py_value **out);
void py_value_free(py_value *v); /* NULL-safe */

/* Python's type name of v ("list", "float", ...) for messages. */
const char *py_type_name(const py_value *v);
/* str(v) the way Python prints it, written to f. */
#include <stdio.h>
void py_value_print(FILE *f, const py_value *v);

#endif

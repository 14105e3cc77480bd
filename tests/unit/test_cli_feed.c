/* test_cli_feed.c - the `savedmodel run` input side without a model: the Python literal parser
 * (what ast.literal_eval accepts and refuses), np.asarray-style conversion to each dtype, npy
 * casts, tf.Example encoding, and numpy printing of the results. The CLI's sources are compiled
 * in here because the CLI is not a library. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cli/feed.c"
#include "../../src/cli/print_value.c"
#include "../../src/cli/pyfmt.c"
#include "../../src/cli/pyliteral.c"
#include "test.h"

/* str(np.asarray(literal, dtype)) as print() shows it, or the error message. */
static char *convert(const char *text, int dtype) {
  static char out[4096];
  py_value *v;
  sm_status *st = sm__py_literal_parse(text, &v);
  if (!st) {
    sm_tensor *t;
    st = sm__cli_literal_to_tensor(v, dtype, "x", &t);
    py_value_free(v);
    if (!st) {
      FILE *m = fmemopen(out, sizeof out, "w");
      sm__cli_print_numpy(m, t);
      fclose(m);
      size_t l = strlen(out);
      if (l && out[l - 1] == '\n') out[l - 1] = 0;
      sm_tensor_free(t);
      return out;
    }
  }
  snprintf(out, sizeof out, "ERR %s", sm_status_message(st));
  sm_status_free(st);
  return out;
}

#define EXPECT(text, dtype, want) CHECK_EQ_STR(convert(text, dtype), want)
#define EXPECT_ERR(text, dtype, needle)                                              \
  do {                                                                               \
    const char *_g = convert(text, dtype);                                           \
    if (strncmp(_g, "ERR ", 4) != 0 || !strstr(_g, needle)) {                        \
      fprintf(stderr, "%s:%d: %s -> \"%s\", want error with \"%s\"\n", __FILE__, __LINE__, text, _g, needle); \
      sm_test_failures++;                                                            \
    }                                                                                \
  } while (0)

static void test_literals(void) {
  /* outputs as numpy 2.4 prints np.asarray(literal, dtype) */
  EXPECT("[[1.0],[2.0]]", SM_FLOAT, "[[1.]\n [2.]]");
  EXPECT("[1, 2.5, True]", SM_DOUBLE, "[1.  2.5 1. ]");
  EXPECT("(1, 2)", SM_INT64, "[1 2]");
  EXPECT("1, 2", SM_INT32, "[1 2]");
  EXPECT("  7", SM_INT32, "7");
  EXPECT("-3", SM_INT8, "-3");
  EXPECT("[1.7, -1.7]", SM_INT32, "[ 1 -1]");
  EXPECT("[True, 2.5]", SM_INT32, "[1 2]");
  EXPECT("0x1F", SM_INT64, "31");
  EXPECT("0o17 ", SM_INT64, "15");
  EXPECT("0b101", SM_INT64, "5");
  EXPECT("1_000", SM_INT64, "1000");
  EXPECT("[.5, 1e3, 1.5E-1]", SM_FLOAT, "[5.0e-01 1.0e+03 1.5e-01]");
  EXPECT("[]", SM_FLOAT, "[]");
  EXPECT("[[], []]", SM_FLOAT, "[]");
  EXPECT("[None]", SM_FLOAT, "[nan]");
  EXPECT("['1.5', b' 2 ']", SM_FLOAT, "[1.5 2. ]");
  EXPECT("['12']", SM_INT32, "[12]");
  EXPECT("['True', 'False', '']", SM_BOOL, "[ True  True False]");
  EXPECT("[0, 3, -1]", SM_BOOL, "[False  True  True]");
  EXPECT("[1+2j, -1.5j]", SM_COMPLEX64, "[ 1.+2.j  -0.-1.5j]");
  EXPECT("[b'a', 'h\\u00e9', r'\\n', 'x' 'y']", SM_STRING, "[b'a' b'h\\xc3\\xa9' b'\\\\n' b'xy']");
  EXPECT("'''tri'ple'''", SM_STRING, "b\"tri'ple\"");
  EXPECT("b'\\x00\\101'", SM_STRING, "b'\\x00A'");
  EXPECT("18446744073709551615", SM_UINT64, "18446744073709551615");
  EXPECT("-9223372036854775808", SM_INT64, "-9223372036854775808");
  EXPECT_ERR("2**3", SM_INT32, "unexpected '*'");
  EXPECT("65504.0", SM_HALF, "6.55e+04");
  EXPECT("[1e5]", SM_HALF, "[inf]");
  EXPECT("999", SM_HALF, "999.0");
  EXPECT("0.0001", SM_FLOAT, "1e-04");
  EXPECT("0.0001", SM_HALF, "0.0001");
  EXPECT("9.9e15", SM_FLOAT, "9.9e+15");
  EXPECT("999999", SM_FLOAT, "999999.0");
  EXPECT("1234567", SM_FLOAT, "1.234567e+06");
  EXPECT("1e15", SM_DOUBLE, "1000000000000000.0");
  EXPECT("(1)", SM_INT32, "1");
  EXPECT("[1, # comment\n 2]", SM_INT32, "[1 2]");

  EXPECT_ERR("[300]", SM_UINT8, "Python integer 300 out of bounds for uint8");
  EXPECT_ERR("[-1.5]", SM_UINT8, "Python integer -1 out of bounds for uint8");
  EXPECT_ERR("[1e20]", SM_INT32, "too large");
  EXPECT_ERR("float('nan')", SM_FLOAT, "'float' is a name");
  EXPECT_ERR("[1.5]", SM_STRING, "string input");
  EXPECT_ERR("['1.5']", SM_INT32, "invalid literal for int()");
  EXPECT_ERR("['0x10']", SM_FLOAT, "could not convert string to float");
  EXPECT_ERR("[1+2j]", SM_FLOAT, "not 'complex'");
  EXPECT_ERR("[[1], [2, 3]]", SM_FLOAT, "inhomogeneous");
  EXPECT_ERR("[[1], 2]", SM_FLOAT, "inhomogeneous");
  EXPECT_ERR("[1, [2]]", SM_FLOAT, "inhomogeneous");
  EXPECT_ERR("{'a': 1}", SM_FLOAT, "dict is not an array element");
  EXPECT_ERR("[1, 2", SM_FLOAT, "'[' was never closed");
  EXPECT_ERR("[1 2]", SM_FLOAT, "expected ','");
  EXPECT_ERR("01", SM_INT32, "leading zeros");
  EXPECT_ERR("1 + 2", SM_INT32, "real + imaginary");
  EXPECT_ERR("--1", SM_INT32, "unexpected character");
  EXPECT_ERR("-True", SM_INT32, "non-number");
  EXPECT_ERR("'abc", SM_STRING, "unterminated");
  EXPECT_ERR("b'\\xff' 'a'", SM_STRING, "mix bytes");
  EXPECT_ERR("b'\xc3\xa9'", SM_STRING, "ASCII");
  EXPECT_ERR("'\\ud800'", SM_STRING, "surrogate");
  EXPECT_ERR("f'x'", SM_STRING, "f-strings");
  EXPECT_ERR("__import__('os').system('true')", SM_INT32, "is a name");
  EXPECT_ERR("", SM_INT32, "unexpected end");
  EXPECT_ERR("1 2", SM_INT32, "unexpected '2'");
  EXPECT_ERR("1abc", SM_INT32, "invalid decimal literal");

  /* deep nesting: an error, no stack overflow */
  char deep[20001];
  memset(deep, '[', 10000);
  memset(deep + 10000, ']', 10000);
  deep[20000] = 0;
  EXPECT_ERR(deep, SM_FLOAT, "too many nested");
  /* 64 levels is the tensor rank limit */
  char r65[200];
  memset(r65, '[', 65);
  r65[65] = '1';
  memset(r65 + 66, ']', 65);
  r65[131] = 0;
  EXPECT_ERR(r65, SM_FLOAT, "nested lists");
}

static void test_cast(void) {
  int64_t d = 5;
  sm_tensor *t, *r;
  CHECK_OK(sm_tensor_new(SM_DOUBLE, 1, &d, &t));
  double v[5] = {1.7, -1.7, 300.5, NAN, 1e20};
  memcpy(sm_tensor_data(t), v, sizeof v);
  CHECK_OK(sm__cli_cast_tensor(t, SM_INT32, "x", &r));
  int32_t *i = sm_tensor_data(r);
  CHECK(i[0] == 1 && i[1] == -1 && i[2] == 300 && i[3] == INT32_MIN && i[4] == INT32_MIN);
  sm_tensor_free(r);
  CHECK_OK(sm__cli_cast_tensor(t, SM_UINT8, "x", &r));
  uint8_t *u = sm_tensor_data(r);
  CHECK(u[0] == 1 && u[1] == 255 && u[2] == 44);
  sm_tensor_free(r);
  CHECK_OK(sm__cli_cast_tensor(t, SM_FLOAT, "x", &r));
  CHECK(((float *)sm_tensor_data(r))[0] == 1.7f);
  sm_tensor_free(r);
  CHECK_OK(sm__cli_cast_tensor(t, SM_DOUBLE, "x", &r));
  CHECK(r == t); /* same dtype: the same tensor, one more reference */
  sm_tensor_free(r);
  CHECK_ERR(sm__cli_cast_tensor(t, SM_STRING, "x", &r), "string tensor");
  sm_tensor_free(t);

  CHECK_OK(sm_tensor_new(SM_STRING, 1, &d, &t));
  const char *s[5] = {"1", " 2 ", "-3", "4", "5"};
  for (int k = 0; k < 5; k++) CHECK_OK(sm_tensor_set_string(t, k, s[k], strlen(s[k])));
  CHECK_OK(sm__cli_cast_tensor(t, SM_INT64, "x", &r));
  CHECK(((int64_t *)sm_tensor_data(r))[2] == -3);
  sm_tensor_free(r);
  CHECK_OK(sm_tensor_set_string(t, 4, "x", 1));
  CHECK_ERR(sm__cli_cast_tensor(t, SM_FLOAT, "x", &r), "could not convert string to float: 'x'");
  sm_tensor_free(t);
}

static void test_examples(void) {
  py_value *v;
  sm_tensor *t;
  /* bytes from TF: example_pb2 with x float_list [1.0], s bytes_list [b'a'], i int64_list [3] */
  CHECK_OK(sm__py_literal_parse("[{'x': [1.0], 's': [b'a'], 'i': [3]}, {}]", &v));
  CHECK_OK(sm__cli_examples_to_tensor(v, "inputs", &t));
  py_value_free(v);
  CHECK_EQ_INT(sm_tensor_num_elements(t), 2);
  size_t l;
  const char *b = sm_tensor_string(t, 0, &l);
  /* TF's bytes hold the same three entries; Python orders map entries by its hash table, we by
   * insertion (both parse the same) */
  static const char want[] = "\x0a\x27"
                             "\x0a\x0d\x0a\x01x\x12\x08\x12\x06\x0a\x04\x00\x00\x80\x3f"
                             "\x0a\x0a\x0a\x01s\x12\x05\x0a\x03\x0a\x01\x61"
                             "\x0a\x0a\x0a\x01i\x12\x05\x1a\x03\x0a\x01\x03";
  CHECK(l == sizeof want - 1 && memcmp(b, want, l) == 0);
  sm_tensor_string(t, 1, &l);
  CHECK(l == 0); /* an empty dict serializes to nothing, as in Python */
  sm_tensor_free(t);
  CHECK_OK(sm__py_literal_parse("{'x': [1.0]}", &v));
  CHECK_ERR(sm__cli_examples_to_tensor(v, "inputs", &t), "must be a list of dictionaries");
  py_value_free(v);
  CHECK_OK(sm__py_literal_parse("[{'x': 1.0}]", &v));
  CHECK_ERR(sm__cli_examples_to_tensor(v, "inputs", &t), "feature value must be a list");
  py_value_free(v);
  CHECK_OK(sm__py_literal_parse("[{'x': []}]", &v));
  CHECK_ERR(sm__cli_examples_to_tensor(v, "inputs", &t), "empty list");
  py_value_free(v);
  CHECK_OK(sm__py_literal_parse("[{'x': [1, 2.5]}]", &v));
  CHECK_ERR(sm__cli_examples_to_tensor(v, "inputs", &t), "in an int64 list");
  py_value_free(v);
  CHECK_OK(sm__py_literal_parse("[{'x': [None]}]", &v));
  CHECK_ERR(sm__cli_examples_to_tensor(v, "inputs", &t), "not supported for tf.train.Feature");
  py_value_free(v);
}

int main(void) {
  test_literals();
  test_cast();
  test_examples();
  TEST_MAIN_END();
}

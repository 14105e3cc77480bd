/* test.h - a tiny test harness: CHECK macros that print both sides, and a skip exit code.
 * Each tests/unit/test_*.c is one executable; ctest treats exit code 77 as "skipped". */
#ifndef SM_TEST_H
#define SM_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/status.h"

static int sm_test_failures;

#define CHECK(c)                                                          \
  do {                                                                    \
    if (!(c)) {                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
      sm_test_failures++;                                                 \
    }                                                                     \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                        \
  do {                                                                                            \
    long long _a = (long long)(a), _b = (long long)(b);                                           \
    if (_a != _b) {                                                                               \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", __FILE__, __LINE__, #a, #b, _a, _b); \
      sm_test_failures++;                                                                         \
    }                                                                                             \
  } while (0)

#define CHECK_EQ_STR(a, b)                                                                        \
  do {                                                                                            \
    const char *_a = (a), *_b = (b);                                                              \
    if (!_a || !_b || strcmp(_a, _b) != 0) {                                                      \
      fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" vs \"%s\"\n", __FILE__, __LINE__, #a, #b,   \
              _a ? _a : "(null)", _b ? _b : "(null)");                                            \
      sm_test_failures++;                                                                         \
    }                                                                                             \
  } while (0)

/* The call must succeed; on failure print its message. */
#define CHECK_OK(expr)                                                                      \
  do {                                                                                      \
    sm_status *_s = (expr);                                                                 \
    if (_s) {                                                                               \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, sm_status_message(_s)); \
      sm_status_free(_s);                                                                   \
      sm_test_failures++;                                                                   \
    }                                                                                       \
  } while (0)

/* The call must fail with a message containing `needle`. Every message is also checked for a
 * doubled separator (": : ", a caller's prefix ending in ": " before the one sm_status_prefix adds). */
#define CHECK_ERR(expr, needle)                                                                 \
  do {                                                                                          \
    sm_status *_s = (expr);                                                                     \
    if (!_s) {                                                                                  \
      fprintf(stderr, "%s:%d: %s succeeded, expected error \"%s\"\n", __FILE__, __LINE__, #expr, needle); \
      sm_test_failures++;                                                                       \
    } else if (!strstr(sm_status_message(_s), needle)) {                                        \
      fprintf(stderr, "%s:%d: %s: error \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, #expr,      \
              sm_status_message(_s), needle);                                                   \
      sm_test_failures++;                                                                       \
    } else if (strstr(sm_status_message(_s), ": : ")) {                                         \
      fprintf(stderr, "%s:%d: %s: error \"%s\" has a doubled \": \"\n", __FILE__, __LINE__, #expr, \
              sm_status_message(_s));                                                           \
      sm_test_failures++;                                                                       \
    }                                                                                           \
    sm_status_free(_s);                                                                         \
  } while (0)

#define TEST_MAIN_END()                                                   \
  do {                                                                    \
    if (sm_test_failures) fprintf(stderr, "%d check(s) failed\n", sm_test_failures); \
    return sm_test_failures ? 1 : 0;                                      \
  } while (0)

#define SM_TEST_SKIP 77

#endif

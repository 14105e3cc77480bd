/* json_compare.h - compare two JSON texts as TF Serving's tests do (rapidjson's Value ==): objects
 * as key sets, numbers by value (so 3 equals 3.0), parsed with jansson. */
#ifndef SM_TEST_JSON_COMPARE_H
#define SM_TEST_JSON_COMPARE_H
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int sm_json_value_equal(json_t *a, json_t *b) {
  if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
  if (json_typeof(a) != json_typeof(b)) return 0;
  if (json_is_object(a)) {
    if (json_object_size(a) != json_object_size(b)) return 0;
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v) {
      json_t *w = json_object_get(b, k);
      if (!w || !sm_json_value_equal(v, w)) return 0;
    }
    return 1;
  }
  if (json_is_array(a)) {
    if (json_array_size(a) != json_array_size(b)) return 0;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!sm_json_value_equal(json_array_get(a, i), json_array_get(b, i))) return 0;
    return 1;
  }
  return json_equal(a, b);
}

/* 1 when equal; prints both texts otherwise. */
static int sm_json_text_equal(const char *got, const char *want) {
  json_error_t e;
  json_t *a = json_loads(got ? got : "", JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
  json_t *b = json_loads(want, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
  int eq = a && b && sm_json_value_equal(a, b);
  if (!eq) fprintf(stderr, "JSON differs:\n got: %s\nwant: %s\n", got ? got : "(null)", want);
  json_decref(a);
  json_decref(b);
  return eq;
}

#define CHECK_JSON(got, want) CHECK(sm_json_text_equal((got), (want)))

#endif

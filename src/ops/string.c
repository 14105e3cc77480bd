/* string.c - the string kernel family: StringLength (bytes or UTF-8 characters). */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct strlen_state {
  int utf8; /* unit "UTF8_CHAR": count code points, not bytes */
} strlen_state;

static sm_status *strlen_prepare(const sm_node *node, void **state) {
  const char *unit = "BYTE";
  size_t len = 4;
  if (sm__node_attr(node, "unit")) {
    sm_status *s = sm__node_attr_string(node, "unit", &unit, &len);
    if (s) return s;
  }
  int utf8 = len == 9 && memcmp(unit, "UTF8_CHAR", 9) == 0;
  if (!utf8 && !(len == 4 && memcmp(unit, "BYTE", 4) == 0))
    return sm_status_new(SM_INVALID_ARGUMENT, "unit must be BYTE or UTF8_CHAR, not '%.*s'", (int)len, unit);
  strlen_state *st = malloc(sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->utf8 = utf8;
  *state = st;
  return NULL;
}

static sm_status *strlen_compute(const void *state, sm_kctx *ctx) {
  const strlen_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "input must be a string tensor");
  sm_tensor *y;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_INT32, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (s) return s;
  int32_t *out = sm_tensor_data(y);
  for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) {
    size_t n;
    const unsigned char *p = (const unsigned char *)sm_tensor_string(x, i, &n);
    if (!st->utf8) {
      out[i] = (int32_t)n;
      continue;
    }
    int32_t chars = 0; /* as TF: every byte that is not a continuation byte starts a character */
    for (size_t k = 0; k < n; k++) chars += (p[k] & 0xC0) != 0x80;
    out[i] = chars;
  }
  return NULL;
}

const sm_kernel sm_kernels_string[] = {
    {"StringLength", strlen_prepare, strlen_compute, free, 0},
    {0},
};

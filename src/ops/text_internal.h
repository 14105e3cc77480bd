/* text_internal.h - what the text and ragged kernel families (text.c, unicode.c, ragged.c) share:
 * reading an int32/int64 tensor's elements, TF's shape wording in messages, and a growable byte
 * buffer over a compute's scratch. Header-only (static inline), internal to src/ops. */
#ifndef SM_OPS_TEXT_INTERNAL_H
#define SM_OPS_TEXT_INTERNAL_H
#include <stdint.h>
#include <string.h>

#include "runtime/kernel.h"

/* The system's ICU (libicuuc.so.N, the newest installed), opened once at first use by unicode.c:
 * the dlopen handle (NULL: none) and N, the suffix of its versioned symbols ("ucnv_open_72"). */
void *sm__icu_lib(int *version);
void *sm__icu_sym(void *h, const char *name, int version); /* name or name_N; NULL if absent */

/* tftext.c: TFText>RoundRobinTrim's checked inputs and the values each segment keeps per batch row
 * (used[b * nseg + k], scratch); also TFText>RoundRobinGenerateMasks' (tftext_more.c). */
sm_status *sm__tftext_rr_used(sm_kctx *ctx, const char *op, int64_t *nseg, int64_t *nb, int64_t **used);

/* Element i of an int32 or int64 tensor (callers check the dtype). */
static inline int64_t tx_int(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i]
                                        : ((const int64_t *)sm_tensor_data(t))[i];
}

static inline void tx_set_int(sm_tensor *t, int64_t i, int64_t v) {
  if (sm_tensor_dtype(t) == SM_INT32)
    ((int32_t *)sm_tensor_data(t))[i] = (int32_t)v;
  else
    ((int64_t *)sm_tensor_data(t))[i] = v;
}

static inline int tx_is_index(const sm_tensor *t) {
  return sm_tensor_dtype(t) == SM_INT32 || sm_tensor_dtype(t) == SM_INT64;
}

/* TF's TensorShape::DebugString: "[2,3]", "[]". */
typedef struct tx_shape {
  char s[160];
} tx_shape;
static inline tx_shape tx_shape_of(const sm_tensor *t) {
  tx_shape b;
  sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b.s, sizeof b.s);
  return b;
}

/* A byte buffer grown in the compute's scratch. */
typedef struct tx_buf {
  char *p;
  size_t len, cap;
} tx_buf;

static inline sm_status *tx_put(sm_kctx *ctx, tx_buf *b, const void *bytes, size_t n) {
  if (n > SIZE_MAX / 2 - b->len) return sm_status_new(SM_RESOURCE_EXHAUSTED, "string too long");
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n) cap *= 2;
    sm_status *s = NULL;
    char *p = sm__kctx_scratch_realloc(ctx, b->p, cap, &s);
    if (!p) return s;
    b->p = p, b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, bytes, n);
  b->len += n;
  return NULL;
}

#endif

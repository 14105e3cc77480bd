/* ctc.c - the ctc kernel family: CTCGreedyDecoder, as TF's ctc_decoder_ops.cc.
 *
 * inputs [max_time, batch, num_classes] (float or double logits), sequence_length [batch] int32.
 * Per batch entry, over its first sequence_length steps: the class of the largest logit (the
 * first on ties), dropped when it is the blank (blank_index, default num_classes - 1; negative
 * counts from the end) and, with merge_repeated, when it repeats the previous step's class. Outputs
 * the sparse result (indices [total, 2], values [total], dense_shape [batch, longest], all int64)
 * and log_probability [batch, 1]: minus the sum of the chosen logits. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

typedef struct ctc_state {
  int merge;
  int64_t blank;
} ctc_state;

static sm_status *ctc_prepare(const sm_node *node, void **state) {
  ctc_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->blank = -1;
  sm_status *st = sm__node_attr(node, "merge_repeated") ? sm__node_attr_bool(node, "merge_repeated", &s->merge) : NULL;
  if (!st && sm__node_attr(node, "blank_index")) st = sm__node_attr_int(node, "blank_index", &s->blank);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static double logit(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_FLOAT ? ((const float *)sm_tensor_data(t))[i] : ((const double *)sm_tensor_data(t))[i];
}

static sm_status *ctc_compute(const void *state, sm_kctx *ctx) {
  const ctc_state *s = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0), *len = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(in);
  if (dt != SM_FLOAT && dt != SM_DOUBLE) return sm_status_new(SM_INVALID_ARGUMENT, "CTCGreedyDecoder: inputs must be float or double");
  if (sm_tensor_rank(in) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "inputs is not a 3-Tensor");
  if (sm_tensor_rank(len) != 1 || sm_tensor_dtype(len) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "sequence_length is not a vector");
  const int64_t *d = sm_tensor_dims(in);
  int64_t T = d[0], B = d[1], C = d[2];
  if (B != sm_tensor_dims(len)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "len(sequence_length) != batch_size.  len(sequence_length):  %lld batch_size: %lld",
                         (long long)sm_tensor_dims(len)[0], (long long)B);
  const int32_t *sl = sm_tensor_data(len);
  for (int64_t b = 0; b < B; b++)
    if (sl[b] > T) return sm_status_new(SM_FAILED_PRECONDITION, "sequence_length(%lld) <= %lld", (long long)b, (long long)T);
  int64_t blank = s->blank < 0 ? s->blank + C : s->blank;
  if (blank < 0 || blank >= C)
    return sm_status_new(SM_INVALID_ARGUMENT, "blank_index expected to be between %lld and %lld but was %lld", (long long)-C,
                         (long long)(C - 1), (long long)s->blank);
  /* decode into scratch: at most T classes per batch entry */
  sm_status *st = NULL;
  int64_t *seq = sm__kctx_scratch(ctx, (size_t)(B * T + B + 1) * sizeof(int64_t), &st);
  if (!seq) return st;
  int64_t *count = seq + B * T, total = 0, longest = 0;
  sm_tensor *logp;
  if ((st = sm__kctx_alloc_output(ctx, 3, dt, 2, (int64_t[]){B, 1}, &logp))) goto out;
  for (int64_t b = 0; b < B; b++) {
    int64_t prev = -1, k = 0;
    double lp = 0;
    float lpf = 0; /* TF sums in the input's type */
    for (int64_t t = 0; t < sl[b]; t++) {
      int64_t base = (t * B + b) * C, best = 0;
      for (int64_t c = 1; c < C; c++)
        if (logit(in, base + c) > logit(in, base + best)) best = c;
      lp -= logit(in, base + best);
      lpf -= (float)logit(in, base + best);
      if (best != blank && !(s->merge && best == prev)) seq[b * T + k++] = best;
      prev = best;
    }
    count[b] = k;
    total += k;
    longest = k > longest ? k : longest;
    if (dt == SM_FLOAT) ((float *)sm_tensor_data(logp))[b] = lpf;
    else ((double *)sm_tensor_data(logp))[b] = lp;
  }
  sm_tensor *ix, *vals, *shape;
  if ((st = sm__kctx_alloc_output(ctx, 0, SM_INT64, 2, (int64_t[]){total, 2}, &ix)) ||
      (st = sm__kctx_alloc_output(ctx, 1, SM_INT64, 1, &total, &vals)) ||
      (st = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, (int64_t[]){2}, &shape)))
    goto out;
  int64_t *ip = sm_tensor_data(ix), *vp = sm_tensor_data(vals), o = 0;
  for (int64_t b = 0; b < B; b++)
    for (int64_t k = 0; k < count[b]; k++, o++) {
      ip[2 * o] = b;
      ip[2 * o + 1] = k;
      vp[o] = seq[b * T + k];
    }
  ((int64_t *)sm_tensor_data(shape))[0] = B;
  ((int64_t *)sm_tensor_data(shape))[1] = longest;
out:
  sm__kctx_scratch_free(ctx, seq);
  return st;
}

const sm_kernel sm_kernels_ctc[] = {
    {"CTCGreedyDecoder", ctc_prepare, ctc_compute, free, 0},
    {0},
};

/* ctc.c - the ctc kernel family: CTCGreedyDecoder and CTCBeamSearchDecoder, as TF's
 * ctc_decoder_ops.cc + ctc_beam_search.h (default scorer, no label selection), and CTCLoss, as TF's
 * ctc_loss_op.cc + ctc_loss_calculator.h (the forward-backward recursions of Graves' thesis ch. 7 in
 * log space, below).
 *
 * inputs [max_time, batch, num_classes] (float or double logits), sequence_length [batch] int32.
 * Per batch entry, over its first sequence_length steps: the class of the largest logit (the
 * first on ties), dropped when it is the blank (blank_index, default num_classes - 1; negative
 * counts from the end) and, with merge_repeated, when it repeats the previous step's class. Outputs
 * the sparse result (indices [total, 2], values [total], dense_shape [batch, longest], all int64)
 * and log_probability [batch, 1]: minus the sum of the chosen logits. */
#include <math.h>
#include <stdio.h>
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

/* ---- CTCLoss ----
 * inputs [max_time, batch, num_classes] logits (float or double), labels_indices [n, 2] int64 and
 * labels_values [n] int32 (a SparseTensor of the label sequences, rows in order), sequence_length
 * [batch] int32. The blank is num_classes - 1; a label >= it ends a sequence (a real label after one
 * is an error). Per batch entry: the softmax over classes at each step (in T: x - max, exp, / sum),
 * l' = the labels with a blank before each and one at the end (repeats collapsed first with
 * preprocess_collapse_repeated), log alpha / log beta over (u, t) with the reachable band only,
 * loss = -log p(z|x) = -logsumexp_u(alpha(u, 0) + beta(u, 0)), and the gradient wrt the logits:
 * y(l, t) - exp(logsumexp over u with l'(u) = l of alpha + beta - log p) (that exp in float even
 * for double, as TF's expf, and so are its log-sum-exps; y itself where no path exists). An entry with sequence_length 0, or
 * labels longer than it with ignore_longer_outputs_than_inputs, gets loss 0 and a zero gradient.
 * TF's checks and messages, in its order. */
typedef struct ctc_loss_state {
  int collapse, merge, ignore_longer;
} ctc_loss_state;

static sm_status *ctc_loss_prepare(const sm_node *node, void **state) {
  ctc_loss_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->merge = 1;
  sm_status *st = NULL;
  if (sm__node_attr(node, "preprocess_collapse_repeated"))
    st = sm__node_attr_bool(node, "preprocess_collapse_repeated", &s->collapse);
  if (!st && sm__node_attr(node, "ctc_merge_repeated")) st = sm__node_attr_bool(node, "ctc_merge_repeated", &s->merge);
  if (!st && sm__node_attr(node, "ignore_longer_outputs_than_inputs"))
    st = sm__node_attr_bool(node, "ignore_longer_outputs_than_inputs", &s->ignore_longer);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* "1,2,3" of n ints, cut short to fit. */
static void join_ints(const int32_t *v, int64_t n, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int64_t i = 0; i < n && o + 16 < cap; i++) o += (size_t)snprintf(buf + o, cap - o, "%s%d", i ? "," : "", (int)v[i]);
}

/* One batch entry's loss and gradient in type T (EXP, LOG: its libm functions). The log-sum-exp
 * of two log probabilities is a + log1pf(expf(b - a)) in float for double too, as TF's
 * ctc_loss_util.h has it. */
#define DEF_CTC_LOSS(NAME, T, EXP, LOG)                                                                   \
  static T NAME##_lse(T a, T b) {                                                                               \
    if (a == -(T)INFINITY) return b;                                                                            \
    if (b == -(T)INFINITY) return a;                                                                            \
    return a > b ? a + (T)log1pf(expf((float)(b - a))) : b + (T)log1pf(expf((float)(a - b)));                   \
  }                                                                                                             \
  static void NAME(const T *in, T *grad, int64_t B, int64_t C, int64_t b, int64_t Tn, const int32_t *lp, int U, \
                   int merge, T *y, T *la, T *lb, T *ps, T *loss) {                                             \
    const T NEG = -(T)INFINITY;                                                                                 \
    const int blank = (int)(C - 1);                                                                             \
    for (int64_t t = 0; t < Tn; t++) { /* y(c, t) at y[t * C + c] */                                           \
      const T *x = in + (t * B + b) * C;                                                                        \
      T mx = x[0], sum = 0;                                                                                     \
      for (int64_t c = 1; c < C; c++) mx = x[c] > mx ? x[c] : mx;                                               \
      for (int64_t c = 0; c < C; c++) sum += (y[t * C + c] = EXP(x[c] - mx));                                   \
      for (int64_t c = 0; c < C; c++) y[t * C + c] = y[t * C + c] / sum;                                        \
    }                                                                                                           \
    for (int64_t i = 0; i < (int64_t)U * Tn; i++) la[i] = lb[i] = NEG; /* (u, t) at u * Tn + t */              \
    la[0] = LOG(y[blank]);                                                                                      \
    if (U > 1) la[Tn] = LOG(y[lp[1]]);                                                                          \
    for (int64_t t = 1; t < Tn; t++) {                                                                          \
      int64_t u0 = U - 2 * (Tn - t), u1 = 2 * (t + 1);                                                          \
      for (int64_t u = u0 > 0 ? u0 : 0; u < (u1 < U ? u1 : U); u++) {                                           \
        T s = NEG;                                                                                              \
        if (merge || lp[u] == blank) s = la[u * Tn + t - 1];                                                    \
        if (u > 0) s = NAME##_lse(s, la[(u - 1) * Tn + t - 1]);                                                 \
        if (u > 1 && lp[u] != blank && !(merge && lp[u] == lp[u - 2])) s = NAME##_lse(s, la[(u - 2) * Tn + t - 1]); \
        la[u * Tn + t] = LOG(y[t * C + lp[u]]) + s;                                                             \
      }                                                                                                         \
    }                                                                                                           \
    for (int u = U - 2 > 0 ? U - 2 : 0; u < U; u++) lb[u * Tn + Tn - 1] = 0;                                   \
    for (int64_t t = Tn - 2; t >= 0; t--) {                                                                     \
      int64_t u0 = U - 2 * (Tn - t), u1 = 2 * (t + 1);                                                          \
      for (int64_t u = u0 > 0 ? u0 : 0; u < (u1 < U ? u1 : U); u++) {                                           \
        T *o = &lb[u * Tn + t];                                                                                 \
        const T *yn = y + (t + 1) * C;                                                                          \
        if (merge || lp[u] == blank) *o = NAME##_lse(*o, lb[u * Tn + t + 1] + LOG(yn[lp[u]]));                  \
        if (u + 1 < U) *o = NAME##_lse(*o, lb[(u + 1) * Tn + t + 1] + LOG(yn[lp[u + 1]]));                      \
        if (u + 2 < U && lp[u] != blank && !(merge && lp[u] == lp[u + 2]))                                      \
          *o = NAME##_lse(*o, lb[(u + 2) * Tn + t + 1] + LOG(yn[lp[u + 2]]));                                   \
      }                                                                                                         \
    }                                                                                                           \
    T lpzx = NEG;                                                                                               \
    for (int u = 0; u < U; u++) lpzx = NAME##_lse(lpzx, la[u * Tn] + lb[u * Tn]);                               \
    *loss = -lpzx;                                                                                              \
    for (int64_t t = 0; t < Tn; t++) {                                                                          \
      T *g = grad + (t * B + b) * C;                                                                            \
      if (lpzx == NEG) { /* no valid path: the softmax itself */                                                \
        for (int64_t c = 0; c < C; c++) g[c] = y[t * C + c];                                                    \
        continue;                                                                                               \
      }                                                                                                         \
      for (int64_t c = 0; c < C; c++) ps[c] = NEG;                                                              \
      for (int u = 0; u < U; u++) ps[lp[u]] = NAME##_lse(ps[lp[u]], la[u * Tn + t] + lb[u * Tn + t]);          \
      for (int64_t c = 0; c < C; c++) g[c] = y[t * C + c] - (T)expf((float)(ps[c] - lpzx));                    \
    }                                                                                                           \
  }
DEF_CTC_LOSS(ctc_loss_f32, float, expf, logf)
DEF_CTC_LOSS(ctc_loss_f64, double, exp, log)

static sm_status *ctc_loss_compute(const void *state, sm_kctx *ctx) {
  const ctc_loss_state *s = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0), *ix = sm__kctx_input(ctx, 1), *vals = sm__kctx_input(ctx, 2),
                  *len = sm__kctx_input(ctx, 3);
  int dt = sm_tensor_dtype(in);
  if (dt != SM_FLOAT && dt != SM_DOUBLE) return sm_status_new(SM_INVALID_ARGUMENT, "CTCLoss: inputs must be float or double");
  if (sm_tensor_rank(in) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "inputs is not a 3-Tensor");
  if (sm_tensor_rank(len) != 1 || sm_tensor_dtype(len) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "sequence_length is not a vector");
  if (sm_tensor_rank(ix) != 2 || sm_tensor_dtype(ix) != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "labels_indices is not a matrix");
  if (sm_tensor_rank(vals) != 1 || sm_tensor_dtype(vals) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "labels_values is not a vector");
  const int64_t *d = sm_tensor_dims(in);
  int64_t Tm = d[0], B = d[1], C = d[2];
  if (C > INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "num_classes cannot exceed max int");
  if (C < 1) return sm_status_new(SM_INVALID_ARGUMENT, "CTCLoss: num_classes must be >= 1 (the blank is the last class)");
  if (B != sm_tensor_dims(len)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "len(sequence_length) != batch_size.  len(sequence_length):  %lld batch_size: %lld",
                         (long long)sm_tensor_dims(len)[0], (long long)B);
  int64_t n = sm_tensor_dims(ix)[0];
  if (n != sm_tensor_dims(vals)[0])
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "labels_indices and labels_values must contain the same number of rows, but saw shapes: [%lld,%lld] "
                         "vs. [%lld]",
                         (long long)n, (long long)sm_tensor_dims(ix)[1], (long long)sm_tensor_dims(vals)[0]);
  if (B == 0) return sm_status_new(SM_INVALID_ARGUMENT, "batch_size must not be 0");
  if (sm_tensor_dims(ix)[1] != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "labels_indices should have 2 columns (batch, position), has %lld",
                         (long long)sm_tensor_dims(ix)[1]);
  const int64_t *ip = sm_tensor_data(ix);
  const int32_t *vp = sm_tensor_data(vals), *sl = sm_tensor_data(len);
  int64_t maxlen = 0;
  for (int64_t i = 0; i < n; i++) maxlen = ip[2 * i + 1] + 1 > maxlen ? ip[2 * i + 1] + 1 : maxlen;
  for (int64_t i = 0; i < n; i++) { /* SparseTensor::IndicesValid over [batch, maxlen] */
    const int64_t *r = ip + 2 * i;
    if (r[0] < 0 || r[0] >= B || r[1] < 0 || r[1] >= maxlen)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "label SparseTensor is not valid: indices[%lld] = [%lld,%lld] is out of bounds: need 0 <= "
                           "index < [%lld,%lld]",
                           (long long)i, (long long)r[0], (long long)r[1], (long long)B, (long long)maxlen);
    if (i && (r[0] < r[-2] || (r[0] == r[-2] && r[1] <= r[-1])))
      return sm_status_new(SM_INVALID_ARGUMENT, "label SparseTensor is not valid: indices[%lld] = [%lld,%lld] is %s",
                           (long long)i, (long long)r[0], (long long)r[1],
                           r[0] == r[-2] && r[1] == r[-1] ? "repeated" : "out of order");
  }
  for (int64_t b = 0; b < B; b++)
    if (sl[b] > Tm) return sm_status_new(SM_INVALID_ARGUMENT, "sequence_length(%lld) <= %lld", (long long)b, (long long)Tm);
  for (int64_t b = 0; b < B; b++) {
    if (sl[b] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "seq_len(%lld) < 0", (long long)b);
  }
  /* each entry's labels: the run of rows with its batch index (rows are sorted) */
  sm_status *st = NULL;
  int64_t *start = sm__kctx_scratch(ctx, (size_t)(2 * B + 1) * sizeof *start, &st);
  if (!start) return st;
  int64_t *cnt = start + B, maxu = 1;
  for (int64_t b = 0; b < B; b++) start[b] = cnt[b] = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!cnt[ip[2 * i]]) start[ip[2 * i]] = i;
    cnt[ip[2 * i]]++;
  }
  char buf[512], buf2[512];
  int32_t *kept = st ? NULL : malloc((size_t)(n + 1) * sizeof *kept);
  if (!st && !kept) st = sm_status_new(SM_RESOURCE_EXHAUSTED, "CTCLoss: out of memory");
  for (int64_t b = 0; b < B && !st; b++) { /* PopulateLPrimes' checks */
    const int32_t *lab = vp + start[b];
    if (!cnt[b]) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "Labels length is zero in batch %lld", (long long)b);
      break;
    }
    int fin = 0;
    int64_t nl = 0;
    for (int64_t i = 0; i < cnt[b] && !st; i++) {
      if (i && s->collapse && lab[i] == lab[i - 1]) continue;
      if (lab[i] >= C - 1) {
        fin = 1;
      } else if (fin) {
        join_ints(lab, cnt[b], buf, sizeof buf);
        join_ints(kept, nl, buf2, sizeof buf2);
        st = sm_status_new(SM_INVALID_ARGUMENT,
                           "Saw a non-null label (index >= num_classes - 1) following a null label, batch: %lld "
                           "num_classes: %lld labels: %s labels seen so far: %s",
                           (long long)b, (long long)C, buf, buf2);
      } else {
        kept[nl++] = lab[i];
      }
    }
    for (int64_t i = 0; i < nl && !st; i++)
      if (kept[i] < 0) {
        join_ints(kept, nl, buf, sizeof buf);
        st = sm_status_new(SM_INVALID_ARGUMENT, "All labels must be nonnegative integers, batch: %lld labels: %s",
                           (long long)b, buf);
      }
    if (!st && !s->ignore_longer && cnt[b] > sl[b])
      st = sm_status_new(SM_INVALID_ARGUMENT,
                         "Not enough time for target transition sequence (required: %lld, available: %d)%lldYou can "
                         "turn this error into a warning by using the flag ignore_longer_outputs_than_inputs",
                         (long long)cnt[b], (int)sl[b], (long long)b);
    maxu = 2 * nl + 1 > maxu ? 2 * nl + 1 : maxu;
  }
  free(kept);
  sm_tensor *loss = NULL, *grad = NULL;
  if (!st) st = sm__kctx_alloc_output(ctx, 0, dt, 1, &B, &loss);
  if (!st) st = sm__kctx_alloc_output(ctx, 1, dt, 3, d, &grad);
  /* work space: y [Tm, C], alpha and beta [maxu, Tm], l' [maxu] ints, prob sums [C] */
  size_t es = dt == SM_FLOAT ? sizeof(float) : sizeof(double);
  uint64_t words = 0;
  if (!st && ((uint64_t)Tm * (uint64_t)C > ((uint64_t)1 << 40) || (uint64_t)maxu * (uint64_t)Tm > ((uint64_t)1 << 40)))
    st = sm_status_new(SM_OUT_OF_RANGE, "CTCLoss: the inputs are too large");
  if (!st) words = (uint64_t)Tm * (uint64_t)C + 2 * (uint64_t)maxu * (uint64_t)Tm + (uint64_t)C;
  char *work = st ? NULL : malloc((size_t)words * es + (size_t)maxu * sizeof(int32_t) + 16);
  if (!st && !work) st = sm_status_new(SM_RESOURCE_EXHAUSTED, "CTCLoss: out of memory");
  if (!st) {
    int32_t *lp = (int32_t *)(work + words * es);
    for (int64_t b = 0; b < B; b++) {
      const int32_t *lab = vp + start[b];
      int U = 0;
      for (int64_t i = 0; i < cnt[b]; i++) { /* l': blank, label, blank, ..., blank */
        if (i && s->collapse && lab[i] == lab[i - 1]) continue;
        if (lab[i] >= C - 1) continue;
        lp[U++] = (int32_t)(C - 1);
        lp[U++] = lab[i];
      }
      lp[U++] = (int32_t)(C - 1);
      int64_t Tn = sl[b];
      if (Tn == 0 || (s->ignore_longer && cnt[b] > Tn)) continue; /* loss 0, gradient 0 */
      if (dt == SM_FLOAT) {
        float *w = (float *)work;
        ctc_loss_f32(sm_tensor_data(in), sm_tensor_data(grad), B, C, b, Tn, lp, U, s->merge, w, w + Tm * C,
                     w + Tm * C + maxu * Tm, w + Tm * C + 2 * maxu * Tm, (float *)sm_tensor_data(loss) + b);
      } else {
        double *w = (double *)work;
        ctc_loss_f64(sm_tensor_data(in), sm_tensor_data(grad), B, C, b, Tn, lp, U, s->merge, w, w + Tm * C,
                     w + Tm * C + maxu * Tm, w + Tm * C + 2 * maxu * Tm, (double *)sm_tensor_data(loss) + b);
      }
    }
  }
  free(work);
  sm__kctx_scratch_free(ctx, start);
  return st;
}

/* ---- CTCBeamSearchDecoder ----
 * TF's prefix beam search over each step's log softmax of the logits: a tree of
 * prefixes (entries: parent, label, probabilities of ending in a label / a blank / either, at the
 * previous and this step), at most beam_width leaves. Each step every leaf's probabilities are
 * carried forward (Eq. 1 of TF's header; the parent's blank probability when the label repeats
 * it), then every leaf that is still a candidate grows a child per non-blank class not already in
 * the beam, which joins when it beats the lowest leaf (evicted: its probabilities zeroed). The
 * top_paths best leaves give the label sequences (repeats merged with merge_repeated) and their
 * log probabilities. Log-sum-exp as CTCLoss's (float). */
typedef struct bprob {
  double total, blank, label;
} bprob;

typedef struct bentry {
  int64_t parent, label;
  bprob oldp, newp;
  int64_t *child; /* num_classes - 1 entries, -1 none; made when the entry first grows */
} bentry;

typedef struct beam_state {
  int64_t width, top;
  int merge;
} beam_state;

static sm_status *beam_prepare(const sm_node *node, void **state) {
  beam_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->merge = 1;
  sm_status *st = sm__node_attr_int(node, "beam_width", &s->width);
  if (!st) st = sm__node_attr_int(node, "top_paths", &s->top);
  if (!st && sm__node_attr(node, "merge_repeated")) st = sm__node_attr_bool(node, "merge_repeated", &s->merge);
  if (!st && (s->width < 1 || s->top < 1 || s->width > (1 << 20)))
    st = sm_status_new(SM_INVALID_ARGUMENT, "CTCBeamSearchDecoder: beam_width and top_paths must be >= 1");
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

/* The beam's working set, rounded to T (float or double) after every operation. */
typedef struct beam {
  bentry *e;
  int64_t n, cap;
  int64_t *leaves, nleaves, width;
  int dbl;
} beam;

static double bround(const beam *bm, double v) { return bm->dbl ? v : (double)(float)v; }

static double blse(const beam *bm, double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double r = a > b ? a + (double)log1pf(expf((float)(b - a))) : b + (double)log1pf(expf((float)(a - b)));
  return bround(bm, r);
}

static int64_t bnew(beam *bm, int64_t parent, int64_t label, sm_status **st) {
  if (bm->n == bm->cap) {
    int64_t c = bm->cap ? 2 * bm->cap : 64;
    bentry *q = realloc(bm->e, (size_t)c * sizeof *q);
    if (!q) {
      *st = sm_status_new(SM_RESOURCE_EXHAUSTED, "CTCBeamSearchDecoder: out of memory");
      return -1;
    }
    bm->e = q, bm->cap = c;
  }
  bentry *e = &bm->e[bm->n];
  e->parent = parent, e->label = label, e->child = NULL;
  e->oldp = e->newp = (bprob){-INFINITY, -INFINITY, -INFINITY};
  return bm->n++;
}

static void bfree(beam *bm) {
  for (int64_t i = 0; i < bm->n; i++) free(bm->e[i].child);
  free(bm->e);
  bm->e = NULL, bm->n = bm->cap = 0;
}

static int64_t bbottom(const beam *bm) { /* the leaf with the lowest newp.total (the last such) */
  int64_t k = 0;
  for (int64_t i = 1; i < bm->nleaves; i++)
    if (bm->e[bm->leaves[i]].newp.total <= bm->e[bm->leaves[k]].newp.total) k = i;
  return k;
}

static void bpush(beam *bm, int64_t x) {
  if (bm->nleaves < bm->width) {
    bm->leaves[bm->nleaves++] = x;
    return;
  }
  int64_t k = bbottom(bm);
  if (bm->e[x].newp.total > bm->e[bm->leaves[k]].newp.total) bm->leaves[k] = x;
}

static _Thread_local const beam *t_sort_beam; /* qsort's context: the beam being sorted */

static int beam_cmp(const void *a, const void *b) {
  const beam *bm = t_sort_beam;
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  double px = bm->e[x].newp.total, py = bm->e[y].newp.total;
  return px > py ? -1 : px < py ? 1 : x < y ? -1 : x > y;
}

static void bsort(beam *bm, int64_t *v, int64_t n) {
  t_sort_beam = bm;
  qsort(v, (size_t)n, sizeof *v, beam_cmp);
}

static int bcandidate(const beam *bm, const bprob *p) {
  return p->total > -INFINITY &&
         (bm->nleaves < bm->width || p->total > bm->e[bm->leaves[bbottom(bm)]].newp.total);
}

/* One step over the logits x[0..C) (blank C - 1); br: scratch for width entries. */
static sm_status *bstep(beam *bm, const double *x, int64_t C, int64_t *br) {
  const double mx = 0; /* x is already a log softmax (TF 2.21's log probabilities are normalized) */
  int64_t nb = bm->nleaves;
  memcpy(br, bm->leaves, (size_t)nb * sizeof *br);
  bsort(bm, br, nb);
  bm->nleaves = 0;
  for (int64_t i = 0; i < nb; i++) bm->e[br[i]].oldp = bm->e[br[i]].newp;
  for (int64_t i = 0; i < nb; i++) {
    bentry *b = &bm->e[br[i]];
    if (b->parent >= 0) {
      const bentry *p = &bm->e[b->parent];
      if (p->newp.total != -INFINITY) {
        double prev = b->label == p->label ? p->oldp.blank : p->oldp.total;
        b->newp.label = blse(bm, b->newp.label, prev);
      }
      b->newp.label = bround(bm, b->newp.label + bround(bm, x[b->label] - mx));
    }
    b->newp.blank = bround(bm, b->oldp.total + bround(bm, x[C - 1] - mx));
    b->newp.total = blse(bm, b->newp.blank, b->newp.label);
    bpush(bm, br[i]);
  }
  sm_status *st = NULL;
  for (int64_t i = 0; i < nb; i++) {
    if (!bcandidate(bm, &bm->e[br[i]].oldp)) continue;
    for (int64_t l = 0; l < C - 1; l++) {
      if (!bm->e[br[i]].child) {
        int64_t *ch = malloc((size_t)(C - 1) * sizeof *ch);
        if (!ch) return sm_status_new(SM_RESOURCE_EXHAUSTED, "CTCBeamSearchDecoder: out of memory");
        for (int64_t k = 0; k < C - 1; k++) ch[k] = -1;
        bm->e[br[i]].child = ch;
      }
      int64_t ci = bm->e[br[i]].child[l];
      if (ci < 0) {
        if ((ci = bnew(bm, br[i], l, &st)) < 0) return st;
        bm->e[br[i]].child[l] = ci;
      }
      bentry *b = &bm->e[br[i]], *c = &bm->e[ci];
      if (c->newp.total != -INFINITY) continue; /* already in the beam */
      c->newp.blank = -INFINITY;
      double prev = c->label == b->label ? b->oldp.blank : b->oldp.total;
      c->newp.label = bround(bm, bround(bm, x[l] - mx) + prev);
      c->newp.total = c->newp.label;
      if (bcandidate(bm, &c->newp)) {
        if (bm->nleaves == bm->width) bm->e[bm->leaves[bbottom(bm)]].newp = (bprob){-INFINITY, -INFINITY, -INFINITY};
        bpush(bm, ci);
      } else {
        c->oldp = c->newp = (bprob){-INFINITY, -INFINITY, -INFINITY};
      }
    }
  }
  return NULL;
}

static sm_status *beam_compute(const void *state, sm_kctx *ctx) {
  const beam_state *s = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0), *len = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(in);
  if (dt != SM_FLOAT && dt != SM_DOUBLE) return sm_status_new(SM_INVALID_ARGUMENT, "CTCBeamSearchDecoder: inputs must be float or double");
  if (sm_tensor_rank(in) != 3) return sm_status_new(SM_INVALID_ARGUMENT, "inputs is not a 3-Tensor");
  if (sm_tensor_rank(len) != 1 || sm_tensor_dtype(len) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "sequence_length is not a vector");
  const int64_t *d = sm_tensor_dims(in);
  int64_t Tm = d[0], B = d[1], C = d[2], P = s->top;
  if (Tm == 0) return sm_status_new(SM_INVALID_ARGUMENT, "max_time is 0");
  if (B != sm_tensor_dims(len)[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "len(sequence_length) != batch_size.  len(sequence_length):  %lld batch_size: %lld",
                         (long long)sm_tensor_dims(len)[0], (long long)B);
  const int32_t *sl = sm_tensor_data(len);
  for (int64_t b = 0; b < B; b++)
    if (sl[b] > Tm) return sm_status_new(SM_FAILED_PRECONDITION, "sequence_length(%lld) <= %lld", (long long)b, (long long)Tm);
  if (P > s->width) return sm_status_new(SM_INVALID_ARGUMENT, "requested more paths than the beam width.");
  if (C < 1) return sm_status_new(SM_INVALID_ARGUMENT, "CTCBeamSearchDecoder: num_classes must be >= 1");
  sm_tensor *logp;
  sm_status *st;
  if ((st = sm__kctx_alloc_output(ctx, (int)(3 * P), dt, 2, (int64_t[]){B, P}, &logp))) return st;
  beam bm = {0};
  bm.width = s->width, bm.dbl = dt == SM_DOUBLE;
  /* paths: per (batch, path) its labels, at most max_time each */
  int64_t *lab = calloc((size_t)(B * P * Tm + 1), sizeof *lab), *cnt = calloc((size_t)(B * P + 1), sizeof *cnt);
  int64_t *br = malloc((size_t)(2 * s->width + 1) * sizeof *br);
  double *x = malloc((size_t)C * sizeof *x);
  bm.leaves = malloc((size_t)(s->width + 1) * sizeof *bm.leaves);
  if (!lab || !cnt || !br || !x || !bm.leaves) st = sm_status_new(SM_RESOURCE_EXHAUSTED, "CTCBeamSearchDecoder: out of memory");
  for (int64_t b = 0; b < B && !st; b++) {
    bfree(&bm);
    bm.nleaves = 0;
    int64_t root = bnew(&bm, -1, -1, &st);
    if (root < 0) break;
    bm.e[root].newp.total = bm.e[root].newp.blank = 0;
    bpush(&bm, root);
    for (int64_t t = 0; t < sl[b] && !st; t++) {
      double mx = -INFINITY, sum = 0; /* the step's log softmax, in T */
      for (int64_t c = 0; c < C; c++) x[c] = logit(in, (t * B + b) * C + c), mx = x[c] > mx ? x[c] : mx;
      for (int64_t c = 0; c < C; c++) sum = bround(&bm, sum + bround(&bm, exp(x[c] - mx)));
      double lz = bround(&bm, log(sum));
      for (int64_t c = 0; c < C; c++) x[c] = bround(&bm, bround(&bm, x[c] - mx) - lz);
      st = bstep(&bm, x, C, br);
    }
    if (st) break;
    if (P > bm.nleaves) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "Less leaves in the beam search than requested.");
      break;
    }
    memcpy(br, bm.leaves, (size_t)bm.nleaves * sizeof *br);
    bsort(&bm, br, bm.nleaves);
    for (int64_t p = 0; p < P; p++) {
      const bentry *e = &bm.e[br[p]];
      double v = e->newp.total;
      if (dt == SM_FLOAT) ((float *)sm_tensor_data(logp))[b * P + p] = (float)v;
      else ((double *)sm_tensor_data(logp))[b * P + p] = v;
      int64_t *L = lab + (b * P + p) * Tm, n = 0, prev = -1;
      for (const bentry *c = e; c->parent >= 0; c = &bm.e[c->parent]) { /* backwards, then reversed */
        if (!s->merge || c->label != prev) L[n++] = c->label;
        prev = c->label;
      }
      for (int64_t i = 0; i < n / 2; i++) {
        int64_t t = L[i];
        L[i] = L[n - 1 - i], L[n - 1 - i] = t;
      }
      cnt[b * P + p] = n;
    }
  }
  bfree(&bm);
  for (int64_t p = 0; p < P && !st; p++) { /* StoreAllDecodedSequences */
    int64_t total = 0, longest = 0;
    for (int64_t b = 0; b < B; b++) {
      total += cnt[b * P + p];
      longest = cnt[b * P + p] > longest ? cnt[b * P + p] : longest;
    }
    sm_tensor *ix, *vals, *shape;
    if ((st = sm__kctx_alloc_output(ctx, (int)p, SM_INT64, 2, (int64_t[]){total, 2}, &ix)) ||
        (st = sm__kctx_alloc_output(ctx, (int)(P + p), SM_INT64, 1, &total, &vals)) ||
        (st = sm__kctx_alloc_output(ctx, (int)(2 * P + p), SM_INT64, 1, (int64_t[]){2}, &shape)))
      break;
    int64_t *ip = sm_tensor_data(ix), *vp = sm_tensor_data(vals), o = 0;
    for (int64_t b = 0; b < B; b++)
      for (int64_t k = 0; k < cnt[b * P + p]; k++, o++) {
        ip[2 * o] = b, ip[2 * o + 1] = k;
        vp[o] = lab[(b * P + p) * Tm + k];
      }
    ((int64_t *)sm_tensor_data(shape))[0] = B;
    ((int64_t *)sm_tensor_data(shape))[1] = longest;
  }
  free(lab);
  free(cnt);
  free(br);
  free(x);
  free(bm.leaves);
  return st;
}

const sm_kernel sm_kernels_ctc[] = {
    {"CTCBeamSearchDecoder", beam_prepare, beam_compute, free, 0},
    {"CTCGreedyDecoder", ctc_prepare, ctc_compute, free, 0},
    {"CTCLoss", ctc_loss_prepare, ctc_loss_compute, free, 0},
    {0},
};

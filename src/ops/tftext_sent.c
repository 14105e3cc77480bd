/* tftext_sent.c - TensorFlow Text's scoring kernels with tensorflow_text 2.21's semantics (its
 * kernels are the reference):
 *   RougeL (text.metrics.rouge_l): per row of two ragged batches (values + row splits), the
 *     longest common subsequence of hypothesis and reference tokens (int32, int64 or string
 *     values; int32 or int64 splits) and its F, precision and recall; alpha in [0, 1] weighs the
 *     official F, alpha < 0 picks tensor2tensor's F. TF Text does not check the row splits; here
 *     splits out of order or past their values are refused, and the table is two rows long;
 *   ConstrainedSequence (text.viterbi_constrained_sequence, text.greedy_constrained_sequence):
 *     Viterbi or greedy decoding of per-step state scores under optional allowed transitions and
 *     transition weights, log or probability space, with or without start/end states; negative
 *     sequence lengths are refused (TF Text's kernel does not check them). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/text_internal.h"
#include "runtime/kernel.h"

/* ---- RougeL ------------------------------------------------------------------------------------ */

static sm_status *rouge_splits(const sm_tensor *sp, int64_t nvals, const char *what) {
  int64_t n = sm_tensor_num_elements(sp);
  for (int64_t i = 0; i < n; i++) {
    int64_t x = tx_int(sp, i);
    if ((i == 0 && x != 0) || x < 0 || x > nvals || (i && x < tx_int(sp, i - 1)))
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "RougeL: %s splits must start at 0 and rise to at most %lld values; element %lld is %lld",
                           what, (long long)nvals, (long long)i, (long long)x);
  }
  return NULL;
}

static int rouge_eq(const sm_tensor *a, int64_t i, const sm_tensor *b, int64_t j) {
  switch (sm_tensor_dtype(a)) {
    case SM_STRING: {
      size_t na, nb;
      const char *sa = sm_tensor_string(a, i, &na), *sb = sm_tensor_string(b, j, &nb);
      return na == nb && (na == 0 || memcmp(sa, sb, na) == 0);
    }
    case SM_INT32: return ((const int32_t *)sm_tensor_data(a))[i] == ((const int32_t *)sm_tensor_data(b))[j];
    default: return ((const int64_t *)sm_tensor_data(a))[i] == ((const int64_t *)sm_tensor_data(b))[j];
  }
}

static sm_status *rouge_l_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  if (sm__kctx_num_inputs(ctx) != 5) return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: expects 5 inputs");
  const sm_tensor *hv = sm__kctx_input(ctx, 0), *hs = sm__kctx_input(ctx, 1), *rv = sm__kctx_input(ctx, 2),
                  *rs = sm__kctx_input(ctx, 3), *al = sm__kctx_input(ctx, 4);
  if (sm_tensor_dtype(al) != SM_FLOAT || sm_tensor_num_elements(al) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: alpha must be a float scalar");
  float alpha = *(const float *)sm_tensor_data(al);
  if (!(alpha <= 1)) return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: alpha must be <1 but was=%g", (double)alpha);
  int64_t nsp = sm_tensor_num_elements(hs);
  if (sm_tensor_num_elements(rs) != nsp)
    return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: ref splits len=%lldmust equal hyp splits len=%lld",
                         (long long)sm_tensor_num_elements(rs), (long long)nsp);
  if (sm_tensor_rank(hv) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: hypotheses values must be a vector");
  if (sm_tensor_rank(rv) != 1) return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: references values must be a vector");
  if (sm_tensor_rank(hs) != 1 || !tx_is_index(hs))
    return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: hypotheses splits must be a vector");
  if (sm_tensor_rank(rs) != 1 || !tx_is_index(rs))
    return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: references splits must be a vector");
  if (nsp < 1) return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: ref splits len=0; must have at least 1 split");
  int dt = sm_tensor_dtype(hv);
  if (dt != sm_tensor_dtype(rv) || (dt != SM_STRING && dt != SM_INT32 && dt != SM_INT64))
    return sm_status_new(SM_INVALID_ARGUMENT, "RougeL: values must be int32, int64 or string, both the same type");
  int64_t nh = sm_tensor_num_elements(hv), nr = sm_tensor_num_elements(rv);
  sm_status *s = rouge_splits(hs, nh, "hypotheses");
  if (!s) s = rouge_splits(rs, nr, "references");
  if (s) return s;
  int64_t rows = nsp - 1, maxr = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t l = tx_int(rs, i + 1) - tx_int(rs, i);
    if (l > maxr) maxr = l;
  }
  sm_tensor *of, *op, *orr;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 1, &rows, &of))) return s;
  if ((s = sm__kctx_alloc_output(ctx, 1, SM_FLOAT, 1, &rows, &op))) return s;
  if ((s = sm__kctx_alloc_output(ctx, 2, SM_FLOAT, 1, &rows, &orr))) return s;
  int64_t *dp = sm__kctx_scratch(ctx, 2 * (size_t)(maxr + 1) * sizeof *dp, &s);
  if (s) return s;
  float *f = sm_tensor_data(of), *p = sm_tensor_data(op), *r = sm_tensor_data(orr);
  for (int64_t i = 0; i < rows; i++) {
    int64_t h0 = tx_int(hs, i), h1 = tx_int(hs, i + 1), r0 = tx_int(rs, i), r1 = tx_int(rs, i + 1);
    int64_t lh = h1 - h0, lr = r1 - r0, *prev = dp, *cur = dp + lr + 1;
    memset(prev, 0, (size_t)(lr + 1) * sizeof *prev);
    for (int64_t a = 1; a <= lh; a++) {
      if ((a & 255) == 0 && (s = sm__kctx_check_stop(ctx))) break;
      cur[0] = 0;
      for (int64_t b = 1; b <= lr; b++)
        cur[b] = rouge_eq(hv, h0 + a - 1, rv, r0 + b - 1) ? prev[b - 1] + 1 : (prev[b] > cur[b - 1] ? prev[b] : cur[b - 1]);
      int64_t *t = prev;
      prev = cur, cur = t;
    }
    if (s) break;
    /* TF's arithmetic: the ratios in double, stored as float; the F's in float. */
    float llcs = (float)prev[lr];
    float pl = (float)(llcs / ((double)(float)lh + 1e-12)), rl = (float)(llcs / ((double)(float)lr + 1e-12)), fl;
    if (alpha < 0) {
      float beta = (float)(pl / (rl + 1e-12));
      float num = (1 + beta * beta) * rl * pl, den = rl + (beta * beta) * pl;
      fl = den > 0 ? num / den : 0;
    } else {
      float den = alpha * rl + (1 - alpha) * pl;
      fl = den > 0 ? (pl * rl) / den : den;
    }
    f[i] = fl, p[i] = pl, r[i] = rl;
  }
  sm__kctx_scratch_free(ctx, dp);
  return s;
}

/* ---- ConstrainedSequence ----------------------------------------------------------------------- */

/* text.viterbi_constrained_sequence / greedy_constrained_sequence: scores [batch, steps, states]
 * (or [steps, states], a batch of one), one length per batch row, an optional [n, n] allowed
 * transitions (bool) and transition weights (n = states, + 1 with the start/end state at index
 * states); out: the chosen states (ragged: values + splits), -1 for a row no path reaches. The
 * arithmetic is TF Text's: float scores, the running Viterbi scores in double, stored through float
 * per candidate, ties to the later state, and in probability space each step divided by its max. */

typedef struct {
  const float *sc, *tw;
  const uint8_t *al;
  int64_t steps, n, w; /* w: the constraint matrices' width (n or n + 1) */
  int log_space, se;
} cs_args;

#define CS_LOWEST (-3.40282346638528859812e+38F)

static float cs_score(const cs_args *a, int64_t b, int64_t step, int64_t s) { return a->sc[(b * a->steps + step) * a->n + s]; }
static int cs_allowed(const cs_args *a, int64_t from, int64_t to) { return !a->al || a->al[from * a->w + to]; }
static float cs_apply_w(const cs_args *a, float x, int64_t from, int64_t to) {
  if (!a->tw) return x;
  return a->log_space ? x + a->tw[from * a->w + to] : x * a->tw[from * a->w + to];
}

static void cs_normalize(const cs_args *a, double *v) {
  if (a->log_space || a->n == 0) return;
  double mx = v[0];
  for (int64_t s = 1; s < a->n; s++)
    if (v[s] > mx) mx = v[s];
  if (mx > 0)
    for (int64_t s = 0; s < a->n; s++) v[s] /= mx;
}

/* bp: len * n backpointers; prev, cur: n doubles each. */
static sm_status *cs_viterbi(sm_kctx *ctx, const cs_args *a, int64_t b, int64_t len, int32_t *bp, double *prev, double *cur,
                             int32_t *out) {
  int64_t n = a->n;
  sm_status *st = NULL;
  if (len == 0) return NULL;
  for (int64_t s = 0; s < n; s++) prev[s] = cur[s] = CS_LOWEST;
  for (int64_t s = 0; s < n; s++) bp[s] = -1;
  for (int64_t s = 0; s < n; s++) {
    if (a->se && !cs_allowed(a, n, s)) continue;
    bp[s] = (int32_t)n;
    float x = cs_score(a, b, 0, s);
    if (a->se) x = cs_apply_w(a, x, n, s);
    cur[s] = x;
  }
  cs_normalize(a, cur);
  double *t = prev;
  prev = cur, cur = t;
  for (int64_t step = 1; step < len; step++) {
    if (n * n > 65536 || (step & 255) == 0)
      if ((st = sm__kctx_check_stop(ctx))) return st;
    const int32_t *pb = bp + (step - 1) * n;
    int32_t *cb = bp + step * n;
    for (int64_t s = 0; s < n; s++) {
      int32_t best = -1;
      float bs = CS_LOWEST;
      for (int64_t q = 0; q < n; q++) {
        if (pb[q] == -1 || !cs_allowed(a, q, s)) continue;
        float x = cs_score(a, b, step, s);
        x = a->log_space ? (float)((double)x + prev[q]) : (float)((double)x * prev[q]);
        x = cs_apply_w(a, x, q, s);
        if (x >= bs) best = (int32_t)q, bs = x;
      }
      cb[s] = best;
      cur[s] = bs;
    }
    cs_normalize(a, cur);
    t = prev, prev = cur, cur = t;
  }
  const int32_t *lb = bp + (len - 1) * n;
  int32_t best = -1;
  float fs = CS_LOWEST;
  for (int64_t q = 0; q < n; q++) {
    if (lb[q] == -1 || (a->se && !cs_allowed(a, q, n))) continue;
    float x = (float)prev[q];
    if (a->se) x = cs_apply_w(a, x, q, n);
    if (x >= fs) best = (int32_t)q, fs = x;
  }
  if (best == -1) {
    for (int64_t i = 0; i < len; i++) out[i] = -1;
    return NULL;
  }
  int32_t cs = best;
  for (int64_t i = len - 1; i >= 0; i--) {
    out[i] = cs;
    cs = bp[i * n + cs];
  }
  return NULL;
}

static void cs_greedy(const cs_args *a, int64_t b, int64_t len, int32_t *out) {
  int64_t n = a->n;
  for (int64_t step = 0; step < len; step++) {
    int fin = step == len - 1 && a->se;
    int64_t ps = step == 0 ? n : out[step - 1];
    if (ps == -1) {
      out[step] = -1;
      continue;
    }
    int32_t best = -1;
    float bs = CS_LOWEST;
    for (int64_t s = 0; s < n; s++) {
      float x = cs_score(a, b, step, s);
      if (a->se || step > 0) {
        if (!cs_allowed(a, ps, s) || (fin && !cs_allowed(a, s, n))) continue;
        x = cs_apply_w(a, x, ps, s);
        if (fin) x = cs_apply_w(a, x, s, n);
      }
      if (x >= bs) best = (int32_t)s, bs = x;
    }
    out[step] = best;
  }
}

static sm_status *cs_matrix(const sm_tensor *t, int64_t n, int se, const char *name) {
  int64_t want = se ? n + 1 : n;
  if (sm_tensor_rank(t) != 2) return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: %s must be of rank 2", name);
  for (int d = 0; d < 2; d++)
    if (sm_tensor_dims(t)[d] != want)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "ConstrainedSequence: %s must have a %s dimension of size %lld when num_states is %lld and "
                           "use_start_and_end_states is %d",
                           name, d ? "first" : "zeroth", (long long)want, (long long)n, se);
  return NULL;
}

static sm_status *constrained_seq_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_node *node = sm__kctx_node(ctx);
  int viterbi = 0, log_space = 0, se = 0;
  sm_status *s = sm__node_attr_bool(node, "use_viterbi", &viterbi);
  if (!s) s = sm__node_attr_bool(node, "use_log_space", &log_space);
  if (!s) s = sm__node_attr_bool(node, "use_start_and_end_states", &se);
  if (s) return s;
  int split_dt = SM_INT64;
  if (sm__node_attr(node, "Tsplits") && (s = sm__node_attr_type(node, "Tsplits", &split_dt))) return s;
  if (split_dt != SM_INT32 && split_dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: Tsplits must be int32 or int64");
  if (sm__kctx_num_inputs(ctx) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: expects 4 inputs");
  const sm_tensor *sc = sm__kctx_input(ctx, 0), *ln = sm__kctx_input(ctx, 1), *al = sm__kctx_input(ctx, 2),
                  *tw = sm__kctx_input(ctx, 3);
  int r = sm_tensor_rank(sc);
  if ((r != 2 && r != 3) || sm_tensor_dtype(sc) != SM_FLOAT)
    return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: The score tensor must be of rank 2 or 3.");
  const int64_t *d = sm_tensor_dims(sc);
  cs_args a = {sm_tensor_data(sc), NULL, NULL, r == 3 ? d[1] : d[0], r == 3 ? d[2] : d[1], 0, log_space, se};
  int64_t batch = r == 3 ? d[0] : 1;
  a.w = se ? a.n + 1 : a.n;
  if (!tx_is_index(ln)) return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: sequence_lengths must be int32 or int64");
  if (sm_tensor_num_elements(ln) != batch)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "ConstrainedSequence: There should be exactly one length for every batch element. Found %lld length "
                         "elements for a batch size of %lld",
                         (long long)sm_tensor_num_elements(ln), (long long)batch);
  if (a.n > INT32_MAX - 1) return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: too many states (%lld)", (long long)a.n);
  int64_t total = 0, maxl = 0;
  for (int64_t i = 0; i < batch; i++) {
    int64_t l = tx_int(ln, i);
    if (l < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: sequence length %lld of batch row %lld is negative",
                           (long long)l, (long long)i);
    if (l > a.steps)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "ConstrainedSequence: The scores tensor is too short for the longest sequence length.");
    total += l;
    if (l > maxl) maxl = l;
  }
  if (split_dt == SM_INT32 && total > INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: %lld states overflow int32 splits", (long long)total);
  if (sm_tensor_num_elements(al)) {
    if (sm_tensor_dtype(al) != SM_BOOL) return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: allowed_transitions must be bool");
    if ((s = cs_matrix(al, a.n, se, "allowed_transitions"))) return s;
    a.al = sm_tensor_data(al);
  }
  if (sm_tensor_num_elements(tw)) {
    if (sm_tensor_dtype(tw) != SM_FLOAT) return sm_status_new(SM_INVALID_ARGUMENT, "ConstrainedSequence: transition_weights must be float");
    if ((s = cs_matrix(tw, a.n, se, "transition_weights"))) return s;
    a.tw = sm_tensor_data(tw);
    for (int64_t i = 0; !log_space && i < a.w * a.w; i++)
      if (!(a.tw[i] >= 0))
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "ConstrainedSequence: The transition weights tensor must not contain negative values.");
  }
  sm_tensor *ov, *osp;
  int64_t nsp = batch + 1;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 1, &total, &ov))) return s;
  if ((s = sm__kctx_alloc_output(ctx, 1, split_dt, 1, &nsp, &osp))) return s;
  int32_t *bp = NULL;
  double *sv = NULL;
  if (viterbi && a.n && maxl) { /* no scratch for rows of length 0 (a [b, 0, huge] score tensor is empty) */
    if (maxl > (int64_t)(SIZE_MAX / 8 / (size_t)a.n)) return sm_status_new(SM_RESOURCE_EXHAUSTED, "ConstrainedSequence: too large");
    bp = sm__kctx_scratch(ctx, (size_t)maxl * (size_t)a.n * sizeof *bp + 1, &s);
    if (!s) sv = sm__kctx_scratch(ctx, 2 * (size_t)a.n * sizeof *sv, &s);
  }
  int32_t *out = sm_tensor_data(ov);
  int64_t at = 0;
  tx_set_int(osp, 0, 0);
  for (int64_t b = 0; b < batch && !s; b++) {
    int64_t l = tx_int(ln, b);
    if (viterbi && a.n) {
      s = cs_viterbi(ctx, &a, b, l, bp, sv, sv + a.n, out + at);
    } else if (viterbi) {
      for (int64_t i = 0; i < l; i++) out[at + i] = -1;
    } else {
      cs_greedy(&a, b, l, out + at);
    }
    at += l;
    tx_set_int(osp, b + 1, at);
    if (!s && (b & 63) == 63) s = sm__kctx_check_stop(ctx);
  }
  sm__kctx_scratch_free(ctx, bp);
  sm__kctx_scratch_free(ctx, sv);
  return s;
}

const sm_kernel sm_kernels_tftext_sent[] = {
    {"RougeL", NULL, rouge_l_compute, NULL, 0},
    {"ConstrainedSequence", NULL, constrained_seq_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};

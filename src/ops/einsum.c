/* einsum.c - Einsum over one or two operands, by direct summation.
 *
 * The equation is parsed once in prepare ("nij,jk->nik"; implicit output = the labels seen once,
 * sorted, as numpy and TF do). compute walks every combination of label values with an odometer and
 * adds the product of the operands into the output, so any labelling works (transposes, traces,
 * diagonals, outer products, batch matmuls) at the cost of speed. A float contraction of two
 * operands that is a (batched) matrix product in disguise - every label either batch (in both
 * operands and the output), row (first operand and output), column (second and output) or
 * contracted (both operands, not the output), each group laid out so that it folds into one
 * stride, each matrix with a unit stride on one side - runs as one cblas_sgemm per batch index
 * instead (gemm_path): Keras' MultiHeadAttention and EinsumDense equations ("abc,cde->abde",
 * "aecd,abcd->acbe", "acbe,aecd->abcd", "abcd,cde->abe") all are. Ellipsis ("...") is refused at
 * load. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "ops/nn_internal.h"
#include "runtime/kernel.h"

#define MAX_LABELS 52

typedef struct einsum_state {
  int nin;
  int rank[2];             /* labels per operand */
  int lab[2][SM_MAX_RANK]; /* label ids per operand axis */
  int out_rank;
  int out_lab[SM_MAX_RANK];
  int nlabels;
} einsum_state;

static int label_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
  return -1;
}

static sm_status *parse_term(const char *p, size_t len, int *labs, int *rank, const char *eq) {
  if (len > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': a term has too many labels", eq);
  for (size_t i = 0; i < len; i++) {
    if (p[i] == '.')
      return sm_status_new(SM_UNIMPLEMENTED, "Einsum equation '%s': ellipsis is not supported yet", eq);
    int id = label_id(p[i]);
    if (id < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': invalid label '%c'", eq, p[i]);
    labs[i] = id;
  }
  *rank = (int)len;
  return NULL;
}

static sm_status *einsum_prepare(const sm_node *node, void **state) {
  const char *eq;
  size_t len;
  sm_status *s = sm__node_attr_string(node, "equation", &eq, &len);
  if (s) return s;
  char buf[512];
  if (len >= sizeof buf) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation is too long");
  size_t k = 0; /* a copy without spaces */
  for (size_t i = 0; i < len; i++)
    if (eq[i] != ' ') buf[k++] = eq[i];
  buf[k] = 0;
  einsum_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  char *arrow = strstr(buf, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - buf) : k;
  char *comma = memchr(buf, ',', lhs_len);
  st->nin = comma ? 2 : 1;
  if (comma && memchr(comma + 1, ',', lhs_len - (size_t)(comma + 1 - buf))) {
    free(st);
    return sm_status_new(SM_UNIMPLEMENTED, "Einsum equation '%s': more than two operands", buf);
  }
  if (sm__node_num_inputs(node) != st->nin) {
    int nin = st->nin;
    free(st);
    return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s' names %d operand(s), the node has %d", buf, nin,
                         sm__node_num_inputs(node));
  }
  size_t l0 = comma ? (size_t)(comma - buf) : lhs_len;
  s = parse_term(buf, l0, st->lab[0], &st->rank[0], buf);
  if (!s && comma) s = parse_term(comma + 1, lhs_len - l0 - 1, st->lab[1], &st->rank[1], buf);
  int count[MAX_LABELS] = {0};
  for (int o = 0; !s && o < st->nin; o++)
    for (int i = 0; i < st->rank[o]; i++) count[st->lab[o][i]]++;
  if (!s && arrow) {
    s = parse_term(arrow + 2, strlen(arrow + 2), st->out_lab, &st->out_rank, buf);
    for (int i = 0; !s && i < st->out_rank; i++) {
      if (!count[st->out_lab[i]])
        s = sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': output label not in any input", buf);
      for (int j = 0; !s && j < i; j++)
        if (st->out_lab[j] == st->out_lab[i])
          s = sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': output label repeated", buf);
    }
  } else if (!s) {
    for (int id = 0; id < MAX_LABELS; id++) /* implicit: labels seen once, in alphabetical order */
      if (count[id] == 1) st->out_lab[st->out_rank++] = id;
  }
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

#define DEF_SUM(NAME, T)                                                                                  \
  static void NAME(const einsum_state *st, const void *const *in, void *outp, int nl, const int64_t *size, \
                   const int64_t (*stride)[MAX_LABELS]) {                                                 \
    int64_t idx[MAX_LABELS] = {0}, off[3] = {0, 0, 0};                                                   \
    const T *a = in[0], *b = st->nin > 1 ? in[1] : NULL;                                                 \
    T *out = outp;                                                                                       \
    for (;;) {                                                                                           \
      T v = a[off[0]];                                                                                   \
      if (b) v = (T)(v * b[off[1]]);                                                                     \
      out[off[2]] = (T)(out[off[2]] + v);                                                                \
      int l = nl - 1; /* odometer over every label, offsets updated incrementally */                     \
      for (; l >= 0; l--) {                                                                              \
        for (int o = 0; o < 3; o++) off[o] += stride[o][l];                                              \
        if (++idx[l] < size[l]) break;                                                                   \
        for (int o = 0; o < 3; o++) off[o] -= stride[o][l] * size[l];                                    \
        idx[l] = 0;                                                                                      \
      }                                                                                                  \
      if (l < 0) return;                                                                                 \
    }                                                                                                    \
  }
DEF_SUM(sum_f32, float)
DEF_SUM(sum_f64, double)
DEF_SUM(sum_i32, uint32_t) /* integers wrap, never undefined behaviour */
DEF_SUM(sum_i64, uint64_t)

/* One group of labels (rows, columns or contracted) folded into a single (size, stride) per
 * tensor t0, t1 of the three (0, 1 = operands, 2 = output); 0 when the layout does not fold. */
static int fold(const int *grp, int n, const int64_t *size, const int64_t (*stride)[MAX_LABELS], int t0, int t1,
                int64_t *sz, int64_t *s0, int64_t *s1) {
  int ord[MAX_LABELS], m = 0;
  for (int i = 0; i < n; i++)
    if (size[grp[i]] > 1) ord[m++] = grp[i];
  for (int i = 1; i < m; i++) /* by decreasing stride in t0 (insertion sort: a handful of labels) */
    for (int j = i; j > 0 && stride[t0][ord[j]] > stride[t0][ord[j - 1]]; j--) {
      int t = ord[j];
      ord[j] = ord[j - 1], ord[j - 1] = t;
    }
  *sz = 1, *s0 = *s1 = 0;
  for (int i = 0; i < m; i++) {
    int l = ord[i];
    if (i && (stride[t0][ord[i - 1]] != stride[t0][l] * size[l] || stride[t1][ord[i - 1]] != stride[t1][l] * size[l]))
      return 0;
    *sz *= size[l];
    *s0 = stride[t0][l], *s1 = stride[t1][l];
  }
  return 1;
}

/* A [r, c] matrix with strides (sr, sc) as BLAS sees it: row-major (*t = 0, leading dimension sr)
 * or column-major (*t = 1, sc); 0 when neither stride is 1 or the leading dimension is unusable. */
static int layout(int64_t r, int64_t c, int64_t sr, int64_t sc, int *t, int64_t *ld) {
  if (c == 1 || sc == 1)
    *t = 0, *ld = r > 1 ? sr : c;
  else if (r == 1 || sr == 1)
    *t = 1, *ld = c > 1 ? sc : r;
  else
    return 0;
  return *ld >= (*t ? r : c) && *ld <= INT32_MAX;
}

/* The (batched) gemm form of a float two-operand Einsum (see the header); 0 when it has none. */
static int gemm_path(const float *a, const float *b, float *out, int nl, const int64_t *size,
                     const int64_t (*stride)[MAX_LABELS]) {
  int grp[4][MAX_LABELS], ng[4] = {0, 0, 0, 0}; /* batch, rows (M), columns (N), contracted (K) */
  for (int l = 0; l < nl; l++) {
    int ina = stride[0][l] != 0, inb = stride[1][l] != 0, ino = stride[2][l] != 0;
    int g = ina && inb && ino ? 0 : ina && ino ? 1 : inb && ino ? 2 : ina && inb ? 3 : -1;
    if (size[l] == 1) continue;
    if (g < 0) return 0; /* summed out of one operand alone */
    grp[g][ng[g]++] = l;
  }
  int64_t M, N, K, sam, sak, sbk, sbn, scm, scn;
  if (!fold(grp[1], ng[1], size, stride, 0, 2, &M, &sam, &scm) || !fold(grp[2], ng[2], size, stride, 1, 2, &N, &sbn, &scn) ||
      !fold(grp[3], ng[3], size, stride, 0, 1, &K, &sak, &sbk))
    return 0;
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) return 0;
  /* each matrix row- or column-major: a unit stride on one side, the other its leading dimension;
   * C column-major (ct) is computed as C^T = B^T A^T */
  int ta, tb, ct;
  int64_t lda, ldb, ldc;
  if (!layout(M, K, sam, sak, &ta, &lda) || !layout(K, N, sbk, sbn, &tb, &ldb) || !layout(M, N, scm, scn, &ct, &ldc))
    return 0;
  sm__nn_blas_init();
  int64_t idx[MAX_LABELS] = {0}, off[3] = {0, 0, 0};
  const int *bl = grp[0];
  for (;;) {
    if (!ct)
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                  1.0f, a + off[0], (int)lda, b + off[1], (int)ldb, 0.0f, out + off[2], (int)ldc);
    else
      cblas_sgemm(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, ta ? CblasNoTrans : CblasTrans, (int)N, (int)M, (int)K,
                  1.0f, b + off[1], (int)ldb, a + off[0], (int)lda, 0.0f, out + off[2], (int)ldc);
    int i = ng[0] - 1; /* odometer over the batch labels */
    for (; i >= 0; i--) {
      int l = bl[i];
      for (int o = 0; o < 3; o++) off[o] += stride[o][l];
      if (++idx[l] < size[l]) break;
      for (int o = 0; o < 3; o++) off[o] -= stride[o][l] * size[l];
      idx[l] = 0;
    }
    if (i < 0) return 1;
  }
}

static sm_status *einsum_compute(const void *state, sm_kctx *ctx) {
  const einsum_state *st = state;
  int64_t dim_of[MAX_LABELS];
  for (int i = 0; i < MAX_LABELS; i++) dim_of[i] = -1;
  int dt = sm_tensor_dtype(sm__kctx_input(ctx, 0));
  const void *data[2] = {NULL, NULL};
  for (int o = 0; o < st->nin; o++) {
    const sm_tensor *t = sm__kctx_input(ctx, o);
    if (sm_tensor_dtype(t) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum operands differ in dtype");
    if (sm_tensor_rank(t) != st->rank[o])
      return sm_status_new(SM_INVALID_ARGUMENT, "Einsum operand %d has rank %d, the equation gives it %d", o,
                           sm_tensor_rank(t), st->rank[o]);
    for (int i = 0; i < st->rank[o]; i++) {
      int64_t d = sm_tensor_dims(t)[i];
      int id = st->lab[o][i];
      if (dim_of[id] >= 0 && dim_of[id] != d)
        return sm_status_new(SM_INVALID_ARGUMENT, "Einsum: label '%c' has size %lld and %lld",
                             id < 26 ? 'a' + id : 'A' + id - 26, (long long)dim_of[id], (long long)d);
      dim_of[id] = d;
    }
    data[o] = sm_tensor_data(t);
  }
  /* The labels in use, and each operand's (and the output's) element stride per label. */
  int ids[MAX_LABELS], nl = 0;
  int64_t size[MAX_LABELS], stride[3][MAX_LABELS];
  memset(stride, 0, sizeof stride);
  for (int id = 0; id < MAX_LABELS; id++)
    if (dim_of[id] >= 0) ids[nl++] = id;
  int64_t out_dims[SM_MAX_RANK];
  for (int i = 0; i < st->out_rank; i++) out_dims[i] = dim_of[st->out_lab[i]];
  sm_tensor *y;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, st->out_rank, out_dims, &y);
  if (s) return s;
  uint64_t total = 1;
  for (int l = 0; l < nl; l++) {
    size[l] = dim_of[ids[l]];
    if (sm__mul_u64(total, (uint64_t)size[l], &total) || total > ((uint64_t)1 << 40))
      return sm_status_new(SM_OUT_OF_RANGE, "Einsum: too many terms to sum");
  }
  if (total == 0) return NULL;
  for (int o = 0; o < st->nin; o++) {
    int64_t str = 1;
    for (int i = st->rank[o] - 1; i >= 0; i--) {
      for (int l = 0; l < nl; l++)
        if (ids[l] == st->lab[o][i]) stride[o][l] += str;
      str *= sm_tensor_dims(sm__kctx_input(ctx, o))[i];
    }
  }
  int64_t str = 1;
  for (int i = st->out_rank - 1; i >= 0; i--) {
    for (int l = 0; l < nl; l++)
      if (ids[l] == st->out_lab[i]) stride[2][l] += str;
    str *= out_dims[i];
  }
  void *out = sm_tensor_data(y);
  if (dt == SM_FLOAT && st->nin == 2 &&
      gemm_path(data[0], data[1], out, nl, size, (const int64_t(*)[MAX_LABELS])stride))
    return NULL;
  switch (dt) {
  case SM_FLOAT: sum_f32(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_DOUBLE: sum_f64(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_INT32: sum_i32(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_INT64: sum_i64(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  default: return sm_status_new(SM_UNIMPLEMENTED, "Einsum of dtype %s is not supported", sm_dtype_name(dt));
  }
}

const sm_kernel sm_kernels_einsum[] = {
    {"Einsum", einsum_prepare, einsum_compute, free, 0},
    {0},
};

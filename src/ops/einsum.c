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
 * instead (gemm_path: batches and row blocks spread over the pool; a single product through oneDNN
 * when it is on): Keras' MultiHeadAttention and EinsumDense equations ("abc,cde->abde",
 * "aecd,abcd->acbe", "acbe,aecd->abcd", "abcd,cde->abe") all are. An ellipsis ("...ij,...jk->...ik")
 * stands for the dims the explicit labels leave, resolved per run: the operands' ellipsis dims are
 * aligned on the right and broadcast as numpy / TF do (a size 1 against any size), each one a
 * label of its own (ids 52 and up) that the summation and the gemm form treat as any other; TF's
 * messages for a rank too small, dims that do not broadcast and an output without "..." while
 * there are broadcast dims. complex64/complex128 take the same gemm form (cgemm / zgemm, never
 * oneDNN) and otherwise the summation (C's complex product). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "base/tensor_internal.h"
#include "ops/nn_dnnl.h"
#include "ops/nn_internal.h"
#include "runtime/kernel.h"

#define NAMED_LABELS 52                    /* a-z A-Z */
#define MAX_LABELS (NAMED_LABELS + SM_MAX_RANK) /* + one per ellipsis dim */

typedef struct einsum_state {
  int nin;
  int rank[2];             /* labels per operand */
  int lab[2][SM_MAX_RANK]; /* label ids per operand axis, the ellipsis left out */
  int ell[2];              /* where the ellipsis sits among them; -1: none */
  int out_rank;
  int out_lab[SM_MAX_RANK];
  int out_ell;
  int nlabels;
  sm__dnnl_cache *dnnl; /* a float product with oneDNN on (gemm_path); else NULL */
} einsum_state;

static void einsum_release(void *state) {
  einsum_state *st = state;
  if (!st) return;
  sm__dnnl_cache_free(st->dnnl);
  free(st);
}

static int label_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
  return -1;
}

static sm_status *parse_term(const char *p, size_t len, int *labs, int *rank, int *ell, const char *eq) {
  *ell = -1;
  int n = 0;
  for (size_t i = 0; i < len; i++) {
    if (p[i] == '.') {
      if (i + 2 >= len || p[i + 1] != '.' || p[i + 2] != '.')
        return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': a '.' outside an ellipsis", eq);
      if (*ell >= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': more than one ellipsis in a term", eq);
      *ell = n;
      i += 2;
      continue;
    }
    int id = label_id(p[i]);
    if (id < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': invalid label '%c'", eq, p[i]);
    if (n >= SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': a term has too many labels", eq);
    labs[n++] = id;
  }
  *rank = n;
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
  st->ell[1] = -1;
  s = parse_term(buf, l0, st->lab[0], &st->rank[0], &st->ell[0], buf);
  if (!s && comma) s = parse_term(comma + 1, lhs_len - l0 - 1, st->lab[1], &st->rank[1], &st->ell[1], buf);
  int count[MAX_LABELS] = {0};
  for (int o = 0; !s && o < st->nin; o++)
    for (int i = 0; i < st->rank[o]; i++) count[st->lab[o][i]]++;
  if (!s && arrow) {
    s = parse_term(arrow + 2, strlen(arrow + 2), st->out_lab, &st->out_rank, &st->out_ell, buf);
    for (int i = 0; !s && i < st->out_rank; i++) {
      if (!count[st->out_lab[i]])
        s = sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': output label not in any input", buf);
      for (int j = 0; !s && j < i; j++)
        if (st->out_lab[j] == st->out_lab[i])
          s = sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': output label repeated", buf);
    }
  } else if (!s) {
    /* implicit (TF's op wants "->", tf.einsum adds it): as numpy, the ellipsis dims first, then the
     * labels seen once, in alphabetical order */
    st->out_ell = st->ell[0] >= 0 || st->ell[1] >= 0 ? 0 : -1;
    for (int id = 0; id < NAMED_LABELS; id++)
      if (count[id] == 1) st->out_lab[st->out_rank++] = id;
  }
  if (!s && st->nin == 2 && sm__node_num_outputs(node) == 1 && sm__node_output_dtype(node, 0) == SM_FLOAT &&
      sm__dnnl_enabled())
    s = sm__dnnl_cache_new(&st->dnnl);
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
DEF_SUM(sum_c64, float _Complex) /* complex64 / complex128: C's complex product */
DEF_SUM(sum_c128, double _Complex)

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

/* One (batched) product as the pool runs it: C[b] (row-major, ldc) = op(A[b]) op(B[b]), batch b's
 * matrices at element offsets off[3b], off[3b + 1], off[3b + 2] (off NULL: one product at 0), cut
 * into units of `rows` rows of C, each one single-threaded sgemm. */
typedef struct gemm_job {
  const char *a, *b; /* elements of dtype dt (float, complex64, complex128), es bytes each */
  char *c;
  int dt;
  size_t es;
  int64_t M, N, K, lda, ldb, ldc;
  int ta, tb;
  const int64_t *off;
  int64_t rows, upb; /* rows per unit, units per batch */
} gemm_job;

static void gemm_units(void *ctx, int64_t begin, int64_t end) {
  const gemm_job *j = ctx;
  for (int64_t u = begin; u < end; u++) {
    int64_t bi = u / j->upb, r0 = (u % j->upb) * j->rows, r1 = r0 + j->rows < j->M ? r0 + j->rows : j->M;
    const int64_t *o = j->off ? j->off + 3 * bi : NULL;
    const char *a = j->a + (size_t)((o ? o[0] : 0) + (j->ta ? r0 : r0 * j->lda)) * j->es;
    const char *b = j->b + (size_t)(o ? o[1] : 0) * j->es;
    char *c = j->c + (size_t)((o ? o[2] : 0) + r0 * j->ldc) * j->es;
    enum CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans, tb = j->tb ? CblasTrans : CblasNoTrans;
    if (j->dt == SM_COMPLEX64) {
      static const float one[2] = {1.0f, 0.0f}, zero[2] = {0.0f, 0.0f};
      cblas_cgemm(CblasRowMajor, ta, tb, (int)(r1 - r0), (int)j->N, (int)j->K, one, a, (int)j->lda, b, (int)j->ldb, zero,
                  c, (int)j->ldc);
    } else if (j->dt == SM_COMPLEX128) {
      static const double one[2] = {1.0, 0.0}, zero[2] = {0.0, 0.0};
      cblas_zgemm(CblasRowMajor, ta, tb, (int)(r1 - r0), (int)j->N, (int)j->K, one, a, (int)j->lda, b, (int)j->ldb, zero,
                  c, (int)j->ldc);
    } else {
      cblas_sgemm(CblasRowMajor, ta, tb, (int)(r1 - r0), (int)j->N, (int)j->K, 1.0f, (const float *)a, (int)j->lda,
                  (const float *)b, (int)j->ldb, 0.0f, (float *)c, (int)j->ldc);
    }
  }
}

/* The (batched) gemm form of a float two-operand Einsum (see the header): 1 when it ran (or
 * failed: *err), 0 when the equation has none. A single product with a contiguous result and a
 * contiguous second factor goes to oneDNN when the kernel has it on (dnnl: the factor packed once
 * per tensor, the rows split over the pool, nn_dnnl.c); otherwise the batches x row blocks are
 * spread over the pool, one sgemm each. */
static int gemm_path(sm_kctx *ctx, sm__dnnl_cache *dnnl, const sm_tensor *const *opnd, void *out, int nl,
                     const int64_t *size, const int64_t (*stride)[MAX_LABELS], sm_status **err) {
  *err = NULL;
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
  /* batched, with oneDNN on: one strided batched matmul primitive (its brgemm kernels; 1.4-1.7x
   * OpenBLAS' sgemm per head on MultiHeadAttention's 128x128x64 products, bench/RESULTS.md), the
   * batches of its first (larger) batch dim over the pool; the same sums in the same order */
  int dt = sm_tensor_dtype(opnd[0]);
  if (dt != SM_FLOAT) dnnl = NULL; /* oneDNN: float only */
  if (dnnl && (ng[0] == 1 || ng[0] == 2) && M > 1 && N > 1 && K > 1) {
    sm__dnnl_bmm_args ba = {ng[0], {1, 1}, M, N, K, {0}, {0}, {0}, sm_tensor_data(opnd[0]), sm_tensor_data(opnd[1]), out};
    int bl[2] = {grp[0][0], ng[0] > 1 ? grp[0][1] : -1};
    if (ng[0] > 1 && size[bl[1]] > size[bl[0]]) bl[0] = grp[0][1], bl[1] = grp[0][0];
    for (int i = 0; i < ng[0]; i++)
      ba.bd[i] = size[bl[i]], ba.sa[i] = stride[0][bl[i]], ba.sb[i] = stride[1][bl[i]], ba.sc[i] = stride[2][bl[i]];
    ba.sa[ng[0]] = sam, ba.sa[ng[0] + 1] = sak;
    ba.sb[ng[0]] = sbk, ba.sb[ng[0] + 1] = sbn;
    ba.sc[ng[0]] = scm, ba.sc[ng[0] + 1] = scn;
    if (ct) { /* a column-major C (oneDNN's fast kernels want its rows dense): C^T = B^T A^T */
      for (int i = 0; i < ng[0]; i++) {
        int64_t t = ba.sa[i];
        ba.sa[i] = ba.sb[i], ba.sb[i] = t;
      }
      ba.a = sm_tensor_data(opnd[1]), ba.b = sm_tensor_data(opnd[0]);
      ba.M = N, ba.N = M;
      ba.sa[ng[0]] = sbn, ba.sa[ng[0] + 1] = sbk;
      ba.sb[ng[0]] = sak, ba.sb[ng[0] + 1] = sam;
      ba.sc[ng[0]] = scn, ba.sc[ng[0] + 1] = scm;
    }
    int declined;
    if ((*err = sm__dnnl_bmm(dnnl, &ba, ctx, &declined)) || !declined) return 1;
  }
  int x = ct ? 1 : 0; /* the operand that is A of the row-major product */
  gemm_job j = {ct ? sm_tensor_data(opnd[1]) : sm_tensor_data(opnd[0]),
                ct ? sm_tensor_data(opnd[0]) : sm_tensor_data(opnd[1]),
                out,
                dt,
                sm_dtype_size(dt),
                ct ? N : M,
                ct ? M : N,
                K,
                ct ? ldb : lda,
                ct ? lda : ldb,
                ldc,
                ct ? !tb : ta,
                ct ? !ta : tb,
                NULL,
                0,
                0};
  int64_t nb = 1;
  for (int i = 0; i < ng[0]; i++) nb *= size[grp[0][i]];
  double macs = (double)nb * (double)M * (double)N * (double)K;
  if (nb == 1 && dnnl && j.M > 1 && j.ldc == j.N && j.ldb == (j.tb ? j.K : j.N)) {
    sm__dnnl_mm_args da = {j.M, j.N, j.K, j.lda, j.ta, j.tb, (const float *)j.a, (const float *)j.b, NULL, sm__tensor_uid(opnd[1 - x]), out,
                           SM_NN_ACT_NONE, 0.0f};
    int declined;
    if ((*err = sm__dnnl_matmul(dnnl, &da, ctx, &declined)) || !declined) return 1;
  }
  sm__nn_blas_init();
  int64_t *off = NULL;
  if (nb > 1) { /* each batch's offsets, by an odometer over the batch labels */
    if (!(off = sm__kctx_scratch(ctx, (size_t)nb * 3 * sizeof *off, err))) return 1;
    int64_t idx[MAX_LABELS] = {0}, o[3] = {0, 0, 0};
    const int *bl = grp[0];
    for (int64_t b = 0; b < nb; b++) {
      off[3 * b + x] = o[0], off[3 * b + 1 - x] = o[1], off[3 * b + 2] = o[2];
      for (int i = ng[0] - 1; i >= 0; i--) {
        int l = bl[i];
        for (int t = 0; t < 3; t++) o[t] += stride[t][l];
        if (++idx[l] < size[l]) break;
        for (int t = 0; t < 3; t++) o[t] -= stride[t][l] * size[l];
        idx[l] = 0;
      }
    }
  }
  j.off = off;
  /* enough batches to go round: one gemm each (a unit of fewer rows packs op(B) again); else
   * ~64K multiply-adds and at least 32 rows per unit (as nn_matmul.c cuts its batches) */
  int64_t per_row = j.N * j.K;
  j.rows = nb >= 8 ? j.M : per_row >= 65536 / 32 ? 32 : 65536 / per_row;
  if (j.rows > j.M) j.rows = j.M;
  j.upb = (j.M + j.rows - 1) / j.rows;
  sm__parallel_for(macs < SM_NN_PAR_MIN_MACS ? NULL : sm__kctx_pool(ctx), nb * j.upb, 1, gemm_units, &j);
  sm__kctx_scratch_free(ctx, off);
  return 1;
}

/* The shape as TF prints it in messages: "[2,3,4]". */
static void dims_text(const sm_tensor *t, char *buf, size_t cap) {
  size_t n = 0;
  buf[n++] = '[';
  for (int i = 0; i < sm_tensor_rank(t) && n + 24 < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)sm_tensor_dims(t)[i]);
  snprintf(buf + n, cap - n, "]");
}

static sm_status *einsum_compute(const void *state, sm_kctx *ctx) {
  const einsum_state *st = state;
  int64_t dim_of[MAX_LABELS];
  for (int i = 0; i < MAX_LABELS; i++) dim_of[i] = -1;
  int dt = sm_tensor_dtype(sm__kctx_input(ctx, 0));
  const void *data[2] = {NULL, NULL};
  /* This run's labels per axis: the named ones, and the ellipsis dims (right-aligned over E, the
   * most any operand has) as labels NAMED_LABELS + k; an ellipsis dim of size 1 that broadcasts
   * gets stride 0 (bc). */
  int lab[2][SM_MAX_RANK], bc[2][SM_MAX_RANK], ne[2] = {0, 0}, E = 0;
  for (int o = 0; o < st->nin; o++) {
    const sm_tensor *t = sm__kctx_input(ctx, o);
    if (sm_tensor_dtype(t) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum operands differ in dtype");
    int r = sm_tensor_rank(t);
    if (st->ell[o] < 0 && r != st->rank[o])
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected input %d to have rank %d but got: %d", o, st->rank[o], r);
    if (st->ell[o] >= 0 && r < st->rank[o])
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected input %d to have rank at least %d but got: %d", o,
                           st->rank[o], r);
    ne[o] = r - st->rank[o];
    if (ne[o] > E) E = ne[o];
  }
  int64_t bdim[SM_MAX_RANK];
  for (int k = 0; k < E; k++) bdim[k] = 1;
  for (int o = 0; o < st->nin; o++) {
    const sm_tensor *t = sm__kctx_input(ctx, o);
    int r = sm_tensor_rank(t);
    for (int i = 0, n = 0; i < r; i++) {
      int64_t d = sm_tensor_dims(t)[i];
      bc[o][i] = 0;
      if (st->ell[o] >= 0 && i >= st->ell[o] && i < st->ell[o] + ne[o]) {
        int k = E - ne[o] + (i - st->ell[o]);
        lab[o][i] = NAMED_LABELS + k;
        if (d != 1 && bdim[k] != 1 && bdim[k] != d) {
          char s0[256], s1[256];
          dims_text(sm__kctx_input(ctx, 0), s0, sizeof s0);
          dims_text(sm__kctx_input(ctx, st->nin - 1), s1, sizeof s1);
          return sm_status_new(SM_INVALID_ARGUMENT, "Invalid broadcasting dimensions: %s vs. %s", s0, s1);
        }
        if (d != 1) bdim[k] = d;
        continue;
      }
      int id = st->lab[o][n++];
      lab[o][i] = id;
      if (dim_of[id] >= 0 && dim_of[id] != d) {
        char sh[256];
        dims_text(t, sh, sizeof sh);
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Expected dimension %lld at axis %d of the input shaped %s but got dimension %lld (Einsum "
                             "label '%c')",
                             (long long)dim_of[id], i, sh, (long long)d, id < 26 ? 'a' + id : 'A' + id - 26);
      }
      dim_of[id] = d;
    }
    data[o] = sm_tensor_data(t);
  }
  for (int k = 0; k < E; k++) dim_of[NAMED_LABELS + k] = bdim[k];
  for (int o = 0; o < st->nin; o++) /* the size-1 ellipsis dims that broadcast */
    for (int i = 0; i < sm_tensor_rank(sm__kctx_input(ctx, o)); i++)
      if (lab[o][i] >= NAMED_LABELS && sm_tensor_dims(sm__kctx_input(ctx, o))[i] == 1 && dim_of[lab[o][i]] != 1)
        bc[o][i] = 1;
  int out_lab[SM_MAX_RANK], out_rank = st->out_rank;
  if (st->out_ell < 0) {
    if (E > 0)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Output contains %d broadcasting dimension(s) but no ellipsis (...) was found in the output "
                           "subscripts.",
                           E);
    memcpy(out_lab, st->out_lab, (size_t)out_rank * sizeof *out_lab);
  } else {
    if (out_rank + E > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum: the output has too many dims");
    int n = 0;
    for (int i = 0; i < st->out_ell; i++) out_lab[n++] = st->out_lab[i];
    for (int k = 0; k < E; k++) out_lab[n++] = NAMED_LABELS + k;
    for (int i = st->out_ell; i < st->out_rank; i++) out_lab[n++] = st->out_lab[i];
    out_rank = n;
  }
  /* The labels in use, and each operand's (and the output's) element stride per label. */
  int ids[MAX_LABELS], nl = 0;
  int64_t size[MAX_LABELS], stride[3][MAX_LABELS];
  memset(stride, 0, sizeof stride);
  for (int id = 0; id < MAX_LABELS; id++)
    if (dim_of[id] >= 0) ids[nl++] = id;
  int64_t out_dims[SM_MAX_RANK];
  for (int i = 0; i < out_rank; i++) out_dims[i] = dim_of[out_lab[i]];
  sm_tensor *y;
  /* a float or complex product writes every element (gemm, beta 0); the summation loops add into zeros */
  int gemm = (dt == SM_FLOAT || dt == SM_COMPLEX64 || dt == SM_COMPLEX128) && st->nin == 2;
  sm_status *s = (gemm ? sm__kctx_alloc_output_uninit : sm__kctx_alloc_output)(ctx, 0, dt, out_rank, out_dims, &y);
  if (s) return s;
  void *out = sm_tensor_data(y);
  size_t out_bytes = (size_t)sm_tensor_num_elements(y) * sm_dtype_size(dt);
  uint64_t total = 1;
  for (int l = 0; l < nl; l++) {
    size[l] = dim_of[ids[l]];
    if (sm__mul_u64(total, (uint64_t)size[l], &total) || total > ((uint64_t)1 << 40))
      return sm_status_new(SM_OUT_OF_RANGE, "Einsum: too many terms to sum");
  }
  if (total == 0) {
    if (gemm && out_bytes) memset(out, 0, out_bytes); /* an empty contraction: zeros */
    return NULL;
  }
  for (int o = 0; o < st->nin; o++) {
    int64_t str = 1;
    for (int i = sm_tensor_rank(sm__kctx_input(ctx, o)) - 1; i >= 0; i--) {
      for (int l = 0; l < nl; l++)
        if (ids[l] == lab[o][i] && !bc[o][i]) stride[o][l] += str;
      str *= sm_tensor_dims(sm__kctx_input(ctx, o))[i];
    }
  }
  int64_t str = 1;
  for (int i = out_rank - 1; i >= 0; i--) {
    for (int l = 0; l < nl; l++)
      if (ids[l] == out_lab[i]) stride[2][l] += str;
    str *= out_dims[i];
  }
  if (gemm) {
    const sm_tensor *opnd[2] = {sm__kctx_input(ctx, 0), sm__kctx_input(ctx, 1)};
    if (gemm_path(ctx, st->dnnl, opnd, out, nl, size, (const int64_t(*)[MAX_LABELS])stride, &s)) return s;
    memset(out, 0, out_bytes);
  }
  switch (dt) {
  case SM_FLOAT: sum_f32(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_DOUBLE: sum_f64(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_INT32: sum_i32(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_INT64: sum_i64(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_COMPLEX64: sum_c64(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_COMPLEX128: sum_c128(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  default: return sm_status_new(SM_UNIMPLEMENTED, "Einsum of dtype %s is not supported", sm_dtype_name(dt));
  }
}

const sm_kernel sm_kernels_einsum[] = {
    {"Einsum", einsum_prepare, einsum_compute, einsum_release, 0},
    {0},
};

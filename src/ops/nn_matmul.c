/* nn_matmul.c - MatMul and BatchMatMul/V2/V3 (ops.md §3.7): float through cblas_sgemm, double
 * through dgemm, complex64/complex128 through cgemm/zgemm (BatchMatMul's adj_x/adj_y conjugate
 * as well as transpose; MatMul's transpose_a/b only transpose, as TF), int32/int64 by plain loops with wrap-around; _FusedMatMul (float: MatMul with a
 * bias and an activation applied to each finished block, per its fused attrs, nn_fuse.c). One
 * driver serves all: the
 * work is cut into (batch, row block) units sized to ~64K multiply-adds and spread over the
 * runtime's pool, each unit one single-threaded gemm (OpenBLAS threading is off, see nn.c); one
 * float row (a batch-1 Dense) streams B once through nn_gemm.c's gemv kernels, a large one split
 * over the pool by B's rows (each thread one contiguous block into its own y, the y's added
 * after) or, B transposed, by B's columns. With
 * oneDNN on (nn_dnnl.c), a float MatMul of more than one row, and a BatchMatMul whose second
 * operand is one matrix for every batch (a Dense on a 3-D input, one batch or more), run there instead with that
 * operand packed once per tensor. Never writes its inputs. */
#include <cblas.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/tensor_internal.h"
#include "ops/nn_dnnl.h"
#include "ops/nn_internal.h"

/* A one-row product's B from a checkpoint file, copied onto huge pages (hugeb below). */
typedef struct mm_hugeb {
  pthread_mutex_t mu;
  int tried;        /* under mu: a copy was attempted (one per kernel instance, ever) */
  const void *src;  /* the B it copies (data pointer and sm__tensor_uid), set before copy */
  uint64_t uid;
  void *raw;        /* the sm__alloc_lasting block */
  float *copy;      /* atomic: in raw, 64-byte aligned; published once, freed with the state */
} mm_hugeb;

typedef struct mm_state {
  int ta, tb;       /* transpose_a/b or adj_x/y */
  int adj;          /* BatchMatMul: ta/tb are adjoints (conjugate transposes of a complex operand) */
  int fused;        /* _FusedMatMul: the bias is input 2, then f.act */
  sm__nn_fused f;
  sm__dnnl_cache *dnnl; /* float MatMul / _FusedMatMul with oneDNN on (nn_dnnl.c); else NULL */
  mm_hugeb *hb;         /* MatMul / _FusedMatMul: see hugeb; else NULL */
} mm_state;

typedef struct mm_job {
  int dtype, ta, tb;
  int64_t M, N, K;
  const char *A, *B;
  char *C;
  const int64_t *aoff, *boff; /* element offset of batch b's matrices; NULL: all at 0 */
  int64_t rows, upb;          /* rows per unit, units per batch */
  const float *bias;          /* float only: fused epilogue (nn_raw.h) over each finished block */
  int act, accumulate;        /* accumulate: C += product (float only; no epilogue then) */
  float alpha;                /* LeakyRelu's */
  int64_t pieces;             /* > 1: one float row, B's rows split in that many pieces (gemv_krows) */
  float *part;                /* then the y of pieces 1 .. pieces - 1, N floats each */
  int conj;                   /* complex: a transposed operand is conjugated too (adj_x/adj_y) */
} mm_job;

#define MM_INT_LOOP(T, UT)                                                                         \
  do {                                                                                             \
    const T *A = (const T *)j->A + ao, *B = (const T *)j->B + bo;                                   \
    T *C = (T *)j->C + co;                                                                         \
    for (int64_t i = r0; i < r1; i++) {                                                            \
      T *c = C + i * N;                                                                            \
      for (int64_t k = 0; k < K; k++) {                                                            \
        UT a = (UT)(j->ta ? A[k * M + i] : A[i * K + k]);                                          \
        if (j->tb)                                                                                 \
          for (int64_t n = 0; n < N; n++) c[n] = (T)((UT)c[n] + a * (UT)B[n * K + k]);             \
        else                                                                                       \
          for (int64_t n = 0; n < N; n++) c[n] = (T)((UT)c[n] + a * (UT)B[k * N + n]);             \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static void mm_units(void *ctx, int64_t begin, int64_t end) {
  const mm_job *j = ctx;
  const int64_t M = j->M, N = j->N, K = j->K;
  for (int64_t u = begin, next; u < end; u = next) {
    /* consecutive units of one batch make one gemm call */
    int64_t b = u / j->upb;
    next = (b + 1) * j->upb < end ? (b + 1) * j->upb : end;
    int64_t r0 = (u % j->upb) * j->rows, r1 = ((next - 1) % j->upb + 1) * j->rows;
    if (r1 > M) r1 = M;
    int64_t ao = j->aoff ? j->aoff[b] : 0, bo = j->boff ? j->boff[b] : 0, co = b * M * N;
    int64_t a_row = j->ta ? r0 : r0 * K; /* where op(A)'s row r0 starts */
    int lda = (int)(j->ta ? M : K), ldb = (int)(j->tb ? K : N);
    enum CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans, tb = j->tb ? CblasTrans : CblasNoTrans;
    switch (j->dtype) {
      case SM_FLOAT: {
        float *c = (float *)j->C + co + r0 * N;
        if (r1 - r0 == 1) {
          /* one row (a batch-1 Dense): gemm would pack all of B for it; gemv streams B once.
           * y is zeroed and beta is 1 so that an uninitialised output never meets beta = 0. */
          const float *a = (const float *)j->A + ao + a_row, *B = (const float *)j->B + bo;
          int inca = j->ta ? (int)M : 1;
          /* a narrow B (at most 128 columns, nn_gemm.c): all of y in registers; a wider one: its
           * rows streamed in order */
          if (j->tb || inca != 1 ||
              !(sm__nn_sgemv_narrow(K, N, a, B, N, c, j->accumulate) || sm__nn_sgemv_rows(K, N, a, B, N, c, j->accumulate))) {
            if (!j->accumulate) memset(c, 0, (size_t)N * sizeof *c);
            if (j->tb)
              cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, 1.0f, B, (int)K, a, inca, 1.0f, c, 1);
            else
              cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, 1.0f, B, (int)N, a, inca, 1.0f, c, 1);
          }
          if (j->bias || j->act) sm__nn_bias_act_f32(c, c, 1, N, j->bias, j->act, j->alpha);
          break;
        }
        cblas_sgemm(CblasRowMajor, ta, tb, (int)(r1 - r0), (int)N, (int)K, 1.0f, (const float *)j->A + ao + a_row, lda,
                    (const float *)j->B + bo, ldb, j->accumulate ? 1.0f : 0.0f, c, (int)N);
        if (j->bias || j->act) sm__nn_bias_act_f32(c, c, r1 - r0, N, j->bias, j->act, j->alpha);
        break;
      }
      case SM_DOUBLE:
        cblas_dgemm(CblasRowMajor, ta, tb, (int)(r1 - r0), (int)N, (int)K, 1.0, (const double *)j->A + ao + a_row, lda,
                    (const double *)j->B + bo, ldb, 0.0, (double *)j->C + co + r0 * N, (int)N);
        break;
      case SM_COMPLEX64: {
        static const float one[2] = {1.0f, 0.0f}, zero[2] = {0.0f, 0.0f};
        enum CBLAS_TRANSPOSE cta = j->ta ? (j->conj ? CblasConjTrans : CblasTrans) : CblasNoTrans;
        enum CBLAS_TRANSPOSE ctb = j->tb ? (j->conj ? CblasConjTrans : CblasTrans) : CblasNoTrans;
        cblas_cgemm(CblasRowMajor, cta, ctb, (int)(r1 - r0), (int)N, (int)K, one, (const float *)j->A + 2 * (ao + a_row),
                    lda, (const float *)j->B + 2 * bo, ldb, zero, (float *)j->C + 2 * (co + r0 * N), (int)N);
        break;
      }
      case SM_COMPLEX128: {
        static const double one[2] = {1.0, 0.0}, zero[2] = {0.0, 0.0};
        enum CBLAS_TRANSPOSE cta = j->ta ? (j->conj ? CblasConjTrans : CblasTrans) : CblasNoTrans;
        enum CBLAS_TRANSPOSE ctb = j->tb ? (j->conj ? CblasConjTrans : CblasTrans) : CblasNoTrans;
        cblas_zgemm(CblasRowMajor, cta, ctb, (int)(r1 - r0), (int)N, (int)K, one, (const double *)j->A + 2 * (ao + a_row),
                    lda, (const double *)j->B + 2 * bo, ldb, zero, (double *)j->C + 2 * (co + r0 * N), (int)N);
        break;
      }
      case SM_INT32:
        MM_INT_LOOP(int32_t, uint32_t);
        break;
      case SM_INT64:
        MM_INT_LOOP(int64_t, uint64_t);
        break;
    }
  }
}

/* One float row times a large B, over columns [first * GEMV_COLS, last * GEMV_COLS): each thread
 * streams its share of B through gemv (one unit of rows streamed all of B on one thread). */
#define GEMV_COLS 256
static void gemv_cols(void *ctx, int64_t first, int64_t last) {
  const mm_job *j = ctx;
  const int64_t N = j->N, K = j->K, n0 = first * GEMV_COLS, n1 = last * GEMV_COLS < N ? last * GEMV_COLS : N;
  const float *a = (const float *)j->A + (j->aoff ? j->aoff[0] : 0), *B = (const float *)j->B + (j->boff ? j->boff[0] : 0);
  float *c = (float *)j->C + n0;
  if (!j->accumulate) memset(c, 0, (size_t)(n1 - n0) * sizeof *c); /* as mm_units: beta 1 over zeros */
  if (j->tb)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)(n1 - n0), (int)K, 1.0f, B + n0 * K, (int)K, a, 1, 1.0f, c, 1);
  else
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)(n1 - n0), 1.0f, B + n0, (int)N, a, 1, 1.0f, c, 1);
  if (j->bias || j->act) sm__nn_bias_act_f32(c, c, 1, n1 - n0, j->bias ? j->bias + n0 : NULL, j->act, j->alpha);
}

/* One float row times a large B (not transposed): piece i of B's rows, [i K / pieces, (i + 1) K /
 * pieces), is one contiguous block that one thread streams once, in order (sm__nn_sgemv_rows);
 * piece 0's y is C, piece i's part + (i - 1) N (its own buffer: no line shared with another
 * piece's), added by mm_dispatch after the loop. */
static void gemv_krows(void *ctx, int64_t first, int64_t last) {
  const mm_job *j = ctx;
  const int64_t N = j->N, K = j->K;
  const float *a = (const float *)j->A + (j->aoff ? j->aoff[0] : 0), *B = (const float *)j->B + (j->boff ? j->boff[0] : 0);
  for (int64_t i = first; i < last; i++) {
    int64_t k0 = i * K / j->pieces, k1 = (i + 1) * K / j->pieces;
    float *y = i ? j->part + (i - 1) * N : (float *)j->C;
    int acc = i == 0 && j->accumulate;
    if (!sm__nn_sgemv_rows(k1 - k0, N, a + k0, B + k0 * N, N, y, acc) && !acc) memset(y, 0, (size_t)N * sizeof *y);
  }
}

/* SM_NN_GEMV_COLS=0 (bench/'s A/B switch), read once */
static int gemv_cols_off;
static double gemv_narrow_one_thread_bytes; /* krows_pieces */
static pthread_once_t gemv_cols_once = PTHREAD_ONCE_INIT;
static void gemv_cols_read(void) {
  const char *e = getenv("SM_NN_GEMV_COLS");
  gemv_cols_off = e && !strcmp(e, "0");
  long l2 = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
  l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  gemv_narrow_one_thread_bytes = l2 >= 65536 ? (double)l2 : (double)(2 << 20);
  e = getenv("SM_NN_GEMV_NARROW_BYTES");
  char *end = NULL;
  double x = e && *e ? strtod(e, &end) : -1;
  if (end && !*end && x >= 0 && x < 1e18) gemv_narrow_one_thread_bytes = x;
}

/* Spreads C[b] = op(A[b]) * op(B[b]) for nb batches over the pool (M, N, K > 0, each < 2^31). */
static void mm_dispatch(sm_threadpool *pool, mm_job *j, int64_t nb) {
  /* a batch-1 Dense over 4M+ weights (VGG16's 4096 x 4096): slices of B's columns (A's one row
   * has stride 1 whether transposed or not); SM_NN_GEMV_COLS=0 keeps one thread (for A/B) */
  pthread_once(&gemv_cols_once, gemv_cols_read);
  if (j->dtype == SM_FLOAT && j->M == 1 && nb == 1 && j->pieces > 1 && j->part) {
    sm__parallel_for(pool, j->pieces, 1, gemv_krows, j);
    float *c = (float *)j->C;
    for (int64_t i = 1; i < j->pieces; i++)
      for (int64_t n = 0; n < j->N; n++) c[n] += j->part[(i - 1) * j->N + n];
    if (j->bias || j->act) sm__nn_bias_act_f32(c, c, 1, j->N, j->bias, j->act, j->alpha);
    return;
  }
  if (j->dtype == SM_FLOAT && j->M == 1 && nb == 1 && j->N >= 2 * GEMV_COLS &&
      (double)j->N * (double)j->K >= SM_NN_PAR_MIN_MACS && !gemv_cols_off) {
    sm__parallel_for(pool, (j->N + GEMV_COLS - 1) / GEMV_COLS, 1, gemv_cols, j);
    return;
  }
  /* ~64K multiply-adds and at least 64 rows per unit: small enough to balance, big enough that
   * gemm's packing of B (K x N, once per call) is amortised over many rows */
  int64_t per_row = j->N * j->K;
  j->rows = per_row >= 65536 / 64 ? 64 : 65536 / per_row;
  if (j->rows > j->M) j->rows = j->M;
  j->upb = (j->M + j->rows - 1) / j->rows;
  int64_t units = nb * j->upb;
  double macs = (double)nb * (double)j->M * (double)per_row;
  sm__parallel_for(macs < SM_NN_PAR_MIN_MACS ? NULL : pool, units, 1, mm_units, j);
}

/* Sets j->pieces for gemv_krows when the product is a batch-1 Dense worth the pool (the same
 * threshold as gemv_cols; SM_NN_GEMV_COLS=0 keeps one thread, for A/B): the pool's threads, at
 * most K. 1 when the caller must then give j->part krows_bytes(j). Not for a narrow B (at most
 * 128 columns: sm__nn_sgemv_narrow, all of y in registers, on one thread) under 2 MiB (one core's
 * L2 here, where a model's later calls find it): ~10 us of work, less than waking the pool's
 * worker and splitting costs. The seed CNN's 5408 x 64 Dense (1.4 MB) split in two took the
 * model's batch-1 call from 0.016-0.019 ms to 0.021-0.026 ms, which of the two depending on where
 * the heap put the call's buffers (the model path's length moved it; bench/RESULTS.md, session 15
 * h8). A narrow B of 2 MiB or more, read from memory, streams ~2x faster split (same place).
 * Without AVX-512 (nn_gemm.c's AVX2 clone) only B of at most 2048 columns: wider ones go to
 * gemv_cols (OpenBLAS), as fast or faster there (bench/RESULTS.md session 18 b2).
 * "One core's L2" is read from the machine (sysconf; 2 MiB when it does not say): on the AVX2 EPYC
 * VM (512 KiB of L2 a core) the same 1.4 MB B streams from L3, and split in two the step's minimum
 * fell 18.6 -> 11.8 us, the call's best 34 -> 30 us (bench/RESULTS.md session 20, e8).
 * SM_NN_GEMV_NARROW_BYTES=<bytes> sets the bound (0: split every narrow B; for A/B). */
#define GEMV_NARROW_N 128
static int krows_pieces(sm_threadpool *pool, mm_job *j, int64_t nb) {
  pthread_once(&gemv_cols_once, gemv_cols_read);
  j->pieces = 0;
  double macs = (double)j->N * (double)j->K;
  int narrow_small = j->N <= GEMV_NARROW_N && macs * sizeof(float) < gemv_narrow_one_thread_bytes;
  if (j->dtype == SM_FLOAT && j->M == 1 && nb == 1 && !j->tb && !gemv_cols_off && !narrow_small &&
      macs >= SM_NN_PAR_MIN_MACS && (sm__nn_sgemv_rows_on() || (sm__nn_sgemv_rows_avx2_on() && j->N <= 2048)))
    j->pieces = sm__threadpool_nthreads(pool) < j->K ? sm__threadpool_nthreads(pool) : j->K;
  return j->pieces > 1;
}
static size_t krows_bytes(const mm_job *j) { return (size_t)((j->pieces - 1) * j->N) * sizeof(float); }

/* Runs C[b] = op(A[b]) * op(B[b]) for nb batches into a zeroed C. */
static sm_status *mm_run(sm_kctx *ctx, mm_job *j, int64_t nb) {
  if (j->M == 0 || j->N == 0 || j->K == 0 || nb == 0) return NULL; /* output already zero */
  if (j->M > INT_MAX || j->N > INT_MAX || j->K > INT_MAX)
    return sm_status_new(SM_UNIMPLEMENTED, "matrix dimensions [%lld,%lld]x[%lld,%lld] exceed what BLAS takes (2^31-1)",
                         (long long)j->M, (long long)j->K, (long long)j->K, (long long)j->N);
  sm_threadpool *pool = sm__kctx_pool(ctx);
  sm_status *st = NULL;
  if (krows_pieces(pool, j, nb) && !(j->part = sm__kctx_scratch(ctx, krows_bytes(j), &st))) return st;
  mm_dispatch(pool, j, nb);
  sm__kctx_scratch_free(ctx, j->part);
  return NULL;
}

/* nn_raw.h. Dimensions beyond what BLAS takes (2^31-1) are the caller's to avoid: the trainer's
 * layers are far below. */
void sm__nn_matmul_f32(sm_threadpool *pool, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                      const float *a, const float *b, const float *bias, int act, int accumulate, float *c) {
  if (m <= 0 || n <= 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) return;
  if (accumulate) bias = NULL, act = SM_NN_ACT_NONE;
  if (k <= 0) { /* empty product */
    if (!accumulate) {
      memset(c, 0, (size_t)(m * n) * sizeof *c);
      sm__nn_bias_act_f32(c, c, m, n, bias, act, 0.0f);
    }
    return;
  }
  sm__nn_blas_init();
  mm_job j = {SM_FLOAT, trans_a != 0, trans_b != 0, m, n, k, (const char *)a, (const char *)b, (char *)c,
              NULL, NULL, 0, 0, bias, act, accumulate != 0, 0.0f, 0, NULL, 0};
  if (krows_pieces(pool, &j, 1)) j.part = sm__alloc(krows_bytes(&j)); /* none: gemv_cols */
  mm_dispatch(pool, &j, 1);
  sm__free(j.part);
}

/* nn_internal.h: a float product for another kernel (the While hoist, control_hoist.c), chosen as
 * MatMul chooses: oneDNN for more than one row when it is on, else the pool's gemm. */
sm_status *sm__nn_matmul_f32_kctx(sm_kctx *ctx, sm__dnnl_cache *dnnl, int trans_b, int64_t m, int64_t n, int64_t k,
                                 const float *a, const float *b, uint64_t b_uid, float *c) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return sm_status_new(SM_UNIMPLEMENTED, "matrix dimensions [%lld,%lld]x[%lld,%lld] exceed what BLAS takes (2^31-1)",
                         (long long)m, (long long)k, (long long)k, (long long)n);
  if (dnnl && m > 1 && n > 0 && k > 0) {
    sm__dnnl_mm_args da = {m, n, k, k, 0, trans_b != 0, a, b, NULL, b_uid, c, SM_NN_ACT_NONE, 0.0f};
    int declined;
    sm_status *st = sm__dnnl_matmul(dnnl, &da, ctx, &declined);
    if (st || !declined) return st;
  }
  sm__nn_matmul_f32(sm__kctx_pool(ctx), 0, trans_b, m, n, k, a, b, NULL, SM_NN_ACT_NONE, 0, c);
  return NULL;
}

/* The B a one-row float product streams (gemv, nn_gemm.c) when B is a checkpoint's tensor of 2
 * MiB or more: those are the variables file's page-cache pages, and whether the kernel maps them 2
 * MiB at a time depends on how the page cache was filled (VGG16's shared copy: none; a copy read
 * once: all), while on 4 KiB pages every 4 KiB of the stream is a TLB miss (VGG16 b1's three
 * Dense layers ~80 us a call slower, bench/RESULTS.md session 14). So the first such call copies B
 * into an sm__alloc_lasting block (huge pages) and drops the file's pages (resident size
 * unchanged); later calls with the same tensor (pointer and uid) read the copy. One copy per
 * kernel instance, never replaced: a B assigned later (a new uid) is read where it is. Off with
 * SM_HUGEPAGES=0. */
static const float *hugeb(const mm_state *s, const sm_tensor *b, int64_t M) {
  const float *B = sm_tensor_data(b);
  mm_hugeb *h = s->hb;
  size_t bytes = sm_tensor_nbytes(b);
  if (!h || M != 1 || s->tb || bytes < ((size_t)2 << 20) || !sm__tensor_file_backed(b)) return B;
  float *c = __atomic_load_n(&h->copy, __ATOMIC_ACQUIRE);
  if (!c && !__atomic_load_n(&h->tried, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&h->mu);
    if (!h->tried && sm__hugepages_on() && (h->raw = sm__alloc_lasting(bytes + 64))) {
      c = (float *)(((uintptr_t)h->raw + 63) & ~(uintptr_t)63); /* whole cache lines per AVX-512 load */
      for (size_t off = 0, step = (size_t)4 << 20; off < bytes; off += step) { /* the peak: + one step */
        size_t n = bytes - off < step ? bytes - off : step;
        memcpy((char *)c + off, (const char *)B + off, n);
        sm__file_map_drop_pages((const char *)B + off, n);
      }
      h->src = B;
      h->uid = sm__tensor_uid(b);
      __atomic_store_n(&h->copy, c, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&h->tried, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&h->mu);
    c = __atomic_load_n(&h->copy, __ATOMIC_ACQUIRE);
  }
  return c && h->src == (const void *)B && h->uid == sm__tensor_uid(b) ? c : B;
}

static sm_status *mm_hugeb_prepare(mm_state *s) {
  if (!(s->hb = calloc(1, sizeof *s->hb))) return sm_status_new(SM_NO_MEMORY, "out of memory");
  pthread_mutex_init(&s->hb->mu, NULL);
  return NULL;
}

static int mm_dtype_ok(int dt) {
  return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_INT32 || dt == SM_INT64 || dt == SM_COMPLEX64 || dt == SM_COMPLEX128;
}
/* gemm (beta 0) writes every element of its output */
static int mm_blas_dtype(int dt) { return dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_COMPLEX64 || dt == SM_COMPLEX128; }

static sm_status *mm_prepare(const sm_node *n, void **state, const char *fa, const char *fb) {
  mm_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = NULL;
  if (sm__node_attr(n, fa)) st = sm__node_attr_bool(n, fa, &s->ta);
  if (!st && sm__node_attr(n, fb)) st = sm__node_attr_bool(n, fb, &s->tb);
  if (!st && sm__node_num_outputs(n) == 1 && sm__node_num_inputs(n) == 2) {
    int dt = sm__node_output_dtype(n, 0);
    if (!mm_dtype_ok(dt) || sm__node_input_dtype(n, 0) != dt || sm__node_input_dtype(n, 1) != dt)
      st = sm_status_new(SM_UNIMPLEMENTED, "inputs %s x %s -> %s are not supported (float, double, int32, int64, complex64, complex128)", sm_dtype_name(sm__node_input_dtype(n, 0)) ? sm_dtype_name(sm__node_input_dtype(n, 0)) : "?",
                         sm_dtype_name(sm__node_input_dtype(n, 1)) ? sm_dtype_name(sm__node_input_dtype(n, 1)) : "?",
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  }
  if (st) {
    free(s);
    return st;
  }
  if (sm__node_num_outputs(n) == 1 && mm_blas_dtype(sm__node_output_dtype(n, 0))) sm__nn_blas_init();
  *state = s;
  return NULL;
}

/* oneDNN for a float MatMul (B, the weights, packed once per tensor: nn_dnnl.c) */
static sm_status *mm_dnnl_prepare(const sm_node *n, mm_state *s) {
  if (sm__node_num_outputs(n) == 1 && sm__node_output_dtype(n, 0) == SM_FLOAT && sm__dnnl_enabled())
    return sm__dnnl_cache_new(&s->dnnl);
  return NULL;
}

void sm__nn_matmul_release(void *state) {
  mm_state *s = state;
  if (!s) return;
  sm__dnnl_cache_free(s->dnnl);
  if (s->hb) {
    sm__free(s->hb->raw);
    pthread_mutex_destroy(&s->hb->mu);
    free(s->hb);
  }
  free(s);
}

sm_status *sm__nn_matmul_prepare(const sm_node *n, void **state) {
  sm_status *st = mm_prepare(n, state, "transpose_a", "transpose_b");
  if (!st && ((st = mm_dnnl_prepare(n, *state)) || (st = mm_hugeb_prepare(*state)))) {
    sm__nn_matmul_release(*state);
    *state = NULL;
  }
  return st;
}

sm_status *sm__nn_fused_matmul_prepare(const sm_node *n, void **state) {
  mm_state *s = NULL;
  sm__nn_fused f;
  sm_status *st = sm__nn_fused_prepare(n, 0, &f);
  if (!st) st = mm_prepare(n, (void **)&s, "transpose_a", "transpose_b");
  if (st) return st;
  s->fused = 1;
  s->f = f;
  if ((st = mm_dnnl_prepare(n, s)) || (st = mm_hugeb_prepare(s))) {
    sm__nn_matmul_release(s);
    return st;
  }
  sm__nn_blas_init();
  *state = s;
  return NULL;
}
sm_status *sm__nn_batch_matmul_prepare(const sm_node *n, void **state) {
  sm_status *st = mm_prepare(n, state, "adj_x", "adj_y");
  if (!st) ((mm_state *)*state)->adj = 1;
  if (!st && (st = mm_dnnl_prepare(n, *state))) {
    free(*state);
    *state = NULL;
  }
  return st;
}

static sm_status *check_inputs(sm_kctx *ctx, int nin, const sm_tensor **a, const sm_tensor **b) {
  if (sm__kctx_num_inputs(ctx) != nin) return sm_status_new(SM_INVALID_ARGUMENT, "expected %d inputs", nin);
  *a = sm__kctx_input(ctx, 0);
  *b = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(*a);
  if (sm_tensor_dtype(*b) != dt || !mm_dtype_ok(dt))
    return sm_status_new(SM_INVALID_ARGUMENT, "inputs are %s and %s; expected one of float, double, int32, int64, complex64, complex128",
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?",
                         sm_dtype_name(sm_tensor_dtype(*b)) ? sm_dtype_name(sm_tensor_dtype(*b)) : "?");
  return NULL;
}

sm_status *sm__nn_matmul(const void *state, sm_kctx *ctx) {
  const mm_state *s = state;
  const sm_tensor *a, *b;
  sm_status *st = check_inputs(ctx, s->fused ? 3 : 2, &a, &b);
  if (st) return st;
  char sa[64], sb[64];
  for (int i = 0; i < 2; i++) {
    const sm_tensor *t = i ? b : a;
    if (sm_tensor_rank(t) != 2)
      return sm_status_new(SM_INVALID_ARGUMENT, "In[%d] is not a matrix. Instead it has shape %s", i,
                           sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), sa, sizeof sa));
  }
  const int64_t *ad = sm_tensor_dims(a), *bd = sm_tensor_dims(b);
  int64_t M = s->ta ? ad[1] : ad[0], K = s->ta ? ad[0] : ad[1];
  int64_t K2 = s->tb ? bd[1] : bd[0], N = s->tb ? bd[0] : bd[1];
  if (K != K2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s",
                         sm_shape_str(2, ad, sa, sizeof sa), sm_shape_str(2, bd, sb, sizeof sb));
  sm_tensor *out;
  int64_t od[2] = {M, N};
  int dt = sm_tensor_dtype(a);
  /* _FusedMatMul (float: its prepare checked): the bias and the activation */
  const sm_tensor *fb = s->fused ? sm__kctx_input(ctx, 2) : NULL;
  int act = s->fused ? s->f.act : SM_NN_ACT_NONE;
  if (fb) {
    if (dt != SM_FLOAT || sm_tensor_dtype(fb) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "fused bias: value %s and bias %s", sm_dtype_name(dt),
                           sm_dtype_name(sm_tensor_dtype(fb)) ? sm_dtype_name(sm_tensor_dtype(fb)) : "?");
    if (sm_tensor_rank(fb) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Biases must be 1D: %s",
                           sm_shape_str(sm_tensor_rank(fb), sm_tensor_dims(fb), sa, sizeof sa));
    if (sm_tensor_dims(fb)[0] != N)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Must provide as many biases as the last dimension of the input tensor: %s vs. %s",
                           sm_shape_str(1, sm_tensor_dims(fb), sa, sizeof sa), sm_shape_str(2, od, sb, sizeof sb));
  }
  /* gemm (beta 0) writes every element; the integer loops accumulate into zeros */
  int blas = mm_blas_dtype(dt) && K > 0;
  if ((st = (blas ? sm__kctx_alloc_output_uninit : sm__kctx_alloc_output)(ctx, 0, dt, 2, od, &out))) return st;
  mm_job j = {dt, s->ta, s->tb, M, N, K, sm_tensor_data(a), sm_tensor_data(b), sm_tensor_data(out),
              NULL, NULL, 0, 0, fb ? sm_tensor_data(fb) : NULL, act, 0, s->fused ? s->f.alpha : 0.0f, 0, NULL, 0};
  if (dt == SM_FLOAT && K > 0) j.B = (const char *)hugeb(s, b, M);
  if (K == 0 && (j.bias || j.act) && M > 0 && N > 0) {
    sm__nn_bias_act_f32(sm_tensor_data(out), sm_tensor_data(out), M, N, j.bias, j.act, j.alpha);
    return NULL;
  }
  if (s->dnnl && dt == SM_FLOAT && M > 1 && N > 0 && K > 0) {
    /* oneDNN where it wins (measured, bench/RESULTS.md): more than one row; a one-row product
     * streams B once through gemv */
    sm__dnnl_mm_args da = {M, N, K, s->ta ? M : K, s->ta, s->tb, (const float *)j.A, (const float *)j.B, j.bias,
                           sm__tensor_uid(b), (float *)j.C, act, j.alpha};
    int declined;
    if ((st = sm__dnnl_matmul(s->dnnl, &da, ctx, &declined)) || !declined) return st;
  }
  return mm_run(ctx, &j, 1);
}

sm_status *sm__nn_batch_matmul(const void *state, sm_kctx *ctx) {
  const mm_state *s = state;
  const sm_tensor *x, *y;
  sm_status *st = check_inputs(ctx, 2, &x, &y);
  if (st) return st;
  char sx[256], sy[256];
  int rx = sm_tensor_rank(x), ry = sm_tensor_rank(y);
  if (rx < 2) return sm_status_new(SM_INVALID_ARGUMENT, "In[0] ndims must be >= 2: %d", rx);
  if (ry < 2) return sm_status_new(SM_INVALID_ARGUMENT, "In[1] ndims must be >= 2: %d", ry);
  const int64_t *xd = sm_tensor_dims(x), *yd = sm_tensor_dims(y);
  int rb = (rx > ry ? rx : ry) - 2; /* output batch rank */
  int64_t od[SM_MAX_RANK];
  int64_t nb = 1;
  for (int i = 0; i < rb; i++) { /* right-aligned broadcasting of the batch dims */
    int ix = i - (rb - (rx - 2)), iy = i - (rb - (ry - 2));
    int64_t dx = ix >= 0 ? xd[ix] : 1, dy = iy >= 0 ? yd[iy] : 1;
    if (dx != dy && dx != 1 && dy != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "In[0] and In[1] must have compatible batch dimensions: %s vs. %s",
                           sm_shape_str(rx, xd, sx, sizeof sx), sm_shape_str(ry, yd, sy, sizeof sy));
    od[i] = dx == 1 ? dy : dx;
    if (__builtin_mul_overflow(nb, od[i], &nb))
      return sm_status_new(SM_INVALID_ARGUMENT, "batch dimensions of %s and %s overflow",
                           sm_shape_str(rx, xd, sx, sizeof sx), sm_shape_str(ry, yd, sy, sizeof sy));
  }
  int64_t M = s->ta ? xd[rx - 1] : xd[rx - 2], K = s->ta ? xd[rx - 2] : xd[rx - 1];
  int64_t K2 = s->tb ? yd[ry - 1] : yd[ry - 2], N = s->tb ? yd[ry - 2] : yd[ry - 1];
  if (K != K2)
    return sm_status_new(SM_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s",
                         sm_shape_str(rx, xd, sx, sizeof sx), sm_shape_str(ry, yd, sy, sizeof sy));
  od[rb] = M;
  od[rb + 1] = N;
  /* y one matrix for every batch (rank 2, or its batch dims all 1) and x's batches whole and
   * untransposed: the batches are the rows of one product [nb*M, K] x op(y), a Dense on a 3-D
   * input (Keras' Dense and EinsumDense export this), run as a MatMul: oneDNN with y packed once
   * per tensor when it is on, else one gemm that packs y once rather than once per batch */
  int y_bcast = 1, x_whole = 1;
  for (int i = 0; i < ry - 2; i++) y_bcast &= yd[i] == 1;
  for (int i = 0; i < rb; i++) {
    int ix = i - (rb - (rx - 2));
    x_whole &= (ix >= 0 ? xd[ix] : 1) == od[i];
  }
  int64_t rows = 0;
  int fold = y_bcast && x_whole && !s->ta && nb >= 1 && !__builtin_mul_overflow(nb, M, &rows) && rows <= INT_MAX;
  int dt = sm_tensor_dtype(x);
  /* gemm (beta 0) writes every element; the integer loops accumulate into zeros */
  int uninit = fold && K > 0 && mm_blas_dtype(dt);
  sm_tensor *out;
  if ((st = (uninit ? sm__kctx_alloc_output_uninit : sm__kctx_alloc_output)(ctx, 0, dt, rb + 2, od, &out))) return st;
  if (sm_tensor_num_elements(out) == 0) return NULL;
  if (fold) {
    mm_job j = {dt, 0, s->tb, rows, N, K, sm_tensor_data(x), sm_tensor_data(y), sm_tensor_data(out),
                NULL, NULL, 0, 0, NULL, 0, 0, 0.0f, 0, NULL, s->adj};
    if (s->dnnl && dt == SM_FLOAT && K > 0 && rows > 1) {
      sm__dnnl_mm_args da = {rows, N, K, K, 0, s->tb, (const float *)j.A, (const float *)j.B, NULL,
                             sm__tensor_uid(y), (float *)j.C, SM_NN_ACT_NONE, 0.0f};
      int declined;
      if ((st = sm__dnnl_matmul(s->dnnl, &da, ctx, &declined)) || !declined) return st;
    }
    return mm_run(ctx, &j, 1);
  }
  /* per-batch element offsets into x and y (stride 0 along broadcast dims) */
  int64_t *off = NULL;
  if (nb > 1) {
    if (!(off = sm__kctx_scratch(ctx, (size_t)nb * 2 * sizeof *off, &st))) return st;
    int64_t xs[SM_MAX_RANK], ys[SM_MAX_RANK], idx[SM_MAX_RANK];
    int64_t sxm = xd[rx - 2] * xd[rx - 1], sym = yd[ry - 2] * yd[ry - 1];
    for (int i = rb - 1; i >= 0; i--) {
      int ix = i - (rb - (rx - 2)), iy = i - (rb - (ry - 2));
      int64_t dx = ix >= 0 ? xd[ix] : 1, dy = iy >= 0 ? yd[iy] : 1;
      xs[i] = dx == 1 ? 0 : sxm;
      ys[i] = dy == 1 ? 0 : sym;
      sxm *= dx;
      sym *= dy;
      idx[i] = 0;
    }
    int64_t xo = 0, yo = 0;
    for (int64_t b = 0; b < nb; b++) {
      off[b] = xo;
      off[nb + b] = yo;
      for (int i = rb - 1; i >= 0; i--) { /* odometer */
        idx[i]++;
        xo += xs[i];
        yo += ys[i];
        if (idx[i] < od[i]) break;
        xo -= xs[i] * idx[i];
        yo -= ys[i] * idx[i];
        idx[i] = 0;
      }
    }
  }
  mm_job j = {sm_tensor_dtype(x), s->ta, s->tb, M, N, K, sm_tensor_data(x), sm_tensor_data(y), sm_tensor_data(out),
              off, off ? off + nb : NULL, 0, 0, NULL, 0, 0, 0.0f, 0, NULL, s->adj};
  st = mm_run(ctx, &j, nb);
  sm__kctx_scratch_free(ctx, off);
  return st;
}

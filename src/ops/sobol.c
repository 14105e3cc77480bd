/* sobol.c - the sobol kernel family: SobolSample (tf.math.sobol_sample), as TF's CPU kernel
 * (sobol_op.cc, after Joe and Kuo's notes): row r is point n = r + skip + 1 of the Sobol sequence
 * in Gray-code order, the XOR over the set bits k of gray(n) of dimension j's direction numbers
 * v_k = m_k / 2^(k+1), in float or double (exact in double; float rounds the 31-bit fraction to
 * nearest). The direction numbers come from sobol_table.h (recovered from TF by
 * tools/gen_sobol_table.py) for the first 1111 dimensions, decoded once and extended by Joe and
 * Kuo's recurrence; TF allows up to 21200, the rest are refused with a message saying why. One
 * known difference: TF computes its normalizing constant as 1. / (1 << 31) once a block of rows
 * reaches index 2^30, an int overflow that negates those points (how many depends on its thread
 * count); here they keep their sign. TF's messages for bad input. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/sobol_table.h"
#include "runtime/kernel.h"

#define SOBOL_BITS 31 /* v_0 .. v_30: every point index below 2^31 */
#define SOBOL_TF_MAX_DIM 21200

static uint32_t sobol_v[SM_SOBOL_TABLE_DIMS][SOBOL_BITS]; /* v_k as a fraction of 2^32 */
static pthread_once_t sobol_once = PTHREAD_ONCE_INIT;

static unsigned bit_at(size_t *pos) {
  size_t p = (*pos)++;
  char c = sm_sobol_bits[p / 4];
  unsigned nib = (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
  return (nib >> (3 - p % 4)) & 1u;
}

static unsigned bits(size_t *pos, int n) {
  unsigned v = 0;
  for (int i = 0; i < n; i++) v = v << 1 | bit_at(pos);
  return v;
}

static void sobol_decode(void) {
  /* how many primitive polynomials there are of each degree 1..13 (Joe and Kuo's order) */
  static const int per_degree[14] = {0, 1, 1, 2, 2, 6, 6, 18, 16, 48, 60, 176, 144, 630};
  for (int k = 0; k < SOBOL_BITS; k++) sobol_v[0][k] = 1u << (31 - k);
  size_t pos = 0;
  int d = 1;
  for (int s = 1; s <= 13 && d < SM_SOBOL_TABLE_DIMS; s++)
    for (int c = 0; c < per_degree[s] && d < SM_SOBOL_TABLE_DIMS; c++, d++) {
      uint32_t m[SOBOL_BITS];
      unsigned a = bits(&pos, s - 1);
      for (int i = 1; i <= s; i++) m[i - 1] = 2 * bits(&pos, i - 1) + 1;
      for (int k = s; k < SOBOL_BITS; k++) {
        uint32_t v = m[k - s] ^ (m[k - s] << s);
        for (int i = 1; i < s; i++)
          if ((a >> (s - 1 - i)) & 1) v ^= m[k - i] << i;
        m[k] = v;
      }
      for (int k = 0; k < SOBOL_BITS; k++) sobol_v[d][k] = m[k] << (31 - k);
    }
}

static sm_status *scalar_i32(const sm_tensor *t, const char *name, int32_t *v) {
  if (sm_tensor_rank(t) != 0) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar", name);
  if (sm_tensor_dtype(t) != SM_INT32) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be int32", name);
  *v = *(const int32_t *)sm_tensor_data(t);
  return NULL;
}

static sm_status *sobol_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  int32_t dim, num, skip;
  sm_status *st = scalar_i32(sm__kctx_input(ctx, 0), "dim", &dim);
  if (!st) st = scalar_i32(sm__kctx_input(ctx, 1), "num_results", &num);
  if (!st) st = scalar_i32(sm__kctx_input(ctx, 2), "skip", &skip);
  if (st) return st;
  if (dim < 1) return sm_status_new(SM_INVALID_ARGUMENT, "dim must be at least one");
  if (dim > SOBOL_TF_MAX_DIM) return sm_status_new(SM_INVALID_ARGUMENT, "dim must be at most %d", SOBOL_TF_MAX_DIM);
  if (num < 1) return sm_status_new(SM_INVALID_ARGUMENT, "num_results must be at least one");
  if (skip < 0) return sm_status_new(SM_INVALID_ARGUMENT, "skip must be non-negative");
  if (!(num < INT32_MAX - skip)) return sm_status_new(SM_INVALID_ARGUMENT, "num_results+skip must be less than %d", INT32_MAX);
  if (dim > SM_SOBOL_TABLE_DIMS)
    return sm_status_new(SM_UNIMPLEMENTED, "SobolSample: this runtime carries direction numbers for dim <= %d, got %d",
                         SM_SOBOL_TABLE_DIMS, dim);
  int dt = SM_FLOAT;
  const sm_node *node = sm__kctx_node(ctx);
  if (sm__node_attr(node, "dtype") && (st = sm__node_attr_type(node, "dtype", &dt))) return st;
  if (dt != SM_FLOAT && dt != SM_DOUBLE) return sm_status_new(SM_INVALID_ARGUMENT, "SobolSample: dtype must be float or double");
  pthread_once(&sobol_once, sobol_decode);
  sm_tensor *y;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, dt, 2, (int64_t[]){num, dim}, &y))) return st;
  uint32_t *x = sm__kctx_scratch(ctx, (size_t)dim * sizeof *x, &st);
  if (!x) return st;
  uint32_t n = (uint32_t)skip + 1, g = n ^ (n >> 1);
  for (int j = 0; j < dim; j++) {
    x[j] = 0;
    for (int k = 0; k < SOBOL_BITS; k++)
      if ((g >> k) & 1) x[j] ^= sobol_v[j][k];
  }
  for (int32_t r = 0; r < num; r++, n++) {
    if (r) { /* gray(n) differs from gray(n - 1) in the lowest zero bit of n - 1 */
      int k = 0;
      for (uint32_t t = n - 1; t & 1; t >>= 1) k++;
      for (int j = 0; j < dim; j++) x[j] ^= sobol_v[j][k];
    }
    for (int j = 0; j < dim; j++) {
      double v = (double)x[j] * (1.0 / 4294967296.0);
      if (dt == SM_DOUBLE) ((double *)sm_tensor_data(y))[(int64_t)r * dim + j] = v;
      else ((float *)sm_tensor_data(y))[(int64_t)r * dim + j] = (float)v;
    }
  }
  sm__kctx_scratch_free(ctx, x);
  return NULL;
}

const sm_kernel sm_kernels_sobol[] = {
    {"SobolSample", NULL, sobol_compute, NULL, 0},
    {0},
};

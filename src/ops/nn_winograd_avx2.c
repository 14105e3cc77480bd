/* nn_winograd_avx2.c - the float NHWC 3x3 convolution (stride 1, dilation 1, any pads, one group)
 * as Winograd F(2x2, 3x3), F(3x3, 3x3) or F(4x4, 3x3) on AVX2 + FMA CPUs without AVX-512 (issue #15,
 * session 18 b1; F(3x3), the points and the channel blocks session 19 c7): what nn_dnnl.c runs in
 * place of oneDNN's jit:avx2 convolution where bench/bench_conv3x3.c measured it faster (sm__wino_*
 * below; the choice is nn_dnnl.c's wino_conv / wino_tile: F(3x3) over 24x24+ output, else F(2x2)).
 *
 * For F(m x m) with A = m + 2 and P = A^2 positions: filters transformed once (sm__wino_pack, in
 * double, then rounded to float) into U [P][Kp/16][Cp][16] (Cp: C rounded up to 8, Kp: Cout to 16,
 * zeros in the padding). Input: A x A tiles with a stride of m (zeros outside the image), B^T d B
 * per 8 channels into V [P][T][Cp] for a block of T tiles; then P products M[p] = V[p] U[p] ([T, Cp]
 * x [Cp, Kp], a 6x16 FMA kernel; with a->cb the channels summed in blocks of cb, each block's sum
 * then added, which halves the rounding error of long sums); then A^T m A into an m x m x Cout tile
 * (or a piece's slice [16 kb0, 16 kb1) of the Cout) and the epilogue in the unfused chain's order:
 * (product + bias) + addend, then the activation (sm__nn_bias_act_f32), so fused and unfused nodes
 * have the same bits (both convolve here). Error vs a float64 direct sum: bench/RESULTS.md
 * "Session 18 - b1" and "Session 19 - c7". */
#include <stdlib.h>
#include <string.h>

#include "ops/nn_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WINO_ON 1
#endif

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

size_t sm__wino_packed_floats(int m, int64_t C, int64_t K) {
  return (size_t)((m + 2) * (m + 2)) * (size_t)round_up(C, 8) * (size_t)round_up(K, 16);
}

/* filt HWIO [3][3][C][K] -> U: G g G^T per (c, k), F(m x m, 3x3). The interpolation points (with
 * infinity): F(2x2) 0, +-1; F(3x3) +-3/2, +-1/4; F(4x4) 0, +-2, +-1/2 (session 19 c7: the ones with the
 * least error of those tried, tools/wino_points.py; F(4x4)'s 0, +-1, +-2 were 2.5x the error). Every
 * fraction of the Toom-Cook matrices is in G (applied here, in double), so B^T and A^T are small
 * integers and powers of 2 (exact in float). */
void sm__wino_pack(int m, const float *filt, int64_t C, int64_t K, float *U) {
  static const double G4[6][3] = {{1.0 / 4, 0, 0},
                                  {1.0 / 120, 1.0 / 60, 1.0 / 30},
                                  {1.0 / 120, -1.0 / 60, 1.0 / 30},
                                  {-4.0 / 15, -2.0 / 15, -1.0 / 15},
                                  {-4.0 / 15, 2.0 / 15, -1.0 / 15},
                                  {0, 0, 1.0 / 4}};
  static const double G3[5][3] = {{1.0 / 210, 1.0 / 140, 3.0 / 280},
                                  {-1.0 / 210, 1.0 / 140, -3.0 / 280},
                                  {-2.0 / 35, -1.0 / 70, -1.0 / 280},
                                  {2.0 / 35, -1.0 / 70, 1.0 / 280},
                                  {0, 0, 1.0 / 64}};
  static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const double(*G)[3] = m == 4 ? G4 : m == 3 ? G3 : G2;
  int A = m + 2;
  int64_t Cp = round_up(C, 8), Kp = round_up(K, 16);
  memset(U, 0, sm__wino_packed_floats(m, C, K) * sizeof(float));
  for (int64_t c = 0; c < C; c++)
    for (int64_t k = 0; k < K; k++) {
      double g[3][3], t[6][3];
      for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++) g[y][x] = filt[((y * 3 + x) * C + c) * K + k];
      for (int i = 0; i < A; i++)
        for (int x = 0; x < 3; x++) t[i][x] = G[i][0] * g[0][x] + G[i][1] * g[1][x] + G[i][2] * g[2][x];
      for (int i = 0; i < A; i++)
        for (int j = 0; j < A; j++) {
          double v = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
          U[(((int64_t)(i * A + j) * (Kp / 16) + k / 16) * Cp + c) * 16 + k % 16] = (float)v;
        }
    }
}

/* tiles per block: 24 (bench_conv3x3 -DWINO, SM_WINO_T=6 / 24 / 48: 24 best or within noise on every
 * VGG16 / ResNet50 shape; 6 was 2.4x slower on the 512-channel ones, whose 37 MB of transformed
 * filters a block streams once). V and M of a block: 36 x 24 x (Cp + Kp) floats, 3.5 MB at 512 / 512. */
int64_t sm__wino_block(int64_t C, int64_t K) {
  (void)C, (void)K;
  return 24;
}

size_t sm__wino_scratch_floats(int64_t C, int64_t K, int64_t T) {
  int64_t Cp = round_up(C, 8), Kp = round_up(K, 16);
  return (size_t)(36 * T * (Cp + Kp) + 16 * Kp + Cp + 16);
}

int64_t sm__wino_tiles(const sm__wino_args *a) {
  return a->N * ((a->OH + a->m - 1) / a->m) * ((a->OW + a->m - 1) / a->m);
}

#ifdef WINO_ON
#define WF __attribute__((target("avx2,fma")))
#define AI static inline __attribute__((always_inline))

int sm__wino_cpu_ok(void) {
  static int ok = -1;
  if (ok < 0) ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
  return ok;
}

/* F(4x4, 3x3), points 0, +-2, +-1/2: B^T x (6 -> 6) */
WF AI void bt6(const __m256 x[6], __m256 y[6]) {
  __m256 f4 = _mm256_set1_ps(4.f), f17 = _mm256_set1_ps(17.f), f2 = _mm256_set1_ps(2.f), f8 = _mm256_set1_ps(8.f);
  y[0] = _mm256_fmadd_ps(f4, _mm256_add_ps(x[0], x[4]), _mm256_mul_ps(_mm256_set1_ps(-17.f), x[2]));
  __m256 e = _mm256_fmsub_ps(f4, x[4], x[2]), o = _mm256_fnmadd_ps(f2, x[1], _mm256_mul_ps(f8, x[3]));
  y[1] = _mm256_add_ps(e, o);
  y[2] = _mm256_sub_ps(e, o);
  e = _mm256_fnmadd_ps(f8, x[2], _mm256_mul_ps(f2, x[4])), o = _mm256_fnmadd_ps(f4, x[1], x[3]);
  y[3] = _mm256_add_ps(e, o);
  y[4] = _mm256_sub_ps(e, o);
  y[5] = _mm256_fnmadd_ps(f17, x[3], _mm256_mul_ps(f4, _mm256_add_ps(x[1], x[5])));
}

/* A^T m (6 -> 4) */
WF AI void at4(const __m256 m[6], __m256 o[4]) {
  __m256 s12 = _mm256_add_ps(m[1], m[2]), d12 = _mm256_sub_ps(m[1], m[2]);
  __m256 s34 = _mm256_add_ps(m[3], m[4]), d34 = _mm256_sub_ps(m[3], m[4]);
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
  o[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.f), d12, _mm256_mul_ps(_mm256_set1_ps(0.5f), d34));
  o[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.f), s12, _mm256_mul_ps(_mm256_set1_ps(0.25f), s34));
  o[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.f), d12, _mm256_mul_ps(_mm256_set1_ps(0.125f), d34)), m[5]);
}

/* F(3x3, 3x3), points +-3/2, +-1/4: B^T x (5 -> 5), A^T m (5 -> 3) */
WF AI void bt5(const __m256 x[5], __m256 y[5]) {
  __m256 e = _mm256_fmsub_ps(_mm256_set1_ps(32.f), x[3], _mm256_add_ps(x[1], x[1]));
  __m256 o = _mm256_fmsub_ps(_mm256_set1_ps(48.f), x[2], _mm256_mul_ps(_mm256_set1_ps(3.f), x[0]));
  y[0] = _mm256_add_ps(e, o);
  y[1] = _mm256_sub_ps(e, o);
  e = _mm256_fmsub_ps(_mm256_set1_ps(16.f), x[3], _mm256_mul_ps(_mm256_set1_ps(36.f), x[1]));
  o = _mm256_fmsub_ps(_mm256_set1_ps(4.f), x[2], _mm256_mul_ps(_mm256_set1_ps(9.f), x[0]));
  y[2] = _mm256_add_ps(e, o);
  y[3] = _mm256_sub_ps(e, o);
  y[4] = _mm256_fmadd_ps(_mm256_set1_ps(64.f), x[4],
                         _mm256_fmadd_ps(_mm256_set1_ps(-148.f), x[2], _mm256_mul_ps(_mm256_set1_ps(9.f), x[0])));
}
WF AI void at3(const __m256 m[5], __m256 o[3]) {
  __m256 s01 = _mm256_add_ps(m[0], m[1]), d01 = _mm256_sub_ps(m[0], m[1]);
  __m256 s23 = _mm256_add_ps(m[2], m[3]), d23 = _mm256_sub_ps(m[2], m[3]);
  o[0] = _mm256_add_ps(s01, s23);
  o[1] = _mm256_fmadd_ps(_mm256_set1_ps(1.5f), d01, _mm256_mul_ps(_mm256_set1_ps(0.25f), d23));
  o[2] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(2.25f), s01, _mm256_mul_ps(_mm256_set1_ps(0.0625f), s23)), m[4]);
}

/* F(2x2, 3x3): B^T x (4 -> 4), A^T m (4 -> 2) */
WF AI void bt4(const __m256 x[4], __m256 y[4]) {
  y[0] = _mm256_sub_ps(x[0], x[2]);
  y[1] = _mm256_add_ps(x[1], x[2]);
  y[2] = _mm256_sub_ps(x[2], x[1]);
  y[3] = _mm256_sub_ps(x[1], x[3]);
}
WF AI void at2(const __m256 m[4], __m256 o[2]) {
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], m[1]), m[2]);
  o[1] = _mm256_sub_ps(_mm256_sub_ps(m[1], m[2]), m[3]);
}

/* c [6][16] (row stride ldc) = a [6][c0, c1) (row stride Cp) x b [c0, c1)[16], or c += that when add
 * (a block of channels summed apart, then added: sm__wino_run's cb) */
WF static void k6x16(const float *a, const float *b, float *c, int64_t Cp, int64_t ldc, int64_t c0, int64_t c1,
                     int add) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float *a0 = a, *a1 = a + Cp, *a2 = a + 2 * Cp, *a3 = a + 3 * Cp, *a4 = a + 4 * Cp, *a5 = a + 5 * Cp;
  b += c0 * 16;
  for (int64_t k = c0; k < c1; k++, b += 16) {
    __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), x;
    x = _mm256_broadcast_ss(a0 + k);
    c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a1 + k);
    c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a2 + k);
    c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a3 + k);
    c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a4 + k);
    c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a5 + k);
    c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51);
  }
#define ST(r, v0, v1)                                                           \
  do {                                                                          \
    float *q = c + (r)*ldc;                                                     \
    if (add) v0 = _mm256_add_ps(_mm256_loadu_ps(q), v0), v1 = _mm256_add_ps(_mm256_loadu_ps(q + 8), v1); \
    _mm256_storeu_ps(q, v0), _mm256_storeu_ps(q + 8, v1);                       \
  } while (0)
  ST(0, c00, c01);
  ST(1, c10, c11);
  ST(2, c20, c21);
  ST(3, c30, c31);
  ST(4, c40, c41);
  ST(5, c50, c51);
#undef ST
}

WF AI __m256i tail_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* tile t's (m+2)^2 input (zeros outside) -> V[p][slot][0, Cp) */
WF static void in_tile(const sm__wino_args *a, int64_t t, float *V, int64_t slot, int64_t T, int64_t Cp,
                       const float *zero) {
  int m = a->m, A = m + 2;
  int64_t TX = (a->OW + m - 1) / m, TY = (a->OH + m - 1) / m;
  int64_t n = t / (TX * TY), ty = t / TX % TY, tx = t % TX;
  int64_t iy0 = ty * m - a->pt, ix0 = tx * m - a->pl, C = a->C;
  const float *row[36];
  for (int i = 0; i < A; i++)
    for (int j = 0; j < A; j++) {
      int64_t iy = iy0 + i, ix = ix0 + j;
      row[i * A + j] = iy < 0 || iy >= a->H || ix < 0 || ix >= a->W ? zero : a->x + ((n * a->H + iy) * a->W + ix) * C;
    }
  float *v = V + slot * Cp;
  int64_t ps = T * Cp;
  for (int64_t c = 0; c < Cp; c += 8) {
    __m256 d[6][6], tt[6][6], col[6], out[6];
    if (c + 8 <= C) {
      for (int p = 0; p < A * A; p++) d[p / A][p % A] = _mm256_loadu_ps(row[p] + c);
    } else {
      __m256i mk = tail_mask(C - c);
      for (int p = 0; p < A * A; p++) d[p / A][p % A] = _mm256_maskload_ps(row[p] + c, mk);
    }
    if (m == 4) {
      for (int j = 0; j < 6; j++) {
        for (int i = 0; i < 6; i++) col[i] = d[i][j];
        bt6(col, out);
        for (int i = 0; i < 6; i++) tt[i][j] = out[i];
      }
      for (int i = 0; i < 6; i++) {
        bt6(tt[i], out);
        for (int j = 0; j < 6; j++) _mm256_storeu_ps(v + (i * 6 + j) * ps + c, out[j]);
      }
    } else if (m == 3) {
      for (int j = 0; j < 5; j++) {
        for (int i = 0; i < 5; i++) col[i] = d[i][j];
        bt5(col, out);
        for (int i = 0; i < 5; i++) tt[i][j] = out[i];
      }
      for (int i = 0; i < 5; i++) {
        bt5(tt[i], out);
        for (int j = 0; j < 5; j++) _mm256_storeu_ps(v + (i * 5 + j) * ps + c, out[j]);
      }
    } else {
      for (int j = 0; j < 4; j++) {
        for (int i = 0; i < 4; i++) col[i] = d[i][j];
        bt4(col, out);
        for (int i = 0; i < 4; i++) tt[i][j] = out[i];
      }
      for (int i = 0; i < 4; i++) {
        bt4(tt[i], out);
        for (int j = 0; j < 4; j++) _mm256_storeu_ps(v + (i * 4 + j) * ps + c, out[j]);
      }
    }
  }
}

/* M[p][slot] -> the m x m x K output tile in o [m * m][K] */
WF static void out_tile(int mt, const float *M, int64_t slot, int64_t T, int64_t Kp, int64_t K, float *o) {
  const float *m0 = M + slot * Kp;
  int64_t ps = T * Kp;
  int A = mt + 2;
  for (int64_t k = 0; k < K; k += 8) {
    __m256 m[6][6], tt[4][6], col[6], r4[4];
    for (int p = 0; p < A * A; p++) m[p / A][p % A] = _mm256_loadu_ps(m0 + p * ps + k);
    for (int j = 0; j < A; j++) {
      for (int i = 0; i < A; i++) col[i] = m[i][j];
      if (mt == 4) at4(col, r4);
      else if (mt == 3) at3(col, r4);
      else at2(col, r4);
      for (int i = 0; i < mt; i++) tt[i][j] = r4[i];
    }
    __m256i mk = tail_mask(K - k);
    for (int i = 0; i < mt; i++) {
      if (mt == 4) at4(tt[i], r4);
      else if (mt == 3) at3(tt[i], r4);
      else at2(tt[i], r4);
      for (int j = 0; j < mt; j++) {
        if (k + 8 <= K) _mm256_storeu_ps(o + (i * mt + j) * K + k, r4[j]);
        else _mm256_maskstore_ps(o + (i * mt + j) * K + k, mk, r4[j]);
      }
    }
  }
}

/* A tile whose transformed sums met NaN or Inf (a NaN or Inf input, or a sum past the float range in
 * the transforms, which spread it over the tile's pixels): its pixels as direct sums instead,
 * so NaN and Inf reach only the outputs whose windows hold them, as in a direct convolution. */
static void direct_tile(const sm__wino_args *a, int64_t n, int64_t oy0, int64_t ox0, int64_t k0, int64_t KW,
                        float *o) {
  for (int64_t r = 0; r < a->m && oy0 + r < a->OH; r++)
    for (int64_t q = 0; q < a->m && ox0 + q < a->OW; q++) {
      float *d = o + (r * a->m + q) * KW;
      for (int64_t k = 0; k < KW; k++) d[k] = 0.0f;
      for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++) {
          int64_t iy = oy0 + r - a->pt + ky, ix = ox0 + q - a->pl + kx;
          if (iy < 0 || iy >= a->H || ix < 0 || ix >= a->W) continue;
          const float *xr = a->x + ((n * a->H + iy) * a->W + ix) * a->C;
          for (int64_t c = 0; c < a->C; c++) {
            const float *fr = a->filt + ((ky * 3 + kx) * a->C + c) * a->K + k0;
            for (int64_t k = 0; k < KW; k++) d[k] += xr[c] * fr[k];
          }
        }
    }
}

void sm__wino_run(const sm__wino_args *a, int64_t t0, int64_t t1, int64_t kb0, int64_t kb1, int64_t T,
                  float *scratch) {
  int64_t C = a->C, K = a->K, Cp = round_up(C, 8), Kp = round_up(K, 16), KB = Kp / 16;
  int mt = a->m, P = (mt + 2) * (mt + 2);
  int64_t TX = (a->OW + mt - 1) / mt, TY = (a->OH + mt - 1) / mt;
  int64_t k0 = kb0 * 16, k1 = kb1 * 16 < K ? kb1 * 16 : K, KW = k1 - k0; /* this piece's output channels */
  int64_t cb = a->cb > 0 ? round_up(a->cb, 8) : Cp; /* channels a sum runs over before it is added */
  float *V = scratch, *M = V + P * T * Cp, *o = M + P * T * Kp, *zero = o + 16 * Kp;
  memset(zero, 0, (size_t)Cp * sizeof(float));
  for (int64_t b0 = t0; b0 < t1; b0 += T) {
    int64_t nt = t1 - b0 < T ? t1 - b0 : T, nr = round_up(nt, 6);
    for (int64_t s = 0; s < nt; s++) in_tile(a, b0 + s, V, s, T, Cp, zero);
    for (int64_t s = nt; s < nr; s++)
      for (int p = 0; p < P; p++) memset(V + (p * T + s) * Cp, 0, (size_t)Cp * sizeof(float));
    for (int p = 0; p < P; p++) {
      const float *Vp = V + p * T * Cp, *Up = a->U + (int64_t)p * KB * Cp * 16;
      float *Mp = M + p * T * Kp;
      for (int64_t kb = kb0; kb < kb1; kb++)
        for (int64_t r = 0; r < nr; r += 6)
          for (int64_t c0 = 0; c0 < Cp; c0 += cb)
            k6x16(Vp + r * Cp, Up + kb * Cp * 16, Mp + r * Kp + kb * 16, Cp, Kp, c0, c0 + cb < Cp ? c0 + cb : Cp,
                  c0 > 0);
    }
    for (int64_t s = 0; s < nt; s++) {
      int64_t t = b0 + s, n = t / (TX * TY), ty = t / TX % TY, tx = t % TX;
      out_tile(mt, M + k0, s, T, Kp, KW, o);
      int nan = 0;
      for (int64_t i = 0; i < mt * mt * KW; i++) nan |= !(o[i] - o[i] == 0.0f); /* NaN or +-Inf */
      if (nan) direct_tile(a, n, ty * mt, tx * mt, k0, KW, o);
      int64_t ox = tx * mt, np = a->OW - ox < mt ? a->OW - ox : mt;
      const float *bias = a->bias ? a->bias + k0 : NULL;
      for (int64_t r = 0; r < mt && ty * mt + r < a->OH; r++)
        for (int64_t q = 0; q < np; q++) {
          int64_t off = ((n * a->OH + ty * mt + r) * a->OW + ox + q) * K + k0;
          const float *src = o + (r * mt + q) * KW;
          float *y = a->y + off;
          if (a->addend) {
            const float *ad = a->addend + off;
            for (int64_t i = 0; i < KW; i++) y[i] = (bias ? src[i] + bias[i] : src[i]) + ad[i];
            if (a->act != SM_NN_ACT_NONE) sm__nn_bias_act_f32(y, y, 1, KW, NULL, a->act, a->alpha);
          } else {
            sm__nn_bias_act_f32(src, y, 1, KW, bias, a->act, a->alpha);
          }
        }
    }
  }
}
#else
int sm__wino_cpu_ok(void) { return 0; }
void sm__wino_run(const sm__wino_args *a, int64_t t0, int64_t t1, int64_t kb0, int64_t kb1, int64_t T,
                  float *scratch) {
  (void)a, (void)t0, (void)t1, (void)kb0, (void)kb1, (void)T, (void)scratch;
}
#endif

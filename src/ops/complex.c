/* complex.c - the complex kernel family: Complex (real and imaginary parts, broadcast), Real, Imag,
 * ComplexAbs, Angle, Conj over complex64 (float pairs) and complex128 (double pairs). The
 * transforms over complex tensors (FFT, RFFT, ...) are in fft.c; Cast to and from complex in
 * math_cast.c. As TF, Real/Imag/Angle of a real tensor are refused by dtype, ComplexAbs is hypot.
 * The unary math ops TF registers for complex (Exp, Log, Sqrt, Sin, Tanh, ... : tf.signal.dct and
 * mfccs_from_log_mel_spectrograms use a complex Exp) are sm__complex_unary_compute, which
 * math_unary.c calls for a complex input (computed in double complex). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

static int is_complex(int dt) { return dt == SM_COMPLEX64 || dt == SM_COMPLEX128; }

/* Complex(real, imag): Tout complex64 from float, complex128 from double. */
static sm_status *complex_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *re = sm__kctx_input(ctx, 0), *im = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(re);
  if (dt != sm_tensor_dtype(im) || (dt != SM_FLOAT && dt != SM_DOUBLE)) return sm__math_bad_dtype("Complex", dt);
  sm_bcast b;
  const int ranks[2] = {sm_tensor_rank(re), sm_tensor_rank(im)};
  const int64_t *dims[2] = {sm_tensor_dims(re), sm_tensor_dims(im)};
  if (!sm__math_bcast_init(&b, 2, ranks, dims)) return sm__math_incompatible(re, im);
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, dt == SM_FLOAT ? SM_COMPLEX64 : SM_COMPLEX128, b.out_rank, b.out_dims, &z);
  if (st || b.n == 0) return st;
  int last = b.rank - 1;
  int64_t inner = b.dims[last], s0 = b.strides[0][last], s1 = b.strides[1][last];
  sm_bcast_it it;
  sm__math_bcast_seek(&b, 2, 0, &it);
  for (int64_t r = 0; r < b.n / inner; r++) {
    for (int64_t i = 0; i < inner; i++) {
      int64_t o = r * inner + i, a = it.off[0] + i * s0, c = it.off[1] + i * s1;
      if (dt == SM_FLOAT) {
        float *zf = sm_tensor_data(z);
        zf[2 * o] = ((const float *)sm_tensor_data(re))[a];
        zf[2 * o + 1] = ((const float *)sm_tensor_data(im))[c];
      } else {
        double *zd = sm_tensor_data(z);
        zd[2 * o] = ((const double *)sm_tensor_data(re))[a];
        zd[2 * o + 1] = ((const double *)sm_tensor_data(im))[c];
      }
    }
    sm__math_bcast_next(&b, 2, &it);
  }
  return NULL;
}

enum { C_REAL, C_IMAG, C_ABS, C_ANGLE, C_CONJ };
static const char *const cnames[] = {"Real", "Imag", "ComplexAbs", "Angle", "Conj"};

static sm_status *unary_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  int *k = malloc(sizeof *k);
  if (!k) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  for (*k = 0; *k < 4 && strcmp(op, cnames[*k]); ++*k) {
  }
  *state = k;
  return NULL;
}

static sm_status *unary_compute(const void *state, sm_kctx *ctx) {
  int k = *(const int *)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (!is_complex(dt)) return sm__math_bad_dtype(cnames[k], dt);
  int wide = dt == SM_COMPLEX128;
  int odt = k == C_CONJ ? dt : wide ? SM_DOUBLE : SM_FLOAT;
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, odt, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(x);
  for (int64_t i = 0; i < n; i++) {
    double re = wide ? ((const double *)sm_tensor_data(x))[2 * i] : ((const float *)sm_tensor_data(x))[2 * i];
    double im = wide ? ((const double *)sm_tensor_data(x))[2 * i + 1] : ((const float *)sm_tensor_data(x))[2 * i + 1];
    if (k == C_CONJ) {
      if (wide) ((double *)sm_tensor_data(y))[2 * i] = re, ((double *)sm_tensor_data(y))[2 * i + 1] = -im;
      else ((float *)sm_tensor_data(y))[2 * i] = (float)re, ((float *)sm_tensor_data(y))[2 * i + 1] = (float)-im;
      continue;
    }
    double v = k == C_REAL ? re : k == C_IMAG ? im : k == C_ABS ? hypot(re, im) : atan2(im, re);
    if (!wide && k == C_ABS) v = hypotf((float)re, (float)im);
    if (!wide && k == C_ANGLE) v = atan2f((float)im, (float)re);
    if (wide) ((double *)sm_tensor_data(y))[i] = v;
    else ((float *)sm_tensor_data(y))[i] = (float)v;
  }
  return NULL;
}

/* ---- complex unary math ---------------------------------------------------------------------- */
static const char *const cu_names[] = {"Neg",   "Square", "Sqrt",  "Rsqrt", "Exp",   "Expm1", "Log",   "Log1p",
                                       "Reciprocal", "Inv", "Sign",  "Sin",   "Cos",   "Tan",   "Sinh",  "Cosh",
                                       "Tanh",  "Sigmoid", "Asin", "Acos",  "Atan",  "Asinh", "Acosh", "Atanh"};

/* re + i im without CMPLX (clang's libc headers lack it) and without re + im * I's inf * 0 = NaN */
static double complex mkz(double re, double im) {
  double complex z;
  ((double *)&z)[0] = re, ((double *)&z)[1] = im;
  return z;
}

static double complex cu_apply(int k, double complex z) {
  switch (k) {
    case 0: return -z;
    case 1: return z * z;
    case 2: return csqrt(z);
    case 3: return 1.0 / csqrt(z);
    case 4: return cexp(z);
    case 5: { /* exp(z) - 1 without losing small z: expm1(re) + e^re (cos im - 1) + i e^re sin im */
      double re = creal(z), im = cimag(z), s = sin(im / 2);
      return mkz(expm1(re) * cos(im) - 2 * s * s, exp(re) * sin(im));
    }
    case 6: return clog(z);
    case 7: return clog(1.0 + z);
    case 8: case 9: return 1.0 / z;
    case 10: { double a = cabs(z); return a == 0 ? 0 : z / a; }
    case 11: return csin(z);
    case 12: return ccos(z);
    case 13: return ctan(z);
    case 14: return csinh(z);
    case 15: return ccosh(z);
    case 16: return ctanh(z);
    case 17: return 1.0 / (1.0 + cexp(-z));
    case 18: return casin(z);
    case 19: return cacos(z);
    case 20: return catan(z);
    case 21: return casinh(z);
    case 22: return cacosh(z);
    default: return catanh(z);
  }
}

sm_status *sm__complex_unary_compute(const char *op, sm_kctx *ctx) {
  int k = 0, nk = (int)(sizeof cu_names / sizeof *cu_names);
  while (k < nk && strcmp(op, cu_names[k])) k++;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x);
  if (k == nk || !is_complex(dt)) return sm__math_bad_dtype(op, dt);
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(x);
  for (int64_t i = 0; i < n; i++) {
    if (dt == SM_COMPLEX64) {
      const float *a = (const float *)sm_tensor_data(x) + 2 * i;
      double complex r = cu_apply(k, mkz(a[0], a[1]));
      ((float *)sm_tensor_data(y))[2 * i] = (float)creal(r), ((float *)sm_tensor_data(y))[2 * i + 1] = (float)cimag(r);
    } else {
      const double *a = (const double *)sm_tensor_data(x) + 2 * i;
      double complex r = cu_apply(k, mkz(a[0], a[1]));
      ((double *)sm_tensor_data(y))[2 * i] = creal(r), ((double *)sm_tensor_data(y))[2 * i + 1] = cimag(r);
    }
  }
  return NULL;
}

const sm_kernel sm_kernels_complex[] = {
    {"Complex", NULL, complex_compute, NULL, 0},
    {"Real", unary_prepare, unary_compute, free, 0},
    {"Imag", unary_prepare, unary_compute, free, 0},
    {"ComplexAbs", unary_prepare, unary_compute, free, 0},
    {"Angle", unary_prepare, unary_compute, free, 0},
    {"Conj", unary_prepare, unary_compute, free, 0},
    {0},
};

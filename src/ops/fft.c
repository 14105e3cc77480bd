/* fft.c - the fft kernel family: FFT, IFFT, RFFT, IRFFT in 1, 2 and 3 dimensions (the innermost
 * axes), for any length.
 *
 * Own transform, in double for complex64 and complex128 alike (so complex64 results are closer to
 * exact than TF's float ones): an iterative radix-2 FFT for powers of two, a recursive mixed-radix
 * one for lengths whose prime factors are all 2, 3, 5, 7, and Bluestein's chirp-z through a
 * power-of-two convolution for every other length (all O(n log n); twiddles computed from exact
 * integer phases, k^2 mod 2n). bench/RESULTS.md records why not a library (FFTW is GPL;
 * Debian's kissfft is float-only). Semantics as TF's fft_ops.cc: IFFT scales by 1/n; RFFT crops
 * each transformed axis to fft_length and keeps fft_length/2+1 bins of the last;
 * IRFFT takes fft_length/2+1 bins of the last axis, completes the
 * spectrum by Hermitian symmetry and returns the real part, so the imaginary parts of the DC and
 * Nyquist bins are ignored. As TF, inputs are never padded: a transformed axis shorter than
 * fft_length (fft_length/2+1 for IRFFT's last) is an error; fft_length 0 gives zeros. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ops/math_int.h"

typedef double complex cx;

/* re + i im, exactly (infinities too; CMPLX is missing under clang with some glibc): C11 6.2.5
 * lays a complex out as an array of its two parts. */
static inline cx mkcx(double re, double im) {
  cx z;
  ((double *)&z)[0] = re;
  ((double *)&z)[1] = im;
  return z;
}

/* a * b without C's NaN-recovery rules (which make `*` a libgcc call): the transform's inputs
 * are finite or their NaNs propagate either way. */
static inline cx cmul(cx a, cx b) {
  return mkcx(creal(a) * creal(b) - cimag(a) * cimag(b), creal(a) * cimag(b) + cimag(a) * creal(b));
}

/* ---- 1-D transforms --------------------------------------------------------------------------- */

/* exp(-2 pi i k / n), k taken mod n exactly. */
static cx twiddle(int64_t k, int64_t n) {
  k %= n;
  if (k < 0) k += n;
  double a = -2 * M_PI * (double)k / (double)n;
  return mkcx(cos(a), sin(a));
}

/* In place, forward (e^-), n a power of two, tw[k] = twiddle(k, n) for k < n/2. */
static void fft_pow2(cx *x, int64_t n, const cx *tw) {
  for (int64_t i = 1, j = 0; i < n; i++) { /* bit reversal */
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      cx t = x[i];
      x[i] = x[j];
      x[j] = t;
    }
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    int64_t half = len >> 1, step = n / len;
    for (int64_t i = 0; i < n; i += len)
      for (int64_t k = 0; k < half; k++) {
        cx u = x[i + k], v = cmul(x[i + k + half], tw[k * step]);
        x[i + k] = u + v;
        x[i + k + half] = u - v;
      }
  }
}

/* Mixed radix, out of place: out[0..n) = DFT of in[0], in[is], .., in[(n-1) is]; n's prime factors
 * are f[0], f[1], ... (all small); tw[j] = exp(-2 pi i j / N) and this level's twiddles are
 * tw[j * ts] (N = n * ts). Each level splits n = p * m: p transforms of m, then p-point DFTs. */
static void fft_mixed(const cx *in, int64_t is, cx *out, int64_t n, const int *f, const cx *tw, int64_t ts) {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  int p = f[0];
  int64_t m = n / p;
  for (int r = 0; r < p; r++) fft_mixed(in + r * is, is * p, out + r * m, m, f + 1, tw, ts * p);
  cx t[8], wp[8]; /* wp[j] = exp(-2 pi i j / p) */
  for (int j = 0; j < p; j++) wp[j] = tw[(int64_t)j * m * ts];
  for (int64_t k = 0; k < m; k++) {
    for (int r = 0; r < p; r++) t[r] = r ? cmul(out[r * m + k], tw[(int64_t)r * k * ts]) : out[k]; /* r k ts < N */
    for (int q = 0; q < p; q++) {
      cx acc = t[0];
      for (int r = 1, j = q; r < p; r++, j = j + q >= p ? j + q - p : j + q) acc += cmul(t[r], wp[j]);
      out[k + m * q] = acc;
    }
  }
}

typedef struct plan {
  int64_t n, m;  /* length; Bluestein's convolution length (0: radix 2 or mixed radix) */
  int nf, f[64]; /* mixed radix: n's prime factors (2, 3, 5, 7); nf 0 for a power of two */
  cx *tw;        /* twiddles of n (power of two: n/2 of them; mixed: n) or of m */
  cx *chirp;     /* Bluestein: exp(-pi i k^2 / n), k < n */
  cx *bfft;      /* Bluestein: FFT_m of the conjugate chirp, wrapped */
  cx *work;      /* Bluestein: m scratch */
} plan;

static int is_pow2(int64_t n) { return n > 0 && !(n & (n - 1)); }

/* All of a plan's arrays in one block of scratch (ctx's). */
static sm_status *plan_make(sm_kctx *ctx, int64_t n, plan *p) {
  memset(p, 0, sizeof *p);
  p->n = n;
  if (n <= 1) return NULL;
  int64_t m = 0, rest = n;
  if (!is_pow2(n)) {
    static const int primes[] = {2, 3, 5, 7};
    for (int i = 0; i < 4; i++)
      while (rest % primes[i] == 0) rest /= primes[i], p->f[p->nf++] = primes[i];
    if (rest > 1) { /* a larger prime factor: Bluestein over the whole length */
      p->nf = 0;
      for (m = 1; m < 2 * n - 1; m <<= 1) {
      }
    }
  }
  p->m = m;
  int64_t tn = m ? m : n, ntw = p->nf ? n : tn / 2;
  size_t count = (size_t)ntw + (m ? (size_t)n + 2 * (size_t)m : 0) + (p->nf ? (size_t)n : 0);
  sm_status *st = NULL;
  cx *blk = sm__kctx_scratch(ctx, count * sizeof(cx), &st);
  if (!blk) return st;
  p->tw = blk;
  for (int64_t k = 0; k < ntw; k++) p->tw[k] = twiddle(k, tn);
  if (p->nf) p->work = blk + n;
  if (!m) return NULL;
  p->chirp = blk + tn / 2;
  p->bfft = p->chirp + n;
  p->work = p->bfft + m;
  for (int64_t k = 0; k < n; k++) { /* exp(-pi i k^2 / n) = twiddle(k^2 mod 2n, 2n) */
    int64_t q = (int64_t)((uint64_t)k * (uint64_t)k % (uint64_t)(2 * n)); /* n < 2^30: no overflow */
    p->chirp[k] = twiddle(q, 2 * n);
  }
  for (int64_t k = 0; k < m; k++) p->bfft[k] = 0;
  p->bfft[0] = conj(p->chirp[0]);
  for (int64_t k = 1; k < n; k++) p->bfft[k] = p->bfft[m - k] = conj(p->chirp[k]);
  fft_pow2(p->bfft, m, p->tw);
  return NULL;
}

static void plan_free(sm_kctx *ctx, plan *p) { sm__kctx_scratch_free(ctx, p->tw); }

/* In place over n = p->n elements; inverse without the 1/n. */
static void fft_run(const plan *p, cx *x, int inverse) {
  int64_t n = p->n, m = p->m;
  if (n <= 1) return;
  if (inverse)
    for (int64_t k = 0; k < n; k++) x[k] = conj(x[k]);
  if (p->nf) {
    fft_mixed(x, 1, p->work, n, p->f, p->tw, 1);
    memcpy(x, p->work, (size_t)n * sizeof *x);
  } else if (!m) {
    fft_pow2(x, n, p->tw);
  } else {
    cx *a = p->work;
    for (int64_t k = 0; k < m; k++) a[k] = k < n ? cmul(x[k], p->chirp[k]) : 0;
    fft_pow2(a, m, p->tw);
    for (int64_t k = 0; k < m; k++) a[k] = conj(cmul(a[k], p->bfft[k])); /* inverse by conjugation */
    fft_pow2(a, m, p->tw);
    for (int64_t k = 0; k < n; k++) x[k] = cmul(conj(a[k]) / (double)m, p->chirp[k]);
  }
  if (inverse)
    for (int64_t k = 0; k < n; k++) x[k] = conj(x[k]);
}

/* Transforms axis `len` of data viewed as [outer, len, inner]: rows (outer x inner of them) split
 * over the pool, each worker with its own row buffer and plan scratch from sm__alloc. */
typedef struct fjob {
  const plan *p;
  cx *data;
  int64_t len, inner;
  int inverse;
  _Atomic int failed;
} fjob;

static void fft_rows(void *ctx, int64_t r0, int64_t r1) {
  fjob *j = ctx;
  int64_t len = j->len, inner = j->inner, scratch = j->p->m ? j->p->m : j->p->nf ? j->p->n : 0;
  cx *buf = sm__alloc((size_t)(len + scratch) * sizeof(cx));
  if (!buf) {
    j->failed = 1;
    return;
  }
  plan local = *j->p;
  if (scratch) local.work = buf + len;
  for (int64_t r = r0; r < r1; r++) {
    cx *base = j->data + (r / inner) * len * inner + r % inner;
    for (int64_t k = 0; k < len; k++) buf[k] = base[k * inner];
    fft_run(&local, buf, j->inverse);
    for (int64_t k = 0; k < len; k++) base[k * inner] = buf[k];
  }
  sm__free(buf);
}

static sm_status *fft_axis(sm_kctx *ctx, const plan *p, cx *data, int64_t outer, int64_t len, int64_t inner, int inverse) {
  fjob j = {p, data, len, inner, inverse, 0};
  int64_t grain = len ? (16384 + len - 1) / len : 1;
  sm__parallel_for(sm__kctx_pool(ctx), outer * inner, grain, fft_rows, &j);
  return j.failed ? sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory for an FFT row of %lld", (long long)len) : NULL;
}

/* ---- the ops ------------------------------------------------------------------------------------ */

typedef struct fft_state {
  int rank;    /* transformed axes: 1, 2 or 3 */
  int inverse; /* IFFT, IRFFT */
  int real;    /* RFFT (real in), IRFFT (real out) */
  int attr_t;  /* RFFT: Tcomplex, IRFFT: Treal (the other side's dtype) */
  const char *name;
} fft_state;

static const struct {
  const char *op;
  int rank, inverse, real;
} fops[] = {
    {"FFT", 1, 0, 0},   {"IFFT", 1, 1, 0},   {"FFT2D", 2, 0, 0},   {"IFFT2D", 2, 1, 0},
    {"FFT3D", 3, 0, 0}, {"IFFT3D", 3, 1, 0}, {"RFFT", 1, 0, 1},    {"IRFFT", 1, 1, 1},
    {"RFFT2D", 2, 0, 1}, {"IRFFT2D", 2, 1, 1}, {"RFFT3D", 3, 0, 1}, {"IRFFT3D", 3, 1, 1},
};

static sm_status *fft_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  size_t k = 0;
  while (k < sizeof fops / sizeof *fops && strcmp(fops[k].op, op)) k++;
  if (k == sizeof fops / sizeof *fops) return sm_status_new(SM_INTERNAL, "%s is not an FFT op", op);
  fft_state *s = malloc(sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  s->rank = fops[k].rank;
  s->inverse = fops[k].inverse;
  s->real = fops[k].real;
  s->name = fops[k].op;
  s->attr_t = s->inverse ? SM_FLOAT : SM_COMPLEX64; /* the defaults */
  const char *an = s->inverse ? "Treal" : "Tcomplex";
  sm_status *st = s->real && sm__node_attr(node, an) ? sm__node_attr_type(node, an, &s->attr_t) : NULL;
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

static double in_re(const sm_tensor *t, int64_t i) {
  switch (sm_tensor_dtype(t)) {
    case SM_FLOAT: return ((const float *)sm_tensor_data(t))[i];
    case SM_DOUBLE: return ((const double *)sm_tensor_data(t))[i];
    case SM_COMPLEX64: return ((const float *)sm_tensor_data(t))[2 * i];
    default: return ((const double *)sm_tensor_data(t))[2 * i];
  }
}
static double in_im(const sm_tensor *t, int64_t i) {
  switch (sm_tensor_dtype(t)) {
    case SM_COMPLEX64: return ((const float *)sm_tensor_data(t))[2 * i + 1];
    case SM_COMPLEX128: return ((const double *)sm_tensor_data(t))[2 * i + 1];
    default: return 0;
  }
}

static sm_status *fft_compute(const void *state, sm_kctx *ctx) {
  const fft_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int dt = sm_tensor_dtype(x), r = sm_tensor_rank(x), d = s->rank;
  char b1[128];
  int in_real = s->real && !s->inverse;
  if (in_real ? dt != SM_FLOAT && dt != SM_DOUBLE : dt != SM_COMPLEX64 && dt != SM_COMPLEX128)
    return sm__math_bad_dtype(s->name, dt);
  if (r < d)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input must have rank of at least %d but got: %s", d,
                         sm_shape_str(r, sm_tensor_dims(x), b1, sizeof b1));
  /* fl: the transform lengths; for complex transforms the input's own */
  int64_t fl[3];
  const int64_t *xd = sm_tensor_dims(x);
  for (int i = 0; i < d; i++) fl[i] = xd[r - d + i];
  if (s->real) {
    const sm_tensor *f = sm__kctx_input(ctx, 1);
    if (sm_tensor_rank(f) != 1 || sm_tensor_dims(f)[0] != d || sm_tensor_dtype(f) != SM_INT32)
      return sm_status_new(SM_INVALID_ARGUMENT, "fft_length must have shape [%d], got %s", d,
                           sm_shape_str(sm_tensor_rank(f), sm_tensor_dims(f), b1, sizeof b1));
    for (int i = 0; i < d; i++) {
      fl[i] = ((const int32_t *)sm_tensor_data(f))[i];
      if (fl[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "fft_length[%d] must >= 0, but got: %lld", i, (long long)fl[i]);
      int64_t need = s->inverse && i == d - 1 ? fl[i] / 2 + 1 : fl[i];
      if (xd[r - d + i] < need)
        return sm_status_new(SM_INVALID_ARGUMENT, "Input dimension %d must have length of at least %lld but got: %lld", r - d + i,
                             (long long)need, (long long)xd[r - d + i]);
    }
  }
  for (int i = 0; i < d; i++)
    if (fl[i] > ((int64_t)1 << 30))
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: transform length %lld is more than 2^30", s->name, (long long)fl[i]);
  int wide = dt == SM_DOUBLE || dt == SM_COMPLEX128;
  if (s->real && (s->attr_t == SM_DOUBLE || s->attr_t == SM_COMPLEX128) != wide)
    return sm_status_new(SM_INVALID_ARGUMENT, "Wrong types for %s real FFT: in=%d out=%d", s->inverse ? "backward" : "forward",
                         dt, s->attr_t);
  int odt = s->real && s->inverse ? (wide ? SM_DOUBLE : SM_FLOAT) : (wide ? SM_COMPLEX128 : SM_COMPLEX64);
  int64_t od[SM_MAX_RANK];
  memcpy(od, xd, (size_t)r * sizeof *od);
  for (int i = 0; i < d; i++) od[r - d + i] = fl[i];
  if (in_real) od[r - 1] = fl[d - 1] / 2 + 1;
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, odt, r, od, &y);
  if (st) return st;
  int64_t nout = sm_tensor_num_elements(y);
  for (int i = 0; i < d; i++)
    if (fl[i] == 0) return NULL; /* a zero-length transform: zeros (RFFT keeps one bin) */
  if (nout == 0) return NULL;

  /* the working array: [batch, fl_0 .. fl_{d-1}] (IRFFT: last axis h = fl/2+1 until the end) */
  int64_t batch = 1, h = fl[d - 1] / 2 + 1;
  for (int i = 0; i < r - d; i++) batch *= xd[i];
  int64_t wd[3], wn = batch;
  for (int i = 0; i < d; i++) wd[i] = s->real && s->inverse && i == d - 1 ? h : fl[i];
  for (int i = 0; i < d; i++) wn *= wd[i];
  int64_t maxl = 1;
  for (int i = 0; i < d; i++) maxl = fl[i] > maxl ? fl[i] : maxl;
  cx *w = sm__kctx_scratch(ctx, ((size_t)wn + (size_t)maxl) * sizeof(cx), &st);
  if (!w) return st;
  cx *tmp = w + wn;
  /* copy in, cropping or zero-padding each transformed axis */
  int64_t xs[3], ws[3];
  xs[d - 1] = ws[d - 1] = 1;
  for (int i = d - 2; i >= 0; i--) xs[i] = xs[i + 1] * xd[r - d + i + 1], ws[i] = ws[i + 1] * wd[i + 1];
  int64_t xper = xs[0] * xd[r - d], wper = ws[0] * wd[0];
  for (int64_t bi = 0; bi < batch; bi++)
    for (int64_t e = 0; e < wper; e++) {
      int64_t rem = e, xo = 0, inside = 1;
      for (int i = 0; i < d; i++) {
        int64_t c = rem / ws[i];
        rem %= ws[i];
        inside &= c < xd[r - d + i];
        xo += c * xs[i];
      }
      int64_t xi = bi * xper + xo;
      w[bi * wper + e] = inside ? mkcx(in_re(x, xi), in_im(x, xi)) : 0;
    }
  /* transform the axes (IRFFT: all but the last first, the last below, row by row) */
  int last = s->real && s->inverse ? d - 1 : d;
  for (int i = 0; i < last && !st; i++) {
    plan p;
    if ((st = plan_make(ctx, wd[i], &p))) break;
    int64_t inner = ws[i], outer = wn / (wd[i] * inner);
    st = fft_axis(ctx, &p, w, outer, wd[i], inner, s->inverse);
    plan_free(ctx, &p);
  }
  double scale = 1;
  for (int i = 0; i < d; i++) scale *= s->inverse && fl[i] ? 1.0 / (double)fl[i] : 1;
  if (!st && s->real && s->inverse) {
    plan p;
    int64_t n = fl[d - 1], rows = wn / h;
    if (!(st = plan_make(ctx, n, &p))) {
      for (int64_t rw = 0; rw < rows; rw++) {
        const cx *half = w + rw * h;
        for (int64_t k = 0; k < n; k++) tmp[k] = k < h ? half[k] : conj(half[n - k]);
        fft_run(&p, tmp, 1);
        for (int64_t k = 0; k < n; k++) {
          double v = creal(tmp[k]) * scale;
          if (wide) ((double *)sm_tensor_data(y))[rw * n + k] = v;
          else ((float *)sm_tensor_data(y))[rw * n + k] = (float)v;
        }
      }
      plan_free(ctx, &p);
    }
  } else if (!st) {
    int64_t keep = od[r - 1], full = wd[d - 1];
    for (int64_t o = 0; o < nout; o++) {
      cx v = w[(o / keep) * full + o % keep] * scale;
      if (wide) ((double *)sm_tensor_data(y))[2 * o] = creal(v), ((double *)sm_tensor_data(y))[2 * o + 1] = cimag(v);
      else ((float *)sm_tensor_data(y))[2 * o] = (float)creal(v), ((float *)sm_tensor_data(y))[2 * o + 1] = (float)cimag(v);
    }
  }
  sm__kctx_scratch_free(ctx, w);
  return st;
}

#define F(op) {op, fft_prepare, fft_compute, free, 0}
const sm_kernel sm_kernels_fft[] = {
    F("FFT"),  F("IFFT"),  F("FFT2D"),  F("IFFT2D"),  F("FFT3D"),  F("IFFT3D"),
    F("RFFT"), F("IRFFT"), F("RFFT2D"), F("IRFFT2D"), F("RFFT3D"), F("IRFFT3D"),
    {0},
};

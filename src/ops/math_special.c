/* math_special.c - the special functions libm lacks, for the unary and binary math kernels:
 * digamma, the inverse normal CDF (ndtri) and erfinv, the exponentially scaled modified Bessel
 * functions I0e and I1e, and the regularized incomplete gamma functions P(a, x) and Q(a, x).
 *
 * All in double; float kernels call them and round. Methods: digamma by the recurrence up to
 * x >= 10 and the asymptotic series (TF/Eigen's Cephes method, with reflection for x <= 0);
 * ndtri by Halley's iteration on erfc from the Abramowitz-Stegun 26.2.23 start (three steps give
 * double precision), erfinv through it as TF; I0e/I1e by the power series below |x| = 30 and the asymptotic series above;
 * igamma by the series for x < a + 1 and Lentz's continued fraction otherwise; J0/J1/Y0/Y1 are
 * libm's (POSIX j0 & co.); K0/K1 and their scaled forms K0e/K1e by the trapezoidal rule on
 * K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt (doubly exponential decay: step 0.1 is exact to
 * double precision), with TF's values at 0 (inf) and below (NaN); the Hurwitz zeta function by
 * Euler-Maclaurin summation (nine terms, then the Bernoulli tail; the first-order asymptotic form
 * past q = 1e8), as Eigen's zeta does, with its NaN / inf conventions (below q = -1e4 a reflection
 * of the sum instead of Eigen's -q unit steps, which never end near q = -2^31), and polygamma(n, x) =
 * (-1)^(n+1) n! zeta(n + 1, x) (digamma for n = 0, NaN unless n is a whole number >= 0). */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* lgamma_r, lgammaf_r: lgamma without the global signgam */
#endif
#include <float.h>
#include <math.h>

#include "ops/math_int.h"

double sm__lgamma(double x) {
  int sign;
  return lgamma_r(x, &sign);
}
float sm__lgammaf(float x) {
  int sign;
  return lgammaf_r(x, &sign);
}

double sm__digamma(double x) {
  double reflect = 0;
  if (x <= 0) {
    double p = floor(x);
    if (p == x) return NAN; /* poles (TF gives NaN) */
    double nz = x - p;
    if (nz != 0.5) {
      if (nz > 0.5) nz = x - (p + 1);
      reflect = M_PI / tan(M_PI * nz);
    }
    x = 1 - x;
  }
  double w = 0;
  while (x < 10) {
    w += 1 / x;
    x += 1;
  }
  double y = 0;
  if (x < 1e17) {
    static const double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                               -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                               8.33333333333333333333E-2};
    double z = 1 / (x * x), p = 0;
    for (int i = 0; i < 7; i++) p = p * z + A[i];
    y = z * p;
  }
  return log(x) - 0.5 / x - y - w - reflect;
}

/* x with Phi(x) = p, for 0 < p <= 0.5 (x <= 0). */
static double ndtri_lower(double p) {
  double t = sqrt(-2 * log(p));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int i = 0; i < 3; i++) {
    double e = 0.5 * erfc(-x * M_SQRT1_2) - p;
    double u = e * sqrt(2 * M_PI) * exp(x * x / 2);
    x -= u / (1 + x * u / 2);
  }
  return x;
}

double sm__ndtri(double p) {
  if (!(p >= 0 && p <= 1)) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  if (p == 0.5) return 0;
  return p <= 0.5 ? ndtri_lower(p) : -ndtri_lower(1 - p);
}

/* As TF: ndtri((x + 1) / 2) / sqrt(2), the argument rounded in the caller's type. */
double sm__erfinv(double x) { return sm__ndtri(0.5 * (x + 1)) * M_SQRT1_2; }
float sm__erfinvf(float x) { return (float)(sm__ndtri(0.5f * (x + 1.0f)) * M_SQRT1_2); }

/* exp(-|x|) * I_nu(|x|) for nu = 0 or 1 (sign applied by the caller for I1). */
static double bessel_ie(int nu, double x) {
  x = fabs(x);
  if (isinf(x)) return 0;
  if (x <= 30) {
    double q = x * x / 4, term = nu ? x / 2 : 1, sum = term;
    for (int k = 1; k < 500 && term > sum * 1e-17; k++) {
      term *= q / ((double)k * (double)(k + nu));
      sum += term;
    }
    return sum * exp(-x);
  }
  /* e^-x I_nu(x) ~ 1/sqrt(2 pi x) * sum_k (-1)^k prod_{j<=k} (mu - (2j-1)^2) / (k! (8x)^k) */
  double mu = 4.0 * nu * nu, term = 1, sum = 1;
  for (int k = 1; k < 40; k++) {
    double nt = -term * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8 * x);
    if (fabs(nt) >= fabs(term)) break;
    term = nt;
    sum += term;
  }
  return sum / sqrt(2 * M_PI * x);
}

double sm__bessel_i0e(double x) { return bessel_ie(0, x); }
double sm__bessel_i1e(double x) {
  double r = bessel_ie(1, x);
  return x < 0 ? -r : r;
}

/* e^x K_nu(x), nu 0 or 1: the trapezoidal sum of exp(-x (cosh t - 1)) cosh(nu t) over t >= 0
 * (cosh t - 1 as 2 sinh^2(t/2), exact for small t), until the terms stop counting. */
static double bessel_ke(int nu, double x) {
  if (isnan(x)) return NAN;
  if (x <= 0) return INFINITY; /* TF (Cephes): the pole, and the domain error, as +inf */
  if (isinf(x)) return 0;
  /* the integrand is about exp(-x t^2 / 2): a step well under its width 1 / sqrt(x) */
  const double h = x > 25 ? 0.5 / sqrt(x) : 0.1;
  double sum = 0.5; /* t = 0: half weight, cosh 0 = 1 */
  for (int k = 1; k < 100000; k++) {
    double t = k * h, sh = sinh(0.5 * t);
    double term = exp(-2.0 * x * sh * sh) * (nu ? cosh(t) : 1.0);
    sum += term;
    if (term < sum * 1e-18) break;
  }
  return sum * h;
}
/* libm's J0/J1/Y0/Y1 with TF's values off their domain: NaN at +-inf (J, and Y at +inf), -inf
 * below 0 (Y). */
double sm__bessel_j0(double x) { return isinf(x) ? NAN : j0(x); }
double sm__bessel_j1(double x) { return isinf(x) ? NAN : j1(x); }
double sm__bessel_y0(double x) { return x < 0 ? -INFINITY : isinf(x) ? NAN : y0(x); }
double sm__bessel_y1(double x) { return x < 0 ? -INFINITY : isinf(x) ? NAN : y1(x); }
/* TF's float Y1 (Cephes y1f) is NaN at 0, its double one -inf */
float sm__bessel_y1f(float x) { return x == 0 ? NAN : (float)sm__bessel_y1(x); }
double sm__bessel_k0e(double x) { return bessel_ke(0, x); }
double sm__bessel_k1e(double x) { return bessel_ke(1, x); }
double sm__bessel_k0(double x) { return x > 0 && x < INFINITY ? exp(-x) * bessel_ke(0, x) : bessel_ke(0, x); }
double sm__bessel_k1(double x) { return x > 0 && x < INFINITY ? exp(-x) * bessel_ke(1, x) : bessel_ke(1, x); }

/* (2k)! / B_2k for k = 1..12, computed once from the Bernoulli numbers (Akiyama-Tanigawa). */
static double zeta_tail_den(int i) {
  static const double b[13] = {0, 1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
                               -3617.0 / 510, 43867.0 / 798, -174611.0 / 330, 854513.0 / 138, -236364091.0 / 2730};
  double f = 1; /* (2k)! */
  for (int j = 2; j <= 2 * (i + 1); j++) f *= j;
  return f / b[i + 1];
}

/* Below q = -ZETA_MAX_SHIFT the sum is split by the identity in sm__zeta instead of stepped. */
#define ZETA_MAX_SHIFT 1e4

double sm__zeta(double x, double q) {
  const double eps = 1.11022302462515654042e-16;
  if (isnan(x) || isnan(q)) return NAN;
  if (x == 1) return INFINITY;
  if (x < 1) return NAN;
  if (isinf(x)) return pow(q, -x); /* the first term alone: 0 past q = 1 */
  if (q <= 0) {
    if (q == floor(q)) return INFINITY;
    if (x != floor(x)) return NAN;
  }
  if (q > 1e8) return (1 / (x - 1) + 1 / (2 * q)) * pow(q, 1 - x);
  if (q < -ZETA_MAX_SHIFT) {
    /* Eigen's loop below steps q up by one until it passes 9: about -q steps, 2^31 of them for a
     * float q near INT32_MIN (a hang, in TF too). With r = q + m in (0, 1), m = ceil(-q) and x a
     * whole number: zeta(x, q) = sum_{j=1..m} (r - j)^-x + zeta(x, r)
     *                         = (-1)^x (zeta(x, 1 - r) - zeta(x, m + 1 - r)) + zeta(x, r). */
    double m = ceil(-q), r = q + m;
    double neg = sm__zeta(x, 1 - r) - sm__zeta(x, m + 1 - r);
    return (fmod(x, 2) != 0 ? -neg : neg) + sm__zeta(x, r);
  }
  double sum = pow(q, -x), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i++;
    a += 1.0;
    b = pow(a, -x);
    sum += b;
    if (fabs(b / sum) < eps) return sum;
  }
  double w = a, k = 0, t;
  sum += b * w / (x - 1);
  sum -= 0.5 * b;
  a = 1.0;
  for (i = 0; i < 12; i++) {
    a *= x + k;
    b /= w;
    t = a * b / zeta_tail_den(i);
    sum += t;
    if (fabs(t / sum) < eps) return sum;
    k += 1.0;
    a *= x + k;
    b /= w;
    k += 1.0;
  }
  return sum;
}

double sm__polygamma(double n, double x) {
  if (isnan(n) || isnan(x) || floor(n) != n || n < 0) return NAN;
  if (n == 0) return sm__digamma(x);
  if (x <= 0 && x == floor(x)) return NAN; /* a pole: TF gives NaN, not the signed infinity */
  double np1 = n + 1;
  return pow(-1.0, np1) * exp(sm__lgamma(np1)) * sm__zeta(np1, x);
}

/* Regularized lower (upper = 0) or upper (upper = 1) incomplete gamma function. */
double sm__igamma(double a, double x, int upper) {
  if (isnan(a) || isnan(x) || a <= 0 || x < 0) return NAN;
  if (x == 0) return upper ? 1 : 0;
  if (isinf(x)) return upper ? 0 : 1;
  double lg = sm__lgamma(a);
  double ax = a * log(x) - x - lg;
  if (x < a + 1) { /* series for P */
    double ap = a, del = 1 / a, sum = del;
    for (int n = 0; n < 2000 && fabs(del) > fabs(sum) * 1e-17; n++) {
      ap += 1;
      del *= x / ap;
      sum += del;
    }
    double p = sum * exp(ax);
    return upper ? 1 - p : p;
  }
  /* continued fraction for Q (modified Lentz) */
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 2000; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-16) break;
  }
  double q = exp(ax) * h;
  return upper ? q : 1 - q;
}

/* d/da P(a, x) (sample = 0: IgammaGradA) or the reparameterised gradient of a Gamma(a) sample x,
 * -(dP/da) / (dP/dx) (sample = 1: RandomGammaGrad): Eigen's igamma_generic_impl in its DERIVATIVE
 * and SAMPLE_DERIVATIVE modes (forward-mode derivatives of the series for P where x <= 1 or
 * x <= a, else of the continued fraction for Q), in double. */
double sm__igamma_der_a(double a, double x, int sample) {
  if (x == 0) return 0;
  if (isnan(a) || isnan(x) || x < 0 || a <= 0) return NAN;
  if (isinf(x)) return -0.0; /* the continued fraction's zero, negated */
  double logax = a * log(x) - x - sm__lgamma(a);
  if (logax < -log(DBL_MAX) || isnan(logax)) return 0;
  double ax = exp(logax);
  const double machep = 1.11022302462515654042e-16;
  if (x > 1 && x > a) { /* continued fraction for Q: the derivative is minus Q's */
    const double big = 4.503599627370496e15, biginv = 2.22044604925031308085e-16;
    double y = 1 - a, z = x + y + 1, c = 0, pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x;
    double ans = pkm1 / qkm1, dpkm2 = 0, dqkm2 = 0, dpkm1 = 0, dqkm1 = -x, dans = (dpkm1 - ans * dqkm1) / qkm1;
    for (int i = 0; i < 500; i++) {
      c += 1, y += 1, z += 2;
      double yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
      double dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c, dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c;
      if (qk != 0) {
        ans = pk / qk;
        double prev = dans;
        dans = (dpk - ans * dqk) / qk;
        if (fabs(dans - prev) <= machep) break;
      }
      pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;
      dpkm2 = dpkm1, dpkm1 = dpk, dqkm2 = dqkm1, dqkm1 = dqk;
      if (fabs(pk) > big) {
        pkm2 *= biginv, pkm1 *= biginv, qkm2 *= biginv, qkm1 *= biginv;
        dpkm2 *= biginv, dpkm1 *= biginv, dqkm2 *= biginv, dqkm1 *= biginv;
      }
    }
    double dlogax = log(x) - sm__digamma(a);
    return sample ? (dans + ans * dlogax) * x : -(ans * ax * dlogax + dans * ax);
  }
  ax /= a; /* series for P */
  double r = a, c = 1, ans = 1, dc = 0, dans = 0;
  for (int n = 0; n < 500; n++) {
    r += 1;
    double term = x / r, dterm = -x / (r * r);
    dc = term * dc + dterm * c;
    dans += dc;
    c *= term;
    ans += c;
    if (fabs(dc) <= machep * fabs(dans)) break;
  }
  double dlogax = log(x) - sm__digamma(a + 1);
  return sample ? -(dans + ans * dlogax) * x / a : ans * ax * dlogax + dans * ax;
}

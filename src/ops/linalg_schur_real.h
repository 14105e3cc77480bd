/* linalg_schur_real.h - the real Schur path of linalg_schur.c (Eigen's RealSchur, EigenSolver's
 * eigenvectors, the quasi-triangular square root and their helpers), written once over RT (float or
 * double) and included by linalg_schur.c once per type, so that float input is computed in float
 * as TF's Eigen does (the order of a real matrix's eigenvalues and the signs of its vectors follow
 * the iteration, whose rounding decides them). Expects RT, CT (its complex type), RN(name) (the
 * name with the type's suffix), R_EPS, R_MIN, and <tgmath.h>. Private to linalg_schur.c. */

static CT RN(mkct)(RT re, RT im) {
  CT z;
  RT *p = (RT *)&z;
  p[0] = re, p[1] = im;
  return z;
}

static void RN(rot_rows_r)(RT *a, int64_t n, int64_t p, int64_t q, RT c, RT s, int64_t j0, int64_t j1) {
  if (c == 1 && s == 0) return;
  for (int64_t j = j0; j < j1; j++) {
    RT x = a[p * n + j], y = a[q * n + j];
    a[p * n + j] = c * x + s * y;
    a[q * n + j] = -s * x + c * y;
  }
}
static void RN(rot_cols_r)(RT *a, int64_t n, int64_t p, int64_t q, RT c, RT s, int64_t i1) {
  RT s2 = -s;
  if (c == 1 && s2 == 0) return;
  for (int64_t i = 0; i < i1; i++) {
    RT x = a[i * n + p], y = a[i * n + q];
    a[i * n + p] = c * x + s2 * y;
    a[i * n + q] = -s2 * x + c * y;
  }
}
static void RN(givens_r)(RT p, RT q, RT *c, RT *s) {
  if (q == 0) {
    *c = p < 0 ? -1 : 1, *s = 0;
  } else if (p == 0) {
    *c = 0, *s = q < 0 ? 1 : -1;
  } else if (fabs(p) > fabs(q)) {
    RT t = q / p, u = sqrt(1 + t * t);
    if (p < 0) u = -u;
    *c = 1 / u, *s = -t * *c;
  } else {
    RT t = p / q, u = sqrt(1 + t * t);
    if (q < 0) u = -u;
    *s = -1 / u, *c = -t * *s;
  }
}

/* ---- RealSchur ----------------------------------------------------------------------------- */
/* The reflector of (v0, v1[, v2]): tau, beta, essential part ess (Eigen's makeHouseholder). */
static void RN(house_r)(const RT *v, int len, RT *ess, RT *tau, RT *beta) {
  RT tail = 0;
  for (int i = 1; i < len; i++) tail += v[i] * v[i];
  if (tail <= R_MIN) {
    *tau = 0, *beta = v[0];
    for (int i = 1; i < len; i++) ess[i - 1] = 0;
  } else {
    RT b = sqrt(v[0] * v[0] + tail);
    if (v[0] >= 0) b = -b;
    for (int i = 1; i < len; i++) ess[i - 1] = v[i] / (v[0] - b);
    *tau = (b - v[0]) / b;
    *beta = b;
  }
}
/* H = I - tau [1 ess][1 ess]^T on rows r0..r0+len-1, columns [c0, c1) (left) */
static void RN(house_left_r)(RT *a, int64_t n, const RT *ess, int len, RT tau, int64_t r0, int64_t c0,
                         int64_t c1) {
  if (tau == 0) return;
  for (int64_t j = c0; j < c1; j++) {
    RT t = ess[0] * a[(r0 + 1) * n + j]; /* Eigen's order: ess^T * bottom, then + row 0 */
    for (int i = 2; i < len; i++) t += ess[i - 1] * a[(r0 + i) * n + j];
    t += a[r0 * n + j];
    a[r0 * n + j] -= tau * t;
    for (int i = 1; i < len; i++) a[(r0 + i) * n + j] -= tau * ess[i - 1] * t;
  }
}
/* on columns c0..c0+len-1, rows [0, r1) (right) */
static void RN(house_right_r)(RT *a, int64_t n, const RT *ess, int len, RT tau, int64_t c0, int64_t r1) {
  if (tau == 0) return;
  for (int64_t i = 0; i < r1; i++) {
    RT t = a[i * n + c0 + 1] * ess[0]; /* right * ess, then + column 0 */
    for (int k = 2; k < len; k++) t += a[i * n + c0 + k] * ess[k - 1];
    t += a[i * n + c0];
    a[i * n + c0] -= tau * t;
    for (int k = 1; k < len; k++) a[i * n + c0 + k] -= tau * t * ess[k - 1];
  }
}

static void RN(split_two)(RT *t, RT *u, int64_t n, int64_t iu, RT exshift) {
  RT p = (RT)0.5 * (t[(iu - 1) * n + iu - 1] - t[iu * n + iu]);
  RT q = p * p + t[iu * n + iu - 1] * t[(iu - 1) * n + iu];
  t[iu * n + iu] += exshift;
  t[(iu - 1) * n + iu - 1] += exshift;
  if (q >= 0) {
    RT z = sqrt(fabs(q)), c, s;
    RN(givens_r)(p >= 0 ? p + z : p - z, t[iu * n + iu - 1], &c, &s);
    RN(rot_rows_r)(t, n, iu - 1, iu, c, -s, iu - 1, n);
    RN(rot_cols_r)(t, n, iu - 1, iu, c, s, iu + 1);
    t[iu * n + iu - 1] = 0;
    if (u) RN(rot_cols_r)(u, n, iu - 1, iu, c, s, n);
  }
  if (iu > 1) t[(iu - 1) * n + iu - 2] = 0;
}

/* a: n x n real (destroyed into T, quasi-triangular); u (may be NULL): Schur vectors. w: scratch
 * of 2 n doubles. 0 on success, -1 without convergence. */
static int RN(real_schur)(RT *a, RT *u, int64_t n, RT *w) {
  RT scale = 0;
  for (int64_t i = 0; i < n * n; i++) scale = fabs(a[i]) > scale ? fabs(a[i]) : scale; /* NaN skipped, as Eigen's maxCoeff here */
  if (scale < R_MIN) { /* all zero: T = 0, U = I */
    memset(a, 0, (size_t)(n * n) * sizeof *a);
    if (u)
      for (int64_t i = 0; i < n * n; i++) u[i] = (i / n == i % n);
    return 0;
  }
  for (int64_t i = 0; i < n * n; i++) a[i] /= scale;
  RN(hessenberg_r)(a, u, n, w, w + n);
  RT *t = a;
  int64_t maxit = 40 * n, iu = n - 1, iter = 0, total = 0;
  RT exshift = 0, norm = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n && i < j + 2; i++) norm += fabs(t[i * n + j]);
  RT zero = norm * R_EPS * R_EPS > R_MIN ? norm * R_EPS * R_EPS : R_MIN;
  if (norm != 0) {
    while (iu >= 0) {
      int64_t il = iu;
      while (il > 0) {
        RT s = fabs(t[(il - 1) * n + il - 1]) + fabs(t[il * n + il]);
        s = s * R_EPS > zero ? s * R_EPS : zero;
        if (fabs(t[il * n + il - 1]) <= s) break;
        il--;
      }
      if (il == iu) {
        t[iu * n + iu] += exshift;
        if (iu > 0) t[iu * n + iu - 1] = 0;
        iu--;
        iter = 0;
      } else if (il == iu - 1) {
        RN(split_two)(t, u, n, iu, exshift);
        iu -= 2;
        iter = 0;
      } else {
        RT sh[3] = {t[iu * n + iu], t[(iu - 1) * n + iu - 1], t[iu * n + iu - 1] * t[(iu - 1) * n + iu]};
        if (iter > 0 && iter % 16 == 0) {
          if (iter % 32 != 0) {
            exshift += sh[0];
            for (int64_t i = 0; i <= iu; i++) t[i * n + i] -= sh[0];
            RT s = fabs(t[iu * n + iu - 1]) + fabs(t[(iu - 1) * n + iu - 2]);
            sh[0] = (RT)0.75 * s, sh[1] = (RT)0.75 * s, sh[2] = -(RT)0.4375 * s * s;
          } else {
            RT s = (sh[1] - sh[0]) / (RT)2.0;
            s = s * s + sh[2];
            if (s > 0) {
              s = sqrt(s);
              if (sh[1] < sh[0]) s = -s;
              s = s + (sh[1] - sh[0]) / (RT)2.0;
              s = sh[0] - sh[2] / s;
              exshift += s;
              for (int64_t i = 0; i <= iu; i++) t[i * n + i] -= s;
              sh[0] = sh[1] = sh[2] = (RT)0.964;
            }
          }
        }
        iter++;
        if (++total > maxit) break;
        /* initFrancisQRStep */
        RT v[3] = {0, 0, 0};
        int64_t im;
        for (im = iu - 2; im >= il; im--) {
          RT tmm = t[im * n + im], r = sh[0] - tmm, s = sh[1] - tmm;
          v[0] = (r * s - sh[2]) / t[(im + 1) * n + im] + t[im * n + im + 1];
          v[1] = t[(im + 1) * n + im + 1] - tmm - r - s;
          v[2] = t[(im + 2) * n + im + 1];
          if (im == il) break;
          RT lhs = t[im * n + im - 1] * (fabs(v[1]) + fabs(v[2]));
          RT rhs = v[0] * (fabs(t[(im - 1) * n + im - 1]) + fabs(tmm) + fabs(t[(im + 1) * n + im + 1]));
          if (fabs(lhs) < R_EPS * rhs) break;
        }
        /* performFrancisQRStep */
        for (int64_t k = im; k <= iu - 2; k++) {
          int first = k == im;
          RT vv[3], ess[2], tau, beta;
          if (first)
            memcpy(vv, v, sizeof vv);
          else
            vv[0] = t[k * n + k - 1], vv[1] = t[(k + 1) * n + k - 1], vv[2] = t[(k + 2) * n + k - 1];
          RN(house_r)(vv, 3, ess, &tau, &beta);
          if (beta != 0) {
            if (first && k > il)
              t[k * n + k - 1] = -t[k * n + k - 1];
            else if (!first)
              t[k * n + k - 1] = beta;
            RN(house_left_r)(t, n, ess, 3, tau, k, k, n);
            RN(house_right_r)(t, n, ess, 3, tau, k, (iu < k + 3 ? iu : k + 3) + 1);
            if (u) RN(house_right_r)(u, n, ess, 3, tau, k, n);
          }
        }
        RT v2[2] = {t[(iu - 1) * n + iu - 2], t[iu * n + iu - 2]}, ess1, tau, beta;
        RN(house_r)(v2, 2, &ess1, &tau, &beta);
        if (beta != 0) {
          t[(iu - 1) * n + iu - 2] = beta;
          RN(house_left_r)(t, n, &ess1, 2, tau, iu - 1, iu - 1, n);
          RN(house_right_r)(t, n, &ess1, 2, tau, iu - 1, iu + 1);
          if (u) RN(house_right_r)(u, n, &ess1, 2, tau, iu - 1, n);
        }
        for (int64_t i = im + 2; i <= iu; i++) {
          t[i * n + i - 2] = 0;
          if (i > im + 2) t[i * n + i - 3] = 0;
        }
      }
    }
  }
  for (int64_t i = 0; i < n * n; i++) t[i] *= scale;
  return total <= maxit ? 0 : -1;
}

/* EigenSolver: t, u from real_schur (t is overwritten); eigenvalues into ev, vectors (when vv)
 * into vv (n x n complex). w: n doubles. -1 when an eigenvalue is not finite. */
static int RN(real_eig)(RT *t, RT *u, int64_t n, cd *ev, cd *vv, RT *w) {
  for (int64_t i = 0; i < n;) {
    if (i == n - 1 || t[(i + 1) * n + i] == 0) {
      ev[i] = t[i * n + i];
      if (!isfinite(t[i * n + i])) return -1;
      i++;
    } else {
      RT p = (RT)0.5 * (t[i * n + i] - t[(i + 1) * n + i + 1]), t0 = t[(i + 1) * n + i], t1 = t[i * n + i + 1];
      RT mx = fmax(fabs(p), fmax(fabs(t0), fabs(t1)));
      t0 /= mx, t1 /= mx;
      RT p0 = p / mx, z = mx * sqrt(fabs(p0 * p0 + t0 * t1));
      ev[i] = RN(mkct)(t[(i + 1) * n + i + 1] + p, z);
      ev[i + 1] = RN(mkct)(t[(i + 1) * n + i + 1] + p, -z);
      if (!isfinite(creal(ev[i])) || !isfinite(z)) return -1;
      i += 2;
    }
  }
  if (!vv) return 0;
  const RT eps = R_EPS;
  RT norm = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t k = j > 0 ? j - 1 : 0; k < n; k++) norm += fabs(t[j * n + k]);
  if (norm != 0) {
    for (int64_t m = n - 1; m >= 0; m--) {
      RT p = creal(ev[m]), q = cimag(ev[m]);
      if (q == 0) {
        RT lastr = 0, lastw = 0;
        int64_t l = m;
        t[m * n + m] = 1;
        for (int64_t i = m - 1; i >= 0; i--) {
          RT ww = t[i * n + i] - p, r = 0;
          for (int64_t k = l; k <= m; k++) r += t[i * n + k] * t[k * n + m];
          if (cimag(ev[i]) < 0) {
            lastw = ww, lastr = r;
          } else {
            l = i;
            if (cimag(ev[i]) == 0) {
              t[i * n + m] = ww != 0 ? -r / ww : -r / (eps * norm);
            } else {
              RT x = t[i * n + i + 1], y = t[(i + 1) * n + i];
              RT den = (creal(ev[i]) - p) * (creal(ev[i]) - p) + cimag(ev[i]) * cimag(ev[i]);
              RT tt = (x * lastr - lastw * r) / den;
              t[i * n + m] = tt;
              t[(i + 1) * n + m] = fabs(x) > fabs(lastw) ? (-r - ww * tt) / x : (-lastr - y * tt) / lastw;
            }
            RT tt = fabs(t[i * n + m]);
            if ((eps * tt) * tt > 1)
              for (int64_t k = i; k < n; k++) t[k * n + m] /= tt;
          }
        }
      } else if (q < 0 && m > 0) {
        RT lastra = 0, lastsa = 0, lastw = 0;
        int64_t l = m - 1;
        if (fabs(t[m * n + m - 1]) > fabs(t[(m - 1) * n + m])) {
          t[(m - 1) * n + m - 1] = q / t[m * n + m - 1];
          t[(m - 1) * n + m] = -(t[m * n + m] - p) / t[m * n + m - 1];
        } else {
          CT cc = RN(mkct)(0, -t[(m - 1) * n + m]) / RN(mkct)(t[(m - 1) * n + m - 1] - p, q);
          t[(m - 1) * n + m - 1] = creal(cc);
          t[(m - 1) * n + m] = cimag(cc);
        }
        t[m * n + m - 1] = 0;
        t[m * n + m] = 1;
        for (int64_t i = m - 2; i >= 0; i--) {
          RT ra = 0, sa = 0, ww = t[i * n + i] - p;
          for (int64_t k = l; k <= m; k++) ra += t[i * n + k] * t[k * n + m - 1], sa += t[i * n + k] * t[k * n + m];
          if (cimag(ev[i]) < 0) {
            lastw = ww, lastra = ra, lastsa = sa;
          } else {
            l = i;
            if (cimag(ev[i]) == 0) {
              CT cc = RN(mkct)(-ra, -sa) / RN(mkct)(ww, q);
              t[i * n + m - 1] = creal(cc);
              t[i * n + m] = cimag(cc);
            } else {
              RT x = t[i * n + i + 1], y = t[(i + 1) * n + i];
              RT vr = (creal(ev[i]) - p) * (creal(ev[i]) - p) + cimag(ev[i]) * cimag(ev[i]) - q * q;
              RT vi = (creal(ev[i]) - p) * (RT)2.0 * q;
              if (vr == 0 && vi == 0) vr = eps * norm * (fabs(ww) + fabs(q) + fabs(x) + fabs(y) + fabs(lastw));
              CT cc = RN(mkct)(x * lastra - lastw * ra + q * sa, x * lastsa - lastw * sa - q * ra) / RN(mkct)(vr, vi);
              t[i * n + m - 1] = creal(cc);
              t[i * n + m] = cimag(cc);
              if (fabs(x) > fabs(lastw) + fabs(q)) {
                t[(i + 1) * n + m - 1] = (-ra - ww * t[i * n + m - 1] + q * t[i * n + m]) / x;
                t[(i + 1) * n + m] = (-sa - ww * t[i * n + m] - q * t[i * n + m - 1]) / x;
              } else {
                cc = RN(mkct)(-lastra - y * t[i * n + m - 1], -lastsa - y * t[i * n + m]) / RN(mkct)(lastw, q);
                t[(i + 1) * n + m - 1] = creal(cc);
                t[(i + 1) * n + m] = cimag(cc);
              }
            }
            RT tt = fmax(fabs(t[i * n + m - 1]), fabs(t[i * n + m]));
            if ((eps * tt) * tt > 1)
              for (int64_t k = i; k < n; k++) t[k * n + m - 1] /= tt, t[k * n + m] /= tt;
          }
        }
        m--;
      }
    }
    for (int64_t j = n - 1; j >= 0; j--) { /* eivec.col(j) = U.leftCols(j + 1) * T.col(j).head(j + 1) */
      for (int64_t i = 0; i < n; i++) {
        RT s = 0;
        for (int64_t k = 0; k <= j; k++) s += u[i * n + k] * t[k * n + j];
        w[i] = s;
      }
      for (int64_t i = 0; i < n; i++) u[i * n + j] = w[i];
    }
  }
  for (int64_t j = 0; j < n; j++) {
    if (fabs(cimag(ev[j])) <= fabs(creal(ev[j])) * 2 * R_EPS || j + 1 == n) {
      for (int64_t i = 0; i < n; i++) vv[i * n + j] = u[i * n + j];
      normalize_c(vv + j, n, n);
    } else {
      for (int64_t i = 0; i < n; i++) {
        vv[i * n + j] = RN(mkct)(u[i * n + j], u[i * n + j + 1]);
        vv[i * n + j + 1] = RN(mkct)(u[i * n + j], -u[i * n + j + 1]);
      }
      normalize_c(vv + j, n, n);
      normalize_c(vv + j + 1, n, n);
      j++;
    }
  }
  return 0;
}

/* Solves the m x m system a x = b in place (b becomes x), partial pivoting. */
static void RN(solve_small)(RT *a, RT *b, int m) {
  for (int c = 0; c < m; c++) {
    int p = c;
    for (int r = c + 1; r < m; r++)
      if (fabs(a[r * m + c]) > fabs(a[p * m + c])) p = r;
    if (p != c) {
      for (int k = 0; k < m; k++) {
        RT t = a[c * m + k];
        a[c * m + k] = a[p * m + k], a[p * m + k] = t;
      }
      RT t = b[c];
      b[c] = b[p], b[p] = t;
    }
    for (int r = c + 1; r < m; r++) {
      RT f = a[r * m + c] / a[c * m + c];
      for (int k = c; k < m; k++) a[r * m + k] -= f * a[c * m + k];
      b[r] -= f * b[c];
    }
  }
  for (int c = m - 1; c >= 0; c--) {
    RT s = b[c];
    for (int k = c + 1; k < m; k++) s -= a[c * m + k] * b[k];
    b[c] = s / a[c * m + c];
  }
}

/* Eigen's matrix_sqrt_quasi_triangular: t quasi-triangular, s (zeroed) out. */
static void RN(sqrt_quasi)(const RT *t, RT *s, int64_t n) {
#define T_(i, j) t[(i) * n + (j)]
#define S_(i, j) s[(i) * n + (j)]
  for (int64_t i = 0; i < n; i++) {
    if (i == n - 1 || T_(i + 1, i) == 0) {
      S_(i, i) = sqrt(T_(i, i));
    } else { /* the principal root of a block with complex eigenvalues: (B + sqrt(det) I) / sqrt(tr + 2 sqrt(det)) */
      RT a = T_(i, i), b = T_(i, i + 1), c = T_(i + 1, i), d = T_(i + 1, i + 1);
      RT sd = sqrt(a * d - b * c), tt = sqrt(a + d + 2 * sd);
      S_(i, i) = (a + sd) / tt, S_(i, i + 1) = b / tt, S_(i + 1, i) = c / tt, S_(i + 1, i + 1) = (d + sd) / tt;
      i++;
    }
  }
  for (int64_t j = 1; j < n; j++) {
    if (T_(j, j - 1) != 0) continue;
    for (int64_t i = j - 1; i >= 0; i--) {
      if (i > 0 && T_(i, i - 1) != 0) continue;
      int i2 = i < n - 1 && T_(i + 1, i) != 0, j2 = j < n - 1 && T_(j + 1, j) != 0;
      if (!i2 && !j2) {
        RT tmp = 0;
        for (int64_t k = i + 1; k < j; k++) tmp += S_(i, k) * S_(k, j);
        S_(i, j) = (T_(i, j) - tmp) / (S_(i, i) + S_(j, j));
      } else if (!i2 && j2) {
        RT rhs[2] = {T_(i, j), T_(i, j + 1)};
        for (int64_t k = i + 1; k < j; k++) rhs[0] -= S_(i, k) * S_(k, j), rhs[1] -= S_(i, k) * S_(k, j + 1);
        RT a[4] = {S_(i, i) + S_(j, j), S_(j + 1, j), S_(j, j + 1), S_(i, i) + S_(j + 1, j + 1)};
        RN(solve_small)(a, rhs, 2);
        S_(i, j) = rhs[0], S_(i, j + 1) = rhs[1];
      } else if (i2 && !j2) {
        RT rhs[2] = {T_(i, j), T_(i + 1, j)};
        for (int64_t k = i + 2; k < j; k++) rhs[0] -= S_(i, k) * S_(k, j), rhs[1] -= S_(i + 1, k) * S_(k, j);
        RT a[4] = {S_(i, i) + S_(j, j), S_(i, i + 1), S_(i + 1, i), S_(i + 1, i + 1) + S_(j, j)};
        RN(solve_small)(a, rhs, 2);
        S_(i, j) = rhs[0], S_(i + 1, j) = rhs[1];
      } else {
        RT A[4] = {S_(i, i), S_(i, i + 1), S_(i + 1, i), S_(i + 1, i + 1)};
        RT B[4] = {S_(j, j), S_(j, j + 1), S_(j + 1, j), S_(j + 1, j + 1)};
        RT C[4] = {T_(i, j), T_(i, j + 1), T_(i + 1, j), T_(i + 1, j + 1)};
        for (int64_t k = i + 2; k < j; k++) {
          C[0] -= S_(i, k) * S_(k, j), C[1] -= S_(i, k) * S_(k, j + 1);
          C[2] -= S_(i + 1, k) * S_(k, j), C[3] -= S_(i + 1, k) * S_(k, j + 1);
        }
        RT M[16] = {0};
        M[0] = A[0] + B[0], M[5] = A[0] + B[3], M[10] = A[3] + B[0], M[15] = A[3] + B[3];
        M[1] = B[2], M[2] = A[1], M[4] = B[1], M[7] = A[1], M[8] = A[2], M[11] = B[2], M[13] = A[2], M[14] = B[1];
        RN(solve_small)(M, C, 4);
        S_(i, j) = C[0], S_(i, j + 1) = C[1], S_(i + 1, j) = C[2], S_(i + 1, j + 1) = C[3];
      }
    }
  }
#undef T_
#undef S_
}


/* One matrix of a real MatrixSquareRoot (sqrtm) or Eig: x's matrix at off (its dtype RT) into y
 * (and v) at off, or Eig's values at b n. scratch: 3 n n + 2 n RT (at least). -1: Eig failed. */
static int RN(real_path)(const void *xp, int64_t off, int64_t n, int sqrtm, int cv, void *scratch, cd *ev, cd *vv,
                         void *yp, void *vp, int64_t b) {
  size_t nn = (size_t)(n * n);
  RT *a = scratch, *u = a + nn, *s = u + nn, *w = s + nn;
  const RT *x = (const RT *)xp + off;
  memcpy(a, x, nn * sizeof *a);
  if (sqrtm) {
    RN(real_schur)(a, u, n, w);
    memset(s, 0, nn * sizeof *s);
    RN(sqrt_quasi)(a, s, n);
    RT *y = (RT *)yp + off;
    for (int64_t i = 0; i < n; i++) /* U S U^T */
      for (int64_t j = 0; j < n; j++) {
        RT t = 0;
        for (int64_t k = 0; k < n; k++) t += s[i * n + k] * u[j * n + k];
        a[i * n + j] = t;
      }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        RT t = 0;
        for (int64_t k = 0; k < n; k++) t += u[i * n + k] * a[k * n + j];
        y[i * n + j] = t;
      }
    return 0;
  }
  int odt = sizeof(RT) == sizeof(float) ? SM_COMPLEX64 : SM_COMPLEX128;
  if (RN(real_schur)(a, cv ? u : NULL, n, w) || RN(real_eig)(a, u, n, ev, cv ? vv : NULL, w)) return -1;
  for (int64_t i = 0; i < n; i++) put_c(yp, odt, b * n + i, ev[i]);
  for (size_t i = 0; cv && i < nn; i++) put_c(vp, odt, off + (int64_t)i, vv[i]);
  return 0;
}

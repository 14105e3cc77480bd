/* linalg_schur_cplx.h - the complex Schur path of linalg_schur.c (Eigen's ComplexSchur and
 * ComplexEigenSolver, and their rotations), written once over CT (float complex or double
 * complex, real type RT) and included once per type, so that complex64 input is computed in
 * float as TF's Eigen does: the deflation test's epsilon decides when the iteration stops, and so
 * the Schur vectors that fix each eigenvector's phase. Expects RT, CT, CN(name), R_EPS, R_MIN,
 * <tgmath.h> and the Hessenberg reduction CN(hessenberg_c). Private to linalg_schur.c. */

static CT CN(mkcz)(RT re, RT im) {
  CT z;
  RT *p = (RT *)&z;
  p[0] = re, p[1] = im;
  return z;
}
static RT CN(norm1c)(CT z) { return fabs(creal(z)) + fabs(cimag(z)); }
static RT CN(abs2c)(CT z) { return creal(z) * creal(z) + cimag(z) * cimag(z); }
static void CN(normalize_c)(CT *v, int64_t n, int64_t stride) {
  RT z = 0;
  for (int64_t i = 0; i < n; i++) z += CN(abs2c)(v[i * stride]);
  if (z > 0) {
    RT r = sqrt(z);
    for (int64_t i = 0; i < n; i++) v[i * stride] /= r;
  }
}

/* rows p, q of a, columns [j0, j1): (x, y) <- (c x + conj(s) y, -s x + conj(c) y) */
static void CN(rot_rows_c)(CT *a, int64_t n, int64_t p, int64_t q, CT c, CT s, int64_t j0, int64_t j1) {
  if (c == 1 && s == 0) return;
  for (int64_t j = j0; j < j1; j++) {
    CT x = a[p * n + j], y = a[q * n + j];
    a[p * n + j] = c * x + conj(s) * y;
    a[q * n + j] = -s * x + conj(c) * y;
  }
}
/* columns p, q of rows [0, i1), by the rotation's transpose (c, -conj(s)) */
static void CN(rot_cols_c)(CT *a, int64_t n, int64_t p, int64_t q, CT c, CT s, int64_t i1) {
  CT s2 = -conj(s);
  if (c == 1 && s2 == 0) return;
  for (int64_t i = 0; i < i1; i++) {
    CT x = a[i * n + p], y = a[i * n + q];
    a[i * n + p] = c * x + conj(s2) * y;
    a[i * n + q] = -s2 * x + conj(c) * y;
  }
}
static void CN(givens_c)(CT p, CT q, CT *c, CT *s, CT *r) {
  if (q == 0) {
    *c = creal(p) < 0 ? -1 : 1;
    *s = 0;
    if (r) *r = *c * p;
  } else if (p == 0) {
    *c = 0;
    *s = -q / fabs(q);
    if (r) *r = fabs(q);
  } else {
    RT p1 = CN(norm1c)(p), q1 = CN(norm1c)(q);
    if (p1 >= q1) {
      CT ps = p / p1, qs = q / p1;
      RT p2 = CN(abs2c)(ps), q2 = CN(abs2c)(qs);
      RT u = sqrt(1 + q2 / p2);
      if (creal(p) < 0) u = -u;
      *c = 1 / u;
      *s = -qs * conj(ps) * (*c / p2);
      if (r) *r = p * u;
    } else {
      CT ps = p / q1, qs = q / q1;
      RT p2 = CN(abs2c)(ps), q2 = CN(abs2c)(qs);
      RT u = q1 * sqrt(p2 + q2);
      if (creal(p) < 0) u = -u;
      p1 = fabs(p);
      ps = p / p1;
      *c = p1 / u;
      *s = -conj(ps) * (q / u);
      if (r) *r = ps * u;
    }
  }
}
/* ---- ComplexSchur -------------------------------------------------------------------------- */
static int CN(negligible_c)(CT *t, int64_t n, int64_t i) {
  RT d = CN(norm1c)(t[i * n + i]) + CN(norm1c)(t[(i + 1) * n + i + 1]), sd = CN(norm1c)(t[(i + 1) * n + i]);
  if (sd <= d * R_EPS) {
    t[(i + 1) * n + i] = 0;
    return 1;
  }
  return 0;
}

static CT CN(cshift)(const CT *t, int64_t n, int64_t iu, int64_t iter) {
  if ((iter == 10 || iter == 20) && iu > 1)
    return fabs(creal(t[iu * n + iu - 1])) + fabs(creal(t[(iu - 1) * n + iu - 2]));
  CT t00 = t[(iu - 1) * n + iu - 1], t01 = t[(iu - 1) * n + iu], t10 = t[iu * n + iu - 1], t11 = t[iu * n + iu];
  RT nt = fabs(t00) + fabs(t01) + fabs(t10) + fabs(t11);
  t00 /= nt, t01 /= nt, t10 /= nt, t11 /= nt;
  CT b = t01 * t10, c = t00 - t11, disc = sqrt(c * c + (RT)4.0 * b), det = t00 * t11 - b, tr = t00 + t11;
  CT e1 = (tr + disc) / (RT)2.0, e2 = (tr - disc) / (RT)2.0;
  RT n1 = CN(norm1c)(e1), n2 = CN(norm1c)(e2);
  if (n1 > n2)
    e2 = det / e1;
  else if (n2 != 0)
    e1 = det / e2;
  return CN(norm1c)(e1 - t11) < CN(norm1c)(e2 - t11) ? nt * e1 : nt * e2;
}

/* t: the Hessenberg matrix, made upper triangular; u (may be NULL): Q in, Schur vectors out.
 * 0 on success, -1 when it does not converge. */
static int CN(complex_schur)(CT *t, CT *u, int64_t n) {
  if (n <= 1) return 0;
  int64_t maxit = 30 * n, iu = n - 1, iter = 0, total = 0;
  for (;;) {
    while (iu > 0) {
      if (!CN(negligible_c)(t, n, iu - 1)) break;
      iter = 0;
      iu--;
    }
    if (iu == 0) break;
    iter++;
    if (++total > maxit) break;
    int64_t il = iu - 1;
    while (il > 0 && !CN(negligible_c)(t, n, il - 1)) il--;
    CT shift = CN(cshift)(t, n, iu, iter), c, s;
    CN(givens_c)(t[il * n + il] - shift, t[(il + 1) * n + il], &c, &s, NULL);
    CN(rot_rows_c)(t, n, il, il + 1, conj(c), -s, il, n);
    CN(rot_cols_c)(t, n, il, il + 1, c, s, (il + 2 < iu ? il + 2 : iu) + 1);
    if (u) CN(rot_cols_c)(u, n, il, il + 1, c, s, n);
    for (int64_t i = il + 1; i < iu; i++) {
      CN(givens_c)(t[i * n + i - 1], t[(i + 1) * n + i - 1], &c, &s, &t[i * n + i - 1]);
      t[(i + 1) * n + i - 1] = 0;
      CN(rot_rows_c)(t, n, i, i + 1, conj(c), -s, i, n);
      CN(rot_cols_c)(t, n, i, i + 1, c, s, (i + 2 < iu ? i + 2 : iu) + 1);
      if (u) CN(rot_cols_c)(u, n, i, i + 1, c, s, n);
    }
  }
  return total <= maxit ? 0 : -1;
}

/* ---- ComplexEigenSolver ----------------------------------------------------------------------------------- */

/* ComplexEigenSolver: a (n x n complex, destroyed). x: n x n scratch, u: n x n scratch (when vv). */
static int CN(complex_eig)(CT *a, int64_t n, CT *ev, CT *vv, CT *u, CT *x, CT *w) {
  if (n == 1) {
    ev[0] = a[0];
    if (vv) vv[0] = 1;
    return 0;
  }
  CN(hessenberg_c)(a, vv ? u : NULL, n, w, w + n);
  if (CN(complex_schur)(a, vv ? u : NULL, n)) return -1;
  for (int64_t i = 0; i < n; i++) ev[i] = a[i * n + i];
  if (vv) {
    RT fro = 0;
    for (int64_t i = 0; i < n * n; i++) fro += CN(abs2c)(a[i]);
    RT mn = fmax(sqrt(fro), R_MIN);
    memset(x, 0, (size_t)(n * n) * sizeof *x);
    for (int64_t k = n - 1; k >= 0; k--) {
      x[k * n + k] = 1;
      for (int64_t i = k - 1; i >= 0; i--) {
        CT s = -a[i * n + k];
        for (int64_t j = i + 1; j < k; j++) s -= a[i * n + j] * x[j * n + k];
        CT z = a[i * n + i] - a[k * n + k];
        if (z == 0) z = CN(mkcz)(R_EPS * mn, cimag(z));
        /* TF computes this with denormals on (ScopedDontFlushDenormal); here they may be flushed,
         * and eps * R_MIN is one: 0 / it is 0 there */
        x[i * n + k] = s == 0 ? 0 : s / z;
      }
    }
    for (int64_t i = 0; i < n; i++)
      for (int64_t k = 0; k < n; k++) {
        CT s = 0;
        for (int64_t j = 0; j <= k; j++) s += u[i * n + j] * x[j * n + k];
        vv[i * n + k] = s;
      }
    for (int64_t k = 0; k < n; k++) CN(normalize_c)(vv + k, n, n);
  }
  for (int64_t i = 0; i < n; i++) { /* sort by |lambda|, as sortEigenvalues */
    int64_t k = i;
    for (int64_t j = i + 1; j < n; j++)
      if (fabs(ev[j]) < fabs(ev[k])) k = j;
    if (k != i) {
      CT t = ev[k];
      ev[k] = ev[i], ev[i] = t;
      for (int64_t r = 0; vv && r < n; r++) t = vv[r * n + k], vv[r * n + k] = vv[r * n + i], vv[r * n + i] = t;
    }
  }
  return 0;
}


/* One matrix of a complex Eig: x's matrix at off into e (at b n) and v (at off) of dtype odt.
 * scratch: 4 n n + 3 n CT. -1: no convergence. */
static int CN(eig_path)(const void *xp, int dt, int64_t off, int64_t n, int cv, void *scratch, void *yp, void *vp,
                        int odt, int64_t b) {
  size_t nn = (size_t)(n * n);
  CT *m = scratch, *u = m + nn, *x = u + nn, *vv = x + nn, *w = vv + nn, *ev = w + 2 * (size_t)n;
  for (size_t i = 0; i < nn; i++) m[i] = (CT)get_c(xp, dt, off + (int64_t)i);
  if (CN(complex_eig)(m, n, ev, cv ? vv : NULL, u, x, w)) return -1;
  for (int64_t i = 0; i < n; i++) put_c(yp, odt, b * n + i, ev[i]);
  for (size_t i = 0; cv && i < nn; i++) put_c(vp, odt, off + (int64_t)i, vv[i]);
  return 0;
}

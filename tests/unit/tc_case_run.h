/* tc_case_run.h - runs the tc_case tables (array_case.h) that tools/gen_scatter_cases.py,
 * gen_random_cases.py, gen_math2_cases.py, gen_fft_cases.py and gen_unique_cases.py write with
 * TensorFlow's answers: each case's node over Placeholders i0.. in a session built from pbtxt, fed
 * the case's inputs, compared with TF's outputs (bit for bit, or floats within tc_tolerance
 * relative when it is set: TF's Eigen and libm differ in the last bits; complex as pairs;
 * tc_scale_tolerance for transforms) or TF's error text. A case whose name holds "[run2]" runs its
 * session twice and compares the second run (stateful kernels); one whose name holds "[exact]" is
 * compared bit for bit whatever tc_tolerance says (a rounding rule under test); one whose name holds
 * "[f32 tol]" compares double outputs at the float tolerance (an op TF computes partly in float for
 * double too, as CTCLoss). Include after test.h and
 * array_case.h; shared by test_ops_scatter, _random, _math2, _fft and _unique. */
#ifndef SM_TEST_TC_CASE_RUN_H
#define SM_TEST_TC_CASE_RUN_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"
#include "runtime/session.h"
#include "savedmodel/tensor.h"

/* 0: outputs must be equal bit for bit; else float outputs within tc_tolerance * max(1, |want|)
 * (double within 1e-9, half and bfloat16 within two of their ulps). */
static double tc_tolerance;

static sm_tensor *make_tensor(const tc_tensor *t) {
  sm_tensor *out = NULL;
  sm_status *s = sm_tensor_new(t->dtype, t->rank, t->dims, &out);
  if (s) {
    fprintf(stderr, "make_tensor: %s\n", sm_status_message(s));
    sm_status_free(s);
    return NULL;
  }
  const char *p = t->v;
  void *d = sm_tensor_data(out);
  for (int64_t i = 0; i < sm_tensor_num_elements(out); i++) {
    char *e;
    if (t->dtype == SM_STRING) { /* space-separated tokens; %XX is a byte, "%" alone "" */
      while (*p == ' ') p++;
      size_t len = strcspn(p, " "), n = 0;
      char sbuf[256], *buf = len < sizeof sbuf ? sbuf : malloc(len); /* an encoded image is longer */
      if (!buf) {
        sm_tensor_free(out);
        return NULL;
      }
      for (size_t k = 0; k < len; k++)
        if (p[k] == '%' && k + 2 < len) {
          char hex[3] = {p[k + 1], p[k + 2], 0};
          buf[n++] = (char)strtol(hex, NULL, 16);
          k += 2;
        } else if (p[k] != '%') {
          buf[n++] = p[k];
        }
      s = sm_tensor_set_string(out, i, buf, n);
      if (buf != sbuf) free(buf);
      if (s) {
        sm_status_free(s);
        sm_tensor_free(out);
        return NULL;
      }
      p += len;
      continue;
    }
    switch (t->dtype) {
    case SM_FLOAT: ((float *)d)[i] = strtof(p, &e); break;
    case SM_DOUBLE: ((double *)d)[i] = strtod(p, &e); break;
    case SM_HALF: ((uint16_t *)d)[i] = sm__f32_to_half(strtof(p, &e)); break;
    case SM_BFLOAT16: ((uint16_t *)d)[i] = sm__f32_to_bf16(strtof(p, &e)); break;
    case SM_BOOL: ((uint8_t *)d)[i] = (uint8_t)strtol(p, &e, 10); break;
    case SM_INT8: case SM_QINT8: ((int8_t *)d)[i] = (int8_t)strtoll(p, &e, 10); break;
    case SM_UINT8: case SM_QUINT8: ((uint8_t *)d)[i] = (uint8_t)strtoull(p, &e, 10); break;
    case SM_INT16: case SM_QINT16: ((int16_t *)d)[i] = (int16_t)strtoll(p, &e, 10); break;
    case SM_UINT16: case SM_QUINT16: ((uint16_t *)d)[i] = (uint16_t)strtoull(p, &e, 10); break;
    case SM_INT32: case SM_QINT32: ((int32_t *)d)[i] = (int32_t)strtoll(p, &e, 10); break;
    case SM_UINT32: ((uint32_t *)d)[i] = (uint32_t)strtoull(p, &e, 10); break;
    case SM_INT64: ((int64_t *)d)[i] = strtoll(p, &e, 10); break;
    case SM_UINT64: ((uint64_t *)d)[i] = strtoull(p, &e, 10); break;
    case SM_COMPLEX64: ((float *)d)[2 * i] = strtof(p, &e), ((float *)d)[2 * i + 1] = strtof(e, &e); break;
    case SM_COMPLEX128: ((double *)d)[2 * i] = strtod(p, &e), ((double *)d)[2 * i + 1] = strtod(e, &e); break;
    default: fprintf(stderr, "make_tensor: dtype %d\n", t->dtype); sm_tensor_free(out); return NULL;
    }
    p = e;
  }
  return out;
}

/* Element i as a double (floats and integers; 64-bit integers may round, for printing only). */
static double tc_elem(const sm_tensor *t, int64_t i) {
  const void *d = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
  case SM_FLOAT: return ((const float *)d)[i];
  case SM_DOUBLE: return ((const double *)d)[i];
  case SM_HALF: return sm__half_to_f32(((const uint16_t *)d)[i]);
  case SM_BFLOAT16: return sm__bf16_to_f32(((const uint16_t *)d)[i]);
  case SM_BOOL: case SM_UINT8: case SM_QUINT8: return ((const uint8_t *)d)[i];
  case SM_INT8: case SM_QINT8: return ((const int8_t *)d)[i];
  case SM_INT16: case SM_QINT16: return ((const int16_t *)d)[i];
  case SM_UINT16: case SM_QUINT16: return ((const uint16_t *)d)[i];
  case SM_INT32: case SM_QINT32: return ((const int32_t *)d)[i];
  case SM_UINT32: return ((const uint32_t *)d)[i];
  case SM_INT64: return (double)((const int64_t *)d)[i];
  case SM_UINT64: return (double)((const uint64_t *)d)[i];
  default: return NAN; /* strings print as NaN */
  }
}

/* Scalar component i of a real tensor, or of a complex one seen as (re, im) pairs. */
static double tc_component(const sm_tensor *t, int64_t i) {
  if (sm_tensor_dtype(t) == SM_COMPLEX64) return ((const float *)sm_tensor_data(t))[i];
  if (sm_tensor_dtype(t) == SM_COMPLEX128) return ((const double *)sm_tensor_data(t))[i];
  return tc_elem(t, i);
}

static void print_tensor(const char *what, const sm_tensor *t) {
  int dt = sm_tensor_dtype(t);
  int64_t n = sm_tensor_num_elements(t) * (dt == SM_COMPLEX64 || dt == SM_COMPLEX128 ? 2 : 1);
  fprintf(stderr, "  %s:", what);
  for (int64_t i = 0; i < n && i < 24; i++) fprintf(stderr, " %.9g", tc_component(t, i));
  fprintf(stderr, "\n");
}

/* Set: float tolerances scale with the largest |value| of the whole expected tensor (transforms,
 * whose rounding errors are relative to the signal, not to each bin). */
static int tc_scale_tolerance;

/* Set while a "[f32 tol]" case is compared: doubles within tc_tolerance. */
static int tc_f32_tol;

/* want and got agree: bit for bit, or (tc_tolerance set) floats within the tolerance. */
static int tc_match(const sm_tensor *want, const sm_tensor *got) {
  if (tc_tolerance == 0 || sm_tensor_equal(want, got)) return sm_tensor_equal(want, got);
  int dt = sm_tensor_dtype(want);
  if (dt != sm_tensor_dtype(got) || sm_tensor_rank(want) != sm_tensor_rank(got)) return 0;
  for (int i = 0; i < sm_tensor_rank(want); i++)
    if (sm_tensor_dims(want)[i] != sm_tensor_dims(got)[i]) return 0;
  int cplx = dt == SM_COMPLEX64 || dt == SM_COMPLEX128;
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_HALF && dt != SM_BFLOAT16 && !cplx) return 0;
  double tol = dt == SM_HALF ? 2e-3 : dt == SM_BFLOAT16 ? 1.6e-2 : (dt == SM_DOUBLE || dt == SM_COMPLEX128) && !tc_f32_tol ? 1e-9 : tc_tolerance;
  int64_t n = sm_tensor_num_elements(want) * (cplx ? 2 : 1);
  double scale = 1;
  for (int64_t i = 0; tc_scale_tolerance && i < n; i++)
    if (isfinite(tc_component(want, i))) scale = fmax(scale, fabs(tc_component(want, i)));
  for (int64_t i = 0; i < n; i++) {
    double w = tc_component(want, i), g = tc_component(got, i);
    if (isnan(w) ? !isnan(g) : isinf(w) ? w != g : !(fabs(g - w) <= tol * fmax(scale, fabs(w)))) return 0;
  }
  return 1;
}

/* Runs `node` (op and attrs) over placeholders i0.. (at most 20) fed with `in`, `runs` times in one
 * session; fetches nout (at most 8) outputs of the last run. */
static sm_status *run_node_n(const char *node, int nin, sm_tensor **in, int nout, sm_tensor **out, int runs) {
  char *g = malloc(65536);
  if (!g) return sm_status_new(SM_NO_MEMORY, "test");
  size_t o = (size_t)snprintf(g, 65536, "graph_def {\n");
  for (int i = 0; i < nin; i++)
    o += (size_t)snprintf(g + o, 65536 - o, "node { name: \"i%d\" op: \"Placeholder\" attr { key: \"dtype\" value { type: %s } } }\n",
                          i, sm_dtype_name(sm_tensor_dtype(in[i])));
  o += (size_t)snprintf(g + o, 65536 - o, "node { name: \"y\" ");
  for (int i = 0; i < nin; i++) o += (size_t)snprintf(g + o, 65536 - o, "input: \"i%d\" ", i);
  snprintf(g + o, 65536 - o, "%s }\n}\n", node);
  sm_session *s = NULL;
  sm_status *st = sm__session_from_pbtxt(g, &s);
  free(g);
  if (st) return st;
  char names[20][16], fnames[8][16]; /* up to 20 inputs (test_ops_blocklstm's grad ops take 18), 8 outputs */
  const char *feed[20], *fetch[8];
  for (int i = 0; i < nin; i++) {
    snprintf(names[i], sizeof names[i], "i%d", i);
    feed[i] = names[i];
  }
  for (int i = 0; i < nout; i++) {
    snprintf(fnames[i], sizeof fnames[i], "y:%d", i);
    fetch[i] = fnames[i];
  }
  for (int r = 0; r < runs && !st; r++) {
    for (int i = 0; r && i < nout; i++) {
      sm_tensor_free(out[i]);
      out[i] = NULL;
    }
    st = sm__session_run(s, feed, in, nin, fetch, nout, NULL, 0, out);
  }
  sm__session_free(s);
  return st;
}

static sm_status *run_node(const char *node, int nin, sm_tensor **in, int nout, sm_tensor **out) {
  return run_node_n(node, nin, in, nout, out, 1);
}

/* Judges one run of a case: the expected error text (err) or the nout expected outputs (want);
 * "[f32 tol]" / "[exact]" in the name pick the comparison. Counts failures in sm_test_failures. */
static void tc_check(const char *name, const char *err, sm_status *st, int nout, const tc_tensor *want_specs,
                     sm_tensor *const *out) {
  if (err) {
    if (!st) {
      fprintf(stderr, "case '%s': succeeded, expected error \"%s\"\n", name, err);
      sm_test_failures++;
    } else if (!strstr(sm_status_message(st), err)) {
      fprintf(stderr, "case '%s': error \"%s\" lacks \"%s\"\n", name, sm_status_message(st), err);
      sm_test_failures++;
    }
  } else if (st) {
    fprintf(stderr, "case '%s': failed: %s\n", name, sm_status_message(st));
    sm_test_failures++;
  } else {
    for (int i = 0; i < nout; i++) {
      sm_tensor *want = make_tensor(&want_specs[i]);
      tc_f32_tol = strstr(name, "[f32 tol]") != NULL;
      int ok = want && out[i] && (strstr(name, "[exact]") ? sm_tensor_equal(want, out[i]) : tc_match(want, out[i]));
      tc_f32_tol = 0;
      if (!ok) {
        fprintf(stderr, "case '%s': output %d differs\n", name, i);
        if (want) print_tensor("want", want);
        if (out[i]) print_tensor("got ", out[i]);
        sm_test_failures++;
      }
      sm_tensor_free(want);
    }
  }
}

static int run_case(const tc_case *c) {
  int before = sm_test_failures;
  sm_tensor *in[8] = {0}, *out[8] = {0};
  for (int i = 0; i < c->nin; i++)
    if (!(in[i] = make_tensor(&c->in[i]))) sm_test_failures++;
  if (sm_test_failures != before) goto done;
  sm_status *st = run_node_n(c->node, c->nin, in, c->err ? 1 : c->nout, out, strstr(c->name, "[run2]") ? 2 : 1);
  tc_check(c->name, c->err, st, c->nout, c->out, out);
  sm_status_free(st);
done:
  for (int i = 0; i < 8; i++) {
    sm_tensor_free(in[i]);
    sm_tensor_free(out[i]);
  }
  return sm_test_failures != before;
}

/* a tensor of dtype dt (float, qint8 or a 32-bit integer type) holding v everywhere */
static inline sm_tensor *tc_const_tensor(int dt, int rank, const int64_t *d, double v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(dt, rank, d, &t));
  if (!t) return NULL;
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++)
    if (dt == SM_FLOAT) ((float *)sm_tensor_data(t))[i] = (float)v;
    else if (dt == SM_QINT8) ((int8_t *)sm_tensor_data(t))[i] = (int8_t)v;
    else ((int32_t *)sm_tensor_data(t))[i] = (int32_t)v;
  return t;
}

#endif

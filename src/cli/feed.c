/* feed.c - inputs of `savedmodel run` converted the way Session.run's np.asarray converts them.
 *
 * Two rule sets (see feed.h): Python scalars go through int()/float()/bool() per element, with
 * numpy's errors ("Python integer 300 out of bounds for uint8", "cannot convert float NaN to
 * integer"); arrays from files are cast with astype's unsafe rules, which on x86 turn
 * out-of-range floats into the minimum integer and wrap narrower integers. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/feed.h"
#include "savedmodel/dtype.h"
#include "savedmodel/example.h"

/* ---- scalars -------------------------------------------------------------------------------- */
typedef enum { N_INT, N_UINT, N_FLOAT, N_COMPLEX, N_BIG } nkind;
typedef struct {
  nkind k;
  int64_t i;
  uint64_t u;
  double f, im;
} num;

static uint16_t double_to_half(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  if (isnan(d)) return sign | 0x7e00;
  double a = fabs(d);
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < ldexp(1.0, -14)) return sign | (uint16_t)nearbyint(a * ldexp(1.0, 24));
  int e;
  double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int E = e - 1;
  double r = nearbyint((m * 2 - 1) * 1024);
  if (r >= 1024) { r = 0; E++; }
  if (E > 15) return sign | 0x7c00;
  return sign | (uint16_t)((E + 15) << 10) | (uint16_t)r;
}

static uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

static int is_int_dtype(int dt) {
  switch (dt) {
  case SM_INT8: case SM_INT16: case SM_INT32: case SM_INT64: case SM_UINT8: case SM_UINT16: case SM_UINT32:
  case SM_UINT64: case SM_QINT8: case SM_QUINT8: case SM_QINT16: case SM_QUINT16: case SM_QINT32:
    return 1;
  default: return 0;
  }
}

static int is_unsigned(int dt) {
  return dt == SM_UINT8 || dt == SM_UINT16 || dt == SM_UINT32 || dt == SM_UINT64 || dt == SM_QUINT8 || dt == SM_QUINT16;
}

static void int_range(int dt, int64_t *lo, uint64_t *hi) {
  size_t w = sm_dtype_size(dt);
  if (is_unsigned(dt)) { *lo = 0; *hi = w == 8 ? UINT64_MAX : (((uint64_t)1 << (8 * w)) - 1); }
  else { *lo = w == 8 ? INT64_MIN : -((int64_t)1 << (8 * w - 1)); *hi = w == 8 ? (uint64_t)INT64_MAX : (((uint64_t)1 << (8 * w - 1)) - 1); }
}

static void store_bits(uint8_t *dst, uint64_t bits, size_t w) {
  for (size_t b = 0; b < w; b++) dst[b] = (uint8_t)(bits >> (8 * b)); /* little-endian host data */
}

/* Stores a value known to be in range (ints) or any value (floats) into dst of dtype dt. */
static void store(int dt, uint8_t *dst, const num *n) {
  double re = n->k == N_INT ? (double)n->i : n->k == N_UINT ? (double)n->u : n->f;
  switch (dt) {
  case SM_FLOAT: {
    float v = n->k == N_INT ? (float)n->i : n->k == N_UINT ? (float)n->u : (float)re;
    memcpy(dst, &v, 4);
    break;
  }
  case SM_DOUBLE: memcpy(dst, &re, 8); break;
  case SM_HALF: { uint16_t h = double_to_half(re); memcpy(dst, &h, 2); break; }
  case SM_BFLOAT16: { uint16_t h = float_to_bf16((float)re); memcpy(dst, &h, 2); break; }
  case SM_COMPLEX64: { float v[2] = {(float)re, (float)n->im}; memcpy(dst, v, 8); break; }
  case SM_COMPLEX128: { double v[2] = {re, n->im}; memcpy(dst, v, 16); break; }
  case SM_BOOL: dst[0] = n->k == N_INT ? n->i != 0 : n->k == N_UINT ? n->u != 0 : (re != 0 || n->im != 0 || isnan(re)); break;
  default: store_bits(dst, n->k == N_UINT ? n->u : (uint64_t)n->i, sm_dtype_size(dt)); break;
  }
}

static const char *np_name(int dt) {
  const char *s = sm_dtype_numpy_name(dt);
  return s ? s : sm_dtype_name(dt) ? sm_dtype_name(dt) : "?";
}

/* int(x) / float(x) of a Python scalar, then the range check numpy does for Python ints. */
static sm_status *py_scalar(const py_value *v, int dt, const char *what, uint8_t *dst) {
  num n = {0};
  char tmp[64];
  if (dt == SM_STRING) {
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': a %s cannot be fed to a string input (give str or bytes)",
                         what, py_type_name(v));
  }
  switch (v->kind) {
  case PY_BOOL: n.k = N_INT; n.i = v->i; break;
  case PY_INT:
    if (!v->big) { n.k = N_INT; n.i = v->i; }
    else if (v->u_ok) { n.k = N_UINT; n.u = v->u; }
    else { n.k = N_BIG; n.f = v->f; }
    break;
  case PY_FLOAT: n.k = N_FLOAT; n.f = v->f; break;
  case PY_COMPLEX:
    if (dt != SM_COMPLEX64 && dt != SM_COMPLEX128)
      return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': float() argument must be a string or a real number, not 'complex' (the input is %s)", what, np_name(dt));
    n.k = N_COMPLEX; n.f = v->f; n.im = v->im;
    break;
  case PY_NONE:
    if (dt == SM_FLOAT || dt == SM_DOUBLE || dt == SM_HALF || dt == SM_BFLOAT16 || dt == SM_COMPLEX64 || dt == SM_COMPLEX128) {
      n.k = N_FLOAT; n.f = NAN; break;
    }
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': None cannot be converted to %s", what, np_name(dt));
  case PY_STR: case PY_BYTES: {
    if (dt == SM_BOOL) { dst[0] = v->len != 0; return NULL; } /* bool(str): non-empty is True */
    if (v->len >= sizeof tmp || memchr(v->s, 0, v->len))
      return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': could not convert string to %s", what, np_name(dt));
    memcpy(tmp, v->s, v->len + 1);
    char *s = tmp, *e;
    while (*s == ' ' || (*s >= '\t' && *s <= '\r')) s++;
    size_t l = strlen(s);
    while (l && (s[l - 1] == ' ' || (s[l - 1] >= '\t' && s[l - 1] <= '\r'))) s[--l] = 0;
    errno = 0;
    if (is_int_dtype(dt)) {
      const char *d = s + (s[0] == '-' || s[0] == '+');
      e = s;
      if (s[0] == '-') { n.k = N_INT; n.i = strtoll(s, &e, 10); }
      else { n.k = N_UINT; n.u = strtoull(s, &e, 10); }
      if (!l || *e || *d < '0' || *d > '9' || errno == ERANGE)
        return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': invalid literal for int() with base 10: '%s'", what, s);
      if (n.k == N_UINT && n.u <= INT64_MAX) { n.k = N_INT; n.i = (int64_t)n.u; }
    } else {
      int hex = strchr(s, 'x') || strchr(s, 'X');
      n.f = strtod(s, &e);
      n.k = N_FLOAT;
      if (!l || *e || hex)
        return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': could not convert string to float: '%s'", what, s);
    }
    break;
  }
  default:
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': a %s is not an array element", what, py_type_name(v));
  }
  if (is_int_dtype(dt)) {
    if (n.k == N_COMPLEX)
      return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': a complex cannot be converted to %s", what, np_name(dt));
    if (n.k == N_FLOAT) { /* int(float): truncation, then the same range check */
      if (isnan(n.f)) return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': cannot convert float NaN to integer", what);
      if (isinf(n.f)) return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': cannot convert float infinity to integer", what);
      double t = trunc(n.f);
      if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) { n.k = N_INT; n.i = (int64_t)t; }
      else if (t >= 0 && t < 18446744073709551616.0) { n.k = N_UINT; n.u = (uint64_t)t; }
      else return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': Python int too large to convert to C long", what);
    }
    int64_t lo;
    uint64_t hi;
    int_range(dt, &lo, &hi);
    int ok = n.k == N_INT ? (n.i >= lo && (n.i < 0 || (uint64_t)n.i <= hi)) : n.k == N_UINT ? n.u <= hi : 0;
    if (!ok) {
      if (n.k == N_INT) snprintf(tmp, sizeof tmp, "%lld", (long long)n.i);
      else if (n.k == N_UINT) snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)n.u);
      else snprintf(tmp, sizeof tmp, "%.17g", n.f);
      return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': Python integer %s out of bounds for %s", what, tmp, np_name(dt));
    }
  } else if (n.k == N_BIG) {
    n.k = N_FLOAT;
  }
  if (!is_int_dtype(dt) && sm_dtype_size(dt) == 0)
    return sm_status_new(SM_UNIMPLEMENTED, "input '%s': cannot feed values of dtype %s", what,
                         sm_dtype_name(dt) ? sm_dtype_name(dt) : "?");
  store(dt, dst, &n);
  return NULL;
}

/* ---- literals ------------------------------------------------------------------------------- */
static int is_seq(const py_value *v) { return v->kind == PY_LIST || v->kind == PY_TUPLE; }

/* The shape numpy infers, and whether every sub-list agrees with it. */
static sm_status *infer_shape(const py_value *v, int depth, int *rank, int64_t *dims, const char *what) {
  if (!is_seq(v)) {
    if (depth < *rank)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "input '%s': setting an array element with a sequence: the nested lists have an "
                           "inhomogeneous shape after %d dimensions", what, depth);
    return NULL;
  }
  if (depth >= SM_MAX_RANK) return sm_status_new(SM_OUT_OF_RANGE, "input '%s': more than %d nested lists", what, SM_MAX_RANK);
  if (depth == *rank) { /* first visit at this depth fixes the dim */
    dims[depth] = (int64_t)v->n;
    (*rank)++;
  } else if (depth > *rank || dims[depth] != (int64_t)v->n) {
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "input '%s': setting an array element with a sequence: the nested lists have an "
                         "inhomogeneous shape after %d dimensions", what, depth);
  }
  for (size_t k = 0; k < v->n; k++) {
    sm_status *st = infer_shape(v->items[k], depth + 1, rank, dims, what);
    if (st) return st;
  }
  /* an element that ended early at this depth while others went deeper */
  return NULL;
}

static sm_status *fill(const py_value *v, int depth, int rank, sm_tensor *t, int64_t *idx, const char *what) {
  if (depth < rank) {
    if (!is_seq(v))
      return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': the nested lists have an inhomogeneous shape", what);
    for (size_t k = 0; k < v->n; k++) {
      sm_status *st = fill(v->items[k], depth + 1, rank, t, idx, what);
      if (st) return st;
    }
    return NULL;
  }
  if (is_seq(v))
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': the nested lists have an inhomogeneous shape", what);
  int dt = sm_tensor_dtype(t);
  int64_t i = (*idx)++;
  if (dt == SM_STRING) {
    if (v->kind != PY_STR && v->kind != PY_BYTES)
      return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': a %s cannot be fed to a string input (give str or bytes)",
                           what, py_type_name(v));
    return sm_tensor_set_string(t, i, v->s, v->len);
  }
  return py_scalar(v, dt, what, (uint8_t *)sm_tensor_data(t) + (size_t)i * sm_dtype_size(dt));
}

sm_status *sm__cli_literal_to_tensor(const py_value *v, int dtype, const char *what, sm_tensor **out) {
  *out = NULL;
  dtype = sm_dtype_base(dtype);
  if (dtype != SM_STRING && sm_dtype_size(dtype) == 0)
    return sm_status_new(SM_UNIMPLEMENTED, "input '%s': cannot feed values of dtype %s", what,
                         sm_dtype_name(dtype) ? sm_dtype_name(dtype) : "?");
  int rank = 0;
  int64_t dims[SM_MAX_RANK];
  sm_status *st = infer_shape(v, 0, &rank, dims, what);
  if (st) return st;
  sm_tensor *t;
  if ((st = sm_tensor_new(dtype, rank, dims, &t))) return sm_status_prefix(st, "input '%s'", what);
  int64_t idx = 0;
  if ((st = fill(v, 0, rank, t, &idx, what))) { sm_tensor_free(t); return st; }
  *out = t;
  return NULL;
}

/* ---- arrays from files ---------------------------------------------------------------------- */
static void load_num(const sm_tensor *t, int64_t i, num *n) {
  const uint8_t *p = (const uint8_t *)sm_tensor_data(t);
  int dt = sm_tensor_dtype(t);
  size_t w = sm_dtype_size(dt);
  const uint8_t *q = p + (size_t)i * w;
  memset(n, 0, sizeof *n);
  switch (dt) {
  case SM_FLOAT: { float v; memcpy(&v, q, 4); n->k = N_FLOAT; n->f = v; return; }
  case SM_DOUBLE: memcpy(&n->f, q, 8); n->k = N_FLOAT; return;
  case SM_HALF: {
    uint16_t h; memcpy(&h, q, 2);
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    n->k = N_FLOAT; n->f = (h & 0x8000) ? -v : v; return;
  }
  case SM_BFLOAT16: { uint16_t h; memcpy(&h, q, 2); uint32_t u = (uint32_t)h << 16; float v; memcpy(&v, &u, 4); n->k = N_FLOAT; n->f = v; return; }
  case SM_COMPLEX64: { float v[2]; memcpy(v, q, 8); n->k = N_COMPLEX; n->f = v[0]; n->im = v[1]; return; }
  case SM_COMPLEX128: { double v[2]; memcpy(v, q, 16); n->k = N_COMPLEX; n->f = v[0]; n->im = v[1]; return; }
  case SM_BOOL: n->k = N_INT; n->i = q[0] != 0; return;
  default: break;
  }
  uint64_t bits = 0;
  for (size_t b = 0; b < w; b++) bits |= (uint64_t)q[b] << (8 * b);
  if (is_unsigned(dt)) { n->k = N_UINT; n->u = bits; return; }
  if (w < 8 && (bits >> (8 * w - 1)) & 1) bits |= ~(uint64_t)0 << (8 * w); /* sign-extend */
  n->k = N_INT;
  n->i = (int64_t)bits;
}

/* astype's float -> int on x86: NaN and out-of-range give the minimum of a 64- or 32-bit
 * conversion; narrower types are converted through int32 and wrapped. */
static uint64_t float_to_int_bits(double f, int dt) {
  size_t w = sm_dtype_size(dt);
  if (w == 8) {
    if (is_unsigned(dt) && f >= 9223372036854775808.0 && f < 18446744073709551616.0)
      return (uint64_t)(f - 9223372036854775808.0) + ((uint64_t)1 << 63);
    if (!(f > -9223372036854775809.0 && f < 9223372036854775808.0)) return (uint64_t)INT64_MIN;
    return (uint64_t)(int64_t)f;
  }
  if (w == 4 && is_unsigned(dt)) { /* through int64 */
    if (!(f > -9223372036854775809.0 && f < 9223372036854775808.0)) return 0;
    return (uint64_t)(int64_t)f;
  }
  if (!(f > -2147483649.0 && f < 2147483648.0)) return (uint64_t)(uint32_t)INT32_MIN;
  return (uint64_t)(int64_t)(int32_t)f;
}

sm_status *sm__cli_cast_tensor(sm_tensor *t, int dtype, const char *what, sm_tensor **out) {
  *out = NULL;
  dtype = sm_dtype_base(dtype);
  int src = sm_tensor_dtype(t);
  if (src == dtype) { *out = sm_tensor_ref(t); return NULL; }
  if (dtype != SM_STRING && sm_dtype_size(dtype) == 0)
    return sm_status_new(SM_UNIMPLEMENTED, "input '%s': cannot feed values of dtype %s", what,
                         sm_dtype_name(dtype) ? sm_dtype_name(dtype) : "?");
  if (dtype == SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': the file holds %s values but the input is a string tensor", what,
                         np_name(src));
  sm_tensor *r;
  sm_status *st = sm_tensor_new(dtype, sm_tensor_rank(t), sm_tensor_dims(t), &r);
  if (st) return sm_status_prefix(st, "input '%s'", what);
  int64_t count = sm_tensor_num_elements(t);
  uint8_t *dst = sm_tensor_data(r);
  size_t w = sm_dtype_size(dtype);
  for (int64_t i = 0; i < count && !st; i++) {
    uint8_t *d = dst + (size_t)i * w;
    if (src == SM_STRING) { /* numpy parses text the way int() / float() do */
      py_value pv = {0};
      size_t len;
      pv.kind = PY_BYTES;
      pv.s = (char *)sm_tensor_string(t, i, &len);
      pv.len = len;
      st = py_scalar(&pv, dtype, what, d);
      continue;
    }
    num n;
    load_num(t, i, &n);
    if (n.k == N_COMPLEX && dtype != SM_COMPLEX64 && dtype != SM_COMPLEX128) { n.k = N_FLOAT; n.im = 0; }
    if (is_int_dtype(dtype)) {
      uint64_t bits = n.k == N_FLOAT ? float_to_int_bits(n.f, dtype) : n.k == N_UINT ? n.u : (uint64_t)n.i;
      store_bits(d, bits, w);
    } else {
      store(dtype, d, &n);
    }
  }
  if (st) { sm_tensor_free(r); return st; }
  *out = r;
  return NULL;
}

/* ---- tf.Example --------------------------------------------------------------------------- */
static sm_status *add_feature(sm_example *ex, const py_value *key, const py_value *list, const char *what) {
  if (key->kind != PY_STR && key->kind != PY_BYTES)
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': feature names must be strings, not %s", what, py_type_name(key));
  if (memchr(key->s, 0, key->len))
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': feature name contains a NUL byte", what);
  if (list->kind != PY_LIST) {
    char *txt = NULL;
    size_t tl = 0;
    FILE *m = open_memstream(&txt, &tl);
    if (m) { py_value_print(m, list); fclose(m); }
    sm_status *st = sm_status_new(SM_INVALID_ARGUMENT, "input '%s': feature value must be a list, but %s: \"%s\" is <class '%s'>",
                                  what, key->s, txt ? txt : "?", py_type_name(list));
    free(txt);
    return st;
  }
  if (list->n == 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': feature '%s' is an empty list; its type cannot be told (TF fails the same way)",
                         what, key->s);
  size_t n = list->n;
  py_kind k0 = list->items[0]->kind;
  sm_status *st = NULL;
  if (k0 == PY_FLOAT) {
    float *v = malloc(n * sizeof *v);
    if (!v) return sm_status_new(SM_NO_MEMORY, "out of memory");
    for (size_t j = 0; j < n && !st; j++) {
      const py_value *x = list->items[j];
      if (x->kind == PY_FLOAT || x->kind == PY_INT || x->kind == PY_BOOL) v[j] = (float)x->f;
      else st = sm_status_new(SM_INVALID_ARGUMENT, "input '%s': feature '%s': a %s in a float list", what, key->s, py_type_name(x));
    }
    if (!st) st = sm_example_add_floats(ex, key->s, v, n);
    free(v);
  } else if (k0 == PY_INT || k0 == PY_BOOL) {
    int64_t *v = malloc(n * sizeof *v);
    if (!v) return sm_status_new(SM_NO_MEMORY, "out of memory");
    for (size_t j = 0; j < n && !st; j++) {
      const py_value *x = list->items[j];
      if ((x->kind == PY_INT && !x->big) || x->kind == PY_BOOL) v[j] = x->i;
      else if (x->kind == PY_INT) st = sm_status_new(SM_INVALID_ARGUMENT, "input '%s': feature '%s': value out of int64 range", what, key->s);
      else st = sm_status_new(SM_INVALID_ARGUMENT, "input '%s': feature '%s': a %s in an int64 list", what, key->s, py_type_name(x));
    }
    if (!st) st = sm_example_add_int64s(ex, key->s, v, n);
    free(v);
  } else if (k0 == PY_STR || k0 == PY_BYTES) {
    const char **v = malloc(n * sizeof *v);
    size_t *l = malloc(n * sizeof *l);
    if (!v || !l) { free(v); free(l); return sm_status_new(SM_NO_MEMORY, "out of memory"); }
    for (size_t j = 0; j < n && !st; j++) {
      const py_value *x = list->items[j];
      if (x->kind != k0) st = sm_status_new(SM_INVALID_ARGUMENT, "input '%s': feature '%s': a %s in a %s list", what, key->s, py_type_name(x), k0 == PY_STR ? "str" : "bytes");
      else { v[j] = x->s; l[j] = x->len; }
    }
    if (!st) st = sm_example_add_bytes(ex, key->s, v, l, n);
    free(v);
    free(l);
  } else {
    st = sm_status_new(SM_INVALID_ARGUMENT, "input '%s': Type <class '%s'> is not supported for tf.train.Feature (feature '%s')",
                       what, py_type_name(list->items[0]), key->s);
  }
  return st;
}

sm_status *sm__cli_examples_to_tensor(const py_value *v, const char *what, sm_tensor **out) {
  *out = NULL;
  if (v->kind != PY_LIST)
    return sm_status_new(SM_INVALID_ARGUMENT, "input '%s': tf.Example input must be a list of dictionaries, but it is a %s",
                         what, py_type_name(v));
  int64_t n = (int64_t)v->n;
  sm_tensor *t;
  sm_status *st = sm_tensor_new(SM_STRING, 1, &n, &t);
  if (st) return st;
  for (int64_t i = 0; i < n && !st; i++) {
    const py_value *d = v->items[i];
    if (d->kind != PY_DICT) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "input '%s': example %lld is a %s, not a dict", what, (long long)i, py_type_name(d));
      break;
    }
    sm_example *ex;
    if ((st = sm_example_new(&ex))) break;
    for (size_t k = 0; k + 1 < d->n && !st; k += 2) st = add_feature(ex, d->items[k], d->items[k + 1], what);
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (!st) st = sm_example_serialize(ex, &bytes, &len);
    if (!st) st = sm_tensor_set_string(t, i, bytes, len);
    free(bytes);
    sm_example_free(ex);
  }
  if (st) { sm_tensor_free(t); return st; }
  *out = t;
  return NULL;
}

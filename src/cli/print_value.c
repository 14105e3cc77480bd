/* print_value.c - tensor values as numpy prints them (print(ndarray), numpy 1.14+ defaults).
 *
 * Mirrors numpy/core/arrayprint.py: FloatingFormat.fillFormat (positional unless a value is
 * >= 1e8, < 1e-4, or max/min > 1e3; shortest round-trip digits capped at 8 decimals; '.'-trimmed;
 * padded to common widths), IntegerFormat, BoolFormat, object (bytes) repr, _formatArray's line
 * wrapping at 75 columns and summarisation past 1000 elements. 0-d arrays print as str(scalar).
 * Not reproduced: complex alignment, float8/int4 decoding (printed as raw codes). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/print_value.h"
#include "savedmodel/dtype.h"

enum { LINEWIDTH = 75, THRESHOLD = 1000, EDGEITEMS = 3, PRECISION = 8 };

typedef enum { K_FLOAT, K_BF16, K_SINT, K_UINT, K_BOOL, K_STR, K_COMPLEX, K_OTHER } elem_kind;

static elem_kind kind_of(int dt) {
  switch (sm_dtype_base(dt)) {
  case SM_FLOAT: case SM_DOUBLE: case SM_HALF: return K_FLOAT;
  case SM_BFLOAT16: return K_BF16;
  case SM_INT8: case SM_INT16: case SM_INT32: case SM_INT64: case SM_QINT8: case SM_QINT16:
  case SM_QINT32: return K_SINT;
  case SM_UINT8: case SM_UINT16: case SM_UINT32: case SM_UINT64: case SM_QUINT8: case SM_QUINT16:
    return K_UINT;
  case SM_BOOL: return K_BOOL;
  case SM_STRING: return K_STR;
  case SM_COMPLEX64: case SM_COMPLEX128: return K_COMPLEX;
  default: return K_OTHER;
  }
}

static float half_to_float(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
  return (h & 0x8000) ? -v : v;
}

static double get_float(const sm_tensor *t, int64_t i, int part) {
  const uint8_t *p = sm_tensor_data(t);
  switch (sm_dtype_base(sm_tensor_dtype(t))) {
  case SM_FLOAT: { float v; memcpy(&v, p + 4 * i, 4); return v; }
  case SM_DOUBLE: { double v; memcpy(&v, p + 8 * i, 8); return v; }
  case SM_HALF: { uint16_t h; memcpy(&h, p + 2 * i, 2); return half_to_float(h); }
  case SM_BFLOAT16: {
    uint16_t h; memcpy(&h, p + 2 * i, 2);
    uint32_t u = (uint32_t)h << 16; float v; memcpy(&v, &u, 4); return v;
  }
  case SM_COMPLEX64: { float v; memcpy(&v, p + 8 * i + 4 * part, 4); return v; }
  case SM_COMPLEX128: { double v; memcpy(&v, p + 16 * i + 8 * part, 8); return v; }
  default: return 0;
  }
}

static int64_t get_sint(const sm_tensor *t, int64_t i) {
  const uint8_t *p = sm_tensor_data(t);
  size_t w = sm_dtype_size(sm_tensor_dtype(t));
  if (w == 1) return (int8_t)p[i];
  if (w == 2) { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  if (w == 4) { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  int64_t v; memcpy(&v, p + 8 * i, 8); return v;
}

static uint64_t get_uint(const sm_tensor *t, int64_t i) {
  const uint8_t *p = sm_tensor_data(t);
  size_t w = sm_dtype_size(sm_tensor_dtype(t));
  if (w == 1) return p[i];
  if (w == 2) { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  if (w == 4) { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  uint64_t v; memcpy(&v, p + 8 * i, 8); return v;
}

/* The precision class sm__shortest_e needs: 0 double, 1 float (also bfloat16), 2 half. */
static int is_single(const sm_tensor *t) {
  int b = sm_dtype_base(sm_tensor_dtype(t));
  return b == SM_DOUBLE || b == SM_COMPLEX128 ? 0 : b == SM_HALF ? 2 : 1;
}

/* ---- a growable string ---- */
typedef struct outbuf { char *p; size_t len, cap; int oom; } outbuf;

static void put(outbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}
static void puts_(outbuf *b, const char *s) { put(b, s, strlen(s)); }
static void spaces(outbuf *b, int n) { for (int i = 0; i < n; i++) put(b, " ", 1); }

/* ---- float formatting (FloatingFormat) ---- */

/* Positional digits of v: integer part (with sign) and fraction, shortest round-trip, fraction
 * capped at PRECISION digits (correctly rounded), trailing zeros trimmed. */
static void positional(double v, int single, char *ip, size_t ipcap, char *fp, size_t fpcap) {
  char e[64], d[40];
  int neg, x;
  sm__shortest_e(v, single, e, sizeof e);
  sm__split_e(e, &neg, d, sizeof d, &x);
  int nd = (int)strlen(d);
  if (nd - x - 1 > PRECISION) { /* too many decimals: round to PRECISION of them */
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%.*f", PRECISION, v);
    char *dot = strchr(tmp, '.');
    *dot = 0;
    size_t fl = strlen(dot + 1);
    while (fl && dot[fl] == '0') dot[fl--] = 0;
    snprintf(ip, ipcap, "%s", tmp);
    snprintf(fp, fpcap, "%s", dot + 1);
    return;
  }
  /* value = 0.d1d2... x 10^(x+1) */
  size_t k = 0;
  if (neg) ip[k++] = '-';
  if (x < 0) ip[k++] = '0';
  for (int i = 0; i <= x && k + 1 < ipcap; i++) ip[k++] = i < nd ? d[i] : '0';
  ip[k] = 0;
  k = 0;
  for (int i = 0; i < -x - 1 && k + 1 < fpcap; i++) fp[k++] = '0';
  for (int i = x < 0 ? 0 : x + 1; i < nd && k + 1 < fpcap; i++) fp[k++] = d[i];
  fp[k] = 0;
}

/* Scientific: mantissa digits after the point and the exponent, shortest (at most PRECISION
 * decimals). */
static void scientific(double v, int single, char *ip, char *fp, size_t fpcap, int *exp10) {
  char e[64], d[40];
  int neg, x;
  int p = sm__shortest_e(v, single, e, sizeof e);
  if (p > PRECISION + 1) snprintf(e, sizeof e, "%.*e", PRECISION, v);
  sm__split_e(e, &neg, d, sizeof d, &x);
  size_t k = 0;
  if (neg) ip[k++] = '-';
  ip[k++] = d[0];
  ip[k] = 0;
  snprintf(fp, fpcap, "%s", d + 1);
  *exp10 = x;
}

typedef struct ffmt {
  int exp_format, pad_left, pad_right, precision, exp_size;
  int plus; /* sign='+': the imaginary parts of complex numbers */
} ffmt;

static void fill_float_format(const double *v, size_t n, int single, int plus, ffmt *ff) {
  memset(ff, 0, sizeof *ff);
  ff->exp_size = -1;
  ff->plus = plus;
  double maxv = 0, minv = INFINITY;
  size_t nfinite = 0;
  int neginf = 0, nonfinite = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(v[i])) { nonfinite = 1; if (isinf(v[i]) && v[i] < 0) neginf = 1; continue; }
    nfinite++;
    double a = fabs(v[i]);
    if (a == 0) continue;
    if (a > maxv) maxv = a;
    if (a < minv) minv = a;
  }
  if (maxv > 0 && (maxv >= 1e8 || minv < 0.0001 || maxv / minv > 1000.)) ff->exp_format = 1;
  char ip[400], fp[400];
  if (nfinite && ff->exp_format) {
    int maxexp = 0;
    for (size_t i = 0; i < n; i++) {
      if (!isfinite(v[i])) continue;
      int x;
      scientific(v[i], single, ip, fp, sizeof fp, &x);
      int el = snprintf(NULL, 0, "%d", x < 0 ? -x : x);
      if (el < 2) el = 2;
      if (el > maxexp) maxexp = el;
      int il = (int)strlen(ip) + (plus && !signbit(v[i]));
      if ((int)strlen(fp) > ff->precision) ff->precision = (int)strlen(fp);
      if (il > ff->pad_left) ff->pad_left = il;
    }
    ff->exp_size = maxexp;
    ff->pad_right = ff->exp_size + 2 + ff->precision;
  } else if (nfinite) {
    for (size_t i = 0; i < n; i++) {
      if (!isfinite(v[i])) continue;
      positional(v[i], single, ip, sizeof ip, fp, sizeof fp);
      int il = (int)strlen(ip) + (plus && !signbit(v[i]));
      if (il > ff->pad_left) ff->pad_left = il;
      if ((int)strlen(fp) > ff->pad_right) ff->pad_right = (int)strlen(fp);
    }
  }
  if (nonfinite) {
    if (plus) neginf = 1; /* "+inf" is as long as "-inf" */
    int offset = ff->pad_right + 1;
    if (3 - offset > ff->pad_left) ff->pad_left = 3 - offset;
    if (3 + neginf - offset > ff->pad_left) ff->pad_left = 3 + neginf - offset;
  }
}

static void format_float(outbuf *b, double v, int single, const ffmt *ff) {
  char ip[400], fp[400];
  if (!isfinite(v)) {
    const char *s = isnan(v) ? (ff->plus ? "+nan" : "nan") : v < 0 ? "-inf" : ff->plus ? "+inf" : "inf";
    spaces(b, ff->pad_left + ff->pad_right + 1 - (int)strlen(s));
    puts_(b, s);
    return;
  }
  const char *plus = ff->plus && !signbit(v) ? "+" : "";
  if (ff->exp_format) {
    /* min_digits = precision: digits past the shortest ones are the exact value's, rounded */
    char e[64]; /* precision <= 16: "-d.<16 digits>e+308" fits */
    snprintf(e, sizeof e, "%.*e", ff->precision, v);
    char *ep = strchr(e, 'e');
    int x = atoi(ep + 1);
    *ep = 0;
    char *dot = strchr(e, '.');
    if (dot) *dot = 0;
    snprintf(ip, sizeof ip, "%s%s", plus, e);
    spaces(b, ff->pad_left - (int)strlen(ip));
    puts_(b, ip);
    put(b, ".", 1);
    if (dot) puts_(b, dot + 1);
    snprintf(e, sizeof e, "e%c%0*d", x < 0 ? '-' : '+', ff->exp_size, x < 0 ? -x : x);
    puts_(b, e);
    return;
  }
  positional(v, single, ip, sizeof ip, fp, sizeof fp);
  spaces(b, ff->pad_left - (int)strlen(ip) - (int)strlen(plus));
  puts_(b, plus);
  puts_(b, ip);
  put(b, ".", 1);
  puts_(b, fp);
  spaces(b, ff->pad_right - (int)strlen(fp));
}

/* str(numpy float scalar): like Python's repr of a float, with the type's own shortest digits. */
static void scalar_float(outbuf *b, double v, int single) {
  if (isnan(v)) { puts_(b, "nan"); return; }
  if (isinf(v)) { puts_(b, v < 0 ? "-inf" : "inf"); return; }
  char e[64], d[40], out[480];
  int neg, x;
  sm__shortest_e(v, single, e, sizeof e);
  sm__split_e(e, &neg, d, sizeof d, &x);
  int nd = (int)strlen(d);
  size_t k = 0;
  if (neg) out[k++] = '-';
  /* numpy 2 compares the value itself (float32 0.0001 is just below 1e-4) and switches to
   * scientific from 1e3 for float16, 1e6 for float32 and 1e16 for float64 (measured on 2.4) */
  double av = fabs(v);
  if (av != 0 && (av < 1e-4 || av >= (single == 2 ? 1e3 : single == 1 ? 1e6 : 1e16))) {
    out[k++] = d[0];
    if (nd > 1) k += (size_t)snprintf(out + k, sizeof out - k, ".%s", d + 1);
    snprintf(out + k, sizeof out - k, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
  } else if (x < 0) {
    k += (size_t)snprintf(out + k, sizeof out - k, "0.");
    for (int i = 0; i < -x - 1; i++) out[k++] = '0';
    snprintf(out + k, sizeof out - k, "%s", d);
  } else {
    for (int i = 0; i <= x; i++) out[k++] = i < nd ? d[i] : '0';
    out[k++] = '.';
    if (nd > x + 1) snprintf(out + k, sizeof out - k, "%s", d + x + 1);
    else snprintf(out + k, sizeof out - k, "0");
  }
  puts_(b, out);
}

/* ---- elements ---- */
typedef struct elem_fmt {
  const sm_tensor *t;
  elem_kind k;
  int single;
  ffmt re, im; /* floats; complex uses both */
  int width;   /* ints, bools */
} elem_fmt;

static void format_elem(outbuf *b, const elem_fmt *F, int64_t i) {
  char tmp[64];
  switch (F->k) {
  case K_FLOAT: format_float(b, get_float(F->t, i, 0), F->single, &F->re); break;
  case K_COMPLEX:
    format_float(b, get_float(F->t, i, 0), F->single, &F->re);
    { /* numpy puts the 'j' right after the digits, before the padding */
      size_t start = b->len;
      format_float(b, get_float(F->t, i, 1), F->single, &F->im);
      if (b->oom) break;
      size_t end = b->len, sp = end;
      while (sp > start && b->p[sp - 1] == ' ') sp--;
      b->len = sp;
      put(b, "j", 1);
      spaces(b, (int)(end - sp));
    }
    break;
  case K_BF16: { /* ml_dtypes' bfloat16 prints like %g, unpadded */
    char g[64];
    snprintf(g, sizeof g, "%g", get_float(F->t, i, 0));
    puts_(b, g);
    break;
  }
  case K_SINT: snprintf(tmp, sizeof tmp, "%*lld", F->width, (long long)get_sint(F->t, i)); puts_(b, tmp); break;
  case K_UINT: case K_OTHER:
    snprintf(tmp, sizeof tmp, "%*llu", F->width, (unsigned long long)get_uint(F->t, i)); puts_(b, tmp); break;
  case K_BOOL: {
    const uint8_t *p = sm_tensor_data(F->t);
    snprintf(tmp, sizeof tmp, "%*s", F->width, p[i] ? "True" : "False");
    puts_(b, tmp);
    break;
  }
  case K_STR: {
    size_t len;
    const char *s = sm_tensor_string(F->t, i, &len);
    char *text = NULL;
    size_t tlen = 0;
    FILE *m = open_memstream(&text, &tlen);
    if (!m) { b->oom = 1; break; }
    sm__py_repr_bytes(m, s ? s : "", s ? len : 0);
    fclose(m);
    put(b, text ? text : "", text ? tlen : 0);
    free(text);
    break;
  }
  }
}

/* ---- which elements are shown (all, or the edges when summarising) ---- */
typedef struct walk {
  int rank;
  const int64_t *dims;
  int64_t stride[SM_MAX_RANK];
  int summarize;
} walk;

static int shown(const walk *w, int axis, int64_t *lead, int64_t *trail) {
  int64_t n = w->dims[axis];
  if (w->summarize && 2 * EDGEITEMS < n) { *lead = EDGEITEMS; *trail = EDGEITEMS; return 1; }
  *lead = 0;
  *trail = n;
  return 0;
}

static void collect(const walk *w, int axis, int64_t off, int64_t *out, size_t *n) {
  if (axis == w->rank) { out[(*n)++] = off; return; }
  int64_t lead, trail;
  shown(w, axis, &lead, &trail);
  for (int64_t i = 0; i < lead; i++) collect(w, axis + 1, off + i * w->stride[axis], out, n);
  for (int64_t i = w->dims[axis] - trail; i < w->dims[axis]; i++)
    collect(w, axis + 1, off + i * w->stride[axis], out, n);
}

static void extend_line(outbuf *s, outbuf *line, const char *word, size_t wlen, int width, int indent) {
  int wrap = (int)(line->len + wlen) > width && (int)line->len > indent;
  if (wrap) {
    size_t l = line->len;
    while (l && line->p[l - 1] == ' ') l--;
    put(s, line->p, l);
    put(s, "\n", 1);
    line->len = 0;
    spaces(line, indent);
  }
  put(line, word, wlen);
}

static void recurse(outbuf *out, const walk *w, const elem_fmt *F, int axis, int64_t off, int indent, int width) {
  if (axis == w->rank) { format_elem(out, F, off); return; }
  int axes_left = w->rank - axis;
  int64_t lead, trail;
  int summary = shown(w, axis, &lead, &trail);
  int64_t n = w->dims[axis];
  outbuf s = {0};
  if (axes_left == 1) {
    int elem_width = width - 1;
    outbuf line = {0};
    spaces(&line, indent);
    for (int64_t j = 0; j < lead + trail; j++) {
      int64_t i = j < lead ? j : n - (lead + trail - j);
      if (summary && j == lead) {
        extend_line(&s, &line, "...", 3, elem_width, indent);
        put(&line, " ", 1);
      }
      outbuf word = {0};
      format_elem(&word, F, off + i * w->stride[axis]);
      extend_line(&s, &line, word.p ? word.p : "", word.len, elem_width, indent);
      if (j + 1 < lead + trail) put(&line, " ", 1);
      if (word.oom) s.oom = 1;
      free(word.p);
    }
    put(&s, line.p ? line.p : "", line.len);
    if (line.oom) s.oom = 1;
    free(line.p);
  } else {
    for (int64_t j = 0; j < lead + trail; j++) {
      int64_t i = j < lead ? j : n - (lead + trail - j);
      if (summary && j == lead) {
        spaces(&s, indent);
        puts_(&s, "...");
        for (int k = 0; k < axes_left - 1; k++) put(&s, "\n", 1);
      }
      spaces(&s, indent);
      recurse(&s, w, F, axis + 1, off + i * w->stride[axis], indent + 1, width - 1);
      if (j + 1 < lead + trail)
        for (int k = 0; k < axes_left - 1; k++) put(&s, "\n", 1);
    }
  }
  put(out, "[", 1);
  if (s.len > (size_t)indent) put(out, s.p + indent, s.len - (size_t)indent);
  put(out, "]", 1);
  if (s.oom) out->oom = 1;
  free(s.p);
}

/* DT_VARIANT values (TensorLists) are in-memory objects with nothing to print: a note instead. */
static int print_variant(FILE *f, const sm_tensor *t, int json) {
  if (sm_tensor_dtype(t) != SM_VARIANT) return 0;
  char sh[256];
  fprintf(f, json ? "\"<DT_VARIANT value of shape %s: not printable>\"" : "<DT_VARIANT value of shape %s: not printable>\n",
          sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), sh, sizeof sh));
  return 1;
}

void sm__cli_print_numpy(FILE *f, const sm_tensor *t) {
  if (print_variant(f, t, 0)) return;
  int rank = sm_tensor_rank(t);
  int64_t n = sm_tensor_num_elements(t);
  elem_fmt F = {.t = t, .k = kind_of(sm_tensor_dtype(t)), .single = is_single(t)};
  outbuf out = {0};
  if (rank == 0) {
    switch (F.k) {
    case K_FLOAT: scalar_float(&out, get_float(t, 0, 0), F.single); break;
    case K_BOOL: puts_(&out, ((const uint8_t *)sm_tensor_data(t))[0] ? "True" : "False"); break;
    case K_COMPLEX:
      put(&out, "(", 1);
      scalar_float(&out, get_float(t, 0, 0), F.single);
      put(&out, get_float(t, 0, 1) < 0 ? "-" : "+", 1);
      scalar_float(&out, fabs(get_float(t, 0, 1)), F.single);
      puts_(&out, "j)");
      break;
    default: format_elem(&out, &F, 0); break;
    }
  } else if (n == 0) {
    puts_(&out, "[]");
  } else {
    walk w = {.rank = rank, .dims = sm_tensor_dims(t), .summarize = n > THRESHOLD};
    w.stride[rank - 1] = 1;
    for (int i = rank - 2; i >= 0; i--) w.stride[i] = w.stride[i + 1] * w.dims[i + 1];
    /* Widths come from the elements shown, as numpy formats only those. */
    size_t cap = 1;
    for (int i = 0; i < rank; i++) {
      int64_t d = w.dims[i], lead, trail;
      shown(&w, i, &lead, &trail);
      cap *= (size_t)(lead + trail ? lead + trail : d);
    }
    int64_t *idx = malloc(cap * sizeof *idx);
    double *vals = malloc(cap * sizeof *vals), *ims = malloc(cap * sizeof *ims);
    size_t m = 0;
    if (!idx || !vals || !ims) out.oom = 1;
    else collect(&w, 0, 0, idx, &m);
    if (!out.oom) {
      if (F.k == K_FLOAT || F.k == K_COMPLEX) {
        for (size_t i = 0; i < m; i++) vals[i] = get_float(t, idx[i], 0), ims[i] = get_float(t, idx[i], 1);
        fill_float_format(vals, m, F.single, 0, &F.re);
        if (F.k == K_COMPLEX) fill_float_format(ims, m, F.single, 1, &F.im);
      } else if (F.k == K_BOOL) {
        F.width = 5;
      } else if (F.k != K_STR && F.k != K_BF16) {
        for (size_t i = 0; i < m; i++) {
          char tmp[32];
          int l = F.k == K_SINT ? snprintf(tmp, sizeof tmp, "%lld", (long long)get_sint(t, idx[i]))
                                : snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)get_uint(t, idx[i]));
          if (l > F.width) F.width = l;
        }
      }
      recurse(&out, &w, &F, 0, 0, 1, LINEWIDTH);
    }
    free(idx);
    free(vals);
    free(ims);
  }
  if (out.oom) fputs("<out of memory>", f);
  else if (out.p) fputs(out.p, f);
  fputc('\n', f);
  free(out.p);
}

/* ---- JSON ---- */
static void json_elem(FILE *f, const sm_tensor *t, elem_kind k, int64_t i) {
  switch (k) {
  case K_FLOAT: case K_BF16: case K_COMPLEX: {
    double v = get_float(t, i, 0);
    if (k == K_COMPLEX) fputc('[', f);
    for (int part = 0; part < (k == K_COMPLEX ? 2 : 1); part++) {
      if (part) { fputs(", ", f); v = get_float(t, i, 1); }
      if (isnan(v)) fputs("\"nan\"", f);
      else if (isinf(v)) fputs(v < 0 ? "\"-inf\"" : "\"inf\"", f);
      else {
        char e[64];
        sm__shortest_e(v, is_single(t), e, sizeof e);
        fputs(e, f);
      }
    }
    if (k == K_COMPLEX) fputc(']', f);
    break;
  }
  case K_SINT: fprintf(f, "%lld", (long long)get_sint(t, i)); break;
  case K_UINT: case K_OTHER: fprintf(f, "%llu", (unsigned long long)get_uint(t, i)); break;
  case K_BOOL: fputs(((const uint8_t *)sm_tensor_data(t))[i] ? "true" : "false", f); break;
  case K_STR: {
    size_t len;
    const char *s = sm_tensor_string(t, i, &len);
    sm__json_bytes(f, s ? s : "", s ? len : 0);
    break;
  }
  }
}

static void json_rec(FILE *f, const sm_tensor *t, elem_kind k, int axis, int64_t *off) {
  if (axis == sm_tensor_rank(t)) { json_elem(f, t, k, (*off)++); return; }
  fputc('[', f);
  for (int64_t i = 0; i < sm_tensor_dims(t)[axis]; i++) {
    if (i) fputs(", ", f);
    json_rec(f, t, k, axis + 1, off);
  }
  fputc(']', f);
}

void sm__cli_print_json_value(FILE *f, const sm_tensor *t) {
  if (print_variant(f, t, 1)) return;
  int64_t off = 0;
  json_rec(f, t, kind_of(sm_tensor_dtype(t)), 0, &off);
}

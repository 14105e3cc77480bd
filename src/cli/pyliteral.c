/* pyliteral.c - a recursive-descent parser for the Python literal language of ast.literal_eval
 * (Lib/ast.py: _convert, _convert_num, _convert_signed_num) over Python's tokens for numbers and
 * strings (Lib/tokenize.py, the language reference's lexical analysis). Nothing is evaluated:
 * the result is a tree of values. Nesting is capped below CPython's own parser limit. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/pyliteral.h"

enum { MAX_DEPTH = 100 };

typedef struct {
  const char *s;
  size_t n, i;
  int depth;
  sm_status *err;
} parser;

static py_value *fail(parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static py_value *fail(parser *p, size_t at, const char *fmt, ...) {
  if (p->err) return NULL;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  p->err = sm_status_new(SM_INVALID_ARGUMENT, "%s at offset %zu", msg, at + 1);
  return NULL;
}

void py_value_free(py_value *v) {
  if (!v) return;
  for (size_t k = 0; k < v->n; k++) py_value_free(v->items[k]);
  free(v->items);
  free(v->s);
  free(v);
}

static py_value *new_value(parser *p, py_kind k) {
  py_value *v = calloc(1, sizeof *v);
  if (!v) return fail(p, p->i, "out of memory");
  v->kind = k;
  return v;
}

static int push(parser *p, py_value *c, py_value *v) {
  if ((c->n & (c->n - 1)) == 0) { /* grow at powers of two */
    size_t cap = c->n ? 2 * c->n : 4;
    py_value **ni = realloc(c->items, cap * sizeof *ni);
    if (!ni) { fail(p, p->i, "out of memory"); return -1; }
    c->items = ni;
  }
  c->items[c->n++] = v;
  return 0;
}

static int peekc(parser *p) { return p->i < p->n ? (unsigned char)p->s[p->i] : -1; }

static void skip_ws(parser *p) {
  for (;;) {
    int c = peekc(p);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') p->i++;
    else if (c == '\\' && p->i + 1 < p->n && p->s[p->i + 1] == '\n') p->i += 2; /* line continuation */
    else if (c == '#') { while (p->i < p->n && p->s[p->i] != '\n') p->i++; }
    else return;
  }
}

static int is_id(int c) { return c == '_' || isalnum(c) || c >= 0x80; }

/* ---- numbers -------------------------------------------------------------------------------- */
/* Copies digits matching ok() with single underscores between them into buf; returns count. */
static size_t digits(parser *p, int (*ok)(int), char *buf, size_t *k, size_t cap, int *bad) {
  size_t count = 0;
  while (p->i < p->n) {
    int c = peekc(p);
    if (c == '_' && count > 0 && p->i + 1 < p->n && ok((unsigned char)p->s[p->i + 1])) { p->i++; continue; }
    if (!ok(c)) break;
    if (*k + 1 < cap) buf[(*k)++] = (char)c;
    else *bad = 1;
    p->i++;
    count++;
  }
  buf[*k] = 0;
  return count;
}
static int is_dec(int c) { return c >= '0' && c <= '9'; }
static int is_hex(int c) { return c >= 0 && isxdigit(c); }
static int is_oct(int c) { return c >= '0' && c <= '7'; }
static int is_bin(int c) { return c == '0' || c == '1'; }

static py_value *parse_number(parser *p) {
  size_t start = p->i;
  char buf[512];
  size_t k = 0;
  int toolong = 0;
  int c0 = peekc(p), c1 = p->i + 1 < p->n ? (unsigned char)p->s[p->i + 1] : 0;
  if (c0 == '0' && strchr("xXoObB", c1) && c1) {
    int base = (c1 == 'x' || c1 == 'X') ? 16 : (c1 == 'o' || c1 == 'O') ? 8 : 2;
    p->i += 2;
    if (peekc(p) == '_') p->i++;
    size_t nd = digits(p, base == 16 ? is_hex : base == 8 ? is_oct : is_bin, buf, &k, sizeof buf, &toolong);
    if (nd == 0) return fail(p, start, "invalid %s literal", base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary");
    if (is_id(peekc(p))) return fail(p, p->i, "invalid digit in number");
    py_value *v = new_value(p, PY_INT);
    if (!v) return NULL;
    uint64_t u = 0;
    double f = 0;
    int over = 0;
    for (size_t j = 0; j < k; j++) {
      int d = isdigit((unsigned char)buf[j]) ? buf[j] - '0' : tolower((unsigned char)buf[j]) - 'a' + 10;
      if (u > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) over = 1;
      u = u * (uint64_t)base + (uint64_t)d;
      f = f * base + d;
    }
    v->f = f;
    if (over || toolong) { v->big = 1; v->u_ok = 0; }
    else if (u > INT64_MAX) { v->big = 1; v->u_ok = 1; v->u = u; }
    else { v->i = (int64_t)u; v->u = u; v->u_ok = 1; }
    return v;
  }
  /* decimal: digitpart ['.' [digitpart]] [exponent] [j]  |  '.' digitpart ... */
  size_t nint = digits(p, is_dec, buf, &k, sizeof buf, &toolong);
  int is_float = 0;
  if (peekc(p) == '.') {
    is_float = 1;
    buf[k < sizeof buf - 1 ? k++ : k] = '.';
    p->i++;
    size_t nfrac = 0;
    if (is_dec(peekc(p))) nfrac = digits(p, is_dec, buf, &k, sizeof buf, &toolong);
    if (nint == 0 && nfrac == 0) return fail(p, start, "invalid syntax");
  }
  if (nint == 0 && !is_float) return fail(p, start, "invalid syntax");
  if (peekc(p) == 'e' || peekc(p) == 'E') {
    size_t save = p->i, savek = k;
    buf[k < sizeof buf - 1 ? k++ : k] = 'e';
    p->i++;
    if (peekc(p) == '+' || peekc(p) == '-') { buf[k < sizeof buf - 1 ? k++ : k] = (char)peekc(p); p->i++; }
    if (!is_dec(peekc(p))) { p->i = save; k = savek; buf[k] = 0; return fail(p, save, "invalid decimal literal"); }
    digits(p, is_dec, buf, &k, sizeof buf, &toolong);
    is_float = 1;
  }
  buf[k] = 0;
  int imag = 0;
  if (peekc(p) == 'j' || peekc(p) == 'J') { imag = 1; p->i++; }
  if (is_id(peekc(p))) return fail(p, p->i, "invalid decimal literal");
  if (toolong && (is_float || imag)) return fail(p, start, "number too long");
  if (!is_float && !imag) {
    /* Python refuses leading zeros in non-zero decimal integers ("01") */
    if (buf[0] == '0') {
      for (size_t j = 0; j < k; j++)
        if (buf[j] != '0') return fail(p, start, "leading zeros in decimal integer literals are not permitted");
    }
    py_value *v = new_value(p, PY_INT);
    if (!v) return NULL;
    errno = 0;
    unsigned long long u = toolong ? 0 : strtoull(buf, NULL, 10);
    v->f = toolong ? HUGE_VAL : strtod(buf, NULL);
    if (toolong || errno == ERANGE) { v->big = 1; v->u_ok = 0; }
    else if (u > INT64_MAX) { v->big = 1; v->u_ok = 1; v->u = u; }
    else { v->i = (int64_t)u; v->u = u; v->u_ok = 1; }
    return v;
  }
  py_value *v = new_value(p, imag ? PY_COMPLEX : PY_FLOAT);
  if (!v) return NULL;
  double d = strtod(buf, NULL);
  if (imag) v->im = d;
  else v->f = d;
  return v;
}

/* ---- strings -------------------------------------------------------------------------------- */
typedef struct { char *b; size_t n, cap; } sbuf;

static int sput(sbuf *s, const void *d, size_t n) {
  if (s->cap - s->n < n + 1) {
    size_t c = s->cap ? s->cap : 64;
    while (c - s->n < n + 1) c *= 2;
    char *nb = realloc(s->b, c);
    if (!nb) return -1;
    s->b = nb;
    s->cap = c;
  }
  memcpy(s->b + s->n, d, n);
  s->n += n;
  s->b[s->n] = 0;
  return 0;
}

static int put_cp(sbuf *s, uint32_t cp) {
  char b[4];
  size_t k = 0;
  if (cp < 0x80) b[k++] = (char)cp;
  else if (cp < 0x800) { b[k++] = (char)(0xc0 | cp >> 6); b[k++] = (char)(0x80 | (cp & 0x3f)); }
  else if (cp < 0x10000) { b[k++] = (char)(0xe0 | cp >> 12); b[k++] = (char)(0x80 | ((cp >> 6) & 0x3f)); b[k++] = (char)(0x80 | (cp & 0x3f)); }
  else { b[k++] = (char)(0xf0 | cp >> 18); b[k++] = (char)(0x80 | ((cp >> 12) & 0x3f)); b[k++] = (char)(0x80 | ((cp >> 6) & 0x3f)); b[k++] = (char)(0x80 | (cp & 0x3f)); }
  return sput(s, b, k);
}

/* Python's str is Unicode; text in argv that is not UTF-8 cannot be a str literal. */
static int utf8_valid(const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n;) {
    uint8_t c = b[i];
    size_t k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
    if (k == 9 || n - i - 1 < k) return 0;
    uint32_t cp = k == 0 ? c : k == 1 ? (c & 0x1fu) : k == 2 ? (c & 0x0fu) : (c & 0x07u);
    for (size_t j = 1; j <= k; j++) {
      if ((b[i + j] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (b[i + j] & 0x3fu);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) return 0;
    i += k + 1;
  }
  return 1;
}

static int hexval(int c) { return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10; }

/* One string token starting at its prefix; appends the contents to out. Returns 0 or -1. */
static int string_token(parser *p, sbuf *out, int *is_bytes) {
  size_t start = p->i;
  int raw = 0, bytes = 0;
  while (p->i < p->n && strchr("rRbBuUfF", p->s[p->i]) && p->s[p->i]) {
    int c = tolower((unsigned char)p->s[p->i]);
    if (c == 'f') { fail(p, start, "f-strings are not literals"); return -1; }
    if (c == 'r') raw = 1;
    if (c == 'b') bytes = 1;
    p->i++;
  }
  int q = peekc(p);
  if (q != '\'' && q != '"') { fail(p, start, "malformed node or string: a name is not a literal"); return -1; }
  int triple = p->i + 2 < p->n && p->s[p->i + 1] == q && p->s[p->i + 2] == q;
  p->i += triple ? 3 : 1;
  *is_bytes = bytes;
  for (;;) {
    if (p->i >= p->n) { fail(p, start, "unterminated string literal"); return -1; }
    unsigned char c = (unsigned char)p->s[p->i];
    if (c == q && (!triple || (p->i + 2 < p->n && p->s[p->i + 1] == q && p->s[p->i + 2] == q))) {
      p->i += triple ? 3 : 1;
      return 0;
    }
    if (c == '\n' && !triple) { fail(p, start, "unterminated string literal"); return -1; }
    if (bytes && c >= 0x80) { fail(p, p->i, "bytes can only contain ASCII literal characters"); return -1; }
    if (c != '\\') {
      if (sput(out, &c, 1)) goto oom;
      p->i++;
      continue;
    }
    if (p->i + 1 >= p->n) { fail(p, start, "unterminated string literal"); return -1; }
    unsigned char e = (unsigned char)p->s[p->i + 1];
    if (raw) { /* the backslash stays; it only keeps a quote from ending the string */
      if (sput(out, "\\", 1) || sput(out, &e, 1)) goto oom;
      p->i += 2;
      continue;
    }
    size_t at = p->i;
    p->i += 2;
    const char *simple = strchr("\\'\"abfnrtv", e);
    if (e == '\n') continue;
    if (simple && e) {
      static const char map[] = "\\'\"\a\b\f\n\r\t\v";
      if (sput(out, &map[simple - "\\'\"abfnrtv"], 1)) goto oom;
    } else if (e >= '0' && e <= '7') {
      uint32_t v = (uint32_t)(e - '0');
      for (int k = 0; k < 2 && is_oct(peekc(p)); k++) v = v * 8 + (uint32_t)(p->s[p->i++] - '0');
      if (bytes) { unsigned char b = (unsigned char)v; if (sput(out, &b, 1)) goto oom; }
      else if (put_cp(out, v)) goto oom;
    } else if (e == 'x' || ((e == 'u' || e == 'U') && !bytes)) {
      int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t v = 0;
      for (int k = 0; k < nd; k++) {
        if (!is_hex(peekc(p))) { fail(p, at, "truncated \\%c escape", e); return -1; }
        v = v * 16 + (uint32_t)hexval(p->s[p->i++]);
      }
      if (bytes) { unsigned char b = (unsigned char)v; if (sput(out, &b, 1)) goto oom; }
      else {
        if (v > 0x10ffff) { fail(p, at, "illegal Unicode character"); return -1; }
        if (v >= 0xd800 && v < 0xe000) { fail(p, at, "a lone surrogate cannot be encoded as UTF-8"); return -1; }
        if (put_cp(out, v)) goto oom;
      }
    } else if (e == 'N' && !bytes) {
      fail(p, at, "\\N{...} escapes are not supported here; use \\u or \\U");
      return -1;
    } else { /* unknown escapes keep their backslash (Python warns) */
      if (sput(out, "\\", 1) || sput(out, &e, 1)) goto oom;
    }
  }
oom:
  fail(p, p->i, "out of memory");
  return -1;
}

static py_value *parse_strings(parser *p) {
  size_t start = p->i;
  sbuf out = {0};
  int kind = -1;
  if (sput(&out, "", 0)) return fail(p, p->i, "out of memory");
  for (;;) {
    int is_bytes;
    size_t at = p->i;
    if (string_token(p, &out, &is_bytes)) { free(out.b); return NULL; }
    if (kind >= 0 && kind != is_bytes) { free(out.b); return fail(p, at, "cannot mix bytes and nonbytes literals"); }
    kind = is_bytes;
    skip_ws(p);
    /* another string token (with or without a prefix) continues this one */
    size_t j = p->i;
    while (j < p->n && j - p->i < 2 && strchr("rRbBuU", p->s[j]) && p->s[j]) j++;
    if (!(j < p->n && (p->s[j] == '\'' || p->s[j] == '"'))) break;
  }
  if (!kind && !utf8_valid((const uint8_t *)out.b, out.n)) {
    free(out.b);
    return fail(p, start, "string is not valid UTF-8");
  }
  py_value *v = new_value(p, kind ? PY_BYTES : PY_STR);
  if (!v) { free(out.b); return NULL; }
  v->s = out.b;
  v->len = out.n;
  return v;
}

/* ---- expressions ---------------------------------------------------------------------------- */
static py_value *parse_expr(parser *p);

static int is_number(const py_value *v) { return v->kind == PY_INT || v->kind == PY_FLOAT || v->kind == PY_COMPLEX; }

/* items up to `close`; returns the container (kind set by caller) or NULL. *saw_comma tells (x)
 * from (x,). For '{', dict pairs are detected from the first item. */
static py_value *parse_items(parser *p, int close, py_kind kind, int *saw_comma) {
  py_value *c = new_value(p, kind);
  if (!c) return NULL;
  *saw_comma = 0;
  for (;;) {
    skip_ws(p);
    if (peekc(p) == close) { p->i++; return c; }
    py_value *v = parse_expr(p);
    if (!v || push(p, c, v)) { py_value_free(v); py_value_free(c); return NULL; }
    skip_ws(p);
    if (close == '}' && (c->kind == PY_DICT || (c->n == 1 && peekc(p) == ':'))) {
      if (peekc(p) != ':') { py_value_free(c); return fail(p, p->i, "expected ':' in a dict"); }
      c->kind = PY_DICT;
      p->i++;
      skip_ws(p);
      py_value *val = parse_expr(p);
      if (!val || push(p, c, val)) { py_value_free(val); py_value_free(c); return NULL; }
      skip_ws(p);
    } else if (close == '}') {
      c->kind = PY_SET;
    }
    if (peekc(p) == ',') { *saw_comma = 1; p->i++; continue; }
    if (peekc(p) == close) { p->i++; return c; }
    py_value_free(c);
    if (p->i >= p->n) return fail(p, p->i, "'%c' was never closed", close == ')' ? '(' : close == ']' ? '[' : '{');
    return fail(p, p->i, "expected ',' or '%c'", close);
  }
}

static py_value *parse_atom(parser *p) {
  skip_ws(p);
  size_t start = p->i;
  int c = peekc(p);
  if (c < 0) return fail(p, start, "unexpected end of expression");
  if (++p->depth > MAX_DEPTH) return fail(p, start, "too many nested parentheses");
  py_value *v = NULL;
  int comma;
  if (c == '(') {
    p->i++;
    v = parse_items(p, ')', PY_TUPLE, &comma);
    if (v && v->n == 1 && !comma) { /* (x) is x */
      py_value *x = v->items[0];
      v->n = 0;
      py_value_free(v);
      v = x;
    }
  } else if (c == '[') {
    p->i++;
    v = parse_items(p, ']', PY_LIST, &comma);
  } else if (c == '{') {
    p->i++;
    v = parse_items(p, '}', PY_DICT, &comma); /* {} is a dict */
  } else if (is_dec(c) || (c == '.' && p->i + 1 < p->n && is_dec((unsigned char)p->s[p->i + 1]))) {
    v = parse_number(p);
  } else if (c == '\'' || c == '"') {
    v = parse_strings(p);
  } else if (is_id(c)) {
    size_t j = p->i;
    while (j < p->n && is_id((unsigned char)p->s[j])) j++;
    size_t len = j - p->i;
    const char *w = p->s + p->i;
    if (j < p->n && (p->s[j] == '\'' || p->s[j] == '"') && len <= 2) {
      v = parse_strings(p);
    } else if (len == 4 && memcmp(w, "True", 4) == 0) {
      p->i = j; if ((v = new_value(p, PY_BOOL))) v->i = 1, v->f = 1;
    } else if (len == 5 && memcmp(w, "False", 5) == 0) {
      p->i = j; v = new_value(p, PY_BOOL);
    } else if (len == 4 && memcmp(w, "None", 4) == 0) {
      p->i = j; v = new_value(p, PY_NONE);
    } else if (len == 3 && memcmp(w, "set", 3) == 0) {
      size_t save = p->i;
      p->i = j;
      skip_ws(p);
      if (peekc(p) == '(') {
        p->i++;
        skip_ws(p);
        if (peekc(p) == ')') { p->i++; v = new_value(p, PY_SET); }
      }
      if (!v) v = fail(p, save, "only set() is a literal call");
    } else {
      v = fail(p, start, "malformed node or string: '%.*s' is a name, not a literal (expressions are never evaluated)",
               (int)(len > 40 ? 40 : len), w);
    }
  } else {
    v = fail(p, start, "unexpected character '%c'", c);
  }
  p->depth--;
  return v;
}

/* signed number, or atom; then the complex form real (+|-) imag. */
static py_value *parse_expr(parser *p) {
  skip_ws(p);
  size_t start = p->i;
  py_value *v;
  if (peekc(p) == '-' || peekc(p) == '+') {
    int neg = peekc(p) == '-';
    p->i++;
    v = parse_atom(p);
    if (!v) return NULL;
    if (!is_number(v)) { py_value_free(v); return fail(p, start, "malformed node or string: unary %c on a non-number", neg ? '-' : '+'); }
    if (neg) {
      if (v->kind == PY_INT) {
        if (!v->big) { v->i = -v->i; v->u_ok = v->i >= 0; v->u = (uint64_t)v->i; }
        else if (v->u_ok && v->u == (uint64_t)INT64_MAX + 1) { v->big = 0; v->i = INT64_MIN; v->u_ok = 0; }
        else v->u_ok = 0;
        v->f = -v->f;
      } else { v->f = -v->f; v->im = -v->im; }
    }
  } else {
    v = parse_atom(p);
    if (!v) return NULL;
  }
  skip_ws(p);
  if (peekc(p) == '+' || peekc(p) == '-') {
    int neg = peekc(p) == '-';
    size_t at = p->i;
    if (v->kind != PY_INT && v->kind != PY_FLOAT) { py_value_free(v); return fail(p, at, "malformed node or string: only real + imaginary is a literal operation"); }
    p->i++;
    py_value *r = parse_atom(p);
    if (!r) { py_value_free(v); return NULL; }
    if (r->kind != PY_COMPLEX) { py_value_free(v); py_value_free(r); return fail(p, at, "malformed node or string: only real + imaginary is a literal operation"); }
    v->kind = PY_COMPLEX;
    v->im = neg ? -r->im : r->im;
    v->big = 0;
    py_value_free(r);
  }
  return v;
}

sm_status *sm__py_literal_parse(const char *text, py_value **out) {
  parser p = {text, strlen(text), 0, 0, NULL};
  *out = NULL;
  while (p.i < p.n && (p.s[p.i] == ' ' || p.s[p.i] == '\t')) p.i++; /* literal_eval's lstrip */
  py_value *v = parse_expr(&p);
  if (v) {
    skip_ws(&p);
    if (peekc(&p) == ',') { /* a bare tuple: 1, 2 */
      py_value *t = new_value(&p, PY_TUPLE);
      if (!t || push(&p, t, v)) { py_value_free(t); py_value_free(v); v = NULL; }
      else {
        v = t;
        while (peekc(&p) == ',') {
          p.i++;
          skip_ws(&p);
          if (p.i >= p.n) break;
          py_value *x = parse_expr(&p);
          if (!x || push(&p, v, x)) { py_value_free(x); py_value_free(v); v = NULL; break; }
          skip_ws(&p);
        }
      }
    }
  }
  if (v && p.i < p.n) {
    py_value_free(v);
    v = fail(&p, p.i, "invalid syntax: unexpected '%c'", p.s[p.i]);
  }
  if (!v) return p.err ? p.err : sm_status_new(SM_INVALID_ARGUMENT, "invalid literal");
  *out = v;
  return NULL;
}

const char *py_type_name(const py_value *v) {
  static const char *const names[] = {"int", "float", "complex", "bool", "NoneType", "str", "bytes", "list", "tuple", "dict", "set"};
  return names[v->kind];
}

void py_value_print(FILE *f, const py_value *v) {
  switch (v->kind) {
  case PY_INT:
    if (!v->big) fprintf(f, "%lld", (long long)v->i);
    else if (v->u_ok) fprintf(f, "%llu", (unsigned long long)v->u);
    else fprintf(f, "%.17g", v->f);
    break;
  case PY_FLOAT: sm__py_repr_float(f, v->f); break;
  case PY_COMPLEX:
    if (v->f == 0 && !signbit(v->f)) { sm__py_repr_float(f, v->im); fputc('j', f); }
    else { fputc('(', f); sm__py_repr_float(f, v->f); fputs(v->im < 0 || signbit(v->im) ? "-" : "+", f); sm__py_repr_float(f, fabs(v->im)); fputs("j)", f); }
    break;
  case PY_BOOL: fputs(v->i ? "True" : "False", f); break;
  case PY_NONE: fputs("None", f); break;
  case PY_STR: sm__py_repr_str(f, v->s, v->len); break;
  case PY_BYTES: sm__py_repr_bytes(f, v->s, v->len); break;
  case PY_LIST: case PY_TUPLE: case PY_SET:
    if (v->kind == PY_SET && v->n == 0) { fputs("set()", f); break; }
    fputc(v->kind == PY_LIST ? '[' : v->kind == PY_TUPLE ? '(' : '{', f);
    for (size_t k = 0; k < v->n; k++) { if (k) fputs(", ", f); py_value_print(f, v->items[k]); }
    if (v->kind == PY_TUPLE && v->n == 1) fputc(',', f);
    fputc(v->kind == PY_LIST ? ']' : v->kind == PY_TUPLE ? ')' : '}', f);
    break;
  case PY_DICT:
    fputc('{', f);
    for (size_t k = 0; k + 1 < v->n; k += 2) {
      if (k) fputs(", ", f);
      py_value_print(f, v->items[k]);
      fputs(": ", f);
      py_value_print(f, v->items[k + 1]);
    }
    fputc('}', f);
    break;
  }
}

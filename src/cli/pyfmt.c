/* pyfmt.c - text the way Python prints it: repr() of str, bytes and float, and JSON strings.
 *
 * saved_model_cli and inspect_checkpoint are Python programs, so byte-identical output needs
 * Python's quoting rules (CPython Objects/unicodeobject.c unicode_repr, bytesobject.c
 * PyBytes_Repr) and its shortest round-trip float repr (Python/pystrtod.c, 'r' mode). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Decodes one UTF-8 sequence; returns its length, or 0 (with *cp = the byte) when invalid. */
static size_t utf8_decode(const unsigned char *s, size_t len, unsigned *cp) {
  unsigned c = s[0];
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || n > len) return *cp = c, 0;
  if (n == 1) return *cp = c, 1;
  unsigned v = c & (0x7f >> n);
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return *cp = c, 0;
    v = (v << 6) | (s[i] & 0x3f);
  }
  static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return *cp = c, 0;
  return *cp = v, n;
}

/* str.isprintable() for the code points TensorFlow names can plausibly hold: the separators
 * (Zs other than space, Zl, Zp), controls, formats and private use are not printable. */
static int py_printable(unsigned c) {
  if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad) return 0;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f)) return 0;
  if ((c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff) return 0;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61c || c == 0x6dd || c == 0x70f || c == 0x180e) return 0;
  if ((c >= 0xe000 && c <= 0xf8ff) || (c >= 0xfff9 && c <= 0xfffb) || c >= 0xf0000) return 0;
  if (c >= 0xe0000 && c <= 0xe007f) return 0;
  return 1;
}

static char pick_quote(const char *s, size_t len) {
  return memchr(s, '\'', len) && !memchr(s, '"', len) ? '"' : '\'';
}

void sm__py_repr_str(FILE *f, const char *s, size_t len) {
  char q = pick_quote(s, len);
  fputc(q, f);
  for (size_t i = 0; i < len;) {
    unsigned c;
    size_t n = utf8_decode((const unsigned char *)s + i, len - i, &c);
    if (n == 0) n = 1; /* not UTF-8: show the byte, as a surrogateescape'd str would */
    if (c == (unsigned char)q || c == '\\') fprintf(f, "\\%c", (char)c);
    else if (c == '\t') fputs("\\t", f);
    else if (c == '\n') fputs("\\n", f);
    else if (c == '\r') fputs("\\r", f);
    else if (!py_printable(c)) {
      if (c < 0x100) fprintf(f, "\\x%02x", c);
      else if (c < 0x10000) fprintf(f, "\\u%04x", c);
      else fprintf(f, "\\U%08x", c);
    } else fwrite(s + i, 1, n, f);
    i += n;
  }
  fputc(q, f);
}

void sm__py_repr_bytes(FILE *f, const char *s, size_t len) {
  char q = pick_quote(s, len);
  fputc('b', f);
  fputc(q, f);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == (unsigned char)q || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\t') fputs("\\t", f);
    else if (c == '\n') fputs("\\n", f);
    else if (c == '\r') fputs("\\r", f);
    else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\x%02x", c);
    else fputc(c, f);
  }
  fputc(q, f);
}

/* v rounded to IEEE half precision (round to nearest even), returned as a float. */
static float round_to_half(float v) {
  if (!isfinite(v) || v == 0) return v;
  float a = fabsf(v);
  if (a >= 65520.0f) return v < 0 ? -INFINITY : INFINITY;
  int e;
  frexpf(a, &e);                       /* a = m * 2^e, m in [0.5, 1) */
  int q = e - 11 < -24 ? -24 : e - 11; /* 11 significant bits, subnormals step 2^-24 */
  float r = ldexpf(rintf(ldexpf(a, -q)), q);
  return v < 0 ? -r : r;
}

int sm__shortest_e(double v, int single, char *buf, size_t cap) {
  int maxp = single == 2 ? 5 : single ? 9 : 17;
  for (int p = 1; p <= maxp; p++) {
    snprintf(buf, cap, "%.*e", p - 1, v);
    int same = single == 2 ? round_to_half(strtof(buf, NULL)) == (float)v
               : single    ? strtof(buf, NULL) == (float)v
                           : strtod(buf, NULL) == v;
    if (same) return p;
  }
  snprintf(buf, cap, "%.*e", maxp - 1, v);
  return maxp;
}

void sm__split_e(const char *e, int *neg, char *digits, size_t cap, int *exp10) {
  size_t k = 0;
  *neg = *e == '-';
  if (*e == '-' || *e == '+') e++;
  for (; *e && *e != 'e'; e++)
    if (*e != '.' && k + 1 < cap) digits[k++] = *e;
  digits[k] = 0;
  *exp10 = *e == 'e' ? atoi(e + 1) : 0;
  while (k > 1 && digits[k - 1] == '0') digits[--k] = 0; /* shortest has no trailing zeros */
}

void sm__py_repr_float(FILE *f, double v) {
  if (isnan(v)) { fputs("nan", f); return; }
  if (isinf(v)) { fputs(v < 0 ? "-inf" : "inf", f); return; }
  char e[64], d[32];
  int neg, x;
  sm__shortest_e(v, 0, e, sizeof e);
  sm__split_e(e, &neg, d, sizeof d, &x);
  int nd = (int)strlen(d);
  if (neg) fputc('-', f);
  if (x < -4 || x >= 16) { /* scientific: 1e-05, 1.5e+16 */
    fputc(d[0], f);
    if (nd > 1) fprintf(f, ".%s", d + 1);
    fprintf(f, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
  } else if (x < 0) {
    fputs("0.", f);
    for (int i = 0; i < -x - 1; i++) fputc('0', f);
    fputs(d, f);
  } else if (nd <= x + 1) {
    fputs(d, f);
    for (int i = 0; i < x + 1 - nd; i++) fputc('0', f);
    fputs(".0", f);
  } else {
    fprintf(f, "%.*s.%s", x + 1, d, d + x + 1);
  }
}

void sm__json_str(FILE *f, const char *s, size_t len) {
  fputc('"', f);
  for (size_t i = 0; i < len;) {
    unsigned c;
    size_t n = utf8_decode((const unsigned char *)s + i, len - i, &c);
    if (n == 0) { fprintf(f, "\\u%04x", c); i++; continue; }
    if (c == '"' || c == '\\') fprintf(f, "\\%c", (char)c);
    else if (c == '\n') fputs("\\n", f);
    else if (c == '\t') fputs("\\t", f);
    else if (c == '\r') fputs("\\r", f);
    else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
    else fwrite(s + i, 1, n, f);
    i += n;
  }
  fputc('"', f);
}

void sm__json_bytes(FILE *f, const char *s, size_t len) {
  for (size_t i = 0; i < len;) {
    unsigned c;
    size_t n = utf8_decode((const unsigned char *)s + i, len - i, &c);
    if (n == 0) goto base64;
    i += n;
  }
  sm__json_str(f, s, len);
  return;
base64:;
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const unsigned char *u = (const unsigned char *)s;
  fputs("{\"base64\": \"", f);
  for (size_t i = 0; i < len; i += 3) {
    unsigned v = (unsigned)u[i] << 16 | (i + 1 < len ? (unsigned)u[i + 1] << 8 : 0) | (i + 2 < len ? u[i + 2] : 0);
    fputc(tbl[v >> 18 & 63], f);
    fputc(tbl[v >> 12 & 63], f);
    fputc(i + 1 < len ? tbl[v >> 6 & 63] : '=', f);
    fputc(i + 2 < len ? tbl[v & 63] : '=', f);
  }
  fputs("\"}", f);
}

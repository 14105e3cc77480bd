/* pbtxt_parse.c - the protobuf text format parser, generic over protobuf-c descriptors.
 *
 * Accepts what protobuf's C++ TextFormat parser (TensorFlow's ReadTextProto) accepts for proto3
 * schemas: `#` comments, optional `:` before messages, `{}` or `<>` blocks, `;`/`,` separators,
 * list syntax `f: [1, 2]` and `f [{...}, {...}]`, adjacent string concatenation, ' or " quotes
 * with C, octal, hex and \u/\U escapes, decimal/hex/octal integers range-checked per type, floats
 * with inf/nan and an `f` suffix, bools as true/false/True/False/t/f/1/0, enums by name or number,
 * and the expanded Any `[type.googleapis.com/pkg.Type] {...}`.
 *
 * The message is built exactly as protobuf_c_message_unpack would allocate it (every message,
 * string, bytes buffer and repeated array malloc'ed; untouched strings left pointing at the
 * descriptor default) so protobuf_c_message_free_unpacked(msg, NULL) releases it, including a
 * half-built one when an error stops the parse. The text need not be NUL-terminated; nothing is
 * read past `len`. Nesting is limited to SM_PBTXT_MAX_DEPTH and the text to INT32_MAX bytes. */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/pbtxt_internal.h"
#include "format/pb_util.h"
#include "savedmodel/pbtxt.h"

#define MEMBER(m, off) ((char *)(m) + (off))
#define MAX_TEXT ((size_t)INT32_MAX)
#define MAX_NAME 256

enum { T_EOF, T_IDENT, T_NUMBER, T_STRING, T_SYMBOL };

typedef struct {
  const char *s;
  size_t len, pos;
  int line, col;     /* scanner position, 1-based */
  int tk;            /* current token */
  size_t ts, tl;     /* its start and length */
  int tline, tcol;   /* its position */
  const char *what;  /* names the input in messages */
  const ProtobufCMessageDescriptor *root;
  int depth;
} parser;

/* A scalar value read from the text, before it is stored in the message. */
typedef struct {
  union {
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f;
    double d;
    protobuf_c_boolean b;
  } n;
  char *str; /* malloc'ed string or bytes (NUL-terminated), or NULL */
  size_t slen;
} value;

/* ---- errors ---------------------------------------------------------------------------------- */

static sm_status *error_at(parser *p, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static sm_status *error_at(parser *p, int line, int col, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return sm_status_new(SM_INVALID_ARGUMENT, "%s:%d:%d: %s", p->what, line, col, msg);
}

#define ERR(p, ...) error_at((p), (p)->tline, (p)->tcol, __VA_ARGS__)

/* The current token as text for messages, shortened. */
static const char *tok_text(const parser *p, char *buf, size_t n) {
  if (p->tk == T_EOF) return "end of input";
  size_t k = p->tl < 40 ? p->tl : 40;
  snprintf(buf, n, "%.*s%s", (int)k, p->s + p->ts, p->tl > k ? "..." : "");
  return buf;
}

static sm_status *no_memory(parser *p) {
  return sm_status_new(SM_NO_MEMORY, "%s:%d:%d: out of memory", p->what, p->tline, p->tcol);
}

/* ---- tokenizer ------------------------------------------------------------------------------- */

static int is_ident_start(int c) { return isalpha(c) || c == '_'; }
static int is_ident_char(int c) { return isalnum(c) || c == '_'; }

static void advance(parser *p) {
  if (p->s[p->pos] == '\n') {
    p->line++;
    p->col = 1;
  } else {
    p->col++;
  }
  p->pos++;
}

/* Moves to the next token. Strings are checked for termination here and unescaped later. */
static sm_status *next(parser *p) {
  for (;;) {
    if (p->pos >= p->len) {
      p->tk = T_EOF;
      p->ts = p->pos;
      p->tl = 0;
      p->tline = p->line;
      p->tcol = p->col;
      return NULL;
    }
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
      advance(p);
    } else if (c == '#') {
      while (p->pos < p->len && p->s[p->pos] != '\n') advance(p);
    } else {
      break;
    }
  }
  p->ts = p->pos;
  p->tline = p->line;
  p->tcol = p->col;
  unsigned char c = (unsigned char)p->s[p->pos];
  if (is_ident_start(c)) {
    while (p->pos < p->len && is_ident_char((unsigned char)p->s[p->pos])) advance(p);
    p->tk = T_IDENT;
  } else if (isdigit(c) || (c == '.' && p->pos + 1 < p->len && isdigit((unsigned char)p->s[p->pos + 1]))) {
    /* A number is a run of letters, digits and dots (signs only right after an exponent);
     * whether it is a valid integer or float is decided when a field consumes it. */
    int hex = c == '0' && p->pos + 1 < p->len && (p->s[p->pos + 1] == 'x' || p->s[p->pos + 1] == 'X');
    char prev = 0;
    while (p->pos < p->len) {
      char ch = p->s[p->pos];
      if (!(is_ident_char((unsigned char)ch) || ch == '.' ||
            ((ch == '+' || ch == '-') && !hex && (prev == 'e' || prev == 'E'))))
        break;
      prev = ch;
      advance(p);
    }
    p->tk = T_NUMBER;
  } else if (c == '"' || c == '\'') {
    advance(p);
    for (;;) {
      if (p->pos >= p->len) return ERR(p, "Unexpected end of string.");
      char ch = p->s[p->pos];
      if (ch == '\n') return ERR(p, "String literals cannot cross line boundaries.");
      if (ch == '\\') {
        advance(p);
        if (p->pos >= p->len) return ERR(p, "Unexpected end of string.");
        if (p->s[p->pos] == '\n') return ERR(p, "String literals cannot cross line boundaries.");
      } else if ((unsigned char)ch == c) {
        advance(p);
        break;
      }
      advance(p);
    }
    p->tk = T_STRING;
  } else if (c > 0x20 && c < 0x7f) {
    advance(p);
    p->tk = T_SYMBOL;
  } else {
    return ERR(p, "Invalid character 0x%02x in text.", c);
  }
  p->tl = p->pos - p->ts;
  return NULL;
}

static int is_sym(const parser *p, char c) { return p->tk == T_SYMBOL && p->s[p->ts] == c; }

static int ident_is(const parser *p, const char *w) {
  return p->tk == T_IDENT && p->tl == strlen(w) && memcmp(p->s + p->ts, w, p->tl) == 0;
}

/* Consumes symbol c if it is next; *s gets a tokenizer error. */
static int try_sym(parser *p, char c, sm_status **s) {
  if (!is_sym(p, c)) return 0;
  *s = next(p);
  return 1;
}

static sm_status *expect_sym(parser *p, char c) {
  char b[64];
  if (!is_sym(p, c)) return ERR(p, "Expected \"%c\", found \"%s\".", c, tok_text(p, b, sizeof b));
  return next(p);
}

/* ---- scalars --------------------------------------------------------------------------------- */

/* Parses an integer token: decimal, 0x hex or 0 octal. 0 ok, 1 not an integer, 2 too large. */
static int parse_uint(const char *t, size_t n, uint64_t *out) {
  unsigned base = 10;
  size_t i = 0;
  if (n >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    i = 2;
    if (n == 2) return 1;
  } else if (n > 1 && t[0] == '0') {
    base = 8;
    i = 1;
  }
  uint64_t v = 0;
  int over = 0;
  for (; i < n; i++) {
    int c = (unsigned char)t[i];
    unsigned d;
    if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
    else return 1;
    if (d >= base) return 1;
    if (v > (UINT64_MAX - d) / base) over = 1;
    else v = v * base + d;
  }
  *out = v;
  return over ? 2 : 0;
}

static sm_status *read_unsigned(parser *p, uint64_t max, uint64_t *out) {
  char b[64];
  if (p->tk != T_NUMBER) return ERR(p, "Expected integer, got: %s", tok_text(p, b, sizeof b));
  uint64_t v;
  int r = parse_uint(p->s + p->ts, p->tl, &v);
  if (r == 1) return ERR(p, "Expected integer, got: %s", tok_text(p, b, sizeof b));
  if (r == 2 || v > max) return ERR(p, "Integer out of range (%s)", tok_text(p, b, sizeof b));
  *out = v;
  return next(p);
}

static sm_status *read_signed(parser *p, int64_t min, int64_t max, int64_t *out) {
  sm_status *s = NULL;
  int line = p->tline, col = p->tcol;
  int neg = try_sym(p, '-', &s);
  if (s) return s;
  char b[64];
  if (p->tk != T_NUMBER) return ERR(p, "Expected integer, got: %s", tok_text(p, b, sizeof b));
  uint64_t v;
  int r = parse_uint(p->s + p->ts, p->tl, &v);
  if (r == 1) return ERR(p, "Expected integer, got: %s", tok_text(p, b, sizeof b));
  uint64_t lim = neg ? (uint64_t)(-(min + 1)) + 1 : (uint64_t)max;
  if (r == 2 || v > lim)
    return error_at(p, line, col, "Integer out of range (%s%s)", neg ? "-" : "", tok_text(p, b, sizeof b));
  *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  return next(p);
}

static int ieq(const char *a, size_t n, const char *w) {
  if (strlen(w) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)a[i]) != w[i]) return 0;
  return 1;
}

static sm_status *read_double(parser *p, double *out) {
  sm_status *s = NULL;
  int neg = try_sym(p, '-', &s);
  if (s) return s;
  char b[72];
  double d;
  const char *t = p->s + p->ts;
  size_t n = p->tl;
  if (p->tk == T_IDENT) {
    if (ieq(t, n, "inf") || ieq(t, n, "infinity")) d = INFINITY;
    else if (ieq(t, n, "nan")) d = NAN;
    else return ERR(p, "Expected double, got: %s", tok_text(p, b, sizeof b));
  } else if (p->tk == T_NUMBER) {
    if (n >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
      return ERR(p, "Expect a decimal number, got: %s", tok_text(p, b, sizeof b));
    if (n > 1 && (t[n - 1] == 'f' || t[n - 1] == 'F')) n--;
    if (n >= sizeof b) return ERR(p, "Expected double, got: %s", tok_text(p, b, sizeof b));
    memcpy(b, t, n);
    b[n] = '\0';
    /* strtod would also take hex floats and inf/nan spelled inside a number token; a token here
     * starts with a digit or '.', and hex was refused above. */
    char *end;
    d = strtod(b, &end);
    if (end != b + n || n == 0) return ERR(p, "Expected double, got: %s", tok_text(p, b, sizeof b));
  } else {
    return ERR(p, "Expected double, got: %s", tok_text(p, b, sizeof b));
  }
  *out = neg ? -d : d;
  return next(p);
}

static sm_status *read_bool(parser *p, const ProtobufCFieldDescriptor *f, protobuf_c_boolean *out) {
  char b[64];
  if (p->tk == T_IDENT) {
    if (ident_is(p, "true") || ident_is(p, "True") || ident_is(p, "t")) *out = 1;
    else if (ident_is(p, "false") || ident_is(p, "False") || ident_is(p, "f")) *out = 0;
    else goto bad;
    return next(p);
  }
  if (p->tk == T_NUMBER) {
    uint64_t v;
    if (parse_uint(p->s + p->ts, p->tl, &v) != 0 || v > 1) goto bad;
    *out = (protobuf_c_boolean)v;
    return next(p);
  }
bad:
  return ERR(p, "Invalid value for boolean field \"%s\". Value: \"%s\".", f->name, tok_text(p, b, sizeof b));
}

static sm_status *read_enum(parser *p, const ProtobufCFieldDescriptor *f, int32_t *out) {
  char b[64];
  if (p->tk == T_IDENT) {
    char name[MAX_NAME];
    const ProtobufCEnumValue *ev = NULL;
    if (p->tl < sizeof name) {
      memcpy(name, p->s + p->ts, p->tl);
      name[p->tl] = '\0';
      ev = protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, name);
    }
    if (!ev)
      return ERR(p, "Unknown enumeration value of \"%s\" for field \"%s\".", tok_text(p, b, sizeof b), f->name);
    *out = ev->value;
    return next(p);
  }
  if (p->tk == T_NUMBER || is_sym(p, '-')) {
    /* Numbers without a name are kept, as for proto3's open enums. */
    int64_t v;
    sm_status *s = read_signed(p, INT32_MIN, INT32_MAX, &v);
    if (!s) *out = (int32_t)v;
    return s;
  }
  return ERR(p, "Expected integer or identifier, got: %s", tok_text(p, b, sizeof b));
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static size_t put_utf8(char *d, uint32_t cp) {
  if (cp < 0x80) {
    d[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    d[0] = (char)(0xc0 | (cp >> 6));
    d[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    d[0] = (char)(0xe0 | (cp >> 12));
    d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    d[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  d[0] = (char)(0xf0 | (cp >> 18));
  d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  d[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Reads exactly n hex digits at t[*i] (stopping before `end`); -1 if they are not there. */
static long read_hex(const char *t, size_t *i, size_t end, int n) {
  long v = 0;
  for (int k = 0; k < n; k++) {
    if (*i >= end || hexval((unsigned char)t[*i]) < 0) return -1;
    v = v * 16 + hexval((unsigned char)t[(*i)++]);
  }
  return v;
}

/* Unescapes the current string token (quotes included) onto dst, which has room for its length.
 * The unescaped text is never longer than the escaped one. */
static sm_status *unescape(parser *p, char *dst, size_t *dn) {
  const char *t = p->s + p->ts;
  size_t end = p->tl - 1; /* the closing quote */
  size_t k = 0;
  for (size_t i = 1; i < end;) {
    char c = t[i];
    if (c != '\\') {
      dst[k++] = c;
      i++;
      continue;
    }
    size_t at = i; /* the tokenizer made sure a character follows each backslash */
    char e = t[i + 1];
    i += 2;
    switch (e) {
      case 'a': dst[k++] = '\a'; break;
      case 'b': dst[k++] = '\b'; break;
      case 'f': dst[k++] = '\f'; break;
      case 'n': dst[k++] = '\n'; break;
      case 'r': dst[k++] = '\r'; break;
      case 't': dst[k++] = '\t'; break;
      case 'v': dst[k++] = '\v'; break;
      case '\\':
      case '?':
      case '\'':
      case '"':
        dst[k++] = e;
        break;
      case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
        unsigned v = (unsigned)(e - '0');
        for (int n = 0; n < 2 && i < end && t[i] >= '0' && t[i] <= '7'; n++) v = v * 8 + (unsigned)(t[i++] - '0');
        dst[k++] = (char)(unsigned char)v; /* like protobuf, \400 and up keep the low 8 bits */
        break;
      }
      case 'x':
      case 'X': {
        int h = i < end ? hexval((unsigned char)t[i]) : -1;
        if (h < 0) return error_at(p, p->tline, p->tcol + (int)at, "Expected hex digits for escape sequence.");
        unsigned v = (unsigned)h;
        i++;
        if (i < end && (h = hexval((unsigned char)t[i])) >= 0) {
          v = v * 16 + (unsigned)h;
          i++;
        }
        dst[k++] = (char)v;
        break;
      }
      case 'u':
      case 'U': {
        long cp = read_hex(t, &i, end, e == 'u' ? 4 : 8);
        if (cp < 0 || cp > 0x10ffff)
          return error_at(p, p->tline, p->tcol + (int)at,
                          e == 'u' ? "Expected four hex digits for \\u escape sequence."
                                   : "Expected eight hex digits up to 10ffff for \\U escape sequence");
        if (cp >= 0xd800 && cp <= 0xdbff && i + 6 <= end && t[i] == '\\' && t[i + 1] == 'u') {
          size_t j = i + 2;
          long lo = read_hex(t, &j, end, 4);
          if (lo >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            i = j;
          }
        }
        k += put_utf8(dst + k, (uint32_t)cp);
        break;
      }
      default:
        return error_at(p, p->tline, p->tcol + (int)at, "Invalid escape sequence in string literal.");
    }
  }
  *dn = k;
  return NULL;
}

/* One or more adjacent string literals, concatenated, into a malloc'ed NUL-terminated buffer. */
static sm_status *read_string(parser *p, value *v) {
  char b[64];
  if (p->tk != T_STRING) return ERR(p, "Expected string, got: %s", tok_text(p, b, sizeof b));
  char *buf = NULL;
  size_t n = 0;
  while (p->tk == T_STRING) {
    char *g = realloc(buf, n + p->tl + 1);
    if (!g) {
      free(buf);
      return no_memory(p);
    }
    buf = g;
    size_t k = 0;
    sm_status *s = unescape(p, buf + n, &k);
    if (!s) s = next(p);
    if (s) {
      free(buf);
      return s;
    }
    n += k;
  }
  buf[n] = '\0';
  v->str = buf;
  v->slen = n;
  return NULL;
}

static sm_status *read_value(parser *p, const ProtobufCFieldDescriptor *f, value *v) {
  sm_status *s = NULL;
  int64_t i;
  uint64_t u;
  double d;
  switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
      if (!(s = read_signed(p, INT32_MIN, INT32_MAX, &i))) v->n.i32 = (int32_t)i;
      return s;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
      if (!(s = read_signed(p, INT64_MIN, INT64_MAX, &i))) v->n.i64 = i;
      return s;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
      if (!(s = read_unsigned(p, UINT32_MAX, &u))) v->n.u32 = (uint32_t)u;
      return s;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
      if (!(s = read_unsigned(p, UINT64_MAX, &u))) v->n.u64 = u;
      return s;
    case PROTOBUF_C_TYPE_FLOAT:
      if ((s = read_double(p, &d))) return s;
      /* Round to nearest like a float conversion, written out because converting a double
       * beyond FLT_MAX is undefined in C. (protobuf's SafeDoubleToFloat makes everything above
       * FLT_MAX infinite, so "3.4028235e+38", which Python prints for FLT_MAX, reads back there
       * as inf; here it reads back as FLT_MAX.) */
      if (d >= 0x1.ffffffp+127) v->n.f = INFINITY;
      else if (d <= -0x1.ffffffp+127) v->n.f = -INFINITY;
      else if (d > FLT_MAX) v->n.f = FLT_MAX;
      else if (d < -FLT_MAX) v->n.f = -FLT_MAX;
      else v->n.f = (float)d;
      return NULL;
    case PROTOBUF_C_TYPE_DOUBLE:
      if (!(s = read_double(p, &d))) v->n.d = d;
      return s;
    case PROTOBUF_C_TYPE_BOOL:
      return read_bool(p, f, &v->n.b);
    case PROTOBUF_C_TYPE_ENUM:
      return read_enum(p, f, &v->n.i32);
    case PROTOBUF_C_TYPE_STRING: {
      int line = p->tline, col = p->tcol;
      if ((s = read_string(p, v))) return s;
      if (memchr(v->str, '\0', v->slen)) {
        free(v->str);
        v->str = NULL;
        return error_at(p, line, col, "String field \"%s\" contains a NUL byte, which protobuf-c cannot hold.",
                        f->name);
      }
      return NULL;
    }
    case PROTOBUF_C_TYPE_BYTES:
      return read_string(p, v);
    case PROTOBUF_C_TYPE_MESSAGE:
      break;
  }
  return ERR(p, "Field \"%s\" has an unsupported type.", f->name);
}

/* ---- storing into the message ---------------------------------------------------------------- */

/* Where the next value of f goes: the member itself, or a new zeroed element at the end of the
 * repeated array (counted at once, so the message stays freeable whatever happens next). Arrays
 * grow to the next power of two, so their capacity follows from the count alone. NULL: no memory. */
static void *value_slot(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f) {
  if (f->label != PROTOBUF_C_LABEL_REPEATED) return MEMBER(m, f->offset);
  size_t *n = (size_t *)MEMBER(m, f->quantifier_offset);
  char **arr = (char **)MEMBER(m, f->offset);
  size_t sz = sm__pb_value_size(f->type);
  if (*n == 0 || (*n & (*n - 1)) == 0) {
    size_t cap = *n ? *n * 2 : 1;
    if (cap < *n || cap > SIZE_MAX / sz) return NULL;
    char *g = realloc(*arr, cap * sz);
    if (!g) return NULL;
    *arr = g;
  }
  void *slot = *arr + *n * sz;
  memset(slot, 0, sz);
  (*n)++;
  return slot;
}

/* Records that singular field f is set: the oneof case or the proto2 has_ flag. */
static void mark_set(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f) {
  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
    *(uint32_t *)MEMBER(m, f->quantifier_offset) = f->id;
  } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
             f->type != PROTOBUF_C_TYPE_MESSAGE) {
    *(protobuf_c_boolean *)MEMBER(m, f->quantifier_offset) = 1;
  }
}

/* Takes v's buffer (if any) into slot. */
static void store(void *slot, const ProtobufCFieldDescriptor *f, value *v) {
  switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
      char *old = *(char **)slot;
      if (old && old != (const char *)f->default_value) free(old);
      *(char **)slot = v->str;
      break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
      ProtobufCBinaryData *bd = slot;
      const ProtobufCBinaryData *def = f->default_value;
      if (bd->data && (!def || def->data != bd->data)) free(bd->data);
      if (v->slen == 0) {
        free(v->str); /* protobuf-c leaves empty bytes as NULL */
        v->str = NULL;
      }
      bd->data = (uint8_t *)v->str;
      bd->len = v->slen;
      break;
    }
    default:
      memcpy(slot, &v->n, sm__pb_value_size(f->type));
      break;
  }
  v->str = NULL;
}

/* A singular field may be given once, and one member per oneof (C++ TextFormat's rules). */
static sm_status *check_singular(parser *p, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int line,
                                 int col) {
  if (f->label == PROTOBUF_C_LABEL_REPEATED) return NULL;
  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
    uint32_t c = *(const uint32_t *)MEMBER(m, f->quantifier_offset);
    if (c != 0 && c != f->id) {
      const ProtobufCFieldDescriptor *o = protobuf_c_message_descriptor_get_field(m->descriptor, c);
      return error_at(p, line, col,
                      "Field \"%s\" is specified along with field \"%s\", another member of the same oneof, "
                      "for message type \"%s\".",
                      f->name, o ? o->name : "?", m->descriptor->name);
    }
  }
  if (sm__pb_field_present(m, f))
    return error_at(p, line, col, "Non-repeated field \"%s\" is specified multiple times.", f->name);
  return NULL;
}

static ProtobufCMessage *new_message(const ProtobufCMessageDescriptor *d) {
  ProtobufCMessage *m = malloc(d->sizeof_message);
  if (m) protobuf_c_message_init(d, m);
  return m;
}

/* ---- messages -------------------------------------------------------------------------------- */

static sm_status *parse_body(parser *p, ProtobufCMessage *m, char close);

/* At `{` or `<`: parses the block into a new message of type d, put in *dst before parsing so
 * the caller's message owns it even on error. */
static sm_status *parse_block(parser *p, const ProtobufCMessageDescriptor *d, ProtobufCMessage **dst) {
  char b[64];
  char close;
  if (is_sym(p, '{')) close = '}';
  else if (is_sym(p, '<')) close = '>';
  else return ERR(p, "Expected \"{\", found \"%s\".", tok_text(p, b, sizeof b));
  if (p->depth >= SM_PBTXT_MAX_DEPTH)
    return ERR(p, "Message is too deep, the parser exceeded the configured recursion limit of %d.",
               SM_PBTXT_MAX_DEPTH);
  ProtobufCMessage *sub = new_message(d);
  if (!sub) return no_memory(p);
  *dst = sub;
  sm_status *s = next(p);
  if (s) return s;
  p->depth++;
  s = parse_body(p, sub, close);
  p->depth--;
  return s;
}

static sm_status *parse_message_value(parser *p, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int line,
                                      int col) {
  sm_status *s = check_singular(p, m, f, line, col);
  if (s) return s;
  if (!is_sym(p, '{') && !is_sym(p, '<')) {
    char b[64];
    return ERR(p, "Expected \"{\", found \"%s\".", tok_text(p, b, sizeof b));
  }
  ProtobufCMessage **slot = value_slot(m, f);
  if (!slot) return no_memory(p);
  if (f->label != PROTOBUF_C_LABEL_REPEATED) mark_set(m, f);
  return parse_block(p, f->descriptor, slot);
}

static sm_status *parse_scalar_value(parser *p, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int line,
                                     int col) {
  sm_status *s = check_singular(p, m, f, line, col);
  if (s) return s;
  value v = {0};
  if ((s = read_value(p, f, &v))) return s;
  /* The binary parser refuses invalid UTF-8 in proto3 strings (as protobuf's C++ parser, and
   * Python's text parser, do); accepting it here would make pbtxt -> pb produce an unreadable pb. */
  if (f->type == PROTOBUF_C_TYPE_STRING && sm__pb_strict_utf8(m->descriptor) &&
      !sm__utf8_valid((const uint8_t *)v.str, v.slen)) {
    free(v.str);
    return error_at(p, line, col, "String field \"%s\" is not valid UTF-8.", f->name);
  }
  void *slot = value_slot(m, f);
  if (!slot) {
    free(v.str);
    return no_memory(p);
  }
  store(slot, f, &v);
  if (f->label != PROTOBUF_C_LABEL_REPEATED) mark_set(m, f);
  return NULL;
}

/* `[type.googleapis.com/pkg.Type] { ... }` inside a google.protobuf.Any: parses the body as that
 * type and stores it serialized, with the URL as type_url. */
static sm_status *parse_bracketed(parser *p, ProtobufCMessage *m) {
  int line = p->tline, col = p->tcol;
  char name[MAX_NAME + 1];
  size_t n = 0;
  sm_status *s = next(p);
  if (s) return s;
  while (p->tk == T_IDENT || is_sym(p, '.') || is_sym(p, '/')) {
    if (n + p->tl > MAX_NAME) return ERR(p, "Type URL too long.");
    memcpy(name + n, p->s + p->ts, p->tl);
    n += p->tl;
    if ((s = next(p))) return s;
  }
  name[n] = '\0';
  if ((s = expect_sym(p, ']'))) return s;
  const ProtobufCMessageDescriptor *d = m->descriptor;
  const char *slash = strrchr(name, '/');
  if (strcmp(d->name, "google.protobuf.Any") != 0 || !slash)
    return error_at(p, line, col, "Extension \"%s\" is not defined or is not an extension of \"%s\".", name,
                    d->name);
  const ProtobufCFieldDescriptor *fu = protobuf_c_message_descriptor_get_field_by_name(d, "type_url");
  const ProtobufCFieldDescriptor *fv = protobuf_c_message_descriptor_get_field_by_name(d, "value");
  if (!fu || fu->type != PROTOBUF_C_TYPE_STRING || fu->label == PROTOBUF_C_LABEL_REPEATED || !fv ||
      fv->type != PROTOBUF_C_TYPE_BYTES || fv->label == PROTOBUF_C_LABEL_REPEATED)
    return error_at(p, line, col, "google.protobuf.Any has an unexpected shape.");
  if (sm__pb_field_present(m, fu) || sm__pb_field_present(m, fv))
    return error_at(p, line, col, "Expected only one of type_url/value or an expanded Any in \"%s\".", d->name);
  const ProtobufCMessageDescriptor *td = sm__pbtxt_find_type(p->root, slash + 1);
  if (!td) return error_at(p, line, col, "Could not find type \"%s\" stored in google.protobuf.Any.", slash + 1);
  if (try_sym(p, ':', &s), s) return s;
  ProtobufCMessage *sub = NULL;
  s = parse_block(p, td, &sub);
  if (s) {
    protobuf_c_message_free_unpacked(sub, NULL);
    return s;
  }
  size_t size = protobuf_c_message_get_packed_size(sub);
  value vu = {0}, vv = {0};
  vu.str = malloc(n + 1);
  vv.str = malloc(size ? size : 1);
  if (!vu.str || !vv.str) {
    free(vu.str);
    free(vv.str);
    protobuf_c_message_free_unpacked(sub, NULL);
    return no_memory(p);
  }
  memcpy(vu.str, name, n + 1);
  vu.slen = n;
  vv.slen = protobuf_c_message_pack(sub, (uint8_t *)vv.str);
  protobuf_c_message_free_unpacked(sub, NULL);
  store(MEMBER(m, fu->offset), fu, &vu);
  mark_set(m, fu);
  store(MEMBER(m, fv->offset), fv, &vv);
  mark_set(m, fv);
  return NULL;
}

static sm_status *parse_field(parser *p, ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  int line = p->tline, col = p->tcol;
  char b[64];
  sm_status *s = NULL;
  if (is_sym(p, '[')) return parse_bracketed(p, m);
  if (p->tk != T_IDENT) return ERR(p, "Expected identifier, got: %s", tok_text(p, b, sizeof b));
  char name[MAX_NAME];
  const ProtobufCFieldDescriptor *f = NULL;
  if (p->tl < sizeof name) {
    memcpy(name, p->s + p->ts, p->tl);
    name[p->tl] = '\0';
    f = protobuf_c_message_descriptor_get_field_by_name(d, name);
  }
  if (!f) return ERR(p, "Message type \"%s\" has no field named \"%s\".", d->name, tok_text(p, b, sizeof b));
  if ((s = next(p))) return s;

  if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    if (try_sym(p, ':', &s), s) return s;
    if (f->label == PROTOBUF_C_LABEL_REPEATED && is_sym(p, '[')) {
      if ((s = next(p))) return s;
      if (try_sym(p, ']', &s)) return s;
      do {
        if (s || (s = parse_message_value(p, m, f, p->tline, p->tcol))) return s;
      } while (try_sym(p, ',', &s));
      return s ? s : expect_sym(p, ']');
    }
    return parse_message_value(p, m, f, line, col);
  }

  if (!is_sym(p, ':')) return ERR(p, "Expected \":\", found \"%s\".", tok_text(p, b, sizeof b));
  if ((s = next(p))) return s;
  if (f->label == PROTOBUF_C_LABEL_REPEATED && is_sym(p, '[')) {
    if ((s = next(p))) return s;
    if (try_sym(p, ']', &s)) return s;
    do {
      if (s || (s = parse_scalar_value(p, m, f, p->tline, p->tcol))) return s;
    } while (try_sym(p, ',', &s));
    return s ? s : expect_sym(p, ']');
  }
  return parse_scalar_value(p, m, f, line, col);
}

/* Fields until `close` (or the end of input at the top level, close == 0). */
static sm_status *parse_body(parser *p, ProtobufCMessage *m, char close) {
  sm_status *s = NULL;
  for (;;) {
    if (p->tk == T_EOF) {
      if (close) return ERR(p, "Unexpected end of input: expected \"%c\".", close);
      return NULL;
    }
    if (close && is_sym(p, close)) return next(p);
    if ((s = parse_field(p, m))) return s;
    if ((try_sym(p, ';', &s) || try_sym(p, ',', &s)) && s) return s;
  }
}

sm_status *sm_pbtxt_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                          const char *what, ProtobufCMessage **out) {
  if (out) *out = NULL;
  if (!what) what = "text";
  if (!desc || desc->magic != PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC || !out || (!text && len))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: parsing text format: bad arguments", what);
  if (len > MAX_TEXT)
    return sm_status_new(SM_OUT_OF_RANGE, "%s: text format input of %zu bytes is larger than %zu", what, len,
                         MAX_TEXT);
  parser p = {.s = text ? text : "", .len = len, .line = 1, .col = 1, .what = what, .root = desc};
  ProtobufCMessage *m = new_message(desc);
  if (!m) return sm_status_new(SM_NO_MEMORY, "%s: parsing text format", what);
  sm_status *s = next(&p);
  if (!s) s = parse_body(&p, m, 0);
  if (s) {
    protobuf_c_message_free_unpacked(m, NULL);
    return s;
  }
  *out = m;
  return NULL;
}

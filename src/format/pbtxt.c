/* pbtxt.c - the protobuf text format printer, generic over protobuf-c descriptors, plus the
 * message helpers the parser (pbtxt_parse.c) shares: presence, map entries, type lookup.
 *
 * The output is what TensorFlow's Python writes for saved_model.pbtxt (str(proto), i.e.
 * google.protobuf.text_format.MessageToString with default options):
 *   - fields in field-number order (protobuf-c keeps descriptor fields sorted by number);
 *   - two-space indentation, `name: value`, `name {` ... `}`; empty sub-messages as `name {\n}`;
 *   - map entries sorted by key, each as `name {\n  key: ...\n  value ...\n}`;
 *   - enums by name (the number when the value has no name);
 *   - floats as Python does: float32 values rounded to the fewest of 6..9 significant digits that
 *     give the same float32, then repr() of that double ("0.5", "2.0", "1e-05", "10000.0");
 *     doubles as repr() (shortest round-trip);
 *   - strings and bytes with protobuf's CEscape: \n \r \t \" \' \\ and 3-digit octal for bytes
 *     below 0x20 or from 0x7f up (so UTF-8 text is octal-escaped too, as Python prints by default);
 *   - google.protobuf.Any raw (type_url / value), as TensorFlow's testdata shows.
 * Number formatting uses snprintf/strtod, so it assumes the "C" numeric locale. */
#include "savedmodel/pbtxt.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/pbtxt_internal.h"

#define MEMBER(m, off) ((char *)(m) + (off))
#define CMEMBER(m, off) ((const char *)(m) + (off))

/* ---- message helpers shared with the parser -------------------------------------------------- */

size_t sm__pb_value_size(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
      return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
      return 8;
    case PROTOBUF_C_TYPE_FLOAT:
      return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE:
      return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
      return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
      return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
      return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
      return sizeof(ProtobufCMessage *);
  }
  return 0;
}

int sm__pb_field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f) {
  const void *mem = CMEMBER(m, f->offset);
  if (f->label == PROTOBUF_C_LABEL_REPEATED) return *(const size_t *)CMEMBER(m, f->quantifier_offset) > 0;
  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
    return *(const uint32_t *)CMEMBER(m, f->quantifier_offset) == f->id;
  if (f->label == PROTOBUF_C_LABEL_REQUIRED) return 1;
  if (f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_STRING) {
    const void *p = *(const void *const *)mem;
    /* protobuf-c's own rule for optional strings and messages: set unless NULL or the default. */
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL) return p != NULL && p != f->default_value;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) return p != NULL;
    return p != NULL && *(const char *)p != '\0';
  }
  if (f->label == PROTOBUF_C_LABEL_OPTIONAL)
    return *(const protobuf_c_boolean *)CMEMBER(m, f->quantifier_offset) != 0;
  /* proto3 implicit presence: printed when the bits are not all zero (so -0.0 is printed). */
  if (f->type == PROTOBUF_C_TYPE_BYTES) return ((const ProtobufCBinaryData *)mem)->len > 0;
  static const unsigned char zero[8];
  return memcmp(mem, zero, sm__pb_value_size(f->type)) != 0;
}

int sm__pb_is_map_field(const ProtobufCFieldDescriptor *f) {
  if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE) return 0;
  const ProtobufCMessageDescriptor *e = f->descriptor;
  if (!e || e->n_fields != 2) return 0;
  if (e->fields[0].id != 1 || strcmp(e->fields[0].name, "key") != 0) return 0;
  if (e->fields[1].id != 2 || strcmp(e->fields[1].name, "value") != 0) return 0;
  switch (e->fields[0].type) {
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
    case PROTOBUF_C_TYPE_ENUM:
      return 0; /* not legal map key types */
    default:
      break;
  }
  size_t n = strlen(e->short_name);
  return n > 5 && strcmp(e->short_name + n - 5, "Entry") == 0;
}

int sm__pb_map_key_cmp(const ProtobufCMessageDescriptor *entry, const ProtobufCMessage *a,
                      const ProtobufCMessage *b) {
  const ProtobufCFieldDescriptor *k = &entry->fields[0];
  const void *x = CMEMBER(a, k->offset), *y = CMEMBER(b, k->offset);
  switch (k->type) {
    case PROTOBUF_C_TYPE_STRING: {
      const char *s = *(const char *const *)x, *t = *(const char *const *)y;
      return strcmp(s ? s : "", t ? t : ""); /* strcmp compares as unsigned char: UTF-8 order */
    }
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: {
      int32_t s = *(const int32_t *)x, t = *(const int32_t *)y;
      return (s > t) - (s < t);
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: {
      uint32_t s = *(const uint32_t *)x, t = *(const uint32_t *)y;
      return (s > t) - (s < t);
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
      int64_t s = *(const int64_t *)x, t = *(const int64_t *)y;
      return (s > t) - (s < t);
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
      uint64_t s = *(const uint64_t *)x, t = *(const uint64_t *)y;
      return (s > t) - (s < t);
    }
    case PROTOBUF_C_TYPE_BOOL: {
      int s = *(const protobuf_c_boolean *)x != 0, t = *(const protobuf_c_boolean *)y != 0;
      return s - t;
    }
    default:
      return 0;
  }
}

/* Stable merge sort of n entry pointers by key; tmp has room for n. */
static void sort_entries(const ProtobufCMessageDescriptor *entry, ProtobufCMessage **v,
                         ProtobufCMessage **tmp, size_t n) {
  if (n < 2) return;
  size_t h = n / 2;
  sort_entries(entry, v, tmp, h);
  sort_entries(entry, v + h, tmp, n - h);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = sm__pb_map_key_cmp(entry, v[j], v[i]) < 0 ? v[j++] : v[i++];
  while (i < h) tmp[k++] = v[i++];
  while (j < n) tmp[k++] = v[j++];
  memcpy(v, tmp, n * sizeof *v);
}

static sm_status *sort_maps(ProtobufCMessage *m, int depth) {
  if (depth > SM_PBTXT_MAX_DEPTH)
    return sm_status_new(SM_OUT_OF_RANGE, "message nesting is deeper than %d", SM_PBTXT_MAX_DEPTH);
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_MESSAGE || !sm__pb_field_present(m, f)) continue;
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
      ProtobufCMessage *sub = *(ProtobufCMessage **)MEMBER(m, f->offset);
      sm_status *s = sort_maps(sub, depth + 1);
      if (s) return s;
      continue;
    }
    size_t n = *(size_t *)MEMBER(m, f->quantifier_offset);
    ProtobufCMessage **arr = *(ProtobufCMessage ***)MEMBER(m, f->offset);
    for (size_t k = 0; k < n; k++) {
      if (!arr[k]) continue;
      sm_status *s = sort_maps(arr[k], depth + 1);
      if (s) return s;
    }
    if (sm__pb_is_map_field(f) && n > 1) {
      for (size_t k = 0; k < n; k++)
        if (!arr[k]) return sm_status_new(SM_INVALID_ARGUMENT, "map field %s has a NULL entry", f->name);
      ProtobufCMessage **tmp = malloc(n * sizeof *tmp);
      if (!tmp) return sm_status_new(SM_NO_MEMORY, "sorting map field %s", f->name);
      sort_entries(f->descriptor, arr, tmp, n);
      free(tmp);
    }
  }
  return NULL;
}

sm_status *sm__pb_sort_maps(ProtobufCMessage *msg) {
  if (!msg) return sm_status_new(SM_INVALID_ARGUMENT, "sorting maps: no message");
  return sort_maps(msg, 0);
}

/* ---- type registry for expanded Any ---------------------------------------------------------- */

#define MAX_REGISTERED 64
static const ProtobufCMessageDescriptor *registered[MAX_REGISTERED];
static int n_registered;

sm_status *sm__pbtxt_register_type(const ProtobufCMessageDescriptor *desc) {
  if (!desc || desc->magic != PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC)
    return sm_status_new(SM_INVALID_ARGUMENT, "registering a text format type: not a message descriptor");
  for (int i = 0; i < n_registered; i++)
    if (registered[i] == desc) return NULL;
  if (n_registered == MAX_REGISTERED)
    return sm_status_new(SM_OUT_OF_RANGE, "registering %s: more than %d text format types", desc->name,
                         MAX_REGISTERED);
  registered[n_registered++] = desc;
  return NULL;
}

const ProtobufCMessageDescriptor *sm__pbtxt_find_type(const ProtobufCMessageDescriptor *root,
                                                     const char *full_name) {
  for (int i = 0; i < n_registered; i++)
    if (strcmp(registered[i]->name, full_name) == 0) return registered[i];
  if (!root) return NULL;
  /* Breadth-first walk over the message types reachable from root. */
  size_t n = 0, cap = 32;
  const ProtobufCMessageDescriptor **seen = malloc(cap * sizeof *seen);
  const ProtobufCMessageDescriptor *found = NULL;
  if (!seen) return NULL;
  seen[n++] = root;
  for (size_t q = 0; q < n && !found; q++) {
    const ProtobufCMessageDescriptor *d = seen[q];
    if (strcmp(d->name, full_name) == 0) {
      found = d;
      break;
    }
    for (unsigned i = 0; i < d->n_fields; i++) {
      const ProtobufCMessageDescriptor *sub = d->fields[i].type == PROTOBUF_C_TYPE_MESSAGE ? d->fields[i].descriptor : NULL;
      if (!sub) continue;
      size_t k = 0;
      while (k < n && seen[k] != sub) k++;
      if (k < n) continue;
      if (n == cap) {
        const ProtobufCMessageDescriptor **grown = realloc(seen, 2 * cap * sizeof *seen);
        if (!grown) {
          free(seen);
          return NULL;
        }
        seen = grown;
        cap *= 2;
      }
      seen[n++] = sub;
    }
  }
  free(seen);
  return found;
}

/* ---- output buffer --------------------------------------------------------------------------- */

typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

static int sb_reserve(sbuf *b, size_t extra) {
  if (b->oom) return 0;
  if (b->cap - b->len > extra) return 1; /* keep one byte for the final NUL */
  size_t cap = b->cap ? b->cap : 4096;
  while (cap - b->len <= extra) {
    if (cap > SIZE_MAX / 2) {
      b->oom = 1;
      return 0;
    }
    cap *= 2;
  }
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (!sb_reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_indent(sbuf *b, int n) {
  if (!sb_reserve(b, (size_t)n)) return;
  memset(b->p + b->len, ' ', (size_t)n);
  b->len += (size_t)n;
}

/* ---- number formatting as Python prints it --------------------------------------------------- */

/* repr() of a double: shortest digits that read back as v; positional notation when the decimal
 * exponent is in [-4, 16), else `d.ddde+XX`; ".0" added to integral positional values. */
static void format_double(char *out, size_t outsz, double v) {
  if (isnan(v)) {
    snprintf(out, outsz, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(out, outsz, v < 0 ? "-inf" : "inf");
    return;
  }
  if (v == 0) {
    snprintf(out, outsz, signbit(v) ? "-0.0" : "0.0");
    return;
  }
  char tmp[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    if (strtod(tmp, NULL) == v) break;
  }
  /* tmp is [-]d[.ddd]e[+-]xx: collect the digits and the exponent. */
  char digits[24];
  int nd = 0, neg = 0;
  const char *p = tmp;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  for (; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9' && nd < 20) digits[nd++] = *p;
  int exp10 = *p == 'e' ? atoi(p + 1) : 0;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = '\0';
  int decpt = exp10 + 1; /* v = 0.digits * 10^decpt */
  char *o = out;
  char *end = out + outsz - 1;
#define PUT(c) \
  do {         \
    if (o < end) *o++ = (c); \
  } while (0)
  if (neg) PUT('-');
  if (decpt <= -4 || decpt > 16) {
    PUT(digits[0]);
    if (nd > 1) {
      PUT('.');
      for (int i = 1; i < nd; i++) PUT(digits[i]);
    }
    int e = decpt - 1;
    PUT('e');
    PUT(e < 0 ? '-' : '+');
    if (e < 0) e = -e;
    char eb[16];
    snprintf(eb, sizeof eb, "%02d", e);
    for (char *q = eb; *q; q++) PUT(*q);
  } else if (decpt <= 0) {
    PUT('0');
    PUT('.');
    for (int i = 0; i < -decpt; i++) PUT('0');
    for (int i = 0; i < nd; i++) PUT(digits[i]);
  } else if (decpt >= nd) {
    for (int i = 0; i < nd; i++) PUT(digits[i]);
    for (int i = nd; i < decpt; i++) PUT('0');
    PUT('.');
    PUT('0');
  } else {
    for (int i = 0; i < decpt; i++) PUT(digits[i]);
    PUT('.');
    for (int i = decpt; i < nd; i++) PUT(digits[i]);
  }
#undef PUT
  *o = '\0';
}

/* Python's text_format for float fields: ToShortestFloat (fewest %g digits from 6 up that read
 * back as the same float32), then repr() of the resulting double. */
static void format_float(char *out, size_t outsz, float f) {
  if (isnan(f)) {
    snprintf(out, outsz, "nan");
    return;
  }
  double r = f;
  char tmp[40];
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
    r = strtod(tmp, NULL);
    if ((float)r == f) break;
  }
  format_double(out, outsz, r);
}

/* protobuf CEscape: the named escapes, octal for everything outside printable ASCII. */
static void put_escaped(sbuf *b, const unsigned char *s, size_t n) {
  sb_put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = s[i];
    char e[5];
    switch (c) {
      case '\n': sb_put(b, "\\n", 2); break;
      case '\r': sb_put(b, "\\r", 2); break;
      case '\t': sb_put(b, "\\t", 2); break;
      case '"': sb_put(b, "\\\"", 2); break;
      case '\'': sb_put(b, "\\'", 2); break;
      case '\\': sb_put(b, "\\\\", 2); break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          e[0] = '\\';
          e[1] = (char)('0' + (c >> 6));
          e[2] = (char)('0' + ((c >> 3) & 7));
          e[3] = (char)('0' + (c & 7));
          sb_put(b, e, 4);
        } else {
          sb_put(b, (const char *)&c, 1);
        }
    }
  }
  sb_put(b, "\"", 1);
}

/* ---- the printer ----------------------------------------------------------------------------- */

static sm_status *print_message(sbuf *b, const ProtobufCMessage *m, int indent, int depth);

static sm_status *print_value(sbuf *b, const ProtobufCFieldDescriptor *f, const void *v, int indent,
                              int depth) {
  char num[64];
  sb_indent(b, indent);
  sb_puts(b, f->name);
  if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    sb_puts(b, " {\n");
    const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)v;
    if (sub) {
      sm_status *s = print_message(b, sub, indent + 2, depth + 1);
      if (s) return s;
    }
    sb_indent(b, indent);
    sb_puts(b, "}\n");
    return NULL;
  }
  sb_puts(b, ": ");
  switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
      snprintf(num, sizeof num, "%" PRId32, *(const int32_t *)v);
      sb_puts(b, num);
      break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
      snprintf(num, sizeof num, "%" PRIu32, *(const uint32_t *)v);
      sb_puts(b, num);
      break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
      snprintf(num, sizeof num, "%" PRId64, *(const int64_t *)v);
      sb_puts(b, num);
      break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
      snprintf(num, sizeof num, "%" PRIu64, *(const uint64_t *)v);
      sb_puts(b, num);
      break;
    case PROTOBUF_C_TYPE_FLOAT:
      format_float(num, sizeof num, *(const float *)v);
      sb_puts(b, num);
      break;
    case PROTOBUF_C_TYPE_DOUBLE:
      format_double(num, sizeof num, *(const double *)v);
      sb_puts(b, num);
      break;
    case PROTOBUF_C_TYPE_BOOL:
      sb_puts(b, *(const protobuf_c_boolean *)v ? "true" : "false");
      break;
    case PROTOBUF_C_TYPE_ENUM: {
      int32_t e = *(const int32_t *)v;
      const ProtobufCEnumValue *ev = f->descriptor ? protobuf_c_enum_descriptor_get_value(f->descriptor, e) : NULL;
      if (ev) {
        sb_puts(b, ev->name);
      } else {
        snprintf(num, sizeof num, "%" PRId32, e);
        sb_puts(b, num);
      }
      break;
    }
    case PROTOBUF_C_TYPE_STRING: {
      const char *s = *(const char *const *)v;
      if (!s) s = "";
      put_escaped(b, (const unsigned char *)s, strlen(s));
      break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
      const ProtobufCBinaryData *bd = v;
      put_escaped(b, bd->data, bd->data ? bd->len : 0);
      break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
      break;
  }
  sb_puts(b, "\n");
  return NULL;
}

/* A map entry: key as usual, then a message value always (Python builds each entry with
 * value=map[key], which marks the value present even when it is empty). */
static sm_status *print_map_entry(sbuf *b, const ProtobufCFieldDescriptor *f, const ProtobufCMessage *e,
                                  int indent, int depth) {
  if (depth + 1 > SM_PBTXT_MAX_DEPTH)
    return sm_status_new(SM_OUT_OF_RANGE, "message nesting is deeper than %d", SM_PBTXT_MAX_DEPTH);
  const ProtobufCMessageDescriptor *d = f->descriptor;
  sb_indent(b, indent);
  sb_puts(b, f->name);
  sb_puts(b, " {\n");
  for (unsigned i = 0; i < 2; i++) {
    const ProtobufCFieldDescriptor *ef = &d->fields[i];
    if (ef->type == PROTOBUF_C_TYPE_MESSAGE && ef->label != PROTOBUF_C_LABEL_REPEATED) {
      sm_status *s = print_value(b, ef, CMEMBER(e, ef->offset), indent + 2, depth + 1);
      if (s) return s;
    } else if (sm__pb_field_present(e, ef)) {
      sm_status *s = print_value(b, ef, CMEMBER(e, ef->offset), indent + 2, depth + 1);
      if (s) return s;
    }
  }
  sb_indent(b, indent);
  sb_puts(b, "}\n");
  return NULL;
}

static sm_status *print_message(sbuf *b, const ProtobufCMessage *m, int indent, int depth) {
  if (depth > SM_PBTXT_MAX_DEPTH)
    return sm_status_new(SM_OUT_OF_RANGE, "message nesting is deeper than %d", SM_PBTXT_MAX_DEPTH);
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (!sm__pb_field_present(m, f)) continue;
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
      sm_status *s = print_value(b, f, CMEMBER(m, f->offset), indent, depth);
      if (s) return s;
      continue;
    }
    size_t n = *(const size_t *)CMEMBER(m, f->quantifier_offset);
    const char *arr = *(const char *const *)CMEMBER(m, f->offset);
    if (!arr) continue;
    if (sm__pb_is_map_field(f)) {
      /* Sort a copy of the entry pointers; the message itself stays const. */
      ProtobufCMessage **v = malloc(2 * n * sizeof *v);
      if (!v) return sm_status_new(SM_NO_MEMORY, "printing map field %s", f->name);
      size_t nv = 0;
      for (size_t k = 0; k < n; k++)
        if (((ProtobufCMessage *const *)arr)[k]) v[nv++] = ((ProtobufCMessage *const *)arr)[k];
      sort_entries(f->descriptor, v, v + n, nv);
      for (size_t k = 0; k < nv; k++) {
        sm_status *s = print_map_entry(b, f, v[k], indent, depth);
        if (s) {
          free(v);
          return s;
        }
      }
      free(v);
      continue;
    }
    size_t sz = sm__pb_value_size(f->type);
    for (size_t k = 0; k < n; k++) {
      sm_status *s = print_value(b, f, arr + k * sz, indent, depth);
      if (s) return s;
    }
  }
  return NULL;
}

sm_status *sm_pbtxt_print(const ProtobufCMessage *msg, char **out, size_t *len) {
  if (out) *out = NULL;
  if (len) *len = 0;
  if (!msg || !out || !msg->descriptor || msg->descriptor->magic != PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC)
    return sm_status_new(SM_INVALID_ARGUMENT, "printing text format: no message or no output");
  sbuf b = {0};
  sm_status *s = print_message(&b, msg, 0, 0);
  if (s) s = sm_status_prefix(s, "printing %s as text", msg->descriptor->name);
  else if (!sb_reserve(&b, 0) || b.oom) s = sm_status_new(SM_NO_MEMORY, "printing %s as text", msg->descriptor->name);
  if (s) {
    free(b.p);
    return s;
  }
  b.p[b.len] = '\0';
  *out = b.p;
  if (len) *len = b.len;
  return NULL;
}

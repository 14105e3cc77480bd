/* savedmodel_io.c - saved_model.pb / saved_model.pbtxt: read, parse, write, pick a MetaGraph.
 *
 * Binary input is first walked by a small wire-format scanner driven by the protobuf-c
 * descriptors. protobuf-c's unpack recurses once per nested message and trusts lengths only as
 * far as its own checks go, so a hostile file could exhaust the stack; the scan refuses nesting
 * deeper than SM_PB_MAX_DEPTH (TensorFlow's protobuf recursion limit is also 100) and names the
 * byte offset and field of any malformed varint, length or wire type before unpack runs. */
#include "savedmodel/format.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "savedmodel/constants.h"
#include "savedmodel/pbtxt.h"
#include "format/pb_arena.h"
#include "format/pb_decode.h"
#include "format/pb_util.h"

/* ---- wire-format pre-scan --------------------------------------------------------------------- */

typedef struct scan_ctx {
  const uint8_t *data;
  const char *what;
  uint64_t cost; /* estimate of the bytes protobuf-c will allocate to decode */
  const ProtobufCMessageDescriptor *strict_d; /* last answer of sm__pb_strict_utf8: most strings */
  int strict_v;                               /* are in NodeDefs, so one entry hits nearly always */
} scan_ctx;

/* What one decoded item costs beyond its wire bytes: a malloc header, or a slot in a repeated
 * array. Tiny hostile messages ("0a 00" repeated) expand most: 2 bytes become a whole struct. */
#define SCAN_ALLOC_OVERHEAD 16u
#define SCAN_SLOT 8u

/* 0 = ok, 1 = truncated, 2 = longer than 10 bytes. */
static inline __attribute__((always_inline)) int scan_varint(const uint8_t *p, size_t end, size_t *pos, uint64_t *v) {
  if (*pos < end && p[*pos] < 0x80) { /* most tags and lengths are one byte */
    *v = p[(*pos)++];
    return 0;
  }
  uint64_t r = 0;
  for (int i = 0; i < 10; i++) {
    if (*pos >= end) return 1;
    uint8_t c = p[(*pos)++];
    r |= (uint64_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return 2;
}

static inline int wire_type_of(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_BOOL:
    case PROTOBUF_C_TYPE_ENUM:
      return 0;
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
      return 1;
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
      return 5;
    default: /* string, bytes, message */
      return 2;
  }
}

static sm_status *scan_error(const scan_ctx *c, size_t at, const ProtobufCMessageDescriptor *d,
                             const ProtobufCFieldDescriptor *f, const char *fmt, const char *detail) {
  char where[256];
  if (f)
    snprintf(where, sizeof where, "in field %s.%s (#%u)", d->name, f->name, f->id);
  else
    snprintf(where, sizeof where, "in %s", d->name);
  return sm_status_new(SM_DATA_LOSS, "%s: malformed protobuf at byte %zu (%s): %s%s", c->what, at, where,
                       fmt, detail ? detail : "");
}

/* Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), as protobuf's
 * C++ parser demands of proto3 string fields: TensorFlow refuses a file that breaks this. */
int sm__utf8_valid(const uint8_t *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    /* Names in graphs are ASCII: skip 8 bytes at a time while no high bit is set. */
    while (n - i >= 8) {
      uint64_t w;
      memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    uint8_t c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return 0;
    }
    if (n - i < len) return 0;
    for (size_t k = 1; k < len; k++) {
      if ((p[i + k] & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    i += len;
  }
  return 1;
}

/* GraphDebugInfo is the one proto2 message in the schema; proto2 strings are not checked. */
int sm__pb_strict_utf8(const ProtobufCMessageDescriptor *d) {
  return strncmp(d->name, "tensorflow.GraphDebugInfo", 25) != 0;
}

/* Checks that a packed repeated scalar's payload [pos, end) holds whole elements. */
static sm_status *scan_packed(const scan_ctx *c, size_t pos, size_t end, int wt,
                              const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f) {
  size_t n = end - pos;
  if (wt == 1 || wt == 5) {
    size_t sz = wt == 1 ? 8 : 4;
    if (n % sz) return scan_error(c, pos, d, f, "packed fixed-size values do not fill the length", NULL);
    return NULL;
  }
  while (pos < end) {
    uint64_t v;
    size_t at = pos;
    int r = scan_varint(c->data, end, &pos, &v);
    if (r) return scan_error(c, at, d, f, r == 1 ? "truncated varint in packed values" : "varint longer than 10 bytes", NULL);
  }
  return NULL;
}

/* protobuf_c_message_descriptor_get_field, inlined: TensorFlow's messages have one to three
 * runs of consecutive field numbers, so a linear walk beats the library's call and binary search
 * (the lookup was a fifth of the pre-scan). field_ranges ends with a sentinel whose orig_index is
 * the field count, as protobuf-c's own lookup assumes. */
static inline const ProtobufCFieldDescriptor *field_of(const ProtobufCMessageDescriptor *d, uint64_t num) {
  const ProtobufCIntRange *r = d->field_ranges;
  if (d->n_field_ranges > 8) return protobuf_c_message_descriptor_get_field(d, (unsigned)num);
  for (unsigned i = 0; i < d->n_field_ranges; i++) {
    uint64_t first = (uint64_t)(unsigned)r[i].start_value;
    if (num >= first && num - first < r[i + 1].orig_index - r[i].orig_index)
      return d->fields + r[i].orig_index + (num - first);
  }
  return NULL;
}

static int strict_utf8(scan_ctx *c, const ProtobufCMessageDescriptor *d) {
  if (c->strict_d != d) {
    c->strict_d = d;
    c->strict_v = sm__pb_strict_utf8(d);
  }
  return c->strict_v;
}

static sm_status *scan_message(scan_ctx *c, const ProtobufCMessageDescriptor *d, size_t pos, size_t end,
                               int depth) {
  int strict = -1; /* sm__pb_strict_utf8(d), asked at the first string field */
  while (pos < end) {
    size_t at = pos;
    uint64_t tag;
    int r = scan_varint(c->data, end, &pos, &tag);
    if (r) return scan_error(c, at, d, NULL, r == 1 ? "truncated field tag" : "field tag longer than 10 bytes", NULL);
    uint64_t num = tag >> 3;
    int wt = (int)(tag & 7);
    if (num == 0 || num > 536870911u) return scan_error(c, at, d, NULL, "invalid field number", NULL);
    const ProtobufCFieldDescriptor *f = field_of(d, num);
    if (wt == 3 || wt == 4)
      return scan_error(c, at, d, f, "group (wire type 3/4), which no TensorFlow message uses", NULL);
    if (wt != 0 && wt != 1 && wt != 2 && wt != 5) {
      char buf[32];
      snprintf(buf, sizeof buf, " %d", wt);
      return scan_error(c, at, d, f, "invalid wire type", buf);
    }
    if (f) {
      int want = wire_type_of(f->type);
      int packed_ok = f->label == PROTOBUF_C_LABEL_REPEATED && want != 2 && wt == 2;
      if (wt != want && !packed_ok) {
        char buf[64];
        snprintf(buf, sizeof buf, " (wire type %d, the schema says %d)", wt, want);
        return scan_error(c, at, d, f, "wrong wire type for this field", buf);
      }
    }
    uint64_t v;
    switch (wt) {
      case 0:
        r = scan_varint(c->data, end, &pos, &v);
        if (r) return scan_error(c, at, d, f, r == 1 ? "truncated varint" : "varint longer than 10 bytes", NULL);
        if (f && f->label == PROTOBUF_C_LABEL_REPEATED) c->cost += SCAN_SLOT;
        break;
      case 1:
      case 5: {
        size_t sz = wt == 1 ? 8 : 4;
        if (end - pos < sz) return scan_error(c, at, d, f, "truncated fixed-size value", NULL);
        if (f && f->label == PROTOBUF_C_LABEL_REPEATED) c->cost += SCAN_SLOT;
        pos += sz;
        break;
      }
      case 2: {
        r = scan_varint(c->data, end, &pos, &v);
        if (r) return scan_error(c, at, d, f, r == 1 ? "truncated length" : "length longer than 10 bytes", NULL);
        if (v > end - pos) {
          char buf[96];
          snprintf(buf, sizeof buf, " (length %llu, %zu bytes left)", (unsigned long long)v, end - pos);
          return scan_error(c, at, d, f, "length runs past the end of the enclosing data", buf);
        }
        size_t sub_end = pos + (size_t)v;
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
          c->cost += ((const ProtobufCMessageDescriptor *)f->descriptor)->sizeof_message + SCAN_ALLOC_OVERHEAD;
        else if (f && (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES))
          c->cost += v + 1 + SCAN_ALLOC_OVERHEAD;
        else if (f) /* packed: at most one element per byte, 8 bytes each */
          c->cost += v * SCAN_SLOT;
        if (f && f->label == PROTOBUF_C_LABEL_REPEATED) c->cost += SCAN_SLOT;
        if (f && f->type == PROTOBUF_C_TYPE_STRING && (strict < 0 ? (strict = strict_utf8(c, d)) : strict) &&
            !sm__utf8_valid(c->data + pos, (size_t)v))
          return scan_error(c, at, d, f, "string is not valid UTF-8 (TensorFlow refuses it too; bytes fields may hold anything)",
                            NULL);
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
          if (depth + 1 > SM_PB_MAX_DEPTH) {
            char buf[96];
            snprintf(buf, sizeof buf, " (more than %d levels; TensorFlow refuses such files too)", SM_PB_MAX_DEPTH);
            return scan_error(c, at, d, f, "messages nested too deeply", buf);
          }
          sm_status *s = scan_message(c, (const ProtobufCMessageDescriptor *)f->descriptor, pos, sub_end, depth + 1);
          if (s) return s;
        } else if (f && f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES) {
          sm_status *s = scan_packed(c, pos, sub_end, wire_type_of(f->type), d, f);
          if (s) return s;
        }
        pos = sub_end;
        break;
      }
      default: /* refused above */
        break;
    }
  }
  return NULL;
}

sm_status *sm_pb_check(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len, const char *what) {
  if (!what) what = desc->name;
  if (len > (size_t)INT_MAX)
    return sm_status_new(SM_OUT_OF_RANGE,
                         "%s: %zu bytes is over the 2 GiB protobuf limit (TensorFlow cannot read it either; "
                         "it writes saved_model.cpb for models that large)",
                         what, len);
  scan_ctx c = {data, what, 0, NULL, 0};
  sm_status *s = scan_message(&c, desc, 0, len, 0);
  if (s) return s;
  /* Real SavedModels decode to a few times their size; a file made of tiny messages can
   * demand ~100x. Refuse the latter before protobuf-c allocates it all. */
  uint64_t limit = (uint64_t)len * SM_PB_MAX_EXPANSION + ((uint64_t)64 << 20);
  if (c.cost > limit)
    return sm_status_new(SM_OUT_OF_RANGE,
                         "%s: decoding would need about %llu bytes of memory for %zu bytes of input (over %dx); "
                         "a SavedModel is not made of that many tiny messages",
                         what, (unsigned long long)c.cost, len, SM_PB_MAX_EXPANSION);
  return NULL;
}

sm_status *sm_pb_parse(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len, const char *what,
                       ProtobufCMessage **out) {
  *out = NULL;
  if (!what) what = desc->name;
  sm_status *s = sm_pb_check(desc, data, len, what);
  if (s) return s;
  ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, len, data);
  if (!m)
    return sm_status_new(SM_DATA_LOSS, "%s: not a valid %s protobuf (the decoder rejected it)", what, desc->name);
  *out = m;
  return NULL;
}

/* ---- SavedModel --------------------------------------------------------------------------------- */

/* SavedModels are decoded into an arena (format/pb_arena.c): unpacking and freeing tens of
 * thousands of small pieces with malloc cost more than the parse itself. The decoder is our own
 * (format/pb_decode.c: one pass, sm_pb_check's rules folded in); on anything unusual it hands the
 * input to sm_pb_check and protobuf-c, whose answers stay the reference. */
sm_status *sm_saved_model_parse(const uint8_t *data, size_t len, const char *what, Tensorflow__SavedModel **out) {
  *out = NULL;
  if (!what) what = "saved_model.pb";
  ProtobufCMessage *m;
  sm_status *s = sm__pb_decode(&tensorflow__saved_model__descriptor, data, len, what, &m);
  *out = (Tensorflow__SavedModel *)m;
  return s;
}

void sm_saved_model_free(Tensorflow__SavedModel *sm) {
  if (sm) sm__pb_arena_free(&sm->base);
}

/* A pbtxt-parsed message is malloc'ed piece by piece; re-encode it into an arena so that every
 * SavedModel this file hands out is freed the same way. */
static sm_status *into_arena(ProtobufCMessage *m, const char *what, Tensorflow__SavedModel **out) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    protobuf_c_message_free_unpacked(m, NULL);
    return sm_status_new(SM_NO_MEMORY, "%s: out of memory", what);
  }
  protobuf_c_message_pack(m, buf);
  protobuf_c_message_free_unpacked(m, NULL);
  ProtobufCMessage *am;
  sm_status *s = sm__pb_arena_unpack(&tensorflow__saved_model__descriptor, buf, n, what, &am);
  free(buf);
  *out = (Tensorflow__SavedModel *)am;
  return s;
}

static int all_digits(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

static int has_entry(const char *dir, const char *name) {
  char *p = sm__path_join(dir, name);
  int r = p && sm__path_exists(p);
  free(p);
  return r;
}

/* The "not a SavedModel" error, saying what the directory holds instead when we recognise it. */
static sm_status *not_a_saved_model(const char *dir) {
  const char *head = "not a SavedModel: %s contains neither " SM_SAVED_MODEL_FILENAME_PB
                     " nor " SM_SAVED_MODEL_FILENAME_PBTXT "%s";
  if (!sm__path_exists(dir)) return sm_status_new(SM_NOT_FOUND, head, dir, " (the directory does not exist)");
  if (!sm__is_dir(dir)) return sm_status_new(SM_NOT_FOUND, head, dir, " (it is not a directory)");
  char extra[1024];
  extra[0] = 0;
  if (has_entry(dir, SM_SAVED_MODEL_FILENAME_CPB)) {
    snprintf(extra, sizeof extra,
             "; it has " SM_SAVED_MODEL_FILENAME_CPB
             ", the chunked (proto splitter) format for models over 2 GiB, which is not supported");
  } else if (has_entry(dir, "export.meta")) {
    snprintf(extra, sizeof extra,
             "; it has export.meta, a legacy SessionBundle / tf.train.Saver export from before SavedModel, "
             "which is not supported (re-export it with tf.saved_model)");
  } else {
    /* A model base path with numbered versions (TF Serving layout) instead of one version? */
    DIR *dh = opendir(dir);
    char version[256] = "";
    if (dh) {
      struct dirent *e;
      while ((e = readdir(dh))) {
        if (!all_digits(e->d_name) || strlen(e->d_name) >= sizeof version) continue;
        char *sub = sm__path_join(dir, e->d_name);
        int ok = sub && (has_entry(sub, SM_SAVED_MODEL_FILENAME_PB) || has_entry(sub, SM_SAVED_MODEL_FILENAME_PBTXT));
        free(sub);
        if (ok && (!version[0] || strtoull(e->d_name, NULL, 10) > strtoull(version, NULL, 10)))
          snprintf(version, sizeof version, "%s", e->d_name);
      }
      closedir(dh);
    }
    if (version[0]) {
      snprintf(extra, sizeof extra,
               "; it looks like a model base path with numbered versions: pass a version directory such as "
               "%s/%s",
               dir, version);
    } else {
      const char *parts[] = {SM_VARIABLES_DIRECTORY "/", SM_FINGERPRINT_FILENAME, SM_KERAS_METADATA_FILENAME,
                             SM_ASSETS_DIRECTORY "/"};
      const char *names[] = {SM_VARIABLES_DIRECTORY, SM_FINGERPRINT_FILENAME, SM_KERAS_METADATA_FILENAME,
                             SM_ASSETS_DIRECTORY};
      size_t n = 0;
      for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!has_entry(dir, names[i])) continue;
        size_t used = strlen(extra);
        snprintf(extra + used, sizeof extra - used, "%s%s", n ? ", " : "; it has ", parts[i]);
        n++;
      }
      if (n) {
        size_t used = strlen(extra);
        snprintf(extra + used, sizeof extra - used, " but no graph: an incomplete SavedModel (" SM_SAVED_MODEL_FILENAME_PB
                                                    " is missing)");
      }
    }
  }
  return sm_status_new(SM_NOT_FOUND, head, dir, extra);
}

sm_status *sm_saved_model_read(const char *export_dir, Tensorflow__SavedModel **out) {
  *out = NULL;
  char *pb = sm__path_join(export_dir, SM_SAVED_MODEL_FILENAME_PB);
  char *txt = sm__path_join(export_dir, SM_SAVED_MODEL_FILENAME_PBTXT);
  sm_status *s = NULL;
  if (!pb || !txt) {
    s = sm_status_new(SM_NO_MEMORY, "out of memory");
  } else if (sm__path_exists(pb)) {
    sm_file_map m;
    s = sm__file_map_open(pb, &m);
    if (!s) {
      s = sm_saved_model_parse(m.data, m.size, pb, out);
      sm__file_map_close(&m);
    }
  } else if (sm__path_exists(txt)) {
    char *text;
    size_t len;
    s = sm__file_read_all(txt, &text, &len);
    if (!s) {
      ProtobufCMessage *m = NULL;
      s = sm_pbtxt_parse(&tensorflow__saved_model__descriptor, text, len, txt, &m);
      free(text);
      if (!s) s = into_arena(m, txt, out);
    }
  } else {
    s = not_a_saved_model(export_dir);
  }
  free(pb);
  free(txt);
  return s;
}

sm_status *sm_saved_model_write(const Tensorflow__SavedModel *sm, const char *export_dir, int as_text) {
  if (!sm) return sm_status_new(SM_INVALID_ARGUMENT, "writing a SavedModel to %s: no message", export_dir);
  if (!sm__is_dir(export_dir))
    return sm_status_new(SM_NOT_FOUND, "writing a SavedModel: %s is not an existing directory", export_dir);
  char *path = sm__path_join(export_dir, as_text ? SM_SAVED_MODEL_FILENAME_PBTXT : SM_SAVED_MODEL_FILENAME_PB);
  if (!path) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = NULL;
  if (as_text) {
    char *text = NULL;
    size_t len = 0;
    s = sm_pbtxt_print(&sm->base, &text, &len);
    if (!s) s = sm__file_write_atomic(path, text, len);
    free(text);
  } else {
    size_t len = protobuf_c_message_get_packed_size(&sm->base);
    if (len > (size_t)INT_MAX) {
      s = sm_status_new(SM_OUT_OF_RANGE, "%s: the SavedModel would be %zu bytes, over the 2 GiB protobuf limit", path,
                        len);
    } else {
      uint8_t *buf = malloc(len ? len : 1);
      if (!buf) {
        s = sm_status_new(SM_NO_MEMORY, "out of memory serializing %s (%zu bytes)", path, len);
      } else {
        size_t n = protobuf_c_message_pack(&sm->base, buf);
        if (n != len)
          s = sm_status_new(SM_INTERNAL, "%s: serialized %zu bytes, expected %zu", path, n, len);
        else
          s = sm__file_write_atomic(path, buf, len);
        free(buf);
      }
    }
  }
  if (s) s = sm_status_prefix(s, "writing %s", path);
  free(path);
  return s;
}

/* ---- tag-set matching ------------------------------------------------------------------------- */

static int in_list(const char *t, char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (list[i] && strcmp(list[i], t) == 0) return 1;
  return 0;
}

static int in_clist(const char *t, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (list[i] && strcmp(list[i], t) == 0) return 1;
  return 0;
}

/* Set equality, as TensorFlow compares two std::unordered_set<string>. */
static int same_tag_set(const char *const *tags, size_t ntags, const Tensorflow__MetaGraphDef *mg) {
  const Tensorflow__MetaGraphDef__MetaInfoDef *mi = mg->meta_info_def;
  char *const *have = mi ? mi->tags : NULL;
  size_t nhave = mi ? mi->n_tags : 0;
  for (size_t i = 0; i < ntags; i++)
    if (tags[i] && !in_list(tags[i], have, nhave)) return 0;
  for (size_t i = 0; i < nhave; i++)
    if (have[i] && !in_clist(have[i], tags, ntags)) return 0;
  return 1;
}

/* Appends to a growing malloc'ed string; on out of memory the string stays as it was. */
static void append(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    size_t nc = (*cap ? *cap * 2 : 128);
    while (nc < *len + n + 1) nc *= 2;
    char *p = realloc(*buf, nc);
    if (!p) return;
    *buf = p;
    *cap = nc;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
}

sm_status *sm_saved_model_find_meta_graph(const Tensorflow__SavedModel *sm, const char *const *tags, size_t ntags,
                                          const Tensorflow__MetaGraphDef **out) {
  *out = NULL;
  if (!sm) return sm_status_new(SM_INVALID_ARGUMENT, "find_meta_graph: no SavedModel");
  for (size_t i = 0; i < sm->n_meta_graphs; i++) {
    if (sm->meta_graphs[i] && same_tag_set(tags, ntags, sm->meta_graphs[i])) {
      *out = sm->meta_graphs[i];
      return NULL;
    }
  }
  /* TensorFlow's message (loader.cc / reader.cc), then the tag-sets that exist. */
  char *msg = NULL;
  size_t len = 0, cap = 0;
  append(&msg, &len, &cap, "Could not find meta graph def matching supplied tags: { ");
  int first = 1;
  for (size_t i = 0; i < ntags; i++) {
    if (!tags[i] || in_clist(tags[i], tags, i)) continue; /* a set: duplicates once */
    if (!first) append(&msg, &len, &cap, " ");
    append(&msg, &len, &cap, tags[i]);
    first = 0;
  }
  append(&msg, &len, &cap,
         " }. To inspect available tag-sets in the SavedModel, please use the SavedModel CLI: `saved_model_cli`");
  if (sm->n_meta_graphs == 0) {
    append(&msg, &len, &cap, ". This SavedModel has no MetaGraphs at all");
  } else {
    append(&msg, &len, &cap, ". Available tag-sets: ");
    for (size_t i = 0; i < sm->n_meta_graphs; i++) {
      const Tensorflow__MetaGraphDef__MetaInfoDef *mi = sm->meta_graphs[i] ? sm->meta_graphs[i]->meta_info_def : NULL;
      append(&msg, &len, &cap, i ? ", { " : "{ ");
      for (size_t j = 0; mi && j < mi->n_tags; j++) {
        append(&msg, &len, &cap, mi->tags[j] ? mi->tags[j] : "");
        append(&msg, &len, &cap, " ");
      }
      append(&msg, &len, &cap, "}");
    }
  }
  sm_status *s = sm_status_new(SM_NOT_FOUND, "%s", msg ? msg : "Could not find meta graph def matching supplied tags");
  free(msg);
  return s;
}

/* fingerprint.c - fingerprint.pb as TensorFlow 2.x computes it (cc/saved_model/fingerprinting.cc):
 * FarmHash fingerprints of the deterministically serialized SavedModel, of MetaGraph 0's graph
 * after TensorFlow's "simple delete" regularization, of its signatures in key order, of its
 * object graph's concrete functions in UID order and of variables/variables.index. Also owns the
 * deterministic protobuf serializer those hashes are taken over. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "builder/builder_internal.h"
#include "builder/fingerprint.h"
#include "fingerprint.pb-c.h"
#include "savedmodel/builder.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

/* ---- deterministic serialization ---- */
typedef struct {
  uint8_t *p;
  size_t n, cap;
  int oom;  /* out of memory, or (with deep) nesting too deep: the result is void */
  int deep;
} dbuf;

static void put(dbuf *b, const void *d, size_t n) {
  if (b->oom || !n) return;
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + n) c *= 2;
    uint8_t *q = realloc(b->p, c);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void put_varint(dbuf *b, uint64_t v) {
  uint8_t t[10];
  size_t n = 0;
  do {
    t[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) t[n] |= 0x80;
    n++;
  } while (v);
  put(b, t, n);
}

static void put_le(dbuf *b, uint64_t v, int bytes) {
  uint8_t t[8];
  for (int i = 0; i < bytes; i++) t[i] = (uint8_t)(v >> (8 * i));
  put(b, t, (size_t)bytes);
}

static void put_tag(dbuf *b, uint32_t id, unsigned wire) { put_varint(b, (uint64_t)id << 3 | wire); }

static int wire_type(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return 5;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 1;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return 2;
    default: return 0;
  }
}

static size_t elem_size(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_DOUBLE: return 8;
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_ENUM: return sizeof(int);
    case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
    default: return 4;
  }
}

static void put_message(dbuf *b, const ProtobufCMessage *m, int depth);

/* One value (no tag) of scalar type t at p. */
static void put_scalar(dbuf *b, ProtobufCType t, const void *p) {
  switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_ENUM: {
      int32_t v;
      memcpy(&v, p, 4);
      put_varint(b, (uint64_t)(int64_t)v);
      break;
    }
    case PROTOBUF_C_TYPE_UINT32: {
      uint32_t v;
      memcpy(&v, p, 4);
      put_varint(b, v);
      break;
    }
    case PROTOBUF_C_TYPE_SINT32: {
      int32_t v;
      memcpy(&v, p, 4);
      put_varint(b, (uint32_t)(((uint32_t)v << 1) ^ (uint32_t)(v >> 31)));
      break;
    }
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT: {
      uint32_t v;
      memcpy(&v, p, 4);
      put_le(b, v, 4);
      break;
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_UINT64: {
      uint64_t v;
      memcpy(&v, p, 8);
      put_varint(b, v);
      break;
    }
    case PROTOBUF_C_TYPE_SINT64: {
      int64_t v;
      memcpy(&v, p, 8);
      put_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
      break;
    }
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: {
      uint64_t v;
      memcpy(&v, p, 8);
      put_le(b, v, 8);
      break;
    }
    case PROTOBUF_C_TYPE_BOOL: {
      protobuf_c_boolean v;
      memcpy(&v, p, sizeof v);
      put_varint(b, v ? 1 : 0);
      break;
    }
    default: break;
  }
}

/* A whole field value with its tag: length-delimited types get their length prefix. */
static void put_value(dbuf *b, const ProtobufCFieldDescriptor *f, const void *p, int depth) {
  put_tag(b, f->id, (unsigned)wire_type(f->type));
  if (f->type == PROTOBUF_C_TYPE_STRING) {
    const char *s = *(char *const *)p;
    size_t n = s ? strlen(s) : 0;
    put_varint(b, n);
    put(b, s, n);
  } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
    const ProtobufCBinaryData *d = p;
    put_varint(b, d->len);
    put(b, d->data, d->len);
  } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
    dbuf sub = {0};
    put_message(&sub, *(ProtobufCMessage *const *)p, depth + 1);
    if (sub.oom) b->oom = 1;
    if (sub.deep) b->deep = 1;
    put_varint(b, sub.n);
    put(b, sub.p, sub.n);
    free(sub.p);
  } else {
    put_scalar(b, f->type, p);
  }
}

/* proto3 implicit presence: written when not the zero value (floats by bit pattern, as C++). */
static int is_zero(const ProtobufCFieldDescriptor *f, const void *p) {
  switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
      const char *s = *(char *const *)p;
      return !s || !*s;
    }
    case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)p)->len == 0;
    case PROTOBUF_C_TYPE_MESSAGE: return *(ProtobufCMessage *const *)p == NULL;
    default: {
      size_t n = elem_size(f->type);
      const uint8_t *q = p;
      for (size_t i = 0; i < n; i++)
        if (q[i]) return 0;
      return 1;
    }
  }
}

/* protobuf-c marks no message as a map entry; TensorFlow's are the generated "...Entry" types
 * with exactly key = 1 and value = 2. */
static int is_map_entry(const ProtobufCMessageDescriptor *d) {
  size_t n = strlen(d->name);
  return d->n_fields == 2 && n > 5 && !strcmp(d->name + n - 5, "Entry") && d->fields[0].id == 1 &&
         !strcmp(d->fields[0].name, "key") && d->fields[1].id == 2 && !strcmp(d->fields[1].name, "value");
}

static int key_cmp(const ProtobufCMessage *a, const ProtobufCMessage *b) {
  const ProtobufCFieldDescriptor *f = &a->descriptor->fields[0];
  const char *pa = (const char *)a + f->offset, *pb = (const char *)b + f->offset;
  switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
      const char *x = *(char *const *)pa, *y = *(char *const *)pb;
      return strcmp(x ? x : "", y ? y : "");
    }
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: {
      int32_t x, y;
      memcpy(&x, pa, 4), memcpy(&y, pb, 4);
      return (x > y) - (x < y);
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
      int64_t x, y;
      memcpy(&x, pa, 8), memcpy(&y, pb, 8);
      return (x > y) - (x < y);
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
      uint64_t x, y;
      memcpy(&x, pa, 8), memcpy(&y, pb, 8);
      return (x > y) - (x < y);
    }
    case PROTOBUF_C_TYPE_BOOL: {
      protobuf_c_boolean x, y;
      memcpy(&x, pa, sizeof x), memcpy(&y, pb, sizeof y);
      return (!!x > !!y) - (!!x < !!y);
    }
    default: {
      uint32_t x, y;
      memcpy(&x, pa, 4), memcpy(&y, pb, 4);
      return (x > y) - (x < y);
    }
  }
}

/* Stable merge sort of map entries by key (qsort has no context and is not stable). */
static void sort_entries(ProtobufCMessage **v, ProtobufCMessage **tmp, size_t n) {
  if (n < 2) return;
  size_t h = n / 2;
  sort_entries(v, tmp, h);
  sort_entries(v + h, tmp, n - h);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = key_cmp(v[j], v[i]) < 0 ? v[j++] : v[i++];
  while (i < h) tmp[k++] = v[i++];
  while (j < n) tmp[k++] = v[j++];
  memcpy(v, tmp, n * sizeof *v);
}

/* A map entry: C++ writes key and value even when they hold default values. */
static void put_entry(dbuf *b, const ProtobufCMessage *e, int depth) {
  for (int i = 0; i < 2; i++) {
    const ProtobufCFieldDescriptor *f = &e->descriptor->fields[i];
    const void *p = (const char *)e + f->offset;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && !*(ProtobufCMessage *const *)p) {
      put_tag(b, f->id, 2);
      put_varint(b, 0);
    } else {
      put_value(b, f, p, depth);
    }
  }
}

static void put_message(dbuf *b, const ProtobufCMessage *m, int depth) {
  if (!m || b->oom) return;
  if (depth > SM_PB_MAX_DEPTH) { /* parsed input is already bounded; this guards hand-built cycles */
    b->oom = b->deep = 1;
    return;
  }
  const ProtobufCMessageDescriptor *d = m->descriptor;
  if (is_map_entry(d)) {
    put_entry(b, m, depth);
    goto unknown;
  }
  /* protobuf-c's generator emits each descriptor's fields sorted by number, which is the
   * order C++ writes them in */
  for (unsigned fi = 0; fi < d->n_fields; fi++) {
    const ProtobufCFieldDescriptor *f = &d->fields[fi];
    const char *base = (const char *)m;
    const void *p = base + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)(base + f->quantifier_offset);
      if (!n) continue;
      const char *arr = *(char *const *)p;
      size_t es = elem_size(f->type);
      if (f->type == PROTOBUF_C_TYPE_MESSAGE && n > 1 && is_map_entry(f->descriptor)) {
        ProtobufCMessage **v = malloc(n * sizeof *v), **tmp = malloc(n * sizeof *tmp);
        if (!v || !tmp) {
          free(v);
          free(tmp);
          b->oom = 1;
          return;
        }
        memcpy(v, arr, n * sizeof *v);
        sort_entries(v, tmp, n);
        for (size_t i = 0; i < n; i++) put_value(b, f, &v[i], depth);
        free(v);
        free(tmp);
      } else if ((f->flags & PROTOBUF_C_FIELD_FLAG_PACKED) && wire_type(f->type) != 2) {
        dbuf sub = {0};
        for (size_t i = 0; i < n; i++) put_scalar(&sub, f->type, arr + i * es);
        if (sub.oom) b->oom = 1;
        put_tag(b, f->id, 2);
        put_varint(b, sub.n);
        put(b, sub.p, sub.n);
        free(sub.p);
      } else {
        for (size_t i = 0; i < n; i++) put_value(b, f, arr + i * es, depth);
      }
      continue;
    }
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      if (*(const uint32_t *)(base + f->quantifier_offset) != f->id) continue;
      if (f->type == PROTOBUF_C_TYPE_MESSAGE && !*(ProtobufCMessage *const *)p) continue;
    } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL) {
      if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) {
        if (!*(void *const *)p) continue;
      } else if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset)) {
        continue;
      }
    } else if (f->label == PROTOBUF_C_LABEL_NONE) {
      if (is_zero(f, p)) continue;
    }
    put_value(b, f, p, depth);
  }
unknown:
  for (unsigned i = 0; i < m->n_unknown_fields; i++) {
    const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];
    put_tag(b, u->tag, u->wire_type);
    put(b, u->data, u->len);
  }
}

sm_status *sm__pb_serialize_deterministic(const ProtobufCMessage *m, uint8_t **out, size_t *len) {
  dbuf b = {0};
  put_message(&b, m, 0);
  if (b.oom) {
    free(b.p);
    *out = NULL;
    *len = 0;
    return b.deep ? sm_status_new(SM_INVALID_ARGUMENT, "%s: messages nested deeper than %d", m->descriptor->name,
                                  SM_PB_MAX_DEPTH)
                  : oom();
  }
  *out = b.p ? b.p : malloc(1);
  *len = b.n;
  return *out ? NULL : oom();
}

static sm_status *hash_message(const ProtobufCMessage *m, uint64_t *h) {
  uint8_t *p;
  size_t n;
  sm_status *s = sm__pb_serialize_deterministic(m, &p, &n);
  if (s) return s;
  *h = sm__fingerprint64(p, n);
  free(p);
  return NULL;
}

/* ---- the five hashes ---- */

/* graph_regularization::GetSuffixUID: the part after the last '_' must be an integer. */
static int suffix_uid(const char *name, long long *uid) {
  const char *u = strrchr(name, '_');
  u = u ? u + 1 : name;
  if (!*u) return 0;
  char *end;
  long long v = strtoll(u, &end, 10);
  if (*end || end == u) return 0;
  *uid = v;
  return 1;
}

/* Strips the decimal form of uid from the end of name (absl::StripSuffix), in place. */
static void strip_uid(char *name, long long uid) {
  char d[32];
  int n = snprintf(d, sizeof d, "%lld", uid);
  size_t l = strlen(name);
  if (n > 0 && (size_t)n <= l && !strcmp(name + l - (size_t)n, d)) name[l - (size_t)n] = 0;
}

static Tensorflow__AttrValue *find_attr(Tensorflow__NodeDef *n, const char *k) {
  for (size_t i = 0; i < n->n_attr; i++)
    if (n->attr[i]->key && !strcmp(n->attr[i]->key, k)) return n->attr[i]->value;
  return NULL;
}

/* graph_regularization::SimpleDelete on a malloc-owned GraphDef. */
static sm_status *simple_delete(Tensorflow__GraphDef *g) {
  for (size_t i = 0; i < g->n_node; i++) {
    Tensorflow__NodeDef *n = g->node[i];
    if (n->op && (!strcmp(n->op, "PartitionedCall") || !strcmp(n->op, "StatefulPartitionedCall"))) {
      Tensorflow__AttrValue *f = find_attr(n, "f");
      long long uid;
      if (f && f->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC && f->func && f->func->name &&
          suffix_uid(f->func->name, &uid))
        strip_uid(f->func->name, uid);
      Tensorflow__AttrValue *c = find_attr(n, "config_proto");
      if (c && c->value_case == TENSORFLOW__ATTR_VALUE__VALUE_S) {
        free(c->s.data);
        c->s.data = NULL;
        c->s.len = 0;
      }
    }
    if (n->op && !strcmp(n->op, "Const")) {
      Tensorflow__AttrValue *dt = find_attr(n, "dtype"), *v = find_attr(n, "value");
      if (dt && dt->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE && dt->type == TENSORFLOW__DATA_TYPE__DT_STRING &&
          v) {
        /* clear_value(): the oneof emptied, its member freed */
        switch (v->value_case) {
          case TENSORFLOW__ATTR_VALUE__VALUE_S: free(v->s.data); break;
          case TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER: free(v->placeholder); break;
          case TENSORFLOW__ATTR_VALUE__VALUE_LIST:
            if (v->list) protobuf_c_message_free_unpacked(&v->list->base, NULL);
            break;
          case TENSORFLOW__ATTR_VALUE__VALUE_SHAPE:
            if (v->shape) protobuf_c_message_free_unpacked(&v->shape->base, NULL);
            break;
          case TENSORFLOW__ATTR_VALUE__VALUE_TENSOR:
            if (v->tensor) protobuf_c_message_free_unpacked(&v->tensor->base, NULL);
            break;
          case TENSORFLOW__ATTR_VALUE__VALUE_FUNC:
            if (v->func) protobuf_c_message_free_unpacked(&v->func->base, NULL);
            break;
          default: break;
        }
        v->value_case = TENSORFLOW__ATTR_VALUE__VALUE__NOT_SET;
      }
    }
  }
  /* mutable_library()->Clear() and mutable_versions()->Clear(): present but empty */
  if (g->library) protobuf_c_message_free_unpacked(&g->library->base, NULL);
  if (g->versions) protobuf_c_message_free_unpacked(&g->versions->base, NULL);
  g->library = malloc(sizeof *g->library);
  g->versions = malloc(sizeof *g->versions);
  if (!g->library || !g->versions) return oom();
  tensorflow__function_def_library__init(g->library);
  tensorflow__version_def__init(g->versions);
  return NULL;
}

static sm_status *graph_hash(const Tensorflow__MetaGraphDef *mg, uint64_t *h) {
  ProtobufCMessage *c = NULL;
  sm_status *s;
  if (mg->graph_def) {
    s = sm__b_clone(&mg->graph_def->base, &c);
  } else {
    Tensorflow__GraphDef *g = malloc(sizeof *g);
    if (g) tensorflow__graph_def__init(g);
    c = &g->base;
    s = g ? NULL : oom();
  }
  if (s) return s;
  s = simple_delete((Tensorflow__GraphDef *)c);
  if (!s) s = hash_message(c, h);
  protobuf_c_message_free_unpacked(c, NULL);
  return s;
}

typedef struct {
  const Tensorflow__MetaGraphDef__SignatureDefEntry *e;
  size_t idx;
} sig_ref;
/* by key, then by position: of duplicate keys a parsed map keeps the last */
static int cmp_sig_key(const void *a, const void *b) {
  const sig_ref *x = a, *y = b;
  int c = strcmp(x->e->key ? x->e->key : "", y->e->key ? y->e->key : "");
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static sm_status *signature_hash(const Tensorflow__MetaGraphDef *mg, uint64_t *h) {
  size_t n = mg->n_signature_def;
  *h = 0;
  if (!n) return NULL;
  sig_ref *v = malloc(n * sizeof *v);
  if (!v) return oom();
  for (size_t i = 0; i < n; i++) v[i] = (sig_ref){mg->signature_def[i], i};
  qsort(v, n, sizeof *v, cmp_sig_key);
  sm_status *s = NULL;
  for (size_t i = 0; i < n && !s; i++) {
    const char *k = v[i].e->key ? v[i].e->key : "";
    if (i + 1 < n && !strcmp(k, v[i + 1].e->key ? v[i + 1].e->key : "")) continue;
    uint64_t hv = 0;
    *h = sm__fingerprint_cat64(*h, sm__fingerprint64(k, strlen(k)));
    s = hash_message(v[i].e->value ? &v[i].e->value->base : NULL, &hv);
    if (!s) *h = sm__fingerprint_cat64(*h, hv);
  }
  free(v);
  return s;
}

typedef struct {
  long long uid;
  size_t idx;
} uid_ref;
static int cmp_uid(const void *a, const void *b) {
  long long x = ((const uid_ref *)a)->uid, y = ((const uid_ref *)b)->uid;
  return (x > y) - (x < y);
}

static sm_status *object_graph_hash(const Tensorflow__MetaGraphDef *mg, uint64_t *h) {
  *h = 0;
  const Tensorflow__SavedObjectGraph *og = mg->object_graph_def;
  if (!og || !og->n_concrete_functions) return NULL;
  size_t n = og->n_concrete_functions;
  uid_ref *v = malloc(n * sizeof *v);
  if (!v) return oom();
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = og->concrete_functions[i]->key ? og->concrete_functions[i]->key : "";
    long long uid;
    if (!suffix_uid(name, &uid)) {
      free(v);
      return sm_status_new(SM_INVALID_ARGUMENT, "concrete function \"%s\": its name does not end in a UID", name);
    }
    /* a btree_map keeps the first name per UID */
    size_t j = 0;
    while (j < m && v[j].uid != uid) j++;
    if (j == m) v[m++] = (uid_ref){uid, i};
  }
  qsort(v, m, sizeof *v, cmp_uid);
  sm_status *s = NULL;
  for (size_t i = 0; i < m && !s; i++) {
    const Tensorflow__SavedObjectGraph__ConcreteFunctionsEntry *e = og->concrete_functions[v[i].idx];
    char *name = sm__b_strdup(e->key ? e->key : "");
    if (!name) {
      s = oom();
      break;
    }
    strip_uid(name, v[i].uid);
    *h = sm__fingerprint_cat64(*h, sm__fingerprint64(name, strlen(name)));
    free(name);
    uint64_t hv = 0;
    s = hash_message(e->value ? &e->value->base : NULL, &hv);
    if (!s) *h = sm__fingerprint_cat64(*h, hv);
  }
  free(v);
  return s;
}

/* A random 128-bit number in decimal, as TensorFlow 2.x fills FingerprintDef.uuid. */
static void random_uuid(char out[48]) {
  uint32_t w[4] = {0};
  int fd = open("/dev/urandom", O_RDONLY);
  if (fd < 0 || read(fd, w, sizeof w) != (ssize_t)sizeof w) {
    uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)out;
    for (int i = 0; i < 4; i++) w[i] ^= (uint32_t)((t = t * 6364136223846793005ULL + 1442695040888963407ULL) >> 32);
  }
  if (fd >= 0) close(fd);
  /* 128-bit value (w[0] most significant) -> decimal by repeated division by 10 */
  char rev[48];
  int n = 0;
  for (;;) {
    int zero = !w[0] && !w[1] && !w[2] && !w[3];
    if (zero && n) break;
    uint64_t r = 0;
    for (int i = 0; i < 4; i++) {
      uint64_t cur = (r << 32) | w[i];
      w[i] = (uint32_t)(cur / 10);
      r = cur % 10;
    }
    rev[n++] = (char)('0' + r);
    if (zero) break;
  }
  for (int i = 0; i < n; i++) out[i] = rev[n - 1 - i];
  out[n] = 0;
}

sm_status *sm_saved_model_fingerprint(const char *export_dir, Tensorflow__FingerprintDef **out) {
  *out = NULL;
  char *pb = sm__path_join(export_dir, SM_SAVED_MODEL_FILENAME_PB), *data = NULL;
  char *index = sm__path_join(export_dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME ".index");
  size_t len = 0;
  Tensorflow__SavedModel *sm = NULL;
  Tensorflow__FingerprintDef *fp = NULL;
  sm_status *s = pb && index ? sm__file_read_all(pb, &data, &len) : oom();
  if (!s) s = sm_saved_model_parse((const uint8_t *)data, len, pb, &sm);
  if (!s && !sm->n_meta_graphs) s = sm_status_new(SM_INVALID_ARGUMENT, "%s: no MetaGraph to fingerprint", pb);
  if (!s) {
    fp = malloc(sizeof *fp);
    Tensorflow__VersionDef *ver = malloc(sizeof *ver);
    char uuid[48];
    random_uuid(uuid);
    if (fp) tensorflow__fingerprint_def__init(fp);
    if (ver) tensorflow__version_def__init(ver);
    if (fp && ver) {
      fp->version = ver;
      ver->producer = SM_FINGERPRINT_PRODUCER;
      fp->uuid = sm__b_strdup(uuid);
    } else {
      free(ver);
    }
    if (!fp || !fp->version || !fp->uuid) s = oom();
  }
  if (!s) s = hash_message(&sm->base, &fp->saved_model_checksum);
  if (!s) s = graph_hash(sm->meta_graphs[0], &fp->graph_def_program_hash);
  if (!s) s = signature_hash(sm->meta_graphs[0], &fp->signature_def_hash);
  if (!s) s = object_graph_hash(sm->meta_graphs[0], &fp->saved_object_graph_hash);
  if (!s) {
    char *idx = NULL;
    size_t ilen = 0;
    if (sm__path_exists(index)) {
      s = sm__file_read_all(index, &idx, &ilen);
      if (!s) fp->checkpoint_hash = sm__fingerprint64(idx, ilen);
      free(idx);
    }
  }
  sm_saved_model_free(sm);
  free(data);
  free(pb);
  free(index);
  if (s) {
    if (fp) protobuf_c_message_free_unpacked(&fp->base, NULL);
    return sm_status_prefix(s, "fingerprint of %s", export_dir);
  }
  *out = fp;
  return NULL;
}

sm_status *sm_saved_model_write_fingerprint(const char *export_dir) {
  Tensorflow__FingerprintDef *fp;
  sm_status *s = sm_saved_model_fingerprint(export_dir, &fp);
  if (s) return s;
  size_t n = tensorflow__fingerprint_def__get_packed_size(fp);
  uint8_t *buf = malloc(n ? n : 1);
  char *path = sm__path_join(export_dir, SM_FINGERPRINT_FILENAME);
  if (!buf || !path) s = oom();
  else {
    tensorflow__fingerprint_def__pack(fp, buf);
    s = sm__file_write_atomic(path, buf, n);
  }
  free(buf);
  free(path);
  protobuf_c_message_free_unpacked(&fp->base, NULL);
  return s;
}

/* test_pb_decode.c - our protobuf decoder (src/format/pb_decode.c) against the old path
 * (sm_pb_check + protobuf-c's unpack): hand-made edge cases, every SavedModel under
 * tests/fixtures (and the TF Serving ones under SM_SHARED_DIR when present), and seeded random
 * mutations of them. The comparison itself is fuzz/fuzz_pb_decode.c's, included here. */
#define FUZZ_PB_DECODE_ENTRY fuzz_pb_decode_one
#include "../../fuzz/fuzz_pb_decode.c"

#include <dirent.h>
#include <sys/stat.h>

#include "base/file.h"
#include "savedmodel/pbtxt.h"
#include "test.h"

static size_t n_inputs, n_fast, n_ref_ok;

static fpd_result diff(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n, const char *name) {
  fpd_result r = fpd_diff(d, p, n);
  n_inputs++;
  n_fast += r.fast_ok;
  n_ref_ok += r.ref_ok;
  if (r.mismatch) {
    fprintf(stderr, "mismatch %d on %s (%zu bytes)\n", r.mismatch, name, n);
    sm_test_failures++;
  }
  return r;
}

/* ---- hand-made cases ---- */

/* Prepends a tag and a varint length to the n bytes at b + 16 (room kept in front); returns the
 * new start. */
static uint8_t *wrap(uint8_t *b, size_t *n, uint8_t tag) {
  uint8_t hdr[16];
  size_t h = 0, v = *n;
  hdr[h++] = tag;
  while (v >= 0x80) hdr[h++] = (uint8_t)(v | 0x80), v >>= 7;
  hdr[h++] = (uint8_t)v;
  memcpy(b - h, hdr, h);
  *n += h;
  return b - h;
}

static size_t nested_len;

/* An AttrValue nested `levels` times through func.attr[].value (malloc'ed; length in nested_len). */
static uint8_t *nested_attr(int levels) {
  size_t room = (size_t)levels * 3 * 8;
  uint8_t *buf = calloc(1, room + 1), *p = buf + room;
  size_t n = 0;
  for (int i = 0; i < levels; i++) {
    p = wrap(p, &n, 0x12); /* NameAttrList.AttrEntry.value */
    p = wrap(p, &n, 0x12); /* NameAttrList.attr */
    p = wrap(p, &n, 0x52); /* AttrValue.func */
  }
  memmove(buf, p, n);
  nested_len = n;
  return buf;
}


#define B(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static void test_cases(void) {
  const ProtobufCMessageDescriptor *SM = &tensorflow__saved_model__descriptor,
                                   *AV = &tensorflow__attr_value__descriptor,
                                   *TP = &tensorflow__tensor_proto__descriptor;
  fpd_result r;
  /* empty input: an empty message */
  r = diff(SM, (const uint8_t *)"", 0, "empty");
  CHECK(r.fast_ok && r.ref_ok);
  /* a singular message given twice: protobuf-c merges, the fast path leaves it to protobuf-c */
  r = diff(SM, B(0x12, 0x0a, 0x0a, 0x03, 0x0a, 0x01, 'a', 0x0a, 0x03, 0x22, 0x01, 's'), "merge");
  CHECK(!r.fast_ok && r.ref_ok);
  {
    ProtobufCMessage *m = NULL;
    CHECK_OK(sm__pb_decode(SM, B(0x12, 0x0a, 0x0a, 0x03, 0x0a, 0x01, 'a', 0x0a, 0x03, 0x22, 0x01, 's'), "merge", &m));
    const Tensorflow__SavedModel *sm = (const Tensorflow__SavedModel *)m;
    CHECK(sm && sm->n_meta_graphs == 1 && sm->meta_graphs[0]->meta_info_def &&
          strcmp(sm->meta_graphs[0]->meta_info_def->meta_graph_version, "a") == 0 &&
          sm->meta_graphs[0]->meta_info_def->n_tags == 1);
    sm__pb_arena_free(m);
  }
  /* unknown fields of every wire type are kept, in order */
  r = diff(SM, B(0x78, 0x05, 0x82, 0x01, 0x02, 'h', 'i', 0x8d, 0x01, 1, 2, 3, 4, 0x91, 0x01, 1, 2, 3, 4, 5, 6, 7, 8,
                 0x08, 0x01, 0x78, 0x06),
           "unknown");
  CHECK(r.fast_ok && r.ref_ok);
  {
    ProtobufCMessage *m = NULL;
    CHECK(sm__pb_decode_fast(SM, B(0x78, 0x05, 0x82, 0x01, 0x02, 'h', 'i', 0x08, 0x01), &m) == 0);
    CHECK(m && m->n_unknown_fields == 2 && m->unknown_fields[0].tag == 15 && m->unknown_fields[1].len == 3 &&
          memcmp(m->unknown_fields[1].data, "\x02hi", 3) == 0);
    sm__pb_arena_free(m);
  }
  /* oneof: a later member replaces an earlier one; a message member given twice is replaced */
  r = diff(AV, B(0x12, 0x02, 'a', 'b', 0x18, 0x05), "oneof");
  CHECK(r.fast_ok && r.ref_ok);
  r = diff(AV, B(0x3a, 0x02, 0x18, 0x01, 0x3a, 0x00), "oneof message twice");
  CHECK(r.fast_ok && r.ref_ok);
  r = diff(AV, B(0x18, 0x05, 0x12, 0x00, 0x25, 0, 0, 0x80, 0x3f), "oneof three");
  CHECK(r.fast_ok && r.ref_ok);
  /* repeated scalars: packed, unpacked, mixed; last value wins for singular scalars */
  r = diff(TP, B(0x3a, 0x03, 0x01, 0x02, 0x03, 0x38, 0x04, 0x38, 0x05, 0x2a, 0x04, 0, 0, 0x80, 0x3f, 0x2d, 0, 0, 0, 0x40,
                 0x08, 0x01, 0x08, 0x03),
           "packed");
  CHECK(r.fast_ok && r.ref_ok);
  {
    ProtobufCMessage *m = NULL;
    CHECK(sm__pb_decode_fast(TP, B(0x3a, 0x03, 0x01, 0x02, 0x03, 0x38, 0x04, 0x38, 0x05, 0x3a, 0x01, 0x7f), &m) == 0);
    const Tensorflow__TensorProto *t = (const Tensorflow__TensorProto *)m;
    CHECK(t && t->n_int_val == 6 && t->int_val[0] == 1 && t->int_val[4] == 5 && t->int_val[5] == 127);
    sm__pb_arena_free(m);
  }
  /* many elements: arrays grow past several doublings */
  {
    uint8_t buf[3000];
    size_t n = 0;
    for (int i = 0; i < 1000; i++) buf[n++] = 0x38, buf[n++] = (uint8_t)(i & 0x7f);
    buf[n++] = 0x3a, buf[n++] = 0x7f;
    for (int i = 0; i < 127; i++) buf[n++] = (uint8_t)i;
    r = diff(TP, buf, n, "many");
    CHECK(r.fast_ok && r.ref_ok);
  }
  /* bools: any set bit is true, even past 64 bits */
  r = diff(AV, B(0x28, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7e), "bool");
  CHECK(r.ref_ok);
  /* negative int32 in 10 bytes, sint64 */
  r = diff(AV, B(0x30, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "enum -1");
  CHECK(r.fast_ok && r.ref_ok);
  /* a length padded to 6 bytes: sm_pb_check takes it, protobuf-c does not */
  r = diff(SM, B(0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), "padded length");
  CHECK(!r.fast_ok);
  /* malformed: truncated, bad wire type, group, length past the end, field 0, bad UTF-8 */
  r = diff(SM, B(0x12, 0x05, 0x0a), "truncated");
  CHECK(!r.fast_ok && !r.ref_ok);
  r = diff(SM, B(0x0d, 1, 2, 3, 4), "wire type");
  CHECK(!r.fast_ok && !r.ref_ok);
  r = diff(SM, B(0x13, 0x14), "group");
  CHECK(!r.fast_ok && !r.ref_ok);
  r = diff(SM, B(0x00, 0x01), "field 0");
  CHECK(!r.fast_ok && !r.ref_ok);
  r = diff(SM, B(0x12, 0x05, 0x0a, 0x03, 0x22, 0x01, 0xff), "utf8");
  CHECK(!r.fast_ok && !r.ref_ok);
  r = diff(AV, B(0x12, 0x01, 0xff), "bytes not utf8");
  CHECK(r.fast_ok && r.ref_ok);
  /* nesting through a recursive type: AttrValue.func -> NameAttrList.attr entry -> value AttrValue,
   * three messages a level; 33 levels (99 deep) decode, 34 (102) are refused as too deep */
  for (int levels = 33; levels <= 34; levels++) {
    uint8_t *buf = nested_attr(levels);
    size_t n = nested_len;
    r = diff(AV, buf, n, "nested");
    CHECK(r.fast_ok == (levels == 33) && r.ref_ok == (levels == 33));
    if (levels == 34) {
      ProtobufCMessage *m = NULL;
      CHECK_ERR(sm__pb_decode(AV, buf, n, "deep.pb", &m), "nested too deeply");
    }
    free(buf);
  }
}

/* ---- fixtures and mutations ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static size_t mutate(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
  memcpy(dst, src, n);
  int rounds = 1 + (int)(next_rand() % 3);
  for (int k = 0; k < rounds && n; k++) {
    size_t at = (size_t)(next_rand() % n);
    switch (next_rand() % 7) {
      case 0: dst[at] ^= (uint8_t)(1u << (next_rand() % 8)); break;
      case 1: dst[at] = (uint8_t)next_rand(); break;
      case 2: n = at; break;
      case 3: {
        size_t add = 1 + (size_t)(next_rand() % 8);
        if (n + add > cap) break;
        memmove(dst + at + add, dst + at, n - at);
        for (size_t i = 0; i < add; i++) dst[at + i] = (uint8_t)next_rand();
        n += add;
        break;
      }
      case 4: {
        size_t del = 1 + (size_t)(next_rand() % 16);
        if (del > n - at) del = n - at;
        memmove(dst + at, dst + at + del, n - at - del);
        n -= del;
        break;
      }
      case 5: { /* duplicate a range: repeated and twice-given fields */
        size_t len = 1 + (size_t)(next_rand() % 64);
        if (len > n - at) len = n - at;
        if (n + len > cap) break;
        memmove(dst + at + 2 * len, dst + at + len, n - at - len);
        memcpy(dst + at + len, dst + at, len);
        n += len;
        break;
      }
      default: {
        static const uint8_t vals[] = {0x00, 0x7f, 0x80, 0xff, 0x0a, 0x12, 0x1a, 0x22, 0x01};
        dst[at] = vals[next_rand() % sizeof vals];
        break;
      }
    }
  }
  return n;
}

/* Structure-aware edits that keep the input valid wire format: one field record (at any depth)
 * is deleted, given twice, or preceded by an unknown field, and the enclosing lengths are
 * rewritten. These reach the cases random bytes rarely do: merges, repeated oneofs, unknown fields. */
typedef struct obuf {
  uint8_t *p;
  size_t n, cap;
} obuf;

static void put(obuf *o, const void *p, size_t n) {
  if (o->n + n > o->cap) {
    size_t nc = (o->cap ? o->cap * 2 : 256) + n;
    uint8_t *np = realloc(o->p, nc);
    if (!np) abort();
    o->p = np, o->cap = nc;
  }
  memcpy(o->p + o->n, p, n);
  o->n += n;
}

static void put_varint(obuf *o, uint64_t v) {
  uint8_t b[10];
  size_t n = 0;
  while (v >= 0x80) b[n++] = (uint8_t)(v | 0x80), v >>= 7;
  b[n++] = (uint8_t)v;
  put(o, b, n);
}

typedef struct edit {
  long target, counter;
  int op;
} edit;

static uint64_t get_varint(const uint8_t **p, const uint8_t *end) {
  uint64_t v = 0;
  for (int i = 0; i < 10 && *p < end; i++) {
    uint8_t c = *(*p)++;
    v |= (uint64_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80)) break;
  }
  return v;
}

/* Copies the message [p, end) of type d into o with the edit applied (inputs here are valid). */
static void rewrite(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, obuf *o, edit *e) {
  while (p < end) {
    const uint8_t *rec = p;
    uint64_t tag = get_varint(&p, end);
    const uint8_t *after_tag = p;
    int wt = (int)(tag & 7);
    const uint8_t *pl = NULL;
    uint64_t len = 0;
    if (wt == 0) get_varint(&p, end);
    else if (wt == 1) p += 8;
    else if (wt == 5) p += 4;
    else if (wt == 2) len = get_varint(&p, end), pl = p, p += len;
    else return;
    if (p > end) return;
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
    int copies = 1;
    if (e->counter++ == e->target) {
      if (e->op == 0) continue;
      if (e->op == 1) copies = 2;
      if (e->op == 2) put_varint(o, (1000u + (unsigned)(next_rand() % 1000)) << 3), put_varint(o, next_rand() >> 40);
    }
    for (int k = 0; k < copies; k++) {
      if (wt == 2 && f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
        obuf sub = {0};
        rewrite(f->descriptor, pl, pl + len, &sub, e);
        put(o, rec, (size_t)(after_tag - rec));
        put_varint(o, sub.n);
        if (sub.n) put(o, sub.p, sub.n);
        free(sub.p);
      } else {
        put(o, rec, (size_t)(p - rec));
      }
    }
  }
}

static void run_structured(const uint8_t *data, size_t len, const char *name, int edits) {
  const ProtobufCMessageDescriptor *SM = &tensorflow__saved_model__descriptor;
  edit count = {-1, 0, 0};
  obuf o = {0};
  rewrite(SM, data, data + len, &o, &count);
  free(o.p);
  if (count.counter == 0) return;
  for (int i = 0; i < edits; i++) {
    edit e = {(long)(next_rand() % (uint64_t)count.counter), 0, (int)(next_rand() % 3)};
    obuf m = {0};
    rewrite(SM, data, data + len, &m, &e);
    diff(SM, m.p ? m.p : (const uint8_t *)"", m.n, name);
    free(m.p);
  }
}

static void run_file(const uint8_t *data, size_t len, const char *name, int mutations) {
  const ProtobufCMessageDescriptor *SM = &tensorflow__saved_model__descriptor;
  fpd_result r = diff(SM, data, len, name);
  CHECK(r.fast_ok && r.ref_ok); /* real files take the fast path */
  size_t cap = len + 4096;
  uint8_t *buf = malloc(cap);
  if (!buf) return;
  for (int i = 0; i < mutations; i++) {
    size_t n = mutate(data, len, buf, cap);
    diff(SM, buf, n, name);
  }
  free(buf);
  run_structured(data, len, name, mutations / 6);
}

static size_t n_files;

static void walk(const char *dir, int mutations) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *p = sm__path_join(dir, e->d_name);
    if (!p) continue;
    struct stat st;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      walk(p, mutations);
    } else if (strcmp(e->d_name, "saved_model.pb") == 0) {
      char *buf = NULL;
      size_t len = 0;
      sm_status *s = sm__file_read_all(p, &buf, &len);
      if (!s) {
        run_file((const uint8_t *)buf, len, p, mutations);
        n_files++;
      }
      sm_status_free(s);
      free(buf);
    } else if (strcmp(e->d_name, "saved_model.pbtxt") == 0) {
      /* text fixtures (the malformed ones) go in as the binary they encode */
      char *text = NULL;
      size_t len = 0;
      sm_status *s = sm__file_read_all(p, &text, &len);
      ProtobufCMessage *m = NULL;
      if (!s) s = sm_pbtxt_parse(&tensorflow__saved_model__descriptor, text, len, p, &m);
      if (!s) {
        size_t n = protobuf_c_message_get_packed_size(m);
        uint8_t *bin = malloc(n ? n : 1);
        if (bin) {
          protobuf_c_message_pack(m, bin);
          run_file(bin, n, p, mutations);
          n_files++;
        }
        free(bin);
        protobuf_c_message_free_unpacked(m, NULL);
      }
      sm_status_free(s);
      free(text);
    }
    free(p);
  }
  closedir(d);
}

/* ---- a large input: the parallel decode on its own (no deferral settings) ---- */

static void put_field(obuf *o, uint8_t tag, const uint8_t *p, size_t n) {
  put(o, &tag, 1);
  put_varint(o, n);
  put(o, p, n);
}

/* A message field: tag, length, the message packed. */
static void put_message(obuf *o, uint8_t tag, const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(n ? n : 1);
  if (!b) return;
  protobuf_c_message_pack(m, b);
  put_field(o, tag, b, n);
  free(b);
}

/* A SavedModel of well over 256 KiB (where sm__pb_decode_fast uses several threads): a Keras
 * export's graph with its nodes repeated until the GraphDef is ~1.5 MB, its function library
 * kept, and its object graph; the automatic decode must equal the single pass. */
static void test_large(void) {
  char *path = sm__path_join(SM_SOURCE_DIR, "tests/fixtures/zoo/keras_conv/model/saved_model.pb");
  char *buf = NULL;
  size_t len = 0;
  sm_status *s = path ? sm__file_read_all(path, &buf, &len) : NULL;
  CHECK_OK(s);
  Tensorflow__SavedModel *sm = NULL;
  if (!s) CHECK_OK(sm_saved_model_parse((const uint8_t *)buf, len, path, &sm));
  if (sm && sm->n_meta_graphs > 0 && sm->meta_graphs[0]->graph_def) {
    const Tensorflow__MetaGraphDef *mg = sm->meta_graphs[0];
    const Tensorflow__GraphDef *g = mg->graph_def;
    obuf gd = {0};
    for (size_t round = 0; gd.n < ((size_t)1536 << 10); round++) {
      for (size_t i = 0; i < g->n_node; i++) put_message(&gd, 0x0a, &g->node[i]->base); /* GraphDef.node */
      if (round == 0 && g->library) put_message(&gd, 0x12, &g->library->base);    /* GraphDef.library */
    }
    obuf mgb = {0};
    put_field(&mgb, 0x12, gd.p, gd.n); /* MetaGraphDef.graph_def */
    if (mg->object_graph_def) put_message(&mgb, 0x3a, &mg->object_graph_def->base); /* MetaGraphDef.object_graph_def */
    obuf all = {0};
    put_field(&all, 0x12, mgb.p, mgb.n); /* SavedModel.meta_graphs */
    const ProtobufCMessageDescriptor *SM = &tensorflow__saved_model__descriptor;
    ProtobufCMessage *one = NULL, *par = NULL, *got = NULL;
    CHECK(sm__pb_decode_fast_opts(SM, all.p, all.n, &one, 1, 0, 0) == 0);
    CHECK(sm__pb_decode_fast_opts(SM, all.p, all.n, &par, 4, all.n / 32, 1) == 0);
    CHECK_OK(sm__pb_decode(SM, all.p, all.n, "large.pb", &got));
    if (one && par && got) {
      CHECK(fpd_same_packing(one, par));
      CHECK(fpd_same_packing(one, got));
      const Tensorflow__SavedModel *big = (const Tensorflow__SavedModel *)got;
      CHECK(big->n_meta_graphs == 1 && big->meta_graphs[0]->graph_def->n_node > 10 * g->n_node);
    }
    /* Sharing: the graph's nodes come several times, byte for byte, so their small attrs are
     * one message each in a one-thread decode with sharing, and never without. */
    ProtobufCMessage *sh = NULL;
    CHECK(sm__pb_decode_fast_opts(SM, all.p, all.n, &sh, 1, 0, 1) == 0);
    if (sh && one) {
      CHECK(fpd_same_packing(one, sh));
      const Tensorflow__GraphDef *a = ((const Tensorflow__SavedModel *)sh)->meta_graphs[0]->graph_def,
                                 *b = ((const Tensorflow__SavedModel *)one)->meta_graphs[0]->graph_def;
      size_t shared = 0, apart = 0;
      for (size_t i = 0; i + g->n_node < a->n_node; i++)
        for (size_t k = 0; k < a->node[i]->n_attr; k++) {
          shared += a->node[i]->attr[k] == a->node[i + g->n_node]->attr[k];
          apart += b->node[i]->attr[k] == b->node[i + g->n_node]->attr[k];
        }
      printf("large input: %zu attrs shared with the next copy of their node\n", shared);
      CHECK(shared > a->n_node / 2);
      CHECK(apart == 0);
    }
    sm__pb_arena_free(sh);
    /* Twice more: the second parse reuses the first one's blocks, large ones included. */
    for (int i = 0; i < 2; i++) {
      ProtobufCMessage *again = NULL;
      CHECK(sm__pb_decode_fast(SM, all.p, all.n, &again) == 0);
      if (again && one) CHECK(fpd_same_packing(one, again));
      sm__pb_arena_free(again);
    }
    printf("large input: %zu bytes, %zu nodes\n", all.n,
           got ? ((const Tensorflow__SavedModel *)got)->meta_graphs[0]->graph_def->n_node : (size_t)0);
    sm__pb_arena_free(one);
    sm__pb_arena_free(par);
    sm__pb_arena_free(got);
    free(gd.p);
    free(mgb.p);
    free(all.p);
  }
  sm_saved_model_free(sm);
  free(buf);
  free(path);
}

int main(void) {
  test_cases();
  test_large();
  /* SM_PB_DECODE_MUTATIONS=N: more mutations per file, for a longer run by hand */
  const char *env = getenv("SM_PB_DECODE_MUTATIONS");
  int per_file = env && atoi(env) > 0 ? atoi(env) : 150;
  char *fx = sm__path_join(SM_SOURCE_DIR, "tests/fixtures");
  walk(fx, per_file);
  free(fx);
  char *shared = sm__path_join(SM_SHARED_DIR, "fixtures/tf-serving");
  if (shared && sm__is_dir(shared))
    walk(shared, per_file / 3);
  else
    printf("note: %s absent, TF Serving fixtures not compared\n", shared ? shared : "shared dir");
  free(shared);
  printf("%zu files, %zu inputs: %zu decoded by the fast path, %zu accepted by the old path\n", n_files, n_inputs,
         n_fast, n_ref_ok);
  CHECK(n_files >= 20);
  CHECK(n_fast > n_inputs / 5);
  TEST_MAIN_END();
}

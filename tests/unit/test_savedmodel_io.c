/* test_savedmodel_io.c - reading, writing and tag matching of saved_model.pb / .pbtxt against the
 * real TensorFlow-written TF Serving fixtures, and hostile binary input (truncation, bit flips,
 * deep nesting, absurd lengths) that must give errors, never crashes. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "fingerprint.pb-c.h"
#include "savedmodel/format.h"
#include "savedmodel/pbtxt.h"
#include "test.h"

#define FIX SM_SHARED_DIR "/fixtures/tf-serving"
#define TMP SM_BINARY_DIR "/test_savedmodel_io.tmp"

/* ---- expected contents, from fixtures/tf-serving/README.md ------------------------------------ */

#define SIGS_CPU "serving_default", "regress_x_to_y", "regress_x_to_y2", "regress_x2_to_y3", "classify_x_to_y"
#define SIGS_SIX SIGS_CPU, "classify_x2_to_y3"

typedef struct expected {
  const char *dir; /* relative to FIX */
  const char *sigs[8];
} expected;

static const expected kModels[] = {
    {"saved_model_half_plus_two_cpu/00000123", {SIGS_CPU}},
    {"saved_model_half_plus_two_mlmd/00000123", {SIGS_CPU}},
    {"saved_model_half_plus_two_gpu_trt/00000123", {SIGS_CPU}},
    {"saved_model_half_plus_two_mkl/00000123", {SIGS_CPU}},
    {"saved_model_half_plus_two_cpu_with_saved_model_config/00000123", {SIGS_SIX}},
    {"saved_model_half_plus_two_cpu_with_empty_saved_model_config/00000123", {SIGS_SIX}},
    {"saved_model_half_plus_two_2_versions/00000123", {SIGS_SIX}},
    {"saved_model_half_plus_two_2_versions/00000124", {SIGS_SIX}},
    {"saved_model_half_plus_two_gpu/00000123", {SIGS_SIX}},
    {"saved_model_half_plus_three/00000123", {"serving_default", "tensorflow/serving/regress"}},
    {"saved_model_counter/00000123", {"get_counter", "incr_counter", "incr_counter_by", "reset_counter"}},
    {"saved_model_half_plus_two_tf2_cpu/00000123", {SIGS_SIX, "__saved_model_init_op"}},
    {"matrix_half_plus_two/1", {"serving_default"}},
};
#define NMODELS (sizeof kModels / sizeof kModels[0])

static char *fix_path(const char *rel) {
  return sm__path_join(FIX, rel);
}

static uint8_t *read_bytes(const char *path, size_t *len) {
  char *buf = NULL;
  sm_status *s = sm__file_read_all(path, &buf, len);
  if (s) {
    fprintf(stderr, "%s\n", sm_status_message(s));
    sm_status_free(s);
    return NULL;
  }
  return (uint8_t *)buf;
}

static uint8_t *pack(const Tensorflow__SavedModel *sm, size_t *len) {
  *len = protobuf_c_message_get_packed_size(&sm->base);
  uint8_t *b = malloc(*len ? *len : 1);
  if (b) protobuf_c_message_pack(&sm->base, b);
  return b;
}

static int has_signature(const Tensorflow__MetaGraphDef *mg, const char *key) {
  for (size_t i = 0; i < mg->n_signature_def; i++)
    if (strcmp(mg->signature_def[i]->key, key) == 0) return 1;
  return 0;
}

static void clear_tmp(void) {
  DIR *d = opendir(TMP);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *p = sm__path_join(TMP, e->d_name);
    if (p) unlink(p);
    free(p);
  }
  closedir(d);
}

/* ---- the fixtures ------------------------------------------------------------------------------ */

static void test_fixtures(void) {
  for (size_t i = 0; i < NMODELS; i++) {
    char *dir = fix_path(kModels[i].dir);
    Tensorflow__SavedModel *sm = NULL;
    sm_status *s = sm_saved_model_read(dir, &sm);
    if (s) {
      fprintf(stderr, "%s: %s\n", kModels[i].dir, sm_status_message(s));
      sm_status_free(s);
      sm_test_failures++;
      free(dir);
      continue;
    }
    CHECK_EQ_INT(sm->saved_model_schema_version, 1);
    CHECK_EQ_INT(sm->n_meta_graphs, 1);
    if (sm->n_meta_graphs == 1) {
      const Tensorflow__MetaGraphDef *mg = sm->meta_graphs[0];
      CHECK(mg->meta_info_def != NULL);
      if (mg->meta_info_def) {
        CHECK_EQ_INT(mg->meta_info_def->n_tags, 1);
        if (mg->meta_info_def->n_tags == 1) CHECK_EQ_STR(mg->meta_info_def->tags[0], "serve");
      }
      size_t n = 0;
      for (; n < 8 && kModels[i].sigs[n]; n++) {
        if (!has_signature(mg, kModels[i].sigs[n])) {
          fprintf(stderr, "%s: no signature %s\n", kModels[i].dir, kModels[i].sigs[n]);
          sm_test_failures++;
        }
      }
      if (mg->n_signature_def != n) {
        fprintf(stderr, "%s: %zu signatures, expected %zu\n", kModels[i].dir, mg->n_signature_def, n);
        sm_test_failures++;
      }
      const char *serve[] = {"serve"};
      const Tensorflow__MetaGraphDef *found = NULL;
      CHECK_OK(sm_saved_model_find_meta_graph(sm, serve, 1, &found));
      CHECK(found == mg);
    }
    sm_saved_model_free(sm);
    free(dir);
  }

  /* Every NNN/ version directory with a saved_model.pb is one of the expected models. */
  DIR *d = opendir(FIX);
  CHECK(d != NULL);
  size_t seen = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.' || e->d_name[0] == '_') continue;
    char *model = fix_path(e->d_name);
    DIR *vd = model ? opendir(model) : NULL;
    struct dirent *v;
    while (vd && (v = readdir(vd))) {
      if (strspn(v->d_name, "0123456789") != strlen(v->d_name) || !v->d_name[0]) continue;
      char rel[512];
      snprintf(rel, sizeof rel, "%s/%s", e->d_name, v->d_name);
      char *dir = fix_path(rel);
      char *pb = sm__path_join(dir, "saved_model.pb");
      if (sm__path_exists(pb)) {
        int known = 0;
        for (size_t i = 0; i < NMODELS; i++) known |= strcmp(kModels[i].dir, rel) == 0;
        if (!known) {
          fprintf(stderr, "fixture %s is not in the expected table\n", rel);
          sm_test_failures++;
        }
        seen++;
      }
      free(pb);
      free(dir);
    }
    if (vd) closedir(vd);
    free(model);
  }
  if (d) closedir(d);
  CHECK_EQ_INT(seen, NMODELS);
}

static void test_not_a_saved_model(void) {
  Tensorflow__SavedModel *sm = NULL;
  char *p = fix_path("bad_half_plus_two/00000123");
  CHECK_ERR(sm_saved_model_read(p, &sm), "not a SavedModel: ");
  CHECK_ERR(sm_saved_model_read(p, &sm), "contains neither saved_model.pb nor saved_model.pbtxt");
  CHECK_ERR(sm_saved_model_read(p, &sm), "export.meta");
  CHECK_ERR(sm_saved_model_read(p, &sm), "bad_half_plus_two/00000123");
  sm_status *s = sm_saved_model_read(p, &sm);
  CHECK_EQ_INT(sm_status_code(s), SM_NOT_FOUND);
  sm_status_free(s);
  CHECK(sm == NULL);
  free(p);

  p = fix_path("session_bundle_half_plus_two/00000123");
  CHECK_ERR(sm_saved_model_read(p, &sm), "legacy SessionBundle");
  free(p);

  p = fix_path("tf_text_regression/01");
  CHECK_ERR(sm_saved_model_read(p, &sm), "contains neither saved_model.pb nor saved_model.pbtxt");
  CHECK_ERR(sm_saved_model_read(p, &sm), "saved_model.pb is missing");
  CHECK_ERR(sm_saved_model_read(p, &sm), "variables/");
  free(p);

  p = fix_path("no_such_model/1");
  CHECK_ERR(sm_saved_model_read(p, &sm), "does not exist");
  free(p);

  /* A model base path instead of a version directory. */
  p = fix_path("saved_model_half_plus_two_2_versions");
  CHECK_ERR(sm_saved_model_read(p, &sm), "00000124");
  free(p);

  /* The chunked format. */
  clear_tmp();
  CHECK_OK(sm__file_write_atomic(TMP "/saved_model.cpb", "x", 1));
  CHECK_ERR(sm_saved_model_read(TMP, &sm), "chunked");
  clear_tmp();
}

/* ---- round trips -------------------------------------------------------------------------------- */

static void test_round_trip(void) {
  for (size_t i = 0; i < NMODELS; i++) {
    char *dir = fix_path(kModels[i].dir);
    char *pb = sm__path_join(dir, "saved_model.pb");
    size_t len;
    uint8_t *orig = read_bytes(pb, &len);
    CHECK(orig != NULL);
    Tensorflow__SavedModel *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(sm_saved_model_parse(orig, len, pb, &a));
    if (a) {
      size_t l1, l2;
      uint8_t *b1 = pack(a, &l1);
      CHECK_OK(sm_saved_model_parse(b1, l1, "packed once", &b));
      if (b) {
        uint8_t *b2 = pack(b, &l2);
        CHECK_EQ_INT(l1, l2);
        CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0);
        free(b2);
      }
      /* Through the file API too. */
      clear_tmp();
      CHECK_OK(sm_saved_model_write(a, TMP, 0));
      CHECK_OK(sm_saved_model_read(TMP, &c));
      if (c) {
        uint8_t *b3 = pack(c, &l2);
        CHECK(l1 == l2 && memcmp(b1, b3, l1) == 0);
        free(b3);
      }
      free(b1);
    }
    sm_saved_model_free(a);
    sm_saved_model_free(b);
    sm_saved_model_free(c);
    free(orig);
    free(pb);
    free(dir);
  }
  clear_tmp();
}

static void test_text_round_trip(void) {
  const char *models[] = {"matrix_half_plus_two/1", "saved_model_half_plus_two_tf2_cpu/00000123"};
  for (size_t i = 0; i < 2; i++) {
    char *dir = fix_path(models[i]);
    Tensorflow__SavedModel *a = NULL, *b = NULL;
    CHECK_OK(sm_saved_model_read(dir, &a));
    clear_tmp();
    if (a) CHECK_OK(sm_saved_model_write(a, TMP, 1));
    CHECK(sm__path_exists(TMP "/saved_model.pbtxt"));
    CHECK(!sm__path_exists(TMP "/saved_model.pb"));
    CHECK_OK(sm_saved_model_read(TMP, &b));
    if (a && b) {
      /* Text is canonical (map entries sorted by key), binary keeps the file's map order, so
       * compare sizes in binary and bytes in text. */
      size_t la, lb;
      free(pack(a, &la));
      free(pack(b, &lb));
      CHECK_EQ_INT(la, lb);
      char *ta = NULL, *tb = NULL;
      size_t lta = 0, ltb = 0;
      CHECK_OK(sm_pbtxt_print(&a->base, &ta, &lta));
      CHECK_OK(sm_pbtxt_print(&b->base, &tb, &ltb));
      CHECK(ta && tb && lta == ltb && memcmp(ta, tb, lta) == 0);
      free(ta);
      free(tb);
    }
    sm_saved_model_free(a);
    sm_saved_model_free(b);
    free(dir);
  }
  /* .pb wins over .pbtxt. */
  Tensorflow__SavedModel *m = NULL, *r = NULL;
  char *dir = fix_path("saved_model_counter/00000123");
  CHECK_OK(sm_saved_model_read(dir, &m));
  free(dir);
  if (m) CHECK_OK(sm_saved_model_write(m, TMP, 0)); /* the .pbtxt of tf2_cpu is still there */
  CHECK_OK(sm_saved_model_read(TMP, &r));
  if (r) CHECK(has_signature(r->meta_graphs[0], "get_counter"));
  sm_saved_model_free(m);
  sm_saved_model_free(r);
  clear_tmp();
}

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    p[n++] = c | (v ? 0x80 : 0);
  } while (v);
  return n;
}

static const uint8_t *find_bytes(const uint8_t *hay, size_t n, const void *needle, size_t m) {
  for (size_t i = 0; i + m <= n; i++)
    if (memcmp(hay + i, needle, m) == 0) return hay + i;
  return NULL;
}

static void test_unknown_fields(void) {
  char *dir = fix_path("saved_model_half_plus_two_cpu/00000123");
  Tensorflow__SavedModel *sm = NULL;
  CHECK_OK(sm_saved_model_read(dir, &sm));
  free(dir);
  if (!sm) return;
  /* MetaGraphDef bytes + unknown field 99 (varint 42), wrapped in a SavedModel + unknown field 15. */
  Tensorflow__MetaGraphDef *mg = sm->meta_graphs[0];
  size_t mlen = protobuf_c_message_get_packed_size(&mg->base);
  static const uint8_t inner_unknown[] = {0x98, 0x06, 0x2a};              /* field 99, varint 42 */
  static const uint8_t top_unknown[] = {0x7a, 0x05, 'h', 'e', 'l', 'l', 'o'}; /* field 15, "hello" */
  uint8_t *buf = malloc(mlen + 64);
  size_t n = 0;
  buf[n++] = 0x08; /* saved_model_schema_version = 1 */
  buf[n++] = 0x01;
  buf[n++] = 0x12; /* meta_graphs */
  n += put_varint(buf + n, mlen + sizeof inner_unknown);
  protobuf_c_message_pack(&mg->base, buf + n);
  n += mlen;
  memcpy(buf + n, inner_unknown, sizeof inner_unknown);
  n += sizeof inner_unknown;
  memcpy(buf + n, top_unknown, sizeof top_unknown);
  n += sizeof top_unknown;
  sm_saved_model_free(sm);
  sm = NULL;

  CHECK_OK(sm_saved_model_parse(buf, n, "crafted", &sm));
  if (sm) {
    CHECK_EQ_INT(sm->base.n_unknown_fields, 1);
    CHECK_EQ_INT(sm->meta_graphs[0]->base.n_unknown_fields, 1);
    clear_tmp();
    CHECK_OK(sm_saved_model_write(sm, TMP, 0));
    size_t wlen;
    uint8_t *w = read_bytes(TMP "/saved_model.pb", &wlen);
    CHECK(w && find_bytes(w, wlen, inner_unknown, sizeof inner_unknown));
    CHECK(w && find_bytes(w, wlen, top_unknown, sizeof top_unknown));
    CHECK_EQ_INT(wlen, n);
    free(w);
    sm_saved_model_free(sm);
  }
  free(buf);
  clear_tmp();
}

/* ---- tag matching ------------------------------------------------------------------------------- */

static void test_find_meta_graph(void) {
  char *dir = fix_path("saved_model_half_plus_two_cpu/00000123");
  Tensorflow__SavedModel *sm = NULL;
  CHECK_OK(sm_saved_model_read(dir, &sm));
  free(dir);
  if (!sm) return;
  const Tensorflow__MetaGraphDef *mg = NULL;
  const char *serve2[] = {"serve", "serve"};
  CHECK_OK(sm_saved_model_find_meta_graph(sm, serve2, 2, &mg));
  CHECK(mg == sm->meta_graphs[0]);
  const char *sg[] = {"serve", "gpu"};
  CHECK_ERR(sm_saved_model_find_meta_graph(sm, sg, 2, &mg),
            "Could not find meta graph def matching supplied tags: { serve gpu }. To inspect available tag-sets in "
            "the SavedModel, please use the SavedModel CLI: `saved_model_cli`");
  CHECK_ERR(sm_saved_model_find_meta_graph(sm, sg, 2, &mg), "Available tag-sets: { serve }");
  CHECK(mg == NULL);
  sm_status *s = sm_saved_model_find_meta_graph(sm, sg, 2, &mg);
  CHECK_EQ_INT(sm_status_code(s), SM_NOT_FOUND);
  sm_status_free(s);
  CHECK_ERR(sm_saved_model_find_meta_graph(sm, NULL, 0, &mg), "supplied tags: {  }");

  /* Several MetaGraphs: {serve}, {serve, gpu}, {train}. */
  Tensorflow__MetaGraphDef *orig = sm->meta_graphs[0];
  Tensorflow__MetaGraphDef m2 = TENSORFLOW__META_GRAPH_DEF__INIT, m3 = TENSORFLOW__META_GRAPH_DEF__INIT;
  Tensorflow__MetaGraphDef__MetaInfoDef i2 = TENSORFLOW__META_GRAPH_DEF__META_INFO_DEF__INIT,
                                        i3 = TENSORFLOW__META_GRAPH_DEF__META_INFO_DEF__INIT;
  char *t2[] = {"serve", "gpu"}, *t3[] = {"train"};
  i2.tags = t2;
  i2.n_tags = 2;
  i3.tags = t3;
  i3.n_tags = 1;
  m2.meta_info_def = &i2;
  m3.meta_info_def = &i3;
  Tensorflow__MetaGraphDef *list[] = {orig, &m2, &m3};
  Tensorflow__SavedModel multi = TENSORFLOW__SAVED_MODEL__INIT;
  multi.meta_graphs = list;
  multi.n_meta_graphs = 3;
  const char *gs[] = {"gpu", "serve"}, *tr[] = {"train"}, *tpu[] = {"serve", "tpu"};
  CHECK_OK(sm_saved_model_find_meta_graph(&multi, gs, 2, &mg));
  CHECK(mg == &m2);
  CHECK_OK(sm_saved_model_find_meta_graph(&multi, tr, 1, &mg));
  CHECK(mg == &m3);
  CHECK_ERR(sm_saved_model_find_meta_graph(&multi, tpu, 2, &mg),
            "Available tag-sets: { serve }, { serve gpu }, { train }");
  Tensorflow__SavedModel empty = TENSORFLOW__SAVED_MODEL__INIT;
  CHECK_ERR(sm_saved_model_find_meta_graph(&empty, tr, 1, &mg), "no MetaGraphs");
  sm_saved_model_free(sm);
}

/* ---- hostile input ------------------------------------------------------------------------------ */

/* Parse must fail cleanly or succeed; a success must be a usable message. */
static int try_parse(const uint8_t *p, size_t n) {
  Tensorflow__SavedModel *sm = NULL;
  sm_status *s = sm_saved_model_parse(p, n, "damaged", &sm);
  if (s) {
    CHECK(sm == NULL);
    CHECK(strstr(sm_status_message(s), "damaged") != NULL);
    sm_status_free(s);
    return 0;
  }
  size_t len;
  free(pack(sm, &len));
  sm_saved_model_free(sm);
  return 1;
}

static void test_damaged(void) {
  const char *files[] = {"saved_model_half_plus_two_cpu/00000123/saved_model.pb",
                         "saved_model_half_plus_two_tf2_cpu/00000123/saved_model.pb"};
  for (size_t f = 0; f < 2; f++) {
    char *path = fix_path(files[f]);
    size_t len;
    uint8_t *orig = read_bytes(path, &len);
    free(path);
    if (!orig) {
      sm_test_failures++;
      continue;
    }
    uint8_t *buf = malloc(len);
    /* Truncation: a proper prefix that cuts a sub-message must fail. */
    size_t step = f == 0 ? 5 : 29, failed = 0, tried = 0;
    for (size_t n = 0; n < len; n += step) {
      memcpy(buf, orig, n);
      failed += !try_parse(buf, n);
      tried++;
    }
    /* Only prefixes ending between top-level fields may parse: n = 0, and after field 1. */
    CHECK(failed + 2 >= tried);
    /* Bit flips and byte smashes. */
    uint32_t rng = 12345;
    /* Most flips still decode (a full unpack costs ~1 ms), so keep the count modest. */
    for (size_t k = 0; k < 400; k++) {
      memcpy(buf, orig, len);
      rng ^= rng << 13;
      rng ^= rng >> 17;
      rng ^= rng << 5;
      size_t pos = k % 2 ? (k * 7) % len : rng % len;
      if (k % 3 == 2)
        buf[pos] = (uint8_t)(rng >> 8);
      else
        buf[pos] ^= (uint8_t)(1u << (k % 8));
      try_parse(buf, len);
    }
    free(buf);
    free(orig);
  }
}

/* Writes `levels` nested length-delimited fields: field fields[i % nf] at level i, innermost empty.
 * prefix (already a valid chain of message tags) is handled by the caller. */
static uint8_t *nest(const uint8_t *tags, size_t ntags, size_t levels, size_t *out_len) {
  size_t *sizes = malloc((levels + 1) * sizeof *sizes);
  uint8_t tmp[10];
  sizes[levels] = 0; /* innermost content */
  for (size_t i = levels; i-- > 0;) sizes[i] = 1 + put_varint(tmp, sizes[i + 1]) + sizes[i + 1];
  uint8_t *buf = malloc(sizes[0] ? sizes[0] : 1);
  size_t n = 0;
  for (size_t i = 0; i < levels; i++) {
    buf[n++] = tags[i % ntags];
    n += put_varint(buf + n, sizes[i + 1]);
  }
  *out_len = n;
  free(sizes);
  return buf;
}

static void test_deep_nesting(void) {
  /* SavedModel.meta_graphs(2) > MetaGraphDef.graph_def(2) > GraphDef.node(1) > NodeDef.attr(5) >
   * entry.value(2) > AttrValue.tensor(8) > then TensorProto.variant_val(15) > Variant.tensors(3) ... */
  static const uint8_t head[] = {0x12, 0x12, 0x0a, 0x2a, 0x12, 0x42};
  static const uint8_t cycle[] = {0x7a, 0x1a};
  size_t levels = 100000;
  uint8_t *tags = malloc(levels);
  for (size_t i = 0; i < levels; i++) tags[i] = i < sizeof head ? head[i] : cycle[(i - sizeof head) % 2];
  size_t len;
  uint8_t *buf = nest(tags, levels, levels, &len);
  Tensorflow__SavedModel *sm = NULL;
  CHECK_ERR(sm_saved_model_parse(buf, len, "deep.pb", &sm), "nested too deeply");
  CHECK_ERR(sm_saved_model_parse(buf, len, "deep.pb", &sm), "deep.pb: ");
  free(buf);
  /* Exactly at the limit parses; one more level does not (the SavedModel itself is level 0). */
  buf = nest(tags, SM_PB_MAX_DEPTH, SM_PB_MAX_DEPTH, &len);
  CHECK_OK(sm_saved_model_parse(buf, len, "limit.pb", &sm));
  sm_saved_model_free(sm);
  sm = NULL;
  free(buf);
  buf = nest(tags, SM_PB_MAX_DEPTH + 1, SM_PB_MAX_DEPTH + 1, &len);
  CHECK_ERR(sm_saved_model_parse(buf, len, "limit.pb", &sm), "nested too deeply");
  free(buf);
  free(tags);

  /* StructuredValue recursion inside the object graph: MetaGraphDef.object_graph_def(7) >
   * SavedObjectGraph.concrete_functions(2) > entry.value(2) > SavedConcreteFunction.output_signature(4)
   * > StructuredValue.list_value(51, a 2-byte tag) > ListValue.values(1) > ... */
  size_t n = 0;
  levels = 60000;
  size_t cap = levels * 8 + 64;
  buf = malloc(cap);
  /* Built inside-out: lengths first, as in nest() but with 2-byte tags. */
  size_t *sizes = malloc((levels + 5) * sizeof *sizes);
  uint8_t tmp[10];
  sizes[levels] = 0;
  for (size_t i = levels; i-- > 0;) {
    size_t taglen = (i % 2 == 0) ? 2 : 1; /* even: list_value (0x9a 0x03), odd: values (0x0a) */
    sizes[i] = taglen + put_varint(tmp, sizes[i + 1]) + sizes[i + 1];
  }
  static const uint8_t outer[] = {0x12, 0x3a, 0x12, 0x12, 0x22}; /* meta_graphs, object_graph_def, map, value, output_signature */
  size_t osz[6];
  osz[5] = sizes[0];
  for (size_t i = 5; i-- > 0;) osz[i] = 1 + put_varint(tmp, osz[i + 1]) + osz[i + 1];
  for (size_t i = 0; i < 5; i++) {
    buf[n++] = outer[i];
    n += put_varint(buf + n, osz[i + 1]);
  }
  for (size_t i = 0; i < levels; i++) {
    if (i % 2 == 0) {
      buf[n++] = 0x9a;
      buf[n++] = 0x03;
    } else {
      buf[n++] = 0x0a;
    }
    n += put_varint(buf + n, sizes[i + 1]);
  }
  CHECK(n <= cap);
  CHECK_ERR(sm_saved_model_parse(buf, n, "structured.pb", &sm), "nested too deeply");
  free(sizes);
  free(buf);
}

static void test_absurd(void) {
  Tensorflow__SavedModel *sm = NULL;
  /* meta_graphs with a length of 2^40 and 3 bytes of payload. */
  uint8_t a[32] = {0x12};
  size_t n = 1 + put_varint(a + 1, (uint64_t)1 << 40);
  a[n++] = 0;
  a[n++] = 0;
  a[n++] = 0;
  CHECK_ERR(sm_saved_model_parse(a, n, "huge.pb", &sm), "length runs past the end");
  /* The largest varint length. */
  n = 1 + put_varint(a + 1, UINT64_MAX);
  CHECK_ERR(sm_saved_model_parse(a, n, "huge.pb", &sm), "length runs past the end");
  /* An 11-byte varint. */
  uint8_t v[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  CHECK_ERR(sm_saved_model_parse(v, sizeof v, "long.pb", &sm), "longer than 10 bytes");
  /* Truncated varint / tag / fixed value. */
  uint8_t t[] = {0x08, 0xff};
  CHECK_ERR(sm_saved_model_parse(t, sizeof t, "t.pb", &sm), "truncated varint");
  uint8_t tt[] = {0xff};
  CHECK_ERR(sm_saved_model_parse(tt, sizeof tt, "t.pb", &sm), "truncated field tag");
  uint8_t tf[] = {0x0d, 0x01, 0x02}; /* field 1 is an int64, not a fixed32 */
  CHECK_ERR(sm_saved_model_parse(tf, sizeof tf, "t.pb", &sm), "wrong wire type");
  uint8_t uf[] = {0x7d, 0x01, 0x02}; /* unknown field 15, fixed32, 2 of 4 bytes */
  CHECK_ERR(sm_saved_model_parse(uf, sizeof uf, "t.pb", &sm), "truncated fixed-size value");
  /* A message field sent as a varint; a group; field number 0; wire type 7. */
  uint8_t w[] = {0x10, 0x01};
  CHECK_ERR(sm_saved_model_parse(w, sizeof w, "w.pb", &sm), "in field tensorflow.SavedModel.meta_graphs (#2)");
  uint8_t g[] = {0x7b, 0x7c}; /* field 15 */
  CHECK_ERR(sm_saved_model_parse(g, sizeof g, "g.pb", &sm), "group");
  uint8_t z[] = {0x00, 0x00};
  CHECK_ERR(sm_saved_model_parse(z, sizeof z, "z.pb", &sm), "invalid field number");
  uint8_t w7[] = {0x7f};
  CHECK_ERR(sm_saved_model_parse(w7, sizeof w7, "w7.pb", &sm), "invalid wire type");
  /* A packed repeated fixed field whose length is not a multiple of the element size:
   * meta_graphs { graph_def { node { attr { value { tensor { float_val: 3 bytes } } } } } } */
  uint8_t pk[] = {0x12, 0x0f, 0x12, 0x0d, 0x0a, 0x0b, 0x2a, 0x09, 0x12,
                  0x07, 0x42, 0x05, 0x2a, 0x03, 0x00, 0x00, 0x00};
  CHECK_ERR(sm_saved_model_parse(pk, sizeof pk, "pk.pb", &sm), "packed fixed-size values");
  /* 8 MB of empty MetaGraphDefs ("12 00" repeated) would decode to ~0.5 GB of structs. */
  size_t big = (size_t)8 << 20;
  uint8_t *tiny = malloc(big);
  for (size_t i = 0; i < big; i += 2) {
    tiny[i] = 0x12;
    tiny[i + 1] = 0x00;
  }
  sm_status *s = sm_saved_model_parse(tiny, big, "tiny.pb", &sm);
  CHECK(s && strstr(sm_status_message(s), "tiny.pb: decoding would need about"));
  CHECK_EQ_INT(sm_status_code(s), SM_OUT_OF_RANGE);
  sm_status_free(s);
  CHECK(sm == NULL);
  /* A modest number of them is fine. */
  CHECK_OK(sm_saved_model_parse(tiny, 2000, "tiny.pb", &sm));
  if (sm) CHECK_EQ_INT(sm->n_meta_graphs, 1000);
  sm_saved_model_free(sm);
  sm = NULL;
  free(tiny);
  /* proto3 strings must be UTF-8: meta_graphs { meta_info_def { tags: <bytes> } } */
  uint8_t u8[] = {0x12, 0x06, 0x0a, 0x04, 0x22, 0x02, 0xc3, 0xa9}; /* "é" */
  CHECK_OK(sm_saved_model_parse(u8, sizeof u8, "utf8.pb", &sm));
  if (sm) CHECK_EQ_STR(sm->meta_graphs[0]->meta_info_def->tags[0], "\xc3\xa9");
  sm_saved_model_free(sm);
  sm = NULL;
  const uint8_t bad_utf8[][2] = {{0xff, 0x41}, {0xc0, 0x80}, {0xed, 0xa0}, {0xc3, 0x41}, {0x41, 0xe2}};
  for (size_t i = 0; i < 5; i++) {
    u8[6] = bad_utf8[i][0];
    u8[7] = bad_utf8[i][1];
    CHECK_ERR(sm_saved_model_parse(u8, sizeof u8, "utf8.pb", &sm), "MetaInfoDef.tags (#4)): string is not valid UTF-8");
  }
  /* Bytes fields hold anything: meta_graphs { graph_def { node { attr { value { s: ff } } } } } */
  uint8_t by[] = {0x12, 0x0b, 0x12, 0x09, 0x0a, 0x07, 0x2a, 0x05, 0x12, 0x03, 0x12, 0x01, 0xff};
  CHECK_OK(sm_saved_model_parse(by, sizeof by, "bytes.pb", &sm));
  sm_saved_model_free(sm);
  sm = NULL;
  /* Empty input is an empty SavedModel (TensorFlow parses it too). */
  CHECK_OK(sm_saved_model_parse((const uint8_t *)"", 0, "empty.pb", &sm));
  if (sm) CHECK_EQ_INT(sm->n_meta_graphs, 0);
  sm_saved_model_free(sm);
  sm_saved_model_free(NULL);
  /* Writing into a missing directory. */
  Tensorflow__SavedModel e = TENSORFLOW__SAVED_MODEL__INIT;
  CHECK_ERR(sm_saved_model_write(&e, TMP "/no/such/dir", 0), "not an existing directory");
}

/* sm_pb_parse serves other files too: the TF2 fixture's fingerprint.pb. */
static void test_other_messages(void) {
  size_t len;
  uint8_t *b = read_bytes(FIX "/saved_model_half_plus_two_tf2_cpu/00000123/fingerprint.pb", &len);
  CHECK(b != NULL);
  if (!b) return;
  ProtobufCMessage *m = NULL;
  CHECK_OK(sm_pb_parse(&tensorflow__fingerprint_def__descriptor, b, len, "fingerprint.pb", &m));
  if (m) {
    const Tensorflow__FingerprintDef *fp = (const Tensorflow__FingerprintDef *)m;
    CHECK(fp->saved_model_checksum != 0);
    CHECK(fp->version != NULL && fp->version->producer == 1);
    CHECK_EQ_INT(m->n_unknown_fields, 0);
    protobuf_c_message_free_unpacked(m, NULL);
  }
  CHECK_ERR(sm_pb_parse(&tensorflow__fingerprint_def__descriptor, b, len - 1, "fingerprint.pb", &m),
            "fingerprint.pb: malformed protobuf");
  CHECK(m == NULL);
  free(b);
}

int main(void) {
  if (!sm__is_dir(FIX)) {
    printf("skipped: %s absent\n", FIX);
    return SM_TEST_SKIP;
  }
  if (mkdir(TMP, 0777) != 0 && errno != EEXIST) {
    perror(TMP);
    return 1;
  }
  test_fixtures();
  test_not_a_saved_model();
  test_round_trip();
  test_text_round_trip();
  test_unknown_fields();
  test_find_meta_graph();
  test_damaged();
  test_deep_nesting();
  test_absurd();
  test_other_messages();
  clear_tmp();
  rmdir(TMP);
  TEST_MAIN_END();
}

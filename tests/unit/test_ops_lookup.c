/* test_ops_lookup.c - hash tables: import, text-file initialization (TF's TextFileLineIterator
 * rules), find, size, errors; and the zoo's tf1_labels model end to end (restore, table init from
 * its asset, the classify signature against TF's golden outputs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/session.h"
#include "savedmodel/format.h"
#include "savedmodel/npy.h"
#include "test.h"

#define ZOO SM_SOURCE_DIR "/tests/fixtures/zoo"
#define ATTR_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define ATTR_S(k, v) "attr { key: \"" k "\" value { s: \"" v "\" } } "
#define ATTR_I(k, v) "attr { key: \"" k "\" value { i: " v " } } "
#define SHAPE_ANY "attr { key: \"shape\" value { shape { unknown_rank: true } } } "
#define PH(name, t) "node { name: \"" name "\" op: \"Placeholder\" " ATTR_T("dtype", t) SHAPE_ANY "}\n"
#define TABLE(name, shared, k, v) \
  "node { name: \"" name "\" op: \"HashTableV2\" " ATTR_S("shared_name", shared) ATTR_T("key_dtype", k) ATTR_T("value_dtype", v) "}\n"
#define TEXT_INIT(name, table, ki, vi, extra)                                                              \
  "node { name: \"" name "\" op: \"InitializeTableFromTextFileV2\" input: \"" table "\" input: \"file\" " \
  ATTR_I("key_index", ki) ATTR_I("value_index", vi) extra "}\n"
#define FIND(name, table, keys, dflt, kt, vt)                                                                    \
  "node { name: \"" name "\" op: \"LookupTableFindV2\" input: \"" table "\" input: \"" keys "\" input: \"" dflt \
  "\" " ATTR_T("Tin", kt) ATTR_T("Tout", vt) "}\n"

static sm_tensor *str_vec(int n, const char *const *v) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_STRING, 1, &d, &t)) abort();
  for (int i = 0; i < n; i++)
    if (sm_tensor_set_string(t, i, v[i], strlen(v[i]))) abort();
  return t;
}

static sm_tensor *str_scalar(const char *v) {
  sm_tensor *t;
  if (sm_tensor_new(SM_STRING, 0, NULL, &t) || sm_tensor_set_string(t, 0, v, strlen(v))) abort();
  return t;
}

static sm_tensor *i64_vec(int n, const int64_t *v) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_INT64, 1, &d, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}

static sm_tensor *i64_scalar(int64_t v) {
  sm_tensor *t;
  if (sm_tensor_new(SM_INT64, 0, NULL, &t)) abort();
  *(int64_t *)sm_tensor_data(t) = v;
  return t;
}

static int str_is(const sm_tensor *t, int64_t i, const char *want) {
  size_t len;
  const char *p = sm_tensor_string(t, i, &len);
  return p && len == strlen(want) && !memcmp(p, want, len);
}

static const int64_t *i64(const sm_tensor *t) { return sm_tensor_data(t); }

/* ---- import + find + size ------------------------------------------------------------------- */
static const char *import_graph =
    "graph_def {\n" TABLE("t", "t", "DT_STRING", "DT_INT64") PH("keys", "DT_STRING") PH("vals", "DT_INT64")
    PH("q", "DT_STRING") PH("dflt", "DT_INT64")
    "node { name: \"import\" op: \"LookupTableImportV2\" input: \"t\" input: \"keys\" input: \"vals\" "
    ATTR_T("Tin", "DT_STRING") ATTR_T("Tout", "DT_INT64") "}\n"
    "node { name: \"init\" op: \"InitializeTableV2\" input: \"t\" input: \"keys\" input: \"vals\" "
    ATTR_T("Tkey", "DT_STRING") ATTR_T("Tval", "DT_INT64") "}\n"
    FIND("find", "t", "q", "dflt", "DT_STRING", "DT_INT64")
    "node { name: \"size\" op: \"LookupTableSizeV2\" input: \"t\" }\n"
    TABLE("other", "", "DT_STRING", "DT_INT64")
    "node { name: \"size_other\" op: \"LookupTableSizeV2\" input: \"other\" }\n"
    "}\n";

static void test_import_find(void) {
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(import_graph, &s));
  if (!s) return;
  sm_tensor *q = str_vec(3, (const char *[]){"a", "z", "c"}), *dflt = i64_scalar(-1), *o = NULL;
  sm_tensor *qf[2] = {q, dflt};
  const char *qn[2] = {"q", "dflt"};
  sm_status *st = sm__session_run(s, qn, qf, 2, (const char *[]){"find"}, 1, NULL, 0, &o);
  CHECK(sm_status_code(st) == SM_FAILED_PRECONDITION && strstr(sm_status_message(st), "not initialized"));
  sm_status_free(st);
  sm_tensor *kv[2] = {str_vec(3, (const char *[]){"a", "b", "c"}), i64_vec(3, (int64_t[]){1, 2, 3})};
  CHECK_OK(sm__session_run(s, (const char *[]){"keys", "vals"}, kv, 2, NULL, 0, (const char *[]){"import"}, 1, NULL));
  CHECK_OK(sm__session_run(s, qn, qf, 2, (const char *[]){"find"}, 1, NULL, 0, &o));
  if (o) {
    CHECK(sm_tensor_dtype(o) == SM_INT64 && sm_tensor_num_elements(o) == 3);
    CHECK(i64(o)[0] == 1 && i64(o)[1] == -1 && i64(o)[2] == 3);
    sm_tensor_free(o);
  }
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, (const char *[]){"size"}, 1, NULL, 0, &o));
  if (o) CHECK(sm_tensor_rank(o) == 0 && i64(o)[0] == 3);
  sm_tensor_free(o);
  /* a second initializer run is a no-op (the table keeps its data) */
  sm_tensor_free(kv[1]);
  kv[1] = i64_vec(3, (int64_t[]){7, 8, 9});
  CHECK_OK(sm__session_run(s, (const char *[]){"keys", "vals"}, kv, 2, NULL, 0, (const char *[]){"init"}, 1, NULL));
  /* keys keep their shape */
  sm_tensor *q2;
  int64_t d2[2] = {2, 2};
  CHECK_OK(sm_tensor_new(SM_STRING, 2, d2, &q2));
  CHECK_OK(sm_tensor_set_string(q2, 0, "b", 1));
  CHECK_OK(sm_tensor_set_string(q2, 3, "a", 1));
  sm_tensor *qf2[2] = {q2, dflt};
  CHECK_OK(sm__session_run(s, qn, qf2, 2, (const char *[]){"find"}, 1, NULL, 0, &o));
  if (o) {
    CHECK(sm_tensor_rank(o) == 2 && sm_tensor_dims(o)[1] == 2);
    CHECK(i64(o)[0] == 2 && i64(o)[1] == -1 && i64(o)[2] == -1 && i64(o)[3] == 1);
    sm_tensor_free(o);
  }
  /* a default of the wrong shape */
  sm_tensor *bad = i64_vec(2, (int64_t[]){1, 2});
  sm_tensor *qf3[2] = {q, bad};
  CHECK_ERR(sm__session_run(s, qn, qf3, 2, (const char *[]){"find"}, 1, NULL, 0, &o), "default_value");
  sm_tensor_free(bad);
  /* an unshared table of its own */
  CHECK_OK(sm__session_run(s, NULL, NULL, 0, (const char *[]){"size_other"}, 1, NULL, 0, &o));
  if (o) CHECK(i64(o)[0] == 0);
  sm_tensor_free(o);
  sm_tensor_free(q2);
  sm_tensor_free(q);
  sm_tensor_free(dflt);
  sm_tensor_free(kv[0]);
  sm_tensor_free(kv[1]);
  sm__session_free(s);
}

/* ---- text files ----------------------------------------------------------------------------- */
static const char *text_graph =
    "graph_def {\n" PH("file", "DT_STRING") PH("q", "DT_STRING") PH("qi", "DT_INT64") PH("ds", "DT_STRING")
    PH("di", "DT_INT64")
    TABLE("words", "words", "DT_STRING", "DT_INT64") TEXT_INIT("init_words", "words", "-2", "-1", "")
    FIND("find_words", "words", "q", "di", "DT_STRING", "DT_INT64")
    TABLE("ids", "ids", "DT_INT64", "DT_STRING") TEXT_INIT("init_ids", "ids", "-1", "-2", "")
    FIND("find_ids", "ids", "qi", "ds", "DT_INT64", "DT_STRING")
    TABLE("short", "short", "DT_STRING", "DT_INT64") TEXT_INIT("init_short", "short", "-2", "-1", ATTR_I("vocab_size", "2"))
    FIND("find_short", "short", "q", "di", "DT_STRING", "DT_INT64")
    TABLE("long", "long", "DT_STRING", "DT_INT64") TEXT_INIT("init_long", "long", "-2", "-1", ATTR_I("vocab_size", "10"))
    TABLE("cols", "cols", "DT_INT64", "DT_STRING") TEXT_INIT("init_cols", "cols", "0", "2", ATTR_S("delimiter", ","))
    FIND("find_cols", "cols", "qi", "ds", "DT_INT64", "DT_STRING")
    TABLE("off", "off", "DT_STRING", "DT_INT64") TEXT_INIT("init_off", "off", "-2", "-1", ATTR_I("offset", "10"))
    FIND("find_off", "off", "q", "di", "DT_STRING", "DT_INT64")
    TABLE("bad_ln", "bad_ln", "DT_STRING", "DT_INT64") TEXT_INIT("init_bad_ln", "bad_ln", "-1", "-2", "")
    TABLE("nums", "nums", "DT_STRING", "DT_INT64") TEXT_INIT("init_nums", "nums", "-2", "0", "")
    TABLE("fl", "fl", "DT_STRING", "DT_FLOAT") TEXT_INIT("init_fl", "fl", "0", "1", ATTR_S("delimiter", " "))
    "}\n";

static char tmpdir[] = "/tmp/sm_test_lookup_XXXXXX";

static const char *write_tmp(const char *name, const char *content) {
  static char path[8][128];
  static int next;
  char *p = path[next++ % 8];
  snprintf(p, 128, "%s/%s", tmpdir, name);
  FILE *f = fopen(p, "wb");
  if (!f) abort();
  fputs(content, f);
  fclose(f);
  return p;
}

static sm_status *run_init(sm_session *s, const char *file, const char *target) {
  sm_tensor *f = str_scalar(file);
  sm_status *st = sm__session_run(s, (const char *[]){"file"}, &f, 1, NULL, 0, (const char *[]){target}, 1, NULL);
  sm_tensor_free(f);
  return st;
}

static void test_text_files(void) {
  if (!mkdtemp(tmpdir)) {
    CHECK(0);
    return;
  }
  sm_session *s;
  CHECK_OK(sm__session_from_pbtxt(text_graph, &s));
  if (!s) return;
  /* TF's StaticHashTableModule asset; a \r\n line ending and no final newline */
  const char *vocab = write_tmp("vocab.txt", "foo\nbar\r\nbaz\nwombat");
  CHECK_OK(run_init(s, vocab, "init_words"));
  sm_tensor *q = str_vec(4, (const char *[]){"foo", "wombat", "x", "bar"}), *di = i64_scalar(-1), *o = NULL;
  CHECK_OK(sm__session_run(s, (const char *[]){"q", "di"}, (sm_tensor *[]){q, di}, 2, (const char *[]){"find_words"}, 1,
                          NULL, 0, &o));
  if (o) CHECK(i64(o)[0] == 0 && i64(o)[1] == 3 && i64(o)[2] == -1 && i64(o)[3] == 1);
  sm_tensor_free(o);
  /* id -> line */
  CHECK_OK(run_init(s, vocab, "init_ids"));
  sm_tensor *qi = i64_vec(3, (int64_t[]){2, 7, 1}), *ds = str_scalar("UNK");
  CHECK_OK(sm__session_run(s, (const char *[]){"qi", "ds"}, (sm_tensor *[]){qi, ds}, 2, (const char *[]){"find_ids"}, 1,
                          NULL, 0, &o));
  if (o) CHECK(str_is(o, 0, "baz") && str_is(o, 1, "UNK") && str_is(o, 2, "bar"));
  sm_tensor_free(o);
  /* vocab_size reads only that many lines; more than the file has is an error */
  CHECK_OK(run_init(s, vocab, "init_short"));
  CHECK_OK(sm__session_run(s, (const char *[]){"q", "di"}, (sm_tensor *[]){q, di}, 2, (const char *[]){"find_short"}, 1,
                          NULL, 0, &o));
  if (o) CHECK(i64(o)[0] == 0 && i64(o)[1] == -1 && i64(o)[3] == 1);
  sm_tensor_free(o);
  CHECK_ERR(run_init(s, vocab, "init_long"), "invalid vocab_size");
  /* columns with a delimiter */
  const char *csv = write_tmp("cols.csv", "1,a,one\n2,b,two\n30,c,thirty,extra\n");
  CHECK_OK(run_init(s, csv, "init_cols"));
  sm_tensor_free(qi);
  qi = i64_vec(3, (int64_t[]){30, 2, 5});
  CHECK_OK(sm__session_run(s, (const char *[]){"qi", "ds"}, (sm_tensor *[]){qi, ds}, 2, (const char *[]){"find_cols"}, 1,
                          NULL, 0, &o));
  if (o) CHECK(str_is(o, 0, "thirty") && str_is(o, 1, "two") && str_is(o, 2, "UNK"));
  sm_tensor_free(o);
  /* line numbers start at offset */
  CHECK_OK(run_init(s, vocab, "init_off"));
  CHECK_OK(sm__session_run(s, (const char *[]){"q", "di"}, (sm_tensor *[]){q, di}, 2, (const char *[]){"find_off"}, 1,
                          NULL, 0, &o));
  if (o) CHECK(i64(o)[0] == 10 && i64(o)[1] == 13);
  sm_tensor_free(o);
  /* errors */
  CHECK_ERR(run_init(s, vocab, "init_bad_ln"), "line number requires table key dtype of int64");
  CHECK_ERR(run_init(s, write_tmp("empty_line.txt", "1\n\n2\n"), "init_nums"), "empty line");
  CHECK_ERR(run_init(s, write_tmp("nan.txt", "a\tb\n"), "init_nums"), "is not a valid int64");
  CHECK_ERR(run_init(s, write_tmp("few.txt", "a\n"), "init_fl"), "invalid number of columns");
  CHECK_ERR(run_init(s, write_tmp("badf.txt", "a 1.5x\n"), "init_fl"), "is not a valid float32");
  CHECK_ERR(run_init(s, "/nonexistent/vocab.txt", "init_nums"), "init_nums");
  CHECK_OK(run_init(s, write_tmp("fl.txt", "a 1.5\nb -2e3\n"), "init_fl"));
  sm_tensor_free(q);
  sm_tensor_free(di);
  sm_tensor_free(qi);
  sm_tensor_free(ds);
  sm__session_free(s);
  const char *names[] = {"vocab.txt", "cols.csv", "empty_line.txt", "nan.txt", "few.txt", "badf.txt", "fl.txt"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
    unlink(p);
  }
  rmdir(tmpdir);
}

/* ---- the zoo's tf1_labels: classify with a label table from an asset ------------------------ */
static void test_labels_model(void) {
  const char *dir = ZOO "/tf1_labels/model";
  if (access(ZOO "/tf1_labels/model/saved_model.pb", R_OK)) {
    fprintf(stderr, "zoo tf1_labels absent; skipping\n");
    return;
  }
  Tensorflow__SavedModel *sm;
  CHECK_OK(sm_saved_model_read(dir, &sm));
  if (!sm) return;
  const Tensorflow__MetaGraphDef *mg;
  sm_session *s = NULL;
  CHECK_OK(sm_saved_model_find_meta_graph(sm, (const char *[]){"serve"}, 1, &mg));
  if (mg) CHECK_OK(sm__session_new(mg, dir, 2, &s));
  const char *fetch[] = {"Softmax:0", "label_table_Lookup/LookupTableFindV2:0"};
  sm_status *prep = s ? sm__session_prepare(s, (const char *[]){"tf_example:0"}, 1, fetch, 2, NULL, 0) : NULL;
  if (prep && sm_status_code(prep) == SM_UNIMPLEMENTED) {
    /* an op of another family is not there yet */
    fprintf(stderr, "tf1_labels signature not runnable yet (%s); skipping it\n", sm_status_message(prep));
    sm_status_free(prep);
    sm__session_free(s);
    sm_saved_model_free(sm);
    return;
  }
  CHECK_OK(prep);
  if (s) {
    sm_tensor *prefix = str_scalar(ZOO "/tf1_labels/model/variables/variables");
    CHECK_OK(sm__session_run(s, (const char *[]){"save/Const:0"}, &prefix, 1, NULL, 0, (const char *[]){"save/restore_all"},
                            1, NULL));
    sm_tensor_free(prefix);
    sm_tensor *asset = str_scalar(ZOO "/tf1_labels/model/assets/labels.txt");
    CHECK_OK(sm__session_run(s, (const char *[]){"asset_path:0"}, &asset, 1, NULL, 0, (const char *[]){"init_all_tables_1"},
                            1, NULL));
    sm_tensor_free(asset);
    /* the golden inputs: two tf.Examples with x = 4 floats each */
    static const uint8_t ex0[] = {0x0a, 0x1b, 0x0a, 0x19, 0x0a, 0x01, 0x78, 0x12, 0x14, 0x12, 0x12, 0x0a, 0x10, 0x86, 0x4a,
                                  0xcd, 0xbf, 0xd1, 0x46, 0x83, 0x3d, 0x0d, 0xab, 0x3d, 0x3f, 0x35, 0x48, 0x1c, 0x3e};
    static const uint8_t ex1[] = {0x0a, 0x1b, 0x0a, 0x19, 0x0a, 0x01, 0x78, 0x12, 0x14, 0x12, 0x12, 0x0a, 0x10, 0x52, 0x1e,
                                  0x5d, 0x3f, 0x38, 0x70, 0x3a, 0x40, 0x15, 0x4a, 0xbd, 0xbf, 0x84, 0x0a, 0x72, 0x3f};
    sm_tensor *ex;
    int64_t two = 2;
    CHECK_OK(sm_tensor_new(SM_STRING, 1, &two, &ex));
    CHECK_OK(sm_tensor_set_string(ex, 0, ex0, sizeof ex0));
    CHECK_OK(sm_tensor_set_string(ex, 1, ex1, sizeof ex1));
    sm_tensor *o[2] = {0};
    CHECK_OK(sm__session_run(s, (const char *[]){"tf_example:0"}, &ex, 1, fetch, 2, NULL, 0, o));
    sm_tensor_free(ex);
    sm_tensor *g = NULL;
    CHECK_OK(sm_npy_read(ZOO "/tf1_labels/golden/outputs/serve__serving_default/outputs/scores.npy", &g));
    if (o[0] && g) {
      CHECK(sm_tensor_num_elements(o[0]) == 6);
      for (int i = 0; i < 6; i++) {
        float a = ((const float *)sm_tensor_data(o[0]))[i], b = ((const float *)sm_tensor_data(g))[i];
        CHECK(fabsf(a - b) <= 1e-5f * fabsf(b) + 1e-7f);
      }
    }
    if (o[1]) {
      CHECK(sm_tensor_rank(o[1]) == 2 && sm_tensor_dims(o[1])[0] == 2 && sm_tensor_dims(o[1])[1] == 3);
      static const char *labels[] = {"cat", "dog", "bird"};
      for (int i = 0; i < 6; i++) CHECK(str_is(o[1], i, labels[i % 3]));
    }
    sm_tensor_free(g);
    sm_tensor_free(o[0]);
    sm_tensor_free(o[1]);
  }
  sm__session_free(s);
  sm_saved_model_free(sm);
}

int main(void) {
  test_import_find();
  test_text_files();
  test_labels_model();
  TEST_MAIN_END();
}

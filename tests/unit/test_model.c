/* test_model.c - sm_model_load/run against TensorFlow-written SavedModels: the tf-serving fixtures
 * (../shared, skipped when absent) with their documented outputs, and every golden run of the zoo
 * (tests/fixtures/zoo/<model>/golden/outputs/<tags>__<sig>/), plus errors and concurrency, and
 * per-signature compilation (tests/fixtures/unrunnable_signature: one signature without kernels). */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "savedmodel/model.h"
#include "savedmodel/npy.h"
#include "base/file.h"
#include "runtime/kernel.h"
#include "ops/nn_internal.h"
#include "golden_io.h"
#include "test.h"

static const char *tags_serve[] = {"serve"};
static char fixdir[4096];

static int fixtures_present(void) {
  snprintf(fixdir, sizeof fixdir, "%s/fixtures/tf-serving", SM_SHARED_DIR);
  struct stat st;
  return stat(fixdir, &st) == 0;
}

static sm_status *load_fixture(const char *rel, sm_model **m) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", fixdir, rel);
  return sm_model_load(p, tags_serve, 1, NULL, m);
}

static sm_tensor *ftensor(int rank, const int64_t *dims, const float *v) {
  sm_tensor *t;
  if (sm_tensor_new(SM_FLOAT, rank, dims, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)sm_tensor_num_elements(t) * sizeof(float));
  return t;
}

static int hexval(char c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

/* A DT_STRING vector of serialized tf.Examples given in hex. */
static sm_tensor *examples(int n, const char *const *hex) {
  sm_tensor *t;
  int64_t d = n;
  if (sm_tensor_new(SM_STRING, 1, &d, &t)) abort();
  for (int i = 0; i < n; i++) {
    size_t len = strlen(hex[i]) / 2;
    char buf[256];
    for (size_t k = 0; k < len; k++) buf[k] = (char)(hexval(hex[i][2 * k]) << 4 | hexval(hex[i][2 * k + 1]));
    if (sm_tensor_set_string(t, i, buf, len)) abort();
  }
  return t;
}

#define EX0 "0a0f0a0d0a0178120812060a0400000000"
#define EX1 "0a0f0a0d0a0178120812060a040000803f"
#define EX2 "0a0f0a0d0a0178120812060a0400000040"
#define EX3 "0a0f0a0d0a0178120812060a0400004040"
#define EX_X2_ONLY "0a100a0e0a027832120812060a040000a040"

static int fvals_eq(const sm_tensor *t, int rank, const int64_t *dims, const float *want) {
  if (!t || sm_tensor_dtype(t) != SM_FLOAT || sm_tensor_rank(t) != rank) return 0;
  for (int i = 0; i < rank; i++)
    if (sm_tensor_dims(t)[i] != dims[i]) return 0;
  const float *v = sm_tensor_data(t);
  for (int64_t i = 0; i < sm_tensor_num_elements(t); i++)
    if (fabsf(v[i] - want[i]) > 1e-6f * (1 + fabsf(want[i]))) return 0;
  return 1;
}

/* run one-in one-out signature and compare */
static void run_check(sm_model *m, const char *sig, const char *in_alias, sm_tensor *in, const char *out_alias,
                      int rank, const int64_t *dims, const float *want) {
  sm_tensor *out = NULL;
  sm_status *s = sm_model_run(m, sig, &in_alias, &in, in ? 1 : 0, &out_alias, 1, &out);
  if (s) {
    fprintf(stderr, "run %s: %s\n", sig, sm_status_message(s));
    sm_status_free(s);
    sm_test_failures++;
    return;
  }
  if (!fvals_eq(out, rank, dims, want)) {
    fprintf(stderr, "run %s: unexpected output\n", sig);
    sm_test_failures++;
  }
  sm_tensor_free(out);
}

static void test_half_plus_two(const char *rel) {
  sm_model *m = NULL;
  CHECK_OK(load_fixture(rel, &m));
  if (!m) return;
  /* serving_default x=[[2],[3],[4]] -> [[3],[3.5],[4]] */
  int64_t d31[] = {3, 1};
  sm_tensor *x = ftensor(2, d31, (float[]){2, 3, 4});
  run_check(m, "serving_default", "x", x, "y", 2, d31, (float[]){3, 3.5f, 4});
  /* regress_x_to_y over four examples */
  sm_tensor *ex = examples(4, (const char *[]){EX0, EX1, EX2, EX3});
  int64_t d41[] = {4, 1}, d11[] = {1, 1};
  run_check(m, "regress_x_to_y", "inputs", ex, "outputs", 2, d41, (float[]){2, 2.5f, 3, 3.5f});
  sm_tensor *ex2 = examples(1, (const char *[]){EX2});
  run_check(m, "regress_x_to_y2", "inputs", ex2, "outputs", 2, d11, (float[]){4});
  run_check(m, "classify_x_to_y", "inputs", ex2, "scores", 2, d11, (float[]){3});
  sm_tensor *x2 = ftensor(2, d11, (float[]){2});
  run_check(m, "regress_x2_to_y3", "inputs", x2, "outputs", 2, d11, (float[]){4});
  /* the init op assigned the asset name to filename_tensor */
  sm_tensor *fn = NULL;
  const char *fetch = "filename_tensor:0";
  CHECK_OK(sm_model_session_run(m, NULL, NULL, 0, &fetch, 1, NULL, 0, &fn));
  if (fn) {
    size_t len;
    const char *s = sm_tensor_string(fn, 0, &len);
    CHECK(s && len == 7 && !memcmp(s, "foo.txt", 7));
    sm_tensor_free(fn);
  }
  /* a required feature missing */
  sm_tensor *bad = examples(1, (const char *[]){EX_X2_ONLY});
  sm_tensor *o = NULL;
  const char *ia = "inputs", *oa = "outputs";
  sm_status *st = sm_model_run(m, "regress_x_to_y", &ia, &bad, 1, &oa, 1, &o);
  CHECK(st != NULL);
  sm_status_free(st);
  sm_tensor_free(o);
  /* signature listing and infos */
  CHECK(sm_model_num_signatures(m) >= 5);
  CHECK(!strncmp(sm_model_signature_key(m, 0), "classify_x", 10));
  CHECK_EQ_STR(sm_model_signature_method(m, "regress_x_to_y"), "tensorflow/serving/regress");
  const sm_tensor_info *infos;
  int n;
  CHECK_OK(sm_model_signature_inputs(m, "serving_default", &infos, &n));
  CHECK_EQ_INT(n, 1);
  if (n == 1) {
    CHECK_EQ_STR(infos[0].alias, "x");
    CHECK_EQ_STR(infos[0].name, "x:0");
    CHECK_EQ_INT(infos[0].dtype, SM_FLOAT);
    CHECK_EQ_INT(infos[0].rank, 2);
    if (infos[0].rank == 2) CHECK(infos[0].dims[0] == -1 && infos[0].dims[1] == 1);
  }
  /* errors naming alias, expected, given */
  CHECK_ERR(sm_model_signature_inputs(m, "nope", &infos, &n), "serving_default");
  CHECK_ERR(sm_model_run(m, "nope", NULL, NULL, 0, NULL, 0, NULL), "signatures are:");
  const char *xa = "x", *ya = "y";
  int64_t d3[] = {3};
  sm_tensor *x1d = ftensor(1, d3, (float[]){1, 2, 3});
  CHECK_ERR(sm_model_run(m, "serving_default", &xa, &x1d, 1, &ya, 1, &o), "input 'x' expects shape [?,1], given [3]");
  CHECK_ERR(sm_model_run(m, "serving_default", &xa, &ex, 1, &ya, 1, &o), "expects dtype DT_FLOAT, given DT_STRING");
  CHECK_ERR(sm_model_run(m, "serving_default", NULL, NULL, 0, &ya, 1, &o), "missing input 'x'");
  const char *za = "z";
  CHECK_ERR(sm_model_run(m, "serving_default", &za, &x, 1, &ya, 1, &o), "no input 'z'");
  CHECK_ERR(sm_model_run(m, "serving_default", &xa, &x, 1, &za, 1, &o), "no output 'z'");
  /* all outputs, in alias order */
  CHECK_OK(sm_model_run(m, "serving_default", &xa, &x, 1, NULL, 1, &o));
  sm_tensor_free(o);
  sm_tensor_free(x1d);
  sm_tensor_free(bad);
  sm_tensor_free(x);
  sm_tensor_free(x2);
  sm_tensor_free(ex);
  sm_tensor_free(ex2);
  sm_model_free(m);
}

static void test_tf2(void) {
  sm_model *m = NULL;
  CHECK_OK(load_fixture("saved_model_half_plus_two_tf2_cpu/00000123", &m));
  if (!m) return;
  int64_t d1[] = {1}, d41[] = {4, 1}, d11[] = {1, 1};
  sm_tensor *x = ftensor(1, d1, (float[]){2});
  run_check(m, "serving_default", "x", x, "y", 1, d1, (float[]){3});
  run_check(m, "regress_x2_to_y3", "inputs", x, "outputs", 1, d1, (float[]){4});
  sm_tensor *x5 = ftensor(1, d1, (float[]){5});
  run_check(m, "classify_x2_to_y3", "inputs", x5, "scores", 1, d1, (float[]){5.5f});
  sm_tensor *ex = examples(4, (const char *[]){EX0, EX1, EX2, EX3});
  run_check(m, "regress_x_to_y", "inputs", ex, "outputs", 2, d41, (float[]){2, 2.5f, 3, 3.5f});
  sm_tensor *ex2 = examples(1, (const char *[]){EX2});
  run_check(m, "classify_x_to_y", "inputs", ex2, "scores", 2, d11, (float[]){3});
  run_check(m, "regress_x_to_y2", "inputs", ex2, "outputs", 2, d11, (float[]){4});
  /* PlaceholderWithDefault: a session run without the feed gives the default */
  sm_tensor *o = NULL;
  const char *f = "StatefulPartitionedCall_5:0";
  CHECK_OK(sm_model_session_run(m, NULL, NULL, 0, &f, 1, NULL, 0, &o));
  CHECK(fvals_eq(o, 1, d1, (float[]){2}));
  sm_tensor_free(o);
  CHECK_EQ_INT(sm_model_num_signatures(m), 6); /* __saved_model_init_op is not listed */
  sm_tensor_free(x);
  sm_tensor_free(x5);
  sm_tensor_free(ex);
  sm_tensor_free(ex2);
  sm_model_free(m);
}

static void test_small_fixtures(void) {
  sm_model *m = NULL;
  CHECK_OK(load_fixture("matrix_half_plus_two/1", &m));
  if (m) {
    int64_t d[] = {1, 3, 3};
    sm_tensor *x = ftensor(3, d, (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9});
    run_check(m, "serving_default", "x", x, "y", 3, d, (float[]){2.5f, 3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f});
    sm_tensor_free(x);
    sm_model_free(m);
  }
  m = NULL;
  CHECK_OK(load_fixture("saved_model_half_plus_three/00000123", &m));
  if (m) {
    int64_t d11[] = {1, 1}, d21[] = {2, 1};
    sm_tensor *x = ftensor(2, d11, (float[]){2});
    run_check(m, "serving_default", "x", x, "y", 2, d11, (float[]){4});
    sm_tensor *x2 = ftensor(2, d21, (float[]){1, 5});
    run_check(m, "serving_default", "x", x2, "y", 2, d21, (float[]){3.5f, 5.5f});
    /* declared DT_FLOAT, really DT_STRING: the graph wins */
    sm_tensor *ex = examples(1, (const char *[]){EX2});
    run_check(m, "tensorflow/serving/regress", "inputs", ex, "outputs", 2, d11, (float[]){4});
    sm_tensor_free(x);
    sm_tensor_free(x2);
    sm_tensor_free(ex);
    sm_model_free(m);
  }
  m = NULL;
  CHECK_OK(load_fixture("saved_model_half_plus_two_mkl/00000123", &m));
  if (m) {
    int64_t d11[] = {1, 1}, dimg[] = {1, 10, 10, 1};
    float want[100];
    for (int i = 0; i < 100; i++) want[i] = 4;
    sm_tensor *x2 = ftensor(2, d11, (float[]){2});
    run_check(m, "regress_x2_to_y3", "inputs", x2, "outputs", 4, dimg, want);
    sm_tensor *ex = examples(1, (const char *[]){EX2});
    run_check(m, "regress_x_to_y2", "inputs", ex, "outputs", 4, dimg, want);
    sm_tensor_free(x2);
    sm_tensor_free(ex);
    sm_model_free(m);
  }
  /* not SavedModels, wrong tags */
  m = NULL;
  CHECK_ERR(load_fixture("bad_half_plus_two/00000123", &m), "");
  CHECK(m == NULL);
  char p[4200];
  snprintf(p, sizeof p, "%s/matrix_half_plus_two/1", fixdir);
  const char *bad_tags[] = {"serve", "gpu"};
  CHECK_ERR(sm_model_load(p, bad_tags, 2, NULL, &m), "serve");
  CHECK_ERR(sm_model_load("/nonexistent/dir", tags_serve, 1, NULL, &m), "");
}

typedef struct counter_arg {
  sm_model *m;
  int n, fails;
} counter_arg;

static void *counter_thread(void *p) {
  counter_arg *a = p;
  for (int i = 0; i < a->n; i++) {
    sm_tensor *o = NULL;
    const char *oa = "output";
    sm_status *s = sm_model_run(a->m, "incr_counter", NULL, NULL, 0, &oa, 1, &o);
    if (s) {
      if (!a->fails) fprintf(stderr, "incr_counter: %s\n", sm_status_message(s));
      a->fails++;
      sm_status_free(s);
    }
    sm_tensor_free(o);
  }
  return NULL;
}

static float run_counter(sm_model *m, const char *sig, const sm_tensor *delta) {
  sm_tensor *o = NULL;
  const char *oa = "output", *da = "delta";
  sm_tensor *in = (sm_tensor *)delta;
  sm_status *s = sm_model_run(m, sig, &da, &in, delta ? 1 : 0, &oa, 1, &o);
  if (s) {
    fprintf(stderr, "%s: %s\n", sig, sm_status_message(s));
    sm_status_free(s);
    sm_test_failures++;
    return NAN;
  }
  float v = NAN;
  if (sm_tensor_dtype(o) == SM_FLOAT && sm_tensor_rank(o) == 0) v = *(float *)sm_tensor_data(o);
  sm_tensor_free(o);
  return v;
}

static void test_counter(void) {
  sm_model *m = NULL;
  CHECK_OK(load_fixture("saved_model_counter/00000123", &m));
  if (!m) return;
  CHECK(run_counter(m, "get_counter", NULL) == 0);
  CHECK(run_counter(m, "incr_counter", NULL) == 1);
  CHECK(run_counter(m, "reset_counter", NULL) == 0);
  CHECK(run_counter(m, "incr_counter", NULL) == 1);
  sm_tensor *d = ftensor(0, NULL, (float[]){3});
  CHECK(run_counter(m, "incr_counter_by", d) == 4);
  sm_tensor_free(d);
  CHECK(run_counter(m, "reset_counter", NULL) == 0);
  pthread_t th[4];
  counter_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (counter_arg){m, 200, 0};
    pthread_create(&th[i], NULL, counter_thread, &a[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(a[i].fails, 0);
  }
  CHECK(run_counter(m, "get_counter", NULL) == 800);
  sm_model_free(m);
}

/* one model, four threads, different inputs: every result must be its own */
typedef struct hp_arg {
  sm_model *m;
  int id, fails;
} hp_arg;

static void *hp_thread(void *p) {
  hp_arg *a = p;
  for (int i = 0; i < 200; i++) {
    int64_t d[] = {2, 1};
    float base = (float)(a->id * 1000 + i);
    sm_tensor *x = ftensor(2, d, (float[]){base, base + 1});
    sm_tensor *o = NULL;
    const char *xa = "x", *ya = "y";
    sm_status *s = sm_model_run(a->m, "serving_default", &xa, &x, 1, &ya, 1, &o);
    if (s || !fvals_eq(o, 2, d, (float[]){0.5f * base + 2, 0.5f * (base + 1) + 2})) a->fails++;
    sm_status_free(s);
    sm_tensor_free(o);
    sm_tensor_free(x);
  }
  return NULL;
}

static void test_concurrency(void) {
  sm_model *m = NULL;
  char p[4200];
  snprintf(p, sizeof p, "%s/saved_model_half_plus_two_cpu/00000123", fixdir);
  sm_load_options opt = {.num_threads = 4};
  CHECK_OK(sm_model_load(p, tags_serve, 1, &opt, &m));
  if (!m) return;
  pthread_t th[4];
  hp_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (hp_arg){m, i, 0};
    pthread_create(&th[i], NULL, hp_thread, &a[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(a[i].fails, 0);
  }
  sm_model_free(m);
}

static void test_scan(void) {
  char p[4200];
  snprintf(p, sizeof p, "%s/saved_model_half_plus_two_tf2_cpu/00000123", fixdir);
  char **deny = NULL, **unsup = NULL;
  CHECK_OK(sm_model_scan(p, tags_serve, 1, &deny, &unsup));
  CHECK(deny && !deny[0]);
  if (unsup)
    for (char **u = unsup; *u; u++) fprintf(stderr, "scan: no kernel for %s\n", *u);
  sm_string_list_free(deny);
  sm_string_list_free(unsup);
  CHECK_ERR(sm_model_scan("/nonexistent", tags_serve, 1, &deny, &unsup), "");
}

/* ---- the zoo: golden inputs and outputs written by TensorFlow ------------------------------- */
static int values_match(const sm_tensor *got, const sm_tensor *want, char *why, size_t cap) {
  if (sm_tensor_dtype(got) != sm_tensor_dtype(want)) {
    snprintf(why, cap, "dtype %s, want %s", sm_dtype_name(sm_tensor_dtype(got)), sm_dtype_name(sm_tensor_dtype(want)));
    return 0;
  }
  char a[128], b[128];
  int shape_ok = sm_tensor_rank(got) == sm_tensor_rank(want);
  for (int i = 0; shape_ok && i < sm_tensor_rank(got); i++) shape_ok = sm_tensor_dims(got)[i] == sm_tensor_dims(want)[i];
  if (!shape_ok) {
    snprintf(why, cap, "shape %s, want %s", sm_shape_str(sm_tensor_rank(got), sm_tensor_dims(got), a, sizeof a),
             sm_shape_str(sm_tensor_rank(want), sm_tensor_dims(want), b, sizeof b));
    return 0;
  }
  int64_t n = sm_tensor_num_elements(want);
  int dt = sm_tensor_dtype(want);
  if (dt == SM_FLOAT || dt == SM_DOUBLE) {
    /* as tools/interop.py: 1e-5 relative with an absolute floor of 1e-6 of the tensor's scale, so
     * an element that cancels to near zero among large ones may differ by BLAS summation order */
    double scale = 0;
    for (int64_t i = 0; i < n; i++) {
      double w = dt == SM_FLOAT ? ((const float *)sm_tensor_data(want))[i] : ((const double *)sm_tensor_data(want))[i];
      if (isfinite(w) && fabs(w) > scale) scale = fabs(w);
    }
    for (int64_t i = 0; i < n; i++) {
      double g = dt == SM_FLOAT ? ((const float *)sm_tensor_data(got))[i] : ((const double *)sm_tensor_data(got))[i];
      double w = dt == SM_FLOAT ? ((const float *)sm_tensor_data(want))[i] : ((const double *)sm_tensor_data(want))[i];
      if (isnan(w) && isnan(g)) continue;
      if (!(fabs(g - w) <= 1e-5 * fmax(fabs(g), fabs(w)) + 1e-6 * scale + 1e-6)) {
        snprintf(why, cap, "element %lld is %.9g, want %.9g", (long long)i, g, w);
        return 0;
      }
    }
    return 1;
  }
  if (sm_tensor_equal(got, want)) return 1;
  snprintf(why, cap, "values differ");
  return 0;
}

/* Minimal reader for the generator's signature.json (json.dump, indent=1). */
typedef struct golden {
  char *tags[8];
  int ntags;
  char *sig;
  char *in_alias[64], *in_file[64];
  int nin;
  char *out_alias[64], *out_file[64];
  int nout;
} golden;

static char *quoted(const char *p) {
  const char *a = strchr(p, '"');
  if (!a) return NULL;
  const char *b = strchr(a + 1, '"');
  if (!b) return NULL;
  char *s = malloc((size_t)(b - a));
  memcpy(s, a + 1, (size_t)(b - a - 1));
  s[b - a - 1] = 0;
  return s;
}

static void golden_free(golden *g) {
  for (int i = 0; i < g->ntags; i++) free(g->tags[i]);
  for (int i = 0; i < g->nin; i++) free(g->in_alias[i]), free(g->in_file[i]);
  for (int i = 0; i < g->nout; i++) free(g->out_alias[i]), free(g->out_file[i]);
  free(g->sig);
}

static int golden_read(const char *path, golden *g) {
  memset(g, 0, sizeof *g);
  char *text;
  size_t len;
  sm_status *st = sm__file_read_all(path, &text, &len);
  if (st) {
    sm_status_free(st);
    return 0;
  }
  int section = 0; /* 1 tags, 2 inputs, 3 outputs */
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    int indent = 0;
    while (line[indent] == ' ') indent++;
    char *l = line + indent;
    if (indent == 1) {
      section = 0;
      if (!strncmp(l, "\"tags\"", 6)) section = 1;
      if (!strncmp(l, "\"inputs\"", 8)) section = 2;
      if (!strncmp(l, "\"outputs\"", 9)) section = 3;
      if (!strncmp(l, "\"signature\"", 11)) g->sig = quoted(l + 11);
      continue;
    }
    if (section == 1 && indent == 2 && *l == '"' && g->ntags < 8) g->tags[g->ntags++] = quoted(l);
    if ((section == 2 || section == 3) && indent == 2 && *l == '"') {
      if ((section == 2 ? g->nin : g->nout) >= 64) {
        fprintf(stderr, "%s: more than 64 %s; raise the limit\n", path, section == 2 ? "inputs" : "outputs");
        sm_test_failures++;
        continue;
      }
      if (section == 2) g->in_alias[g->nin++] = quoted(l);
      if (section == 3) g->out_alias[g->nout++] = quoted(l);
    }
    if ((section == 2 || section == 3) && indent == 3 && !strncmp(l, "\"file\"", 6)) {
      if (section == 2 && g->nin) g->in_file[g->nin - 1] = quoted(l + 6);
      if (section == 3 && g->nout) g->out_file[g->nout - 1] = quoted(l + 6);
    }
  }
  free(text);
  return g->sig != NULL;
}

static int zoo_cases, zoo_passed, zoo_unsupported;

/* One golden call: on a freshly loaded model, or on `shared` (a sequence's steps share one). */
static void zoo_case(const char *model_dir, const char *case_dir, sm_model *shared) {
  char *p = sm__path_join(case_dir, "signature.json");
  golden g;
  memset(&g, 0, sizeof g);
  int gok = p && golden_read(p, &g);
  free(p);
  if (!gok) {
    fprintf(stderr, "zoo %s: unreadable signature.json\n", case_dir);
    sm_test_failures++;
    golden_free(&g);
    return;
  }
  zoo_cases++;
  sm_model *m = shared;
  sm_status *st = shared ? NULL : sm_model_load(model_dir, (const char *const *)g.tags, g.ntags, NULL, &m);
  sm_tensor *in[64] = {0}, *out[64] = {0}, *want[64] = {0};
  int ok = 1;
  if (st) goto fail;
  for (int i = 0; i < g.nin && !st; i++) {
    if (!g.in_file[i]) continue;
    p = sm__path_join(case_dir, g.in_file[i]);
    st = read_value(p, &in[i]);
    free(p);
  }
  for (int i = 0; i < g.nout && !st; i++) {
    if (!g.out_file[i]) continue;
    p = sm__path_join(case_dir, g.out_file[i]);
    st = read_value(p, &want[i]);
    free(p);
  }
  if (st) {
    ok = 0;
    fprintf(stderr, "zoo %s: reading goldens: %s\n", case_dir, sm_status_message(st));
    sm_test_failures++;
    sm_status_free(st);
    st = NULL;
    goto done;
  }
  st = sm_model_run(m, g.sig, (const char *const *)g.in_alias, in, g.nin, (const char *const *)g.out_alias, g.nout,
                    out);
  if (st) goto fail;
  for (int i = 0; i < g.nout; i++) {
    char why[256];
    if (!want[i] || !out[i]) continue;
    if (!values_match(out[i], want[i], why, sizeof why)) {
      fprintf(stderr, "zoo %s: output '%s': %s\n", case_dir, g.out_alias[i], why);
      ok = 0;
      sm_test_failures++;
    }
  }
  if (ok) zoo_passed++;
  goto done;
fail:
  if (sm_status_code(st) == SM_UNIMPLEMENTED) {
    zoo_unsupported++;
    fprintf(stderr, "zoo %s: not supported yet: %s\n", case_dir, sm_status_message(st));
  } else {
    fprintf(stderr, "zoo %s: %s\n", case_dir, sm_status_message(st));
    sm_test_failures++;
  }
  sm_status_free(st);
done:
  for (int i = 0; i < 64; i++) sm_tensor_free(in[i]), sm_tensor_free(out[i]), sm_tensor_free(want[i]);
  if (!shared) sm_model_free(m);
  golden_free(&g);
}

/* A zoo model's golden/sequences/<tags>/NN_<sig>/: the steps in name order on one loaded model,
 * each output as TF's after the steps before it (state: tf1_counter's variables, keras_bn_fold's
 * assigned BatchNorm statistics). */
static int zoo_steps;

static void zoo_sequence(const char *model_dir, const char *seq_dir) {
  struct dirent **steps = NULL;
  int n = scandir(seq_dir, &steps, NULL, alphasort), loaded = 0;
  sm_model *m = NULL;
  for (int i = 0; i < n; i++) {
    char *c = steps[i]->d_name[0] != '.' ? sm__path_join(seq_dir, steps[i]->d_name) : NULL;
    char *p = c ? sm__path_join(c, "signature.json") : NULL;
    golden g;
    if (p && !loaded && golden_read(p, &g)) {
      sm_status *st = sm_model_load(model_dir, (const char *const *)g.tags, g.ntags, NULL, &m);
      if (st) fprintf(stderr, "zoo %s: %s\n", seq_dir, sm_status_message(st)), sm_test_failures++;
      sm_status_free(st);
      golden_free(&g);
      loaded = 1;
    }
    if (c && m && access(p, R_OK) == 0) zoo_case(model_dir, c, m), zoo_steps++;
    free(p);
    free(c);
    free(steps[i]);
  }
  free(steps);
  sm_model_free(m);
}

static void test_zoo(void) {
  char zoo[4096];
  snprintf(zoo, sizeof zoo, "%s/tests/fixtures/zoo", SM_SOURCE_DIR);
  DIR *d = opendir(zoo);
  if (!d) {
    fprintf(stderr, "zoo absent: %s\n", zoo);
    return;
  }
  struct dirent *e;
  static char names[1024][256];
  int nm = 0, too_many = 0;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      if (nm == 1024) too_many = 1;
      else snprintf(names[nm++], 256, "%s", e->d_name);
    }
  closedir(d);
  CHECK(!too_many); /* every zoo case runs: none is skipped silently */
  for (int i = 0; i < nm; i++) {
    char *base = sm__path_join(zoo, names[i]);
    char *model = sm__path_join(base, "model"), *outs = sm__path_join(base, "golden/outputs");
    DIR *od = outs ? opendir(outs) : NULL;
    while (od && (e = readdir(od))) {
      if (e->d_name[0] == '.') continue;
      char *c = sm__path_join(outs, e->d_name);
      zoo_case(model, c, NULL);
      free(c);
    }
    if (od) closedir(od);
    char *seqs = sm__path_join(base, "golden/sequences");
    od = seqs ? opendir(seqs) : NULL;
    while (od && (e = readdir(od))) {
      if (e->d_name[0] == '.') continue;
      char *c = sm__path_join(seqs, e->d_name);
      zoo_sequence(model, c);
      free(c);
    }
    if (od) closedir(od);
    free(seqs);
    free(base);
    free(model);
    free(outs);
  }
  fprintf(stderr, "zoo: %d cases (%d of them steps of sequences), %d match TensorFlow, %d need kernels not written yet\n",
          zoo_cases, zoo_steps, zoo_passed, zoo_unsupported);
  /* every zoo case runs: TF ran each, and an SM_UNIMPLEMENTED from a plan or a rewrite is a model
   * that fails to load or run here (tf2_scaled_residual's fold did, before nn_fold.c's shares_source) */
  CHECK(zoo_unsupported == 0);
}

/* ---- per-signature compilation ----------------------------------------------------------------- */
#define UNRUNNABLE SM_SOURCE_DIR "/tests/fixtures/unrunnable_signature"

/* The fixture's text with `cut` (up to the next "  signature_def {" or the closing brace) removed
 * and `add` inserted before the MetaGraph's closing brace, as a SavedModel in a new temp dir. */
static char *unrunnable_variant(const char *cut, const char *add) {
  char *text = NULL, *out = NULL;
  size_t len = 0;
  char tmpl[] = "/tmp/sm_unrunnable_XXXXXX";
  char *dir = mkdtemp(tmpl), *path = NULL;
  sm_status *st = sm__file_read_all(UNRUNNABLE "/saved_model.pbtxt", &text, &len);
  if (st || !dir) goto fail;
  size_t cap = len + strlen(add) + 1, n = 0;
  if (!(out = malloc(cap))) goto fail;
  const char *end = strrchr(text, '}'); /* meta_graphs' closing brace */
  const char *c0 = cut ? strstr(text, cut) : NULL, *c1 = NULL;
  if (c0) {
    c1 = strstr(c0 + 1, "  signature_def {");
    if (!c1 || c1 > end) c1 = end;
  }
  for (const char *p = text; p < text + len; p++) {
    if (p == c0) p = c1;
    if (p == end) {
      memcpy(out + n, add, strlen(add));
      n += strlen(add);
    }
    out[n++] = *p;
  }
  if (!(path = sm__path_join(dir, "saved_model.pbtxt")) || (st = sm__file_write_atomic(path, out, n))) goto fail;
  free(text);
  free(out);
  free(path);
  return strdup(dir);
fail:
  if (st) fprintf(stderr, "unrunnable_variant: %s\n", sm_status_message(st));
  sm_status_free(st);
  free(text);
  free(out);
  free(path);
  if (dir) sm__remove_tree(dir);
  sm_test_failures++;
  return NULL;
}

static void check_square(sm_model *m) {
  float x[] = {1, 2, 3}, want[] = {1, 4, 9};
  int64_t d[] = {3};
  sm_tensor *in = ftensor(1, d, x), *out = NULL;
  const char *ia[] = {"x"}, *oa[] = {"y"};
  CHECK_OK(sm_model_run(m, "square", ia, &in, 1, oa, 1, &out));
  CHECK(out && fvals_eq(out, 1, d, want));
  sm_tensor_free(out);
  sm_tensor_free(in);
}

static void check_spectrogram_fails(sm_model *m, const char *needle) {
  float x[] = {1, 2, 3, 4, 5, 6, 7, 8};
  int64_t d[] = {8, 1};
  sm_tensor *in = ftensor(2, d, x), *out = (sm_tensor *)1;
  const char *ia[] = {"audio"};
  sm_status *st = sm_model_run(m, "spectrogram", ia, &in, 1, NULL, 1, &out);
  CHECK(st && sm_status_code(st) == SM_UNIMPLEMENTED);
  CHECK(st && strstr(sm_status_message(st), needle));
  CHECK(st && strstr(sm_status_message(st), "ZeroOut (node 'spec')"));
  CHECK(out == NULL);
  sm_status_free(st);
  sm_tensor_free(in);
}

static void test_unrunnable_signature(void) {
  /* the fixture is only a test while this runtime has no kernel for its op */
  CHECK(sm__kernel_find("ZeroOut", SM_BACKEND_CPU) == NULL);
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(UNRUNNABLE, tags_serve, 1, NULL, &m));
  if (m) {
    CHECK(sm_model_num_signatures(m) == 2);
    CHECK(sm_model_num_warnings(m) == 1);
    const char *w = sm_model_warning(m, 0);
    CHECK(w && !strcmp(w, "signature 'spectrogram': this runtime has no kernel for 1 node(s) this run needs: "
                          "ZeroOut (node 'spec')"));
    CHECK(sm_model_warning(m, 1) == NULL && sm_model_warning(m, -1) == NULL);
    CHECK(sm_model_signature_warning(m, "spectrogram") == w);
    CHECK(sm_model_signature_warning(m, "square") == NULL);
    CHECK(sm_model_signature_warning(m, "nope") == NULL);
    check_square(m);
    check_spectrogram_fails(m, "signature 'spectrogram': this runtime has no kernel");
    check_square(m); /* a failed run leaves the model usable */
  }
  sm_model_free(m);
  CHECK(sm_model_num_warnings(NULL) == 0 && sm_model_warning(NULL, 0) == NULL &&
        sm_model_signature_warning(NULL, "square") == NULL);

  /* only "square" compiled at load: no warning; "spectrogram" compiles at its run, and fails */
  const char *only_square[] = {"square", "not_a_signature"};
  sm_load_options lo = {.signatures = only_square, .nsignatures = 2};
  CHECK_OK(sm_model_load(UNRUNNABLE, tags_serve, 1, &lo, &m));
  if (m) {
    CHECK(sm_model_num_warnings(m) == 0);
    check_square(m);
    check_spectrogram_fails(m, "running signature 'spectrogram'");
  }
  sm_model_free(m);

  /* none compiled: both compile at their first run */
  lo.nsignatures = 0;
  CHECK_OK(sm_model_load(UNRUNNABLE, tags_serve, 1, &lo, &m));
  if (m) {
    check_square(m);
    check_spectrogram_fails(m, "ZeroOut");
  }
  sm_model_free(m);

  /* every compiled signature unrunnable: the load fails with today's message */
  const char *only_spec[] = {"spectrogram"};
  lo.signatures = only_spec;
  lo.nsignatures = 1;
  m = (sm_model *)1;
  CHECK_ERR(sm_model_load(UNRUNNABLE, tags_serve, 1, &lo, &m),
            "unrunnable_signature: signature 'spectrogram': this runtime has no kernel for 1 node(s) this run "
            "needs: ZeroOut (node 'spec')");
  CHECK(m == NULL);

  /* the model without its runnable signature: the load fails */
  char *dir = unrunnable_variant("  signature_def {\n    key: \"square\"", "");
  if (dir) {
    sm_status *st = sm_model_load(dir, tags_serve, 1, NULL, &m);
    CHECK(st && sm_status_code(st) == SM_UNIMPLEMENTED);
    CHECK(st && strstr(sm_status_message(st), "signature 'spectrogram': this runtime has no kernel"));
    CHECK(m == NULL);
    sm_status_free(st);
    sm__remove_tree(dir);
    free(dir);
  }
  /* an init op without a kernel still fails the load, as TensorFlow's would */
  dir = unrunnable_variant(NULL, "  collection_def { key: \"legacy_init_op\" value { node_list { value: \"spec\" } } }\n");
  if (dir) {
    sm_status *st = sm_model_load(dir, tags_serve, 1, NULL, &m);
    CHECK(st && sm_status_code(st) == SM_UNIMPLEMENTED);
    CHECK(st && strstr(sm_status_message(st), "running init op 'spec'"));
    CHECK(m == NULL);
    sm_status_free(st);
    sm__remove_tree(dir);
    free(dir);
  }
}

/* The load folds each BatchNorm into its conv (sm__plan_preload, model.c), once for all the model's
 * signatures (nn_fold.c's shared folds); SM_LOAD_PRELOAD=0 leaves it to the first call. The values
 * stay TF's: the zoo case and its assignment sequence (test_zoo). */
static void test_load_preloads_folds(void) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tests/fixtures/zoo/keras_bn_fold/model", SM_SOURCE_DIR);
  const char *tags[1] = {"serve"};
  for (int off = 0; off < 2; off++) {
    if (off) setenv("SM_LOAD_PRELOAD", "0", 1);
    sm_model *m = NULL;
    CHECK_OK(sm_model_load(dir, tags, 1, NULL, &m));
    size_t n = sm__nn_fold_shared_entries();
    CHECK(off ? n == 0 : n > 0);
    if (!off && m) { /* another load: its own variables, so its own folds */
      sm_model *m2 = NULL;
      CHECK_OK(sm_model_load(dir, tags, 1, NULL, &m2));
      CHECK(sm__nn_fold_shared_entries() == 2 * n);
      sm_model_free(m2);
    }
    sm_model_free(m);
    CHECK(sm__nn_fold_shared_entries() == 0);
  }
  unsetenv("SM_LOAD_PRELOAD");
}

int main(void) {
  test_unrunnable_signature();
  test_load_preloads_folds();
  int have = fixtures_present();
  if (have) {
    test_small_fixtures();
    test_half_plus_two("saved_model_half_plus_two_cpu/00000123");
    test_half_plus_two("saved_model_half_plus_two_2_versions/00000124");
    test_tf2();
    test_counter();
    test_concurrency();
    test_scan();
  }
  test_zoo();
  if (!have) {
    fprintf(stderr, "skipped: %s absent (the zoo ran)\n", fixdir);
    if (!sm_test_failures) return SM_TEST_SKIP;
  }
  TEST_MAIN_END();
}

/* test_ops_e5.c - mutable containers (session 20, e5) against TensorFlow: SavedModels written by
 * tools/gen_e5_models.py (tests/fixtures/mutable_tables: MutableHashTable string->int64 and
 * int64->float, MutableHashTableOfTensors int64->float[3], DenseHashTable int64->int64 filled
 * before save; TensorMap, Optional, VariableShape, the TF1 stack and the Anonymous* tables in
 * tf.functions) are loaded with the C API and run call by call in TF's order (e5_calls.h: inputs
 * and TF's outputs or error text), so each call sees the mutations of the calls before it.
 * Exports are compared as sets (rows sorted by key; a dense table's empty/deleted buckets dropped,
 * its bucket count compared). By hand: many threads inserting into one table, a run's memory
 * budget against a growing table, a reload that starts from the saved contents again. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "test.h"

#include "e5_call.h"

#include "e5_calls.h"

#define FIX SM_SOURCE_DIR "/tests/fixtures/mutable_tables/"

static sm_model *load(const char *name) {
  char dir[512];
  snprintf(dir, sizeof dir, FIX "%s", name);
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(dir, tags, 1, NULL, &m));
  return m;
}

static sm_tensor *make(const e5_tensor *e) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(e->dtype, e->rank, e->dims, &t));
  if (!t) return NULL;
  if (e->dtype == SM_STRING) {
    for (int64_t i = 0; i < e->n; i++) CHECK_OK(sm_tensor_set_string(t, i, e->s[i], e->l[i]));
  } else if (e->n) {
    memcpy(sm_tensor_data(t), e->data, (size_t)e->n * sm_dtype_size(e->dtype));
  }
  return t;
}

static int same_elem(const sm_tensor *a, int64_t i, const e5_tensor *e, int64_t j) {
  int dt = e->dtype;
  if (dt == SM_STRING) {
    size_t la;
    const char *x = sm_tensor_string(a, i, &la);
    return la == e->l[j] && (!la || !memcmp(x, e->s[j], la));
  }
  if (dt == SM_FLOAT) {
    float x = ((const float *)sm_tensor_data(a))[i], y = ((const float *)e->data)[j];
    return (isnan(x) && isnan(y)) || x == y;
  }
  size_t es = sm_dtype_size(dt);
  return !memcmp((const char *)sm_tensor_data(a) + (size_t)i * es, (const char *)e->data + (size_t)j * es, es);
}

static void compare(const char *what, const sm_tensor *got, const e5_tensor *want) {
  if (!got) return;
  int ok = sm_tensor_dtype(got) == want->dtype && sm_tensor_rank(got) == want->rank &&
           !memcmp(sm_tensor_dims(got), want->dims, (size_t)want->rank * sizeof(int64_t));
  for (int64_t i = 0; ok && i < want->n; i++) ok = same_elem(got, i, want, i);
  if (!ok) {
    fprintf(stderr, "%s: differs from TF (dtype %d vs %d, rank %d vs %d, %lld elements)\n", what,
            sm_tensor_dtype(got), want->dtype, sm_tensor_rank(got), want->rank, (long long)want->n);
    sm_test_failures++;
  }
}

/* Key of row r as an int64 (or, for strings, 0 with s and len set). */
static int64_t row_key(const sm_tensor *k, int64_t r, const char **s, size_t *len) {
  *s = NULL;
  *len = 0;
  if (sm_tensor_dtype(k) == SM_STRING) {
    *s = sm_tensor_string(k, r, len);
    return 0;
  }
  return ((const int64_t *)sm_tensor_data(k))[r];
}

static const sm_tensor *sort_keys;
static int cmp_rows(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  const char *sa, *sb;
  size_t la, lb;
  int64_t ka = row_key(sort_keys, a, &sa, &la), kb = row_key(sort_keys, b, &sb, &lb);
  if (sa) {
    int c = memcmp(sa, sb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
  }
  return (ka > kb) - (ka < kb);
}

/* keys/values rows sorted by key, a dense table's reserved keys dropped: new tensors. */
static void canon(int dense, sm_tensor **keys, sm_tensor **values) {
  sm_tensor *k = *keys, *v = *values;
  int64_t rows = sm_tensor_rank(k) ? sm_tensor_dims(k)[0] : 0, *idx = malloc((size_t)(rows + 1) * sizeof *idx), n = 0;
  for (int64_t r = 0; r < rows; r++) {
    const char *s;
    size_t len;
    int64_t key = row_key(k, r, &s, &len);
    if (dense && (key == -100 || key == -200)) continue;
    idx[n++] = r;
  }
  sort_keys = k;
  qsort(idx, (size_t)n, sizeof *idx, cmp_rows);
  int64_t kd[8], vd[8];
  memcpy(kd, sm_tensor_dims(k), (size_t)sm_tensor_rank(k) * sizeof(int64_t));
  memcpy(vd, sm_tensor_dims(v), (size_t)sm_tensor_rank(v) * sizeof(int64_t));
  kd[0] = vd[0] = n;
  sm_tensor *nk = NULL, *nv = NULL;
  CHECK_OK(sm_tensor_new(sm_tensor_dtype(k), sm_tensor_rank(k), kd, &nk));
  CHECK_OK(sm_tensor_new(sm_tensor_dtype(v), sm_tensor_rank(v), vd, &nv));
  int64_t vper = rows ? sm_tensor_num_elements(v) / rows : 0;
  for (int64_t i = 0; nk && nv && i < n; i++) {
    int64_t r = idx[i];
    if (sm_tensor_dtype(k) == SM_STRING) {
      size_t len;
      const char *s = sm_tensor_string(k, r, &len);
      CHECK_OK(sm_tensor_set_string(nk, i, s, len));
    } else {
      ((int64_t *)sm_tensor_data(nk))[i] = ((const int64_t *)sm_tensor_data(k))[r];
    }
    if (sm_tensor_dtype(v) == SM_STRING) {
      size_t len;
      const char *s = sm_tensor_string(v, r, &len);
      CHECK_OK(sm_tensor_set_string(nv, i, s, len));
    } else {
      size_t es = sm_dtype_size(sm_tensor_dtype(v)) * (size_t)vper;
      memcpy((char *)sm_tensor_data(nv) + (size_t)i * es, (const char *)sm_tensor_data(v) + (size_t)r * es, es);
    }
  }
  free(idx);
  sm_tensor_free(k);
  sm_tensor_free(v);
  *keys = nk;
  *values = nv;
}

enum { NMODELS = 5 };
static const char *const model_names[NMODELS] = {"str_i64", "i64_f32", "i64_vec", "dense", "misc"};

static void test_calls(void) {
  sm_model *models[NMODELS] = {0};
  for (int i = 0; i < NMODELS; i++) models[i] = load(model_names[i]);
  int ncalls = (int)(sizeof e5_calls / sizeof e5_calls[0]), nerr = 0;
  for (int ci = 0; ci < ncalls; ci++) {
    const e5_call *c = &e5_calls[ci];
    sm_model *m = NULL;
    for (int i = 0; i < NMODELS; i++)
      if (!strcmp(model_names[i], c->model)) m = models[i];
    if (!m) continue;
    sm_tensor *in[8] = {0}, *out[8] = {0};
    const char *inames[8], *onames[8];
    for (int i = 0; i < c->nin; i++) {
      inames[i] = c->in[i].name;
      in[i] = make(&c->in[i].t);
    }
    int nout = c->nout;
    if (c->err) { /* fetch every output of the signature */
      const sm_tensor_info *infos;
      CHECK_OK(sm_model_signature_outputs(m, c->sig, &infos, &nout));
      for (int i = 0; i < nout && i < 8; i++) onames[i] = infos[i].alias;
    } else {
      for (int i = 0; i < nout; i++) onames[i] = c->out[i].name;
    }
    char what[128];
    snprintf(what, sizeof what, "call %d (%s.%s)", ci, c->model, c->sig);
    sm_status *st = sm_model_run(m, c->sig, inames, in, c->nin, onames, nout, out);
    if (c->err) {
      /* TF names a stack with a process-wide count ("Stack[b_3]"): compare what follows "] " */
      const char *want = strstr(c->err, "] ") && !strncmp(c->err, "Stack[", 6) ? strstr(c->err, "] ") + 2 : c->err;
      if (!st) {
        fprintf(stderr, "%s: succeeded, TF fails with \"%s\"\n", what, c->err);
        sm_test_failures++;
      } else if (!strstr(sm_status_message(st), want)) {
        fprintf(stderr, "%s: error \"%s\", TF's is \"%s\"\n", what, sm_status_message(st), c->err);
        sm_test_failures++;
      }
      nerr++;
    } else if (st) {
      fprintf(stderr, "%s: %s\n", what, sm_status_message(st));
      sm_test_failures++;
    } else {
      if (!strcmp(c->sig, "export") && out[0] && out[1]) {
        int64_t rows = sm_tensor_rank(out[0]) ? sm_tensor_dims(out[0])[0] : -1;
        if (rows != c->nbuckets) {
          fprintf(stderr, "%s: %lld rows exported, TF %lld\n", what, (long long)rows, (long long)c->nbuckets);
          sm_test_failures++;
        }
        canon(!strcmp(c->model, "dense"), &out[0], &out[1]);
      }
      if (!strcmp(c->sig, "tmap") && out[1]) { /* stacked keys: TF's order is the map's; compare sorted */
        for (int i = 0; i < nout; i++)
          if (!strcmp(onames[i], "keys") && sm_tensor_dtype(out[i]) == SM_INT32) {
            int32_t *k = sm_tensor_data(out[i]);
            int64_t n = sm_tensor_num_elements(out[i]);
            for (int64_t a = 1; a < n; a++)
              for (int64_t b = a; b > 0 && k[b - 1] > k[b]; b--) {
                int32_t x = k[b];
                k[b] = k[b - 1];
                k[b - 1] = x;
              }
          }
      }
      for (int i = 0; i < nout; i++) {
        char w2[192];
        snprintf(w2, sizeof w2, "%s output %s", what, onames[i]);
        compare(w2, out[i], &c->out[i].t);
      }
    }
    sm_status_free(st);
    for (int i = 0; i < 8; i++) {
      sm_tensor_free(in[i]);
      sm_tensor_free(out[i]);
    }
  }
  printf("%d calls (%d of them TF's errors)\n", ncalls, nerr);
  for (int i = 0; i < NMODELS; i++) sm_model_free(models[i]);
}

/* ---- by hand ---------------------------------------------------------------------------------- */

static sm_tensor *i64_vec(int64_t n, int64_t base) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, 1, &n, &t));
  for (int64_t i = 0; t && i < n; i++) ((int64_t *)sm_tensor_data(t))[i] = base + i;
  return t;
}
static sm_tensor *f32_vec(int64_t n, float base) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, &n, &t));
  for (int64_t i = 0; t && i < n; i++) ((float *)sm_tensor_data(t))[i] = base + (float)i;
  return t;
}

typedef struct {
  sm_model *m;
  int id, fails;
} worker;

enum { THREADS = 4, ROUNDS = 50, PER = 20 };

static void *insert_worker(void *p) {
  worker *w = p;
  for (int r = 0; r < ROUNDS; r++) {
    int64_t base = 1000000 * (int64_t)(w->id + 1) + (int64_t)r * PER;
    sm_tensor *in[2] = {i64_vec(PER, base), f32_vec(PER, (float)base)}, *out[1] = {0};
    const char *names[2] = {"keys", "values"}, *oname[1] = {"size"};
    sm_status *st = sm_model_run(w->m, "insert", names, in, 2, oname, 1, out);
    if (st) w->fails++;
    sm_status_free(st);
    sm_tensor_free(out[0]);
    /* look the batch up again: every key must be there with its value */
    sm_tensor *k2 = NULL, *got[1] = {0};
    int64_t d2[2] = {1, PER};
    if (sm_tensor_new(SM_INT64, 2, d2, &k2) == NULL) {
      memcpy(sm_tensor_data(k2), sm_tensor_data(in[0]), PER * sizeof(int64_t));
      const char *kn[1] = {"keys"}, *vn[1] = {"values"};
      st = sm_model_run(w->m, "lookup", kn, &k2, 1, vn, 1, got);
      if (st || !got[0]) {
        w->fails++;
      } else {
        for (int i = 0; i < PER; i++)
          if (((float *)sm_tensor_data(got[0]))[i] != (float)(base + i)) w->fails++;
      }
      sm_status_free(st);
    }
    sm_tensor_free(k2);
    sm_tensor_free(got[0]);
    sm_tensor_free(in[0]);
    sm_tensor_free(in[1]);
  }
  return NULL;
}

static void test_threads(void) {
  sm_model *m = load("i64_f32");
  if (!m) return;
  worker w[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){m, i, 0};
    pthread_create(&th[i], NULL, insert_worker, &w[i]);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(w[i].fails, 0);
  }
  sm_tensor *out[2] = {0};
  const char *on[2] = {"keys", "values"};
  CHECK_OK(sm_model_run(m, "export", NULL, NULL, 0, on, 2, out));
  if (out[0]) CHECK_EQ_INT(sm_tensor_num_elements(out[0]), 3 + THREADS * ROUNDS * PER);
  sm_tensor_free(out[0]);
  sm_tensor_free(out[1]);
  sm_model_free(m);
}

/* A table that would grow past the run's budget is refused with RESOURCE_EXHAUSTED, and the
 * model keeps working. A second load starts from the saved contents. */
static void test_budget_and_reload(void) {
  sm_model *m = load("i64_f32");
  if (!m) return;
  enum { N = 40000 };
  sm_tensor *in[2] = {i64_vec(N, 100), f32_vec(N, 0)}, *out[1] = {0};
  const char *names[2] = {"keys", "values"}, *oname[1] = {"size"};
  sm_run_options o = {0};
  o.max_run_bytes = 2u << 20;
  sm_status *st = sm_model_run_opts(m, "insert", names, in, 2, oname, 1, out, &o);
  CHECK(st && sm_status_code(st) == SM_RESOURCE_EXHAUSTED);
  if (st) printf("budget: %s\n", sm_status_message(st));
  sm_status_free(st);
  sm_tensor_free(out[0]);
  out[0] = NULL;
  /* without the budget it fits */
  CHECK_OK(sm_model_run(m, "insert", names, in, 2, oname, 1, out));
  if (out[0]) CHECK_EQ_INT(*(int64_t *)sm_tensor_data(out[0]), N + 3);
  sm_tensor_free(out[0]);
  sm_tensor_free(in[0]);
  sm_tensor_free(in[1]);
  sm_model *m2 = load("i64_f32");
  sm_tensor *ex[2] = {0};
  const char *on[2] = {"keys", "values"};
  if (m2) CHECK_OK(sm_model_run(m2, "export", NULL, NULL, 0, on, 2, ex));
  if (ex[0]) CHECK_EQ_INT(sm_tensor_num_elements(ex[0]), 3);
  sm_tensor_free(ex[0]);
  sm_tensor_free(ex[1]);
  sm_model_free(m2);
  sm_model_free(m);
}

/* Bad inputs through the signatures: a wrong key dtype cannot be fed (the signature says), so
 * shapes: values not matching keys. */
static void test_bad_shapes(void) {
  sm_model *m = load("i64_vec");
  if (!m) return;
  sm_tensor *k = i64_vec(2, 0), *v = NULL, *out[1] = {0};
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, (int64_t[]){3, 3}, &v));
  sm_tensor *in[2] = {k, v};
  const char *names[2] = {"keys", "values"}, *oname[1] = {"size"};
  CHECK_ERR(sm_model_run(m, "insert", names, in, 2, oname, 1, out), "Expected shape [2,3] for value, got [3,3]");
  sm_tensor_free(out[0]);
  sm_tensor_free(k);
  sm_tensor_free(v);
  sm_model_free(m);
}

int main(void) {
  test_calls();
  test_threads();
  test_budget_and_reload();
  test_bad_shapes();
  TEST_MAIN_END();
}

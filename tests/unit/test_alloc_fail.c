/* test_alloc_fail.c - the allocation-failure sweep (SQLite's OOM test idea over base/alloc.h).
 *
 * For every TensorFlow-written model of the zoo (tests/fixtures/zoo/<model>/golden/outputs/<case>,
 * one case per signature: the __b1/__b3 batch repeats are left out) and the TF Serving fixtures
 * (../shared/fixtures/tf-serving, when present): load with one thread and run the signature once,
 * counting the allocator's calls; then, for k over those calls, fail the k-th (one-shot, and
 * persistently for a subset: that one and every one after it), load and run again, and require
 *   - an error: code SM_RESOURCE_EXHAUSTED, and only when a failure was injected;
 *   - a success (the failed allocation's caller had a fallback): outputs equal to the normal run's;
 *   - after freeing the model and outputs, as many live allocator blocks as before (no leak; under
 *     `make asan` LeakSanitizer checks every other allocation at exit too), and no crash.
 * k runs over the load (Const tensors, variable restore) as well as the run.
 *
 * Also swept: a graph of kernels whose scratch the models do not reach (every allocation, both
 * ways), and the raw nn functions (nn_raw.h), whose per-worker patch buffers fail inside a
 * parallel loop.
 *
 * By default each case tries at most SWEEP_CAP one-shot and SWEEP_CAP/4 persistent k per phase
 * (load, run), evenly strided (small cases completely): about 5 s in a release build, 20-30 s under ASan on two
 * cores. SM_ALLOC_SWEEP=full tries every k both ways (about a minute under ASan). To chase one
 * failure: SM_ALLOC_SWEEP_ONLY=<part of a case name> and SM_ALLOC_SWEEP_K=<k>, under a debugger
 * with a breakpoint where alloc.c's inject() counts a failure; SM_ALLOC_SWEEP_VERBOSE=1 lists the
 * k that succeeded through a fallback. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/tensor_internal.h"
#include "ops/nn_raw.h"
#include "runtime/session.h"
#include "savedmodel/model.h"
#include "savedmodel/npy.h"
#include "golden_io.h"
#include "test.h"

#define SWEEP_CAP 96 /* one-shot k per phase (load, run) and case by default */
#define MAXIO 64

typedef struct scase {
  char name[160];
  char *model_dir;
  char *tags[8];
  int ntags;
  char *sig;
  char *in_alias[MAXIO];
  sm_tensor *in[MAXIO];
  int nin;
  char *out_alias[MAXIO];
  int nout;
} scase;

static int full_sweep, verbose;
static const char *only; /* SM_ALLOC_SWEEP_ONLY: sweep only the cases whose name contains it */
static long only_k;      /* SM_ALLOC_SWEEP_K: try only this k (one-shot), e.g. under a debugger */
static long long total_tries, total_fallbacks;

static void scase_free(scase *c) {
  free(c->model_dir);
  for (int i = 0; i < c->ntags; i++) free(c->tags[i]);
  free(c->sig);
  for (int i = 0; i < c->nin; i++) free(c->in_alias[i]), sm_tensor_free(c->in[i]);
  for (int i = 0; i < c->nout; i++) free(c->out_alias[i]);
  memset(c, 0, sizeof *c);
}

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (!d) abort();
  return memcpy(d, s, n);
}

/* ---- reading a zoo case (signature.json as tools/make_zoo.py writes it: json.dump, indent=1) ---- */
static char *quoted(const char *p) {
  const char *a = strchr(p, '"'), *b = a ? strchr(a + 1, '"') : NULL;
  if (!b) return NULL;
  char *s = malloc((size_t)(b - a));
  if (!s) abort();
  memcpy(s, a + 1, (size_t)(b - a - 1));
  s[b - a - 1] = 0;
  return s;
}

/* Fills c from <case_dir>/signature.json and its input files; 0 (and a failure counted) if not. */
static int zoo_case_read(const char *model_dir, const char *case_dir, const char *label, scase *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", label);
  c->model_dir = dup(model_dir);
  char *p = sm__path_join(case_dir, "signature.json"), *text = NULL;
  size_t len;
  sm_status *st = p ? sm__file_read_all(p, &text, &len) : sm_status_new(SM_NO_MEMORY, "path");
  free(p);
  char *in_file[MAXIO] = {0};
  int section = 0; /* 1 tags, 2 inputs, 3 outputs */
  char *save = NULL;
  for (char *line = st ? NULL : strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    int ind = 0;
    while (line[ind] == ' ') ind++;
    char *l = line + ind;
    if (ind == 1) {
      section = !strncmp(l, "\"tags\"", 6) ? 1 : !strncmp(l, "\"inputs\"", 8) ? 2 : !strncmp(l, "\"outputs\"", 9) ? 3 : 0;
      if (!strncmp(l, "\"signature\"", 11)) c->sig = quoted(l + 11);
    } else if (ind == 2 && *l == '"') {
      if (section == 1 && c->ntags < 8) c->tags[c->ntags++] = quoted(l);
      if (section == 2 && c->nin < MAXIO) c->in_alias[c->nin++] = quoted(l);
      if (section == 3 && c->nout < MAXIO) c->out_alias[c->nout++] = quoted(l);
    } else if (ind == 3 && section == 2 && c->nin && !strncmp(l, "\"file\"", 6)) {
      in_file[c->nin - 1] = quoted(l + 6);
    }
  }
  free(text);
  for (int i = 0; i < c->nin && !st; i++) {
    if (!in_file[i]) continue;
    p = sm__path_join(case_dir, in_file[i]);
    st = read_value(p, &c->in[i]);
    free(p);
  }
  for (int i = 0; i < c->nin; i++) free(in_file[i]);
  if (!st && !c->sig) st = sm_status_new(SM_INVALID_ARGUMENT, "no signature");
  if (st) {
    fprintf(stderr, "%s: %s\n", case_dir, sm_status_message(st));
    sm_status_free(st);
    sm_test_failures++;
    scase_free(c);
    return 0;
  }
  return 1;
}

/* ---- the sweep ------------------------------------------------------------------------------- */
static long long live_blocks(void) {
  sm_alloc_stats s;
  sm__alloc_stats(&s);
  return s.live_blocks;
}

static long long alloc_calls(void) {
  sm_alloc_stats s;
  sm__alloc_stats(&s);
  return s.calls;
}

/* Loads c (one thread: the allocation order is then the same every time) and runs it into out;
 * *load_calls (may be NULL) gets the allocator calls the load made. */
static sm_status *load_run(const scase *c, sm_tensor **out, long long *load_calls) {
  sm_model *m = NULL;
  sm_load_options opt = {.num_threads = 1};
  long long c0 = alloc_calls();
  sm_status *st = sm_model_load(c->model_dir, (const char *const *)c->tags, c->ntags, &opt, &m);
  if (load_calls) *load_calls = alloc_calls() - c0;
  if (!st)
    st = sm_model_run(m, c->sig, (const char *const *)c->in_alias, c->in, c->nin, (const char *const *)c->out_alias,
                      c->nout, out);
  sm_model_free(m);
  return st;
}

static void outputs_free(sm_tensor **t, int n) {
  for (int i = 0; i < n; i++) {
    sm_tensor_free(t[i]);
    t[i] = NULL;
  }
}

/* One try: the k-th allocation fails (and every later one with persist). 0 when a check failed. */
static int try_k(const scase *c, long k, int persist, sm_tensor **want) {
  sm_tensor *got[MAXIO] = {0};
  long long live0 = live_blocks();
  sm__alloc_fail_after(k, persist);
  sm_status *st = load_run(c, got, NULL);
  long failed = sm__alloc_failures();
  sm__alloc_fail_after(0, 0);
  total_tries++;
  int ok = 1;
  const char *how = persist ? "persistent" : "one-shot";
  if (st) {
    if (sm_status_code(st) != SM_RESOURCE_EXHAUSTED || !failed) {
      fprintf(stderr, "%s: %s failure at allocation %ld (%ld injected): %s: %s\n", c->name, how, k, failed,
              sm_code_name(sm_status_code(st)), sm_status_message(st));
      ok = 0;
    }
  } else {
    if (failed) total_fallbacks++;
    if (failed && verbose) fprintf(stderr, "%s: %s failure at allocation %ld: succeeded\n", c->name, how, k);
    for (int i = 0; i < c->nout && ok; i++)
      if (!got[i] || !sm_tensor_equal(got[i], want[i])) {
        fprintf(stderr, "%s: %s failure at allocation %ld (%ld injected): the run succeeded but output '%s' %s\n",
                c->name, how, k, failed, c->out_alias[i], got[i] ? "differs" : "is missing");
        ok = 0;
      }
  }
  sm_status_free(st);
  outputs_free(got, c->nout);
  long long leaked = live_blocks() - live0;
  if (leaked) {
    fprintf(stderr, "%s: %s failure at allocation %ld: %lld allocator blocks leaked\n", c->name, how, k, leaked);
    ok = 0;
  }
  if (!ok) sm_test_failures++;
  return ok;
}

/* Tries every stride-th k of [lo, hi] (all of them when full or the range is small), starting
 * at an offset that differs from case to case. Stops at the first failed check. */
static int sweep_range(const scase *c, long lo, long hi, int persist, long cap, unsigned salt, sm_tensor **want,
                       long *tried) {
  if (hi < lo) return 1;
  long n = hi - lo + 1, stride = full_sweep || n <= cap ? 1 : (n + cap - 1) / cap;
  for (long k = lo + (long)(salt % (unsigned long)stride); k <= hi; k += stride) {
    (*tried)++;
    if (!try_k(c, k, persist, want)) return 0;
  }
  return 1;
}

static void sweep_case(scase *c, unsigned salt) {
  if (only && !strstr(c->name, only)) return;
  sm_tensor *want[MAXIO] = {0};
  long long live0 = live_blocks(), load_calls, c0 = alloc_calls();
  sm_status *st = load_run(c, want, &load_calls);
  long long total = alloc_calls() - c0;
  if (st) {
    /* test_model reports cases the library cannot run yet; nothing to sweep here */
    fprintf(stderr, "%s: skipped, the normal run fails: %s\n", c->name, sm_status_message(st));
    if (sm_status_code(st) != SM_UNIMPLEMENTED) sm_test_failures++;
    sm_status_free(st);
    outputs_free(want, c->nout);
    return;
  }
  if (only_k) {
    try_k(c, only_k, 0, want);
    outputs_free(want, c->nout);
    return;
  }
  clock_t t0 = clock();
  long tried = 0;
  long cap = SWEEP_CAP, pcap = SWEEP_CAP / 4;
  int ok = sweep_range(c, 1, load_calls, 0, cap, salt, want, &tried) &&
           sweep_range(c, load_calls + 1, total, 0, cap, salt, want, &tried) &&
           sweep_range(c, 1, load_calls, 1, pcap, salt * 7 + 3, want, &tried) &&
           sweep_range(c, load_calls + 1, total, 1, pcap, salt * 7 + 3, want, &tried);
  /* past the last allocation nothing fails: the run must be the normal one */
  if (ok) ok = try_k(c, total + 1, 0, want);
  fprintf(stderr, "%-44s %6lld allocations (load %lld, run %lld): %ld tries, %.2f s\n", c->name, total, load_calls,
          total - load_calls, tried + ok, (double)(clock() - t0) / CLOCKS_PER_SEC);
  outputs_free(want, c->nout);
  if (live_blocks() != live0) {
    fprintf(stderr, "%s: the normal run leaves %lld allocator blocks behind\n", c->name, live_blocks() - live0);
    sm_test_failures++;
  }
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted entries of dir not starting with '.'; NULL-terminated, caller frees. */
static char **list_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char **v = calloc(257, sizeof *v);
  if (!v) abort();
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 256;)
    if (e->d_name[0] != '.') v[n++] = dup(e->d_name);
  closedir(d);
  qsort(v, (size_t)n, sizeof *v, name_cmp);
  return v;
}

static void list_free(char **v) {
  for (int i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}

static int sweep_zoo(void) {
  char zoo[4096];
  snprintf(zoo, sizeof zoo, "%s/tests/fixtures/zoo", SM_SOURCE_DIR);
  char **models = list_dir(zoo);
  int ncases = 0;
  for (int i = 0; models && models[i]; i++) {
    char *base = sm__path_join(zoo, models[i]);
    char *model = sm__path_join(base, "model"), *outs = sm__path_join(base, "golden/outputs");
    char **cases = list_dir(outs);
    /* a large graph (TF Text's tokenizers: a 2.7 MB saved_model.pb) costs a whole load per k: two of
     * its signatures are swept, so that the ASan run stays within ctest's timeout on two cores */
    char *pb = sm__path_join(model, "saved_model.pb");
    struct stat stb;
    int big = pb && stat(pb, &stb) == 0 && stb.st_size > 1024 * 1024, swept = 0;
    free(pb);
    for (int j = 0; cases && cases[j]; j++) {
      if (strstr(cases[j], "__b")) continue; /* the batch repeats of a signature */
      if (big && swept >= 2) break;
      swept++;
      char *cd = sm__path_join(outs, cases[j]), label[160];
      snprintf(label, sizeof label, "%s %s", models[i], cases[j]);
      scase c;
      if (zoo_case_read(model, cd, label, &c)) {
        sweep_case(&c, (unsigned)ncases++);
        scase_free(&c);
      }
      free(cd);
    }
    list_free(cases);
    free(base);
    free(model);
    free(outs);
  }
  list_free(models);
  return ncases;
}

/* ---- TF Serving's test models: the signatures test_model runs, with its inputs -------------- */
static sm_tensor *ftensor(int rank, const int64_t *dims, const float *v) {
  sm_tensor *t;
  if (sm_tensor_new(SM_FLOAT, rank, dims, &t)) abort();
  memcpy(sm_tensor_data(t), v, (size_t)sm_tensor_num_elements(t) * sizeof(float));
  return t;
}

/* tf.Examples {"x": [v]} for v = 0, 1, 2, 3 (as test_model's EX0..EX3) */
static sm_tensor *examples(int n) {
  static const unsigned char ex[] = {0x0a, 0x0f, 0x0a, 0x0d, 0x0a, 0x01, 0x78, 0x12, 0x08, 0x12,
                                     0x06, 0x0a, 0x04, 0x00, 0x00, 0x00, 0x00};
  static const unsigned char hi[4] = {0x00, 0x80, 0x00, 0x40};
  static const unsigned char top[4] = {0x00, 0x3f, 0x40, 0x40};
  int64_t d = n;
  sm_tensor *t;
  if (sm_tensor_new(SM_STRING, 1, &d, &t)) abort();
  for (int i = 0; i < n; i++) {
    unsigned char b[sizeof ex];
    memcpy(b, ex, sizeof ex);
    b[15] = hi[i];
    b[16] = top[i];
    if (sm_tensor_set_string(t, i, b, sizeof b)) abort();
  }
  return t;
}

static int sweep_serving(void) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/fixtures/tf-serving", SM_SHARED_DIR);
  struct stat sb;
  if (stat(dir, &sb)) {
    fprintf(stderr, "%s absent: only the zoo is swept\n", dir);
    return 0;
  }
  static const struct {
    const char *model, *sig, *in, *out;
    int kind; /* 0 no input, 1 x [3,1], 2 four tf.Examples, 3 x [1,3,3], 4 x [1,1], 5 one tf.Example, 6 x [1] */
  } cases[] = {
      {"saved_model_half_plus_two_cpu/00000123", "serving_default", "x", "y", 1},
      {"saved_model_half_plus_two_cpu/00000123", "regress_x_to_y", "inputs", "outputs", 2},
      {"saved_model_half_plus_two_cpu/00000123", "classify_x_to_y", "inputs", "scores", 2},
      {"saved_model_half_plus_two_tf2_cpu/00000123", "regress_x_to_y", "inputs", "outputs", 2},
      {"saved_model_half_plus_two_tf2_cpu/00000123", "serving_default", "x", "y", 6},
      {"saved_model_half_plus_three/00000123", "serving_default", "x", "y", 4},
      {"matrix_half_plus_two/1", "serving_default", "x", "y", 3},
      {"saved_model_half_plus_two_mkl/00000123", "regress_x_to_y2", "inputs", "outputs", 5},
      {"saved_model_counter/00000123", "incr_counter", NULL, "output", 0},
  };
  int n = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    scase c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tf-serving %s %s", cases[i].model, cases[i].sig);
    char *p = sm__path_join(dir, cases[i].model);
    c.model_dir = p;
    c.tags[c.ntags++] = dup("serve");
    c.sig = dup(cases[i].sig);
    c.out_alias[c.nout++] = dup(cases[i].out);
    if (cases[i].kind) {
      c.in_alias[0] = dup(cases[i].in);
      c.nin = 1;
      int64_t d31[] = {3, 1}, d133[] = {1, 3, 3}, d11[] = {1, 1}, d1[] = {1};
      switch (cases[i].kind) {
      case 1: c.in[0] = ftensor(2, d31, (const float[]){2, 3, 4}); break;
      case 2: c.in[0] = examples(4); break;
      case 5: c.in[0] = examples(1); break;
      case 6: c.in[0] = ftensor(1, d1, (const float[]){2}); break;
      case 3: c.in[0] = ftensor(3, d133, (const float[]){1, 2, 3, 4, 5, 6, 7, 8, 9}); break;
      default: c.in[0] = ftensor(2, d11, (const float[]){2}); break;
      }
    }
    sweep_case(&c, (unsigned)(100 + n++));
    scase_free(&c);
  }
  return n;
}

/* ---- kernels' scratch the models above do not reach ------------------------------------------
 * One graph (Consts in, no feeds) whose every output comes from a kernel path that takes scratch:
 * NCHW Conv2D / MaxPool (transposes), an im2col Conv2D (K 72: the patch buffer), GatherNd,
 * MirrorPad, Split, ShardedFilename, StaticRegexFullMatch, string Add, half Mul / Sum / AddN /
 * Softmax (widened to float), a Sum over non-adjacent axes (two passes), FusedBatchNormV3,
 * BatchMatMulV2 with batch offsets, FFT/IRFFT of length 11 (Bluestein) and RFFT, Unique, UniqueV2,
 * CTCGreedyDecoder. Swept as a model is, session creation (the Consts) included. */
#define ATTR_T(k, t) "attr { key: \"" k "\" value { type: " t " } } "
#define ATTR_S(k, v) "attr { key: \"" k "\" value { s: \"" v "\" } } "
#define ATTR_I(k, v) "attr { key: \"" k "\" value { i: " v " } } "
#define ATTR_B(k, v) "attr { key: \"" k "\" value { b: " v " } } "
#define ATTR_L(k, v) "attr { key: \"" k "\" value { list { " v " } } } "
#define NODE(name, op, in, attrs) "node { name: \"" name "\" op: \"" op "\" " in " " attrs "}\n"
#define IN1(a) "input: \"" a "\""
#define IN2(a, b) "input: \"" a "\" input: \"" b "\""
#define IN3(a, b, c) "input: \"" a "\" input: \"" b "\" input: \"" c "\""
#define IN5(a, b, c, d, e) IN3(a, b, c) " " IN2(d, e)

/* A Const node: dtype name, shape, and n values v(i) (floats; ints, or strings "s<i%5>"). */
static void const_node(char **buf, size_t *len, size_t *cap, const char *name, const char *dt, int rank,
                       const int64_t *dims, int vals) {
  char tmp[16384];
  int64_t n = 1;
  int k = snprintf(tmp, sizeof tmp,
                   "node { name: \"%s\" op: \"Const\" attr { key: \"dtype\" value { type: %s } } "
                   "attr { key: \"value\" value { tensor { dtype: %s tensor_shape {",
                   name, dt, dt);
  for (int i = 0; i < rank; i++) {
    k += snprintf(tmp + k, sizeof tmp - (size_t)k, " dim { size: %lld }", (long long)dims[i]);
    n *= dims[i];
  }
  k += snprintf(tmp + k, sizeof tmp - (size_t)k, " }");
  for (int64_t i = 0; i < n; i++) {
    if (!strcmp(dt, "DT_FLOAT"))
      k += snprintf(tmp + k, sizeof tmp - (size_t)k, " float_val: %g", (double)((i * 7 + vals) % 11) / 4 - 1);
    else if (!strcmp(dt, "DT_INT32"))
      k += snprintf(tmp + k, sizeof tmp - (size_t)k, " int_val: %d", vals < 0 ? (int)i % -vals : vals);
    else
      k += snprintf(tmp + k, sizeof tmp - (size_t)k, " string_val: \"s%d\"", (int)((i + vals) % 5));
  }
  k += snprintf(tmp + k, sizeof tmp - (size_t)k, " } } } }\n");
  while (*len + (size_t)k + 1 > *cap) {
    *cap = *cap ? *cap * 2 : 16384;
    if (!(*buf = realloc(*buf, *cap))) abort();
  }
  memcpy(*buf + *len, tmp, (size_t)k + 1);
  *len += (size_t)k;
}

static const char kernel_ops[] =
    "node { name: \"ax02\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } } attr { key: \"value\" "
    "value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 0 int_val: 2 } } } }\n"
    NODE("conv_nchw", "Conv2D", IN2("xc", "f3"),
         ATTR_T("T", "DT_FLOAT") ATTR_L("strides", "i: 1 i: 1 i: 1 i: 1") ATTR_S("padding", "SAME")
             ATTR_S("data_format", "NCHW"))
    NODE("pool_nchw", "MaxPool", IN1("xc"),
         ATTR_T("T", "DT_FLOAT") ATTR_L("ksize", "i: 1 i: 1 i: 2 i: 2") ATTR_L("strides", "i: 1 i: 1 i: 2 i: 2")
             ATTR_S("padding", "VALID") ATTR_S("data_format", "NCHW"))
    NODE("conv_im2col", "Conv2D", IN2("x8", "f8"),
         ATTR_T("T", "DT_FLOAT") ATTR_L("strides", "i: 1 i: 1 i: 1 i: 1") ATTR_S("padding", "SAME"))
    NODE("gnd", "GatherNd", IN2("m34", "idx"), ATTR_T("Tparams", "DT_FLOAT") ATTR_T("Tindices", "DT_INT32"))
    NODE("mpad", "MirrorPad", IN2("m34", "pads"),
         ATTR_T("T", "DT_FLOAT") ATTR_T("Tpaddings", "DT_INT32") ATTR_S("mode", "REFLECT"))
    NODE("split", "Split", IN2("one", "m34"), ATTR_T("T", "DT_FLOAT") ATTR_I("num_split", "2"))
    NODE("sf", "ShardedFilename", IN3("base", "shard", "nshards"), "")
    NODE("re", "StaticRegexFullMatch", IN1("strs"), ATTR_S("pattern", "s1.*"))
    NODE("sadd", "Add", IN2("strs", "strs"), ATTR_T("T", "DT_STRING"))
    NODE("h", "Cast", IN1("m34"), ATTR_T("SrcT", "DT_FLOAT") ATTR_T("DstT", "DT_HALF"))
    NODE("hmul", "Mul", IN2("h", "h"), ATTR_T("T", "DT_HALF"))
    NODE("hsum", "Sum", IN2("h", "one"), ATTR_T("T", "DT_HALF") ATTR_T("Tidx", "DT_INT32") ATTR_B("keep_dims", "false"))
    NODE("haddn", "AddN", IN3("h", "h", "h"), ATTR_T("T", "DT_HALF") ATTR_I("N", "3"))
    NODE("hsoft", "Softmax", IN1("h"), ATTR_T("T", "DT_HALF"))
    NODE("msum", "Sum", IN2("m234", "ax02"), ATTR_T("T", "DT_FLOAT") ATTR_T("Tidx", "DT_INT32"))
    NODE("bn", "FusedBatchNormV3", IN5("x8", "c8", "c8b", "c8c", "c8d"),
         ATTR_T("T", "DT_FLOAT") ATTR_T("U", "DT_FLOAT") ATTR_B("is_training", "true") ATTR_S("data_format", "NHWC"))
    NODE("bmm", "BatchMatMulV2", IN2("m234", "m243"), ATTR_T("T", "DT_FLOAT"))
    NODE("cz", "Cast", IN1("m211"), ATTR_T("SrcT", "DT_FLOAT") ATTR_T("DstT", "DT_COMPLEX64"))
    NODE("fft", "FFT", IN1("cz"), ATTR_T("Tcomplex", "DT_COMPLEX64"))
    NODE("rfft", "RFFT", IN2("m34", "fl4"), ATTR_T("Treal", "DT_FLOAT") ATTR_T("Tcomplex", "DT_COMPLEX64"))
    NODE("irfft", "IRFFT", IN2("cz", "fl11"), ATTR_T("Treal", "DT_FLOAT") ATTR_T("Tcomplex", "DT_COMPLEX64"))
    NODE("uniq", "Unique", IN1("v6"), ATTR_T("T", "DT_INT32") ATTR_T("out_idx", "DT_INT32"))
    NODE("uniq2", "UniqueV2", IN2("m34", "ax1"), ATTR_T("T", "DT_FLOAT") ATTR_T("Taxis", "DT_INT32") ATTR_T("out_idx", "DT_INT32"))
    NODE("ctc", "CTCGreedyDecoder", IN2("x314", "sl"), ATTR_T("T", "DT_FLOAT") ATTR_B("merge_repeated", "true"));

static const char *const kernel_fetches[] = {
    "conv_nchw:0", "pool_nchw:0", "conv_im2col:0", "gnd:0", "mpad:0", "split:0", "split:1", "sf:0", "re:0", "sadd:0",
    "hmul:0", "hsum:0", "haddn:0", "hsoft:0", "msum:0", "bn:0", "bn:1", "bn:2", "bmm:0", "fft:0", "rfft:0", "irfft:0",
    "uniq:0", "uniq:1", "uniq2:0", "ctc:0", "ctc:1", "ctc:3"};
#define NKF ((int)(sizeof kernel_fetches / sizeof *kernel_fetches))

static char *kernel_graph(void) {
  char *b = NULL;
  size_t len = 0, cap = 0;
  const_node(&b, &len, &cap, "xc", "DT_FLOAT", 4, (int64_t[]){1, 3, 4, 4}, 0);
  const_node(&b, &len, &cap, "f3", "DT_FLOAT", 4, (int64_t[]){3, 3, 3, 4}, 1);
  const_node(&b, &len, &cap, "x8", "DT_FLOAT", 4, (int64_t[]){1, 5, 5, 8}, 2);
  const_node(&b, &len, &cap, "f8", "DT_FLOAT", 4, (int64_t[]){3, 3, 8, 4}, 3);
  const_node(&b, &len, &cap, "m34", "DT_FLOAT", 2, (int64_t[]){3, 4}, 4);
  const_node(&b, &len, &cap, "idx", "DT_INT32", 2, (int64_t[]){2, 2}, -3);
  const_node(&b, &len, &cap, "pads", "DT_INT32", 2, (int64_t[]){2, 2}, 1);
  const_node(&b, &len, &cap, "one", "DT_INT32", 0, NULL, 1);
  const_node(&b, &len, &cap, "base", "DT_STRING", 0, NULL, 0);
  const_node(&b, &len, &cap, "shard", "DT_INT32", 0, NULL, 1);
  const_node(&b, &len, &cap, "nshards", "DT_INT32", 0, NULL, 3);
  const_node(&b, &len, &cap, "strs", "DT_STRING", 1, (int64_t[]){6}, 0);
  const_node(&b, &len, &cap, "m234", "DT_FLOAT", 3, (int64_t[]){2, 3, 4}, 5);
  const_node(&b, &len, &cap, "m243", "DT_FLOAT", 3, (int64_t[]){2, 4, 3}, 6);
  const_node(&b, &len, &cap, "c8", "DT_FLOAT", 1, (int64_t[]){8}, 7);
  const_node(&b, &len, &cap, "c8b", "DT_FLOAT", 1, (int64_t[]){8}, 8);
  const_node(&b, &len, &cap, "c8c", "DT_FLOAT", 1, (int64_t[]){8}, 9);
  const_node(&b, &len, &cap, "c8d", "DT_FLOAT", 1, (int64_t[]){8}, 10);
  const_node(&b, &len, &cap, "m211", "DT_FLOAT", 2, (int64_t[]){2, 11}, 11);
  const_node(&b, &len, &cap, "fl4", "DT_INT32", 1, (int64_t[]){1}, 4);
  const_node(&b, &len, &cap, "fl11", "DT_INT32", 1, (int64_t[]){1}, 11);
  const_node(&b, &len, &cap, "v6", "DT_INT32", 1, (int64_t[]){6}, -3);
  const_node(&b, &len, &cap, "ax1", "DT_INT32", 1, (int64_t[]){1}, 1);
  const_node(&b, &len, &cap, "x314", "DT_FLOAT", 3, (int64_t[]){3, 1, 4}, 12);
  const_node(&b, &len, &cap, "sl", "DT_INT32", 1, (int64_t[]){1}, 3);
  size_t n = len + sizeof kernel_ops + 64;
  char *g = malloc(n);
  if (!g) abort();
  snprintf(g, n, "graph_def {\n%s%s}\n", b, kernel_ops);
  free(b);
  return g;
}

static sm_status *kernel_run(const char *g, sm_tensor **out) {
  sm_session *s;
  sm_status *st = sm__session_from_pbtxt(g, &s);
  if (st) return st;
  st = sm__session_run(s, NULL, NULL, 0, kernel_fetches, NKF, NULL, 0, out);
  sm__session_free(s);
  return st;
}

static void sweep_kernels(void) {
  char *g = kernel_graph();
  sm_tensor *want[NKF] = {0}, *got[NKF] = {0};
  long long c0 = alloc_calls(), live0 = live_blocks();
  sm_status *st0 = kernel_run(g, want);
  long long total = alloc_calls() - c0;
  int failures = 0;
  if (st0) {
    fprintf(stderr, "kernel graph: the normal run fails: %s\n", sm_status_message(st0));
    sm_status_free(st0);
    sm_test_failures++;
    failures = 5;
  }
  for (long k = 1; k <= total + 1 && failures < 5; k++)
    for (int persist = 0; persist < 2; persist++) {
      long long l0 = live_blocks();
      sm__alloc_fail_after(k, persist);
      sm_status *st = kernel_run(g, got);
      long failed = sm__alloc_failures();
      sm__alloc_fail_after(0, 0);
      total_tries++;
      int bad = st ? sm_status_code(st) != SM_RESOURCE_EXHAUSTED || !failed : failed > 0;
      for (int i = 0; !st && !bad && i < NKF; i++) bad = !got[i] || !want[i] || !sm_tensor_equal(got[i], want[i]);
      outputs_free(got, NKF);
      long long leaked = live_blocks() - l0;
      if (bad || leaked) {
        fprintf(stderr, "kernel graph: %s failure at allocation %ld (%ld injected): %s %s (%lld blocks leaked)\n",
                persist ? "persistent" : "one-shot", k, failed, st ? sm_code_name(sm_status_code(st)) : "success",
                sm_status_message(st), leaked);
        sm_test_failures++;
        failures++;
      }
      sm_status_free(st);
    }
  outputs_free(want, NKF);
  CHECK_EQ_INT(live_blocks(), live0);
  fprintf(stderr, "%-44s %6lld allocations, every one failed once and from there on\n", "kernel graph", total);
  free(g);
}

/* ---- the raw nn functions: per-worker buffers inside a parallel loop ------------------------ */
static void sweep_raw_conv(void) {
  /* 3x3x8 patches (K 72, past the direct path) over a 32x32 image into 16 channels: 1.2M
   * multiply-adds, enough to go parallel, so each worker gathers patches into its own buffer */
  enum { H = 32, W = 32, C = 8, KH = 3, KW = 3, CO = 16 };
  static float x[H * W * C], f[KH * KW * C * CO], y[H * W * CO], want[H * W * CO];
  for (int i = 0; i < H * W * C; i++) x[i] = (float)(i % 13) - 6;
  for (int i = 0; i < KH * KW * C * CO; i++) f[i] = (float)(i % 7) * 0.25f - 0.75f;
  sm_threadpool *pool = NULL;
  CHECK_OK(sm__threadpool_new(4, &pool));
  CHECK_OK(sm__nn_conv2d_f32(pool, x, 1, H, W, C, f, KH, KW, CO, 1, 1, 1, NULL, SM_NN_ACT_NONE, want));
  for (long k = 1; k <= 8; k++)
    for (int persist = 0; persist < 2; persist++) {
      long long live0 = live_blocks();
      sm__alloc_fail_after(k, persist);
      sm_status *st = sm__nn_conv2d_f32(pool, x, 1, H, W, C, f, KH, KW, CO, 1, 1, 1, NULL, SM_NN_ACT_NONE, y);
      long failed = sm__alloc_failures();
      sm__alloc_fail_after(0, 0);
      if (failed) {
        /* a worker without its buffer: the call must say so, not return a partial product */
        CHECK(st != NULL);
        if (st) CHECK_EQ_STR(sm_code_name(sm_status_code(st)), "RESOURCE_EXHAUSTED");
      } else {
        CHECK(st == NULL);
        CHECK(!memcmp(y, want, sizeof y));
      }
      sm_status_free(st);
      CHECK_EQ_INT(live_blocks(), live0);
    }
  /* persistent from the first: every worker fails */
  sm__alloc_fail_after(1, 1);
  sm_status *st = sm__nn_conv2d_f32(pool, x, 1, H, W, C, f, KH, KW, CO, 1, 1, 1, NULL, SM_NN_ACT_NONE, y);
  CHECK(sm__alloc_failures() >= 1);
  sm__alloc_fail_after(0, 0);
  CHECK_EQ_INT(sm_status_code(st), SM_RESOURCE_EXHAUSTED);
  sm_status_free(st);
  sm__threadpool_free(pool);
}

/* ---- the allocator itself --------------------------------------------------------------------- */
static void test_allocator(void) {
  sm_alloc_stats a, b;
  sm__alloc_stats(&a);
  char *p = sm__alloc(100), *q = sm__calloc(50);
  CHECK(p && q);
  for (int i = 0; q && i < 50; i++) CHECK(q[i] == 0);
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.calls - a.calls, 2);
  CHECK_EQ_INT(b.live_blocks - a.live_blocks, 2);
  CHECK_EQ_INT(b.live_bytes - a.live_bytes, 150);
  CHECK(b.peak_bytes >= b.live_bytes);
  memset(p, 7, 100);
  char *r = sm__realloc(p, 1000);
  CHECK(r && r[0] == 7 && r[99] == 7);
  if (r) p = r;
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.live_bytes - a.live_bytes, 1050);
  /* the countdown: the 3rd call fails, once */
  sm__alloc_fail_after(3, 0);
  void *v1 = sm__alloc(1), *v2 = sm__alloc(1), *v3 = sm__alloc(1), *v4 = sm__alloc(1);
  CHECK(v1 && v2 && !v3 && v4);
  CHECK_EQ_INT(sm__alloc_failures(), 1);
  /* persistent: the 2nd and every later one, realloc included (which leaves its block alone) */
  sm__alloc_fail_after(2, 1);
  void *w1 = sm__alloc(1), *w2 = sm__alloc(1), *w3 = sm__calloc(1);
  CHECK(w1 && !w2 && !w3);
  CHECK(sm__realloc(p, 10) == NULL);
  CHECK(p[0] == 7);
  CHECK_EQ_INT(sm__alloc_failures(), 3);
  sm__alloc_fail_after(0, 0);
  void *w4 = sm__alloc(0);
  CHECK(w4 != NULL);
  sm__free(w4);
  sm__free(v1), sm__free(v2), sm__free(v4), sm__free(w1);
  sm__free(p);
  sm__free(q);
  sm__free(NULL);
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.live_blocks, a.live_blocks);
  CHECK_EQ_INT(b.live_bytes, a.live_bytes);
  sm__alloc_peak_reset();
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.peak_bytes, b.live_bytes);
  /* a tensor out of memory: TensorFlow's code and wording */
  sm_tensor *t = NULL;
  int64_t d[] = {2, 3};
  int64_t dbig[] = {20, 30}; /* 2,400 bytes: the header, then a buffer of its own */
  sm__alloc_fail_after(2, 0);
  CHECK_ERR(sm_tensor_new(SM_FLOAT, 2, dbig, &t), "OOM when allocating tensor with shape[20,30] and type float");
  CHECK(t == NULL);
  sm__alloc_fail_after(1, 0); /* a small tensor's elements live in its header's block: one allocation */
  CHECK_ERR(sm_tensor_new(SM_FLOAT, 2, d, &t), "OOM when allocating tensor with shape[2,3] and type float");
  CHECK(t == NULL);
  sm__alloc_fail_after(2, 0);
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, d, &t));
  sm__alloc_fail_after(0, 0);
  if (t) {
    const float *z = sm_tensor_data(t);
    CHECK(z && ((uintptr_t)z % _Alignof(max_align_t)) == 0);
    CHECK(z && z[0] == 0.0f && z[5] == 0.0f);
    CHECK(!sm_tensor_is_shared(t));
  }
  sm_tensor_free(t);
  t = NULL;
  sm__alloc_fail_after(1, 0);
  sm_status *st = sm_tensor_new(SM_INT32, 2, d, &t);
  CHECK_EQ_INT(sm_status_code(st), SM_RESOURCE_EXHAUSTED);
  sm_status_free(st);
  sm__alloc_fail_after(0, 0);
  /* a view's header out of memory: the base is untouched; buffers say where they live */
  sm_tensor *base = NULL, *view = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, d, &base));
  int64_t d6[] = {6};
  sm__alloc_fail_after(1, 0);
  CHECK_ERR(sm_tensor_view(base, 1, d6, &view), "OOM when allocating tensor with shape[6] and type float");
  sm__alloc_fail_after(0, 0);
  CHECK(view == NULL && !sm_tensor_is_shared(base));
  CHECK_OK(sm_tensor_view(base, 1, d6, &view));
  CHECK_EQ_INT(sm__tensor_space(base), SM_MEM_HOST);
  if (view) CHECK_EQ_INT(sm__tensor_space(view), SM_MEM_HOST);
  sm_tensor_free(view);
  sm_tensor_free(base);
  CHECK_OK(sm_tensor_new(SM_STRING, 1, d, &t));
  sm__alloc_fail_after(1, 0);
  CHECK_ERR(sm_tensor_set_string(t, 0, "abc", 3), "OOM");
  sm__alloc_fail_after(0, 0);
  sm_tensor_free(t);
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.live_blocks, a.live_blocks);
}

/* The cache of freed large blocks: a block of the same size class comes back, zeroed when calloc
 * asks; a different class or a small block does not; counters and injection see reuse as fresh. */
static void test_alloc_cache(void) {
  sm_alloc_stats a, b;
  sm__alloc_stats(&a);
  size_t big = (size_t)1 << 20; /* class of 1 MiB: [1 MiB - 128 KiB + 1, 1 MiB] rounds to 1 MiB */
  unsigned char *p = sm__alloc(big);
  CHECK(p != NULL);
  if (!p) return;
  memset(p, 0xab, big);
  sm__free(p);
  unsigned char *q = sm__calloc(big - 1000); /* same class: the cached block, zeroed */
  CHECK(q == p);
  int zero = 1;
  for (size_t i = 0; q && i < big - 1000; i++) zero &= q[i] == 0;
  CHECK(zero);
  unsigned char *r = sm__alloc(big + 200000); /* the next class: never the 1 MiB block */
  CHECK(r && r != q);
  if (r) memset(r, 1, big + 200000);
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.live_bytes - a.live_bytes, (long long)(big - 1000 + big + 200000));
  q = sm__realloc(q, 3 * big); /* grows to another class, keeping the bytes */
  CHECK(q && q[0] == 0 && q[big - 1001] == 0);
  sm__alloc_fail_after(1, 0); /* injection fails a request a cached block could serve */
  sm__free(r);
  CHECK(sm__alloc(big + 200000) == NULL);
  sm__alloc_fail_after(0, 0);
  sm__free(q);
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.live_blocks, a.live_blocks);
  CHECK_EQ_INT(b.live_bytes, a.live_bytes);
  /* blocks from 32 KiB on are kept (a batch-1 activation of 64 KiB), smaller ones are not */
  long long hits = b.cache_hits;
  p = sm__alloc(100 << 10);
  sm__free(p);
  CHECK(p && (q = sm__alloc(97 << 10)) == p); /* the same class (96-104 KiB): the kept block */
  sm__free(q);
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.cache_hits - hits, 1);
  p = sm__alloc(20 << 10);
  sm__free(p);
  sm__free(sm__alloc(20 << 10));
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.cache_hits - hits, 1);
}

/* Whether the mapping holding p is advised onto huge pages ("hg" in its smaps VmFlags); -1 where
 * the kernel has no transparent huge pages or no smaps to say. */
static int huge_advised(const void *p) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return -1;
  fclose(f);
  if (!(f = fopen("/proc/self/smaps", "r"))) return -1;
  char line[512];
  int in = 0, r = -1;
  while (r < 0 && fgets(line, sizeof line, f)) {
    unsigned long long lo, hi;
    if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (in && !strncmp(line, "VmFlags:", 8))
      r = strstr(line, " hg") != NULL;
  }
  fclose(f);
  return r;
}

/* Lasting blocks of 2 MiB and more: 2 MiB-aligned (the header in front), advised huge, bytes kept
 * by realloc into and out of them, zeroed when calloc reuses one, counted as any block. */
static void test_alloc_huge(void) {
  sm_alloc_stats a, b;
  sm__alloc_stats(&a);
  CHECK(sm__hugepages_on());
  size_t mb = (size_t)1 << 20, huge = 2 * mb;
  unsigned char *p = sm__alloc_lasting(5 * mb);
  CHECK(p != NULL);
  if (!p) return;
  CHECK((uintptr_t)p % huge < 64);
  CHECK(huge_advised(p) != 0);
  for (size_t i = 0; i < 5 * mb; i += 4096) p[i] = (unsigned char)(i >> 12);
  p = sm__realloc(p, 9 * mb); /* a huge block to a larger one */
  CHECK(p && (uintptr_t)p % huge < 64 && p[4096 * 7] == 7 && p[5 * mb - 4096] == (unsigned char)((5 * mb - 4096) >> 12));
  p = sm__realloc(p, 100); /* and out to malloc's */
  CHECK(p && p[0] == 0 && p[99] == 0);
  unsigned char *q = sm__alloc_lasting(3 * mb), *r = NULL;
  CHECK(q && (uintptr_t)q % huge < 64);
  CHECK(q != NULL);
  if (q) memset(q, 0xcd, 3 * mb);
  sm__free(q); /* kept by the cache: the calloc below of the same class gets it zeroed */
  r = sm__calloc(3 * mb - 100);
  int zero = r != NULL;
  for (size_t i = 0; r && i < 3 * mb - 100; i += 997) zero &= r[i] == 0;
  CHECK(zero);
  p = sm__realloc(p, 4 * mb); /* malloc's block into a huge-class size: bytes kept */
  CHECK(p && p[0] == 0 && p[99] == 0);
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.live_bytes - a.live_bytes, (long long)(3 * mb - 100 + 4 * mb));
  sm__free(p);
  sm__free(r);
  sm__alloc_stats(&b);
  CHECK_EQ_INT(b.live_blocks, a.live_blocks);
  CHECK_EQ_INT(b.live_bytes, a.live_bytes);
}

int main(void) {
  /* before the first allocation: sanitizer builds keep no freed block unless told to, nor map
   * large ones onto huge pages */
  setenv("SM_ALLOC_CACHE_MB", "64", 1);
  setenv("SM_HUGEPAGES", "1", 1);
  const char *e = getenv("SM_ALLOC_SWEEP");
  full_sweep = e && !strcmp(e, "full");
  verbose = getenv("SM_ALLOC_SWEEP_VERBOSE") != NULL;
  only = getenv("SM_ALLOC_SWEEP_ONLY");
  only_k = getenv("SM_ALLOC_SWEEP_K") ? atol(getenv("SM_ALLOC_SWEEP_K")) : 0;
  test_allocator();
  test_alloc_cache();
  test_alloc_huge();
  /* the kernel registry's index (built on first use, kept to the end) out of the live counts */
  CHECK(sm__kernel_find("Const", SM_BACKEND_CPU) != NULL);
  sweep_raw_conv();
  sweep_kernels();
  clock_t t0 = clock();
  int n = sweep_zoo();
  n += sweep_serving();
  fprintf(stderr, "%s sweep: %d cases, %lld tries (%lld succeeded through a fallback), %.1f s of CPU\n",
          full_sweep ? "full" : "default", n, total_tries, total_fallbacks, (double)(clock() - t0) / CLOCKS_PER_SEC);
  CHECK(n > 0);
  TEST_MAIN_END();
}

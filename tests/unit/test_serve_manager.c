/* test_serve_manager.c - the model manager: versions found on disk, LATEST / ALL / SPECIFIC
 * policies, hot reload (a new version serves after a poll, a broken one never interrupts
 * serving), labels as TF Serving checks them, model_config_file parsing and reloading, status,
 * refcounted unloads under concurrent requests, and versions copied in pieces (loaded only when
 * whole and settled, retried when their files change). Version directories are built in a temporary
 * base path from the zoo's tf1_square (always there) and, when ../shared is present, from TF
 * Serving's own half_plus_two fixtures. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "savedmodel/model.h"
#include "savedmodel/tensor.h"
#include "serve/manager.h"
#include "test.h"

#define ZOO_SQUARE SM_SOURCE_DIR "/tests/fixtures/zoo/tf1_square/model"
#define ZOO_VARS SM_SOURCE_DIR "/tests/fixtures/zoo/tf1_resource_vars/model"
#define TFS SM_SHARED_DIR "/fixtures/tf-serving"

/* ---- file helpers ---- */

static int copy_file(const char *src, const char *dst) {
  int in = open(src, O_RDONLY);
  if (in < 0) return -1;
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0) {
    close(in);
    return -1;
  }
  char buf[65536];
  ssize_t n;
  int rc = 0;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) rc = -1;
  if (n < 0) rc = -1;
  close(in);
  close(out);
  return rc;
}

static int copy_tree(const char *src, const char *dst) {
  struct stat st;
  if (stat(src, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return copy_file(src, dst);
  if (mkdir(dst, 0755) != 0) return -1;
  DIR *d = opendir(src);
  if (!d) return -1;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/%s", src, e->d_name);
    snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
    if (copy_tree(a, b) != 0) rc = -1;
  }
  closedir(d);
  return rc;
}

static void rm_tree(const char *p) {
  struct stat st;
  if (lstat(p, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(p);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char a[4096];
        snprintf(a, sizeof a, "%s/%s", p, e->d_name);
        rm_tree(a);
      }
      closedir(d);
    }
    rmdir(p);
  } else {
    unlink(p);
  }
}

static char g_tmp[256];

/* A fresh directory under the test's temporary root. */
static void mkpath(char *out, size_t cap, const char *rel) { snprintf(out, cap, "%s/%s", g_tmp, rel); }

static void add_version(const char *base, const char *ver, const char *src) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", base, ver);
  CHECK(copy_tree(src, p) == 0);
}

/* A version directory that is not a SavedModel at all. */
static void add_broken_version(const char *base, const char *ver) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", base, ver);
  CHECK(mkdir(p, 0755) == 0);
  snprintf(p, sizeof p, "%s/%s/saved_model.pb", base, ver);
  FILE *f = fopen(p, "wb");
  CHECK(f != NULL);
  if (f) {
    fputs("this is not a protobuf \xff\xff\xff\xff", f);
    fclose(f);
  }
}

static void write_text(const char *path, const char *text) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
  CHECK(rename(tmp, path) == 0);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- model helpers ---- */

/* Runs tf1_square's serving_default on x; returns y[0] or -1. */
static float run_square(sm_servable *s, float x) {
  int64_t dims[1] = {1};
  sm_tensor *in = NULL, *out = NULL;
  if (sm_tensor_new(SM_FLOAT, 1, dims, &in)) return -1;
  ((float *)sm_tensor_data(in))[0] = x;
  const char *ia[] = {"x"}, *oa[] = {"y"};
  sm_status *st = sm_model_run(sm__servable_model(s), "serving_default", ia, &in, 1, oa, 1, &out);
  float r = -1;
  if (!st) r = ((float *)sm_tensor_data(out))[0];
  sm_status_free(st);
  sm_tensor_free(in);
  sm_tensor_free(out);
  return r;
}

static int64_t latest_version(sm_manager *m, const char *name) {
  sm_servable *s = NULL;
  sm_status *st = sm__manager_acquire(m, name, 0, NULL, &s);
  if (st) {
    sm_status_free(st);
    return -1;
  }
  int64_t v = sm__servable_version(s);
  sm__servable_release(s);
  return v;
}

/* The state of one version as status reports it, or NULL. */
static const char *state_of(sm_manager *m, const char *name, int64_t v, char *code, size_t cap) {
  static char buf[32];
  sm_version_status *vs = NULL;
  int n = 0;
  sm_status *st = sm__manager_status(m, name, v, NULL, &vs, &n);
  if (st) {
    sm_status_free(st);
    return NULL;
  }
  snprintf(buf, sizeof buf, "%s", n == 1 ? vs[0].state : "?");
  if (code) snprintf(code, cap, "%s", n == 1 ? vs[0].error_code : "?");
  sm__version_status_free(vs, n);
  return buf;
}

static sm_model_config one_model(const char *name, const char *base) {
  sm_model_config c = {0};
  c.name = name;
  c.base_path = base;
  c.policy = SM_POLICY_LATEST;
  c.latest_n = 1;
  return c;
}

/* ---- tests ---- */

static void test_latest_and_hot_reload(void) {
  char base[512];
  mkpath(base, sizeof base, "hot");
  CHECK(mkdir(base, 0755) == 0);
  add_version(base, "1", ZOO_SQUARE);
  add_version(base, "notaversion", ZOO_SQUARE); /* ignored: not a number */
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(NULL, &m));
  sm_model_config c = one_model("sq", base);
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_INT(latest_version(m, "sq"), 1);

  sm_servable *s1 = NULL;
  CHECK_OK(sm__manager_acquire(m, "sq", 1, NULL, &s1));
  if (s1) {
    CHECK_EQ_STR(sm__servable_name(s1), "sq");
    CHECK(strstr(sm__servable_path(s1), "/hot/1") != NULL);
    CHECK(run_square(s1, 3.0f) == 9.0f);
  }
  /* Version 2 arrives; after a pass it serves, and version 1 waits for its request to end. */
  add_version(base, "2", ZOO_SQUARE);
  sm__manager_poll(m);
  CHECK_EQ_INT(latest_version(m, "sq"), 2);
  CHECK_EQ_STR(state_of(m, "sq", 1, NULL, 0), "UNLOADING");
  if (s1) CHECK(run_square(s1, 4.0f) == 16.0f); /* still usable while held */
  sm_servable *none = NULL;
  CHECK_ERR(sm__manager_acquire(m, "sq", 1, NULL, &none), "Servable not found for request: Specific(sq, 1)");
  sm_manager_counts before = sm__manager_counts_get(m);
  sm__servable_release(s1);
  CHECK_EQ_STR(state_of(m, "sq", 1, NULL, 0), "END");
  CHECK_EQ_INT(sm__manager_counts_get(m).unloads, before.unloads + 1);

  /* A broken version 3: reported in status, version 2 keeps serving. */
  add_broken_version(base, "3");
  sm__manager_poll(m);
  char code[64];
  CHECK_EQ_STR(state_of(m, "sq", 3, code, sizeof code), "END");
  CHECK(strcmp(code, "OK") != 0);
  CHECK_EQ_INT(latest_version(m, "sq"), 2);
  CHECK_EQ_STR(state_of(m, "sq", 2, NULL, 0), "AVAILABLE");
  sm_version_status *vs = NULL;
  int n = 0;
  CHECK_OK(sm__manager_status(m, "sq", 0, NULL, &vs, &n));
  CHECK_EQ_INT(n, 3);
  if (n == 3) {
    CHECK_EQ_INT(vs[0].version, 3); /* descending */
    CHECK(strlen(vs[0].error_message) > 0);
    CHECK_EQ_INT(vs[1].version, 2);
    CHECK_EQ_STR(vs[1].error_code, "OK");
    CHECK_EQ_STR(vs[1].error_message, "");
    CHECK_EQ_INT(vs[2].version, 1);
  }
  sm__version_status_free(vs, n);
  /* Retries are bounded (TF's max_num_load_retries): many passes, few attempts. */
  for (int i = 0; i < 10; i++) sm__manager_poll(m);
  sm_manager_counts k = sm__manager_counts_get(m);
  CHECK(k.load_failures >= 1 && k.load_failures <= 6);
  CHECK_EQ_INT(latest_version(m, "sq"), 2);

  /* Fixing version 3 in place is not picked up (it is still the same failed version), but
   * replacing it with version 4 is. */
  add_version(base, "4", ZOO_SQUARE);
  sm__manager_poll(m);
  CHECK_EQ_INT(latest_version(m, "sq"), 4);
  CHECK_EQ_STR(state_of(m, "sq", 2, NULL, 0), "END");

  /* All version directories gone: TF Serving unloads them. */
  char p[1024];
  snprintf(p, sizeof p, "%s/4", base);
  rm_tree(p);
  snprintf(p, sizeof p, "%s/3", base);
  rm_tree(p);
  snprintf(p, sizeof p, "%s/2", base);
  rm_tree(p);
  snprintf(p, sizeof p, "%s/1", base);
  rm_tree(p);
  sm__manager_poll(m);
  CHECK_ERR(sm__manager_acquire(m, "sq", 0, NULL, &s1), "Servable not found for request: Latest(sq)");

  /* Errors a request can meet. */
  CHECK_ERR(sm__manager_acquire(m, "nope", 0, NULL, &s1), "Servable not found for request: Latest(nope)");
  CHECK_ERR(sm__manager_acquire(m, "nope", 7, NULL, &s1), "Servable not found for request: Specific(nope, 7)");
  CHECK_ERR(sm__manager_acquire(m, "sq", 0, "stable", &s1), "Unrecognized servable version label: stable");
  CHECK_ERR(sm__manager_status(m, "nope", 0, NULL, &vs, &n), "Could not find any versions of model nope");
  CHECK_ERR(sm__manager_status(m, "sq", 99, NULL, &vs, &n), "Could not find version 99 of model sq");
  sm__manager_free(m);
}

static void test_policies(void) {
  char base[512];
  mkpath(base, sizeof base, "pol");
  CHECK(mkdir(base, 0755) == 0);
  add_version(base, "1", ZOO_SQUARE);
  add_version(base, "2", ZOO_SQUARE);
  add_version(base, "03", ZOO_SQUARE); /* leading zeros, as TF Serving's 00000123 */
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(NULL, &m));
  sm_model_config c = one_model("p", base);

  c.policy = SM_POLICY_ALL;
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_STR(state_of(m, "p", 1, NULL, 0), "AVAILABLE");
  CHECK_EQ_STR(state_of(m, "p", 2, NULL, 0), "AVAILABLE");
  CHECK_EQ_STR(state_of(m, "p", 3, NULL, 0), "AVAILABLE");
  CHECK_EQ_INT(latest_version(m, "p"), 3);
  sm_servable *s = NULL;
  CHECK_OK(sm__manager_acquire(m, "p", 1, NULL, &s));
  if (s) CHECK(strstr(sm__servable_path(s), "/pol/1") != NULL);
  sm__servable_release(s);
  CHECK_OK(sm__manager_acquire(m, "p", 3, NULL, &s));
  if (s) CHECK(strstr(sm__servable_path(s), "/pol/03") != NULL);
  sm__servable_release(s);

  /* Latest 2: version 1 goes. */
  c.policy = SM_POLICY_LATEST;
  c.latest_n = 2;
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_STR(state_of(m, "p", 1, NULL, 0), "END");
  CHECK_EQ_STR(state_of(m, "p", 2, NULL, 0), "AVAILABLE");
  CHECK_EQ_STR(state_of(m, "p", 3, NULL, 0), "AVAILABLE");

  /* Specific {1}: 1 comes back, then 2 and 3 go (1 is available). */
  int64_t only1[] = {1};
  c.policy = SM_POLICY_SPECIFIC;
  c.versions = only1;
  c.nversions = 1;
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_STR(state_of(m, "p", 1, NULL, 0), "AVAILABLE");
  CHECK_EQ_STR(state_of(m, "p", 2, NULL, 0), "END");
  CHECK_EQ_STR(state_of(m, "p", 3, NULL, 0), "END");
  CHECK_EQ_INT(latest_version(m, "p"), 1);

  /* Specific {9} (not on disk): nothing is aspired and nothing available survives -- TF's
   * AvailabilityPreservingPolicy unloads when no version is aspired. */
  int64_t only9[] = {9};
  c.versions = only9;
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_INT(latest_version(m, "p"), -1);

  /* Specific {2, 4} where 4 is broken: 2 serves, 4 is END with an error. */
  add_broken_version(base, "4");
  int64_t two4[] = {2, 4};
  c.versions = two4;
  c.nversions = 2;
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_INT(latest_version(m, "p"), 2);
  char code[64];
  CHECK_EQ_STR(state_of(m, "p", 4, code, sizeof code), "END");
  CHECK(strcmp(code, "OK") != 0);

  /* Bad configs are refused and change nothing. */
  sm_model_config two[2] = {one_model("p", base), one_model("p", base)};
  CHECK_ERR(sm__manager_set_config(m, two, 2), "Illegal to list model p multiple times in config list");
  sm_model_config bad = one_model("", base);
  CHECK_ERR(sm__manager_set_config(m, &bad, 1), "has no name");
  bad = one_model("q", "");
  CHECK_ERR(sm__manager_set_config(m, &bad, 1), "has no base_path");
  bad = one_model("q", base);
  bad.policy = 7;
  CHECK_ERR(sm__manager_set_config(m, &bad, 1), "unknown version policy");
  CHECK_EQ_INT(latest_version(m, "p"), 2);

  /* A base path that does not exist: the model has no versions (and no crash). */
  bad = one_model("ghost", "/nonexistent/base/path");
  CHECK_OK(sm__manager_set_config(m, &bad, 1));
  CHECK_EQ_INT(latest_version(m, "ghost"), -1);
  CHECK_EQ_INT(latest_version(m, "p"), -1); /* p left the config: unloaded */
  sm__manager_free(m);
}

static void test_labels(void) {
  char base[512];
  mkpath(base, sizeof base, "lab");
  CHECK(mkdir(base, 0755) == 0);
  add_version(base, "1", ZOO_SQUARE);
  add_version(base, "2", ZOO_SQUARE);
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(NULL, &m));
  sm_model_config c = one_model("l", base);
  c.policy = SM_POLICY_ALL;
  sm_version_label labels[] = {{"stable", 1}, {"canary", 2}};
  c.labels = labels;
  c.nlabels = 2;
  /* At startup nothing is AVAILABLE, so TF Serving refuses the labels. */
  CHECK_ERR(sm__manager_set_config(m, &c, 1),
            "Request to assign label to version 1 of model l, which is not currently available for inference");
  CHECK_EQ_INT(latest_version(m, "l"), -1);
  c.nlabels = 0;
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  c.nlabels = 2;
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  sm_servable *s = NULL;
  CHECK_OK(sm__manager_acquire(m, "l", 0, "stable", &s));
  if (s) CHECK_EQ_INT(sm__servable_version(s), 1);
  sm__servable_release(s);
  CHECK_OK(sm__manager_acquire(m, "l", 0, "canary", &s));
  if (s) CHECK_EQ_INT(sm__servable_version(s), 2);
  sm__servable_release(s);
  CHECK_ERR(sm__manager_acquire(m, "l", 0, "beta", &s), "Unrecognized servable version label: beta");
  sm_version_status *vs = NULL;
  int n = 0;
  CHECK_OK(sm__manager_status(m, "l", 0, "canary", &vs, &n));
  CHECK_EQ_INT(n, 1);
  if (n == 1) CHECK_EQ_INT(vs[0].version, 2);
  sm__version_status_free(vs, n);
  CHECK_ERR(sm__manager_status(m, "l", 0, "beta", &vs, &n), "Unrecognized servable version label: beta");

  /* Labelling a version that is not there is refused; the old labels stay. */
  sm_version_label moved[] = {{"stable", 3}};
  c.labels = moved;
  c.nlabels = 1;
  CHECK_ERR(sm__manager_set_config(m, &c, 1), "version 3 of model l");
  CHECK_OK(sm__manager_acquire(m, "l", 0, "canary", &s));
  sm__servable_release(s);
  sm__manager_free(m);

  /* --allow_version_labels_for_unavailable_models: new labels may name versions still to load,
   * but an existing label may not move to one. */
  sm_manager_options o = {0};
  o.allow_version_labels_for_unavailable_models = 1;
  CHECK_OK(sm__manager_new(&o, &m));
  c.labels = labels;
  c.nlabels = 2;
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_OK(sm__manager_acquire(m, "l", 0, "canary", &s));
  if (s) CHECK_EQ_INT(sm__servable_version(s), 2);
  sm__servable_release(s);
  c.labels = moved;
  c.nlabels = 1;
  CHECK_ERR(sm__manager_set_config(m, &c, 1), "not currently available");
  sm_version_label moved2[] = {{"stable", 2}};
  c.labels = moved2;
  CHECK_OK(sm__manager_set_config(m, &c, 1)); /* 2 is available: moving is fine */
  CHECK_OK(sm__manager_acquire(m, "l", 0, "stable", &s));
  if (s) CHECK_EQ_INT(sm__servable_version(s), 2);
  sm__servable_release(s);
  sm__manager_free(m);
}

static void test_config_file(void) {
  char a[512], b[512], cfg[512], text[4096];
  mkpath(a, sizeof a, "cfg_a");
  mkpath(b, sizeof b, "cfg_b");
  mkpath(cfg, sizeof cfg, "models.config");
  CHECK(mkdir(a, 0755) == 0);
  CHECK(mkdir(b, 0755) == 0);
  add_version(a, "1", ZOO_SQUARE);
  add_version(b, "5", ZOO_SQUARE);
  add_version(b, "6", ZOO_SQUARE);
  snprintf(text, sizeof text,
           "# two models\n"
           "model_config_list {\n"
           "  config {\n"
           "    name: 'a'\n"
           "    base_path: '%s'\n"
           "    model_platform: \"tensorflow\"\n"
           "  }\n"
           "  config {\n"
           "    name: \"b\"\n"
           "    base_path: \"%s\"\n"
           "    model_version_policy { specific { versions: 5 versions: 6 } }\n"
           "    version_labels { key: 'stable' value: 5 }\n"
           "    version_labels { key: 'canary' value: 6 }\n"
           "  }\n"
           "}\n",
           a, b);
  write_text(cfg, text);

  sm_model_config_list *l = NULL;
  CHECK_OK(sm__model_config_list_read(cfg, &l));
  CHECK_EQ_INT(sm__model_config_list_count(l), 2);
  if (sm__model_config_list_count(l) == 2) {
    const sm_model_config *c0 = sm__model_config_list_at(l, 0), *c1 = sm__model_config_list_at(l, 1);
    CHECK_EQ_STR(c0->name, "a");
    CHECK_EQ_INT(c0->policy, SM_POLICY_LATEST);
    CHECK_EQ_INT(c0->latest_n, 1);
    CHECK_EQ_STR(c1->name, "b");
    CHECK_EQ_INT(c1->policy, SM_POLICY_SPECIFIC);
    CHECK_EQ_INT(c1->nversions, 2);
    CHECK_EQ_INT(c1->nlabels, 2);
    CHECK(sm__model_config_list_at(l, 2) == NULL);
  }
  sm__model_config_list_free(l);

  /* Labels need AVAILABLE versions: the first apply is refused (as TF Serving at startup)... */
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(NULL, &m));
  CHECK_ERR(sm__manager_watch_config_file(m, cfg, 0.05), "not currently available for inference");
  char applying[1200];
  snprintf(applying, sizeof applying, "applying %s: ", cfg); /* the file's name in front, once */
  CHECK_ERR(sm__manager_watch_config_file(m, cfg, 0), applying);
  CHECK_ERR(sm__manager_watch_config_file(m, "/nonexistent/models.config", 0),
            "model_config_file: /nonexistent/models.config: ");
  sm__manager_free(m);
  /* ... and accepted with --allow_version_labels_for_unavailable_models. */
  sm_manager_options o = {0};
  o.allow_version_labels_for_unavailable_models = 1;
  CHECK_OK(sm__manager_new(&o, &m));
  CHECK_OK(sm__manager_watch_config_file(m, cfg, 0.05));
  CHECK_EQ_INT(latest_version(m, "a"), 1);
  CHECK_EQ_INT(latest_version(m, "b"), 6);
  sm_servable *s = NULL;
  CHECK_OK(sm__manager_acquire(m, "b", 0, "stable", &s));
  if (s) CHECK_EQ_INT(sm__servable_version(s), 5);
  sm__servable_release(s);

  /* Edit the file: drop model a, move stable to 6. Applied by the watcher within a second. */
  snprintf(text, sizeof text,
           "model_config_list: { config: { name: 'b' base_path: '%s'\n"
           "  model_version_policy: { all: {} }\n"
           "  version_labels: [{ key: 'stable' value: 6 }] } }\n",
           b);
  write_text(cfg, text);
  int done = 0;
  for (int i = 0; i < 200 && !done; i++) {
    sleep_ms(20);
    done = latest_version(m, "a") == -1;
  }
  CHECK(done);
  CHECK_OK(sm__manager_acquire(m, "b", 0, "stable", &s));
  if (s) CHECK_EQ_INT(sm__servable_version(s), 6);
  sm__servable_release(s);
  CHECK_ERR(sm__manager_acquire(m, "b", 0, "canary", &s), "Unrecognized servable version label: canary");

  /* A broken edit is refused and the running config stays. */
  write_text(cfg, "model_config_list { config { name: 'b' base_path: ");
  sleep_ms(300);
  CHECK_OK(sm__manager_acquire(m, "b", 0, "stable", &s));
  sm__servable_release(s);

  /* And a later good edit brings a back. */
  snprintf(text, sizeof text, "model_config_list { config { name: 'a' base_path: '%s' } config { name: 'b' base_path: '%s' } }\n", a, b);
  write_text(cfg, text);
  done = 0;
  for (int i = 0; i < 200 && !done; i++) {
    sleep_ms(20);
    done = latest_version(m, "a") == 1;
  }
  CHECK(done);
  sm__manager_free(m);

  /* Parse errors name the file and the fault. */
  static const char *const bad[][2] = {
      {"model_config_list { config { name: 'x' base_path: '/x' } config { name: 'x' base_path: '/y' } }",
       "Illegal to list model x multiple times"},
      {"model_config_list { config { base_path: '/x' } }", "has no name"},
      {"model_config_list { config { name: 'x' } }", "has no base_path"},
      {"model_config_list { config { name: 'x' base_path: '/x' model_platform: 'pytorch' } }",
       "Model x requests unsupported platform pytorch"},
      {"model_config_list { config { name: 'x' base_path: '/x' model_type: TENSORFLOW model_platform: 'tensorflow' } }",
       "Illegal setting both model_type(deprecated) and model_platform."},
      {"custom_model_config { type_url: 'x' }", "custom_model_config is not supported"},
      {"model_config_list { config { name: 'x' base_path: '/x' bogus_field: 1 } }", "bogus_field"},
      {"model_config_list { config { name: 'x'", "models.config"},
      {"\xff\xfe\x00garbage{{{{", "models.config"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    write_text(cfg, bad[i][0]);
    CHECK_ERR(sm__model_config_list_read(cfg, &l), bad[i][1]);
  }
  /* Deep nesting must not blow the stack. */
  {
    size_t depth = 100000;
    char *deep = malloc(depth * 2 + 64);
    if (deep) {
      char *p = deep;
      p += sprintf(p, "model_config_list ");
      for (size_t i = 0; i < depth; i++) *p++ = '{';
      for (size_t i = 0; i < depth; i++) *p++ = '}';
      *p = 0;
      write_text(cfg, deep);
      free(deep);
      sm_status *st = sm__model_config_list_read(cfg, &l);
      CHECK(st != NULL);
      sm_status_free(st);
    }
  }
  /* An empty file is an empty config (TF Serving takes no action). */
  write_text(cfg, "");
  CHECK_OK(sm__model_config_list_read(cfg, &l));
  CHECK_EQ_INT(sm__model_config_list_count(l), 0);
  sm__model_config_list_free(l);
  CHECK_ERR(sm__model_config_list_read("/nonexistent/models.config", &l),
            "reading model config file: /nonexistent/models.config: ");
}

static void test_background_poll(void) {
  char base[512];
  mkpath(base, sizeof base, "bg");
  CHECK(mkdir(base, 0755) == 0);
  add_version(base, "1", ZOO_SQUARE);
  sm_manager_options o = {0};
  o.poll_wait_seconds = 0.1;
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(&o, &m));
  sm_model_config c = one_model("bg", base);
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_INT(latest_version(m, "bg"), 1);
  /* Copied in under a temporary name and renamed, as a deployment would. */
  char tmp[1024], dst[1024];
  snprintf(tmp, sizeof tmp, "%s/.incoming", base);
  snprintf(dst, sizeof dst, "%s/2", base);
  CHECK(copy_tree(ZOO_SQUARE, tmp) == 0);
  CHECK(rename(tmp, dst) == 0);
  int ok = 0;
  for (int i = 0; i < 100 && !ok; i++) { /* within 2 s */
    sleep_ms(20);
    ok = latest_version(m, "bg") == 2;
  }
  CHECK(ok);
  sm__manager_free(m);
}

/* Requests from several threads while versions come and go: every acquired servable must run
 * (its model is never freed under it), and everything is freed at the end (ASan checks). */
typedef struct worker {
  sm_manager *m;
  _Atomic int *stop;
  int runs, errors;
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  while (!*w->stop) {
    sm_servable *s = NULL;
    sm_status *st = sm__manager_acquire(w->m, "c", 0, NULL, &s);
    if (st) {
      sm_status_free(st);
      w->errors++;
      continue;
    }
    if (run_square(s, 2.0f) != 4.0f) w->errors++;
    w->runs++;
    sm__servable_release(s);
  }
  return NULL;
}

static void *release_later(void *arg) {
  sm_servable *s = arg;
  sleep_ms(100);
  if (run_square(s, 5.0f) != 25.0f) sm_test_failures++;
  sm__servable_release(s);
  return NULL;
}

static void test_concurrent(void) {
  char base[512];
  mkpath(base, sizeof base, "conc");
  CHECK(mkdir(base, 0755) == 0);
  add_version(base, "1", ZOO_SQUARE);
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(NULL, &m));
  sm_model_config c = one_model("c", base);
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  _Atomic int stop = 0;
  enum { NW = 4 };
  worker w[NW];
  pthread_t th[NW];
  for (int i = 0; i < NW; i++) {
    w[i] = (worker){.m = m, .stop = &stop};
    CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
  }
  for (int v = 2; v <= 8; v++) {
    char name[16];
    snprintf(name, sizeof name, "%d", v);
    add_version(base, name, ZOO_SQUARE);
    if (v == 5) add_broken_version(base, "50"); /* fails; then 6.. are lower and not latest */
    sm__manager_poll(m);
    sleep_ms(20);
  }
  stop = 1;
  int runs = 0, errors = 0;
  for (int i = 0; i < NW; i++) {
    pthread_join(th[i], NULL);
    runs += w[i].runs;
    errors += w[i].errors;
  }
  CHECK(runs > 0);
  CHECK_EQ_INT(errors, 0);
  CHECK_EQ_INT(latest_version(m, "c"), 4); /* 50 is latest and broken: 4 (before it) keeps serving */
  sm_manager_counts k = sm__manager_counts_get(m);
  CHECK(k.unloads >= 3);

  /* Freeing the manager waits for requests in flight. */
  sm_servable *held = NULL;
  CHECK_OK(sm__manager_acquire(m, "c", 0, NULL, &held));
  pthread_t rel;
  CHECK(pthread_create(&rel, NULL, release_later, held) == 0);
  sm__manager_free(m);
  pthread_join(rel, NULL);
}

/* TF Serving's own fixtures: versions 123 and 124, half_plus_two's numbers, a non-SavedModel. */
static void test_tf_serving_fixtures(void) {
  char base[512], bad[512];
  mkpath(base, sizeof base, "hpt");
  mkpath(bad, sizeof bad, "bad");
  CHECK(mkdir(base, 0755) == 0);
  CHECK(mkdir(bad, 0755) == 0);
  add_version(base, "00000123", TFS "/saved_model_half_plus_two_2_versions/00000123");
  add_version(bad, "00000123", TFS "/bad_half_plus_two/00000123");
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(NULL, &m));
  sm_model_config cs[2] = {one_model("half_plus_two", base), one_model("bad", bad)};
  CHECK_OK(sm__manager_set_config(m, cs, 2));
  CHECK_EQ_INT(latest_version(m, "half_plus_two"), 123);
  char code[64];
  CHECK_EQ_STR(state_of(m, "bad", 123, code, sizeof code), "END");
  CHECK(strcmp(code, "OK") != 0);
  add_version(base, "00000124", TFS "/saved_model_half_plus_two_2_versions/00000124");
  sm__manager_poll(m);
  CHECK_EQ_INT(latest_version(m, "half_plus_two"), 124);
  sm_servable *s = NULL;
  CHECK_OK(sm__manager_acquire(m, "half_plus_two", 0, NULL, &s));
  if (s) {
    int64_t dims[2] = {3, 1};
    sm_tensor *x = NULL, *y = NULL;
    CHECK_OK(sm_tensor_new(SM_FLOAT, 2, dims, &x));
    float *xd = sm_tensor_data(x);
    xd[0] = 1, xd[1] = 2, xd[2] = 5;
    const char *ia[] = {"x"}, *oa[] = {"y"};
    CHECK_OK(sm_model_run(sm__servable_model(s), "serving_default", ia, &x, 1, oa, 1, &y));
    if (y) {
      const float *yd = sm_tensor_data(y);
      CHECK(yd[0] == 2.5f && yd[1] == 3.0f && yd[2] == 4.5f);
    }
    sm_tensor_free(x);
    sm_tensor_free(y);
  }
  sm__servable_release(s);
  sm__manager_free(m);
}

/* Writes the first `n` bytes of src to dst (all of it for n < 0). */
static void copy_prefix(const char *src, const char *dst, long n) {
  FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
  CHECK(in && out);
  int c;
  for (long i = 0; in && out && (n < 0 || i < n) && (c = fgetc(in)) != EOF; i++) fputc(c, out);
  if (in) fclose(in);
  if (out) fclose(out);
}

/* Issue 17: a version copied in pieces is never loaded half way, never replaces the version
 * serving, and serves once whole; a failed one is tried again when its files change. */
static void test_two_step_copy(void) {
  char base[512], v2[1024], p[1100];
  mkpath(base, sizeof base, "twostep");
  CHECK(mkdir(base, 0755) == 0);
  add_version(base, "1", ZOO_VARS);
  sm_manager *m = NULL;
  CHECK_OK(sm__manager_new(NULL, &m)); /* settle 0: only completeness gates a load */
  sm_model_config c = one_model("tv", base);
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_INT(latest_version(m, "tv"), 1);
  snprintf(v2, sizeof v2, "%s/2", base);
  CHECK(mkdir(v2, 0755) == 0);
  /* step 1: the graph alone (it restores variables): not loaded, version 1 serves */
  snprintf(p, sizeof p, "%s/saved_model.pb", v2);
  copy_prefix(ZOO_VARS "/saved_model.pb", p, -1);
  sm__manager_poll(m);
  CHECK_EQ_STR(state_of(m, "tv", 2, NULL, 0), "START");
  CHECK_EQ_INT(latest_version(m, "tv"), 1);
  /* the index without its data shard: still incomplete */
  snprintf(p, sizeof p, "%s/variables", v2);
  CHECK(mkdir(p, 0755) == 0);
  snprintf(p, sizeof p, "%s/variables/variables.index", v2);
  copy_prefix(ZOO_VARS "/variables/variables.index", p, -1);
  sm__manager_poll(m);
  CHECK_EQ_STR(state_of(m, "tv", 2, NULL, 0), "START");
  CHECK_EQ_INT(sm__manager_counts_get(m).load_failures, 0);
  /* a shard cut short: the load fails, and is not tried forever while nothing changes */
  snprintf(p, sizeof p, "%s/variables/variables.data-00000-of-00001", v2);
  copy_prefix(ZOO_VARS "/variables/variables.data-00000-of-00001", p, 20);
  for (int i = 0; i < 10; i++) sm__manager_poll(m);
  char code[64];
  CHECK_EQ_STR(state_of(m, "tv", 2, code, sizeof code), "END");
  CHECK(strcmp(code, "OK") != 0);
  uint64_t failed = sm__manager_counts_get(m).load_failures;
  CHECK(failed >= 1 && failed <= 6);
  CHECK_EQ_INT(latest_version(m, "tv"), 1);
  /* the shard completes: its files changed, so it is tried afresh, and serves */
  sleep_ms(20); /* a new mtime even on coarse clocks */
  copy_prefix(ZOO_VARS "/variables/variables.data-00000-of-00001", p, -1);
  sm__manager_poll(m);
  CHECK_EQ_INT(latest_version(m, "tv"), 2);
  CHECK_EQ_STR(state_of(m, "tv", 1, NULL, 0), "END");
  sm__manager_free(m);

  /* settle_seconds: a directory that just changed waits until a pass sees it unchanged */
  sm_manager_options o = {.settle_seconds = 0.3};
  CHECK_OK(sm__manager_new(&o, &m));
  CHECK_OK(sm__manager_set_config(m, &c, 1));
  CHECK_EQ_INT(latest_version(m, "tv"), 2);
  add_version(base, "3", ZOO_VARS);
  sm__manager_poll(m);
  CHECK_EQ_INT(latest_version(m, "tv"), 2);
  CHECK_EQ_STR(state_of(m, "tv", 3, NULL, 0), "START");
  sleep_ms(400);
  sm__manager_poll(m);
  CHECK_EQ_INT(latest_version(m, "tv"), 3);
  sm__manager_free(m);
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "/tmp/sm_test_serve_manager_XXXXXX");
  if (!mkdtemp(g_tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_latest_and_hot_reload();
  test_policies();
  test_labels();
  test_config_file();
  test_background_poll();
  test_concurrent();
  test_two_step_copy();
  struct stat st;
  int have_shared = stat(TFS "/saved_model_half_plus_two_2_versions", &st) == 0;
  if (have_shared)
    test_tf_serving_fixtures();
  else
    fprintf(stderr, "skipped: %s absent (TF Serving fixture cases)\n", TFS);
  rm_tree(g_tmp);
  TEST_MAIN_END();
}

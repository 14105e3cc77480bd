/* test_builder_kill.c - a save killed at any moment leaves no export dir or a complete one.
 * A child saves a model with an 8 MiB variable; the parent SIGKILLs it after delays spread over
 * the time a save takes, then reads whatever is at the export path. A later save of the same
 * target removes the hidden temp dir the killed one left. */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "savedmodel/builder.h"
#include "savedmodel/bundle.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"
#include "test.h"

#define NEL (2 * 1024 * 1024)

static sm_status *save(const char *dir) {
  sm_graph *g;
  sm_builder *b = NULL;
  sm_tensor *w = NULL;
  const char *x, *r, *y;
  int64_t n = NEL;
  sm_status *s = sm_graph_new(&g);
  if (s) return s;
  s = sm_tensor_new(SM_FLOAT, 1, &n, &w);
  for (int64_t i = 0; !s && i < n; i++) ((float *)sm_tensor_data(w))[i] = (float)(i % 1000);
  if (!s) s = sm_graph_placeholder(g, "x", SM_FLOAT, 1, &n, &x);
  if (!s) s = sm_graph_variable(g, "w", w, &r);
  if (!s) s = sm_graph_binary(g, "Mul", "y", x, r, &y);
  sm_signature *sig = NULL;
  if (!s) s = sm_signature_predict(SM_DEFAULT_SERVING_SIGNATURE_DEF_KEY, g, "x", x, "y", y, &sig);
  const char *tags[] = {SM_TAG_SERVE};
  if (!s) s = sm_builder_new(dir, &b);
  if (!s) s = sm_builder_add_meta_graph_and_variables(b, g, tags, 1, &sig, 1);
  if (!s) s = sm_builder_save(b, 0);
  sm_builder_free(b);
  sm_signature_free(sig);
  sm_tensor_free(w);
  sm_graph_free(g);
  return s;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1 when dir is absent, or complete and right. */
static int absent_or_complete(const char *dir) {
  if (!sm__path_exists(dir)) return 1;
  Tensorflow__SavedModel *sm = NULL;
  sm_status *s = sm_saved_model_read(dir, &sm);
  if (s) {
    fprintf(stderr, "%s: %s\n", dir, sm_status_message(s));
    sm_status_free(s);
    return 0;
  }
  sm_saved_model_free(sm);
  char *prefix = sm__path_join(dir, "variables/variables");
  sm_bundle *b = NULL;
  sm_tensor *t = NULL;
  s = sm_bundle_open(prefix, &b);
  if (!s) s = sm_bundle_read(b, "w", &t);
  int ok = !s && sm_tensor_num_elements(t) == NEL && ((float *)sm_tensor_data(t))[NEL - 1] == (float)((NEL - 1) % 1000);
  if (s) fprintf(stderr, "%s: %s\n", dir, sm_status_message(s));
  sm_status_free(s);
  sm_tensor_free(t);
  sm_bundle_close(b);
  free(prefix);
  return ok;
}

static int count_temps(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    n += !strncmp(e->d_name, ".tmp-", 5);
  if (d) closedir(d);
  return n;
}

int main(void) {
  char tmpl[] = SM_BINARY_DIR "/test_builder_kill.XXXXXX";
  char *tmp = mkdtemp(tmpl);
  CHECK(tmp != NULL);
  if (!tmp) TEST_MAIN_END();
  /* how long one save takes here */
  char *ref = sm__path_join(tmp, "ref");
  double t0 = now();
  CHECK_OK(save(ref));
  double took = now() - t0;
  CHECK(absent_or_complete(ref));
  free(ref);
  int complete = 0, absent = 0;
  for (int i = 0; i < 12; i++) {
    char name[32];
    snprintf(name, sizeof name, "kill%d", i);
    char *dir = sm__path_join(tmp, name);
    pid_t pid = fork();
    if (pid == 0) {
      sm_status *s = save(dir);
      _exit(s ? 1 : 0);
    }
    CHECK(pid > 0);
    if (pid <= 0) break;
    /* delays from 0 to 3x a save (a forked child runs slower): before, during, after the rename */
    useconds_t us = (useconds_t)(took * 1e6 * 3.0 * i / 11);
    usleep(us);
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    CHECK(absent_or_complete(dir));
    if (sm__path_exists(dir))
      complete++;
    else
      absent++;
    free(dir);
  }
  fprintf(stderr, "save took %.3fs; after kills: %d complete, %d absent\n", took, complete, absent);
  /* the killed saves' temp dirs (".tmp-killN-PID"): a new save of each absent target succeeds
   * and removes its dead predecessor's; none is left in the end */
  int stale = count_temps(tmp);
  for (int i = 0; i < 12; i++) {
    char name[32];
    snprintf(name, sizeof name, "kill%d", i);
    char *dir = sm__path_join(tmp, name);
    if (!sm__path_exists(dir)) {
      CHECK_OK(save(dir));
      CHECK(absent_or_complete(dir) && sm__path_exists(dir));
    }
    free(dir);
  }
  fprintf(stderr, "temp dirs left by killed saves: %d; after saving again: %d\n", stale, count_temps(tmp));
  CHECK_EQ_INT(count_temps(tmp), 0);
  char cmd[sizeof tmpl + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (!sm_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  TEST_MAIN_END();
}

/* test_graph_tfserving.c - every TensorFlow-written SavedModel under SM_SHARED_DIR/fixtures/tf-serving
 * compiles into a graph whose signatures resolve and prune; the directories that are not
 * SavedModels (see that README) fail to read, as they should. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "graph_check.h"

#define FIX SM_SHARED_DIR "/fixtures/tf-serving"

/* Not SavedModels, or incomplete (README: "Missing blobs", legacy SessionBundle exports). */
static int known_bad(const char *name) {
  return !strcmp(name, "bad_half_plus_two") || !strcmp(name, "session_bundle_half_plus_two") ||
         !strcmp(name, "tf_text_regression");
}

static int is_dir(const char *p) {
  struct stat st;
  return !stat(p, &st) && S_ISDIR(st.st_mode);
}

static void counter_and_mkl(void) {
  Tensorflow__SavedModel *sm = NULL;
  CHECK_OK(sm_saved_model_read(FIX "/saved_model_counter/00000123", &sm));
  if (!sm) return;
  sm_cgraph *g = NULL;
  CHECK_OK(sm__cgraph_compile(sm->meta_graphs[0], &g));
  if (g) {
    /* VariableV2's ref output, and Assign's ref input */
    int v = -1;
    for (int i = 0; i < sm__cgraph_num_nodes(g) && v < 0; i++)
      if (!strcmp(sm__node_op(sm__cgraph_node(g, i)), "VariableV2")) v = i;
    CHECK(v >= 0);
    if (v >= 0) CHECK_EQ_INT(sm__node_output_dtype(sm__cgraph_node(g, v), 0), 101);
    int a = -1;
    for (int i = 0; i < sm__cgraph_num_nodes(g) && a < 0; i++)
      if (!strcmp(sm__node_op(sm__cgraph_node(g, i)), "AssignAdd")) a = i;
    CHECK(a >= 0);
    if (a >= 0) {
      CHECK_EQ_INT(sm__node_input_dtype(sm__cgraph_node(g, a), 0), 101);
      CHECK_EQ_INT(sm__node_input_dtype(sm__cgraph_node(g, a), 1), 1);
    }
    sm__cgraph_free(g);
  }
  sm_saved_model_free(sm);
}

int main(void) {
  DIR *d = opendir(FIX);
  if (!d) {
    printf("skipped: %s absent\n", FIX);
    return SM_TEST_SKIP;
  }
  int models = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || e->d_name[0] == '_') continue;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", FIX, e->d_name);
    if (!is_dir(dir)) continue;
    DIR *vd = opendir(dir);
    if (!vd) continue;
    struct dirent *ve;
    while ((ve = readdir(vd))) {
      if (ve->d_name[0] == '.') continue;
      char path[1400];
      snprintf(path, sizeof path, "%s/%s", dir, ve->d_name);
      if (!is_dir(path)) continue;
      Tensorflow__SavedModel *sm = NULL;
      sm_status *s = sm_saved_model_read(path, &sm);
      if (s) {
        if (!known_bad(e->d_name)) {
          fprintf(stderr, "%s: %s\n", path, sm_status_message(s));
          sm_test_failures++;
        }
        sm_status_free(s);
        continue;
      }
      CHECK(!known_bad(e->d_name));
      CHECK(check_saved_model(sm, path) > 0);
      models++;
      sm_saved_model_free(sm);
    }
    closedir(vd);
  }
  closedir(d);
  CHECK(models >= 12);
  counter_and_mkl();
  TEST_MAIN_END();
}

/* test_umbrella.c - include/savedmodel/savedmodel.h: this file includes only it (before the test
 * harness) and uses a declaration of every public header, and every header under
 * include/savedmodel/ must be listed in it. */
#include "savedmodel/savedmodel.h"

#include <dirent.h>

#include "test.h"

int main(void) {
  /* one declaration from each header, reached through the umbrella alone */
  sm_tensor *t = NULL;
  int64_t dims[1] = {3};
  CHECK_OK(sm_tensor_new(SM_FLOAT, 1, dims, &t));                   /* tensor.h, dtype.h */
  CHECK_EQ_STR(sm_dtype_name(SM_FLOAT), "DT_FLOAT");                /* dtype.h */
  sm_tensor_free(t);
  CHECK_EQ_STR(SM_TAG_SERVE, "serve");                              /* constants.h */
  CHECK_ERR(sm_saved_model_read("/nonexistent/umbrella", &(Tensorflow__SavedModel *){NULL}), "umbrella"); /* format.h */
  CHECK(sm_model_load != NULL);                                     /* model.h */
  CHECK(sm_bundle_open != NULL);                                    /* bundle.h */
  CHECK(sm_npy_write != NULL);                                      /* npy.h */
  CHECK(sm_builder_save != NULL);                                   /* builder.h */
  CHECK(sm_status_code(NULL) == SM_OK);                             /* status.h */
  CHECK(sm_version()[0] >= '0' && sm_version()[0] <= '9');            /* version.h */

  /* every public header is in the umbrella */
  char *text = NULL;
  size_t len = 0;
  FILE *f = fopen(SM_SOURCE_DIR "/include/savedmodel/savedmodel.h", "rb");
  CHECK(f != NULL);
  if (f) {
    text = calloc(1, 1 << 16);
    if (text) len = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
  }
  CHECK(text && len > 0);
  DIR *d = opendir(SM_SOURCE_DIR "/include/savedmodel");
  CHECK(d != NULL);
  int headers = 0;
  for (struct dirent *e; d && text && (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n < 3 || strcmp(e->d_name + n - 2, ".h") != 0 || strcmp(e->d_name, "savedmodel.h") == 0) continue;
    char want[300];
    snprintf(want, sizeof want, "#include \"savedmodel/%s\"", e->d_name);
    if (!strstr(text, want)) {
      fprintf(stderr, "include/savedmodel/savedmodel.h does not include %s\n", e->d_name);
      sm_test_failures++;
    }
    headers++;
  }
  if (d) closedir(d);
  CHECK(headers >= 15);
  free(text);
  TEST_MAIN_END();
}

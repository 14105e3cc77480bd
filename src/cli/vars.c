/* vars.c - `savedmodel vars`: the variables of a SavedModel (or any TensorBundle checkpoint), as
 * TensorFlow's inspect_checkpoint prints them (tensorflow/python/tools/inspect_checkpoint.py):
 *
 *   key (DT_FLOAT) [2,3]            one line per tensor, keys in byte order (CheckpointReader
 *   ...                             DebugString), then an empty line and
 *   # Total number of params: N     the sum of the element counts.
 *
 * --name K prints "tensor: K (float32) [2, 3]", the value as numpy prints it, and the total. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/print_value.h"
#include "savedmodel/bundle.h"
#include "savedmodel/dtype.h"

static const char usage[] =
    "usage: savedmodel vars (--dir DIR | --file_name PREFIX) [--name KEY | --all_tensors |\n"
    "                       --all_tensor_names] [--json]\n"
    "\n"
    "Lists the tensors of the SavedModel's variables/variables bundle (or of the checkpoint\n"
    "PREFIX), like TensorFlow's inspect_checkpoint; --name prints one tensor's value.\n";

static uint64_t num_elements(const sm_bundle_entry *e) {
  uint64_t n = 1;
  for (int i = 0; i < e->rank; i++) n *= (uint64_t)e->dims[i]; /* wraps like numpy's int64 */
  return n;
}

static void dtype_json(FILE *f, int dtype) {
  const char *n = sm_dtype_name(dtype);
  if (n) fprintf(f, "\"%s\"", n);
  else fprintf(f, "%d", dtype);
}

static void shape_json(FILE *f, const sm_bundle_entry *e) {
  fputc('[', f);
  for (int i = 0; i < e->rank; i++) fprintf(f, i ? ", %lld" : "%lld", (long long)e->dims[i]);
  fputc(']', f);
}

/* "tensor: key (float32) [2, 3]" */
static void tensor_line(const sm_bundle_entry *e) {
  const char *dn = sm__cli_tf_dtype_name(e->dtype);
  printf("tensor: %s (%s) [", e->key, dn ? dn : "unknown");
  for (int i = 0; i < e->rank; i++) printf(i ? ", %lld" : "%lld", (long long)e->dims[i]);
  printf("]\n");
}

static sm_status *total_params(const sm_bundle *b, uint64_t *total) {
  *total = 0;
  for (size_t i = 0; i < sm_bundle_num_entries(b); i++) {
    sm_bundle_entry e;
    sm_status *st = sm_bundle_entry_at(b, i, &e);
    if (st) return st;
    *total += num_elements(&e);
  }
  return NULL;
}

static int print_value(const sm_bundle *b, const sm_bundle_entry *e, int json) {
  sm_tensor *t = NULL;
  sm_status *st = sm_bundle_read(b, e->key, &t);
  if (st) return sm__cli_fail(st);
  if (json) sm__cli_print_json_value(stdout, t);
  else sm__cli_print_numpy(stdout, t);
  sm_tensor_free(t);
  return 0;
}

static int list_json(const sm_bundle *b, const char *name, int values) {
  size_t n = sm_bundle_num_entries(b);
  uint64_t total = 0;
  printf("{\"variables\": [");
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    sm_bundle_entry e;
    sm_status *st = sm_bundle_entry_at(b, i, &e);
    if (st) return sm__cli_fail(st);
    total += num_elements(&e);
    if (name && strcmp(name, e.key) != 0) continue;
    printf(first ? "\n  {\"key\": " : ",\n  {\"key\": ");
    first = 0;
    sm__json_str(stdout, e.key, strlen(e.key));
    printf(", \"dtype\": ");
    dtype_json(stdout, e.dtype);
    printf(", \"shape\": ");
    shape_json(stdout, &e);
    if (values) {
      printf(", \"value\": ");
      int rc = print_value(b, &e, 1);
      if (rc) return rc;
    }
    printf("}");
  }
  printf("\n ],\n \"total_params\": %llu}\n", (unsigned long long)total);
  return 0;
}

static int run(const sm_bundle *b, const char *name, int all_tensors, int all_names, int json) {
  if (name) {
    sm_bundle_entry e;
    sm_status *st = sm_bundle_lookup(b, name, &e);
    if (st) {
      int missing = sm_status_code(st) == SM_NOT_FOUND;
      if (missing) {
        sm_status_free(st);
        return sm__cli_error(1, "Tensor %s not found in checkpoint", name);
      }
      return sm__cli_fail(st);
    }
  }
  if (json) return list_json(b, name, name != NULL || all_tensors);

  size_t n = sm_bundle_num_entries(b);
  for (size_t i = 0; i < n; i++) {
    sm_bundle_entry e;
    sm_status *st = sm_bundle_entry_at(b, i, &e);
    if (st) return sm__cli_fail(st);
    if (name) {
      if (strcmp(name, e.key) != 0) continue;
      tensor_line(&e);
      int rc = print_value(b, &e, 0);
      if (rc) return rc;
    } else if (all_tensors || all_names) {
      tensor_line(&e);
      if (all_tensors) {
        int rc = print_value(b, &e, 0);
        if (rc) return rc;
      }
    } else {
      char shape[32 * SM_MAX_RANK + 8];
      const char *dn = sm_dtype_name(e.dtype);
      printf("%s (%s) %s\n", e.key, dn ? dn : "DT_INVALID", sm_shape_str(e.rank, e.dims, shape, sizeof shape));
    }
  }
  if (!name && !all_tensors && !all_names) printf("\n"); /* print() after DebugString's last \n */
  uint64_t total;
  sm_status *st = total_params(b, &total);
  if (st) return sm__cli_fail(st);
  printf("# Total number of params: %llu\n", (unsigned long long)total);
  return 0;
}

int sm__cli_vars(int argc, char **argv) {
  sm_flag flags[] = {
      {"dir", SM_FLAG_STRING, "SavedModel directory (reads DIR/variables/variables).", NULL, 0},
      {"file_name", SM_FLAG_STRING, "Checkpoint prefix (PREFIX.index, PREFIX.data-*).", NULL, 0},
      {"name", SM_FLAG_STRING, "Print this tensor's value.", NULL, 0},
      {"tensor_name", SM_FLAG_STRING, "Same as --name (inspect_checkpoint's spelling).", NULL, 0},
      {"all_tensors", SM_FLAG_BOOL, "Print every tensor's value.", NULL, 0},
      {"all_tensor_names", SM_FLAG_BOOL, "Print every tensor's name, dtype and shape.", NULL, 0},
      {"json", SM_FLAG_BOOL, "Print JSON.", NULL, 0},
  };
  const size_t nflags = sizeof flags / sizeof *flags;
  int rc = sm__cli_parse_flags(argc, argv, flags, nflags, usage);
  if (rc) return rc < 0 ? 0 : rc;
  const char *dir = flags[0].value, *prefix = flags[1].value;
  const char *name = flags[2].value ? flags[2].value : flags[3].value;
  if (!dir == !prefix) {
    fprintf(stderr, "savedmodel vars: give exactly one of --dir and --file_name\n%s", usage);
    return 2;
  }
  char *path = NULL;
  if (dir) {
    size_t len = strlen(dir) + sizeof "/variables/variables";
    path = malloc(len);
    if (!path) return sm__cli_error(1, "out of memory");
    snprintf(path, len, "%s/variables/variables", dir);
    prefix = path;
  }
  sm_bundle *b = NULL;
  sm_status *st = sm_bundle_open(prefix, &b);
  free(path);
  if (st) return sm__cli_fail(st);
  rc = run(b, name, flags[4].on, flags[5].on, flags[6].on);
  sm_bundle_close(b);
  if (fflush(stdout) != 0 && rc == 0) rc = sm__cli_error(1, "writing to stdout failed");
  return rc;
}

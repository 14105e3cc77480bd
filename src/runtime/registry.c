/* registry.c - the op registry: one table per kernel family, merged and sorted once.
 *
 * Each family file in src/ops/ exports `sm_kernels_<family>`, ended by an entry whose op is NULL.
 * The merged index is built on first use under a once-flag (the only global state of the runtime)
 * and looked up by binary search. An op registered twice is a programming error caught by the
 * registry unit test (test_registry), not at run time. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

extern const sm_kernel sm_kernels_array[];
extern const sm_kernel sm_kernels_math[];
extern const sm_kernel sm_kernels_nn[];
extern const sm_kernel sm_kernels_state[];
extern const sm_kernel sm_kernels_io[];
extern const sm_kernel sm_kernels_lookup[];
extern const sm_kernel sm_kernels_parsing[];
extern const sm_kernel sm_kernels_string[];
extern const sm_kernel sm_kernels_einsum[];

static const sm_kernel *const families[] = {sm_kernels_array, sm_kernels_math,   sm_kernels_nn,
                                            sm_kernels_state, sm_kernels_io,     sm_kernels_lookup,
                                            sm_kernels_parsing, sm_kernels_string, sm_kernels_einsum};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const sm_kernel **index_;
static const char **names_;
static int count_;

static int by_op(const void *a, const void *b) {
  return strcmp((*(const sm_kernel *const *)a)->op, (*(const sm_kernel *const *)b)->op);
}

static void build(void) {
  int n = 0;
  for (size_t f = 0; f < sizeof families / sizeof *families; f++)
    for (const sm_kernel *k = families[f]; k->op; k++) n++;
  index_ = malloc((size_t)(n ? n : 1) * sizeof *index_);
  names_ = malloc((size_t)(n + 1) * sizeof *names_);
  if (!index_ || !names_) {
    free(index_);
    free(names_);
    index_ = NULL;
    names_ = NULL;
    return; /* lookups then find nothing, and plans fail naming the op */
  }
  n = 0;
  for (size_t f = 0; f < sizeof families / sizeof *families; f++)
    for (const sm_kernel *k = families[f]; k->op; k++) index_[n++] = k;
  qsort(index_, (size_t)n, sizeof *index_, by_op);
  for (int i = 0; i < n; i++) names_[i] = index_[i]->op;
  names_[n] = NULL;
  count_ = n;
}

const sm_kernel *sm_kernel_find(const char *op) {
  pthread_once(&once, build);
  int lo = 0, hi = count_ - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int c = strcmp(op, index_[mid]->op);
    if (c == 0) return index_[mid];
    if (c < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return NULL;
}

const char *const *sm_kernel_ops(int *count) {
  pthread_once(&once, build);
  *count = count_;
  return names_;
}

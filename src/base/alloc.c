/* alloc.c - the allocator of tensor buffers and kernel scratch (alloc.h): malloc underneath, a
 * fault-injection countdown on top. */
#include "base/alloc.h"

#include <stdlib.h>

static long countdown;  /* atomic: 0 = off, else allocations left before the failing one */
static int persistent;  /* atomic */
static long nfailed;    /* atomic */

static int inject(void) {
  if (!__atomic_load_n(&countdown, __ATOMIC_RELAXED)) return 0;
  long left = __atomic_sub_fetch(&countdown, 1, __ATOMIC_RELAXED);
  if (left > 0) return 0;
  int persist = __atomic_load_n(&persistent, __ATOMIC_RELAXED);
  if (left < 0 && !persist) return 0; /* a one-shot failure another thread took first */
  /* persistent: park at -1 (non-zero, so every later allocation comes here and fails);
   * one-shot: off */
  __atomic_store_n(&countdown, persist ? -1 : 0, __ATOMIC_RELAXED);
  __atomic_add_fetch(&nfailed, 1, __ATOMIC_RELAXED);
  return 1;
}

void *sm__alloc(size_t n) { return inject() ? NULL : malloc(n ? n : 1); }
void *sm__calloc(size_t n) { return inject() ? NULL : calloc(n ? n : 1, 1); }
void sm__free(void *p) { free(p); }

void sm__alloc_fail_after(long k, int persist) {
  __atomic_store_n(&persistent, persist && k > 0, __ATOMIC_RELAXED);
  __atomic_store_n(&nfailed, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&countdown, k > 0 ? k : 0, __ATOMIC_RELAXED);
}

long sm__alloc_failures(void) { return __atomic_load_n(&nfailed, __ATOMIC_RELAXED); }

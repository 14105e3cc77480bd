/* alloc.c - the allocator of tensor buffers and kernel scratch (alloc.h): malloc underneath, a
 * size header in front of each block for the live and peak counters, and a fault-injection
 * countdown on top. */
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

/* The header keeps the block malloc's fundamental alignment. */
#define HDR ((size_t)_Alignof(max_align_t))
_Static_assert(_Alignof(max_align_t) >= sizeof(size_t), "the size header fits in front of the block");

/* All atomic. countdown: 0 = off, > 0 allocations left up to and including the failing one,
 * -1 = persistent injection has fired (every allocation fails). */
static long countdown;
static int persistent;
static long nfailed;
static long long ncalls, nlive;
static size_t live_bytes, peak_bytes;

static int inject(void) {
  __atomic_add_fetch(&ncalls, 1, __ATOMIC_RELAXED);
  long c = __atomic_load_n(&countdown, __ATOMIC_RELAXED);
  while (c != 0) {
    if (c < 0) break; /* persistent, fired */
    long next = c > 1 ? c - 1 : __atomic_load_n(&persistent, __ATOMIC_RELAXED) ? -1 : 0;
    if (__atomic_compare_exchange_n(&countdown, &c, next, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      if (c > 1) return 0;
      break; /* this one is the k-th */
    }
  }
  if (c == 0) return 0;
  __atomic_add_fetch(&nfailed, 1, __ATOMIC_RELAXED);
  return 1;
}

static void count_in(size_t n) {
  __atomic_add_fetch(&nlive, 1, __ATOMIC_RELAXED);
  size_t now = __atomic_add_fetch(&live_bytes, n, __ATOMIC_RELAXED);
  size_t peak = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
  while (now > peak && !__atomic_compare_exchange_n(&peak_bytes, &peak, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void count_out(size_t n) {
  __atomic_sub_fetch(&nlive, 1, __ATOMIC_RELAXED);
  __atomic_sub_fetch(&live_bytes, n, __ATOMIC_RELAXED);
}

static void *finish(char *base, size_t n) {
  if (!base) return NULL;
  memcpy(base, &n, sizeof n);
  count_in(n);
  return base + HDR;
}

void *sm__alloc(size_t n) {
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  return finish(malloc(n + HDR), n);
}

void *sm__calloc(size_t n) {
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  return finish(calloc(1, n + HDR), n);
}

void *sm__realloc(void *p, size_t n) {
  if (!p) return sm__alloc(n);
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  char *base = (char *)p - HDR;
  size_t old;
  memcpy(&old, base, sizeof old);
  char *nb = realloc(base, n + HDR);
  if (!nb) return NULL;
  count_out(old);
  return finish(nb, n);
}

void sm__free(void *p) {
  if (!p) return;
  char *base = (char *)p - HDR;
  size_t n;
  memcpy(&n, base, sizeof n);
  count_out(n);
  free(base);
}

size_t sm__alloc_size(const void *p) {
  if (!p) return 0;
  size_t n;
  memcpy(&n, (const char *)p - HDR, sizeof n);
  return n;
}

void sm__alloc_fail_after(long k, int persist) {
  __atomic_store_n(&countdown, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&persistent, persist && k > 0, __ATOMIC_RELAXED);
  __atomic_store_n(&nfailed, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&countdown, k > 0 ? k : 0, __ATOMIC_RELAXED);
}

long sm__alloc_failures(void) { return __atomic_load_n(&nfailed, __ATOMIC_RELAXED); }

void sm__alloc_stats(sm_alloc_stats *out) {
  out->calls = __atomic_load_n(&ncalls, __ATOMIC_RELAXED);
  out->live_blocks = __atomic_load_n(&nlive, __ATOMIC_RELAXED);
  out->live_bytes = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
  out->peak_bytes = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
}

void sm__alloc_peak_reset(void) {
  __atomic_store_n(&peak_bytes, __atomic_load_n(&live_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

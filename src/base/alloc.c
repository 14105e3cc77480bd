/* alloc.c - the allocator of tensor buffers and kernel scratch (alloc.h): malloc underneath, a
 * size header in front of each block for the live and peak counters, a fault-injection
 * countdown on top, and a small cache of freed large blocks.
 *
 * The cache: a plan run allocates the same large intermediates (MBs each) on every call. From
 * malloc each comes back as fresh pages (glibc maps big blocks, or trims the heap's top after
 * they are freed), so every call paid a page fault and the kernel's zeroing per 4 KiB page: a
 * quarter to a third of a Transformer's batch-16 CPU time (bench/RESULTS.md). Freed blocks of at
 * least CACHE_MIN bytes are kept (up to CACHE_BYTES in all, CACHE_SLOTS blocks) and handed to the
 * next request of the same size class; sizes are rounded up to classes of 1/8 of their power of
 * two, so a block serves any request of its class (at most 12.5% more memory than asked).
 * SM_ALLOC_CACHE_MB=0 turns it off (set before the first allocation); the counters and fault
 * injection see cached blocks exactly as fresh ones. */
#include "base/alloc.h"

#include <pthread.h>
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

/* ---- the cache of large freed blocks ---- */
#define CACHE_MIN ((size_t)256 << 10)
#define CACHE_SLOTS 32
/* Sanitizer builds keep no freed block unless SM_ALLOC_CACHE_MB says so: a reused block would hide
 * a use after free from AddressSanitizer. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CACHE_BYTES_DEFAULT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CACHE_BYTES_DEFAULT 0
#endif
#endif
#ifndef CACHE_BYTES_DEFAULT
#define CACHE_BYTES_DEFAULT ((size_t)64 << 20)
#endif

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static void *cache_blk[CACHE_SLOTS];   /* bases (header included) */
static size_t cache_cls[CACHE_SLOTS];  /* their class sizes (header excluded) */
static size_t cache_bytes, cache_cap;
static int cache_init; /* 0: not read yet; 1: read */

/* The size a request of n bytes is allocated with: n below CACHE_MIN, else n rounded up to its
 * class (a multiple of 1/8 of the largest power of two <= n). 0 where that would overflow. */
static size_t class_size(size_t n) {
  if (n < CACHE_MIN) return n;
  size_t p = (size_t)1 << (63 - __builtin_clzll((unsigned long long)n)), step = p / 8;
  if (n > (size_t)-1 - HDR - step) return 0;
  return (n + step - 1) / step * step;
}

static size_t cache_capacity(void) {
  if (!__atomic_load_n(&cache_init, __ATOMIC_ACQUIRE)) {
    const char *e = getenv("SM_ALLOC_CACHE_MB");
    size_t cap = CACHE_BYTES_DEFAULT;
    if (e && *e) {
      char *end;
      unsigned long long mb = strtoull(e, &end, 10);
      if (!*end) cap = mb > ((size_t)-1 >> 21) ? ((size_t)-1 >> 1) : (size_t)mb << 20;
    }
    pthread_mutex_lock(&cache_mu);
    if (!cache_init) cache_cap = cap;
    __atomic_store_n(&cache_init, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&cache_mu);
  }
  return cache_cap;
}

/* A cached block of class cls, or NULL. */
static char *cache_take(size_t cls) {
  if (cls < CACHE_MIN || !cache_capacity()) return NULL;
  char *b = NULL;
  pthread_mutex_lock(&cache_mu);
  for (int i = 0; i < CACHE_SLOTS && !b; i++)
    if (cache_blk[i] && cache_cls[i] == cls) {
      b = cache_blk[i];
      cache_blk[i] = NULL;
      cache_bytes -= cls;
    }
  pthread_mutex_unlock(&cache_mu);
  return b;
}

/* Keeps base (a block of class cls) for reuse; 0 where the cache is full (the caller frees it). */
static int cache_put(char *base, size_t cls) {
  if (cls < CACHE_MIN || cls > cache_capacity()) return 0;
  int kept = 0;
  pthread_mutex_lock(&cache_mu);
  if (cache_bytes + cls <= cache_cap)
    for (int i = 0; i < CACHE_SLOTS && !kept; i++)
      if (!cache_blk[i]) {
        cache_blk[i] = base;
        cache_cls[i] = cls;
        cache_bytes += cls;
        kept = 1;
      }
  pthread_mutex_unlock(&cache_mu);
  return kept;
}

static char *raw_alloc(size_t n) {
  size_t cls = class_size(n);
  if (!cls && n) return NULL;
  char *b = cache_take(cls);
  return b ? b : malloc(cls + HDR);
}

static void *finish(char *base, size_t n) {
  if (!base) return NULL;
  memcpy(base, &n, sizeof n);
  count_in(n);
  return base + HDR;
}

void *sm__alloc(size_t n) {
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  return finish(raw_alloc(n), n);
}

void *sm__calloc(size_t n) {
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  size_t cls = class_size(n);
  char *b = cls || !n ? cache_take(cls) : NULL;
  if (b) {
    memset(b + HDR, 0, n);
    return finish(b, n);
  }
  return finish(cls || !n ? calloc(1, cls + HDR) : NULL, n);
}

void *sm__realloc(void *p, size_t n) {
  if (!p) return sm__alloc(n);
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  char *base = (char *)p - HDR;
  size_t old;
  memcpy(&old, base, sizeof old);
  size_t cls = class_size(n);
  char *nb = cls || !n ? realloc(base, cls + HDR) : NULL;
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
  if (!cache_put(base, class_size(n))) free(base);
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

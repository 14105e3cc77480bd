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
 * CACHE_MIN is 32 KiB: with 256 KiB, VGG16's 32-128 KiB activations at batch 1 came back from
 * glibc as fresh pages, ~50 page faults a call (bench/RESULTS.md, session 14).
 * SM_ALLOC_CACHE_MB=0 turns it off (set before the first allocation); the counters and fault
 * injection see cached blocks exactly as fresh ones.
 *
 * Huge pages: lasting blocks (sm__alloc_lasting: a model's packed weights) of at least HUGE_MIN
 * bytes are mapped 2 MiB-aligned with madvise(MADV_HUGEPAGE), since Linux here runs transparent
 * huge pages in "madvise" mode: a batch-1 call streams ~60-150 MB of weights, and on 4 KiB pages
 * every 4 KiB of it is a TLB miss (a two-level walk under a hypervisor). Only whole 2 MiB pages
 * inside the block are advised, so no page is faulted in that the block does not reach. Not for
 * every large block: per-call intermediates on huge pages made a Transformer at batch 16 slower
 * (each fresh 2 MiB fault zeroes, and may compact, a whole huge page; bench/RESULTS.md, session
 * 14). SM_HUGEPAGES=0 turns it off (read at the first lasting allocation); sanitizer builds
 * default to off (mmap'd blocks are not checked for use after free). */
#include "base/alloc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The header keeps the block malloc's fundamental alignment and holds two words: the size asked
 * and where the block came from (FROM_MALLOC or FROM_HUGE). */
#define HDR ((size_t)(_Alignof(max_align_t) >= 2 * sizeof(size_t) ? _Alignof(max_align_t) : 2 * sizeof(size_t)))
enum { FROM_MALLOC = 0, FROM_HUGE = 1 };
static size_t hdr_from(const char *base) {
  size_t f;
  memcpy(&f, base + sizeof(size_t), sizeof f);
  return f;
}
static void set_from(char *base, size_t f) { memcpy(base + sizeof(size_t), &f, sizeof f); }

/* All atomic. countdown: 0 = off, > 0 allocations left up to and including the failing one,
 * -1 = persistent injection has fired (every allocation fails). */
static long countdown;
static int persistent;
static long nfailed;
static long long ncalls, nlive, nhits;
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
#define CACHE_MIN ((size_t)32 << 10)
#define CACHE_SLOTS 32
/* Sanitizer builds keep no freed block unless SM_ALLOC_CACHE_MB says so: a reused block would hide
 * a use after free from AddressSanitizer. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif
#define CACHE_BYTES_DEFAULT (SANITIZED ? 0 : (size_t)64 << 20)

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
  if (b) __atomic_add_fetch(&nhits, 1, __ATOMIC_RELAXED);
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

/* ---- huge-page blocks ---- */
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN HUGE_PAGE
#define MAP_GRAIN ((size_t)4096) /* mappings are rounded to this (a multiple of the page size) */
static int huge_state; /* 0: not read yet; 1: on; 2: off */

int sm__hugepages_on(void) {
  int st = __atomic_load_n(&huge_state, __ATOMIC_ACQUIRE);
  if (!st) {
    const char *e = getenv("SM_HUGEPAGES");
    st = e && *e ? (strcmp(e, "0") ? 1 : 2) : SANITIZED ? 2 : 1;
    __atomic_store_n(&huge_state, st, __ATOMIC_RELEASE);
  }
  return st == 1;
}

static size_t map_len(size_t cls) { return (cls + HDR + MAP_GRAIN - 1) / MAP_GRAIN * MAP_GRAIN; }

/* A fresh (zeroed) block of class cls, 2 MiB-aligned, its whole 2 MiB pages advised huge; NULL
 * where cls is too small, huge pages are off, or the map fails (the caller then uses malloc). */
static char *huge_alloc(size_t cls) {
#ifdef MADV_HUGEPAGE
  if (cls < HUGE_MIN || cls > SIZE_MAX / 2 || !sm__hugepages_on()) return NULL;
  size_t len = map_len(cls), span = len + HUGE_PAGE - MAP_GRAIN;
  char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  char *b = (char *)(((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
  if (b > m) munmap(m, (size_t)(b - m));
  if (m + span > b + len) munmap(b + len, (size_t)(m + span - (b + len)));
  (void)madvise(b, len / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* advice: failure only costs speed */
  set_from(b, FROM_HUGE);
  return b;
#else
  (void)cls;
  return NULL;
#endif
}

/* Gives base (a block of class cls) back to malloc or unmaps it. */
static void raw_free(char *base, size_t cls) {
  if (hdr_from(base) == FROM_HUGE) munmap(base, map_len(cls));
  else free(base);
}

static char *malloc_block(size_t bytes, int zero) {
  char *b = zero ? calloc(1, bytes) : malloc(bytes);
  if (b) set_from(b, FROM_MALLOC);
  return b;
}

static char *raw_alloc(size_t n) {
  size_t cls = class_size(n);
  if (!cls && n) return NULL;
  char *b = cache_take(cls);
  return b ? b : malloc_block(cls + HDR, 0);
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

void *sm__alloc_lasting(size_t n) {
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  char *b = huge_alloc(class_size(n)); /* fresh, not a cached block that may be on small pages */
  return finish(b ? b : raw_alloc(n), n);
}

void *sm__calloc(size_t n) {
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  size_t cls = class_size(n);
  char *b = cls || !n ? cache_take(cls) : NULL;
  if (b) {
    memset(b + HDR, 0, n);
    return finish(b, n);
  }
  return finish(cls || !n ? malloc_block(cls + HDR, 1) : NULL, n);
}

void *sm__realloc(void *p, size_t n) {
  if (!p) return sm__alloc(n);
  if (inject() || n > (size_t)-1 - HDR) return NULL;
  char *base = (char *)p - HDR;
  size_t old;
  memcpy(&old, base, sizeof old);
  size_t cls = class_size(n);
  if (!cls && n) return NULL;
  char *nb;
  if (hdr_from(base) == FROM_HUGE) { /* not malloc's: a new block, the bytes kept copied */
    if (!(nb = huge_alloc(cls)) && !(nb = malloc_block(cls + HDR, 0))) return NULL;
    memcpy(nb + HDR, p, old < n ? old : n);
    raw_free(base, class_size(old));
  } else if (!(nb = realloc(base, cls + HDR))) {
    return NULL;
  }
  count_out(old);
  return finish(nb, n);
}

void sm__free(void *p) {
  if (!p) return;
  char *base = (char *)p - HDR;
  size_t n;
  memcpy(&n, base, sizeof n);
  count_out(n);
  size_t cls = class_size(n);
  if (!cache_put(base, cls)) raw_free(base, cls);
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
  out->cache_hits = __atomic_load_n(&nhits, __ATOMIC_RELAXED);
  out->live_blocks = __atomic_load_n(&nlive, __ATOMIC_RELAXED);
  out->live_bytes = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
  out->peak_bytes = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
}

void sm__alloc_peak_reset(void) {
  __atomic_store_n(&peak_bytes, __atomic_load_n(&live_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

/* alloc.h - the one allocator of tensors' buffers and kernels' scratch, with fault injection.
 *
 * Every buffer a tensor owns (its elements, its header, the bytes of its strings) and every
 * scratch block a kernel asks for (sm__kctx_scratch, and the raw nn functions' patch buffers) comes
 * from here, so one place can count, bound or fail them. A failure is reported by the caller as
 * SM_RESOURCE_EXHAUSTED (TensorFlow's code for "OOM when allocating"), never as a crash.
 *
 * Blocks carry a small header with their size, so the allocator knows the bytes live and the peak
 * (what a memory budget, or an arena that replaces malloc underneath, will use). A block from here
 * goes back with sm__free, never free(), and the other way round (ASan reports a mix-up).
 *
 * Fault injection (SQLite's idea): a test sets a countdown; the allocation it reaches fails, and
 * with `persist` every later one too, until the countdown is cleared. Tests sweep the countdown
 * over every allocation of a load and run (tests/unit/test_alloc_fail.c), and check that each
 * failure comes back as a clean error with nothing leaked. The countdown is process-wide and
 * atomic; with it off an allocation costs a relaxed atomic load and the counters' updates more
 * than malloc. */
#ifndef SM_BASE_ALLOC_H
#define SM_BASE_ALLOC_H
#include <stddef.h>

void *sm__alloc(size_t n);  /* n 0 gives a valid unique pointer; NULL on failure */
void *sm__calloc(size_t n); /* zeroed */
/* Grows or shrinks p (NULL: as sm__alloc) keeping its first min(old, n) bytes. NULL on failure,
 * and p is then untouched (still the caller's to free). */
void *sm__realloc(void *p, size_t n);
void sm__free(void *p); /* NULL-safe */
/* As sm__alloc, for a block that lives as long as a model (packed weights): from 2 MiB on it is
 * mapped 2 MiB-aligned on transparent huge pages where sm__hugepages_on(). Freed with sm__free. */
void *sm__alloc_lasting(size_t n);
/* The size a block was asked with (its header's record); 0 for NULL. */
size_t sm__alloc_size(const void *p);

/* Whether lasting blocks (sm__alloc_lasting) are advised onto 2 MiB transparent huge pages: on
 * unless SM_HUGEPAGES=0 (read once; off by default in sanitizer builds). */
int sm__hugepages_on(void);

/* Fault injection: the k-th allocation from now fails (k >= 1); with persist, every one after it
 * too. k 0 turns injection off. */
void sm__alloc_fail_after(long k, int persist);
/* How many allocations injection has failed since the last sm__alloc_fail_after. */
long sm__alloc_failures(void);

/* Counters since the process started (process-wide; exact once the threads that allocate have
 * joined). calls: allocation requests, failed ones included (the numbering sm__alloc_fail_after
 * counts in); cache_hits: those served by a kept freed block; live: blocks and bytes (as asked, headers excluded) not yet freed; peak_bytes: the
 * most live bytes seen since the last sm__alloc_peak_reset. */
typedef struct sm_alloc_stats {
  long long calls;
  long long cache_hits; /* requests served by a freed block kept for reuse (alloc.c's cache) */
  long long live_blocks;
  size_t live_bytes;
  size_t peak_bytes;
} sm_alloc_stats;
void sm__alloc_stats(sm_alloc_stats *out);
void sm__alloc_peak_reset(void); /* peak := live */

#endif

/* alloc.h - the one allocator of tensors' buffers and kernels' scratch, with fault injection.
 *
 * Every buffer a tensor owns and every scratch block a kernel asks for (sm_kctx_scratch, and the
 * raw nn functions' patch buffers) comes from here, so one place can count, bound or fail them.
 * A failure is reported by the caller as SM_RESOURCE_EXHAUSTED (TensorFlow's code for "OOM when
 * allocating"), never as a crash.
 *
 * Fault injection (SQLite's idea): a test sets a countdown; the allocation it reaches fails, and
 * with `persist` every later one too, until the countdown is cleared. Tests sweep the countdown
 * over every allocation of a load and run, and check that each failure comes back as a clean
 * error with nothing leaked. The countdown is process-wide and atomic; with it off an allocation
 * costs one relaxed atomic load more than malloc. */
#ifndef SM_BASE_ALLOC_H
#define SM_BASE_ALLOC_H
#include <stddef.h>

void *sm__alloc(size_t n);  /* n 0 gives a valid unique pointer; NULL on failure */
void *sm__calloc(size_t n); /* zeroed */
void sm__free(void *p);     /* NULL-safe */

/* Fault injection: the k-th allocation from now fails (k >= 1); with persist, every one after it
 * too. k 0 turns injection off. */
void sm__alloc_fail_after(long k, int persist);
/* How many allocations injection has failed since the last sm__alloc_fail_after. */
long sm__alloc_failures(void);

#endif

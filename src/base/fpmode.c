/* fpmode.c - TensorFlow's floating-point mode (fpmode.h): flush denormals to zero, round to
 * nearest, set around each run on the caller's thread and for good on the pool's workers. */
#include "base/fpmode.h"

#include <stdlib.h>

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define FP_MASK 0xE040UL /* FTZ | rounding | DAZ */
#define FP_TF 0x8040UL   /* FTZ, DAZ, round to nearest */
static unsigned long get_mode(void) { return _mm_getcsr(); }
static void set_mode(unsigned long v) { _mm_setcsr((unsigned)v); }
#elif defined(__aarch64__)
#define FP_MASK 0x1C00000UL /* FZ (bit 24), RMode (bits 22-23) */
#define FP_TF 0x1000000UL   /* FZ, round to nearest */
static unsigned long get_mode(void) {
  unsigned long v;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
  return v;
}
static void set_mode(unsigned long v) { __asm__ __volatile__("msr fpcr, %0" : : "r"(v)); }
#else
#define FP_MASK 0UL /* no known mode register: IEEE as the platform runs it */
#define FP_TF 0UL
static unsigned long get_mode(void) { return 0; }
static void set_mode(unsigned long v) { (void)v; }
#endif

int sm__fpmode_flushes(void) {
  static int on = -1; /* read once; a race only reads it twice */
  int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("SM_FLUSH_DENORMALS");
    v = !(e && e[0] == '0' && !e[1]);
    __atomic_store_n(&on, v, __ATOMIC_RELAXED);
  }
  return v;
}

sm_fpmode sm__fpmode_enter(void) {
  sm_fpmode m = {0, 0};
  if (!FP_MASK || !sm__fpmode_flushes()) return m;
  m.saved = get_mode();
  unsigned long want = (m.saved & ~FP_MASK) | FP_TF;
  if (want != m.saved) {
    set_mode(want);
    m.changed = 1;
  }
  return m;
}

void sm__fpmode_leave(sm_fpmode m) {
  if (!m.changed) return;
  set_mode((get_mode() & ~FP_MASK) | (m.saved & FP_MASK)); /* the flags raised meanwhile stay */
}

void sm__fpmode_set_thread(void) {
  if (!FP_MASK) return;
  unsigned long cur = get_mode();
  unsigned long want = sm__fpmode_flushes() ? (cur & ~FP_MASK) | FP_TF : cur & ~FP_TF;
  if (want != cur) set_mode(want);
}

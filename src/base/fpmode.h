/* fpmode.h - TensorFlow's floating-point mode for kernel work (fpmode.c): denormals flushed to
 * zero (FTZ: a result that would be subnormal is 0; DAZ: a subnormal operand reads as 0) and
 * rounding to nearest, as TF sets around every kernel it runs (its executor's Process and its
 * thread pools' threads: ScopedFlushDenormal + ScopedSetRound(FE_TONEAREST)) and around Grappler's
 * constant folding. So exp(-103) is 0 as in TF, not 1.4e-45, and x / 1e-40 is +-Inf.
 *
 * x86-64: MXCSR's FTZ (0x8000) and DAZ (0x40) bits, rounding bits (0x6000) cleared; aarch64:
 * FPCR.FZ (bit 24), RMode (bits 22-23) cleared; elsewhere nothing is done. Only these mode bits
 * are changed and put back: the exception flags a run raised stay raised.
 * SM_FLUSH_DENORMALS=0 (read once): IEEE denormals - the calling thread's mode is left as the
 * host set it, the pool's workers clear FTZ/DAZ. */
#ifndef SM_BASE_FPMODE_H
#define SM_BASE_FPMODE_H

typedef struct sm_fpmode {
  unsigned long saved; /* the thread's control register before enter */
  int changed;         /* 0: enter wrote nothing, leave writes nothing */
} sm_fpmode;

/* TF's mode on the calling thread (unless SM_FLUSH_DENORMALS=0); pass the result to leave, on the
 * same thread, which restores the caller's mode bits. Two register reads and at most one write. */
sm_fpmode sm__fpmode_enter(void);
void sm__fpmode_leave(sm_fpmode m);
/* For a thread that runs nothing but kernels (a pool worker), set once for its life: TF's mode,
 * or with SM_FLUSH_DENORMALS=0 FTZ/DAZ cleared (a new thread inherits its creator's mode, which
 * may be a host's own or a run's). */
void sm__fpmode_set_thread(void);
/* 1 unless SM_FLUSH_DENORMALS=0. */
int sm__fpmode_flushes(void);

#endif

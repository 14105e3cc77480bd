/* control_internal.h - what the control flow kernels (control.c) take from other op files and
 * from control_hoist.c: a read-only look at a TensorList's items (list.c), and the While body's
 * loop-invariant input projection (control_hoist.c). */
#ifndef SM_OPS_CONTROL_INTERNAL_H
#define SM_OPS_CONTROL_INTERNAL_H
#include <stdint.h>

#include "runtime/kernel.h"

/* 1 when t is a scalar DT_VARIANT holding a TensorList: its element dtype, length and items
 * (borrowed; an unset item is NULL), and the list object (an identity: a list's items never change
 * while two values hold it). 0 otherwise. */
int sm__list_view(const sm_tensor *t, int *dtype, int64_t *n, sm_tensor *const **items, const void **id);

/* ---- the hoist (control_hoist.c) ------------------------------------------------------------
 * A While body of this shape, for loop vars k (a TensorList), j (an int32 counter) and a weight:
 *   x  = TensorListGetItem(var k, var j, ...)       float items [b, K]
 *   y  = MatMul(x, w) (transpose_a false)           w: ReadVariableOp(var r) | var r | a Const
 *   body returns var k and var r unchanged (Identity allowed) and var j + 1 as var j;
 *   no node of the body but ReadVariableOp is stateful (nothing can assign the variable), and
 *   none calls a function (no nested loop or call: the hoist compiles the body twice more, so
 *   nested hoists would compile 2^depth plans);
 * computes y for a chunk of steps in one product (the items of steps [j, j + c) stacked
 * [c*b, K] x w -> P [c, b, N], c such that the chunk stays in a core's cache, the weight read
 * once per call) and feeds P[j - j0] for y to a second body plan in which the MatMul, the GetItem
 * and the weight read are pruned. A step whose j is out of [0, T), a list that is not all set
 * [b, K] float items, or a list other than the one the call started with runs the plain body. The
 * product is MatMul's own (nn_matmul.c) on more rows: the plain loop's values within float
 * rounding, not always its bits (oneDNN's AVX2 gemm:jit sums 2 and 14 rows of K = 4 differently:
 * bench/RESULTS.md "Session 17 - k6"), so out of memory in the hoist's prepare is an error, not
 * the plain body.
 *
 * On unless SM_LOOP_HOIST=0 when the While is prepared (bench/bench_loops.py --ab measures both;
 * bench/RESULTS.md: a few per cent of CPU per call on a Keras LSTM(128), where the per-step MatMul
 * already runs through oneDNN; a chunk of the whole sequence at once was slower: cache-cold). */
typedef struct sm__hoist sm__hoist;
/* In prepare, after the body compiled: *out NULL when the body has not that shape. */
sm_status *sm__hoist_prepare(const sm_node *node, const char *body, int nvars, sm__hoist **out);
void sm__hoist_free(sm__hoist *h); /* NULL-safe */
/* In compute, before the loop, on the initial loop vars: *on 1 when the call can use it (then the
 * projection is computed and kept in *run; free with sm__hoist_end). */
typedef struct sm__hoist_run sm__hoist_run;
sm_status *sm__hoist_begin(const sm__hoist *h, sm_kctx *ctx, sm_tensor *const *vars, sm__hoist_run **run);
/* One iteration: *done 1 when it ran the hoisted body on vars into next (n outputs); 0 when the
 * caller must run the plain body. */
sm_status *sm__hoist_step(const sm__hoist *h, sm__hoist_run *run, sm_kctx *ctx, sm_tensor *const *vars,
                          sm_tensor **next, int *done);
void sm__hoist_end(sm__hoist_run *run); /* NULL-safe */
/* Tests: how many loop calls have used a hoist since the process started; and the chunk budget in
 * bytes (0: the default), returning the previous one. */
int64_t sm__hoist_calls(void);
int64_t sm__hoist_set_chunk_bytes(int64_t bytes);

#endif

/* grad_internal.h - what the gradient kernel files (grad_nn.c: convolution and normalization
 * gradients; grad_pool.c: pooling, dilation and fractional-pool gradients) share: a 2-D or 3-D
 * window op's attrs in one form (spatial axes D, H, W; a 2-D op has D = 1), and moving a tensor of
 * any real dtype into a channels-last double buffer and back. These kernels compute in double
 * (half and bfloat16 widened, as TF's CPU kernels widen them to float) and round once on output.
 * Private to src/ops/grad_*.c. */
#ifndef SM_OPS_GRAD_INTERNAL_H
#define SM_OPS_GRAD_INTERNAL_H
#include <stdint.h>

#include "runtime/kernel.h"

typedef struct sm__gw {
  int nd;      /* tensor rank: 4 (2-D op) or 5 (3-D op) */
  int nchw;    /* channels second (NCHW / NCDHW) */
  int padding; /* SM_NN_VALID / SAME / EXPLICIT (nn_internal.h) */
  int64_t ksize[3], stride[3], dil[3];
  int64_t pad[6]; /* EXPLICIT: before, after for D, H, W */
} sm__gw;

/* Reads data_format, padding (+ explicit_paddings when explicit_ok), strides, dilations (when
 * has_dil and the attr is there) and ksize (when has_ksize) of an nd-rank op into w, with TF's
 * messages. */
sm_status *sm__gw_prepare(const sm_node *n, int nd, int has_ksize, int has_dil, int explicit_ok, sm__gw *w);

/* Real dtypes these kernels take: float, double, half, bfloat16 (and the integer ones when ints). */
int sm__g_real(int dtype, int ints);
/* A new scratch copy of t as doubles, channels last (t NCHW/NCDHW when nchw); NULL with *st set. */
double *sm__g_load(sm_kctx *ctx, const sm_tensor *t, int nchw, sm_status **st);
/* Writes the channels-last doubles v (t's element count) into t, channels second when nchw,
 * rounding to t's dtype. May use scratch; fails only when it cannot have it. */
sm_status *sm__g_store(sm_kctx *ctx, const double *v, sm_tensor *t, int nchw);
/* t's dims in channels-last order, spatial axes padded to 3: N, D, H, W, C (rank 4: D = 1). */
void sm__g_dims(const sm_tensor *t, int nchw, int64_t out[5]);
/* Output i of shape N, D, H, W, C (channels-last order) in the op's layout (rank nd). */
sm_status *sm__g_alloc(sm_kctx *ctx, int i, int dtype, int nd, int nchw, const int64_t d5[5], sm_tensor **out);
/* A shape vector (int32 or int64, rank 1) of `want` entries into v; TF-style message naming what. */
sm_status *sm__g_shape_vec(const sm_tensor *t, int want, const char *what, int64_t *v);

#endif

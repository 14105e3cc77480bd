/* cuda_kernels.c - the CUDA backend's kernels (sm_kernels_cuda, registered for SM_BACKEND_CUDA by
 * src/runtime/gpu/cuda_backend.c when the module opens; this directory is not a CPU family, so the
 * registry's generated list does not pick it up).
 *
 * Each kernel reads its attrs in prepare (the nn family's window and fused-op readers, nn_internal.h)
 * and answers SM_UNIMPLEMENTED for what it does not do (a dtype other than float, NCHW, a fused
 * MaxPool, training-mode batch norm), so the plan runs that node on the CPU instead (device.h). In
 * compute, its inputs are device tensors (but those SM_KERNEL_HOST_IN marks: shapes, axes,
 * permutations, paddings, read on the host), its outputs device tensors made on the run's stream,
 * and the work is one or two calls of the module's table (src/cuda/smcu.h); a failed call's
 * message names the CUDA / cuBLAS / cuDNN call, and the executor adds the node. Shapes are checked
 * here as the CPU kernels check them, so a bad shape is an error before anything is queued. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/tensor_internal.h"
#include "ops/nn_internal.h"
#include "runtime/gpu/cuda_backend.h"


/* ---- shared --------------------------------------------------------------------------------- */
typedef struct kstate {
  int op;  /* SMCU_* unary / binary op, or a kernel's own choice */
  int act; /* an SMCU_* activation after the op */
  float alpha, eps;
  int ta, tb;
  int has_bias;
  sm__nn_window win;
  int64_t squeeze[SM_MAX_RANK];
  int nsqueeze, keep_dims;
  int has_pool; /* _FusedConv2D with this library's fused MaxPool (nn_fuse.c) */
  sm__nn_pool_fuse pool;
} kstate;

static sm_status *float_only(const sm_node *n) {
  int dt;
  sm_status *st = sm__node_attr_type(n, "T", &dt);
  if (st) return st;
  return dt == SM_FLOAT ? NULL : sm_status_new(SM_UNIMPLEMENTED, "the GPU kernels are float32 only");
}

static sm_status *new_state(const sm_node *n, void **state, kstate **out) {
  *state = NULL;
  sm_status *st = float_only(n);
  if (st) return st;
  kstate *k = calloc(1, sizeof *k);
  if (!k) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM in prepare");
  *state = *out = k;
  return NULL;
}

static const float *fin(sm_kctx *c, int i) { return sm_tensor_data(sm__kctx_input(c, i)); }

/* Every device input of c really is in device memory (the plan's job; checked, never trusted). */
static sm_status *on_device(sm_kctx *c, int n) {
  for (int i = 0; i < n; i++) {
    const sm_tensor *t = sm__kctx_input(c, i);
    if (!t || sm__tensor_space(t) != SM_MEM_DEVICE)
      return sm_status_new(SM_INTERNAL, "input %d is not in GPU memory", i);
  }
  return NULL;
}

/* A host integer vector input (int32 or int64) as int64 values, at most SM_MAX_RANK of them. */
static sm_status *host_ints(sm_kctx *c, int i, int64_t *v, int *n) {
  const sm_tensor *t = sm__kctx_input(c, i);
  if (!t || sm__tensor_space(t) != SM_MEM_HOST) return sm_status_new(SM_INTERNAL, "input %d is not in host memory", i);
  int64_t ne = sm_tensor_num_elements(t);
  if (ne > SM_MAX_RANK * 2) return sm_status_new(SM_INVALID_ARGUMENT, "input %d has %lld elements", i, (long long)ne);
  for (int64_t k = 0; k < ne; k++)
    if (sm_tensor_dtype(t) == SM_INT32) v[k] = ((const int32_t *)sm_tensor_data(t))[k];
    else if (sm_tensor_dtype(t) == SM_INT64) v[k] = ((const int64_t *)sm_tensor_data(t))[k];
    else return sm_status_new(SM_INVALID_ARGUMENT, "input %d must be int32 or int64", i);
  *n = (int)ne;
  return NULL;
}

#define CALL(expr)                                \
  do {                                            \
    char err[SMCU_ERR] = "";                      \
    const smcu_api *A = sm__cuda_api();           \
    void *S = sm__kctx_device_run(c);             \
    (void)S;                                      \
    if (!A) return sm_status_new(SM_INTERNAL, "the CUDA module is not open"); \
    if (expr) return sm__cuda_err(err);           \
  } while (0)

static int act_of(int nn_act) {
  switch (nn_act) {
    case SM_NN_ACT_RELU: return SMCU_RELU;
    case SM_NN_ACT_RELU6: return SMCU_RELU6;
    case SM_NN_ACT_ELU: return SMCU_ELU;
    case SM_NN_ACT_LEAKY_RELU: return SMCU_LEAKY_RELU;
    case SM_NN_ACT_SIGMOID: return SMCU_SIGMOID;
    case SM_NN_ACT_TANH: return SMCU_TANH;
  }
  return SMCU_ID;
}

/* ---- elementwise ------------------------------------------------------------------------------ */
static sm_status *unary_prepare(const sm_node *n, void **state) {
  kstate *k;
  sm_status *st = new_state(n, state, &k);
  if (st) return st;
  const char *op = sm__node_op(n);
  static const struct {
    const char *op;
    int act;
  } ops[] = {{"Relu", SMCU_RELU}, {"Relu6", SMCU_RELU6}, {"Elu", SMCU_ELU},     {"Sigmoid", SMCU_SIGMOID},
             {"Tanh", SMCU_TANH}, {"Neg", SMCU_NEG},     {"Rsqrt", SMCU_RSQRT}, {"Sqrt", SMCU_SQRT},
             {"Square", SMCU_SQUARE}, {"Exp", SMCU_EXP}};
  k->act = SMCU_ID;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!strcmp(op, ops[i].op)) k->act = ops[i].act;
  return NULL;
}

static sm_status *unary(const void *state, sm_kctx *c) {
  const kstate *k = state;
  sm_status *st = on_device(c, 1);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0);
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, sm_tensor_rank(x), sm_tensor_dims(x), &y))) return st;
  CALL(A->unary(S, k->act, 0, fin(c, 0), sm_tensor_data(y), sm_tensor_num_elements(x), err));
  return NULL;
}

static sm_status *binary_prepare(const sm_node *n, void **state) {
  kstate *k;
  sm_status *st = new_state(n, state, &k);
  if (st) return st;
  const char *op = sm__node_op(n);
  k->op = !strcmp(op, "Sub")       ? SMCU_SUB
          : !strcmp(op, "Mul")     ? SMCU_MUL
          : !strcmp(op, "RealDiv") ? SMCU_DIV
          : !strcmp(op, "Maximum") ? SMCU_MAX
          : !strcmp(op, "Minimum") ? SMCU_MIN
                                   : SMCU_ADD;
  return NULL;
}

/* numpy broadcasting of a and b into bc (TF's BCast: "Incompatible shapes"). */
static sm_status *broadcast(const sm_tensor *a, const sm_tensor *b, smcu_bcast *bc) {
  int ra = sm_tensor_rank(a), rb = sm_tensor_rank(b), r = ra > rb ? ra : rb;
  if (r > SMCU_MAX_RANK) return sm_status_new(SM_UNIMPLEMENTED, "rank %d is more than the GPU kernels' %d", r, SMCU_MAX_RANK);
  memset(bc, 0, sizeof *bc);
  bc->rank = r;
  int64_t sa = 1, sb = 1;
  for (int i = r - 1; i >= 0; i--) {
    int ia = i - (r - ra), ib = i - (r - rb);
    int64_t da = ia >= 0 ? sm_tensor_dims(a)[ia] : 1, db = ib >= 0 ? sm_tensor_dims(b)[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char x[64], y[64];
      return sm_status_new(SM_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                           sm_shape_str(ra, sm_tensor_dims(a), x, sizeof x), sm_shape_str(rb, sm_tensor_dims(b), y, sizeof y));
    }
    bc->dims[i] = da == 1 ? db : da;
    bc->astr[i] = da == 1 ? 0 : sa;
    bc->bstr[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  return NULL;
}

static sm_status *binary(const void *state, sm_kctx *c) {
  const kstate *k = state;
  sm_status *st = on_device(c, 2);
  if (st) return st;
  smcu_bcast bc;
  if ((st = broadcast(sm__kctx_input(c, 0), sm__kctx_input(c, 1), &bc))) return st;
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, bc.rank, bc.dims, &y))) return st;
  if (!sm_tensor_num_elements(y)) return NULL;
  CALL(A->binary(S, k->op, fin(c, 0), fin(c, 1), sm_tensor_data(y), &bc, err));
  return NULL;
}

static sm_status *bias_add_prepare(const sm_node *n, void **state) {
  kstate *k;
  sm_status *st = new_state(n, state, &k);
  if (st) return st;
  int nchw = 0;
  if (sm__node_attr(n, "data_format") && (st = sm__nn_data_format(n, 0, &nchw))) return st;
  return nchw ? sm_status_new(SM_UNIMPLEMENTED, "NCHW runs on the CPU") : NULL;
}

/* BiasAdd's and the fused epilogue's shape check: bias [C], C the input's last dimension. */
static sm_status *check_bias(const sm_tensor *x, const sm_tensor *bias) {
  int r = sm_tensor_rank(x);
  if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "Input tensor must be at least 2D: []");
  if (sm_tensor_rank(bias) != 1 || sm_tensor_dims(bias)[0] != sm_tensor_dims(x)[r - 1])
    return sm_status_new(SM_INVALID_ARGUMENT, "Must provide as many biases as the last dimension of the input tensor: "
                         "%lld vs. %lld", (long long)(sm_tensor_rank(bias) ? sm_tensor_dims(bias)[0] : -1),
                         (long long)sm_tensor_dims(x)[r - 1]);
  return NULL;
}

static sm_status *bias_add(const void *state, sm_kctx *c) {
  (void)state;
  sm_status *st = on_device(c, 2);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0);
  if ((st = check_bias(x, sm__kctx_input(c, 1)))) return st;
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, sm_tensor_rank(x), sm_tensor_dims(x), &y))) return st;
  int64_t cols = sm_tensor_dims(x)[sm_tensor_rank(x) - 1], n = sm_tensor_num_elements(x);
  if (!n) return NULL;
  CALL(A->bias_act(S, fin(c, 0), fin(c, 1), sm_tensor_data(y), n / cols, cols, SMCU_ID, 0, err));
  return NULL;
}

/* ---- products ------------------------------------------------------------------------------- */
static sm_status *matmul_prepare(const sm_node *n, void **state) {
  kstate *k;
  sm_status *st = new_state(n, state, &k);
  if (st) return st;
  const char *op = sm__node_op(n);
  int batch = !strcmp(op, "BatchMatMulV2");
  if ((st = sm__node_attr_bool(n, batch ? "adj_x" : "transpose_a", &k->ta))) return st;
  if ((st = sm__node_attr_bool(n, batch ? "adj_y" : "transpose_b", &k->tb))) return st;
  if (!strcmp(op, "_FusedMatMul")) {
    sm__nn_fused f;
    if ((st = sm__nn_fused_prepare(n, 0, &f))) return st;
    if (f.act == SM_NN_ACT_SWISH) return sm_status_new(SM_UNIMPLEMENTED, "a fused swish runs on the CPU");
    k->has_bias = 1;
    k->act = act_of(f.act);
    k->alpha = f.alpha;
  }
  return NULL;
}

static sm_status *matmul(const void *state, sm_kctx *c) {
  const kstate *k = state;
  int nin = k->has_bias ? 3 : 2;
  sm_status *st = on_device(c, nin);
  if (st) return st;
  const sm_tensor *a = sm__kctx_input(c, 0), *b = sm__kctx_input(c, 1);
  int ra = sm_tensor_rank(a), rb = sm_tensor_rank(b);
  if (ra < 2 || rb < 2) return sm_status_new(SM_INVALID_ARGUMENT, "In[0] and In[1] must be at least 2-D");
  const int64_t *da = sm_tensor_dims(a), *db = sm_tensor_dims(b);
  int64_t m = k->ta ? da[ra - 1] : da[ra - 2], ka = k->ta ? da[ra - 2] : da[ra - 1];
  int64_t kb = k->tb ? db[rb - 1] : db[rb - 2], n = k->tb ? db[rb - 2] : db[rb - 1];
  if (ka != kb)
    return sm_status_new(SM_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: [%lld,%lld], In[1]: [%lld,%lld]",
                         (long long)da[ra - 2], (long long)da[ra - 1], (long long)db[rb - 2], (long long)db[rb - 1]);
  /* batch dimensions: equal, or one side has none (or a batch of 1) and is shared */
  int r = ra > rb ? ra : rb;
  int64_t dims[SM_MAX_RANK], ba = 1, bb = 1, batch = 1;
  for (int i = 0; i < ra - 2; i++) ba *= da[i];
  for (int i = 0; i < rb - 2; i++) bb *= db[i];
  const sm_tensor *big = ba >= bb ? a : b;
  if (ba != bb && ba != 1 && bb != 1)
    return sm_status_new(SM_UNIMPLEMENTED, "this batch broadcast runs on the CPU");
  if (ba != bb && ((ba > 1 && ra < rb) || (bb > 1 && rb < ra)))
    return sm_status_new(SM_UNIMPLEMENTED, "this batch broadcast runs on the CPU");
  for (int i = 0; i < r - 2; i++) dims[i] = sm_tensor_dims(big)[i + sm_tensor_rank(big) - r], batch *= dims[i];
  dims[r - 2] = m;
  dims[r - 1] = n;
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, r, dims, &y))) return st;
  if (k->has_bias && (st = check_bias(y, sm__kctx_input(c, 2)))) return st;
  if (!sm_tensor_num_elements(y)) return NULL;
  CALL(A->gemm(S, k->ta, k->tb, m, n, ka, fin(c, 0), ba == 1 ? 0 : m * ka, fin(c, 1), bb == 1 ? 0 : ka * n,
               sm_tensor_data(y), m * n, batch, err));
  if (k->has_bias)
    CALL(A->bias_act(S, sm_tensor_data(y), fin(c, 2), sm_tensor_data(y), batch * m, n, k->act, k->alpha, err));
  return NULL;
}

/* ---- convolution (cuDNN) ---------------------------------------------------------------------- */
static sm_status *conv_prepare(const sm_node *n, void **state) {
  kstate *k;
  sm_status *st = new_state(n, state, &k);
  if (st) return st;
  const char *op = sm__node_op(n);
  int depthwise = !strcmp(op, "DepthwiseConv2dNative");
  if ((st = sm__nn_window_prepare(n, 0, 1, !depthwise || sm__node_attr(n, "explicit_paddings"), &k->win))) return st;
  if (k->win.nchw) return sm_status_new(SM_UNIMPLEMENTED, "NCHW runs on the CPU");
  k->op = depthwise;
  if (!strcmp(op, "_FusedConv2D")) {
    sm__nn_fused f;
    if ((st = sm__nn_fused_prepare(n, 1, &f))) return st;
    /* not written for cuDNN yet: the plan runs the node on the CPU (bit for bit the same) */
    if (f.has_add) return sm_status_new(SM_UNIMPLEMENTED, "a fused residual Add runs on the CPU");
    if (f.act == SM_NN_ACT_SWISH) return sm_status_new(SM_UNIMPLEMENTED, "a fused swish runs on the CPU");
    k->has_pool = f.has_pool;
    k->pool = f.pool;
    k->has_bias = 1;
    k->act = act_of(f.act);
    k->alpha = f.alpha;
  }
  return NULL;
}

static sm_status *conv(const void *state, sm_kctx *c) {
  const kstate *k = state;
  sm_status *st = on_device(c, k->has_bias ? 3 : 2);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0), *w = sm__kctx_input(c, 1);
  if (sm_tensor_rank(x) != 4 || sm_tensor_rank(w) != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "input and filter must be 4-dimensional (ranks %d and %d)",
                         sm_tensor_rank(x), sm_tensor_rank(w));
  const int64_t *xd = sm_tensor_dims(x), *wd = sm_tensor_dims(w);
  smcu_conv cv = {.n = xd[0], .h = xd[1], .w = xd[2], .c = xd[3], .kh = wd[0], .kw = wd[1],
                  .stride_h = k->win.stride[0], .stride_w = k->win.stride[1], .dil_h = k->win.dilation[0],
                  .dil_w = k->win.dilation[1], .groups = 1};
  if (k->op) { /* depthwise: [kh, kw, c, multiplier] */
    if (wd[2] != cv.c)
      return sm_status_new(SM_INVALID_ARGUMENT, "input depth %lld and filter in_depth %lld differ", (long long)cv.c,
                           (long long)wd[2]);
    cv.k = wd[2] * wd[3];
    cv.groups = cv.c;
  } else {
    if (wd[2] <= 0 || cv.c % wd[2])
      return sm_status_new(SM_INVALID_ARGUMENT, "input depth %lld is not a multiple of the filter's in_depth %lld",
                           (long long)cv.c, (long long)wd[2]);
    cv.k = wd[3];
    cv.groups = cv.c / wd[2];
  }
  int64_t lead[2], after[2], in[2] = {cv.h, cv.w}, out[2];
  for (int d = 0; d < 2; d++) {
    int64_t kk = d ? cv.kw : cv.kh;
    if ((st = sm__nn_out_size(in[d], kk, k->win.dilation[d], k->win.stride[d], k->win.padding, k->win.pad[2 * d],
                              k->win.pad[2 * d + 1], &out[d], &lead[d])))
      return st;
    after[d] = (out[d] - 1) * k->win.stride[d] + (kk - 1) * k->win.dilation[d] + 1 - in[d] - lead[d];
    if (after[d] < 0) after[d] = 0;
  }
  cv.oh = out[0];
  cv.ow = out[1];
  int64_t yd[4] = {cv.n, cv.oh, cv.ow, cv.k};
  smcu_pool pl = {.n = cv.n, .h = cv.oh, .w = cv.ow, .c = cv.k, .kh = k->pool.kh, .kw = k->pool.kw, .sh = k->pool.sh,
                  .sw = k->pool.sw};
  if (k->has_pool) { /* the convolution's output goes to scratch, the pooled one out */
    if ((st = sm__nn_out_size(cv.oh, pl.kh, 1, pl.sh, k->pool.padding, 0, 0, &pl.oh, &pl.pad_top))) return st;
    if ((st = sm__nn_out_size(cv.ow, pl.kw, 1, pl.sw, k->pool.padding, 0, 0, &pl.ow, &pl.pad_left))) return st;
    yd[1] = pl.oh;
    yd[2] = pl.ow;
  }
  sm_tensor *y, *padded = NULL, *full = NULL;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, 4, yd, &y))) return st;
  if (k->has_bias && (st = check_bias(y, sm__kctx_input(c, 2)))) return st;
  if (!sm_tensor_num_elements(y)) return NULL;
  float *yconv = sm_tensor_data(y);
  if (k->has_pool) {
    void *p;
    if ((st = sm__cuda_scratch(c, (size_t)(cv.n * cv.oh * cv.ow * cv.k) * sizeof(float), &full, &p))) return st;
    yconv = p;
  }
  const float *xp = fin(c, 0);
  if (lead[0] != after[0] || lead[1] != after[1]) { /* cuDNN pads symmetrically: pad the input here */
    int64_t pd[4] = {cv.n, cv.h + lead[0] + after[0], cv.w + lead[1] + after[1], cv.c}, before[4] = {0, lead[0], lead[1], 0};
    void *p;
    if ((st = sm__cuda_scratch(c, (size_t)(pd[0] * pd[1] * pd[2] * pd[3]) * sizeof(float), &padded, &p))) return st;
    char err[SMCU_ERR] = "";
    if (sm__cuda_api()->pad(sm__kctx_device_run(c), xp, p, 4, xd, before, pd, 0.f, err)) {
      sm_tensor_free(padded);
      return sm__cuda_err(err);
    }
    xp = p;
    cv.h = pd[1];
    cv.w = pd[2];
    lead[0] = lead[1] = 0;
  }
  cv.pad_h = lead[0];
  cv.pad_w = lead[1];
  char err[SMCU_ERR] = "";
  const smcu_api *A = sm__cuda_api();
  void *S = sm__kctx_device_run(c);
  int bad = A->conv2d(S, &cv, xp, fin(c, 1), yconv, err);
  sm_tensor_free(padded); /* released stream-ordered: after the convolution */
  if (!bad && k->has_bias)
    bad = A->bias_act(S, yconv, fin(c, 2), yconv, cv.n * cv.oh * cv.ow, cv.k, k->act, k->alpha, err);
  if (!bad && k->has_pool) bad = A->pool(S, &pl, yconv, sm_tensor_data(y), err);
  sm_tensor_free(full);
  return bad ? sm__cuda_err(err) : NULL;
}

/* ---- pooling, reductions, softmax ------------------------------------------------------------ */
static sm_status *pool_prepare(const sm_node *n, void **state) {
  kstate *k;
  sm_status *st = new_state(n, state, &k);
  if (st) return st;
  if ((st = sm__nn_window_prepare(n, 1, 0, 0, &k->win))) return st;
  if (k->win.nchw) return sm_status_new(SM_UNIMPLEMENTED, "NCHW runs on the CPU");
  k->op = !strcmp(sm__node_op(n), "AvgPool");
  return NULL;
}

static sm_status *pool(const void *state, sm_kctx *c) {
  const kstate *k = state;
  sm_status *st = on_device(c, 1);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0);
  if (sm_tensor_rank(x) != 4) return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional");
  const int64_t *xd = sm_tensor_dims(x);
  smcu_pool pl = {.n = xd[0], .h = xd[1], .w = xd[2], .c = xd[3], .kh = k->win.ksize[0], .kw = k->win.ksize[1],
                  .sh = k->win.stride[0], .sw = k->win.stride[1], .avg = k->op};
  if ((st = sm__nn_out_size(pl.h, pl.kh, 1, pl.sh, k->win.padding, 0, 0, &pl.oh, &pl.pad_top))) return st;
  if ((st = sm__nn_out_size(pl.w, pl.kw, 1, pl.sw, k->win.padding, 0, 0, &pl.ow, &pl.pad_left))) return st;
  int64_t yd[4] = {pl.n, pl.oh, pl.ow, pl.c};
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, 4, yd, &y))) return st;
  if (!sm_tensor_num_elements(y)) return NULL;
  CALL(A->pool(S, &pl, fin(c, 0), sm_tensor_data(y), err));
  return NULL;
}

static sm_status *mean_prepare(const sm_node *n, void **state) {
  kstate *k;
  sm_status *st = new_state(n, state, &k);
  if (st) return st;
  return sm__node_attr(n, "keep_dims") ? sm__node_attr_bool(n, "keep_dims", &k->keep_dims) : NULL;
}

/* Mean over a contiguous run of axes (a spatial mean, a last-axis mean); others fail. */
static sm_status *mean(const void *state, sm_kctx *c) {
  const kstate *k = state;
  sm_status *st = on_device(c, 1);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0);
  int r = sm_tensor_rank(x), na;
  int64_t ax[SM_MAX_RANK * 2];
  if ((st = host_ints(c, 1, ax, &na))) return st;
  unsigned char red[SM_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
    if (a < 0 || a >= r)
      return sm_status_new(SM_INVALID_ARGUMENT, "Invalid reduction dimension (%lld for input with %d dimension(s))",
                           (long long)ax[i], r);
    red[a] = 1;
  }
  int lo = 0, hi = r - 1;
  while (lo < r && !red[lo]) lo++;
  while (hi >= 0 && !red[hi]) hi--;
  for (int i = lo; i <= hi; i++)
    if (!red[i]) return sm_status_new(SM_UNIMPLEMENTED, "a mean over axes that are not contiguous is not on the GPU");
  int64_t outer = 1, inner = 1, cols = 1, yd[SM_MAX_RANK];
  int yr = 0;
  for (int i = 0; i < r; i++) {
    int64_t d = sm_tensor_dims(x)[i];
    if (i < lo) outer *= d;
    else if (i <= hi) inner *= d;
    else cols *= d;
    if (!red[i]) yd[yr++] = d;
    else if (k->keep_dims) yd[yr++] = 1;
  }
  if (lo > hi) inner = 1, cols = 1, outer = sm_tensor_num_elements(x); /* no axes: a copy */
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, yr, yd, &y))) return st;
  if (!sm_tensor_num_elements(y)) return NULL;
  CALL(A->mean_mid(S, fin(c, 0), sm_tensor_data(y), outer, inner, cols, err));
  return NULL;
}

static sm_status *float_prepare(const sm_node *n, void **state) {
  kstate *k;
  return new_state(n, state, &k);
}

static sm_status *softmax(const void *state, sm_kctx *c) {
  (void)state;
  sm_status *st = on_device(c, 1);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0);
  int r = sm_tensor_rank(x);
  if (r < 1) return sm_status_new(SM_INVALID_ARGUMENT, "logits must have >= 1 dimension, got []");
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, r, sm_tensor_dims(x), &y))) return st;
  int64_t cols = sm_tensor_dims(x)[r - 1], n = sm_tensor_num_elements(x);
  if (!n) return NULL;
  CALL(A->softmax(S, fin(c, 0), sm_tensor_data(y), n / cols, cols, err));
  return NULL;
}

static sm_status *batchnorm_prepare(const sm_node *n, void **state) {
  kstate *k;
  sm_status *st = new_state(n, state, &k);
  if (st) return st;
  int training = 1;
  if (sm__node_attr(n, "is_training") && (st = sm__node_attr_bool(n, "is_training", &training))) return st;
  if (training) return sm_status_new(SM_UNIMPLEMENTED, "training-mode batch norm runs on the CPU");
  int nchw = 0;
  if (sm__node_attr(n, "data_format") && (st = sm__nn_data_format(n, 0, &nchw))) return st;
  if (nchw) return sm_status_new(SM_UNIMPLEMENTED, "NCHW runs on the CPU");
  int ut;
  if (sm__node_attr(n, "U") && (st = sm__node_attr_type(n, "U", &ut))) return st;
  if (sm__node_attr(n, "U") && ut != SM_FLOAT) return sm_status_new(SM_UNIMPLEMENTED, "U must be float on the GPU");
  k->eps = 1e-4f;
  if (sm__node_attr(n, "epsilon") && (st = sm__node_attr_float(n, "epsilon", &k->eps))) return st;
  return NULL;
}

static sm_status *batchnorm(const void *state, sm_kctx *c) {
  const kstate *k = state;
  sm_status *st = on_device(c, 5);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0);
  int r = sm_tensor_rank(x);
  if (r != 4) return sm_status_new(SM_INVALID_ARGUMENT, "input must be 4-dimensional");
  int64_t ch = sm_tensor_dims(x)[3];
  for (int i = 1; i < 5; i++)
    if (sm_tensor_num_elements(sm__kctx_input(c, i)) != ch)
      return sm_status_new(SM_INVALID_ARGUMENT, "input %d must have %lld elements (the channels)", i, (long long)ch);
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, r, sm_tensor_dims(x), &y))) return st;
  for (int o = 1; o < 5 && o < sm__kctx_num_outputs(c); o++) sm__kctx_forward(c, 3 + (o + 1) % 2, o); /* mean, var */
  if (sm__kctx_num_outputs(c) > 5) {
    int64_t zero = 0;
    sm_tensor *r3;
    if ((st = sm__cuda_output(c, 5, SM_FLOAT, 1, &zero, &r3))) return st;
  }
  int64_t n = sm_tensor_num_elements(x);
  if (!n) return NULL;
  CALL(A->batchnorm(S, fin(c, 0), fin(c, 1), fin(c, 2), fin(c, 3), fin(c, 4), k->eps, sm_tensor_data(y), n / ch, ch,
                    err));
  return NULL;
}

/* ---- layout: metadata only, transpose, concat, pad ------------------------------------------- */
static sm_status *any_prepare(const sm_node *n, void **state) {
  (void)n;
  *state = NULL;
  return NULL;
}

static sm_status *identity(const void *state, sm_kctx *c) {
  (void)state;
  for (int i = 0; i < sm__kctx_num_inputs(c) && i < sm__kctx_num_outputs(c); i++) sm__kctx_forward(c, i, i);
  return NULL;
}

/* Shape of a device tensor: its dims, a host tensor (SM_KERNEL_HOST_OUT): nothing is copied. */
static sm_status *shape_prepare(const sm_node *n, void **state) {
  *state = NULL;
  int dt = SM_INT32;
  if (sm__node_attr(n, "out_type")) {
    sm_status *st = sm__node_attr_type(n, "out_type", &dt);
    if (st) return st;
  }
  return dt == SM_INT32 || dt == SM_INT64 ? NULL : sm_status_new(SM_UNIMPLEMENTED, "out_type must be int32 or int64");
}

static sm_status *shape(const void *state, sm_kctx *c) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(c, 0);
  int r = sm_tensor_rank(x), dt = sm__node_output_dtype(sm__kctx_node(c), 0);
  int64_t d = r;
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(c, 0, dt, 1, &d, &y);
  if (st) return st;
  for (int i = 0; i < r; i++) {
    int64_t v = sm_tensor_dims(x)[i];
    if (dt == SM_INT32 && v > INT32_MAX)
      return sm_status_new(SM_INVALID_ARGUMENT, "dimension %d of %lld does not fit out_type int32", i, (long long)v);
    if (dt == SM_INT32) ((int32_t *)sm_tensor_data(y))[i] = (int32_t)v;
    else ((int64_t *)sm_tensor_data(y))[i] = v;
  }
  return NULL;
}

/* A view of input 0 with dims (Reshape, Squeeze). */
static sm_status *view_as(sm_kctx *c, int rank, const int64_t *dims) {
  sm_tensor *v;
  sm_status *st = sm_tensor_view((sm_tensor *)sm__kctx_input(c, 0), rank, dims, &v);
  if (st) return st;
  sm__kctx_set_output(c, 0, v);
  return NULL;
}

static sm_status *reshape(const void *state, sm_kctx *c) {
  (void)state;
  int64_t d[SM_MAX_RANK * 2], known = 1;
  int r, unknown = -1;
  sm_status *st = host_ints(c, 1, d, &r);
  if (st) return st;
  if (r > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "shape of rank %d", r);
  for (int i = 0; i < r; i++) {
    if (d[i] == -1 && unknown < 0) unknown = i;
    else if (d[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Size %d must be non-negative, not %lld", i, (long long)d[i]);
    else known *= d[i];
  }
  int64_t n = sm_tensor_num_elements(sm__kctx_input(c, 0));
  if (unknown >= 0) {
    if (!known || n % known)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld values, which cannot be "
                           "reshaped with a -1 dimension", (long long)n);
    d[unknown] = n / known;
  }
  return view_as(c, r, d);
}

static sm_status *squeeze_prepare(const sm_node *n, void **state) {
  kstate *k = calloc(1, sizeof *k);
  if (!k) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM in prepare");
  *state = k;
  const int64_t *v;
  size_t nv = 0;
  if (sm__node_attr(n, "squeeze_dims")) {
    sm_status *st = sm__node_attr_ints(n, "squeeze_dims", &v, &nv);
    if (st) return st;
  }
  if (nv > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "squeeze_dims has %zu entries", nv);
  for (size_t i = 0; i < nv; i++) k->squeeze[i] = v[i];
  k->nsqueeze = (int)nv;
  return NULL;
}

static sm_status *squeeze(const void *state, sm_kctx *c) {
  const kstate *k = state;
  const sm_tensor *x = sm__kctx_input(c, 0);
  int r = sm_tensor_rank(x), yr = 0;
  int64_t yd[SM_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int64_t d = sm_tensor_dims(x)[i];
    int asked = 0;
    for (int j = 0; j < k->nsqueeze; j++) asked |= (k->squeeze[j] < 0 ? k->squeeze[j] + r : k->squeeze[j]) == i;
    if (asked && d != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "Can not squeeze dim[%d], expected a dimension of 1, got %lld", i,
                           (long long)d);
    if (k->nsqueeze ? !asked : d != 1) yd[yr++] = d;
  }
  return view_as(c, yr, yd);
}

static sm_status *transpose(const void *state, sm_kctx *c) {
  (void)state;
  sm_status *st = on_device(c, 1);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0);
  int r = sm_tensor_rank(x), np;
  int64_t p[SM_MAX_RANK * 2], yd[SM_MAX_RANK];
  int perm[SM_MAX_RANK], seen[SM_MAX_RANK] = {0};
  if ((st = host_ints(c, 1, p, &np))) return st;
  if (np != r) return sm_status_new(SM_INVALID_ARGUMENT, "transpose expects a vector of size %d. But input(1) is a vector of size %d", r, np);
  for (int i = 0; i < r; i++) {
    if (p[i] < 0 || p[i] >= r || seen[p[i]]++)
      return sm_status_new(SM_INVALID_ARGUMENT, "%lld is out of range or repeated in the permutation", (long long)p[i]);
    perm[i] = (int)p[i];
    yd[i] = sm_tensor_dims(x)[p[i]];
  }
  int dt = sm_tensor_dtype(x);
  size_t es = sm_dtype_size(dt);
  if (es != 4 && es != 8) return sm_status_new(SM_INVALID_ARGUMENT, "transpose of %s on the GPU", sm_dtype_name(dt));
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, dt, r, yd, &y))) return st;
  if (!sm_tensor_num_elements(y)) return NULL;
  CALL(A->transpose(S, sm_tensor_data(x), sm_tensor_data(y), r, sm_tensor_dims(x), perm, es, err));
  return NULL;
}

static sm_status *transpose_prepare(const sm_node *n, void **state) {
  *state = NULL;
  int dt;
  sm_status *st = sm__node_attr_type(n, "T", &dt);
  if (st) return st;
  return sm_dtype_size(dt) == 4 || sm_dtype_size(dt) == 8 ? NULL : sm_status_new(SM_UNIMPLEMENTED, "not on the GPU");
}

static sm_status *concat(const void *state, sm_kctx *c) {
  (void)state;
  int n = sm__kctx_num_inputs(c) - 1, na;
  sm_status *st = on_device(c, n);
  if (st) return st;
  int64_t ax[SM_MAX_RANK * 2];
  if ((st = host_ints(c, n, ax, &na))) return st;
  const sm_tensor *x0 = sm__kctx_input(c, 0);
  int r = sm_tensor_rank(x0);
  int64_t a = na == 1 ? (ax[0] < 0 ? ax[0] + r : ax[0]) : -1;
  if (a < 0 || a >= r) return sm_status_new(SM_INVALID_ARGUMENT, "ConcatOp : Expected concatenating dimensions in the range [%d, %d)", -r, r);
  int64_t yd[SM_MAX_RANK], outer = 1, inner = 1;
  memcpy(yd, sm_tensor_dims(x0), (size_t)r * sizeof *yd);
  yd[a] = 0;
  for (int i = 0; i < n; i++) {
    const sm_tensor *t = sm__kctx_input(c, i);
    if (sm_tensor_rank(t) != r) return sm_status_new(SM_INVALID_ARGUMENT, "ConcatOp : Ranks of all input tensors should match");
    for (int d = 0; d < r; d++)
      if (d != a && sm_tensor_dims(t)[d] != yd[d])
        return sm_status_new(SM_INVALID_ARGUMENT, "ConcatOp : Dimension %d in both shapes must be equal", d);
    yd[a] += sm_tensor_dims(t)[a];
  }
  for (int d = 0; d < a; d++) outer *= yd[d];
  for (int d = (int)a + 1; d < r; d++) inner *= yd[d];
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, r, yd, &y))) return st;
  size_t row = (size_t)(yd[a] * inner) * sizeof(float), at = 0;
  for (int i = 0; i < n && outer; i++) {
    size_t w = (size_t)(sm_tensor_dims(sm__kctx_input(c, i))[a] * inner) * sizeof(float);
    if (w) CALL(A->copy2d(S, (char *)sm_tensor_data(y) + at, row, fin(c, i), w, w, (size_t)outer, err));
    at += w;
  }
  return NULL;
}

static sm_status *pad(const void *state, sm_kctx *c) {
  (void)state;
  sm_status *st = on_device(c, 1);
  if (st) return st;
  const sm_tensor *x = sm__kctx_input(c, 0);
  int r = sm_tensor_rank(x), np;
  int64_t p[SM_MAX_RANK * 2], before[SM_MAX_RANK], yd[SM_MAX_RANK];
  if ((st = host_ints(c, 1, p, &np))) return st;
  if (np != 2 * r) return sm_status_new(SM_INVALID_ARGUMENT, "paddings must be a matrix with 2 columns and %d rows", r);
  for (int i = 0; i < r; i++) {
    if (p[2 * i] < 0 || p[2 * i + 1] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Paddings must be non-negative");
    before[i] = p[2 * i];
    yd[i] = sm_tensor_dims(x)[i] + p[2 * i] + p[2 * i + 1];
  }
  float value = 0;
  if (sm__kctx_num_inputs(c) > 2) {
    const sm_tensor *v = sm__kctx_input(c, 2);
    if (sm__tensor_space(v) != SM_MEM_HOST || sm_tensor_num_elements(v) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "constant_values must be a scalar");
    value = *(const float *)sm_tensor_data(v);
  }
  sm_tensor *y;
  if ((st = sm__cuda_output(c, 0, SM_FLOAT, r, yd, &y))) return st;
  if (!sm_tensor_num_elements(y)) return NULL;
  CALL(A->pad(S, fin(c, 0), sm_tensor_data(y), r, sm_tensor_dims(x), before, yd, value, err));
  return NULL;
}

#define H1 SM_KERNEL_HOST_IN(1)
#define H12 (SM_KERNEL_HOST_IN(1) | SM_KERNEL_HOST_IN(2))
const sm_kernel sm_kernels_cuda[] = {
    {"Add", binary_prepare, binary, free, 0},
    {"AddV2", binary_prepare, binary, free, 0},
    {"AvgPool", pool_prepare, pool, free, 0},
    {"BatchMatMulV2", matmul_prepare, matmul, free, 0},
    {"BiasAdd", bias_add_prepare, bias_add, free, 0},
    {"ConcatV2", float_prepare, concat, free, SM_KERNEL_HOST_LAST_IN},
    {"Conv2D", conv_prepare, conv, free, 0},
    {"DepthwiseConv2dNative", conv_prepare, conv, free, 0},
    {"Elu", unary_prepare, unary, free, 0},
    {"Exp", unary_prepare, unary, free, 0},
    {"FusedBatchNormV3", batchnorm_prepare, batchnorm, free, 0},
    {"Identity", any_prepare, identity, NULL, 0},
    {"IdentityN", any_prepare, identity, NULL, 0},
    {"MatMul", matmul_prepare, matmul, free, 0},
    {"MaxPool", pool_prepare, pool, free, 0},
    {"Mean", mean_prepare, mean, free, H1},
    {"Maximum", binary_prepare, binary, free, 0},
    {"Minimum", binary_prepare, binary, free, 0},
    {"Mul", binary_prepare, binary, free, 0},
    {"Neg", unary_prepare, unary, free, 0},
    {"Pad", float_prepare, pad, free, H1},
    {"PadV2", float_prepare, pad, free, H12},
    {"RealDiv", binary_prepare, binary, free, 0},
    {"Relu", unary_prepare, unary, free, 0},
    {"Relu6", unary_prepare, unary, free, 0},
    {"Reshape", any_prepare, reshape, NULL, H1},
    {"Rsqrt", unary_prepare, unary, free, 0},
    {"Shape", shape_prepare, shape, NULL, SM_KERNEL_HOST_OUT},
    {"Sigmoid", unary_prepare, unary, free, 0},
    {"Softmax", float_prepare, softmax, free, 0},
    {"Sqrt", unary_prepare, unary, free, 0},
    {"Square", unary_prepare, unary, free, 0},
    {"Squeeze", squeeze_prepare, squeeze, free, 0},
    {"Sub", binary_prepare, binary, free, 0},
    {"Tanh", unary_prepare, unary, free, 0},
    {"Transpose", transpose_prepare, transpose, NULL, H1},
    {"_FusedConv2D", conv_prepare, conv, free, 0},
    {"_FusedMatMul", matmul_prepare, matmul, free, 0},
    {NULL, NULL, NULL, NULL, 0},
};

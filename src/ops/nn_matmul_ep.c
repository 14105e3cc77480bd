/* nn_matmul_ep.c - a Dense layer's product and the per-element work after it as one node,
 * _SmMatMulEp (a system op of src/graph/builtin_ops.c, never in a GraphDef): its kernel and the
 * graph rewrite rules that make it.
 *
 * Keras' Dense on a 3-D input exports MatMul(Reshape(x), w) (Tensordot) and its EinsumDense
 * BatchMatMulV2(x, Reshape(w)); either is followed by a Reshape to the layer's output shape and
 * then the bias (BiasAdd, or AddV2 of a [heads, head_dim] variable) and, for the Transformer's
 * FFN, the erf GELU. Unfused each of these is a pass over the output (the Transformer at batch 16:
 * ~2 ms a call of ~45, bench/RESULTS.md session 16 h3); fused, oneDNN adds the bias and computes
 * the GELU (its eltwise_gelu_erf post-op, nn_dnnl.c) on each block of the product as it finishes
 * (without AVX-512, the FFN's wide short products go to OpenBLAS and vmath's bias + GELU pass
 * instead: nn_dnnl.c mm_wide_to_blas).
 *
 *   y = _SmMatMulEp(a, b, [shape], [bias]) attrs product ("MatMul" | "BatchMatMul"), bias_add,
 *       activation ("" | "GeluErf")
 * computes p = a' b with a' = a as [rows, K] (MatMul: a is [M, K]; BatchMatMul: a of rank >= 2,
 * its leading dims the rows) and b [K, N] (rank 2 both), then y = Reshape(p, shape) (Reshape's
 * rules and messages; without a shape y is p shaped as BatchMatMul shapes it: a's leading dims,
 * then N), then y + bias: with bias_add (BiasAdd) the bias is [C] along y's last dim;
 * else (AddV2) its dims without leading 1s must be y's trailing dims (a per-column bias: AddV2's
 * broadcast of a small variable over a larger y; anything else fails the run naming the node: the
 * rule cannot see shapes, the kernel cannot compute another broadcast). Then the activation:
 * "GeluErf" is SM_NN_ACT_GELU_ERF (nn_raw.h), (0.5 v)(1 + erf(v * 0.70710677f)).
 *
 * The rules (SM_MATMUL_EP=0 in the environment when a plan is built turns them off, for A/B):
 *   - anchored at BiasAdd (NHWC) / BiasAddV1 / AddV2 / Add: value = Reshape(p, shape) with p a float
 *     MatMul (no transposes) or BatchMatMul/V2 (no adjoints) whose b is a Reshape to a Const shape
 *     of two entries (so b is a matrix and the product is one [rows, K] x [K, N]: the EinsumDense
 *     form), or value = p itself for such a BatchMatMul (MatMul + BiasAdd is nn_fuse.c's
 *     _FusedMatMul); AddV2's other operand a variable read (ReadVariableOp, _SmReadVariable) or a
 *     Const, not fed;
 *   - from nn_fuse_norm.c's erf GELU rule (sm__nn_ep_fuse_gelu): the same product, Reshape and
 *     optional BiasAdd before the GELU chain, when the chain's constants are 0.5, 0.70710677 and 1.
 * The fused node is named after the chain's last node and takes its place. */
#include <stdlib.h>
#include <string.h>

#include "base/tensor_internal.h" /* sm__tensor_uid */
#include "graph/synth.h"
#include "ops/array_internal.h" /* sm__array_read_ints */
#include "ops/nn_dnnl.h"
#include "ops/nn_internal.h"
#include "runtime/rewrite.h"

/* ---- the kernel -------------------------------------------------------------------------------- */
typedef struct ep_state {
  int batch;    /* product "BatchMatMul" (else "MatMul") */
  int has_shape, has_bias, bias_add;
  int act;      /* SM_NN_ACT_NONE or SM_NN_ACT_GELU_ERF */
  sm__dnnl_cache *dnnl;
} ep_state;

static void ep_release(void *state) {
  ep_state *s = state;
  if (!s) return;
  sm__dnnl_cache_free(s->dnnl);
  free(s);
}

static sm_status *ep_prepare(const sm_node *n, void **state) {
  int64_t nb = 0, ns = 0;
  const char *prod, *act;
  size_t lp, la;
  int bias_add = 0;
  sm_status *st = sm__node_attr_int(n, "num_bias", &nb);
  if (!st) st = sm__node_attr_int(n, "num_shape", &ns);
  if (!st) st = sm__node_attr_string(n, "product", &prod, &lp);
  if (!st) st = sm__node_attr_string(n, "activation", &act, &la);
  if (!st) st = sm__node_attr_bool(n, "bias_add", &bias_add);
  if (st) return st;
  int batch = lp == 11 && !memcmp(prod, "BatchMatMul", 11);
  if (!batch && !(lp == 6 && !memcmp(prod, "MatMul", 6)))
    return sm_status_new(SM_INVALID_ARGUMENT, "_SmMatMulEp: product '%.*s' is neither MatMul nor BatchMatMul", (int)lp,
                         prod);
  int gelu = la == 7 && !memcmp(act, "GeluErf", 7);
  if (la && !gelu) return sm_status_new(SM_INVALID_ARGUMENT, "_SmMatMulEp: unknown activation '%.*s'", (int)la, act);
  if (nb < 0 || nb > 1 || ns < 0 || ns > 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "_SmMatMulEp: num_bias %lld, num_shape %lld", (long long)nb, (long long)ns);
  if (!batch && !ns) return sm_status_new(SM_INVALID_ARGUMENT, "_SmMatMulEp: a MatMul without a shape");
  ep_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *s = (ep_state){batch, ns == 1, nb == 1, bias_add, gelu ? SM_NN_ACT_GELU_ERF : SM_NN_ACT_NONE, NULL};
  if (sm__dnnl_enabled() && (st = sm__dnnl_cache_new(&s->dnnl))) {
    free(s);
    return st;
  }
  sm__nn_blas_init();
  *state = s;
  return NULL;
}

/* Reshape's output dims for nelem elements from its shape input (array_shape.c's rules). */
static sm_status *out_dims(const sm_tensor *shape, int64_t nelem, int64_t *dims, int64_t *rank) {
  if (sm_tensor_rank(shape) > 1) return sm_status_new(SM_INVALID_ARGUMENT, "sizes input must be 1-D");
  sm_status *st = sm__array_read_ints(shape, "Reshape shape", dims, SM_MAX_RANK, rank);
  if (st) return st;
  int64_t product = 1, unknown = -1;
  for (int64_t d = 0; d < *rank; d++) {
    if (dims[d] == -1) {
      if (unknown != -1)
        return sm_status_new(SM_INVALID_ARGUMENT, "Only one input size may be -1, not both %lld and %lld",
                             (long long)unknown, (long long)d);
      unknown = d;
    } else if (dims[d] < 0) {
      return sm_status_new(SM_INVALID_ARGUMENT, "Size %lld must be non-negative, not %lld", (long long)d,
                           (long long)dims[d]);
    } else if (__builtin_mul_overflow(product, dims[d], &product)) {
      return sm_status_new(SM_INVALID_ARGUMENT, "Reshape: the requested shape's element count overflows");
    }
  }
  if (unknown != -1) {
    if (product == 0 || nelem % product)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "Input to reshape is a tensor with %lld values, but the requested shape requires a multiple of %lld",
                           (long long)nelem, (long long)product);
    dims[unknown] = nelem / product;
    product = nelem;
  }
  if (product != nelem)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld values, but the requested shape has %lld",
                         (long long)nelem, (long long)product);
  return NULL;
}

/* The bias's period P over y (its elements, repeating along y's flat order): 0 when it is not a
 * per-column bias of y (see the header). */
static int64_t bias_period(const ep_state *s, const sm_tensor *bias, const int64_t *yd, int64_t yr) {
  int br = sm_tensor_rank(bias);
  const int64_t *bd = sm_tensor_dims(bias);
  if (s->bias_add) return br == 1 && yr >= 2 && bd[0] == yd[yr - 1] ? bd[0] : 0;
  int lead = 0;
  while (lead < br && bd[lead] == 1) lead++;
  if (br - lead > yr) return 0;
  int64_t p = 1;
  for (int i = lead; i < br; i++) {
    if (bd[i] != yd[yr - (br - i)]) return 0;
    p *= bd[i];
  }
  return p;
}

static sm_status *ep_compute(const void *state, sm_kctx *ctx) {
  const ep_state *s = state;
  const sm_tensor *a = sm__kctx_input(ctx, 0), *b = sm__kctx_input(ctx, 1);
  const sm_tensor *shape = s->has_shape ? sm__kctx_input(ctx, 2) : NULL;
  const sm_tensor *bias = s->has_bias ? sm__kctx_input(ctx, 2 + s->has_shape) : NULL;
  char sa[128], sb[128];
  if (sm_tensor_dtype(a) != SM_FLOAT || sm_tensor_dtype(b) != SM_FLOAT || (bias && sm_tensor_dtype(bias) != SM_FLOAT))
    return sm_status_new(SM_INVALID_ARGUMENT, "_SmMatMulEp: the operands and the bias must be float");
  int ra = sm_tensor_rank(a), rb = sm_tensor_rank(b);
  const int64_t *ad = sm_tensor_dims(a), *bd = sm_tensor_dims(b);
  if (!s->batch && ra != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "In[0] is not a matrix. Instead it has shape %s",
                         sm_shape_str(ra, ad, sa, sizeof sa));
  if (ra < 2) return sm_status_new(SM_INVALID_ARGUMENT, "In[0] ndims must be >= 2: %d", ra);
  if (rb != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "In[1] is not a matrix. Instead it has shape %s",
                         sm_shape_str(rb, bd, sb, sizeof sb));
  int64_t K = ad[ra - 1], N = bd[1], rows = 1, nel;
  for (int i = 0; i < ra - 1; i++) rows *= ad[i];
  if (K != bd[0])
    return sm_status_new(SM_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s",
                         sm_shape_str(ra, ad, sa, sizeof sa), sm_shape_str(rb, bd, sb, sizeof sb));
  if (__builtin_mul_overflow(rows, N, &nel)) return sm_status_new(SM_INVALID_ARGUMENT, "_SmMatMulEp: output too large");
  int64_t yd[SM_MAX_RANK], yr = ra;
  sm_status *st = NULL;
  if (shape && (st = out_dims(shape, nel, yd, &yr))) return st;
  if (!shape) {
    memcpy(yd, ad, (size_t)(ra - 1) * sizeof *yd);
    yd[ra - 1] = N;
  }
  int64_t P = 0;
  if (bias && !(P = bias_period(s, bias, yd, yr)) && nel > 0) {
    if (s->bias_add)
      return sm_status_new(SM_INVALID_ARGUMENT, "Must provide as many biases as the last dimension of the input tensor: %s vs. %s",
                           sm_shape_str(sm_tensor_rank(bias), sm_tensor_dims(bias), sa, sizeof sa),
                           sm_shape_str((int)yr, yd, sb, sizeof sb));
    return sm_status_new(SM_UNIMPLEMENTED, "fused bias: %s is not a per-column bias of %s (only trailing dims broadcast)",
                         sm_shape_str(sm_tensor_rank(bias), sm_tensor_dims(bias), sa, sizeof sa),
                         sm_shape_str((int)yr, yd, sb, sizeof sb));
  }
  const float *bv = bias ? sm_tensor_data(bias) : NULL, *col_bias = NULL;
  float *tiled = NULL;
  if (bias && nel > 0 && N % P == 0) { /* a bias per column of the product: into the product's epilogue */
    col_bias = bv;
    if (P < N) {
      if (!(tiled = sm__kctx_scratch(ctx, (size_t)N * sizeof *tiled, &st))) return st;
      for (int64_t i = 0; i < N; i++) tiled[i] = bv[i % P];
      col_bias = tiled;
    }
  }
  int in_product = !bias || col_bias; /* else the bias (and the act after it) runs as its own pass */
  int act = in_product ? s->act : SM_NN_ACT_NONE;
  sm_tensor *y;
  if ((st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, (int)yr, yd, &y))) goto out;
  float *c = sm_tensor_data(y);
  if (nel == 0) goto out;
  const float *A = sm_tensor_data(a), *B = sm_tensor_data(b);
  int done = 0;
  if (K == 0) {
    memset(c, 0, (size_t)nel * sizeof *c);
    if (in_product) sm__nn_bias_act_f32(c, c, rows, N, col_bias, act, 0.0f);
    done = 1;
  }
  if (!done && s->dnnl && rows > 1) {
    sm__dnnl_mm_args da = {rows, N, K, K, 0, 0, A, B, col_bias, sm__tensor_uid(b), c, act, 0.0f};
    int declined;
    if ((st = sm__dnnl_matmul(s->dnnl, &da, ctx, &declined))) goto out;
    done = !declined;
  }
  if (!done) {
    if (rows > INT32_MAX || N > INT32_MAX || K > INT32_MAX) {
      st = sm_status_new(SM_UNIMPLEMENTED, "matrix dimensions exceed what BLAS takes (2^31-1)");
      goto out;
    }
    sm__nn_matmul_f32(sm__kctx_pool(ctx), 0, 0, rows, N, K, A, B, col_bias, act, 0, c);
  }
  if (!in_product) /* the bias repeats every P elements of y's flat order (P divides nel) */
    for (int64_t o = 0; o < nel; o += P) sm__nn_bias_act_f32(c + o, c + o, 1, P, bv, s->act, 0.0f);
out:
  sm__kctx_scratch_free(ctx, tiled);
  return st;
}

const sm_kernel sm_kernels_nn_matmul_ep[] = {
    {"_SmMatMulEp", ep_prepare, ep_compute, ep_release, 0},
    {0},
};

/* ---- the rules --------------------------------------------------------------------------------- */
#define EP_RULE "MatMul|BatchMatMulV2+Reshape+BiasAdd|AddV2(bias) -> _SmMatMulEp"

static int op_is(const sm_node *n, const char *op) { return !strcmp(sm__node_op(n), op); }

static int rules_off(void) {
  const char *e = getenv("SM_MATMUL_EP");
  return e && !strcmp(e, "0");
}

/* A float node with one output, the given number of inputs and (when attr is set) that bool attr
 * false or absent. */
static int plain(const sm_node *n, int nin, const char *attr1, const char *attr2) {
  if (!n || sm__node_num_outputs(n) != 1 || sm__node_num_inputs(n) != nin || sm__node_output_dtype(n, 0) != SM_FLOAT)
    return 0;
  const char *at[2] = {attr1, attr2};
  for (int i = 0; i < 2; i++) {
    int v = 0;
    if (!at[i] || !sm__node_attr(n, at[i])) continue;
    sm_status *st = sm__node_attr_bool(n, at[i], &v);
    sm_status_free(st);
    if (st || v) return 0;
  }
  return 1;
}

/* A Const (not fed) int32/int64 vector of two entries: the shape of a matrix. */
static sm_status *matrix_shape(const sm_rewrite *rw, sm_edge e, int *ok) {
  *ok = 0;
  sm_tensor *t;
  sm_status *st = sm__rewrite_const_value(rw, e, &t);
  if (st || !t) return st;
  *ok = sm_tensor_rank(t) == 1 && sm_tensor_num_elements(t) == 2 &&
        (sm_tensor_dtype(t) == SM_INT32 || sm_tensor_dtype(t) == SM_INT64);
  sm_tensor_free(t);
  return NULL;
}

/* The product and Reshape that make value v: *mm, *rs (node ids; *rs -1 for a BatchMatMul's own
 * output) and whether it is a BatchMatMul; *mm = -1 when v is not made so. */
static sm_status *product_of(const sm_rewrite *rw, sm_edge v, int *mm, int *rs, int *batch) {
  *mm = *rs = -1;
  if (v.node < 0 || v.index != 0) return NULL;
  const sm_node *r = sm__rewrite_node(rw, v.node);
  int direct = r && (op_is(r, "BatchMatMulV2") || op_is(r, "BatchMatMul"));
  if (!r || (!direct && (!op_is(r, "Reshape") || !plain(r, 2, NULL, NULL)))) return NULL;
  sm_edge pe = direct ? v : sm__rewrite_input(rw, v.node, 0);
  const sm_node *p = pe.node >= 0 && pe.index == 0 ? sm__rewrite_node(rw, pe.node) : NULL;
  if (!p) return NULL;
  if (op_is(p, "MatMul") && plain(p, 2, "transpose_a", "transpose_b")) {
    *batch = 0;
  } else if ((op_is(p, "BatchMatMulV2") || op_is(p, "BatchMatMul")) && plain(p, 2, "adj_x", "adj_y")) {
    sm_edge w = sm__rewrite_input(rw, pe.node, 1);
    const sm_node *wr = w.node >= 0 && w.index == 0 ? sm__rewrite_node(rw, w.node) : NULL;
    int ok = 0;
    if (!wr || !op_is(wr, "Reshape") || sm__node_num_inputs(wr) != 2) return NULL;
    sm_status *st = matrix_shape(rw, sm__rewrite_input(rw, w.node, 1), &ok);
    if (st || !ok) return st;
    *batch = 1;
  } else {
    return NULL;
  }
  int t = sm__node_input_dtype(r, 1);
  if (!direct && t != SM_INT32 && t != SM_INT64) return NULL;
  *mm = pe.node;
  *rs = direct ? -1 : v.node;
  return NULL;
}

static int no_ref_reads(const sm_rewrite *rw, const int *chain, int n) {
  for (int k = 0; k < n; k++)
    for (int i = 0; i < sm__node_num_inputs(sm__rewrite_node(rw, chain[k])); i++)
      if (sm__rewrite_reads_ref(rw, chain[k], i)) return 0;
  return 1;
}

/* Replaces chain (starting with the product, then its Reshape when rs) with one _SmMatMulEp;
 * *done = 1. */
static sm_status *emit(sm_rewrite *rw, const int *chain, int n, int rs, int batch, const sm_edge *bias,
                       int bias_add, const char *act, int *done) {
  *done = 0;
  if (!no_ref_reads(rw, chain, n) || !sm__rewrite_can_fuse(rw, chain, n)) return NULL;
  sm_node *f;
  sm_status *st = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(sm__rewrite_node(rw, chain[n - 1])), "_SmMatMulEp", &f);
  if (st) return st;
  st = sm__synth_add_input(f, sm__rewrite_input(rw, chain[0], 0));
  if (!st) st = sm__synth_add_input(f, sm__rewrite_input(rw, chain[0], 1));
  if (!st && rs) st = sm__synth_add_input(f, sm__rewrite_input(rw, chain[1], 1));
  if (!st && bias) st = sm__synth_add_input(f, *bias);
  if (!st) st = sm__synth_set_type(f, "T", SM_FLOAT);
  if (!st) st = sm__synth_set_type(f, "Tshape", rs ? sm__node_input_dtype(sm__rewrite_node(rw, chain[1]), 1) : SM_INT32);
  if (!st) st = sm__synth_set_int(f, "num_bias", bias != NULL);
  if (!st) st = sm__synth_set_int(f, "num_shape", rs != 0);
  if (!st) st = sm__synth_set_string(f, "product", batch ? "BatchMatMul" : "MatMul");
  if (!st) st = sm__synth_set_bool(f, "bias_add", bias_add);
  if (!st) st = sm__synth_set_string(f, "activation", act);
  if (!st) st = sm__synth_finish(f);
  if (st) {
    sm__synth_free(f);
    return st;
  }
  *done = 1;
  return sm__rewrite_replace(rw, EP_RULE, chain, n, f);
}

/* A BiasAdd in NHWC (or BiasAddV1) of float values. */
static int bias_add_node(const sm_rewrite *rw, int id) {
  const sm_node *n = sm__rewrite_node(rw, id);
  if (!(op_is(n, "BiasAdd") || op_is(n, "BiasAddV1")) || !plain(n, 2, NULL, NULL)) return 0;
  int nchw = 1;
  sm_status *st = op_is(n, "BiasAdd") ? sm__nn_data_format(n, 0, &nchw) : (nchw = 0, NULL);
  sm_status_free(st);
  return !st && !nchw;
}

static sm_status *fuse_bias(sm_rewrite *rw, int id) {
  if (rules_off()) return NULL;
  const sm_node *n = sm__rewrite_node(rw, id);
  int badd = bias_add_node(rw, id);
  if (!badd && !((op_is(n, "AddV2") || op_is(n, "Add")) && plain(n, 2, NULL, NULL))) return NULL;
  for (int k = 0; k < (badd ? 1 : 2); k++) {
    sm_edge bias = sm__rewrite_input(rw, id, 1 - k);
    if (!badd) { /* the other operand a variable read or a constant: small, by Keras' layers */
      const sm_node *bn = bias.node >= 0 ? sm__rewrite_node(rw, bias.node) : NULL;
      if (!bn || !(op_is(bn, "ReadVariableOp") || op_is(bn, "_SmReadVariable") || op_is(bn, "Const")) ||
          sm__rewrite_is_fed(rw, bias))
        continue;
    }
    int mm, rs, batch, done = 0;
    sm_status *st = product_of(rw, sm__rewrite_input(rw, id, k), &mm, &rs, &batch);
    if (st || mm < 0) {
      if (st) return st;
      continue;
    }
    int chain[3] = {mm, rs, id}, n3 = 3;
    if (rs < 0) chain[1] = id, n3 = 2;
    return emit(rw, chain, n3, rs >= 0, batch, &bias, badd, "", &done);
  }
  return NULL;
}

/* nn_internal.h */
sm_status *sm__nn_ep_fuse_gelu(sm_rewrite *rw, const int *gchain, int gn, sm_edge x, const sm_edge *bias,
                              const sm_edge c[3], int *done) {
  *done = 0;
  if (rules_off()) return NULL;
  static const float want[3] = {0.5f, SM_NN_GELU_C1, 1.0f};
  for (int i = 0; i < 3; i++) {
    sm_tensor *t;
    sm_status *st = sm__rewrite_const_value(rw, c[i], &t);
    if (st || !t) return st;
    int ok = sm_tensor_dtype(t) == SM_FLOAT && sm_tensor_num_elements(t) == 1 &&
             *(const float *)sm_tensor_data(t) == want[i];
    sm_tensor_free(t);
    if (!ok) return NULL;
  }
  /* the BiasAdd already fused by fuse_bias (its anchor comes first): the same node with the GELU */
  const sm_node *xn = !bias && x.node >= 0 && x.index == 0 ? sm__rewrite_node(rw, x.node) : NULL;
  if (xn && op_is(xn, "_SmMatMulEp") && gn <= 6) {
    const char *act;
    size_t la;
    sm_status *ast = sm__node_attr_string(xn, "activation", &act, &la);
    sm_status_free(ast);
    int chain[7] = {x.node};
    for (int i = 0; i < gn; i++) chain[1 + i] = gchain[i];
    if (ast || la || !sm__rewrite_can_fuse(rw, chain, gn + 1)) return NULL;
    sm_node *f;
    sm_status *st = sm__synth_new(sm__rewrite_graph(rw), sm__node_name(sm__rewrite_node(rw, chain[gn])), "_SmMatMulEp", &f);
    if (st) return st;
    for (int i = 0; i < sm__node_num_inputs(xn) && !st; i++) st = sm__synth_add_input(f, sm__rewrite_input(rw, x.node, i));
    static const char *const copy[] = {"T", "Tshape", "num_bias", "num_shape", "product", "bias_add"};
    for (size_t i = 0; i < sizeof copy / sizeof *copy && !st; i++) st = sm__synth_copy_attr(f, copy[i], xn, copy[i]);
    if (!st) st = sm__synth_set_string(f, "activation", "GeluErf");
    if (!st) st = sm__synth_finish(f);
    if (st) {
      sm__synth_free(f);
      return st;
    }
    *done = 1;
    return sm__rewrite_replace(rw, EP_RULE, chain, gn + 1, f);
  }
  int mm, rs, batch;
  sm_status *st = product_of(rw, x, &mm, &rs, &batch);
  if (st || mm < 0 || gn > 6) return st;
  int chain[8] = {mm, rs}, n = rs >= 0 ? 2 : 1;
  for (int i = 0; i < gn; i++) chain[n + i] = gchain[i];
  return emit(rw, chain, gn + n, rs >= 0, batch, bias, bias != NULL, "GeluErf", done);
}

const sm_rewrite_rule sm_rewrites_nn_matmul_ep[] = {
    {"BiasAdd", EP_RULE, fuse_bias},
    {"BiasAddV1", EP_RULE, fuse_bias},
    {"AddV2", EP_RULE, fuse_bias},
    {"Add", EP_RULE, fuse_bias},
    {0},
};

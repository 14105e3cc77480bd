/* control_hoist.c - the While kernel's loop-invariant input projection (control_internal.h has the
 * shape it looks for and what it guarantees): finding it in a body function at prepare, and at
 * compute the one product over the whole input list before the loop and the per-step feed.
 *
 * This is what a Keras RNN's body does every step (x_t = list[i]; x_t @ kernel), and what TF's
 * own fused RNN kernels (and cuDNN) do once per sequence instead: the input projection does not
 * depend on the recurrent state, so it runs as a few large products rather than T small ones.
 * Nothing here is keyed on names: only on the ops and edges of the body.
 *
 * Prepare compiles the body twice more (sm__prepare_function_plan_edit): once with the MatMul's
 * output fed (the hoisted body: GetItem, MatMul and the weight's read are pruned), once fetching
 * only the weight (its read, run once per call on the initial vars). */
#include <stdlib.h>
#include <string.h>

#include "base/tensor_internal.h"
#include "ops/control_internal.h"
#include "ops/nn_dnnl.h"
#include "ops/nn_internal.h"

/* A chunk of steps' inputs and projection is at most this (about a core's L2: each step reads
 * its piece soon after the product wrote it); a step that alone needs more runs the plain body. */
#define HOIST_CHUNK_BYTES ((int64_t)512 << 10)

static int64_t g_calls, g_chunk_bytes = HOIST_CHUNK_BYTES;

int64_t sm__hoist_calls(void) { return __atomic_load_n(&g_calls, __ATOMIC_RELAXED); }
int64_t sm__hoist_set_chunk_bytes(int64_t bytes) {
  return __atomic_exchange_n(&g_chunk_bytes, bytes > 0 ? bytes : HOIST_CHUNK_BYTES, __ATOMIC_RELAXED);
}

struct sm__hoist {
  sm_plan *body;   /* feeds: the n vars, then the MatMul's output */
  sm_plan *weight; /* feeds: the n vars; fetch: the weight */
  int n, k, j;     /* loop vars: the list, the counter */
  int tb;          /* MatMul's transpose_b */
  sm__dnnl_cache *dnnl; /* the projection's oneDNN primitive and packed weight, when oneDNN is on */
};

struct sm__hoist_run {
  sm_kctx *ctx;
  sm_tensor *w;       /* the weight, read once */
  sm_tensor *pt;      /* the projection of steps [c0, c0 + cn) [cn, b, N]; each y wraps a piece and holds a ref */
  float *xs;          /* those steps' items, stacked [cn * b, K] */
  sm_tensor **in;     /* the hoisted body's feeds */
  const void *list;   /* the list object projected */
  int64_t t, b, kk, nn;
  int64_t chunk, c0, cn; /* steps per product; the steps projected now (c0 -1: none) */
};

static int op_is(const sm_node *n, const char *op) { return !strcmp(sm__node_op(n), op); }
static int same(sm_edge a, sm_edge b) { return a.node == b.node && a.index == b.index; }

/* e, past any Identity in front of it */
static sm_edge through(const sm_cgraph *g, sm_edge e) {
  for (int guard = 0; e.node >= 0 && guard < 64; guard++) {
    const sm_node *n = sm__cgraph_node(g, e.node);
    if (!n || !op_is(n, "Identity") || sm__node_num_inputs(n) != 1) break;
    e = sm__node_input(n, 0);
  }
  return e;
}

/* The loop var that edge e is (args[i]), or -1. */
static int var_of(const sm_cgraph *g, const sm_edge *args, int n, sm_edge e) {
  e = through(g, e);
  for (int i = 0; i < n; i++)
    if (same(args[i], e)) return i;
  return -1;
}

/* The body passes var i through unchanged. */
static int invariant(const sm_cgraph *g, const sm_edge *args, const sm_edge *rets, int n, int i) {
  return i >= 0 && var_of(g, args, n, rets[i]) == i;
}

/* A Const int32 scalar of value v. Out of memory reading it: 0, and the error in *oom (the
 * caller's prepare fails rather than running the plain body: see sm__hoist_prepare). */
static int const_is(const sm_cgraph *g, sm_edge e, int32_t v, sm_status **oom) {
  e = through(g, e);
  const sm_node *c = e.node >= 0 ? sm__cgraph_node(g, e.node) : NULL;
  if (!c || !op_is(c, "Const")) return 0;
  sm_tensor *t = NULL;
  sm_status *st = sm__node_attr_tensor(c, "value", &t);
  int ok = !st && t && sm_tensor_dtype(t) == SM_INT32 && sm_tensor_num_elements(t) == 1 &&
           *(const int32_t *)sm_tensor_data(t) == v;
  if (st && sm_status_code(st) == SM_RESOURCE_EXHAUSTED && !*oom) *oom = st;
  else sm_status_free(st);
  sm_tensor_free(t);
  return ok;
}

/* The body returns var j + 1 as var j. */
static int counter(const sm_cgraph *g, const sm_edge *args, const sm_edge *rets, int n, int j, sm_status **oom) {
  sm_edge r = through(g, rets[j]);
  const sm_node *a = r.node >= 0 ? sm__cgraph_node(g, r.node) : NULL;
  if (!a || !(op_is(a, "AddV2") || op_is(a, "Add")) || sm__node_num_inputs(a) != 2) return 0;
  for (int s = 0; s < 2; s++)
    if (var_of(g, args, n, sm__node_input(a, s)) == j && const_is(g, sm__node_input(a, 1 - s), 1, oom)) return 1;
  return 0;
}

/* The weight is the same every step: a Const, an invariant float var, or ReadVariableOp of an
 * invariant var (the caller has checked that nothing in the body assigns a variable). */
static int weight_ok(const sm_cgraph *g, const sm_edge *args, const sm_edge *rets, int n, sm_edge w) {
  w = through(g, w);
  const sm_node *p = w.node >= 0 ? sm__cgraph_node(g, w.node) : NULL;
  if (!p) return 0;
  if (op_is(p, "Const")) return 1;
  int v = var_of(g, args, n, w);
  if (v >= 0) return invariant(g, args, rets, n, v);
  return op_is(p, "ReadVariableOp") && sm__node_num_inputs(p) == 1 &&
         invariant(g, args, rets, n, var_of(g, args, n, sm__node_input(p, 0)));
}

typedef struct find {
  int mode;       /* 0: find only; 1: feed the MatMul's output; 2: fetch the weight */
  sm_edge y, w;   /* the MatMul's output and its weight input */
  int k, j, tb;
  sm_edge *feeds; /* mode 1: args + y */
} find;

static sm_status *find_edit(const sm_cgraph *g, sm_plan_spec *spec, void *arg, int *build) {
  find *f = arg;
  *build = 0;
  const sm_edge *args = spec->feeds, *rets = spec->fetches;
  int n = spec->nfeeds;
  if (n != spec->nfetches) return NULL;
  int nn = sm__cgraph_num_nodes(g), found = 0;
  sm_status *oom = NULL;
  for (int i = 0; i < nn; i++) {
    const sm_node *x = sm__cgraph_node(g, i);
    /* nothing may assign a variable: only reads are stateful */
    if (sm__node_is_stateful(x) && !op_is(x, "ReadVariableOp") && !op_is(x, "_Arg") && !op_is(x, "_Retval"))
      return NULL;
    /* and nothing calls a function (a nested loop, a call): each hoisted body is compiled twice
     * more, so hoisting through nested bodies would compile 2^depth plans */
    const Tensorflow__OpDef *od = sm__cgraph_op_def(g, sm__node_op(x));
    if (!od) return NULL;
    for (size_t a = 0; a < od->n_attr; a++)
      if (od->attr[a] && od->attr[a]->type && strstr(od->attr[a]->type, "func")) return NULL;
  }
  for (int i = 0; i < nn && !found; i++) {
    const sm_node *m = sm__cgraph_node(g, i);
    int ta = 0, tb = 0;
    if (!op_is(m, "MatMul") || sm__node_num_inputs(m) != 2 || sm__node_num_outputs(m) != 1 ||
        sm__node_output_dtype(m, 0) != SM_FLOAT || sm__node_num_control_inputs(m))
      continue;
    if (sm__node_attr(m, "transpose_a")) sm_status_free(sm__node_attr_bool(m, "transpose_a", &ta));
    if (sm__node_attr(m, "transpose_b")) sm_status_free(sm__node_attr_bool(m, "transpose_b", &tb));
    sm_edge x = through(g, sm__node_input(m, 0));
    const sm_node *gi = x.node >= 0 ? sm__cgraph_node(g, x.node) : NULL;
    if (ta || !gi || !op_is(gi, "TensorListGetItem") || sm__node_num_inputs(gi) < 2) continue;
    int k = var_of(g, args, n, sm__node_input(gi, 0)), j = var_of(g, args, n, sm__node_input(gi, 1));
    if (k < 0 || j < 0 || !invariant(g, args, rets, n, k) || !counter(g, args, rets, n, j, &oom) ||
        !weight_ok(g, args, rets, n, sm__node_input(m, 1)))
      continue;
    found = 1;
    f->y = (sm_edge){i, 0};
    f->w = sm__node_input(m, 1);
    f->k = k, f->j = j, f->tb = tb;
  }
  if (oom) return oom;
  if (!found || f->mode == 0) return NULL;
  if (f->mode == 1) {
    if (!(f->feeds = malloc(((size_t)n + 1) * sizeof *f->feeds))) return sm_status_new(SM_NO_MEMORY, "out of memory");
    memcpy(f->feeds, args, (size_t)n * sizeof *args);
    f->feeds[n] = f->y;
    spec->feeds = f->feeds;
    spec->nfeeds = n + 1;
  } else {
    spec->fetches = &f->w;
    spec->nfetches = 1;
    spec->targets = NULL;
    spec->ntargets = 0;
  }
  *build = 1;
  return NULL;
}

void sm__hoist_free(sm__hoist *h) {
  if (!h) return;
  sm__plan_free(h->body);
  sm__plan_free(h->weight);
  sm__dnnl_cache_free(h->dnnl);
  free(h);
}

sm_status *sm__hoist_prepare(const sm_node *node, const char *body, int nvars, sm__hoist **out) {
  *out = NULL;
  find f = {1, {-1, -1}, {-1, -1}, -1, -1, 0, NULL};
  sm__hoist *h = calloc(1, sizeof *h);
  if (!h) return sm_status_new(SM_NO_MEMORY, "While: out of memory");
  sm_status *st = sm__prepare_function_plan_edit(node, body, find_edit, &f, &h->body);
  free(f.feeds);
  if (!st && h->body) {
    find f2 = {2, {-1, -1}, {-1, -1}, -1, -1, 0, NULL};
    st = sm__prepare_function_plan_edit(node, body, find_edit, &f2, &h->weight);
  }
  if (st || !h->body || !h->weight || sm__plan_num_feeds(h->body) != nvars + 1 ||
      sm__plan_num_fetches(h->body) != nvars) {
    sm__hoist_free(h);
    return st;
  }
  h->n = nvars, h->k = f.k, h->j = f.j, h->tb = f.tb;
  if (sm__dnnl_enabled() && (st = sm__dnnl_cache_new(&h->dnnl))) {
    sm__hoist_free(h);
    return st;
  }
  *out = h;
  return NULL;
}

void sm__hoist_end(sm__hoist_run *r) {
  if (!r) return;
  sm_tensor_free(r->pt);
  sm_tensor_free(r->w);
  sm__kctx_scratch_free(r->ctx, r->xs);
  sm__kctx_scratch_free(r->ctx, r->in);
  free(r);
}

sm_status *sm__hoist_begin(const sm__hoist *h, sm_kctx *ctx, sm_tensor *const *vars, sm__hoist_run **run) {
  *run = NULL;
  int dt;
  int64_t t;
  sm_tensor *const *items;
  const void *id;
  if (!sm__list_view(vars[h->k], &dt, &t, &items, &id) || dt != SM_FLOAT || t < 1) return NULL;
  const sm_tensor *x0 = items[0];
  if (!x0 || sm_tensor_dtype(x0) != SM_FLOAT || sm_tensor_rank(x0) != 2) return NULL;
  int64_t b = sm_tensor_dims(x0)[0], kk = sm_tensor_dims(x0)[1];
  if (b < 1 || kk < 1) return NULL;
  for (int64_t i = 1; i < t; i++)
    if (!items[i] || sm_tensor_dtype(items[i]) != SM_FLOAT || sm_tensor_rank(items[i]) != 2 ||
        sm_tensor_dims(items[i])[0] != b || sm_tensor_dims(items[i])[1] != kk)
      return NULL;
  int64_t cap = __atomic_load_n(&g_chunk_bytes, __ATOMIC_RELAXED);
  sm_tensor *w = NULL;
  sm_status *st = sm__kctx_run_plan(ctx, h->weight, vars, h->n, &w, 1);
  if (st) return st;
  const int64_t *wd = sm_tensor_dims(w);
  int64_t nn = sm_tensor_rank(w) == 2 ? wd[h->tb ? 0 : 1] : 0;
  if (sm_tensor_dtype(w) != SM_FLOAT || sm_tensor_rank(w) != 2 || wd[h->tb ? 1 : 0] != kk || nn < 1 ||
      (double)b * (double)(kk + nn) * sizeof(float) > (double)cap) {
    sm_tensor_free(w); /* the plain body's MatMul reports a bad weight */
    return NULL;
  }
  /* steps per chunk: the chunk's inputs and projection stay in cache until their steps read them */
  int64_t per = b * (kk + nn) * (int64_t)sizeof(float), chunk = cap / per;
  if (chunk > t) chunk = t;
  sm__hoist_run *r = calloc(1, sizeof *r);
  if (!r) st = sm_status_new(SM_NO_MEMORY, "While: out of memory");
  if (!st) {
    r->ctx = ctx, r->w = w, w = NULL;
    r->list = id, r->t = t, r->b = b, r->kk = kk, r->nn = nn, r->chunk = chunk, r->c0 = -1;
    st = sm__kctx_charge_check(ctx, (size_t)(chunk * per), "While: the loop's input projection");
  }
  if (!st && (r->in = sm__kctx_scratch(ctx, ((size_t)h->n + 1) * sizeof *r->in, &st)))
    r->xs = sm__kctx_scratch(ctx, (size_t)(chunk * b * kk) * sizeof(float), &st);
  if (st) {
    sm_tensor_free(w);
    sm__hoist_end(r);
    return st;
  }
  __atomic_add_fetch(&g_calls, 1, __ATOMIC_RELAXED);
  *run = r;
  return NULL;
}

/* Projects steps [c0, c0 + chunk) (fewer at the end) of the list's items into r->pt. */
static sm_status *project(const sm__hoist *h, sm__hoist_run *r, sm_kctx *ctx, sm_tensor *const *items, int64_t c0) {
  int64_t cn = r->t - c0 < r->chunk ? r->t - c0 : r->chunk;
  if (!r->pt || sm_tensor_is_shared(r->pt)) { /* a step's y still holds the last chunk: a new one */
    sm_tensor_free(r->pt);
    r->pt = NULL;
    sm_status *st = sm__tensor_new_uninit(SM_FLOAT, 1, (int64_t[]){r->chunk * r->b * r->nn}, &r->pt);
    if (st) return st;
  }
  size_t row = (size_t)(r->b * r->kk) * sizeof(float);
  for (int64_t i = 0; i < cn; i++) memcpy((char *)r->xs + (size_t)i * row, sm_tensor_data(items[c0 + i]), row);
  r->c0 = -1;
  sm_status *st = sm__nn_matmul_f32_kctx(ctx, h->dnnl, h->tb, cn * r->b, r->nn, r->kk, r->xs, sm_tensor_data(r->w),
                                         sm__tensor_uid(r->w), sm_tensor_data(r->pt));
  if (!st) r->c0 = c0, r->cn = cn;
  return st;
}

static void unref(void *t) { sm_tensor_free(t); }

sm_status *sm__hoist_step(const sm__hoist *h, sm__hoist_run *r, sm_kctx *ctx, sm_tensor *const *vars,
                          sm_tensor **next, int *done) {
  *done = 0;
  const sm_tensor *jt = vars[h->j];
  int dt;
  int64_t t;
  sm_tensor *const *items;
  const void *id;
  if (!r || !jt || sm_tensor_dtype(jt) != SM_INT32 || sm_tensor_num_elements(jt) != 1 ||
      !sm__list_view(vars[h->k], &dt, &t, &items, &id) || id != r->list || t != r->t)
    return NULL;
  int64_t i = *(const int32_t *)sm_tensor_data(jt);
  if (i < 0 || i >= r->t) return NULL; /* the plain body's GetItem reports it */
  sm_status *st = NULL;
  if ((r->c0 < 0 || i < r->c0 || i >= r->c0 + r->cn) && (st = project(h, r, ctx, items, i))) return st;
  sm_tensor **in = r->in;
  int64_t dims[2] = {r->b, r->nn};
  sm_tensor *y = NULL;
  size_t bytes = (size_t)(r->b * r->nn) * sizeof(float);
  float *p = (float *)sm_tensor_data(r->pt) + (i - r->c0) * r->b * r->nn;
  sm_tensor *hold = sm_tensor_ref(r->pt); /* the wrap's release drops it: y may outlive the step */
  if ((st = sm_tensor_wrap(SM_FLOAT, 2, dims, p, bytes, unref, hold, &y))) {
    sm_tensor_free(hold);
    return st;
  }
  memcpy(in, vars, (size_t)h->n * sizeof *in);
  in[h->n] = y;
  st = sm__kctx_run_plan(ctx, h->body, in, h->n + 1, next, h->n);
  sm_tensor_free(y);
  in[h->n] = NULL;
  if (!st) *done = 1;
  return st;
}

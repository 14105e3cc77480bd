/* dataset_group.c - tf.data's grouping stages in saved functions: GroupByWindowDataset
 * (Dataset.group_by_window, and bucket_by_sequence_length, which TF builds on it) and
 * GroupByReducerDataset (tf.data.experimental.group_by_reducer). The dataset object and iterators
 * are dataset.c's (dataset.h); this file owns these two kernels, their functions (gstate) and their
 * iterators' groups, following TF's kernels (core/kernels/data/experimental/
 * group_by_window_dataset_op.cc, group_by_reducer_dataset_op.cc):
 * - group_by_window reads the input until a key's group holds its window size (window_size_func,
 *   run once per key and iterator), then runs reduce_func(key, the group as a dataset) and gives
 *   the elements of the dataset it returns; at the end of the input the groups left are flushed
 *   smallest key first (TF's std::map).
 * - group_by_reducer runs init_func(key) for a new key and reduce_func(state..., element...) for
 *   every element, then at the end of the input finalize_func(state...) for each key. TF gives the
 *   keys in its hash map's order (unspecified); here they come in ascending order.
 * Buffered elements and states are charged to the run's memory budget. */
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor_internal.h"
#include "ops/dataset.h"
#include "runtime/kernel.h"

enum { F_KEY, F_A, F_B, F_C, NF }; /* window: key, reduce, window_size; reducer: key, init, reduce, finalize */

typedef struct gstate {
  atomic_int refs;
  int kind;
  const char *op;
  sm_plan *f[NF];
  int ncap[NF], off[NF]; /* each function's captured arguments: d->t[off .. off + ncap) */
  int nf;
} gstate;

static void gstate_unref(void *p) {
  gstate *g = p;
  if (g && atomic_fetch_sub(&g->refs, 1) == 1) {
    for (int i = 0; i < NF; i++) sm__plan_free(g->f[i]);
    free(g);
  }
}

static const char *const win_attrs[] = {"key_func", "reduce_func", "window_size_func"};
static const char *const win_targs[] = {"Tkey_func_other_arguments", "Treduce_func_other_arguments", "Twindow_size_func_other_arguments"};
static const char *const red_attrs[] = {"key_func", "init_func", "reduce_func", "finalize_func"};
static const char *const red_targs[] = {"Tkey_func_other_arguments", "Tinit_func_other_arguments", "Treduce_func_other_arguments",
                                        "Tfinalize_func_other_arguments"};

static sm_status *group_prepare(const sm_node *node, void **state) {
  gstate *g = calloc(1, sizeof *g);
  if (!g) return sm_status_new(SM_NO_MEMORY, "out of memory");
  atomic_init(&g->refs, 1);
  g->op = sm__node_op(node);
  int win = strstr(g->op, "Window") != NULL;
  g->kind = win ? K_GROUPWIN : K_GROUPRED;
  g->nf = win ? 3 : 4;
  sm_status *s = NULL;
  int off = 0;
  for (int i = 0; i < g->nf && !s; i++) {
    const char *an = win ? win_attrs[i] : red_attrs[i];
    const Tensorflow__AttrValue *a = sm__node_attr(node, an);
    if (!a || a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !a->func || !a->func->name || !*a->func->name) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "%s: attr '%s' is not a function", g->op, an);
      break;
    }
    s = sm__prepare_function_plan(node, a->func->name, &g->f[i]);
    const int *v;
    size_t n = 0;
    const char *tn = win ? win_targs[i] : red_targs[i];
    if (!s && sm__node_attr(node, tn)) s = sm__node_attr_types(node, tn, &v, &n);
    g->ncap[i] = (int)n, g->off[i] = off;
    off += (int)n;
  }
  if (s) {
    gstate_unref(g);
    return s;
  }
  *state = g;
  return NULL;
}

static sm_status *group_compute(const void *state, sm_kctx *c) {
  gstate *g = (gstate *)state;
  const ds *in0;
  sm_status *s = sm__ds_input(c, 0, &in0);
  if (s) return s;
  int ncap = g->off[g->nf - 1] + g->ncap[g->nf - 1];
  if (sm__kctx_num_inputs(c) != 1 + ncap)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %d inputs after the dataset; its attrs say %d", g->op, sm__kctx_num_inputs(c) - 1, ncap);
  const int *v;
  size_t n = 0;
  if ((s = sm__node_attr_types(sm__kctx_node(c), "output_types", &v, &n))) return s;
  if (n < 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s: output_types is empty", g->op);
  ds *d;
  if ((s = sm__ds_new(g->kind, 1, ncap, &d))) return s;
  d->in[0] = (ds *)sm__variant_ref((sm_variant *)&in0->v);
  d->nin = 1;
  d->ncomp = (int)n;
  for (int i = 0; i < ncap; i++) d->t[i] = sm_tensor_ref((sm_tensor *)sm__kctx_input(c, 1 + i));
  d->nt = ncap;
  atomic_fetch_add(&g->refs, 1);
  d->ext = g;
  d->ext_free = gstate_unref;
  return sm__ds_set_output(c, d);
}

/* ---- iterators ---------------------------------------------------------------------------------- */

typedef struct group {
  int64_t key;
  int64_t wsize; /* window: its window size (0 until known) */
  sm_tensor **el; /* window: n elements (ncomp each); reducer: the state (nst tensors) */
  int64_t n, cap;
} group;

typedef struct git {
  group *g; /* sorted by key */
  int64_t ng, gcap;
  int nst;     /* reducer: tensors in a state */
  int in_end;  /* the input ended */
  int64_t fin; /* reducer: the next group to finalize */
} git;

static sm_status *oom(void) { return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM in a grouping dataset"); }

static void git_free(dit *it) {
  git *x = it->ext;
  if (!x) return;
  for (int64_t i = 0; i < x->ng; i++) {
    int64_t m = it->d->kind == K_GROUPWIN ? x->g[i].n * it->d->ncomp : (x->g[i].el ? x->nst : 0);
    for (int64_t j = 0; j < m; j++) sm_tensor_free(x->g[i].el[j]);
    free(x->g[i].el);
  }
  free(x->g);
  free(x);
  it->ext = NULL;
}

/* The group of key (made when absent). */
static sm_status *find_group(git *x, int64_t key, group **out) {
  int64_t lo = 0, hi = x->ng;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (x->g[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  if (lo < x->ng && x->g[lo].key == key) {
    *out = &x->g[lo];
    return NULL;
  }
  if (x->ng == x->gcap) {
    int64_t nc = x->gcap ? x->gcap * 2 : 8;
    group *ng = realloc(x->g, (size_t)nc * sizeof *ng);
    if (!ng) return oom();
    x->g = ng, x->gcap = nc;
  }
  memmove(x->g + lo + 1, x->g + lo, (size_t)(x->ng - lo) * sizeof *x->g);
  memset(&x->g[lo], 0, sizeof x->g[lo]);
  x->g[lo].key = key;
  x->ng++;
  *out = &x->g[lo];
  return NULL;
}

/* Runs function fi of d on (pre..., mid..., its captured tensors) into out (nout; -1: any count, set). */
static sm_status *run_f(sm_kctx *c, const ds *d, int fi, sm_tensor *const *pre, int npre, sm_tensor *const *mid, int nmid,
                        sm_tensor **out, int nout) {
  const gstate *g = d->ext;
  int ncap = g->ncap[fi], nin = npre + nmid + ncap;
  const char *const *names = g->kind == K_GROUPWIN ? win_attrs : red_attrs;
  if (sm__plan_num_feeds(g->f[fi]) != nin || sm__plan_num_fetches(g->f[fi]) != nout)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: `%s` takes %d inputs and gives %d outputs; the dataset passes %d and expects %d", g->op,
                         names[fi], sm__plan_num_feeds(g->f[fi]), sm__plan_num_fetches(g->f[fi]), nin, nout);
  sm_status *s = NULL;
  sm_tensor **args = nin ? sm__kctx_scratch(c, (size_t)nin * sizeof *args, &s) : NULL;
  if (s) return s;
  for (int i = 0; i < npre; i++) args[i] = pre[i];
  for (int i = 0; i < nmid; i++) args[npre + i] = mid[i];
  for (int i = 0; i < ncap; i++) args[npre + nmid + i] = d->t[g->off[fi] + i];
  s = sm__kctx_run_plan(c, g->f[fi], args, nin, out, nout);
  sm__kctx_scratch_free(c, args);
  return s;
}

static int is_i64_scalar(const sm_tensor *t) { return t && sm_tensor_dtype(t) == SM_INT64 && sm_tensor_num_elements(t) == 1; }

/* key_func on the element e: its int64 key. */
static sm_status *elem_key(sm_kctx *c, const ds *d, sm_tensor **e, int64_t *key) {
  sm_tensor *k = NULL;
  sm_status *s = run_f(c, d, F_KEY, NULL, 0, e, d->in[0]->ncomp, &k, 1);
  if (!s && !is_i64_scalar(k)) s = sm_status_new(SM_INVALID_ARGUMENT, "`key_func` must return a scalar int64.");
  if (!s) *key = *(const int64_t *)sm_tensor_data(k);
  sm_tensor_free(k);
  return s;
}

static sm_status *key_tensor(int64_t key, sm_tensor **out) {
  sm_status *s = sm_tensor_new(SM_INT64, 0, NULL, out);
  if (!s) *(int64_t *)sm_tensor_data(*out) = key;
  return s;
}

/* reduce_func(key, the group as a dataset): its dataset's iterator becomes it->iin; the group is removed. */
static sm_status *flush(dit *it, sm_kctx *c, int64_t gi) {
  const ds *d = it->d;
  git *x = it->ext;
  group *g = &x->g[gi];
  int nc = d->in[0]->ncomp;
  if (g->n > INT_MAX / nc)
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "GroupByWindowDataset: a group of %" PRId64 " elements is more than a dataset holds here", g->n);
  ds *w;
  sm_status *s = sm__ds_new(K_LIST, 0, (int)(g->n * nc), &w);
  if (s) return s;
  w->ncomp = nc, w->nt = (int)(g->n * nc);
  for (int64_t i = 0; i < g->n * nc; i++) sm__mem_give_tensor(&it->acct, g->el[i]), w->t[i] = g->el[i];
  free(g->el);
  int64_t key = g->key;
  g->el = NULL, g->n = g->cap = 0; /* the group goes; its window size stays (TF's window_sizes_) */
  sm_tensor *args[2] = {NULL, NULL}, *r = NULL;
  if ((s = key_tensor(key, &args[0])) || (s = sm_tensor_new(SM_VARIANT, 0, NULL, &args[1]))) {
    sm_tensor_free(args[0]);
    sm__variant_unref(&w->v);
    return s;
  }
  sm__tensor_variants(args[1])[0] = &w->v;
  s = run_f(c, d, F_A, args, 2, NULL, 0, &r, 1);
  sm_tensor_free(args[0]);
  sm_tensor_free(args[1]);
  const ds *rd = s ? NULL : sm__ds_of(r);
  if (!s && (!rd || sm_tensor_rank(r) != 0)) s = sm_status_new(SM_INVALID_ARGUMENT, "`reduce_func` must return a single scalar of dtype DT_VARIANT.");
  if (!s && rd->ncomp != d->ncomp)
    s = sm_status_new(SM_INVALID_ARGUMENT, "GroupByWindowDataset: `reduce_func` returned a dataset of %d components; the dataset has %d", rd->ncomp, d->ncomp);
  if (!s) {
    it->inner = (ds *)sm__variant_ref((sm_variant *)&rd->v);
    s = sm__ds_it_new(it->inner, &it->iin);
  }
  sm_tensor_free(r);
  return s;
}

/* TF's GroupByWindowDatasetOp::Iterator::GetNextInternal. */
static sm_status *next_window(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  git *x = it->ext;
  int nc = d->in[0]->ncomp;
  sm_status *s = NULL;
  for (;;) {
    int got;
    if ((s = sm__ds_inner_next(it, c, out, end, &got)) || got) return s;
    int64_t full = -1;
    while (!x->in_end && full < 0) {
      sm_tensor **e = sm__kctx_scratch(c, (size_t)(nc + 1) * sizeof *e, &s);
      if (s) return s;
      memset(e, 0, (size_t)(nc + 1) * sizeof *e);
      int64_t key = 0;
      group *g = NULL;
      if (!(s = sm__ds_it_next(it->in[0], c, e, &x->in_end)) && !x->in_end && !(s = elem_key(c, d, e, &key)) && !(s = find_group(x, key, &g)) &&
          !g->wsize) {
        sm_tensor *kt = NULL, *w = NULL;
        if (!(s = key_tensor(key, &kt))) s = run_f(c, d, F_B, &kt, 1, NULL, 0, &w, 1);
        if (!s && !is_i64_scalar(w)) s = sm_status_new(SM_INVALID_ARGUMENT, "`window_size_func` must return a scalar int64.");
        if (!s && *(const int64_t *)sm_tensor_data(w) <= 0)
          s = sm_status_new(SM_INVALID_ARGUMENT, "Window size must be greater than zero, but got %" PRId64 ".", *(const int64_t *)sm_tensor_data(w));
        if (!s) g->wsize = *(const int64_t *)sm_tensor_data(w);
        sm_tensor_free(kt);
        sm_tensor_free(w);
      }
      if (!s && g && g->n == g->cap) {
        int64_t ncap = g->cap ? g->cap * 2 : 4;
        sm_tensor **nb = realloc(g->el, (size_t)(ncap * nc) * sizeof *nb);
        if (!nb) s = oom();
        else g->el = nb, g->cap = ncap;
      }
      for (int j = 0; j < nc && !s && g; j++) s = sm__kctx_hold_tensor(c, &it->acct, e[j], "a dataset group");
      if (!s && g) {
        for (int j = 0; j < nc; j++) g->el[g->n * nc + j] = e[j], e[j] = NULL;
        if (++g->n == g->wsize) full = g - x->g;
      }
      sm__ds_free_elem(e, nc);
      sm__kctx_scratch_free(c, e);
      if (s) return s;
    }
    if (full < 0 && x->in_end) /* the smallest key whose group holds elements */
      for (int64_t i = 0; i < x->ng && full < 0; i++)
        if (x->g[i].n) full = i;
    if (full < 0) {
      it->done = *end = 1;
      return NULL;
    }
    if ((s = flush(it, c, full))) return s;
  }
}

/* TF's GroupByReducerDatasetOp::Iterator::GetNextInternal (keys in ascending order at the end). */
static sm_status *next_reducer(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  const gstate *gs = d->ext;
  git *x = it->ext;
  int nc = d->in[0]->ncomp;
  sm_status *s = NULL;
  while (!x->in_end) {
    sm_tensor **e = sm__kctx_scratch(c, (size_t)(nc + 1) * sizeof *e, &s);
    if (s) return s;
    memset(e, 0, (size_t)(nc + 1) * sizeof *e);
    int64_t key = 0;
    group *g = NULL;
    sm_tensor **res = NULL;
    if (!(s = sm__ds_it_next(it->in[0], c, e, &x->in_end)) && !x->in_end && !(s = elem_key(c, d, e, &key)) && !(s = find_group(x, key, &g))) {
      if (!x->nst) x->nst = sm__plan_num_fetches(gs->f[F_A]);
      if (!(res = calloc((size_t)x->nst + 1, sizeof *res))) s = oom();
      if (!s && !g->el) { /* init_func(key) */
        sm_tensor *kt = NULL;
        if (!(s = key_tensor(key, &kt))) s = run_f(c, d, F_A, &kt, 1, NULL, 0, res, x->nst);
        sm_tensor_free(kt);
        for (int j = 0; j < x->nst && !s; j++) s = sm__kctx_hold_tensor(c, &it->acct, res[j], "a dataset group state");
        if (!s) g->el = res, res = NULL;
        else sm__ds_free_elem(res, x->nst);
      }
      if (!s && !res && !(res = calloc((size_t)x->nst + 1, sizeof *res))) s = oom();
      if (!s) s = run_f(c, d, F_B, g->el, x->nst, e, nc, res, x->nst);
      for (int j = 0; j < x->nst && !s; j++) s = sm__kctx_hold_tensor(c, &it->acct, res[j], "a dataset group state");
      if (!s) {
        for (int j = 0; j < x->nst; j++) sm__mem_give_tensor(&it->acct, g->el[j]), sm_tensor_free(g->el[j]), g->el[j] = res[j], res[j] = NULL;
      }
      if (res) sm__ds_free_elem(res, x->nst);
    }
    free(res);
    sm__ds_free_elem(e, nc);
    sm__kctx_scratch_free(c, e);
    if (s) return s;
  }
  while (x->fin < x->ng && !x->g[x->fin].el) x->fin++;
  if (x->fin >= x->ng) {
    it->done = *end = 1;
    return NULL;
  }
  group *g = &x->g[x->fin++];
  s = run_f(c, d, F_C, g->el, x->nst, NULL, 0, out, d->ncomp);
  for (int j = 0; j < x->nst; j++) sm__mem_give_tensor(&it->acct, g->el[j]), sm_tensor_free(g->el[j]);
  free(g->el);
  g->el = NULL;
  return s;
}

sm_status *sm__ds_group_next(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  if (!it->ext) {
    if (!(it->ext = calloc(1, sizeof(git)))) return oom();
    it->ext_free = git_free;
  }
  return it->d->kind == K_GROUPWIN ? next_window(it, c, out, end) : next_reducer(it, c, out, end);
}

const sm_kernel sm_kernels_dataset_group[] = {
    {"GroupByWindowDataset", group_prepare, group_compute, gstate_unref, 0},
    {"GroupByReducerDataset", group_prepare, group_compute, gstate_unref, 0},
    {"ExperimentalGroupByWindowDataset", group_prepare, group_compute, gstate_unref, 0},
    {"ExperimentalGroupByReducerDataset", group_prepare, group_compute, gstate_unref, 0},
    {0},
};

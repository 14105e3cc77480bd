/* dataset_more.c - more tf.data stages in saved functions: ShardDataset (shard), DirectedInterleaveDataset
 * (choose_from_datasets, sample_from_datasets' interleave), AssertCardinalityDataset (assert_cardinality),
 * IgnoreErrorsDataset (ignore_errors), CacheDataset(V2) in memory (cache()), and DatasetToSingleElement
 * (get_single_element). The dataset object and iterators are dataset.c's (dataset.h); this file
 * reads these stages' inputs and makes their elements, following TF's kernels
 * (core/kernels/data/shard_dataset_op.cc, experimental/directed_interleave_dataset_op.cc,
 * experimental/assert_cardinality_dataset_op.cc, experimental/ignore_errors_dataset_op.cc,
 * cache_dataset_ops.cc). ShardDataset's require_non_empty (set only by tf.distribute's
 * auto-sharding) is not checked. cache() keeps the elements of the first iterator that reads its
 * input to the end with the dataset (later iterators replay them, as TF's memory cache does); a
 * cache to files (a filename) is refused: kernels here do not write files. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/dataset.h"
#include "runtime/kernel.h"

#define CARD_INF (-1)
#define CARD_UNKNOWN (-2)

static sm_status *oom(void) { return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM in a dataset"); }

/* A cache(): the elements (ncomp each) once an iterator has read them all. */
typedef struct mcache {
  pthread_mutex_t mu;
  sm_tensor **el;
  int64_t n;
  int nc, complete;
} mcache;

static void mcache_free(void *p) {
  mcache *m = p;
  if (!m) return;
  for (int64_t i = 0; i < m->n * m->nc; i++) sm_tensor_free(m->el[i]);
  free(m->el);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

sm_status *sm__ds_more_setup(sm_kctx *c, ds *d) {
  const sm_node *node = sm__kctx_node(c);
  const char *op = sm__node_op(node);
  int nin = sm__kctx_num_inputs(c);
  sm_status *s = NULL;
  switch (d->kind) {
    case K_SHARD:
      if ((s = sm__ds_scalar_i64(c, 1, "num_shards", &d->a)) || (s = sm__ds_scalar_i64(c, 2, "index", &d->b))) return s;
      if (d->a <= 0)
        return sm_status_new(SM_INVALID_ARGUMENT, "Number of shards must be greater than zero (currently num_shards = %" PRId64 ").", d->a);
      if (d->b < 0 || d->b >= d->a)
        return sm_status_new(SM_INVALID_ARGUMENT, "Index must be between 0 and %" PRId64 " (currently index = %" PRId64 ").", d->a - 1, d->b);
      return NULL;
    case K_CHOOSE: {
      if (nin < 2) return sm_status_new(SM_INVALID_ARGUMENT, "%s: needs a selector and at least one data input", op);
      if (d->in[0]->ncomp != 1) return sm_status_new(SM_INVALID_ARGUMENT, "%s: the selector dataset must have one int64 scalar component", op);
      d->ncomp = d->in[1]->ncomp;
      for (int i = 2; i < nin; i++)
        if (d->in[i]->ncomp != d->ncomp)
          return sm_status_new(SM_INVALID_ARGUMENT, "%s: data input %d has %d components and data input 0 has %d", op, i - 1, d->in[i]->ncomp, d->ncomp);
      int stop = 0;
      if (sm__node_attr(node, "stop_on_empty_dataset") && (s = sm__node_attr_bool(node, "stop_on_empty_dataset", &stop))) return s;
      d->drop = stop;
      return NULL;
    }
    case K_ASSERTCARD: return sm__ds_scalar_i64(c, 1, "cardinality", &d->a);
    case K_IGNORE: return NULL;
    case K_CACHE: {
      const sm_tensor *f = sm__kctx_input(c, 1);
      size_t len = 0;
      if (!f || sm_tensor_dtype(f) != SM_STRING || sm_tensor_num_elements(f) != 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "%s: filename must be a string scalar", op);
      const char *name = sm_tensor_string(f, 0, &len);
      if (len)
        return sm_status_new(SM_UNIMPLEMENTED, "%s: caching to files ('%.*s') is not supported here; cache() in memory (no filename) is", op,
                             (int)(len > 200 ? 200 : len), name);
      mcache *m = calloc(1, sizeof *m);
      if (!m) return oom();
      pthread_mutex_init(&m->mu, NULL);
      m->nc = d->ncomp;
      d->ext = m;
      d->ext_free = mcache_free;
      return NULL;
    }
    default: return sm_status_new(SM_INTERNAL, "%s: not a dataset_more.c stage", op);
  }
}

int64_t sm__ds_more_card(const ds *d, int64_t n) {
  switch (d->kind) {
    case K_SHARD:
      if (n == CARD_INF || n == CARD_UNKNOWN) return n;
      return n / d->a + (d->b < n % d->a ? 1 : 0);
    case K_ASSERTCARD: return d->a;
    case K_CACHE: return n;
    case K_RANDOM: return CARD_INF;
    default: return CARD_UNKNOWN; /* choose (TF too, unless an input is infinite), ignore_errors */
  }
}

/* cache(): it->got 1 recording (it->wb, it->wn elements), 2 replaying the dataset's cache. */
static sm_status *next_cache(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  mcache *m = it->d->ext;
  int nc = it->d->ncomp;
  sm_status *s = NULL;
  if (!it->got) {
    pthread_mutex_lock(&m->mu);
    it->got = m->complete ? 2 : 1;
    pthread_mutex_unlock(&m->mu);
  }
  if (it->got == 2) { /* complete caches are read-only */
    if (it->i >= m->n) {
      *end = 1;
      return NULL;
    }
    for (int j = 0; j < nc; j++) out[j] = sm_tensor_ref(m->el[it->i * nc + j]);
    it->i++;
    return NULL;
  }
  if ((s = sm__ds_it_next(it->in[0], c, out, end))) return s;
  if (*end) {
    pthread_mutex_lock(&m->mu);
    if (!m->complete) { /* the first iterator to read it all fills the cache */
      m->el = it->wb, m->n = it->wn, m->complete = 1;
      it->wb = NULL, it->wn = 0;
    }
    pthread_mutex_unlock(&m->mu);
    it->done = 1;
    return NULL;
  }
  if (it->wn == it->wcap) {
    int64_t ncap = it->wcap ? it->wcap * 2 : 16;
    sm_tensor **nb = realloc(it->wb, (size_t)(ncap * nc) * sizeof *nb);
    if (!nb) s = oom();
    else it->wb = nb, it->wcap = ncap;
  }
  for (int j = 0; j < nc && !s; j++) s = sm__kctx_hold_tensor(c, &it->acct, out[j], "a dataset cache");
  if (s) {
    sm__ds_free_elem(out, nc);
    return s;
  }
  for (int j = 0; j < nc; j++) it->wb[it->wn * nc + j] = sm_tensor_ref(out[j]);
  it->wn++;
  return NULL;
}

/* DirectedInterleaveDataset: it->in[0] the selector, it->in[1 + i] data input i (NULL once it
 * ended); it->nopen the inputs not ended. */
static sm_status *next_choose(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  int nd = d->nin - 1;
  sm_status *s;
  if (!it->got) it->got = 1, it->nopen = nd;
  for (;;) {
    sm_tensor *sel = NULL;
    int e = 0;
    if ((s = sm__ds_it_next(it->in[0], c, &sel, &e))) return s;
    if (e) {
      it->done = *end = 1;
      return NULL;
    }
    int ok = sm_tensor_dtype(sel) == SM_INT64 && sm_tensor_num_elements(sel) == 1;
    int64_t v = ok ? *(const int64_t *)sm_tensor_data(sel) : 0;
    sm_tensor_free(sel);
    if (!ok) return sm_status_new(SM_INVALID_ARGUMENT, "DirectedInterleaveDataset: the selector must give int64 scalars");
    if (v < 0 || v >= nd) return sm_status_new(SM_INVALID_ARGUMENT, "Selector index out of range: %" PRId64 " >= %d", v, nd);
    dit *x = it->in[1 + v];
    if (!x) continue; /* an input that ended: TF selects again */
    if ((s = sm__ds_it_next(x, c, out, end)) || !*end) return s;
    *end = 0;
    if (d->drop) { /* stop_on_empty_dataset */
      it->done = *end = 1;
      return NULL;
    }
    sm__ds_it_free(x);
    it->in[1 + v] = NULL;
    if (--it->nopen == 0) {
      it->done = *end = 1;
      return NULL;
    }
  }
}

sm_status *sm__ds_more_next(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  int nc = d->ncomp;
  sm_status *s = NULL;
  switch (d->kind) {
    case K_SHARD: /* the elements at positions index, index + num_shards, ... */
      for (;;) {
        if ((s = sm__ds_it_next(it->in[0], c, out, end)) || *end) {
          if (*end) it->done = 1;
          return s;
        }
        if (it->i++ % d->a == d->b) return NULL;
        sm__ds_free_elem(out, nc);
      }
    case K_CHOOSE: return next_choose(it, c, out, end);
    case K_ASSERTCARD:
      if ((s = sm__ds_it_next(it->in[0], c, out, end))) return s;
      if (!*end) {
        if (d->a >= 0 && ++it->i > d->a) {
          sm__ds_free_elem(out, nc);
          return sm_status_new(SM_FAILED_PRECONDITION, "Input dataset was expected to contain %" PRId64 " elements but contained at least %" PRId64 " elements.", d->a, it->i);
        }
        return NULL;
      }
      it->done = 1;
      if (d->a == CARD_INF)
        return sm_status_new(SM_FAILED_PRECONDITION, "Input dataset was expected to contain an infinite number of elements but contained only %" PRId64 " elements.", it->i);
      if (d->a >= 0 && it->i < d->a)
        return sm_status_new(SM_FAILED_PRECONDITION, "Input dataset was expected to contain %" PRId64 " elements but contained only %" PRId64 " elements.", d->a, it->i);
      return NULL;
    case K_IGNORE: /* errors of the input are skipped; the run's own stops (deadline, cancel, budget) are not */
      for (;;) {
        if (!(s = sm__ds_it_next(it->in[0], c, out, end))) {
          if (*end) it->done = 1;
          return NULL;
        }
        int code = sm_status_code(s);
        if (code == SM_DEADLINE_EXCEEDED || code == SM_CANCELLED || code == SM_RESOURCE_EXHAUSTED || code == SM_INTERNAL) return s;
        sm_status_free(s);
      }
    case K_CACHE: return next_cache(it, c, out, end);
    default: return sm_status_new(SM_INTERNAL, "dataset kind %d is not dataset_more.c's", d->kind);
  }
}

/* DatasetToSingleElement: the dataset's one element. */
static sm_status *single_compute(const void *state, sm_kctx *c) {
  (void)state;
  const ds *d;
  sm_status *s = sm__ds_input(c, 0, &d);
  if (s) return s;
  int nc = d->ncomp, end = 0;
  if (nc != sm__kctx_num_outputs(c))
    return sm_status_new(SM_INVALID_ARGUMENT, "DatasetToSingleElement: the dataset's elements have %d components; the op gives %d", nc,
                         sm__kctx_num_outputs(c));
  sm_tensor **e = sm__kctx_scratch(c, (size_t)(2 * nc + 1) * sizeof *e, &s);
  if (s) return s;
  memset(e, 0, (size_t)(2 * nc + 1) * sizeof *e);
  dit *it = NULL;
  if (!(s = sm__ds_it_new(d, &it)) && !(s = sm__ds_it_next(it, c, e, &end))) {
    if (end) s = sm_status_new(SM_INVALID_ARGUMENT, "Dataset was empty.");
    else if (!(s = sm__ds_it_next(it, c, e + nc, &end))) {
      if (!end) {
        sm__ds_free_elem(e + nc, nc);
        s = sm_status_new(SM_INVALID_ARGUMENT, "Dataset had more than one element.");
      }
    }
    if (s) sm__ds_free_elem(e, nc); /* NULLs where nothing was read */
    else
      for (int j = 0; j < nc; j++) sm__kctx_set_output(c, j, e[j]);
  }
  sm__ds_it_free(it);
  sm__kctx_scratch_free(c, e);
  return s;
}

const sm_kernel sm_kernels_dataset_more[] = {
    {"DatasetToSingleElement", NULL, single_compute, NULL, 0},
    {0},
};

/* dataset.c - tf.data inside a saved function: dataset variants and the iterators over them.
 *
 * A dataset op (TensorDataset, TensorSliceDataset, RangeDataset, MapDataset, ParallelMapDataset(V2),
 * FilterDataset, BatchDatasetV2, PaddedBatchDatasetV2, TakeDataset, SkipDataset, RepeatDataset,
 * ZipDataset, ConcatenateDataset, FlatMapDataset, ScanDataset, TakeWhileDataset, UnbatchDataset)
 * outputs a DT_VARIANT scalar holding a refcounted `ds`: one stage of a chain (its input datasets
 * by reference, the tensors it needs, the function it runs). Nothing is computed then: elements
 * are made lazily by an iterator (`dit`, a tree of per-stage states mirroring the chain) that the
 * consuming kernel drives with its own sm_kctx - ReduceDataset to the end, IteratorGetNext(Sync)
 * and IteratorGetNextAsOptional one element a call through an iterator resource
 * (AnonymousIteratorV2/V3 + MakeIterator; DeleteIterator). The pass-through stages TF adds
 * (PrefetchDataset, ModelDataset, OptimizeDataset(V2), OptionsDataset, FinalizeDataset,
 * MaxIntraOpParallelismDataset, PrivateThreadPoolDataset, RewriteDataset) forward their input. Parallel map runs
 * in order, so it is deterministic and equal to TF's deterministic order. DatasetCardinality
 * follows TF's rules (-1 infinite, -2 unknown).
 *
 * Functions (map f, filter predicate, ...) are compiled in prepare as sub-plans (kernel.h) owned
 * by a refcounted kernel state that every dataset made by the node holds, so a dataset outliving
 * its step keeps its plan; it runs them with the consumer's context (resources, deadline, budget),
 * which is why a dataset variant is meaningful only inside the model that made it.
 *
 * Limits: every next() checks the run's cancel flag and deadline (an infinite repeat() consumed by
 * reduce stops at the deadline); elements a batch buffers and a batch's tensor are charged to the
 * run's memory budget; no stage allocates in proportion to a count attribute. WindowDataset,
 * InterleaveDataset and ParallelInterleaveDatasetV2-V4 (deterministic: interleave's order),
 * ParallelBatchDataset, MapAndBatchDataset (a map, then a batch) and UniqueDataset are here too.
 * The dataset and iterator structs are in dataset.h, shared with the family's other files:
 * dataset_shuffle.c (ShuffleDataset(V2/V3) in TF's order, RandomDataset(V2), seed generators),
 * dataset_more.c (shard, choose/sample_from_datasets, assert_cardinality, ignore_errors, cache,
 * get_single_element), dataset_group.c, dataset_rebatch.c (sparse_batch, rebatch) and dataset_io.c
 * (the file datasets). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/variant.h"
#include "ops/array_internal.h"
#include "ops/dataset.h"
#include "ops/optional.h"
#include "runtime/kernel.h"

#define DS_TYPE "tensorflow::data::WrappedDatasetVariant"
#define CARD_INF (-1)
#define CARD_UNKNOWN (-2)
#define ITER_MAGIC 0x64736974u /* "dsit" */

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}


/* ---- kernel state: the node's kind and its function, shared with the datasets it makes ---------- */


static void kstate_unref(kstate *k) {
  if (k && atomic_fetch_sub(&k->refs, 1) == 1) {
    sm__plan_free(k->f);
    free(k);
  }
}

static void kstate_release(void *p) { kstate_unref(p); }

/* ---- the dataset object ------------------------------------------------------------------------ */


static void ds_release(sm_variant *v) {
  ds *d = (ds *)v;
  for (int i = 0; i < d->nin; i++) sm__variant_unref(&d->in[i]->v);
  for (int i = 0; i < d->nt; i++) sm_tensor_free(d->t[i]);
  free(d->in);
  free(d->t);
  kstate_unref(d->k);
  if (d->ext_free) d->ext_free(d->ext);
  free(d);
}

static sm_status *ds_new(int kind, int nin, int nt, ds **out) {
  ds *d = calloc(1, sizeof *d);
  if (d) {
    d->in = nin ? calloc((size_t)nin, sizeof *d->in) : NULL;
    d->t = nt ? calloc((size_t)nt, sizeof *d->t) : NULL;
  }
  if (!d || (nin && !d->in) || (nt && !d->t)) {
    if (d) free(d->in), free(d->t);
    free(d);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a dataset");
  }
  sm__variant_init(&d->v, DS_TYPE, ds_release);
  d->kind = kind;
  *out = d;
  return NULL;
}

static const ds *as_ds(const sm_tensor *t) {
  sm_variant **vs = t && sm_tensor_dtype(t) == SM_VARIANT && sm_tensor_num_elements(t) == 1 ? sm__tensor_variants(t) : NULL;
  sm_variant *v = vs ? vs[0] : NULL;
  return v && !strcmp(v->type_name, DS_TYPE) ? (const ds *)v : NULL;
}

sm_status *sm__ds_input(sm_kctx *c, int i, const ds **out) {
  const sm_tensor *t = sm__kctx_input(c, i);
  *out = as_ds(t);
  if (!*out)
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d must be a dataset variant scalar, got %s", i,
                         t ? (sm_tensor_dtype(t) == SM_VARIANT ? "another variant" : dname(sm_tensor_dtype(t))) : "nothing");
  return NULL;
}

sm_status *sm__ds_scalar_i64(sm_kctx *c, int i, const char *what, int64_t *v) {
  const sm_tensor *t = sm__kctx_input(c, i);
  if (!t || sm_tensor_rank(t) != 0 || (sm_tensor_dtype(t) != SM_INT64 && sm_tensor_dtype(t) != SM_INT32 &&
                                       sm_tensor_dtype(t) != SM_BOOL))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar", what);
  if (sm_tensor_dtype(t) == SM_INT64) *v = *(const int64_t *)sm_tensor_data(t);
  else if (sm_tensor_dtype(t) == SM_INT32) *v = *(const int32_t *)sm_tensor_data(t);
  else *v = *(const uint8_t *)sm_tensor_data(t) != 0;
  return NULL;
}

static sm_status *set_ds_output(sm_kctx *c, ds *d) {
  sm_tensor *t;
  sm_status *s = sm__kctx_alloc_output(c, 0, SM_VARIANT, 0, NULL, &t);
  if (s) {
    sm__variant_unref(&d->v);
    return s;
  }
  sm__tensor_variants(t)[0] = &d->v;
  return NULL;
}

sm_status *sm__ds_new(int kind, int nin, int nt, ds **out) { return ds_new(kind, nin, nt, out); }
const ds *sm__ds_of(const sm_tensor *t) { return as_ds(t); }
sm_status *sm__ds_set_output(sm_kctx *c, ds *d) { return set_ds_output(c, d); }

/* TF's cardinality rules (CardinalityInternal of each dataset kernel). */
static int64_t ds_card(const ds *d) {
  int64_t n = d->nin ? ds_card(d->in[0]) : 0;
  switch (d->kind) {
    case K_TENSOR: return 1;
    case K_SLICE: return sm_tensor_rank(d->t[0]) ? sm_tensor_dims(d->t[0])[0] : 0;
    case K_RANGE: {
      if (d->c > 0 ? d->a >= d->b : d->a <= d->b) return 0;
      uint64_t span = d->c > 0 ? (uint64_t)d->b - (uint64_t)d->a : (uint64_t)d->a - (uint64_t)d->b;
      uint64_t step = d->c > 0 ? (uint64_t)d->c : 0 - (uint64_t)d->c;
      return (int64_t)((span - 1) / step + 1);
    }
    case K_MAP:
    case K_SCAN: return d->k->preserve_card ? n : CARD_UNKNOWN;
    case K_FILTER:
    case K_FLATMAP:
    case K_INTERLEAVE:
    case K_UNIQUE:
    case K_TAKEWHILE: return CARD_UNKNOWN;
    case K_LIST: return d->nt / d->ncomp;
    case K_SHUFFLE: return n;
    case K_SHARD:
    case K_CHOOSE:
    case K_ASSERTCARD:
    case K_IGNORE:
    case K_CACHE:
    case K_RANDOM: return sm__ds_more_card(d, n);
    case K_SPBATCH:
    case K_REBATCH:
    case K_REBATCH1: return sm__ds_rebatch_card(d, n);
    case K_WINDOW: {
      if (n == CARD_INF || n == CARD_UNKNOWN) return n;
      if (!d->drop) return n / d->a + (n % d->a ? 1 : 0);
      int64_t span = (d->c - 1) * d->b + 1; /* (size - 1) * stride + 1 */
      return n < span ? 0 : (n - span) / d->a + 1;
    }
    case K_UNBATCH: return n == CARD_INF ? CARD_INF : CARD_UNKNOWN;
    case K_BATCH:
    case K_PADDED:
      if (n == CARD_INF || n == CARD_UNKNOWN) return n;
      return n / d->c + (!d->drop && n % d->c ? 1 : 0);
    case K_TAKE:
      if (d->a < 0) return n;
      if (n == CARD_INF) return d->a;
      if (n == CARD_UNKNOWN) return n;
      return n < d->a ? n : d->a;
    case K_SKIP:
      if (n == CARD_INF || n == CARD_UNKNOWN) return n;
      if (d->a < 0) return 0;
      return n > d->a ? n - d->a : 0;
    case K_REPEAT:
      if (d->a < 0) return n == 0 ? 0 : CARD_INF;
      if (d->a == 0) return 0;
      if (n == CARD_INF || n == CARD_UNKNOWN) return n;
      return n > INT64_MAX / d->a ? CARD_INF : n * d->a;
    case K_ZIP: {
      int64_t r = CARD_INF;
      for (int i = 0; i < d->nin; i++) {
        int64_t m = ds_card(d->in[i]);
        if (m == CARD_UNKNOWN) return m;
        if (m != CARD_INF && (r == CARD_INF || m < r)) r = m;
      }
      return r;
    }
    case K_CONCAT: {
      int64_t m = ds_card(d->in[1]);
      if (n == CARD_UNKNOWN || m == CARD_UNKNOWN) return CARD_UNKNOWN;
      if (n == CARD_INF || m == CARD_INF) return CARD_INF;
      return n + m;
    }
    default: return CARD_UNKNOWN;
  }
}

/* ---- tensors ------------------------------------------------------------------------------------ */

static size_t tensor_bytes(const sm_tensor *t) {
  int dt = sm_tensor_dtype(t);
  int64_t n = sm_tensor_num_elements(t);
  if (dt == SM_STRING) {
    size_t b = 0, len;
    for (int64_t i = 0; i < n; i++) sm_tensor_string(t, i, &len), b += len + sizeof(void *);
    return b;
  }
  return (size_t)n * (dt == SM_VARIANT ? sizeof(void *) : sm_dtype_size(dt));
}

/* Row i of t (along dimension 0) as a new tensor. */
static sm_status *slice_row(const sm_kctx *c, const sm_tensor *t, int64_t i, sm_tensor **out) {
  int r = sm_tensor_rank(t);
  int64_t n0 = sm_tensor_dims(t)[0];
  int64_t per = n0 ? sm_tensor_num_elements(t) / n0 : 0;
  if (per == 0) {
    int64_t e = 1;
    for (int k = 1; k < r; k++) e *= sm_tensor_dims(t)[k];
    per = e;
  }
  sm_status *s = sm__kctx_charge_check(c, (size_t)per * 8, "a dataset element");
  if (!s) s = sm_tensor_new(sm_tensor_dtype(t), r - 1, sm_tensor_dims(t) + 1, out);
  if (!s && (s = sm__array_copy(*out, 0, t, i * per, per))) {
    sm_tensor_free(*out);
    *out = NULL;
  }
  return s;
}

/* ---- iterators ---------------------------------------------------------------------------------- */


void sm__ds_it_free(dit *it) {
  if (!it) return;
  for (int i = 0; i < it->nin; i++) sm__ds_it_free(it->in[i]);
  free(it->in);
  if (it->st)
    for (int i = 0; i < it->d->k->nstate; i++) sm_tensor_free(it->st[i]);
  free(it->st);
  sm__ds_it_free(it->iin);
  if (it->inner) sm__variant_unref(&it->inner->v);
  if (it->ub)
    for (int i = 0; i < it->d->ncomp; i++) sm_tensor_free(it->ub[i]);
  free(it->ub);
  if (it->wb)
    for (int64_t i = 0; i < it->wn * it->d->ncomp; i++) sm_tensor_free(it->wb[i]);
  free(it->wb);
  if (it->cyc)
    for (int64_t i = 0; i < it->d->b; i++) {
      sm__ds_it_free(it->cyc[i]);
      if (it->cycds[i]) sm__variant_unref(&it->cycds[i]->v);
    }
  free(it->cyc);
  free(it->cycds);
  free(it->uh);
  if (it->ext_free) it->ext_free(it);
  sm__mem_close(&it->acct);
  free(it);
}

static sm_status *oom(void) { return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when making a dataset iterator"); }

sm_status *sm__ds_it_new(const ds *d, dit **out) {
  *out = NULL;
  dit *it = calloc(1, sizeof *it);
  if (!it) return oom();
  it->d = d;
  int nin = d->kind == K_CONCAT || d->kind == K_REPEAT ? 1 : d->nin;
  if (nin && !(it->in = calloc((size_t)nin, sizeof *it->in))) {
    free(it);
    return oom();
  }
  it->nin = nin;
  sm_status *s = NULL;
  for (int i = 0; i < nin && !s; i++) s = sm__ds_it_new(d->in[i], &it->in[i]);
  if (!s && d->kind == K_SCAN) {
    if (!(it->st = calloc((size_t)d->k->nstate + 1, sizeof *it->st))) s = oom();
    for (int i = 0; !s && i < d->k->nstate; i++) it->st[i] = sm_tensor_ref(d->t[i]);
  }
  if (!s && d->kind == K_RANGE) it->cur = d->a;
  if (!s && d->kind == K_INTERLEAVE &&
      (!(it->cyc = calloc((size_t)d->b, sizeof *it->cyc)) || !(it->cycds = calloc((size_t)d->b, sizeof *it->cycds))))
    s = oom();
  if (s) {
    sm__ds_it_free(it);
    return s;
  }
  *out = it;
  return NULL;
}

void sm__ds_free_elem(sm_tensor **e, int n) {
  for (int i = 0; i < n; i++) {
    sm_tensor_free(e[i]);
    e[i] = NULL;
  }
}

/* Runs k's function on (pre..., mid..., the dataset's captured tensors) into out (nout). */
static sm_status *run_fn(sm_kctx *c, const ds *d, sm_tensor *const *pre, int npre, sm_tensor *const *mid, int nmid,
                         sm_tensor **out, int nout) {
  const kstate *k = d->k;
  int ncap = k->ncap, nin = npre + nmid + ncap;
  if (sm__plan_num_feeds(k->f) != nin || sm__plan_num_fetches(k->f) != nout)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: its function takes %d inputs and gives %d outputs; the dataset passes %d and expects %d",
                         k->op, sm__plan_num_feeds(k->f), sm__plan_num_fetches(k->f), nin, nout);
  sm_status *s = NULL;
  sm_tensor **args = nin ? sm__kctx_scratch(c, (size_t)nin * sizeof *args, &s) : NULL;
  if (s) return s;
  for (int i = 0; i < npre; i++) args[i] = pre[i];
  for (int i = 0; i < nmid; i++) args[npre + i] = mid[i];
  const sm_tensor *const *cap = (const sm_tensor *const *)d->t + (d->kind == K_SCAN ? k->nstate : 0);
  for (int i = 0; i < ncap; i++) args[npre + nmid + i] = (sm_tensor *)cap[i];
  s = sm__kctx_run_plan(c, k->f, args, nin, out, nout);
  sm__kctx_scratch_free(c, args);
  return s;
}

static sm_status *pred_value(const ds *d, const sm_tensor *p, int *v) {
  if (!p || sm_tensor_dtype(p) != SM_BOOL || sm_tensor_rank(p) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: the predicate must return a scalar boolean tensor",
                         d->k->op);
  *v = *(const uint8_t *)sm_tensor_data(p) != 0;
  return NULL;
}

/* A batch of the elements buf[0..n) (each ncomp tensors) as out; padded: to the padded shapes. */
static sm_status *make_batch(const ds *d, sm_kctx *c, sm_tensor **buf, int64_t n, sm_tensor **out) {
  int nc = d->ncomp;
  sm_status *s = NULL;
  for (int j = 0; j < nc && !s; j++) {
    const sm_tensor *f = buf[j];
    int r = sm_tensor_rank(f);
    int64_t dims[SM_MAX_RANK + 1];
    if (r + 1 > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "%s: component %d has rank %d, too many to batch", d->k->op, j, r);
    dims[0] = n;
    memcpy(dims + 1, sm_tensor_dims(f), (size_t)r * sizeof *dims);
    const sm_tensor *ps = d->kind == K_PADDED ? d->t[j] : NULL, *pv = d->kind == K_PADDED ? d->t[nc + j] : NULL;
    for (int64_t e = 1; e < n; e++) {
      const sm_tensor *g = buf[e * nc + j];
      if (sm_tensor_dtype(g) != sm_tensor_dtype(f))
        return sm_status_new(SM_INVALID_ARGUMENT, "%s: component %d has dtype %s in element 0 and %s in element %" PRId64,
                             d->k->op, j, dname(sm_tensor_dtype(f)), dname(sm_tensor_dtype(g)), e);
      if (!ps && (sm_tensor_rank(g) != r || memcmp(sm_tensor_dims(g), sm_tensor_dims(f), (size_t)r * sizeof *dims))) {
        char a[128], b[128];
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "Cannot add tensor to the batch: number of elements does not match. Shapes are: "
                             "[tensor]: %s, [batch]: %s",
                             sm_shape_str(sm_tensor_rank(g), sm_tensor_dims(g), a, sizeof a),
                             sm_shape_str(r, sm_tensor_dims(f), b, sizeof b));
      }
      if (ps) {
        if (sm_tensor_rank(g) != r)
          return sm_status_new(SM_INVALID_ARGUMENT, "%s: component %d has rank %d in element 0 and %d in element %" PRId64,
                               d->k->op, j, r, sm_tensor_rank(g), e);
        for (int q = 0; q < r; q++)
          if (sm_tensor_dims(g)[q] > dims[q + 1]) dims[q + 1] = sm_tensor_dims(g)[q];
      }
    }
    if (ps) {
      const int64_t *pd = sm_tensor_data(ps);
      if (sm_tensor_num_elements(ps) != r)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "The padded shape for component %d has %" PRId64 " dimensions, but the element has rank %d.", j,
                             sm_tensor_num_elements(ps), r);
      for (int q = 0; q < r; q++)
        if (pd[q] >= 0) {
          if (dims[q + 1] > pd[q]) {
            char a[128];
            return sm_status_new(SM_INVALID_ARGUMENT,
                                 "Attempted to pad to a smaller size than the input element: padded dimension %d of "
                                 "component %d is %" PRId64 " and the batch's largest is %" PRId64 " (shape %s)",
                                 q, j, pd[q], dims[q + 1], sm_shape_str(r, dims + 1, a, sizeof a));
          }
          dims[q + 1] = pd[q];
        }
      if (sm_tensor_dtype(pv) != sm_tensor_dtype(f) || sm_tensor_num_elements(pv) != 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "%s: padding value %d must be a %s scalar", d->k->op, j,
                             dname(sm_tensor_dtype(f)));
    }
    int64_t total = 1;
    for (int q = 0; q <= r; q++) {
      if (dims[q] && total > INT64_MAX / 16 / dims[q])
        return sm_status_new(SM_RESOURCE_EXHAUSTED, "%s: a batch of %" PRId64 " elements is too large", d->k->op, n);
      total *= dims[q];
    }
    int dt = sm_tensor_dtype(f);
    if ((s = sm__kctx_charge_check(c, (size_t)total * (dt == SM_STRING || dt == SM_VARIANT ? 8 : sm_dtype_size(dt)), "a dataset batch")))
      return s;
    if ((s = sm_tensor_new(dt, r + 1, dims, &out[j]))) return s;
    int64_t per = total / (n ? n : 1);
    if (n && !per) continue;
    for (int64_t e = 0; e < n && !s; e++) {
      const sm_tensor *g = buf[e * nc + j];
      if (!ps) {
        s = sm__array_copy(out[j], e * per, g, 0, per);
        continue;
      }
      for (int64_t q = 0; q < per && !s; q++) s = sm__array_copy(out[j], e * per + q, pv, 0, 1);
      /* the element into the corner of its padded slot, row by row of its last dimension */
      int64_t ge = sm_tensor_num_elements(g);
      int64_t row = r ? sm_tensor_dims(g)[r - 1] : 1;
      for (int64_t off = 0; off < ge && row && !s; off += row) {
        int64_t rem = off, doff = 0, mul = 1;
        for (int q = r - 1; q >= 0; q--) {
          int64_t gd = sm_tensor_dims(g)[q];
          doff += (rem % gd) * mul;
          rem /= gd;
          mul *= dims[q + 1];
        }
        s = sm__array_copy(out[j], e * per + doff, g, off, row);
      }
    }
  }
  return s;
}

static sm_status *next_batch(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  int nc = d->ncomp;
  sm_status *s = NULL;
  sm_tensor **buf = NULL;
  int64_t n = 0, cap = 0;
  size_t held = 0;
  for (int j = 0; j < nc; j++) out[j] = NULL; /* freed on an error: never the caller's garbage */
  while (n < d->c && !s) {
    if (n == cap) {
      int64_t nc2 = cap ? cap * 2 : 8;
      if (nc2 > d->c) nc2 = d->c;
      sm_tensor **nb = realloc(buf, (size_t)(nc2 * nc + 1) * sizeof *nb);
      if (!nb) {
        s = oom();
        break;
      }
      buf = nb;
      cap = nc2;
    }
    int e;
    if ((s = sm__ds_it_next(it->in[0], c, buf + n * nc, &e)) || e) break;
    size_t b = 0;
    for (int j = 0; j < nc; j++) b += tensor_bytes(buf[n * nc + j]);
    n++;
    if ((s = sm__kctx_hold(c, &it->acct, b, "the elements of a dataset batch"))) break;
    held += b;
  }
  if (!s && (n == 0 || (d->drop && n < d->c))) *end = 1;
  else if (!s) s = make_batch(d, c, buf, n, out);
  for (int64_t i = 0; i < n * nc; i++) sm_tensor_free(buf[i]);
  free(buf);
  sm__mem_give(&it->acct, held);
  if (s) sm__ds_free_elem(out, nc);
  return s;
}

static sm_status *range_elem(const ds *d, int64_t v, sm_tensor **out) {
  int dt = d->k->range_dtype;
  sm_status *s = sm_tensor_new(dt, 0, NULL, out);
  if (s) return s;
  void *p = sm_tensor_data(*out);
  switch (dt) {
    case SM_INT64: *(int64_t *)p = v; break;
    case SM_INT32: *(int32_t *)p = (int32_t)v; break;
    case SM_INT16: *(int16_t *)p = (int16_t)v; break;
    case SM_INT8: *(int8_t *)p = (int8_t)v; break;
    case SM_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case SM_UINT16: *(uint16_t *)p = (uint16_t)v; break;
    case SM_UINT32: *(uint32_t *)p = (uint32_t)v; break;
    case SM_UINT64: *(uint64_t *)p = (uint64_t)v; break;
    case SM_FLOAT: *(float *)p = (float)v; break;
    case SM_DOUBLE: *(double *)p = (double)v; break;
    default:
      sm_tensor_free(*out);
      *out = NULL;
      return sm_status_new(SM_UNIMPLEMENTED, "RangeDataset: output type %s", dname(dt));
  }
  return NULL;
}

/* WindowDataset: d->a shift, d->b stride, d->c size. Elements are read into it->wb as windows
 * need them; those before the next window's start are dropped. */
static sm_status *next_window(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  int nc = d->ncomp;
  sm_status *s = NULL;
  int64_t drop = it->wstart - it->wbase < it->wn ? it->wstart - it->wbase : it->wn;
  if (drop > 0) {
    for (int64_t i = 0; i < drop * nc; i++) sm__mem_give_tensor(&it->acct, it->wb[i]), sm_tensor_free(it->wb[i]);
    memmove(it->wb, it->wb + drop * nc, (size_t)((it->wn - drop) * nc) * sizeof *it->wb);
    it->wn -= drop, it->wbase += drop;
  }
  sm_tensor **e = sm__kctx_scratch(c, (size_t)(nc + 1) * sizeof *e, &s);
  if (s) return s;
  while (!it->in_end && it->wpos < it->wstart) { /* a shift past the buffer: read and drop */
    if ((s = sm__ds_it_next(it->in[0], c, e, &it->in_end))) break;
    if (!it->in_end) sm__ds_free_elem(e, nc), it->wpos++;
  }
  if (!it->wn) it->wbase = it->wpos;
  int64_t last = it->wstart + (d->c - 1) * d->b;
  while (!s && !it->in_end && it->wbase + it->wn <= last) {
    if (it->wn == it->wcap) {
      int64_t ncap = it->wcap ? it->wcap * 2 : 8;
      sm_tensor **nb = realloc(it->wb, (size_t)(ncap * nc) * sizeof *nb);
      if (!nb) {
        s = oom();
        break;
      }
      it->wb = nb, it->wcap = ncap;
    }
    if ((s = sm__ds_it_next(it->in[0], c, it->wb + it->wn * nc, &it->in_end)) || it->in_end) break;
    for (int j = 0; j < nc && !s; j++) s = sm__kctx_hold_tensor(c, &it->acct, it->wb[it->wn * nc + j], "a dataset window");
    it->wn++, it->wpos++;
  }
  sm__kctx_scratch_free(c, e);
  if (s) return s;
  int64_t count = 0;
  while (count < d->c && it->wstart + count * d->b < it->wbase + it->wn) count++;
  if (count == 0 || (d->drop && count < d->c)) {
    *end = 1;
    return NULL;
  }
  for (int j = 0; j < nc && !s; j++) {
    ds *w;
    if ((s = ds_new(K_LIST, 0, (int)count, &w))) break;
    w->ncomp = 1;
    w->nt = (int)count;
    atomic_fetch_add(&d->k->refs, 1);
    w->k = d->k;
    for (int64_t q = 0; q < count; q++) w->t[q] = sm_tensor_ref(it->wb[(it->wstart + q * d->b - it->wbase) * nc + j]);
    if ((s = sm_tensor_new(SM_VARIANT, 0, NULL, &out[j]))) {
      sm__variant_unref(&w->v);
      break;
    }
    sm__tensor_variants(out[j])[0] = &w->v;
  }
  if (s) sm__ds_free_elem(out, nc);
  it->wstart += d->a;
  return s;
}

/* InterleaveDataset (TF's InterleaveDatasetOp::Iterator::GetNextInternal): d->b cycle length,
 * d->c block length. */
static sm_status *next_interleave(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  int ni = d->in[0]->ncomp;
  sm_status *s = NULL;
  while (!it->in_end || it->nopen > 0) {
    if ((s = sm__kctx_check_stop(c))) return s;
    if (it->cyc[it->ci]) {
      if ((s = sm__ds_it_next(it->cyc[it->ci], c, out, end))) return s;
      if (!*end) {
        if (++it->bi == d->c) it->bi = 0, it->ci = (it->ci + 1) % d->b;
        return NULL;
      }
      *end = 0;
      sm__ds_it_free(it->cyc[it->ci]);
      it->cyc[it->ci] = NULL;
      sm__variant_unref(&it->cycds[it->ci]->v);
      it->cycds[it->ci] = NULL;
      it->nopen--;
      it->bi = 0, it->ci = (it->ci + 1) % d->b;
    } else if (!it->in_end) {
      sm_tensor **e = sm__kctx_scratch(c, (size_t)(ni + 1) * sizeof *e, &s);
      if (s) return s;
      sm_tensor *r = NULL;
      if (!(s = sm__ds_it_next(it->in[0], c, e, &it->in_end)) && !it->in_end) {
        s = run_fn(c, d, NULL, 0, e, ni, &r, 1);
        sm__ds_free_elem(e, ni);
      }
      sm__kctx_scratch_free(c, e);
      if (s) return s;
      if (r) {
        const ds *in = as_ds(r);
        if (!in || in->ncomp != d->ncomp)
          s = sm_status_new(SM_INVALID_ARGUMENT, "%s: the function must return a dataset of %d components", d->k->op, d->ncomp);
        else {
          it->cycds[it->ci] = (ds *)sm__variant_ref((sm_variant *)&in->v);
          if (!(s = sm__ds_it_new(it->cycds[it->ci], &it->cyc[it->ci]))) it->nopen++;
        }
        sm_tensor_free(r);
        if (s) return s;
      }
    } else {
      it->bi = 0, it->ci = (it->ci + 1) % d->b;
    }
  }
  *end = 1;
  return NULL;
}

static uint64_t elem_hash(const sm_tensor *t) {
  uint64_t h = 1469598103934665603ull;
  if (sm_tensor_dtype(t) == SM_STRING) {
    size_t len;
    const unsigned char *p = (const unsigned char *)sm_tensor_string(t, 0, &len);
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
  } else {
    const unsigned char *p = sm_tensor_data(t);
    for (size_t i = 0; i < sm_tensor_nbytes(t); i++) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

/* UniqueDataset: scalars of int32, int64 or string; those seen are kept in it->wb with a hash index. */
static sm_status *next_unique(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  sm_status *s;
  for (;;) {
    if ((s = sm__ds_it_next(it->in[0], c, out, end)) || *end) return s;
    const sm_tensor *t = out[0];
    int dt = sm_tensor_dtype(t);
    if (sm_tensor_rank(t) != 0 || (dt != SM_INT32 && dt != SM_INT64 && dt != SM_STRING)) {
      sm__ds_free_elem(out, 1);
      return sm_status_new(SM_INVALID_ARGUMENT, "UniqueDataset: elements must be int32, int64 or string scalars; got a %s of rank %d",
                           dname(dt), sm_tensor_rank(t));
    }
    if (it->wn * 2 >= it->uhcap) { /* grow the index */
      int64_t ncap = it->uhcap ? it->uhcap * 2 : 64;
      uint64_t *nh = calloc((size_t)ncap, sizeof *nh);
      sm_tensor **nb = realloc(it->wb, (size_t)(ncap / 2 + 1) * sizeof *nb);
      if (!nh || !nb) {
        free(nh);
        if (nb) it->wb = nb;
        sm__ds_free_elem(out, 1);
        return oom();
      }
      it->wb = nb;
      for (int64_t i = 0; i < it->wn; i++) {
        uint64_t p = elem_hash(it->wb[i]) & (uint64_t)(ncap - 1);
        while (nh[p]) p = (p + 1) & (uint64_t)(ncap - 1);
        nh[p] = (uint64_t)i + 1;
      }
      free(it->uh);
      it->uh = nh, it->uhcap = ncap;
    }
    uint64_t p = elem_hash(t) & (uint64_t)(it->uhcap - 1);
    int seen = 0;
    for (; it->uh[p]; p = (p + 1) & (uint64_t)(it->uhcap - 1))
      if (sm_tensor_equal(it->wb[it->uh[p] - 1], t)) {
        seen = 1;
        break;
      }
    if (seen) {
      sm__ds_free_elem(out, 1);
      continue;
    }
    if ((s = sm__kctx_hold_tensor(c, &it->acct, t, "the elements a unique dataset has seen"))) {
      sm__ds_free_elem(out, 1);
      return s;
    }
    it->uh[p] = (uint64_t)it->wn + 1;
    it->wb[it->wn++] = sm_tensor_ref(out[0]);
    return NULL;
  }
}

/* The next element of it into out (d->ncomp new tensors), or *end = 1. */
sm_status *sm__ds_inner_next(dit *it, sm_kctx *c, sm_tensor **out, int *end, int *got) {
  *got = 0;
  if (!it->iin) return NULL;
  sm_status *s = sm__ds_it_next(it->iin, c, out, end);
  if (s || !*end) {
    *got = 1;
    return s;
  }
  *end = 0;
  sm__ds_it_free(it->iin);
  it->iin = NULL;
  sm__variant_unref(&it->inner->v);
  it->inner = NULL;
  return NULL;
}

sm_status *sm__ds_it_next(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  *end = 0;
  sm_status *s = sm__kctx_check_stop(c);
  if (s) return s;
  if (it->done) {
    *end = 1;
    return NULL;
  }
  switch (d->kind) {
    case K_TENSOR:
      for (int j = 0; j < d->ncomp; j++) out[j] = sm_tensor_ref(d->t[j]);
      it->done = 1;
      return NULL;
    case K_SLICE: {
      if (it->i >= ds_card(d)) break;
      for (int j = 0; j < d->ncomp && !s; j++) s = slice_row(c, d->t[j], it->i, &out[j]);
      if (s) sm__ds_free_elem(out, d->ncomp);
      it->i++;
      return s;
    }
    case K_RANGE: {
      if (d->c > 0 ? it->cur >= d->b : it->cur <= d->b) break;
      if ((s = range_elem(d, it->cur, out))) return s;
      if (__builtin_add_overflow(it->cur, d->c, &it->cur)) it->done = 1;
      return NULL;
    }
    case K_MAP: {
      int ni = d->in[0]->ncomp;
      sm_tensor **e = sm__kctx_scratch(c, (size_t)(ni + 1) * sizeof *e, &s);
      if (s) return s;
      if (!(s = sm__ds_it_next(it->in[0], c, e, end)) && !*end) {
        s = run_fn(c, d, NULL, 0, e, ni, out, d->ncomp);
        sm__ds_free_elem(e, ni);
      }
      sm__kctx_scratch_free(c, e);
      return s;
    }
    case K_FILTER:
    case K_TAKEWHILE: {
      for (;;) {
        if ((s = sm__ds_it_next(it->in[0], c, out, end)) || *end) break;
        sm_tensor *p = NULL;
        int keep = 0;
        if (!(s = run_fn(c, d, NULL, 0, out, d->ncomp, &p, 1))) s = pred_value(d, p, &keep);
        sm_tensor_free(p);
        if (s || !keep) sm__ds_free_elem(out, d->ncomp);
        if (s) break;
        if (keep) return NULL;
        if (d->kind == K_TAKEWHILE) {
          it->done = *end = 1;
          return NULL;
        }
      }
      return s;
    }
    case K_BATCH:
    case K_PADDED:
      if ((s = next_batch(it, c, out, end)) || *end) it->done = 1;
      return s;
    case K_TAKE:
      if (d->a >= 0 && it->i >= d->a) break;
      if ((s = sm__ds_it_next(it->in[0], c, out, end)) || *end) break;
      it->i++;
      return NULL;
    case K_SKIP:
      while (it->i < d->a || d->a < 0) {
        if ((s = sm__ds_it_next(it->in[0], c, out, end)) || *end) {
          it->done = 1;
          return s;
        }
        sm__ds_free_elem(out, d->ncomp);
        it->i++;
      }
      return sm__ds_it_next(it->in[0], c, out, end);
    case K_REPEAT:
      for (;;) {
        if (d->a >= 0 && it->i >= d->a) break;
        if ((s = sm__ds_it_next(it->in[0], c, out, end))) return s;
        if (!*end) {
          it->got = 1;
          return NULL;
        }
        it->i++;
        int had = it->got;
        it->got = 0;
        sm__ds_it_free(it->in[0]);
        it->in[0] = NULL;
        if (!had || (d->a >= 0 && it->i >= d->a)) break;
        if ((s = sm__ds_it_new(d->in[0], &it->in[0]))) return s;
      }
      break;
    case K_ZIP: {
      int off = 0;
      for (int i = 0; i < d->nin; i++) {
        if ((s = sm__ds_it_next(it->in[i], c, out + off, end)) || *end) {
          sm__ds_free_elem(out, off);
          it->done = *end;
          return s;
        }
        off += d->in[i]->ncomp;
      }
      return NULL;
    }
    case K_CONCAT:
      for (;;) {
        if ((s = sm__ds_it_next(it->in[0], c, out, end)) || !*end) return s;
        if (it->i == 1) break;
        it->i = 1;
        sm__ds_it_free(it->in[0]);
        it->in[0] = NULL;
        if ((s = sm__ds_it_new(d->in[1], &it->in[0]))) return s;
      }
      break;
    case K_FLATMAP: {
      int ni = d->in[0]->ncomp;
      for (;;) {
        int got;
        if ((s = sm__ds_inner_next(it, c, out, end, &got)) || got) return s;
        sm_tensor **e = sm__kctx_scratch(c, (size_t)(ni + 1) * sizeof *e, &s);
        if (s) return s;
        sm_tensor *r = NULL;
        if (!(s = sm__ds_it_next(it->in[0], c, e, end)) && !*end) {
          s = run_fn(c, d, NULL, 0, e, ni, &r, 1);
          sm__ds_free_elem(e, ni);
        }
        sm__kctx_scratch_free(c, e);
        if (s || *end) {
          if (*end) it->done = 1;
          return s;
        }
        const ds *in = as_ds(r);
        if (!in || in->ncomp != d->ncomp)
          s = sm_status_new(SM_INVALID_ARGUMENT, "%s: the function must return a dataset of %d components", d->k->op,
                            d->ncomp);
        else {
          it->inner = (ds *)sm__variant_ref((sm_variant *)&in->v);
          s = sm__ds_it_new(it->inner, &it->iin);
        }
        sm_tensor_free(r);
        if (s) return s;
      }
    }
    case K_SCAN: {
      int ni = d->in[0]->ncomp, ns = d->k->nstate;
      sm_tensor **e = sm__kctx_scratch(c, (size_t)(ni + ns + d->ncomp + 1) * sizeof *e, &s);
      if (s) return s;
      sm_tensor **res = e + ni;
      if (!(s = sm__ds_it_next(it->in[0], c, e, end)) && !*end) {
        s = run_fn(c, d, it->st, ns, e, ni, res, ns + d->ncomp);
        sm__ds_free_elem(e, ni);
        if (!s) {
          for (int i = 0; i < ns; i++) {
            if (sm_tensor_dtype(res[i]) != sm_tensor_dtype(it->st[i]) && !s)
              s = sm_status_new(SM_INVALID_ARGUMENT,
                                "State tensor %d has dtype %s in the function's output and %s as initial state", i,
                                dname(sm_tensor_dtype(res[i])), dname(sm_tensor_dtype(it->st[i])));
          }
          if (s) {
            sm__ds_free_elem(res, ns + d->ncomp);
          } else {
            for (int i = 0; i < ns; i++) {
              sm_tensor_free(it->st[i]);
              it->st[i] = res[i];
            }
            for (int j = 0; j < d->ncomp; j++) out[j] = res[ns + j];
          }
        }
      }
      sm__kctx_scratch_free(c, e);
      if (*end) it->done = 1;
      return s;
    }
    case K_UNBATCH:
      for (;;) {
        if (it->ub && it->ubi < it->ubn) {
          for (int j = 0; j < d->ncomp && !s; j++) s = slice_row(c, it->ub[j], it->ubi, &out[j]);
          if (s) sm__ds_free_elem(out, d->ncomp);
          it->ubi++;
          return s;
        }
        if (!it->ub && !(it->ub = calloc((size_t)d->ncomp + 1, sizeof *it->ub))) return oom();
        sm__ds_free_elem(it->ub, d->ncomp);
        if ((s = sm__ds_it_next(it->in[0], c, it->ub, end)) || *end) {
          if (*end) it->done = 1;
          return s;
        }
        it->ubi = 0;
        it->ubn = -1;
        for (int j = 0; j < d->ncomp; j++) {
          const sm_tensor *t = it->ub[j];
          int64_t n0 = sm_tensor_rank(t) ? sm_tensor_dims(t)[0] : -1;
          if (n0 < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Input element must have a non-scalar value in each component.");
          if (it->ubn >= 0 && n0 != it->ubn)
            return sm_status_new(SM_INVALID_ARGUMENT, "Input element must have the same batch size in each component. Component 0 had size %" PRId64 " but component %d had size, %" PRId64 ".", it->ubn, j, n0);
          it->ubn = n0;
        }
      }
    case K_LIST: /* elements of ncomp tensors each */
      if ((it->i + 1) * d->ncomp > d->nt) break;
      for (int j = 0; j < d->ncomp; j++) out[j] = sm_tensor_ref(d->t[it->i * d->ncomp + j]);
      it->i++;
      return NULL;
    case K_GROUPWIN:
    case K_GROUPRED: return sm__ds_group_next(it, c, out, end);
    case K_SPBATCH:
    case K_REBATCH:
    case K_REBATCH1: return sm__ds_rebatch_next(it, c, out, end);
    case K_SHUFFLE: return sm__ds_shuffle_next(it, c, out, end);
    case K_RANDOM: return sm__ds_random_next(it, c, out, end);
    case K_SHARD:
    case K_CHOOSE:
    case K_ASSERTCARD:
    case K_IGNORE:
    case K_CACHE: return sm__ds_more_next(it, c, out, end);
    case K_WINDOW:
      if ((s = next_window(it, c, out, end)) || *end) it->done = 1;
      return s;
    case K_INTERLEAVE: return next_interleave(it, c, out, end);
    case K_UNIQUE: return next_unique(it, c, out, end);
    default: return sm_status_new(SM_INTERNAL, "dataset kind %d has no iterator", d->kind);
  }
  it->done = 1;
  *end = 1;
  return s;
}

/* ---- dataset kernels ---------------------------------------------------------------------------- */

static sm_status *func_attr(const sm_node *node, const char *attr, const char **name) {
  const Tensorflow__AttrValue *a = sm__node_attr(node, attr);
  if (!a || a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !a->func || !a->func->name || !*a->func->name)
    return sm_status_new(SM_INVALID_ARGUMENT, "attr '%s' is not a function", attr);
  *name = a->func->name;
  return NULL;
}

static int list_len(const sm_node *node, const char *attr) {
  const int *v;
  size_t n = 0;
  if (!sm__node_attr(node, attr) || sm__node_attr_types(node, attr, &v, &n)) return 0;
  return (int)n;
}

static const struct {
  const char *op;
  int kind;
  const char *fattr; /* the function attr, or NULL */
} kinds[] = {
    {"TensorDataset", K_TENSOR, NULL},
    {"TensorSliceDataset", K_SLICE, NULL},
    {"RangeDataset", K_RANGE, NULL},
    {"MapDataset", K_MAP, "f"},
    {"ParallelMapDataset", K_MAP, "f"},
    {"ParallelMapDatasetV2", K_MAP, "f"},
    {"FilterDataset", K_FILTER, "predicate"},
    {"BatchDatasetV2", K_BATCH, NULL},
    {"BatchDataset", K_BATCH, NULL},
    {"ParallelBatchDataset", K_BATCH, NULL},
    {"PaddedBatchDatasetV2", K_PADDED, NULL},
    {"TakeDataset", K_TAKE, NULL},
    {"SkipDataset", K_SKIP, NULL},
    {"RepeatDataset", K_REPEAT, NULL},
    {"ZipDataset", K_ZIP, NULL},
    {"ConcatenateDataset", K_CONCAT, NULL},
    {"FlatMapDataset", K_FLATMAP, "f"},
    {"ScanDataset", K_SCAN, "f"},
    {"TakeWhileDataset", K_TAKEWHILE, "predicate"},
    {"UnbatchDataset", K_UNBATCH, NULL},
    {"WindowDataset", K_WINDOW, NULL},
    {"InterleaveDataset", K_INTERLEAVE, "f"},
    {"ParallelInterleaveDatasetV2", K_INTERLEAVE, "f"},
    {"ParallelInterleaveDatasetV3", K_INTERLEAVE, "f"},
    {"ParallelInterleaveDatasetV4", K_INTERLEAVE, "f"},
    {"UniqueDataset", K_UNIQUE, NULL},
    {"ShuffleDataset", K_SHUFFLE, NULL},
    {"ShuffleDatasetV2", K_SHUFFLE, NULL},
    {"ShuffleDatasetV3", K_SHUFFLE, NULL},
    {"ReduceDataset", K_REDUCE, "f"},
    {"ShardDataset", K_SHARD, NULL},
    {"DirectedInterleaveDataset", K_CHOOSE, NULL},
    {"AssertCardinalityDataset", K_ASSERTCARD, NULL},
    {"IgnoreErrorsDataset", K_IGNORE, NULL},
    {"CacheDataset", K_CACHE, NULL},
    {"CacheDatasetV2", K_CACHE, NULL},
    {"RandomDataset", K_RANDOM, NULL},
    {"RandomDatasetV2", K_RANDOM, NULL},
    {"MapAndBatchDataset", K_MAPBATCH, "f"},
    {"DatasetCardinality", K_CARD, NULL},
};

static sm_status *ds_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  kstate *k = calloc(1, sizeof *k);
  if (!k) return sm_status_new(SM_NO_MEMORY, "out of memory");
  atomic_init(&k->refs, 1);
  k->kind = -1;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (!strcmp(op, kinds[i].op)) k->kind = kinds[i].kind, k->op = kinds[i].op;
  sm_status *s = k->kind < 0 ? sm_status_new(SM_INTERNAL, "no dataset kind for %s", op) : NULL;
  const char *fattr = NULL;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (!strcmp(op, kinds[i].op)) fattr = kinds[i].fattr;
  if (!s && fattr) {
    const char *fname;
    if (!(s = func_attr(node, fattr, &fname))) s = sm__prepare_function_plan(node, fname, &k->f);
  }
  /* inputs after the captured ones: parallel map's num_parallel_calls; interleave's cycle_length,
   * block_length (V4: buffer_output_elements, prefetch_input_elements), the parallel ones' num_parallel_calls */
  k->trailing = !strncmp(op, "ParallelMapDataset", 18) ? 1
                : !strcmp(op, "ParallelInterleaveDatasetV4") ? 5
                : !strncmp(op, "ParallelInterleaveDataset", 25) ? 3
                : k->kind == K_INTERLEAVE ? 2 : k->kind == K_MAPBATCH ? 3 : 0;
  k->nstate = list_len(node, "Tstate");
  k->ncap = list_len(node, "Targuments");
  int pc = 0;
  if (!s && sm__node_attr(node, "preserve_cardinality")) s = sm__node_attr_bool(node, "preserve_cardinality", &pc);
  k->preserve_card = pc;
  if (!s && k->kind == K_RANGE) {
    const int *v;
    size_t n = 0;
    k->range_dtype = SM_INT64;
    if (sm__node_attr(node, "output_types") && !sm__node_attr_types(node, "output_types", &v, &n) && n == 1)
      k->range_dtype = v[0];
  }
  if (s) {
    kstate_unref(k);
    return s;
  }
  *state = k;
  return NULL;
}

/* MapAndBatchDataset: d (its map, made as MapDataset's) becomes the input of a batch (batch_size,
 * num_parallel_calls, drop_remainder after the nt captured arguments). */
static sm_status *map_and_batch(sm_kctx *c, kstate *k, int nt, ds **d) {
  int64_t bs, drop;
  sm_status *s = sm__ds_scalar_i64(c, 1 + nt, "batch_size", &bs);
  if (!s && bs <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "batch_size must be greater than zero.");
  if (s || (s = sm__ds_scalar_i64(c, 3 + nt, "drop_remainder", &drop))) return s;
  ds *b;
  if ((s = ds_new(K_BATCH, 1, 0, &b))) return s;
  (*d)->kind = K_MAP;
  b->in[0] = *d, b->nin = 1, b->ncomp = (*d)->ncomp, b->c = bs, b->drop = (int)drop;
  atomic_fetch_add(&k->refs, 1);
  b->k = k;
  *d = b;
  return NULL;
}

static sm_status *ds_compute(const void *state, sm_kctx *c) {
  kstate *k = (kstate *)state;
  int nin = sm__kctx_num_inputs(c);
  sm_status *s = NULL;
  const ds *in0 = NULL;
  ds *d = NULL;
  if (k->kind != K_TENSOR && k->kind != K_SLICE && k->kind != K_RANGE && k->kind != K_RANDOM && (s = sm__ds_input(c, 0, &in0))) return s;
  switch (k->kind) {
    case K_TENSOR:
    case K_SLICE:
      if ((s = ds_new(k->kind, 0, nin, &d))) return s;
      d->ncomp = nin;
      for (int i = 0; i < nin; i++) {
        const sm_tensor *t = sm__kctx_input(c, i);
        if (k->kind == K_SLICE && !s) {
          if (sm_tensor_rank(t) == 0)
            s = sm_status_new(SM_INVALID_ARGUMENT, "All components must be at least 1-dimensional");
          else if (sm_tensor_dims(t)[0] != sm_tensor_dims(sm__kctx_input(c, 0))[0])
            s = sm_status_new(SM_INVALID_ARGUMENT,
                              "All components must have the same size in the 0th dimension: component 0 has %" PRId64
                              " and component %d has %" PRId64,
                              sm_tensor_dims(sm__kctx_input(c, 0))[0], i, sm_tensor_dims(t)[0]);
        }
        d->t[i] = sm_tensor_ref((sm_tensor *)t);
      }
      if (!nin && !s) s = sm_status_new(SM_INVALID_ARGUMENT, "%s: a dataset needs at least one component", k->op);
      d->nt = nin;
      break;
    case K_RANGE: {
      int64_t a, b, st;
      if ((s = sm__ds_scalar_i64(c, 0, "start", &a)) || (s = sm__ds_scalar_i64(c, 1, "stop", &b)) || (s = sm__ds_scalar_i64(c, 2, "step", &st)))
        return s;
      if (st == 0) return sm_status_new(SM_INVALID_ARGUMENT, "step must be a non-zero integer.");
      if ((s = ds_new(K_RANGE, 0, 0, &d))) return s;
      d->a = a, d->b = b, d->c = st, d->ncomp = 1;
      break;
    }
    case K_RANDOM:
      if ((s = ds_new(K_RANDOM, 0, 0, &d))) return s;
      d->ncomp = 1;
      s = sm__ds_random_setup(c, d);
      break;
    case K_ZIP:
    case K_CHOOSE: /* DirectedInterleaveDataset: the selector, then the data inputs */
      if ((s = ds_new(k->kind, nin, 0, &d))) return s;
      for (int i = 0; i < nin; i++) {
        const ds *x = NULL;
        if (!s) s = sm__ds_input(c, i, &x);
        if (x) d->in[i] = (ds *)sm__variant_ref((sm_variant *)&x->v), d->nin = i + 1, d->ncomp += x->ncomp;
      }
      if (!s && k->kind == K_CHOOSE) s = sm__ds_more_setup(c, d);
      break;
    case K_CONCAT: {
      const ds *b = NULL;
      if ((s = sm__ds_input(c, 1, &b))) return s;
      if (b->ncomp != in0->ncomp)
        return sm_status_new(SM_INVALID_ARGUMENT, "input dataset and dataset to concatenate have different numbers of components (%d and %d)", in0->ncomp, b->ncomp);
      if ((s = ds_new(K_CONCAT, 2, 0, &d))) return s;
      d->in[0] = (ds *)sm__variant_ref((sm_variant *)&in0->v);
      d->in[1] = (ds *)sm__variant_ref((sm_variant *)&b->v);
      d->nin = 2;
      d->ncomp = in0->ncomp;
      break;
    }
    default: {
      /* one input dataset, then tensors */
      int nt = nin - 1 - k->trailing;
      if ((s = ds_new(k->kind, 1, nt > 0 ? nt : 0, &d))) return s;
      d->in[0] = (ds *)sm__variant_ref((sm_variant *)&in0->v);
      d->nin = 1;
      d->ncomp = in0->ncomp;
      if (k->kind == K_BATCH || k->kind == K_PADDED) {
        int64_t bs, drop = 0;
        if (!(s = sm__ds_scalar_i64(c, 1, "batch_size", &bs)) && bs <= 0)
          s = sm_status_new(SM_INVALID_ARGUMENT, "Batch size must be greater than zero.");
        int has_drop = k->kind == K_PADDED || nin >= 3; /* ParallelBatchDataset: num_parallel_calls before it */
        if (!s && has_drop && (s = sm__ds_scalar_i64(c, nin - 1, "drop_remainder", &drop))) break;
        d->c = bs, d->drop = (int)drop;
        if (!s && k->kind == K_PADDED) {
          int n = (nin - 3) / 2;
          if (n != d->ncomp) {
            s = sm_status_new(SM_INVALID_ARGUMENT, "Number of padded shapes (%d) must match the number of components in the input dataset's elements (%d)", n, d->ncomp);
            break;
          }
          for (int i = 0; i < 2 * n; i++) d->t[i] = sm_tensor_ref((sm_tensor *)sm__kctx_input(c, 2 + i));
          d->nt = 2 * n;
          for (int i = 0; i < n && !s; i++)
            if (sm_tensor_dtype(d->t[i]) != SM_INT64 || sm_tensor_rank(d->t[i]) != 1)
              s = sm_status_new(SM_INVALID_ARGUMENT, "All padded shapes must be vectors");
        }
      } else if (k->kind == K_WINDOW) {
        int64_t size, shift, stride, drop = 0;
        if ((s = sm__ds_scalar_i64(c, 1, "size", &size)) || (s = sm__ds_scalar_i64(c, 2, "shift", &shift)) ||
            (s = sm__ds_scalar_i64(c, 3, "stride", &stride)) || (s = sm__ds_scalar_i64(c, 4, "drop_remainder", &drop)))
          break;
        if (size <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "Window size must be greater than zero.");
        else if (shift <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "Window shift must be greater than zero.");
        else if (stride <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "Window stride must be greater than zero.");
        else if (size - 1 > INT64_MAX / 2 / stride) s = sm_status_new(SM_INVALID_ARGUMENT, "WindowDataset: size %" PRId64 " and stride %" PRId64 " span past int64", size, stride);
        d->a = shift, d->b = stride, d->c = size, d->drop = (int)drop;
      } else if (k->kind == K_SHUFFLE) {
        s = sm__ds_shuffle_setup(c, d);
      } else if (k->kind >= K_SHARD && k->kind != K_MAPBATCH) {
        s = sm__ds_more_setup(c, d);
      } else if (k->kind == K_TAKE || k->kind == K_SKIP || k->kind == K_REPEAT) {
        s = sm__ds_scalar_i64(c, 1, "count", &d->a);
      } else if (k->f) {
        /* captured arguments (and scan's initial state first) */
        int want = k->ncap + (k->kind == K_SCAN ? k->nstate : 0);
        if (nt != want) {
          s = sm_status_new(SM_INVALID_ARGUMENT, "%s: %d inputs after the dataset; its attrs say %d", k->op, nt, want);
          break;
        }
        for (int i = 0; i < nt; i++) d->t[i] = sm_tensor_ref((sm_tensor *)sm__kctx_input(c, 1 + i));
        d->nt = nt;
        atomic_fetch_add(&k->refs, 1);
        d->k = k;
        int nf = sm__plan_num_fetches(k->f);
        if (k->kind == K_MAP || k->kind == K_MAPBATCH) d->ncomp = nf;
        else if (k->kind == K_SCAN) d->ncomp = nf - k->nstate;
        else if (k->kind == K_FLATMAP) {
          const int *v;
          size_t n = 0;
          s = sm__node_attr_types(sm__kctx_node(c), "output_types", &v, &n);
          d->ncomp = (int)n;
        }
        if (!s && k->kind == K_INTERLEAVE) {
          int64_t cl, bl;
          if (!(s = sm__ds_scalar_i64(c, 1 + nt, "cycle_length", &cl)) && !(s = sm__ds_scalar_i64(c, 2 + nt, "block_length", &bl))) {
            int64_t cl0 = cl;
            if (cl == -1) { /* AUTOTUNE: TF takes the schedulable CPUs */
              long np = sysconf(_SC_NPROCESSORS_ONLN);
              cl = np > 0 ? np : 1;
            }
            if (cl <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "cycle_length must be greater than zero.");
            else if (bl <= 0) s = sm_status_new(SM_INVALID_ARGUMENT, "block_length must be greater than zero.");
            else if (cl > 4096) s = sm_status_new(SM_INVALID_ARGUMENT, "InterleaveDataset: cycle_length %" PRId64 " is more than 4096", cl);
            else if (k->trailing >= 3) { /* the parallel ones: num_parallel_calls (AUTOTUNE -1) at most cycle_length */
              int64_t np = 0;
              if (!(s = sm__ds_scalar_i64(c, nin - 1, "num_parallel_calls", &np)) && np <= 0 && np != -1)
                s = sm_status_new(SM_INVALID_ARGUMENT, "num_parallel_calls must be greater than zero.");
              else if (!s && np > cl && cl0 != -1)
                s = sm_status_new(SM_INVALID_ARGUMENT,
                                  "If `cycle_length` is set to a fixed value, `num_parallel_calls` must be either `tf.data.AUTOTUNE` "
                                  "or a value less than or equal to `cycle_length`. However, `num_parallel_calls` is %" PRId64
                                  " and `cycle_length` is %" PRId64, np, cl);
            }
            d->b = cl, d->c = bl;
          }
        }
        if (!s && k->kind == K_INTERLEAVE) {
          const int *v;
          size_t n = 0;
          s = sm__node_attr_types(sm__kctx_node(c), "output_types", &v, &n);
          d->ncomp = (int)n;
        }
        if (!s && d->ncomp < 1) s = sm_status_new(SM_INVALID_ARGUMENT, "%s: the function gives no element", k->op);
        if (!s && k->kind == K_MAPBATCH) s = map_and_batch(c, k, nt, &d);
      }
      break;
    }
  }
  if (d && !d->k) {
    atomic_fetch_add(&k->refs, 1);
    d->k = k;
  }
  if (s) {
    if (d) sm__variant_unref(&d->v);
    return s;
  }
  return set_ds_output(c, d);
}

sm_status *sm__dataset_output_slices(sm_kctx *c, sm_tensor *t) {
  ds *d;
  sm_status *s = ds_new(K_SLICE, 0, 1, &d);
  if (s) {
    sm_tensor_free(t);
    return s;
  }
  d->t[0] = t;
  d->nt = d->ncomp = 1;
  return set_ds_output(c, d);
}

/* ReduceDataset: f(state..., element..., captured...) -> state, to the end. */
static sm_status *reduce_compute(const void *state, sm_kctx *c) {
  kstate *k = (kstate *)state;
  const ds *in;
  sm_status *s = sm__ds_input(c, 0, &in);
  if (s) return s;
  int ns = k->nstate, ni = in->ncomp, ncap = k->ncap;
  if (sm__kctx_num_inputs(c) != 1 + ns + ncap)
    return sm_status_new(SM_INVALID_ARGUMENT, "ReduceDataset: %d inputs; its attrs say %d", sm__kctx_num_inputs(c), 1 + ns + ncap);
  /* a view dataset that carries the captured arguments for run_fn */
  ds *v;
  if ((s = ds_new(K_REDUCE, 0, ncap, &v))) return s;
  for (int i = 0; i < ncap; i++) v->t[i] = sm_tensor_ref((sm_tensor *)sm__kctx_input(c, 1 + ns + i));
  v->nt = ncap;
  atomic_fetch_add(&k->refs, 1);
  v->k = k;
  sm_tensor **cur = calloc((size_t)(2 * ns + ni + 1), sizeof *cur);
  dit *it = NULL;
  if (!cur) s = oom();
  for (int i = 0; !s && i < ns; i++) cur[i] = sm_tensor_ref((sm_tensor *)sm__kctx_input(c, 1 + i));
  if (!s) s = sm__ds_it_new(in, &it);
  sm_tensor **e = cur ? cur + ns : NULL, **nxt = cur ? cur + ns + ni : NULL;
  while (!s) {
    int end;
    if ((s = sm__ds_it_next(it, c, e, &end)) || end) break;
    s = run_fn(c, v, cur, ns, e, ni, nxt, ns);
    sm__ds_free_elem(e, ni);
    for (int i = 0; !s && i < ns; i++)
      if (sm_tensor_dtype(nxt[i]) != sm_tensor_dtype(cur[i]))
        s = sm_status_new(SM_INVALID_ARGUMENT, "The element types for the new state must match the initial state. Expected %s; got %s.",
                          dname(sm_tensor_dtype(cur[i])), dname(sm_tensor_dtype(nxt[i])));
    if (s) {
      sm__ds_free_elem(nxt, ns);
      break;
    }
    for (int i = 0; i < ns; i++) {
      sm_tensor_free(cur[i]);
      cur[i] = nxt[i];
      nxt[i] = NULL;
    }
  }
  sm__ds_it_free(it);
  for (int i = 0; cur && i < ns; i++) {
    if (!s && i < sm__kctx_num_outputs(c)) sm__kctx_set_output(c, i, cur[i]);
    else sm_tensor_free(cur[i]);
  }
  free(cur);
  sm__variant_unref(&v->v);
  return s;
}

static sm_status *card_compute(const void *state, sm_kctx *c) {
  (void)state;
  const ds *in;
  sm_status *s = sm__ds_input(c, 0, &in);
  sm_tensor *t;
  if (s || (s = sm__kctx_alloc_output(c, 0, SM_INT64, 0, NULL, &t))) return s;
  *(int64_t *)sm_tensor_data(t) = ds_card(in);
  return NULL;
}

static sm_status *pass_compute(const void *state, sm_kctx *c) {
  (void)state;
  const ds *in;
  sm_status *s = sm__ds_input(c, 0, &in);
  if (s) return s;
  sm__kctx_forward(c, 0, 0);
  return NULL;
}

/* ---- iterator resources ------------------------------------------------------------------------- */

typedef struct iter_res {
  void *self; /* the word a handle tensor wraps */
  unsigned magic;
  pthread_mutex_t mu;
  ds *d;
  dit *it;
} iter_res;

static void iter_free(void *p) {
  iter_res *r = p;
  sm__ds_it_free(r->it);
  if (r->d) sm__variant_unref(&r->d->v);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static sm_status *anon_iter_compute(const void *state, sm_kctx *c) {
  (void)state;
  iter_res *r = calloc(1, sizeof *r);
  if (!r) return oom();
  r->self = r;
  r->magic = ITER_MAGIC;
  pthread_mutex_init(&r->mu, NULL);
  sm_tensor *h;
  sm_status *s = sm_tensor_wrap(SM_RESOURCE, 0, NULL, &r->self, sizeof r->self, iter_free, r, &h);
  if (s) {
    iter_free(r);
    return s;
  }
  sm__kctx_set_output(c, 0, h);
  if (sm__kctx_num_outputs(c) > 1) { /* V2's deleter: an empty variant */
    sm_tensor *dl;
    if ((s = sm__kctx_alloc_output(c, 1, SM_VARIANT, 0, NULL, &dl))) return s;
  }
  return NULL;
}

static sm_status *input_iter(sm_kctx *c, int i, iter_res **out) {
  const sm_tensor *h = sm__kctx_input(c, i);
  iter_res *r = h && sm_tensor_dtype(h) == SM_RESOURCE && sm_tensor_num_elements(h) == 1 && sm_tensor_data(h)
                    ? ((void *const *)sm_tensor_data(h))[0]
                    : NULL;
  if (!r || r->self != r || r->magic != ITER_MAGIC)
    return sm_status_new(SM_INVALID_ARGUMENT, "input %d is not an iterator handle", i);
  *out = r;
  return NULL;
}

static sm_status *make_iter_compute(const void *state, sm_kctx *c) {
  (void)state;
  const ds *d;
  iter_res *r;
  sm_status *s = sm__ds_input(c, 0, &d);
  if (s || (s = input_iter(c, 1, &r))) return s;
  dit *it;
  if ((s = sm__ds_it_new(d, &it))) return s;
  pthread_mutex_lock(&r->mu);
  sm__ds_it_free(r->it);
  if (r->d) sm__variant_unref(&r->d->v);
  r->d = (ds *)sm__variant_ref((sm_variant *)&d->v);
  r->it = it;
  it->d = r->d;
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

/* The next element of the iterator of input 0 into e (ncomp), or *end. */
static sm_status *iter_next(sm_kctx *c, sm_tensor **e, int *end) {
  iter_res *r;
  sm_status *s = input_iter(c, 0, &r);
  if (s) return s;
  pthread_mutex_lock(&r->mu);
  if (!r->it)
    s = sm_status_new(SM_FAILED_PRECONDITION,
                      "GetNext() failed because the iterator has not been initialized. Ensure that you have run the "
                      "initializer operation for this iterator before getting the next element.");
  else if (r->d->ncomp != sm__kctx_num_outputs(c))
    s = sm_status_new(SM_INVALID_ARGUMENT, "the iterator's elements have %d components; the op gives %d", r->d->ncomp,
                      sm__kctx_num_outputs(c));
  else
    s = sm__ds_it_next(r->it, c, e, end);
  pthread_mutex_unlock(&r->mu);
  return s;
}

static sm_status *get_next_compute(const void *state, sm_kctx *c) {
  (void)state;
  int n = sm__kctx_num_outputs(c), end = 0;
  sm_status *s = NULL;
  sm_tensor **e = sm__kctx_scratch(c, (size_t)(n + 1) * sizeof *e, &s);
  if (s) return s;
  if ((s = iter_next(c, e, &end))) return s;
  if (end) return sm_status_new(SM_OUT_OF_RANGE, "End of sequence");
  for (int i = 0; i < n; i++) sm__kctx_set_output(c, i, e[i]);
  return NULL;
}

static sm_status *get_next_opt_compute(const void *state, sm_kctx *c) {
  (void)state;
  const sm_node *node = sm__kctx_node(c);
  const int *types;
  size_t n = 0;
  sm_status *s = sm__node_attr_types(node, "output_types", &types, &n);
  if (s) return s;
  sm_tensor **e = sm__kctx_scratch(c, (n + 1) * sizeof *e, &s);
  if (s) return s;
  iter_res *r;
  if ((s = input_iter(c, 0, &r))) return s;
  int end = 0;
  pthread_mutex_lock(&r->mu);
  if (!r->it)
    s = sm_status_new(SM_FAILED_PRECONDITION, "GetNext() failed because the iterator has not been initialized.");
  else if (r->d->ncomp != (int)n)
    s = sm_status_new(SM_INVALID_ARGUMENT, "the iterator's elements have %d components; the op expects %d", r->d->ncomp,
                      (int)n);
  else
    s = sm__ds_it_next(r->it, c, e, &end);
  pthread_mutex_unlock(&r->mu);
  if (s) return s;
  sm_variant *v;
  s = sm__optional_new(e, end ? -1 : (int)n, &v);
  if (!end) sm__ds_free_elem(e, (int)n);
  if (s) return s;
  sm_tensor *t;
  if ((s = sm__kctx_alloc_output(c, 0, SM_VARIANT, 0, NULL, &t))) {
    sm__variant_unref(v);
    return s;
  }
  sm__tensor_variants(t)[0] = v;
  return NULL;
}

static sm_status *delete_iter_compute(const void *state, sm_kctx *c) {
  (void)state;
  iter_res *r;
  sm_status *s = input_iter(c, 0, &r);
  if (s) return s;
  pthread_mutex_lock(&r->mu);
  sm__ds_it_free(r->it);
  r->it = NULL;
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

const sm_kernel sm_kernels_dataset[] = {
    {"TensorDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"TensorSliceDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"RangeDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"MapDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"ParallelMapDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"ParallelMapDatasetV2", ds_prepare, ds_compute, kstate_release, 0},
    {"FilterDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"BatchDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"BatchDatasetV2", ds_prepare, ds_compute, kstate_release, 0},
    {"ParallelBatchDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"PaddedBatchDatasetV2", ds_prepare, ds_compute, kstate_release, 0},
    {"TakeDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"SkipDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"RepeatDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"ZipDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"ConcatenateDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"FlatMapDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"ScanDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"TakeWhileDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"UnbatchDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"WindowDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"InterleaveDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"ParallelInterleaveDatasetV2", ds_prepare, ds_compute, kstate_release, 0},
    {"ParallelInterleaveDatasetV3", ds_prepare, ds_compute, kstate_release, 0},
    {"ParallelInterleaveDatasetV4", ds_prepare, ds_compute, kstate_release, 0},
    {"UniqueDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"ShuffleDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"ShuffleDatasetV2", ds_prepare, ds_compute, kstate_release, 0},
    {"ShuffleDatasetV3", ds_prepare, ds_compute, kstate_release, 0},
    {"ReduceDataset", ds_prepare, reduce_compute, kstate_release, 0},
    {"ShardDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"DirectedInterleaveDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"AssertCardinalityDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"IgnoreErrorsDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"CacheDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"CacheDatasetV2", ds_prepare, ds_compute, kstate_release, 0},
    {"RandomDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"RandomDatasetV2", ds_prepare, ds_compute, kstate_release, 0},
    {"MapAndBatchDataset", ds_prepare, ds_compute, kstate_release, 0},
    {"DatasetCardinality", NULL, card_compute, NULL, 0},
    {"PrefetchDataset", NULL, pass_compute, NULL, 0},
    {"ModelDataset", NULL, pass_compute, NULL, 0},
    {"OptimizeDataset", NULL, pass_compute, NULL, 0},
    {"OptimizeDatasetV2", NULL, pass_compute, NULL, 0},
    {"OptionsDataset", NULL, pass_compute, NULL, 0},
    {"FinalizeDataset", NULL, pass_compute, NULL, 0},
    {"MaxIntraOpParallelismDataset", NULL, pass_compute, NULL, 0},
    {"PrivateThreadPoolDataset", NULL, pass_compute, NULL, 0},
    {"RewriteDataset", NULL, pass_compute, NULL, 0}, /* replicate_on_split: for tf.data service splits only */
    {"AnonymousIteratorV2", NULL, anon_iter_compute, NULL, 0},
    {"AnonymousIteratorV3", NULL, anon_iter_compute, NULL, 0},
    {"MakeIterator", NULL, make_iter_compute, NULL, 0},
    {"IteratorGetNext", NULL, get_next_compute, NULL, 0},
    {"IteratorGetNextSync", NULL, get_next_compute, NULL, 0},
    {"IteratorGetNextAsOptional", NULL, get_next_opt_compute, NULL, 0},
    {"DeleteIterator", NULL, delete_iter_compute, NULL, 0},
    {0},
};

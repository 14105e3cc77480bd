/* dataset_rebatch.c - tf.data's re-batching stages in saved functions: DenseToSparseBatchDataset
 * (Dataset.sparse_batch, experimental.dense_to_sparse_batch), RebatchDatasetV2 (Dataset.rebatch)
 * and RebatchDataset (its V1 form that tf.distribute puts in graphs: split each batch into
 * num_replicas pieces), plus the pass-through stages of experimental APIs that only tune or
 * observe (ThreadPoolDataset, SetStatsAggregatorDataset, LatencyStatsDataset, the Experimental*
 * names of those TF already forwards). The dataset object and iterators are dataset.c's
 * (dataset.h); this file makes these stages and their elements, following TF's kernels
 * (core/kernels/data/experimental/dense_to_sparse_batch_dataset_op.cc, rebatch_dataset_op.cc):
 * - sparse_batch's element is a DT_VARIANT [3] holding indices, values and dense_shape, as TF's
 *   (DeserializeSparse reads it back);
 * - rebatch(batch_sizes) cuts the input batches' rows into batches of the sizes in turn, taking rows
 *   across input batches; a size of 0 gives an empty batch of the declared shape (unknown dims 0).
 * Buffered input rows are charged to the run's memory budget. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/variant.h"
#include "ops/array_internal.h"
#include "ops/dataset.h"
#include "ops/sparse_internal.h"
#include "runtime/kernel.h"

#define BAD(...) sm_status_new(SM_INVALID_ARGUMENT, __VA_ARGS__)

static sm_status *oom(void) { return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM in a rebatching dataset"); }

/* A rebatch's declared component shapes (for its empty batches). */
typedef struct rshapes {
  int n;
  int rank[64];
  int64_t dims[64][SM_MAX_RANK];
} rshapes;

/* "[2,3]" / "[?,3]" / "<unknown>" as TF's (Partial)TensorShape::DebugString. */
static void shape_str(char *b, size_t cap, int rank, const int64_t *dims) {
  if (rank < 0) {
    snprintf(b, cap, "<unknown>");
    return;
  }
  size_t o = (size_t)snprintf(b, cap, "[");
  for (int i = 0; i < rank && o < cap; i++) {
    if (dims[i] < 0) o += (size_t)snprintf(b + o, cap - o, "%s?", i ? "," : "");
    else o += (size_t)snprintf(b + o, cap - o, "%s%" PRId64, i ? "," : "", dims[i]);
  }
  if (o < cap) snprintf(b + o, cap - o, "]");
}

/* ---- making the datasets ------------------------------------------------------------------------ */

static sm_status *rebatch_compute(const void *state, sm_kctx *c) {
  (void)state;
  const char *op = sm__node_op(sm__kctx_node(c));
  int kind = !strcmp(op, "RebatchDatasetV2")                                           ? K_REBATCH
             : !strcmp(op, "RebatchDataset") || !strcmp(op, "ExperimentalRebatchDataset") ? K_REBATCH1
                                                                                       : K_SPBATCH;
  const ds *in0;
  sm_status *s = sm__ds_input(c, 0, &in0);
  if (s) return s;
  int ni = sm__kctx_num_inputs(c);
  if (ni != (kind == K_REBATCH1 ? 2 : 3)) return BAD("%s: %d inputs", op, ni);
  const sm_tensor *a = sm__kctx_input(c, 1);
  int64_t v = 0, drop = 0;
  sm_tensor *keep = NULL;
  if (kind == K_SPBATCH) {
    if ((s = sm__ds_scalar_i64(c, 1, "batch_size", &v))) return s;
    if (v <= 0) return BAD("Batch size must be greater than zero.");
    const sm_tensor *rs = sm__kctx_input(c, 2);
    if (sm_tensor_rank(rs) != 1) return BAD("row_shape must be a vector");
    if (sm_tensor_dtype(rs) != SM_INT64 && sm_tensor_dtype(rs) != SM_INT32) return BAD("row_shape must be int64 or int32");
    if (sm_tensor_num_elements(rs) >= SM_MAX_RANK) return BAD("%s: row_shape has %" PRId64 " dims, more than this runtime's %d", op, sm_tensor_num_elements(rs), SM_MAX_RANK - 1);
    for (int64_t i = 0; i < sm_tensor_num_elements(rs); i++)
      if (sm__array_int_at(rs, i) < -1) return BAD("Dimension %" PRId64 " must be >= -1", sm__array_int_at(rs, i));
    keep = sm_tensor_ref((sm_tensor *)rs);
  } else if (kind == K_REBATCH1) {
    if ((s = sm__ds_scalar_i64(c, 1, "num_replicas", &v))) return s;
    if (v <= 0) return BAD("num_replicas must be greater than zero.");
  } else {
    if (sm_tensor_rank(a) > 1) return BAD("`batch_sizes` must be a scalar or a vector.");
    if (sm_tensor_dtype(a) != SM_INT64) return BAD("%s: batch_sizes must be int64", op);
    if (!sm_tensor_num_elements(a)) return BAD("%s: batch_sizes is empty", op);
    for (int64_t i = 0; i < sm_tensor_num_elements(a); i++)
      if (((const int64_t *)sm_tensor_data(a))[i] < 0) return BAD("%s: batch_sizes[%" PRId64 "] is negative", op, i);
    if ((s = sm__ds_scalar_i64(c, 2, "drop_remainder", &drop))) return s;
    keep = sm_tensor_ref((sm_tensor *)a);
  }
  const int *ty;
  size_t nty = 0;
  if ((s = sm__node_attr_types(sm__kctx_node(c), "output_types", &ty, &nty))) {
    sm_tensor_free(keep);
    return s;
  }
  int ncomp = kind == K_SPBATCH ? 1 : (int)nty;
  if (kind != K_SPBATCH && in0->ncomp != ncomp) s = BAD("%s: output_types has %d types for an input of %d components", op, ncomp, in0->ncomp);
  if (!s && kind == K_SPBATCH && in0->ncomp != 1) s = BAD("%s: the input has %d components; it needs one", op, in0->ncomp);
  if (!s && ncomp > 64) s = BAD("%s: %d components (at most 64)", op, ncomp);
  rshapes *rsh = NULL;
  if (!s && kind == K_REBATCH) {
    const Tensorflow__AttrValue *at = sm__node_attr(sm__kctx_node(c), "output_shapes");
    if (!(rsh = calloc(1, sizeof *rsh))) s = oom();
    else if (!at || at->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !at->list || (int)at->list->n_shape != ncomp)
      s = BAD("%s: output_shapes does not list %d shapes", op, ncomp);
    for (int i = 0; !s && i < ncomp; i++) {
      const Tensorflow__TensorShapeProto *sp = at->list->shape[i];
      rsh->rank[i] = sp->unknown_rank ? -1 : (int)sp->n_dim;
      if (rsh->rank[i] > SM_MAX_RANK) s = BAD("%s: output_shapes[%d] has rank %d", op, i, rsh->rank[i]);
      for (int j = 0; !s && j < rsh->rank[i]; j++) rsh->dims[i][j] = sp->dim[j]->size;
    }
    if (rsh) rsh->n = ncomp;
  }
  ds *d = NULL;
  if (!s) s = sm__ds_new(kind, 1, keep ? 1 : 0, &d);
  if (s) {
    sm_tensor_free(keep);
    free(rsh);
    return s;
  }
  d->in[0] = (ds *)sm__variant_ref((sm_variant *)&in0->v);
  d->nin = 1;
  d->ncomp = ncomp;
  if (keep) d->t[0] = keep, d->nt = 1;
  d->c = v;
  d->drop = (int)drop;
  d->ext = rsh;
  d->ext_free = free;
  return sm__ds_set_output(c, d);
}

int64_t sm__ds_rebatch_card(const ds *d, int64_t n) {
  if (d->kind != K_SPBATCH || n < 0) return n < 0 && d->kind == K_SPBATCH ? n : -2;
  return n / d->c + (n % d->c ? 1 : 0);
}

/* ---- sparse_batch ------------------------------------------------------------------------------- */

/* TF's DenseToSparseBatchDatasetOp::Dataset<T>::Iterator::GetNextInternal. */
static sm_status *next_sparse(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  const ds *d = it->d;
  const sm_tensor *rs = d->t[0];
  int rn = (int)sm_tensor_num_elements(rs);
  int64_t rdims[SM_MAX_RANK], shape[SM_MAX_RANK];
  for (int i = 0; i < rn; i++) rdims[i] = sm__array_int_at(rs, i), shape[i + 1] = rdims[i] < 0 ? 0 : rdims[i];
  sm_status *s = NULL;
  sm_tensor **buf = NULL;
  int64_t n = 0, total = 0;
  size_t held = 0;
  char b1[256], b2[256];
  out[0] = NULL;
  while (n < d->c) {
    sm_tensor **nb = realloc(buf, (size_t)(n + 1) * sizeof *nb);
    if (!nb) {
      s = oom();
      break;
    }
    buf = nb;
    int e;
    if ((s = sm__ds_it_next(it->in[0], c, buf + n, &e)) || e) break;
    sm_tensor *t = buf[n++];
    size_t bt = (size_t)sm_tensor_num_elements(t) * (sm__array_esize(sm_tensor_dtype(t)) + 8 * (size_t)(rn + 1));
    if ((s = sm__kctx_hold(c, &it->acct, bt, "the elements of a sparse batch"))) break;
    held += bt;
    total += sm_tensor_num_elements(t);
    if (sm_tensor_rank(t) != rn) {
      shape_str(b1, sizeof b1, sm_tensor_rank(t), sm_tensor_dims(t));
      shape_str(b2, sizeof b2, rn, rdims);
      s = BAD("Input element had shape (%s) that is incompatible with the row shape (%s).", b1, b2);
      break;
    }
    for (int j = 0; j < rn && !s; j++) {
      int64_t dj = sm_tensor_dims(t)[j];
      if (rdims[j] < 0) shape[j + 1] = dj > shape[j + 1] ? dj : shape[j + 1];
      else if (dj > rdims[j]) {
        shape_str(b1, sizeof b1, sm_tensor_rank(t), sm_tensor_dims(t));
        shape_str(b2, sizeof b2, rn, rdims);
        s = sm_status_new(SM_DATA_LOSS, "Input element had shape (%s) that is larger than the row shape (%s).", b1, b2);
      }
    }
    if (s) break;
  }
  sm_tensor *ind = NULL, *val = NULL, *dsh = NULL;
  if (!s && n == 0) *end = 1;
  else if (!s) {
    int64_t id[2] = {total, rn + 1}, vd[1] = {total}, sd[1] = {rn + 1};
    shape[0] = n;
    if (!(s = sm_tensor_new(SM_INT64, 2, id, &ind)) && !(s = sm_tensor_new(sm_tensor_dtype(buf[0]), 1, vd, &val)) &&
        !(s = sm_tensor_new(SM_INT64, 1, sd, &dsh)) && !(s = sm_tensor_new(SM_VARIANT, 1, (int64_t[]){3}, &out[0]))) {
      memcpy(sm_tensor_data(dsh), shape, (size_t)(rn + 1) * sizeof *shape);
      int64_t *ip = sm_tensor_data(ind), pos = 0;
      for (int64_t i = 0; i < n && !s; i++) {
        const sm_tensor *t = buf[i];
        int64_t st[SM_MAX_RANK], m = sm_tensor_num_elements(t);
        sm__array_strides(rn, sm_tensor_dims(t), st);
        if (m && (s = sm__array_copy(val, pos, t, 0, m))) break;
        for (int64_t j = 0; j < m; j++, pos++) {
          int64_t *row = ip + pos * (rn + 1), r = j;
          row[0] = i;
          for (int k = 0; k < rn; k++) row[k + 1] = r / st[k], r %= st[k];
        }
      }
      if (!s) s = sm__tensor_variant_put(out[0], 0, ind), ind = NULL;
      if (!s) s = sm__tensor_variant_put(out[0], 1, val), val = NULL;
      if (!s) s = sm__tensor_variant_put(out[0], 2, dsh), dsh = NULL;
    }
  }
  sm_tensor_free(ind);
  sm_tensor_free(val);
  sm_tensor_free(dsh);
  if (s) sm_tensor_free(out[0]), out[0] = NULL;
  sm__ds_free_elem(buf, (int)n);
  free(buf);
  sm__mem_give(&it->acct, held);
  return s;
}

/* ---- rebatch ------------------------------------------------------------------------------------ */

typedef struct rit {
  sm_tensor *cur[64]; /* the current input batch (V1: the batch being split) */
  int64_t off;        /* V2: the next row of cur, -1 none; V1: the slice number */
  int64_t bi;         /* V2: index into batch_sizes */
  int in_end;
  size_t held;
} rit;

static void rit_drop(dit *it, rit *r) {
  for (int j = 0; j < it->d->ncomp; j++) sm_tensor_free(r->cur[j]), r->cur[j] = NULL;
  sm__mem_give(&it->acct, r->held);
  r->held = 0;
}

static void rit_free(dit *it) {
  rit *r = it->ext;
  if (r) rit_drop(it, r);
  free(r);
  it->ext = NULL;
}

/* Reads the next input batch into r->cur (checked as TF's ValidateInputTensors); *end at its end. */
static sm_status *read_batch(dit *it, sm_kctx *c, rit *r, int v1, int *end) {
  int nc = it->d->ncomp;
  rit_drop(it, r);
  sm_status *s = sm__ds_it_next(it->in[0], c, r->cur, end);
  if (s || *end) {
    for (int j = 0; j < nc; j++) r->cur[j] = NULL;
    return s;
  }
  size_t b = 0;
  for (int j = 0; j < nc; j++) b += (size_t)sm_tensor_num_elements(r->cur[j]) * sm__array_esize(sm_tensor_dtype(r->cur[j]));
  if ((s = sm__kctx_hold(c, &it->acct, b, "a batch being rebatched"))) return s;
  r->held = b;
  for (int j = 0; j < nc; j++) {
    const sm_tensor *t = r->cur[j];
    if (!sm_tensor_rank(t))
      return v1 ? BAD("Cannot rebatch dataset: All components must have at least one dimension. Perhaps your input dataset is not batched? Component %d is scalar.", j)
                : BAD("Input element must have a non-scalar value in each component.");
    if (!v1 && sm_tensor_dims(t)[0] != sm_tensor_dims(r->cur[0])[0])
      return BAD("Input element must have the same batch size in each component. Component 0 had size %" PRId64 " but component %d had size, %" PRId64 ".",
                 sm_tensor_dims(r->cur[0])[0], j, sm_tensor_dims(t)[0]);
  }
  return NULL;
}

/* TF's RebatchDatasetOp (V1) iterator: slice k of num_replicas, ceil(rows / num_replicas) rows each. */
static sm_status *next_rebatch1(dit *it, sm_kctx *c, rit *r, sm_tensor **out, int *end) {
  const ds *d = it->d;
  sm_status *s;
  if (r->off % d->c == 0 && ((s = read_batch(it, c, r, 1, end)) || *end)) {
    if (*end) it->done = 1;
    return s;
  }
  for (int j = 0; j < d->ncomp; j++) {
    int64_t n = sm_tensor_dims(r->cur[j])[0], iv = n / d->c + (n % d->c ? 1 : 0);
    int64_t a = iv * r->off, b = a + iv < n ? a + iv : n;
    if (a >= b) a = b;
    if ((s = sm__array_rows(r->cur[j], a, b, &out[j]))) return s;
  }
  r->off = (r->off + 1) % d->c;
  return NULL;
}

/* TF's RebatchDatasetV2Op iterator. */
static sm_status *next_rebatch2(dit *it, sm_kctx *c, rit *r, sm_tensor **out, int *end) {
  const ds *d = it->d;
  int nc = d->ncomp;
  const int64_t *bs = sm_tensor_data(d->t[0]);
  int64_t want = bs[r->bi], got = 0;
  sm_status *s = NULL;
  if (r->in_end) {
    *end = 1;
    return NULL;
  }
  sm_tensor **parts = NULL; /* slices, nc each */
  int64_t np = 0;
  while (got < want && !s) {
    if (r->off < 0) {
      if ((s = read_batch(it, c, r, 0, &r->in_end)) || r->in_end) break;
      r->off = 0;
    }
    int64_t rowsn = sm_tensor_dims(r->cur[0])[0];
    int64_t e = r->off + want - got < rowsn ? r->off + want - got : rowsn;
    sm_tensor **np2 = realloc(parts, (size_t)(np + 1) * (size_t)nc * sizeof *np2);
    if (!np2) {
      s = oom();
      break;
    }
    parts = np2;
    for (int j = 0; j < nc; j++) parts[np * nc + j] = NULL;
    np++;
    for (int j = 0; j < nc && !s; j++) s = sm__array_rows(r->cur[j], r->off, e, &parts[(np - 1) * nc + j]);
    got += e - r->off;
    r->off = e;
    if (r->off == rowsn) r->off = -1;
  }
  r->bi = (r->bi + 1) % sm_tensor_num_elements(d->t[0]);
  if (!s && ((got == 0 && want > 0) || (d->drop && got < want))) *end = 1;
  else if (!s && want == 0) {
    const rshapes *rsh = d->ext;
    for (int j = 0; j < nc && !s; j++) {
      int64_t dims[SM_MAX_RANK] = {0};
      int rk = rsh->rank[j] < 1 ? 1 : rsh->rank[j];
      for (int k = 1; k < rk; k++) dims[k] = rsh->dims[j][k] < 0 ? 0 : rsh->dims[j][k];
      const int *ty;
      size_t nty;
      if (!(s = sm__node_attr_types(sm__kctx_node(c), "output_types", &ty, &nty)) && (size_t)j < nty) s = sm_tensor_new(ty[j], rk, dims, &out[j]);
    }
  } else if (!s && np == 1) {
    for (int j = 0; j < nc; j++) out[j] = parts[j], parts[j] = NULL;
  } else if (!s) {
    for (int j = 0; j < nc && !s; j++) {
      const sm_tensor *p0 = parts[j];
      for (int64_t p = 1; p < np && !s; p++) {
        const sm_tensor *q = parts[p * nc + j];
        if (sm_tensor_rank(q) != sm_tensor_rank(p0) || (sm_tensor_rank(q) > 1 && memcmp(sm_tensor_dims(q) + 1, sm_tensor_dims(p0) + 1, (size_t)(sm_tensor_rank(q) - 1) * sizeof(int64_t))))
          s = BAD("%s: component %d's rows have different shapes across input batches", "RebatchDatasetV2", j);
      }
      int64_t dims[SM_MAX_RANK];
      memcpy(dims, sm_tensor_dims(p0), (size_t)sm_tensor_rank(p0) * sizeof *dims);
      dims[0] = got;
      if (!s) s = sm_tensor_new(sm_tensor_dtype(p0), sm_tensor_rank(p0), dims, &out[j]);
      for (int64_t p = 0, o = 0; p < np && !s; p++) {
        int64_t m = sm_tensor_num_elements(parts[p * nc + j]);
        if (m) s = sm__array_copy(out[j], o, parts[p * nc + j], 0, m);
        o += m;
      }
    }
  }
  for (int64_t i = 0; i < np * nc; i++) sm_tensor_free(parts[i]);
  free(parts);
  if (s) sm__ds_free_elem(out, nc);
  return s;
}

sm_status *sm__ds_rebatch_next(dit *it, sm_kctx *c, sm_tensor **out, int *end) {
  if (it->d->kind == K_SPBATCH) return next_sparse(it, c, out, end);
  if (!it->ext) {
    rit *r = calloc(1, sizeof *r);
    if (!r) return oom();
    r->off = it->d->kind == K_REBATCH ? -1 : 0;
    it->ext = r;
    it->ext_free = rit_free;
  }
  for (int j = 0; j < it->d->ncomp; j++) out[j] = NULL;
  return it->d->kind == K_REBATCH ? next_rebatch2(it, c, it->ext, out, end) : next_rebatch1(it, c, it->ext, out, end);
}

/* Stages that only tune threads or record statistics: output 0 = input 0. */
static sm_status *pass_compute(const void *state, sm_kctx *c) {
  (void)state;
  const ds *in0;
  sm_status *s = sm__ds_input(c, 0, &in0);
  if (s) return s;
  return sm__ds_set_output(c, (ds *)sm__variant_ref((sm_variant *)&in0->v));
}

const sm_kernel sm_kernels_dataset_rebatch[] = {
    {"DenseToSparseBatchDataset", NULL, rebatch_compute, NULL, 0},
    {"ExperimentalDenseToSparseBatchDataset", NULL, rebatch_compute, NULL, 0},
    {"RebatchDataset", NULL, rebatch_compute, NULL, 0},
    {"ExperimentalRebatchDataset", NULL, rebatch_compute, NULL, 0},
    {"RebatchDatasetV2", NULL, rebatch_compute, NULL, 0},
    {"ThreadPoolDataset", NULL, pass_compute, NULL, 0},
    {"ExperimentalThreadPoolDataset", NULL, pass_compute, NULL, 0},
    {"SetStatsAggregatorDataset", NULL, pass_compute, NULL, 0},
    {"ExperimentalSetStatsAggregatorDataset", NULL, pass_compute, NULL, 0},
    {"LatencyStatsDataset", NULL, pass_compute, NULL, 0},
    {"ExperimentalLatencyStatsDataset", NULL, pass_compute, NULL, 0},
    {"BytesProducedStatsDataset", NULL, pass_compute, NULL, 0},
    {"ExperimentalBytesProducedStatsDataset", NULL, pass_compute, NULL, 0},
    {"ExperimentalMaxIntraOpParallelismDataset", NULL, pass_compute, NULL, 0},
    {"ExperimentalPrivateThreadPoolDataset", NULL, pass_compute, NULL, 0},
    {0},
};

/* segment.c - the segment kernel family: UnsortedSegmentSum/Max/Min/Prod (ids of any rank, a
 * prefix of data's shape; negative ids dropped; empty segments 0, lowest, highest, 1) and
 * SegmentSum/Mean/Max/Min/Prod (1-D ids, sorted; num_segments = last id + 1; empty segments 0, 1
 * for Prod), over float, double, int32, int64, with TensorFlow's messages
 * (segment_reduction_ops_impl.h).
 * keras.ops.segment_sum / segment_max export them. Checked against TensorFlow by
 * tests/unit/test_ops_linalg.c (tools/gen_linalg_cases.py). */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "ops/math_int.h"

/* Integer sums and products wrap (computed unsigned: no signed overflow), as TF's do. */
#define SG_ADD(a, b)                                                                               \
  _Generic((a), int32_t: (int32_t)((uint32_t)(a) + (uint32_t)(b)),                                 \
           int64_t: (int64_t)((uint64_t)(a) + (uint64_t)(b)), default: (a) + (b))
#define SG_MUL(a, b)                                                                               \
  _Generic((a), int32_t: (int32_t)((uint32_t)(a) * (uint32_t)(b)),                                 \
           int64_t: (int64_t)((uint64_t)(a) * (uint64_t)(b)), default: (a) * (b))

enum { SG_SUM, SG_MEAN, SG_MAX, SG_MIN, SG_PROD };

static sm_status *sg_prepare(const sm_node *node, void **state) {
  const char *op = sm__node_op(node);
  int sorted = strncmp(op, "Unsorted", 8) != 0;
  const char *r = op + (sorted ? 7 : 15); /* past "Segment" / "UnsortedSegment" */
  int red = !strcmp(r, "Sum") ? SG_SUM : !strcmp(r, "Mean") ? SG_MEAN : !strcmp(r, "Max") ? SG_MAX
            : !strcmp(r, "Min") ? SG_MIN : SG_PROD;
  *state = (void *)(intptr_t)(1 + (red << 1 | sorted));
  return NULL;
}

static int64_t id_at(const sm_tensor *t, int64_t i) {
  return sm_tensor_dtype(t) == SM_INT64 ? ((const int64_t *)sm_tensor_data(t))[i]
                                        : ((const int32_t *)sm_tensor_data(t))[i];
}

/* out[seg, k] op= data[i, k] over rows i of segment seg; `init` the identity, then empty segments
 * set to `empty` (counts[] says which are empty) and Mean divided. */
#define SG_LOOP(T, LOWEST, HIGHEST)                                                                \
  do {                                                                                             \
    const T *x = sm_tensor_data(data);                                                             \
    T *o = sm_tensor_data(z);                                                                      \
    T init = red == SG_MAX ? LOWEST : red == SG_MIN ? HIGHEST : red == SG_PROD ? (T)1 : (T)0;      \
    for (int64_t i = 0; i < nseg * inner; i++) o[i] = init;                                        \
    for (int64_t i = 0; i < rows; i++) {                                                           \
      int64_t sgi = id_at(ids, i);                                                                 \
      if (sgi < 0) continue;                                                                       \
      const T *xr = x + i * inner;                                                                 \
      T *orow = o + sgi * inner;                                                                   \
      for (int64_t k = 0; k < inner; k++) {                                                        \
        T v = xr[k];                                                                               \
        switch (red) {                                                                             \
          case SG_MAX: orow[k] = v > orow[k] ? v : orow[k]; break;                                 \
          case SG_MIN: orow[k] = v < orow[k] ? v : orow[k]; break;                                 \
          case SG_PROD: orow[k] = SG_MUL(orow[k], v); break;                                              \
          default: orow[k] = SG_ADD(orow[k], v); break;                                                   \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    for (int64_t s = 0; s < nseg; s++)                                                             \
      for (int64_t k = 0; k < inner; k++) {                                                        \
        if (sorted && !counts[s] && red != SG_PROD) o[s * inner + k] = 0;                              \
        else if (red == SG_MEAN && counts[s]) o[s * inner + k] = (T)(o[s * inner + k] / (T)counts[s]); \
      }                                                                                            \
  } while (0)

static sm_status *sg_compute(const void *state, sm_kctx *ctx) {
  int code = (int)(intptr_t)state - 1, red = code >> 1, sorted = code & 1;
  const sm_tensor *data = sm__kctx_input(ctx, 0), *ids = sm__kctx_input(ctx, 1);
  int dt = sm_tensor_dtype(data), r = sm_tensor_rank(data), ir = sm_tensor_rank(ids);
  const char *op = sm__node_op(sm__kctx_node(ctx));
  if (dt != SM_FLOAT && dt != SM_DOUBLE && dt != SM_INT32 && dt != SM_INT64) return sm__math_bad_dtype(op, dt);
  if (sm_tensor_dtype(ids) != SM_INT32 && sm_tensor_dtype(ids) != SM_INT64)
    return sm__math_bad_dtype(op, sm_tensor_dtype(ids));
  const int64_t *dd = sm_tensor_dims(data), *idd = sm_tensor_dims(ids);
  char s1[256], s2[256];
  int64_t rows = sm_tensor_num_elements(ids), nseg;
  if (sorted) {
    if (ir != 1) return sm_status_new(SM_INVALID_ARGUMENT, "segment_ids should be a vector.");
    if (r < 1 || dd[0] != rows)
      return sm_status_new(SM_INVALID_ARGUMENT, "segment_ids should be the same size as dimension 0 of input.");
    nseg = rows ? id_at(ids, rows - 1) + 1 : 0;
    for (int64_t i = 0; i < rows; i++) {
      int64_t v = id_at(ids, i);
      if (v < 0) return sm_status_new(SM_INVALID_ARGUMENT, "segment ids must be >= 0");
      if (i && v < id_at(ids, i - 1))
        return sm_status_new(SM_INVALID_ARGUMENT, "segment ids are not increasing");
    }
  } else {
    int ok = ir <= r;
    for (int i = 0; ok && i < ir; i++) ok = dd[i] == idd[i];
    if (!ok)
      return sm_status_new(SM_INVALID_ARGUMENT, "data.shape = %s does not start with segment_ids.shape = %s",
                           sm_shape_str(r, dd, s1, sizeof s1), sm_shape_str(ir, idd, s2, sizeof s2));
    const sm_tensor *ns = sm__kctx_input(ctx, 2);
    if (sm_tensor_num_elements(ns) != 1 || (sm_tensor_dtype(ns) != SM_INT32 && sm_tensor_dtype(ns) != SM_INT64))
      return sm_status_new(SM_INVALID_ARGUMENT, "num_segments should be a scalar, not shape %s",
                           sm_shape_str(sm_tensor_rank(ns), sm_tensor_dims(ns), s1, sizeof s1));
    nseg = id_at(ns, 0);
    if (nseg < 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "Input num_segments == %lld must not be negative.", (long long)nseg);
    for (int64_t i = 0; i < rows; i++)
      if (id_at(ids, i) >= nseg)
        return sm_status_new(SM_INVALID_ARGUMENT, "segment_ids[%lld] = %lld is out of range [0, %lld)", (long long)i,
                             (long long)id_at(ids, i), (long long)nseg);
  }
  int lead = sorted ? 1 : ir, orank = r - lead + 1;
  int64_t od[SM_MAX_RANK], inner = 1;
  od[0] = nseg;
  for (int i = lead; i < r; i++) od[i - lead + 1] = dd[i], inner *= dd[i];
  sm_tensor *z;
  sm_status *st = sm__kctx_alloc_output_uninit(ctx, 0, dt, orank, od, &z);
  if (st || nseg * inner == 0) return st;
  int64_t *counts = sm__kctx_scratch(ctx, (size_t)nseg * sizeof *counts, &st);
  if (!counts) return st;
  memset(counts, 0, (size_t)nseg * sizeof *counts);
  for (int64_t i = 0; i < rows; i++)
    if (id_at(ids, i) >= 0) counts[id_at(ids, i)]++;
  switch (dt) {
    case SM_FLOAT: SG_LOOP(float, -FLT_MAX, FLT_MAX); break;
    case SM_DOUBLE: SG_LOOP(double, -DBL_MAX, DBL_MAX); break;
    case SM_INT32: SG_LOOP(int32_t, INT32_MIN, INT32_MAX); break;
    default: SG_LOOP(int64_t, INT64_MIN, INT64_MAX); break;
  }
  return NULL;
}

#define SG(name) {name, sg_prepare, sg_compute, NULL, 0}
const sm_kernel sm_kernels_segment[] = {
    SG("UnsortedSegmentSum"), SG("UnsortedSegmentMax"), SG("UnsortedSegmentMin"), SG("UnsortedSegmentProd"),
    SG("SegmentSum"), SG("SegmentMean"), SG("SegmentMax"), SG("SegmentMin"), SG("SegmentProd"), {0},
};

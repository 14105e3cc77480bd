/* einsum.c - Einsum over one or two operands, by direct summation.
 *
 * The equation is parsed once in prepare ("nij,jk->nik"; implicit output = the labels seen once,
 * sorted, as numpy and TF do). compute walks every combination of label values with an odometer and
 * adds the product of the operands into the output, so any labelling works (transposes, traces,
 * diagonals, outer products, batch matmuls) at the cost of speed: models whose Einsum is a plain
 * (batch) matmul deserve a gemm path here later. Ellipsis ("...") is refused at load. */
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "runtime/kernel.h"

#define MAX_LABELS 52

typedef struct einsum_state {
  int nin;
  int rank[2];             /* labels per operand */
  int lab[2][SM_MAX_RANK]; /* label ids per operand axis */
  int out_rank;
  int out_lab[SM_MAX_RANK];
  int nlabels;
} einsum_state;

static int label_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
  return -1;
}

static sm_status *parse_term(const char *p, size_t len, int *labs, int *rank, const char *eq) {
  if (len > SM_MAX_RANK) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': a term has too many labels", eq);
  for (size_t i = 0; i < len; i++) {
    if (p[i] == '.')
      return sm_status_new(SM_UNIMPLEMENTED, "Einsum equation '%s': ellipsis is not supported yet", eq);
    int id = label_id(p[i]);
    if (id < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': invalid label '%c'", eq, p[i]);
    labs[i] = id;
  }
  *rank = (int)len;
  return NULL;
}

static sm_status *einsum_prepare(const sm_node *node, void **state) {
  const char *eq;
  size_t len;
  sm_status *s = sm__node_attr_string(node, "equation", &eq, &len);
  if (s) return s;
  char buf[512];
  if (len >= sizeof buf) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation is too long");
  size_t k = 0; /* a copy without spaces */
  for (size_t i = 0; i < len; i++)
    if (eq[i] != ' ') buf[k++] = eq[i];
  buf[k] = 0;
  einsum_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  char *arrow = strstr(buf, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - buf) : k;
  char *comma = memchr(buf, ',', lhs_len);
  st->nin = comma ? 2 : 1;
  if (comma && memchr(comma + 1, ',', lhs_len - (size_t)(comma + 1 - buf))) {
    free(st);
    return sm_status_new(SM_UNIMPLEMENTED, "Einsum equation '%s': more than two operands", buf);
  }
  if (sm__node_num_inputs(node) != st->nin) {
    int nin = st->nin;
    free(st);
    return sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s' names %d operand(s), the node has %d", buf, nin,
                         sm__node_num_inputs(node));
  }
  size_t l0 = comma ? (size_t)(comma - buf) : lhs_len;
  s = parse_term(buf, l0, st->lab[0], &st->rank[0], buf);
  if (!s && comma) s = parse_term(comma + 1, lhs_len - l0 - 1, st->lab[1], &st->rank[1], buf);
  int count[MAX_LABELS] = {0};
  for (int o = 0; !s && o < st->nin; o++)
    for (int i = 0; i < st->rank[o]; i++) count[st->lab[o][i]]++;
  if (!s && arrow) {
    s = parse_term(arrow + 2, strlen(arrow + 2), st->out_lab, &st->out_rank, buf);
    for (int i = 0; !s && i < st->out_rank; i++) {
      if (!count[st->out_lab[i]])
        s = sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': output label not in any input", buf);
      for (int j = 0; !s && j < i; j++)
        if (st->out_lab[j] == st->out_lab[i])
          s = sm_status_new(SM_INVALID_ARGUMENT, "Einsum equation '%s': output label repeated", buf);
    }
  } else if (!s) {
    for (int id = 0; id < MAX_LABELS; id++) /* implicit: labels seen once, in alphabetical order */
      if (count[id] == 1) st->out_lab[st->out_rank++] = id;
  }
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

#define DEF_SUM(NAME, T)                                                                                  \
  static void NAME(const einsum_state *st, const void *const *in, void *outp, int nl, const int64_t *size, \
                   const int64_t (*stride)[MAX_LABELS]) {                                                 \
    int64_t idx[MAX_LABELS] = {0}, off[3] = {0, 0, 0};                                                   \
    const T *a = in[0], *b = st->nin > 1 ? in[1] : NULL;                                                 \
    T *out = outp;                                                                                       \
    for (;;) {                                                                                           \
      T v = a[off[0]];                                                                                   \
      if (b) v = (T)(v * b[off[1]]);                                                                     \
      out[off[2]] = (T)(out[off[2]] + v);                                                                \
      int l = nl - 1; /* odometer over every label, offsets updated incrementally */                     \
      for (; l >= 0; l--) {                                                                              \
        for (int o = 0; o < 3; o++) off[o] += stride[o][l];                                              \
        if (++idx[l] < size[l]) break;                                                                   \
        for (int o = 0; o < 3; o++) off[o] -= stride[o][l] * size[l];                                    \
        idx[l] = 0;                                                                                      \
      }                                                                                                  \
      if (l < 0) return;                                                                                 \
    }                                                                                                    \
  }
DEF_SUM(sum_f32, float)
DEF_SUM(sum_f64, double)
DEF_SUM(sum_i32, uint32_t) /* integers wrap, never undefined behaviour */
DEF_SUM(sum_i64, uint64_t)

static sm_status *einsum_compute(const void *state, sm_kctx *ctx) {
  const einsum_state *st = state;
  int64_t dim_of[MAX_LABELS];
  for (int i = 0; i < MAX_LABELS; i++) dim_of[i] = -1;
  int dt = sm_tensor_dtype(sm__kctx_input(ctx, 0));
  const void *data[2] = {NULL, NULL};
  for (int o = 0; o < st->nin; o++) {
    const sm_tensor *t = sm__kctx_input(ctx, o);
    if (sm_tensor_dtype(t) != dt) return sm_status_new(SM_INVALID_ARGUMENT, "Einsum operands differ in dtype");
    if (sm_tensor_rank(t) != st->rank[o])
      return sm_status_new(SM_INVALID_ARGUMENT, "Einsum operand %d has rank %d, the equation gives it %d", o,
                           sm_tensor_rank(t), st->rank[o]);
    for (int i = 0; i < st->rank[o]; i++) {
      int64_t d = sm_tensor_dims(t)[i];
      int id = st->lab[o][i];
      if (dim_of[id] >= 0 && dim_of[id] != d)
        return sm_status_new(SM_INVALID_ARGUMENT, "Einsum: label '%c' has size %lld and %lld",
                             id < 26 ? 'a' + id : 'A' + id - 26, (long long)dim_of[id], (long long)d);
      dim_of[id] = d;
    }
    data[o] = sm_tensor_data(t);
  }
  /* The labels in use, and each operand's (and the output's) element stride per label. */
  int ids[MAX_LABELS], nl = 0;
  int64_t size[MAX_LABELS], stride[3][MAX_LABELS];
  memset(stride, 0, sizeof stride);
  for (int id = 0; id < MAX_LABELS; id++)
    if (dim_of[id] >= 0) ids[nl++] = id;
  int64_t out_dims[SM_MAX_RANK];
  for (int i = 0; i < st->out_rank; i++) out_dims[i] = dim_of[st->out_lab[i]];
  sm_tensor *y;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, dt, st->out_rank, out_dims, &y);
  if (s) return s;
  uint64_t total = 1;
  for (int l = 0; l < nl; l++) {
    size[l] = dim_of[ids[l]];
    if (sm__mul_u64(total, (uint64_t)size[l], &total) || total > ((uint64_t)1 << 40))
      return sm_status_new(SM_OUT_OF_RANGE, "Einsum: too many terms to sum");
  }
  if (total == 0) return NULL;
  for (int o = 0; o < st->nin; o++) {
    int64_t str = 1;
    for (int i = st->rank[o] - 1; i >= 0; i--) {
      for (int l = 0; l < nl; l++)
        if (ids[l] == st->lab[o][i]) stride[o][l] += str;
      str *= sm_tensor_dims(sm__kctx_input(ctx, o))[i];
    }
  }
  int64_t str = 1;
  for (int i = st->out_rank - 1; i >= 0; i--) {
    for (int l = 0; l < nl; l++)
      if (ids[l] == st->out_lab[i]) stride[2][l] += str;
    str *= out_dims[i];
  }
  void *out = sm_tensor_data(y);
  switch (dt) {
  case SM_FLOAT: sum_f32(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_DOUBLE: sum_f64(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_INT32: sum_i32(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  case SM_INT64: sum_i64(st, data, out, nl, size, (const int64_t(*)[MAX_LABELS])stride); return NULL;
  default: return sm_status_new(SM_UNIMPLEMENTED, "Einsum of dtype %s is not supported", sm_dtype_name(dt));
  }
}

const sm_kernel sm_kernels_einsum[] = {
    {"Einsum", einsum_prepare, einsum_compute, free, 0},
    {0},
};

/* fuzz_kernels.h - the hostile-input generator that fuzz/fuzz_kernels.c (libFuzzer) and
 * tests/unit/test_kernel_hostile.c (the seeded CI driver) share: one registered op, its attrs and
 * its inputs drawn from a source of choices, built into a one-node graph and run.
 *
 * A case: the source picks an op among the registered kernels that have an OpDef (src/graph/op_defs.c)
 * and are not skipped (hk_skip: ops that read or write files, sleep, print, or take resource /
 * variant / ref inputs, which no feed can make); then every attr (a type from the OpDef's allowed
 * list, ints small or hostile - negative, huge -, floats NaN/Inf/huge, lists, strings from the
 * allowed list or odd ones, shapes; an attr with a default is often left to it), and for every
 * input a dtype (as its type attr says) and a value: rank 0-5, dims 0..8 (now and then one huge dim
 * beside a zero one), elements of the dtype's edge values (NaN, Inf, -0, huge, negative, INT_MIN,
 * small indices, odd strings). Inputs are Placeholders fed at run time (not Consts: a Const graph
 * would be folded at load, outside the run's budget). The run has a memory budget (HK_RUN_BYTES)
 * and a deadline, so a huge allocation must come back as a status and a long loop must stop; the
 * case passes when the run returns (OK or any error status) and every output can be read. A graph
 * the builder refuses (an attr outside the OpDef's bounds) is a refusal too, and fine.
 *
 * The source is a byte string (the fuzzer's input; exhausted bytes read as 0) or a splitmix64
 * stream (the driver's seed). */
#ifndef SM_FUZZ_KERNELS_H
#define SM_FUZZ_KERNELS_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/op_defs.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "savedmodel/dtype.h"
#include "savedmodel/graph_builder.h"
#include "savedmodel/model.h"
#include "savedmodel/tensor.h"

#define HK_RUN_BYTES ((size_t)64 << 20)  /* the run's memory budget */
#define HK_DEADLINE_US ((int64_t)5000000) /* a run stops between chunks after this */
#define HK_MAX_ELEMS 4096                 /* elements of one generated input at most */
#define HK_MAX_INPUTS 12
#define HK_MAX_OUTPUTS 24

typedef struct {
  const uint8_t *data; /* bytes mode */
  size_t size, pos;
  uint64_t state; /* prng mode when data == NULL */
  int prev_rank;  /* the shape of the case's previous input (-1: none), which the next often takes */
  int64_t prev_dims[5];
} hk_src;

static uint32_t hk_next(hk_src *s) {
  if (s->data) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = (v << 8) | (s->pos < s->size ? s->data[s->pos++] : 0);
    return v;
  }
  uint64_t z = (s->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}
/* 0..n-1 (n >= 1); a byte source spends one byte when n <= 256 */
static uint32_t hk_pick(hk_src *s, uint32_t n) {
  if (n <= 1) return 0;
  if (s->data && n <= 256) return (s->pos < s->size ? s->data[s->pos++] : 0) % n;
  return hk_next(s) % n;
}

/* Ops not run, with why: files (reads and writes anywhere for a graph without an export dir),
 * sleeping, printing to stderr; a name containing any of these. */
static const char *const hk_skip_parts[] = {"File",  "Save",   "Restore", "Checkpoint", "Reader", "Record", "Sleep",
                                            "Print", "Dataset", "Iterator", "Summary",   "Immutable", "Filename",
                                            "Assert", NULL};
static int hk_skip(const char *op) {
  for (int i = 0; hk_skip_parts[i]; i++)
    if (strstr(op, hk_skip_parts[i])) return 1;
  return 0;
}

static const int hk_any_types[] = {SM_FLOAT,  SM_DOUBLE,  SM_INT32, SM_INT64,  SM_UINT8,     SM_INT8,
                                   SM_INT16,  SM_UINT16,  SM_BOOL,  SM_HALF,   SM_BFLOAT16,  SM_COMPLEX64,
                                   SM_STRING, SM_UINT32,  SM_UINT64, SM_COMPLEX128, SM_QINT8, SM_QUINT8, SM_QINT32};
#define HK_NANY ((int)(sizeof hk_any_types / sizeof hk_any_types[0]))

static int hk_feedable(int t) { return t > 0 && t < SM_DTYPE_REF_OFFSET && t != SM_RESOURCE && t != SM_VARIANT; }

static int hk_pick_type(hk_src *s, const Tensorflow__AttrValue *allowed) {
  if (allowed && allowed->list && allowed->list->n_type > 0) {
    int n = (int)allowed->list->n_type;
    for (int tries = 0; tries < 4; tries++) {
      int t = (int)allowed->list->type[hk_pick(s, (uint32_t)n)];
      if (hk_feedable(t)) return t;
    }
    return (int)allowed->list->type[0];
  }
  return hk_any_types[hk_pick(s, HK_NANY)];
}

static int64_t hk_int(hk_src *s, int64_t minimum, int has_min) {
  static const int64_t hostile[] = {-1, -2, -7, 1 << 20, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 1 << 30, 100000};
  uint32_t k = hk_pick(s, 8);
  int64_t v;
  if (k < 6)
    v = (int64_t)hk_pick(s, 9) - (k == 0 ? 2 : 0); /* -2..8, mostly 0..8 */
  else
    v = hostile[hk_pick(s, (uint32_t)(sizeof hostile / sizeof hostile[0]))];
  if (has_min && v < minimum && hk_pick(s, 4)) v = minimum + (int64_t)hk_pick(s, 3);
  return v;
}

static float hk_float(hk_src *s) {
  static const float f[] = {0.f, 1.f, -1.f, 0.5f, 2.f, 1e-7f, 1e30f, -1e30f, 3.f, 0.1f};
  uint32_t k = hk_pick(s, 14);
  if (k < 10) return f[k];
  if (k == 10) return NAN;
  if (k == 11) return INFINITY;
  if (k == 12) return -INFINITY;
  return -0.f;
}

static size_t hk_string(hk_src *s, char *buf, size_t cap, const Tensorflow__AttrValue *allowed) {
  static const char *const odd[] = {"", "SAME", "VALID", "EXPLICIT", "NHWC", "NCHW", "NDHWC", "NCDHW", "x",
                                    "ab,c", "HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN", "MIN_COMBINED", "SCALED",
                                    "bilinear", "nearest", "i,j->ij", "...ij,jk->...ik", "\xff\xfe", "%s%n", "UTF-8"};
  if (allowed && allowed->list && allowed->list->n_s > 0 && hk_pick(s, 8)) {
    ProtobufCBinaryData b = allowed->list->s[hk_pick(s, (uint32_t)allowed->list->n_s)];
    size_t l = b.len < cap ? b.len : cap;
    if (l) memcpy(buf, b.data, l);
    return l;
  }
  uint32_t k = hk_pick(s, 24);
  if (k < 21) {
    size_t l = strlen(odd[k]);
    memcpy(buf, odd[k], l);
    return l;
  }
  size_t l = hk_pick(s, (uint32_t)(cap < 16 ? cap : 16));
  for (size_t i = 0; i < l; i++) buf[i] = (char)hk_pick(s, 256);
  return l;
}

/* fills an element of dtype t at p */
static void hk_value(hk_src *s, int t, void *p) {
  uint32_t k = hk_pick(s, 16);
  int64_t iv;
  static const int64_t ints[] = {0, 1, 2, 3, -1, 4, 7, 8, -2, 5, 1 << 20, INT32_MAX, INT32_MIN, -1000000, 6, 1};
  iv = ints[k];
  if (k >= 10 && hk_pick(s, 2)) iv = ints[hk_pick(s, 10)]; /* the huge ones half as often */
  double dv;
  switch (hk_pick(s, 12)) {
    case 0: dv = NAN; break;
    case 1: dv = INFINITY; break;
    case 2: dv = -INFINITY; break;
    case 3: dv = 1e300; break;
    case 4: dv = -0.0; break;
    default: dv = (double)iv + (hk_pick(s, 2) ? 0.5 : 0.0); break;
  }
  switch (t) {
    case SM_FLOAT: *(float *)p = (float)dv; break;
    case SM_DOUBLE: *(double *)p = dv; break;
    case SM_COMPLEX64: ((float *)p)[0] = (float)dv, ((float *)p)[1] = (float)iv; break;
    case SM_COMPLEX128: ((double *)p)[0] = dv, ((double *)p)[1] = (double)iv; break;
    case SM_INT32: case SM_QINT32: *(int32_t *)p = (int32_t)iv; break;
    case SM_INT64: *(int64_t *)p = k == 15 ? INT64_MIN : iv; break;
    case SM_UINT32: *(uint32_t *)p = (uint32_t)iv; break;
    case SM_UINT64: *(uint64_t *)p = (uint64_t)iv; break;
    case SM_INT16: case SM_QINT16: *(int16_t *)p = (int16_t)iv; break;
    case SM_UINT16: case SM_QUINT16: *(uint16_t *)p = (uint16_t)iv; break;
    case SM_INT8: case SM_QINT8: *(int8_t *)p = (int8_t)iv; break;
    case SM_UINT8: case SM_QUINT8: *(uint8_t *)p = (uint8_t)iv; break;
    case SM_BOOL: *(uint8_t *)p = (uint8_t)(iv & 1); break;
    case SM_HALF: { /* NaN, Inf, 1, -1, 0, max, small */
      static const uint16_t h[] = {0x7e00, 0x7c00, 0x3c00, 0xbc00, 0x0000, 0x7bff, 0x0001, 0x4000};
      *(uint16_t *)p = h[hk_pick(s, 8)];
      break;
    }
    case SM_BFLOAT16: {
      static const uint16_t b[] = {0x7fc0, 0x7f80, 0x3f80, 0xbf80, 0x0000, 0x7f7f, 0x0001, 0x4000};
      *(uint16_t *)p = b[hk_pick(s, 8)];
      break;
    }
    default: { /* any other fixed-size dtype: raw bytes */
      size_t n = sm_dtype_size(t);
      for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)hk_pick(s, 256);
    }
  }
}

/* A new tensor of dtype t with a hostile shape and values; NULL when t cannot be made. */
static sm_tensor *hk_tensor(hk_src *s, int t) {
  int rank = (int)hk_pick(s, 10);
  rank = rank < 3 ? 0 : rank < 6 ? 1 : rank < 8 ? 2 : rank - 5; /* 0, 1, 2 mostly; up to 4 */
  if (rank == 4 && hk_pick(s, 2)) rank = 5;
  int64_t dims[5] = {0};
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    uint32_t k = hk_pick(s, 12);
    dims[i] = k < 9 ? (int64_t)k : k < 11 ? (int64_t)hk_pick(s, 4) + 1 : 0;
  }
  /* inputs that agree are what reaches a kernel's inner loops: often the previous input's shape
   * (now and then one dim off), or a vector as long as its rank (a shape, a permutation) */
  uint32_t same = s->prev_rank >= 0 ? hk_pick(s, 8) : 7;
  if (same < 4) {
    rank = s->prev_rank;
    memcpy(dims, s->prev_dims, sizeof dims);
    if (same == 3 && rank > 0) dims[hk_pick(s, (uint32_t)rank)] = hk_pick(s, 4);
  } else if (same == 4) {
    rank = 1;
    dims[0] = s->prev_rank;
  }
  for (int i = 0; i < rank; i++) n *= dims[i];
  if (n > HK_MAX_ELEMS) { /* keep it small: shrink dims until it fits */
    n = 1;
    for (int i = 0; i < rank; i++) {
      if (n * dims[i] > HK_MAX_ELEMS) dims[i] = 1;
      n *= dims[i];
    }
  }
  /* now and then a huge dim beside a zero one (no elements, but products overflow) */
  if (n == 0 && rank >= 2 && hk_pick(s, 4) == 0) {
    for (int i = 0; i < rank; i++)
      if (dims[i] != 0) {
        dims[i] = hk_pick(s, 2) ? ((int64_t)1 << 31) : ((int64_t)1 << 40);
        break;
      }
  }
  if (n > 0 || rank < 2) {
    s->prev_rank = rank;
    memcpy(s->prev_dims, dims, sizeof dims);
  }
  sm_tensor *out = NULL;
  sm_status *st = sm_tensor_new(t, rank, dims, &out);
  if (st) {
    sm_status_free(st);
    return NULL;
  }
  if (t == SM_STRING) {
    char buf[32];
    for (int64_t i = 0; i < n; i++) {
      size_t l = hk_string(s, buf, sizeof buf, NULL);
      sm_status_free(sm_tensor_set_string(out, i, buf, l));
    }
    return out;
  }
  size_t es = sm_dtype_size(t);
  uint8_t *p = sm_tensor_data(out);
  if (es && p)
    for (int64_t i = 0; i < n; i++) hk_value(s, t, p + (size_t)i * es);
  return out;
}

/* Nonzero: each case's inputs are described on stderr before it runs (the driver's verbose mode). */
static int hk_verbose;
static void hk_describe(const char *name, const sm_tensor *t) {
  int r = sm_tensor_rank(t);
  fprintf(stderr, "  %s: %s [", name, sm_dtype_name(sm_tensor_dtype(t)));
  for (int i = 0; i < r; i++) fprintf(stderr, "%s%lld", i ? "," : "", (long long)sm_tensor_dims(t)[i]);
  fprintf(stderr, "]");
  int64_t n = sm_tensor_num_elements(t);
  int dt = sm_tensor_dtype(t);
  for (int64_t i = 0; i < n && i < 8; i++) {
    const void *p = (const uint8_t *)sm_tensor_data(t) + (size_t)i * sm_dtype_size(dt);
    if (dt == SM_INT32) fprintf(stderr, " %d", *(const int32_t *)p);
    else if (dt == SM_INT64) fprintf(stderr, " %lld", (long long)*(const int64_t *)p);
    else if (dt == SM_FLOAT) fprintf(stderr, " %g", *(const float *)p);
    else if (dt == SM_DOUBLE) fprintf(stderr, " %g", *(const double *)p);
  }
  fprintf(stderr, "\n");
}

/* What one case did (for the driver's counts). */
enum { HK_SKIPPED = 0, HK_REFUSED = 1, HK_RAN_OK = 2, HK_RAN_ERROR = 3 };

static void hk_touch(const sm_tensor *t) {
  volatile uint8_t sink = 0;
  const uint8_t *p = sm_tensor_data(t);
  size_t nb = sm_tensor_nbytes(t);
  if (sm_tensor_dtype(t) == SM_STRING) {
    int64_t n = sm_tensor_num_elements(t);
    for (int64_t k = 0; k < n; k++) {
      size_t l = 0;
      const char *e = sm_tensor_string(t, k, &l);
      if (e && l) sink ^= (uint8_t)(e[0] ^ e[l - 1]);
    }
  } else if (p && nb) {
    for (size_t i = 0; i < nb; i += 4096) sink ^= p[i];
    sink ^= p[nb - 1];
  }
  (void)sink;
}

/* The op names a case may pick (registered, with an OpDef, not skipped), sorted; built once. */
static const char **hk_ops;
static int hk_nops;
static void hk_init(void) {
  if (hk_ops) return;
  int n = 0;
  const char *const *all = sm__kernel_ops(&n);
  hk_ops = calloc((size_t)n + 1, sizeof *hk_ops);
  if (!hk_ops) abort();
  for (int i = 0; i < n; i++) {
    if (hk_skip(all[i]) || all[i][0] == '_') continue;
    const Tensorflow__OpDef *d = sm__builtin_op_def(all[i]);
    if (!d) continue;
    int ok = 1;
    for (size_t a = 0; a < d->n_input_arg; a++) {
      const Tensorflow__OpDef__ArgDef *arg = d->input_arg[a];
      if (arg->is_ref || (arg->type && !hk_feedable((int)arg->type))) ok = 0;
    }
    if (ok) hk_ops[hk_nops++] = all[i];
  }
}

/* One attr def's value, set on op (or left to its default). types/tnames remember the type attrs
 * set (for inputs typed by them); lists of types likewise, and ints (number attrs). */
typedef struct {
  const char *name;
  int kind; /* 0 type, 1 int, 2 list(type) */
  int64_t i;
  int types[8];
  int ntypes;
} hk_set;

static const hk_set *hk_find(const hk_set *set, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(set[i].name, name)) return &set[i];
  return NULL;
}

static int hk_is_number_attr(const Tensorflow__OpDef *d, const char *name) {
  for (size_t a = 0; a < d->n_input_arg; a++)
    if (d->input_arg[a]->number_attr && !strcmp(d->input_arg[a]->number_attr, name)) return 1;
  for (size_t a = 0; a < d->n_output_arg; a++)
    if (d->output_arg[a]->number_attr && !strcmp(d->output_arg[a]->number_attr, name)) return 1;
  return 0;
}

static void hk_set_attr(hk_src *s, sm_op *op, const Tensorflow__OpDef *d, const Tensorflow__OpDef__AttrDef *a,
                        hk_set *set, int *nset) {
  const char *ty = a->type;
  const Tensorflow__AttrValue *dv = a->default_value;
  hk_set *rec = *nset < 32 ? &set[*nset] : NULL;
  if (!strcmp(ty, "type")) {
    int t = (dv && dv->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE && hk_pick(s, 3) == 0)
                ? (int)dv->type
                : hk_pick_type(s, a->allowed_values);
    sm_op_attr_type(op, a->name, t);
    if (rec) *rec = (hk_set){.name = a->name, .kind = 0, .types = {t}, .ntypes = 1}, (*nset)++;
    return;
  }
  if (!strcmp(ty, "int") && hk_is_number_attr(d, a->name)) {
    int64_t v = (int64_t)hk_pick(s, 5);
    if (a->has_minimum && v < a->minimum && hk_pick(s, 8)) v = a->minimum;
    sm_op_attr_int(op, a->name, v);
    if (rec) *rec = (hk_set){.name = a->name, .kind = 1, .i = v}, (*nset)++;
    return;
  }
  if (!strcmp(ty, "list(type)")) {
    int n = (int)hk_pick(s, 5);
    if (a->has_minimum && n < a->minimum && hk_pick(s, 8)) n = (int)(a->minimum < 8 ? a->minimum : 8);
    if (n > 8) n = 8;
    int ts[8];
    for (int i = 0; i < n; i++) ts[i] = hk_pick_type(s, a->allowed_values);
    sm_op_attr_type_list(op, a->name, ts, (size_t)n);
    if (rec) {
      *rec = (hk_set){.name = a->name, .kind = 2, .ntypes = n};
      memcpy(rec->types, ts, (size_t)n * sizeof *ts);
      (*nset)++;
    }
    return;
  }
  if (dv && hk_pick(s, 3) == 0) return; /* its default */
  if (!strcmp(ty, "int")) {
    sm_op_attr_int(op, a->name, hk_int(s, a->minimum, a->has_minimum));
  } else if (!strcmp(ty, "float")) {
    sm_op_attr_float(op, a->name, hk_float(s));
  } else if (!strcmp(ty, "bool")) {
    sm_op_attr_bool(op, a->name, (int)hk_pick(s, 2));
  } else if (!strcmp(ty, "string")) {
    char buf[32];
    size_t l = hk_string(s, buf, sizeof buf, a->allowed_values);
    sm_op_attr_string(op, a->name, buf, l);
  } else if (!strcmp(ty, "shape")) {
    int rank = (int)hk_pick(s, 6) - 1;
    int64_t dims[4];
    for (int i = 0; i < rank; i++) dims[i] = (int64_t)hk_pick(s, 10) - 1;
    sm_op_attr_shape(op, a->name, rank, dims);
  } else if (!strcmp(ty, "list(int)")) {
    int n = (int)hk_pick(s, 7);
    int64_t v[6];
    for (int i = 0; i < n; i++) v[i] = hk_pick(s, 4) ? (int64_t)hk_pick(s, 5) - (hk_pick(s, 4) == 0) : hk_int(s, 0, 0);
    sm_op_attr_int_list(op, a->name, v, (size_t)n);
  } else if (!strcmp(ty, "list(float)")) {
    int n = (int)hk_pick(s, 6);
    float v[5];
    for (int i = 0; i < n; i++) v[i] = hk_float(s);
    sm_op_attr_float_list(op, a->name, v, (size_t)n);
  } else if (!strcmp(ty, "list(string)")) {
    int n = (int)hk_pick(s, 4);
    char b[3][32];
    const char *v[3];
    for (int i = 0; i < n; i++) {
      size_t l = hk_string(s, b[i], sizeof b[i] - 1, NULL);
      b[i][l] = 0;
      v[i] = b[i];
    }
    sm_op_attr_string_list(op, a->name, v, (size_t)n);
  } else if (!strcmp(ty, "list(shape)")) {
    int n = (int)hk_pick(s, 4);
    int ranks[3];
    int64_t dd[3][3];
    const int64_t *dp[3];
    for (int i = 0; i < n; i++) {
      ranks[i] = (int)hk_pick(s, 4) - 1;
      for (int j = 0; j < 3; j++) dd[i][j] = (int64_t)hk_pick(s, 6) - 1;
      dp[i] = dd[i];
    }
    sm_op_attr_shape_list(op, a->name, ranks, dp, (size_t)n);
  } else if (!strcmp(ty, "tensor")) {
    sm_tensor *t = hk_tensor(s, hk_pick_type(s, NULL));
    if (t) sm_op_attr_tensor(op, a->name, t);
    sm_tensor_free(t);
  }
  /* func, list(func): left unset (the builder refuses the node when it has no default) */
}

/* Runs one case drawn from s on op (NULL: the source picks one). Returns HK_*; *op_out (may be
 * NULL) names the op. Never aborts on the op's behalf: a crash is the sanitizers' to report. */
static int hk_run_case(hk_src *s, const char *op_name, const char **op_out) {
  hk_init();
  if (!op_name) {
    if (hk_nops == 0) return HK_SKIPPED;
    op_name = hk_ops[hk_pick(s, (uint32_t)hk_nops)];
  }
  if (op_out) *op_out = op_name;
  const Tensorflow__OpDef *d = sm__builtin_op_def(op_name);
  if (!d || hk_skip(op_name)) return HK_SKIPPED;
  s->prev_rank = -1;
  sm_graph *g = NULL;
  if (sm_graph_new(&g)) abort();
  hk_set set[32];
  int nset = 0;
  sm_op *op = sm_op_begin(g, op_name, "op");
  for (size_t a = 0; a < d->n_attr; a++) hk_set_attr(s, op, d, d->attr[a], set, &nset);

  /* the inputs: one Placeholder each, fed a generated tensor */
  sm_tensor *feeds[HK_MAX_INPUTS];
  char names[HK_MAX_INPUTS][16];
  const char *feed_names[HK_MAX_INPUTS];
  int nin = 0, result = HK_REFUSED;
  for (size_t a = 0; a < d->n_input_arg; a++) {
    const Tensorflow__OpDef__ArgDef *arg = d->input_arg[a];
    int count = 1, types[8];
    const hk_set *r;
    if (arg->type_list_attr && arg->type_list_attr[0]) {
      r = hk_find(set, nset, arg->type_list_attr);
      count = r ? r->ntypes : 0;
      for (int i = 0; i < count; i++) types[i] = r->types[i];
    } else {
      if (arg->number_attr && arg->number_attr[0]) {
        r = hk_find(set, nset, arg->number_attr);
        count = r ? (int)r->i : 1;
        if (count < 0 || count > 8) count = 0;
      }
      int t = (int)arg->type;
      if (arg->type_attr && arg->type_attr[0]) {
        r = hk_find(set, nset, arg->type_attr);
        t = r ? r->types[0] : SM_FLOAT;
      }
      for (int i = 0; i < count; i++) types[i] = t;
    }
    for (int i = 0; i < count; i++) {
      if (nin == HK_MAX_INPUTS || !hk_feedable(types[i])) goto out;
      snprintf(names[nin], sizeof names[nin], "in%d", nin);
      const char *pn = NULL;
      sm_status *st = sm_graph_placeholder(g, names[nin], types[i], -1, NULL, &pn);
      if (st) {
        sm_status_free(st);
        goto out;
      }
      feeds[nin] = hk_tensor(s, types[i]);
      if (!feeds[nin]) goto out;
      if (hk_verbose) hk_describe(names[nin], feeds[nin]);
      feed_names[nin] = names[nin];
      sm_op_input(op, names[nin]);
      nin++;
    }
  }
  {
    sm_status *st = sm_op_finish(op, NULL);
    op = NULL;
    if (st) {
      sm_status_free(st);
      goto out;
    }
  }
  /* the outputs: as many as the OpDef says for these attrs */
  int nout = 0;
  for (size_t a = 0; a < d->n_output_arg; a++) {
    const Tensorflow__OpDef__ArgDef *arg = d->output_arg[a];
    const hk_set *r;
    int count = 1;
    if (arg->type_list_attr && arg->type_list_attr[0]) {
      r = hk_find(set, nset, arg->type_list_attr);
      count = r ? r->ntypes : 0;
    } else if (arg->number_attr && arg->number_attr[0]) {
      r = hk_find(set, nset, arg->number_attr);
      count = r ? (int)r->i : 1;
    }
    if (count < 0) count = 0;
    nout += count;
  }
  if (nout > HK_MAX_OUTPUTS) nout = HK_MAX_OUTPUTS;
  {
    char fnames[HK_MAX_OUTPUTS][16];
    const char *fetch[HK_MAX_OUTPUTS];
    sm_tensor *outs[HK_MAX_OUTPUTS] = {0};
    const char *target = "op";
    for (int i = 0; i < nout; i++) {
      snprintf(fnames[i], sizeof fnames[i], "op:%d", i);
      fetch[i] = fnames[i];
    }
    Tensorflow__MetaGraphDef mg = TENSORFLOW__META_GRAPH_DEF__INIT;
    mg.graph_def = (Tensorflow__GraphDef *)sm_graph_def(g);
    sm_session *sess = NULL;
    sm_status *st = sm__session_new(&mg, NULL, 1, &sess);
    if (!st) {
      sm_run_options ro = {.deadline_us = sm_monotonic_us() + HK_DEADLINE_US, .max_run_bytes = HK_RUN_BYTES};
      st = sm__session_run_opts(sess, feed_names, feeds, nin, fetch, nout, nout ? NULL : &target, nout ? 0 : 1,
                                outs, &ro);
      result = st ? HK_RAN_ERROR : HK_RAN_OK;
      if (!st)
        for (int i = 0; i < nout; i++) {
          if (outs[i]) hk_touch(outs[i]);
          sm_tensor_free(outs[i]);
        }
    }
    if (st) {
      if (!sm_status_message(st)[0]) abort(); /* an error must say what */
      sm_status_free(st);
    }
    sm__session_free(sess);
  }
out:
  if (op) sm_status_free(sm_op_finish(op, NULL));
  for (int i = 0; i < nin; i++) sm_tensor_free(feeds[i]);
  sm_graph_free(g);
  return result;
}

#endif

/* uniform_quant_conv.c - TF's uniform quantized convolutions (the StableHLO-shaped ones quantized
 * SavedModels carry next to quantize_uniform.c's dots): UniformQuantizedConvolution (qint8 x qint8
 * -> qint32, per-tensor lhs, per-tensor or per-output-channel rhs and output) and
 * UniformQuantizedConvolutionHybrid (float x qint8 -> float, the float lhs quantized per batch
 * element on the fly, TFLite's asymmetric way). Every attr of TF's UniformQuantizedConvolutionParams
 * (uniform_quant_ops_params.cc): window_strides, padding VALID / SAME / EXPLICIT with
 * explicit_padding, lhs_dilation, rhs_dilation, feature_group_count, batch_group_count and
 * dimension_numbers (a serialized UniformQuantizedConvolutionDimensionNumbersAttr, read here by a
 * small wire-format reader). The arithmetic is uniform_quantized_convolution_ops.cc's: int32
 * accumulation of (lhs - lhs_zp) * (rhs - rhs_zp) wrapping like x86, then TF's fixed-point
 * requantization (or acc * lhs_scale * rhs_scale in float for the hybrid). Padding and dilation
 * holes hold the lhs zero point in TF, so they add nothing and are skipped here instead of being
 * materialized (a hostile lhs_dilation costs no memory). TF's checks and messages; where TF would
 * divide by zero (an rhs input feature size of 0), write out of bounds (an output_feature_dimension
 * outside the rank, which TF does not check) or transpose by a non-permutation, a clean error.
 * Checked against TensorFlow by tests/unit/test_ops_qconv.c (tools/gen_qconv_cases.py). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/array_internal.h"
#include "ops/math_int.h"
#include "ops/quant_int.h"
#include "ops/uniform_quant_int.h"

#define MAXSP 8 /* spatial dims kept; a longer list only counts (its size is an error later) */

typedef struct dimnums {
  int64_t ib, if_, kif, kof, ob, of;
  int64_t is[MAXSP], ks[MAXSP], os[MAXSP];
  size_t nis, nks, nos;
} dimnums;

typedef struct conv_state {
  const char *op;
  int hybrid, padding; /* padding: 0 VALID, 1 SAME, 2 EXPLICIT */
  int64_t strides[MAXSP], ldil[MAXSP], rdil[MAXSP], pads[2 * MAXSP];
  size_t nstrides, nldil, nrdil, npads;
  int64_t fgc, bgc, rax, oax, lo, hi;
  dimnums dn;
} conv_state;

/* ---- attrs ------------------------------------------------------------------------------------ */

static sm_status *int32_attr(const conv_state *s, const char *name, int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: Attr %s has value %lld out of range for an int32", s->op, name, (long long)v);
  return NULL;
}

static sm_status *list_attr(const sm_node *n, conv_state *s, const char *name, int64_t *dst, size_t cap, size_t *count) {
  *count = 0;
  if (!sm__node_attr(n, name)) return NULL;
  const int64_t *v;
  size_t c;
  sm_status *st = sm__node_attr_ints(n, name, &v, &c);
  for (size_t i = 0; !st && i < c; i++) {
    st = int32_attr(s, name, v[i]);
    if (i < cap) dst[i] = v[i];
  }
  *count = c;
  return st;
}

static sm_status *int_attr(const sm_node *n, conv_state *s, const char *name, int64_t dflt, int64_t *v) {
  *v = dflt;
  sm_status *st = sm__node_attr(n, name) ? sm__node_attr_int(n, name, v) : NULL;
  return st ? st : int32_attr(s, name, *v);
}

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int sh = 0; sh < 64 && *p < end; sh += 7) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

static void dn_add(int64_t *arr, size_t *n, uint64_t v) {
  if (*n < MAXSP) arr[*n] = (int64_t)v;
  (*n)++;
}

/* a serialized UniformQuantizedConvolutionDimensionNumbersAttr: fields 1..9, int64, the
 * repeated ones (3, 6, 9) packed or not; unknown fields skipped as protobuf does; -1 when malformed */
static int parse_dimnums(const uint8_t *p, size_t len, dimnums *d) {
  const uint8_t *end = p + len;
  int64_t *single[10] = {0, &d->ib, &d->if_, NULL, &d->kif, &d->kof, NULL, &d->ob, &d->of, NULL};
  int64_t *rep[10] = {0, 0, 0, d->is, 0, 0, d->ks, 0, 0, d->os};
  size_t *repn[10] = {0, 0, 0, &d->nis, 0, 0, &d->nks, 0, 0, &d->nos};
  while (p < end) {
    uint64_t key, v;
    if (varint(&p, end, &key)) return -1;
    uint64_t field = key >> 3, wt = key & 7;
    if (field == 0) return -1;
    int known = field <= 9;
    if (wt == 0) {
      if (varint(&p, end, &v)) return -1;
      if (known && single[field]) *single[field] = (int64_t)v;
      else if (known) dn_add(rep[field], repn[field], v);
    } else if (wt == 2) {
      if (varint(&p, end, &v) || v > (uint64_t)(end - p)) return -1;
      if (known && single[field]) return -1;
      const uint8_t *e = p + v;
      if (known) {
        while (p < e) {
          uint64_t x;
          if (varint(&p, e, &x)) return -1;
          dn_add(rep[field], repn[field], x);
        }
      }
      p = e;
    } else if (wt == 1 || wt == 5) {
      if (known || (size_t)(end - p) < (wt == 1 ? 8u : 4u)) return -1;
      p += wt == 1 ? 8 : 4;
    } else {
      return -1;
    }
  }
  return 0;
}

static sm_status *conv_prepare_common(const sm_node *n, void **state, int hybrid) {
  conv_state s = {0};
  s.op = hybrid ? "UniformQuantizedConvolutionHybrid" : "UniformQuantizedConvolution";
  s.hybrid = hybrid;
  sm_status *st = hybrid ? sm__uq_want_type(n, s.op, "Tlhs", SM_FLOAT) : sm__uq_want_type(n, s.op, "Tin", SM_QINT8);
  if (!st) st = hybrid ? sm__uq_want_type(n, s.op, "Trhs", SM_QINT8) : NULL;
  if (!st) st = sm__uq_want_type(n, s.op, "Tout", hybrid ? SM_FLOAT : SM_QINT32);
  if (!st) st = list_attr(n, &s, "window_strides", s.strides, MAXSP, &s.nstrides);
  if (!st) st = list_attr(n, &s, "lhs_dilation", s.ldil, MAXSP, &s.nldil);
  if (!st) st = list_attr(n, &s, "rhs_dilation", s.rdil, MAXSP, &s.nrdil);
  if (!st) st = int_attr(n, &s, "batch_group_count", 1, &s.bgc);
  if (!st) st = int_attr(n, &s, "feature_group_count", 1, &s.fgc);
  const char *pad = "";
  size_t plen = 0;
  if (!st) st = sm__node_attr_string(n, "padding", &pad, &plen);
  if (!st) st = list_attr(n, &s, "explicit_padding", s.pads, 2 * MAXSP, &s.npads);
  if (st) return st;
  if (plen == 8 && !memcmp(pad, "EXPLICIT", 8)) s.padding = 2;
  else if (plen == 4 && !memcmp(pad, "SAME", 4)) s.padding = 1;
  else if (plen == 5 && !memcmp(pad, "VALID", 5)) s.padding = 0;
  else
    return sm_status_new(SM_INVALID_ARGUMENT, "padding Attr must be one of [EXPLICIT | SAME | VALID], but given: %.*s",
                         (int)(plen > 200 ? 200 : plen), pad);
  if (s.padding != 2 && s.npads)
    return sm_status_new(SM_INVALID_ARGUMENT, "If padding Attr is not 'EXPLICIT', explicit_padding Attr must be empty. Given "
                         "padding %.*s and explicit_padding of size %zu", (int)plen, pad, s.npads);
  const char *dn = NULL;
  size_t dlen = 0;
  st = sm__node_attr(n, "dimension_numbers") ? sm__node_attr_string(n, "dimension_numbers", &dn, &dlen) : NULL;
  if (st) return st;
  if (dlen && parse_dimnums((const uint8_t *)dn, dlen, &s.dn))
    return sm_status_new(SM_INVALID_ARGUMENT, "Error parsing convolution dimension numbers.");
  if (!hybrid) {
    sm__uq_params l, o;
    st = sm__uq_read_params(n, "lhs_", &l);
    if (!st) st = sm__uq_read_params(n, "output_", &o);
    if (st) return st;
    if (l.axis != -1) return sm_status_new(SM_INVALID_ARGUMENT, "lhs_quantization_axis Attr must be -1 (per-tensor).");
    s.oax = o.axis, s.lo = o.lo, s.hi = o.hi;
  }
  s.rax = -1;
  st = sm__node_attr(n, "rhs_quantization_axis") ? sm__node_attr_int(n, "rhs_quantization_axis", &s.rax) : NULL;
  if (st) return st;
  conv_state *p = malloc(sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *p = s;
  *state = p;
  return NULL;
}

static sm_status *conv_prepare(const sm_node *n, void **state) { return conv_prepare_common(n, state, 0); }
static sm_status *hybrid_prepare(const sm_node *n, void **state) { return conv_prepare_common(n, state, 1); }

/* ---- shapes: ValidateOrFillParamsAndValidateShape, CalculateOutputShape ----------------------- */

/* the call's resolved parameters, spatial dim i at index i */
typedef struct conv_geo {
  int rank, nsp;
  int64_t strides[MAXSP], ldil[MAXSP], rdil[MAXSP], pads[2 * MAXSP];
  dimnums dn;
  int64_t od[SM_MAX_RANK];
} conv_geo;

static int64_t dilated(int64_t size, int64_t d) { return size == 0 ? 0 : size + (d - 1) * (size - 1); }

static char *join(const int64_t *v, size_t n, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n && i < MAXSP && k + 24 < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)v[i]);
  return buf;
}

static sm_status *fill_list(const char *name, const char *what, const int64_t *v, size_t n, int nsp, int64_t *dst) {
  char b[256];
  if (n == 0) {
    for (int i = 0; i < nsp; i++) dst[i] = 1;
    return NULL;
  }
  if (n != (size_t)nsp) return sm_status_new(SM_INVALID_ARGUMENT, "Size of %s Attr must be dims - 2.", name);
  for (size_t i = 0; i < n; i++)
    if (v[i] < 1) return sm_status_new(SM_INVALID_ARGUMENT, "All elements of %s must be >= 1. Given %s", what, join(v, n, b, sizeof b));
  memcpy(dst, v, n * sizeof *v);
  return NULL;
}

static sm_status *valid_dim(int64_t rank, int64_t d) {
  if (d < 0 || d >= rank)
    return sm_status_new(SM_INVALID_ARGUMENT, "Each dimension number must be in region [0, rank). Given rank %lld and "
                         "dimension number value %lld", (long long)rank, (long long)d);
  return NULL;
}

static sm_status *valid_spatial(int64_t rank, const int64_t *v, size_t n) {
  if (n != (size_t)(rank - 2))
    return sm_status_new(SM_INVALID_ARGUMENT, "Spatial dimensions size must be rank - 2. Given rank %lld and spatial dimensions "
                         "size %zu", (long long)rank, n);
  sm_status *st = NULL;
  for (size_t i = 0; !st && i < n; i++) st = valid_dim(rank, v[i]);
  return st;
}

/* TF does not check these (it would transpose by a non-permutation or write past its shape buffer) */
static sm_status *permutation(const char *op, const char *what, int rank, int64_t a, int64_t b, const int64_t *sp) {
  unsigned char seen[SM_MAX_RANK] = {0};
  int64_t all[SM_MAX_RANK];
  all[0] = a, all[1] = b;
  for (int i = 2; i < rank; i++) all[i] = sp[i - 2];
  for (int i = 0; i < rank; i++) {
    if (all[i] < 0 || all[i] >= rank || seen[all[i]]++)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: the %s dimension numbers must be a permutation of [0, rank)", op, what);
  }
  return NULL;
}

static sm_status *resolve(const conv_state *s, const sm_tensor *l, const sm_tensor *r, conv_geo *g) {
  char a[128], b[128];
  int rank = sm_tensor_rank(l);
  const int64_t *ld = sm_tensor_dims(l), *rd = sm_tensor_dims(r);
  if (rank != sm_tensor_rank(r))
    return sm_status_new(SM_INVALID_ARGUMENT, "lhs and rhs must have same dims. Given lhs and rhs of shapes: %s%s",
                         sm__array_shape_str(l, a, sizeof a), sm__array_shape_str(r, b, sizeof b));
  if (rank <= 2) return sm_status_new(SM_INVALID_ARGUMENT, "lhs and rhs shape dims must be at least 3. Given: %d", rank);
  int nsp = rank - 2;
  if (nsp > MAXSP) return sm_status_new(SM_UNIMPLEMENTED, "%s: at most %d spatial dimensions, given %d", s->op, MAXSP, nsp);
  g->rank = rank, g->nsp = nsp;
  sm_status *st = fill_list("window_strides", "window_strides", s->strides, s->nstrides, nsp, g->strides);
  if (!st) st = fill_list("lhs_dilation", "lhs_dilation", s->ldil, s->nldil, nsp, g->ldil);
  if (!st) st = fill_list("rhs_dilation", "rhs_dilation", s->rdil, s->nrdil, nsp, g->rdil);
  if (st) return st;
  g->dn = s->dn;
  dimnums *d = &g->dn;
  if (d->nis == 0) { /* no dimension numbers: (batch, feature, spatial...) everywhere */
    d->ib = d->ob = d->kof = 0;
    d->if_ = d->of = d->kif = 1;
    for (int i = 0; i < nsp; i++) {
      d->is[i] = 2 + i;
      dn_add(d->ks, &d->nks, (uint64_t)(2 + i));
      dn_add(d->os, &d->nos, (uint64_t)(2 + i));
    }
    d->nis = (size_t)nsp;
    if (d->nks > (size_t)nsp || d->nos > (size_t)nsp)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: dimension_numbers give kernel or output spatial dimensions without input "
                           "spatial dimensions", s->op);
  } else {
    st = valid_dim(rank, d->ib);
    if (!st) st = valid_dim(rank, d->if_);
    if (!st) st = valid_spatial(rank, d->is, d->nis);
    if (!st) st = valid_dim(rank, d->kif);
    if (!st) st = valid_dim(rank, d->kof);
    if (!st) st = valid_spatial(rank, d->ks, d->nks);
    if (!st) st = valid_dim(rank, d->ob);
    if (!st) st = valid_spatial(rank, d->os, d->nos);
    if (st) return st;
  }
  st = permutation(s->op, "input", rank, d->ib, d->if_, d->is);
  if (!st) st = permutation(s->op, "kernel", rank, d->kof, d->kif, d->ks);
  if (!st) st = permutation(s->op, "output", rank, d->ob, d->of, d->os);
  if (st) return st;
  if (s->fgc <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "feature_group_count must be a positive integer, given: %lld", (long long)s->fgc);
  int64_t lf = ld[d->if_], rif = rd[d->kif], rof = rd[d->kof];
  if (lf % s->fgc)
    return sm_status_new(SM_INVALID_ARGUMENT, "feature_group_count must divide lhs feature dimension size, but %lld does not "
                         "divide %lld", (long long)s->fgc, (long long)lf);
  if (rif == 0) /* TF divides by it */
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: the rhs input feature dimension size must not be 0 (TensorFlow divides by it)",
                         s->op);
  if (lf % rif)
    return sm_status_new(SM_INVALID_ARGUMENT, "rhs input feature dimension must divide lhs feature dimension size, but %lld does "
                         "not divide %lld", (long long)rif, (long long)lf);
  if (lf / s->fgc != rif)
    return sm_status_new(SM_INVALID_ARGUMENT, "lhs feature dimension size divided by feature_group_count must equal the rhs input "
                         "feature dimension size, but %lld / %lld != %lld", (long long)lf, (long long)s->fgc, (long long)rif);
  if (rof % s->fgc)
    return sm_status_new(SM_INVALID_ARGUMENT, "rhs output dimension size must be a multiple of feature_group_count, but %lld is "
                         "not a multiple of %lld", (long long)rof, (long long)s->fgc);
  if (s->bgc <= 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "batch_group_count Attr must be a positive integer. Given: %lld", (long long)s->bgc);
  if (ld[d->ib] % s->bgc)
    return sm_status_new(SM_INVALID_ARGUMENT, "batch_group_count must divide lhs batch dimension size, but %lld does not divide "
                         "%lld", (long long)s->bgc, (long long)ld[d->ib]);
  if (rof % s->bgc)
    return sm_status_new(SM_INVALID_ARGUMENT, "rhs output dimension size must be a multiple of batch_group_count, but %lld is not "
                         "a multiple of %lld", (long long)rof, (long long)s->bgc);
  /* ValidateOrFillPaddingList */
  if (s->padding == 2) {
    if (s->npads != (size_t)(2 * nsp))
      return sm_status_new(SM_INVALID_ARGUMENT, "Size of explicit_padding Attr must be 2 * (rank - 2). Given rank %d and "
                           "explicit_padding of size %zu", rank, s->npads);
    for (size_t i = 0; i < s->npads; i++)
      if (s->pads[i] < 0)
        return sm_status_new(SM_INVALID_ARGUMENT, "All explicit_padding elems must be >= 0, Given %s",
                             join(s->pads, s->npads, a, sizeof a));
    memcpy(g->pads, s->pads, s->npads * sizeof *s->pads);
  }
  for (int i = 0; i < nsp; i++) {
    int64_t ls = dilated(ld[d->is[i]], g->ldil[i]), rs = dilated(rd[d->ks[i]], g->rdil[i]), st_ = g->strides[i];
    if (s->padding == 0) g->pads[2 * i] = g->pads[2 * i + 1] = 0;
    if (s->padding == 1) {
      int64_t out = (ls + st_ - 1) / st_, total = (out - 1) * st_ + rs - ls;
      total = total > 0 ? total : 0;
      g->pads[2 * i] = total / 2, g->pads[2 * i + 1] = total - total / 2;
    }
  }
  /* CalculateOutputShape */
  g->od[d->ob] = ld[d->ib] / s->bgc;
  g->od[d->of] = rof;
  for (int i = 0; i < nsp; i++) {
    int64_t ls = dilated(ld[d->is[i]], g->ldil[i]), rs = dilated(rd[d->ks[i]], g->rdil[i]);
    int64_t num = ls + g->pads[2 * i] + g->pads[2 * i + 1] - rs + 1;
    g->od[d->os[i]] = (num + g->strides[i] - 1) / g->strides[i];
  }
  return NULL;
}

static sm_status *out_shape_ok(const conv_geo *g) { /* TensorShape::BuildTensorShape */
  for (int i = 0; i < g->rank; i++)
    if (g->od[i] < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Expected shape dimensions to be non-negative, got %lld", (long long)g->od[i]);
  return NULL;
}

static sm_status *rhs_axis(const conv_state *s, const conv_geo *g, const sm_tensor *r, const sm_tensor *rsc,
                           const sm_tensor *rzp) {
  if (s->rax != -1 && s->rax != g->dn.kof)
    return sm_status_new(SM_INVALID_ARGUMENT, "rhs_quantization_axis Attr must be -1 (per-tensor) or "
                         "dimension_numbers.kernel_output_feature_dimension (per-channel).");
  return sm__uq_axis_shape_valid(sm_tensor_rank(r), sm_tensor_dims(r), rsc, rzp, s->rax);
}

/* ---- the convolution -------------------------------------------------------------------------- */

static void strides_of(const int64_t *dims, int rank, int64_t a, int64_t b, const int64_t *sp, int64_t *cst, int64_t *csz) {
  int64_t st[SM_MAX_RANK], m = 1;
  for (int i = rank - 1; i >= 0; i--) st[i] = m, m *= dims[i];
  cst[0] = st[a], csz[0] = dims[a], cst[1] = st[b], csz[1] = dims[b];
  for (int i = 2; i < rank; i++) cst[i] = st[sp[i - 2]], csz[i] = dims[sp[i - 2]];
}

/* How the accumulators become outputs: the quantized op's requantization (one multiplier and shift
 * a channel, or one) or the hybrid's acc * lhs_scale[batch] * rhs_scale in float. */
typedef struct conv_out {
  int hybrid, pc, po;
  const int32_t *qm, *OZ; /* quantized: qm[2k], qm[2k + 1] multiplier and shift */
  int64_t lo, hi;
  const float *LS, *RS; /* hybrid */
} conv_out;

/* The convolution over lhs L (int8, its own layout), rhs R (int8), zero points LZ (one, or one a
 * lhs batch when hybrid) and RZ (one, or one an output feature), into Y (the output's layout). */
static sm_status *convolve(sm_kctx *ctx, const conv_state *s, const conv_geo *g, const int64_t *ld, const int8_t *L,
                           const int64_t *rd, const int8_t *R, const int32_t *LZ, const int32_t *RZ, const conv_out *co,
                           void *Y) {
  const dimnums *d = &g->dn;
  int nsp = g->nsp, rank = g->rank;
  int64_t lst[SM_MAX_RANK], rst[SM_MAX_RANK], ost[SM_MAX_RANK], lsz[SM_MAX_RANK], rsz[SM_MAX_RANK], osz[SM_MAX_RANK];
  strides_of(ld, rank, d->ib, d->if_, d->is, lst, lsz);
  strides_of(rd, rank, d->kof, d->kif, d->ks, rst, rsz);
  strides_of(g->od, rank, d->ob, d->of, d->os, ost, osz);
  int64_t OB = osz[0], OF = osz[1], KIF = rsz[1], KS = 1, OS = 1;
  for (int i = 0; i < nsp; i++) KS *= rsz[i + 2], OS *= osz[i + 2];
  if (OB == 0 || OF == 0 || OS == 0) return NULL;
  int64_t ofg_f = OF / s->fgc, ofg_b = OF / s->bgc;
  sm_status *st = NULL;
  /* each kernel spatial position: its indices and its rhs offset */
  int64_t *kpos = sm__kctx_scratch(ctx, (size_t)KS * (size_t)(nsp + 1) * sizeof *kpos + 1, &st);
  if (!kpos) return st;
  for (int64_t k = 0; k < KS; k++) {
    int64_t rem = k, off = 0;
    for (int i = nsp - 1; i >= 0; i--) {
      int64_t v = rem % rsz[i + 2];
      rem /= rsz[i + 2];
      kpos[k * (nsp + 1) + i] = v;
      off += v * rst[i + 2];
    }
    kpos[k * (nsp + 1) + nsp] = off;
  }
  int64_t opos[MAXSP];
  for (int64_t ob = 0; ob < OB; ob++)
    for (int64_t of = 0; of < OF; of++) {
      int64_t lb = (of / ofg_b) * OB + ob, fbase = (of / ofg_f) * KIF;
      uint32_t lz = (uint32_t)LZ[co->hybrid ? lb : 0], rz = (uint32_t)RZ[co->pc ? of : 0];
      memset(opos, 0, sizeof opos);
      for (int64_t o = 0; o < OS; o++) {
        uint32_t acc = 0;
        for (int64_t k = 0; k < KS; k++) {
          const int64_t *kp = kpos + k * (nsp + 1);
          int64_t off = lb * lst[0] + fbase * lst[1];
          int ok = 1;
          for (int i = 0; i < nsp && ok; i++) {
            int64_t p = opos[i] * g->strides[i] + kp[i] * g->rdil[i] - g->pads[2 * i];
            if (p < 0 || p % g->ldil[i] || p / g->ldil[i] >= lsz[i + 2]) ok = 0; /* padding or a dilation hole */
            else off += p / g->ldil[i] * lst[i + 2];
          }
          if (!ok) continue;
          const int8_t *lp = L + off, *rp = R + of * rst[0] + kp[nsp];
          for (int64_t f = 0; f < KIF; f++)
            acc += ((uint32_t)(int32_t)lp[f * lst[1]] - lz) * ((uint32_t)(int32_t)rp[f * rst[1]] - rz);
        }
        int64_t yo = ob * ost[0] + of * ost[1];
        for (int i = 0; i < nsp; i++) yo += opos[i] * ost[i + 2];
        if (co->hybrid) {
          ((float *)Y)[yo] = (float)(int32_t)acc * co->LS[lb] * co->RS[co->pc ? of : 0];
        } else {
          int64_t q = co->pc ? of : 0;
          ((int32_t *)Y)[yo] = sm__uq_requant((int32_t)acc, co->qm[2 * q], (int)co->qm[2 * q + 1], 0, co->OZ[co->po ? of : 0],
                                              co->lo, co->hi);
        }
        for (int i = nsp - 1; i >= 0; i--) { /* next output spatial position */
          if (++opos[i] < osz[i + 2]) break;
          opos[i] = 0;
        }
      }
    }
  sm__kctx_scratch_free(ctx, kpos);
  return NULL;
}

static sm_status *conv_compute(const void *state, sm_kctx *ctx) {
  const conv_state *s = state;
  const char *op = s->op;
  const sm_tensor *in[8];
  sm_status *st = NULL;
  static const int want[8] = {SM_QINT8, SM_QINT8, SM_FLOAT, SM_INT32, SM_FLOAT, SM_INT32, SM_FLOAT, SM_INT32};
  for (int i = 0; i < 8 && !st; i++) {
    in[i] = sm__kctx_input(ctx, i);
    st = sm__uq_want_input(ctx, op, i, want[i]);
  }
  if (st) return st;
  const sm_tensor *l = in[0], *r = in[1], *lsc = in[2], *lzp = in[3], *rsc = in[4], *rzp = in[5], *osc = in[6], *ozp = in[7];
  st = sm__uq_scales_positive(lsc, rsc, osc);
  if (st) return st;
  conv_geo g;
  st = resolve(s, l, r, &g);
  if (st) return st;
  st = sm__uq_lhs_scalar(lsc, lzp);
  if (st) return st;
  st = rhs_axis(s, &g, r, rsc, rzp);
  if (st) return st;
  if (s->oax != -1 && s->oax != g.dn.of)
    return sm_status_new(SM_INVALID_ARGUMENT, "output_quantization_axis Attr must be -1 (per-tensor) or "
                         "dimension_numbers.output_feature_dimension (per-channel).");
  st = out_shape_ok(&g);
  if (!st) st = sm__uq_axis_shape_valid(g.rank, g.od, osc, ozp, s->oax);
  if (st) return st;
  int pc = sm_tensor_rank(rsc) != 0, po = sm_tensor_rank(osc) != 0;
  if (!pc && po)
    return sm_status_new(SM_INVALID_ARGUMENT, "If rhs is per-tensor quantized, output must be also per-tensor quantized. Given "
                         "output scales/zero_points of rank %d", sm_tensor_rank(osc));
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_QINT32, g.rank, g.od, &y);
  if (st) return st;
  int64_t C = pc ? sm_tensor_num_elements(rsc) : 1;
  int32_t *qm = sm__kctx_scratch(ctx, (size_t)(C + 1) * 2 * sizeof *qm, &st);
  if (!qm) return st;
  const float *LS = sm_tensor_data(lsc), *RS = sm_tensor_data(rsc), *OS = sm_tensor_data(osc);
  for (int64_t c = 0; c < C && !st; c++)
    st = sm__uq_quantize_multiplier((double)LS[0] * RS[c] / OS[po ? c : 0], &qm[2 * c], &qm[2 * c + 1]);
  conv_out co = {0, pc, po, qm, sm_tensor_data(ozp), s->lo, s->hi, NULL, NULL};
  if (!st)
    st = convolve(ctx, s, &g, sm_tensor_dims(l), sm_tensor_data(l), sm_tensor_dims(r), sm_tensor_data(r), sm_tensor_data(lzp),
                  sm_tensor_data(rzp), &co, sm_tensor_data(y));
  sm__kctx_scratch_free(ctx, qm);
  return st;
}

static sm_status *hybrid_compute(const void *state, sm_kctx *ctx) {
  const conv_state *s = state;
  const char *op = s->op;
  const sm_tensor *l = sm__kctx_input(ctx, 0), *r = sm__kctx_input(ctx, 1), *rsc = sm__kctx_input(ctx, 2),
                  *rzp = sm__kctx_input(ctx, 3);
  sm_status *st = sm__uq_want_input(ctx, op, 0, SM_FLOAT);
  if (!st) st = sm__uq_want_input(ctx, op, 1, SM_QINT8);
  if (!st) st = sm__uq_want_input(ctx, op, 2, SM_FLOAT);
  if (!st) st = sm__uq_want_input(ctx, op, 3, SM_INT32);
  if (st) return st;
  if (!sm__uq_all_positive(rsc)) return sm_status_new(SM_INVALID_ARGUMENT, "rhs scales elements must be all positive.");
  conv_geo g;
  st = resolve(s, l, r, &g);
  if (!st) st = rhs_axis(s, &g, r, rsc, rzp);
  if (!st) st = out_shape_ok(&g);
  if (st) return st;
  sm_tensor *y;
  st = sm__kctx_alloc_output_uninit(ctx, 0, SM_FLOAT, g.rank, g.od, &y);
  if (st) return st;
  /* AsymmetricQuantize of each lhs batch element (all its features and positions) */
  const int64_t *ld = sm_tensor_dims(l);
  int64_t n = sm_tensor_num_elements(l), B = ld[g.dn.ib], post = 1;
  for (int i = (int)g.dn.ib + 1; i < g.rank; i++) post *= ld[i];
  size_t bytes = (size_t)n + (size_t)B * (2 * sizeof(float) + sizeof(int32_t) + 2 * sizeof(float) + 1) + 16;
  unsigned char *buf = sm__kctx_scratch(ctx, bytes, &st);
  if (!buf) return st;
  float *mn = (float *)(void *)buf, *mx = mn + B, *LS = mx + B, *inv = LS + B;
  int32_t *LZ = (int32_t *)(void *)(inv + B);
  unsigned char *seen = (unsigned char *)(LZ + B);
  int8_t *q = (int8_t *)(seen + B);
  memset(seen, 0, (size_t)B);
  const float *X = sm_tensor_data(l);
  for (int64_t i = 0; i < n; i++) {
    int64_t b = (i / post) % B;
    if (!seen[b]) seen[b] = 1, mn[b] = mx[b] = X[i];
    mn[b] = X[i] < mn[b] ? X[i] : mn[b];
    mx[b] = X[i] > mx[b] ? X[i] : mx[b];
  }
  for (int64_t b = 0; b < B; b++) sm__uq_asym_params(seen[b] ? mn[b] : 0, seen[b] ? mx[b] : 0, &LS[b], &inv[b], &LZ[b]);
  for (int64_t i = 0; i < n; i++) {
    int64_t b = (i / post) % B;
    q[i] = sm__uq_asym_one(X[i], inv[b], LZ[b]);
  }
  conv_out co = {1, sm_tensor_rank(rsc) != 0, 0, NULL, NULL, 0, 0, LS, sm_tensor_data(rsc)};
  st = convolve(ctx, s, &g, ld, q, sm_tensor_dims(r), sm_tensor_data(r), LZ, sm_tensor_data(rzp), &co, sm_tensor_data(y));
  sm__kctx_scratch_free(ctx, buf);
  return st;
}

const sm_kernel sm_kernels_uniform_quant_conv[] = {
    {"UniformQuantizedConvolution", conv_prepare, conv_compute, free, 0},
    {"UniformQuantizedConvolutionHybrid", hybrid_prepare, hybrid_compute, free, 0},
    {0},
};

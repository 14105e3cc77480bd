/* math_cast.c - Cast between every numeric dtype and bool, with TF's rounding.
 *
 * One loop per (source, destination) pair over the 11 plain C types; half and bfloat16 go
 * through float (as Eigen does: double -> half rounds twice, via float), round to nearest even.
 * Float -> integer out of range or NaN gives what TF gives on x86-64 (cvttss2si: INT_MIN for
 * int32/int64, narrow ints through int32), never C's undefined behaviour. Truncate = true zeroes
 * the low mantissa bits first, as TF's LSBZeroSetter, for double->float and float/double->half,
 * float->bfloat16. Complex: to a real type its real part (bool too, as TF: 1j is false), from one
 * (x, 0), through float for complex64 and double for complex128. Strings and quantized types are
 * refused. Spec: ops.md §1.9. */
/* GCC's -O2 cost model ("very cheap") vectorizes no loop whose trip count is unknown; these
 * elementwise loops are the point of the file, so ask for the "cheap" model (clang needs nothing). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/math_int.h"

/* x86-64 conversions: out of range or NaN gives the "integer indefinite" value. */
static inline int32_t cvt32(double v) {
  return v >= -2147483648.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}
static inline int64_t cvt64(double v) {
  return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
static inline uint64_t cvtu64(double v) {
  if (v < 9223372036854775808.0) return (uint64_t)cvt64(v);
  if (v < 18446744073709551616.0) return (uint64_t)cvt64(v - 9223372036854775808.0) ^ ((uint64_t)1 << 63);
  return (uint64_t)1 << 63;
}

/* CONV_<source class>_<destination>(a): I = integer source, B = bool source, F = float source. */
#define CONV_I_b(a) ((a) != 0)
#define CONV_I_f32(a) (a)
#define CONV_I_f64(a) (a)
#define CONV_I_i8(a) (a)
#define CONV_I_i16(a) (a)
#define CONV_I_i32(a) (a)
#define CONV_I_i64(a) (a)
#define CONV_I_u8(a) (a)
#define CONV_I_u16(a) (a)
#define CONV_I_u32(a) (a)
#define CONV_I_u64(a) (a)
#define CONV_B_b(a) ((a) != 0)
#define CONV_B_f32(a) ((a) != 0)
#define CONV_B_f64(a) ((a) != 0)
#define CONV_B_i8(a) ((a) != 0)
#define CONV_B_i16(a) ((a) != 0)
#define CONV_B_i32(a) ((a) != 0)
#define CONV_B_i64(a) ((a) != 0)
#define CONV_B_u8(a) ((a) != 0)
#define CONV_B_u16(a) ((a) != 0)
#define CONV_B_u32(a) ((a) != 0)
#define CONV_B_u64(a) ((a) != 0)
#define CONV_F_b(a) ((a) != 0)
#define CONV_F_f32(a) (a)
#define CONV_F_f64(a) (a)
#define CONV_F_i8(a) cvt32(a)
#define CONV_F_i16(a) cvt32(a)
#define CONV_F_i32(a) cvt32(a)
#define CONV_F_i64(a) cvt64(a)
#define CONV_F_u8(a) cvt32(a)
#define CONV_F_u16(a) cvt32(a)
#define CONV_F_u32(a) (uint32_t)cvt64(a)
#define CONV_F_u64(a) cvtu64(a)

typedef void (*castfn)(const void *x, void *y, int64_t n);

#define SRC_TYPES(X) \
  X(b, uint8_t, B) X(f32, float, F) X(f64, double, F) X(i8, int8_t, I) X(i16, int16_t, I) X(i32, int32_t, I) \
  X(i64, int64_t, I) X(u8, uint8_t, I) X(u16, uint16_t, I) X(u32, uint32_t, I) X(u64, uint64_t, I)
#define DST_TYPES(X, ...)                                                                        \
  X(b, uint8_t, __VA_ARGS__) X(f32, float, __VA_ARGS__) X(f64, double, __VA_ARGS__)             \
  X(i8, int8_t, __VA_ARGS__) X(i16, int16_t, __VA_ARGS__) X(i32, int32_t, __VA_ARGS__)           \
  X(i64, int64_t, __VA_ARGS__) X(u8, uint8_t, __VA_ARGS__) X(u16, uint16_t, __VA_ARGS__)          \
  X(u32, uint32_t, __VA_ARGS__) X(u64, uint64_t, __VA_ARGS__)

#define DEF_CAST(DS, DT, SS, ST, CLS)                                         \
  static void cast_##SS##_##DS(const void *xp, void *yp, int64_t n) {         \
    const ST *restrict x = xp;                                                \
    DT *restrict y = yp;                                                      \
    for (int64_t i = 0; i < n; i++) y[i] = (DT)CONV_##CLS##_##DS(x[i]);       \
  }
#define ENT_CAST(DS, DT, SS, ST, CLS) [T_##SS][T_##DS] = cast_##SS##_##DS,
#define DEFS_FOR_SRC(SS, ST, CLS) DST_TYPES(DEF_CAST, SS, ST, CLS)
#define ENTS_FOR_SRC(SS, ST, CLS) DST_TYPES(ENT_CAST, SS, ST, CLS)

SRC_TYPES(DEFS_FOR_SRC)
static const castfn table[NT][NT] = {SRC_TYPES(ENTS_FOR_SRC)};

static int is_complex(int dt) { return dt == SM_COMPLEX64 || dt == SM_COMPLEX128; }

typedef struct cast_state {
  int dst;
  int truncate;
} cast_state;

sm_status *sm__math_cast_prepare(const sm_node *node, void **state) {
  cast_state *s = calloc(1, sizeof *s);
  if (!s) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *st = sm__node_attr_type(node, "DstT", &s->dst);
  if (!st && sm__node_attr(node, "Truncate")) st = sm__node_attr_bool(node, "Truncate", &s->truncate);
  if (!st && !sm__math_is_f16(s->dst) && !is_complex(s->dst) && sm__math_tindex(s->dst) < 0) {
    const char *n = sm_dtype_name(s->dst);
    st = sm_status_new(SM_UNIMPLEMENTED, "Cast to %s is not supported", n ? n : "this dtype");
  }
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return NULL;
}

typedef struct cast_job {
  int src, dst, truncate;
  const char *x;
  char *y;
} cast_job;

/* Zero the mantissa bits the destination cannot hold (NaNs kept), into tmp. */
static const void *truncate_bits(const cast_job *j, const void *x, int64_t m, void *tmp) {
  int bits = 0;
  if (j->src == SM_DOUBLE)
    bits = j->dst == SM_FLOAT ? 29 : j->dst == SM_HALF ? 42 : 0;
  else if (j->src == SM_FLOAT)
    bits = j->dst == SM_HALF ? 13 : j->dst == SM_BFLOAT16 ? 16 : 0;
  if (!j->truncate || !bits) return x;
  if (j->src == SM_DOUBLE) {
    const double *d = x;
    uint64_t *o = tmp;
    for (int64_t i = 0; i < m; i++) {
      memcpy(&o[i], &d[i], 8);
      if (d[i] == d[i]) o[i] &= ~(uint64_t)0 << bits;
    }
  } else {
    const float *d = x;
    uint32_t *o = tmp;
    for (int64_t i = 0; i < m; i++) {
      memcpy(&o[i], &d[i], 4);
      if (d[i] == d[i]) o[i] &= ~(uint32_t)0 << bits;
    }
  }
  return tmp;
}

enum { CHUNK = 512 };

static void cast_range(void *ctx, int64_t e0, int64_t e1) {
  const cast_job *j = ctx;
  size_t ss = sm_dtype_size(j->src), ds = sm_dtype_size(j->dst);
  int sf16 = sm__math_is_f16(j->src), df16 = sm__math_is_f16(j->dst);
  int si = sm__math_tindex(j->src), di = sm__math_tindex(j->dst);
  uint64_t tbuf[CHUNK];
  float f[CHUNK];
  for (int64_t e = e0; e < e1; e += CHUNK) {
    int64_t m = e1 - e < CHUNK ? e1 - e : CHUNK;
    const void *x = truncate_bits(j, j->x + (size_t)e * ss, m, tbuf);
    void *y = j->y + (size_t)e * ds;
    if (sf16 && df16) {
      sm__math_to_f32(j->src, x, f, m);
      sm__math_from_f32(j->dst, f, y, m);
    } else if (sf16) {
      sm__math_to_f32(j->src, x, f, m);
      table[T_f32][di](f, y, m);
    } else if (df16) {
      table[si][T_f32](x, f, m);
      sm__math_from_f32(j->dst, f, y, m);
    } else {
      table[si][di](x, y, m);
    }
  }
}

/* Casts from or to complex, a chunk at a time through a float (complex64) or double (complex128)
 * buffer of real parts and the real casts above. */
static void cast_complex_range(void *ctx, int64_t e0, int64_t e1) {
  const cast_job *j = ctx;
  size_t ss = sm_dtype_size(j->src), ds = sm_dtype_size(j->dst);
  double buf[CHUNK];
  for (int64_t e = e0; e < e1; e += CHUNK) {
    int64_t m = e1 - e < CHUNK ? e1 - e : CHUNK;
    const char *x = j->x + (size_t)e * ss;
    char *y = j->y + (size_t)e * ds;
    int wide = j->src == SM_COMPLEX128 || j->dst == SM_COMPLEX128;
    if (is_complex(j->src) && is_complex(j->dst)) {
      for (int64_t i = 0; i < 2 * m; i++) {
        if (j->src == SM_COMPLEX64) ((double *)y)[i] = ((const float *)x)[i];
        else ((float *)y)[i] = (float)((const double *)x)[i];
      }
    } else if (is_complex(j->src)) { /* real parts, then a real cast */
      for (int64_t i = 0; i < m; i++) {
        double re = wide ? ((const double *)x)[2 * i] : ((const float *)x)[2 * i];
        if (wide) buf[i] = re;
        else ((float *)buf)[i] = (float)re;
      }
      cast_job r = {wide ? SM_DOUBLE : SM_FLOAT, j->dst, 0, (const char *)buf, y};
      cast_range(&r, 0, m);
    } else { /* a real cast to float or double, then (x, 0) */
      cast_job r = {j->src, wide ? SM_DOUBLE : SM_FLOAT, 0, x, (char *)buf};
      cast_range(&r, 0, m);
      for (int64_t i = m - 1; i >= 0; i--) {
        if (wide) ((double *)y)[2 * i] = buf[i], ((double *)y)[2 * i + 1] = 0;
        else ((float *)y)[2 * i] = ((float *)buf)[i], ((float *)y)[2 * i + 1] = 0;
      }
    }
  }
}

/* TF's DataTypeString: "float", "string", "bfloat16" */
static const char *tf_name(int dt, char buf[32]) {
  const char *n = sm_dtype_name(dt);
  if (!n) return "unknown";
  if (!strcmp(n, "DT_HALF")) return "half";
  size_t i = 0;
  for (const char *p = strncmp(n, "DT_", 3) ? n : n + 3; *p && i < 31; p++) buf[i++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
  buf[i] = 0;
  return buf;
}

sm_status *sm__math_cast_compute(const void *state, sm_kctx *ctx) {
  const cast_state *s = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int src = sm_tensor_dtype(x);
  if (src == s->dst) {
    sm__kctx_forward(ctx, 0, 0);
    return NULL;
  }
  if (!sm__math_is_f16(src) && !is_complex(src) && sm__math_tindex(src) < 0) {
    char a[32], b[32];
    return sm_status_new(SM_UNIMPLEMENTED, "Cast %s to %s is not supported", tf_name(src, a), tf_name(s->dst, b));
  }
  sm_tensor *y;
  sm_status *st = sm__kctx_alloc_output(ctx, 0, s->dst, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (st) return st;
  int64_t n = sm_tensor_num_elements(x);
  if (n == 0) return NULL;
  cast_job j = {src, s->dst, s->truncate, sm_tensor_data(x), sm_tensor_data(y)};
  sm__parallel_for(sm__kctx_pool(ctx), n, SM_MATH_PAR_MIN, is_complex(src) || is_complex(s->dst) ? cast_complex_range : cast_range, &j);
  return NULL;
}

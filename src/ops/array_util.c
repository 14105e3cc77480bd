/* array_util.c - element moves and small readers shared by the array kernels (array_internal.h).
 *
 * Every array op is a data move that does not look at values, so one strided copier serves them
 * all, for every dtype: fixed-size elements move as raw bytes (memcpy of a whole contiguous run when
 * both sides are contiguous), DT_RESOURCE handles as pointers, DT_STRING element by element through
 * sm_tensor_string/sm_tensor_set_string. Callers check bounds; this file trusts its offsets. */
#include <stdio.h>
#include <string.h>

#include "base/variant.h"
#include "ops/array_internal.h"

size_t sm__array_esize(int dtype) {
  if (dtype == SM_RESOURCE) return sizeof(void *);
  if (dtype == SM_STRING) return 0;
  return sm_dtype_size(dtype);
}

const char *sm__array_dtype_str(int dtype) {
  static const char *const names[] = {
      [SM_FLOAT] = "float",     [SM_DOUBLE] = "double",       [SM_INT32] = "int32",      [SM_UINT8] = "uint8",
      [SM_INT16] = "int16",     [SM_INT8] = "int8",           [SM_STRING] = "string",    [SM_COMPLEX64] = "complex64",
      [SM_INT64] = "int64",     [SM_BOOL] = "bool",           [SM_QINT8] = "qint8",      [SM_QUINT8] = "quint8",
      [SM_QINT32] = "qint32",   [SM_BFLOAT16] = "bfloat16",   [SM_QINT16] = "qint16",    [SM_QUINT16] = "quint16",
      [SM_UINT16] = "uint16",   [SM_COMPLEX128] = "complex128", [SM_HALF] = "half",     [SM_RESOURCE] = "resource",
      [SM_VARIANT] = "variant", [SM_UINT32] = "uint32",       [SM_UINT64] = "uint64",
  };
  int base = dtype >= SM_DTYPE_REF_OFFSET ? dtype - SM_DTYPE_REF_OFFSET : dtype;
  if (base > 0 && base < (int)(sizeof names / sizeof *names) && names[base]) return names[base];
  const char *n = sm_dtype_name(base);
  return n ? n : "unknown dtype";
}

const char *sm__array_shape_str(const sm_tensor *t, char *buf, size_t cap) {
  return sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), buf, cap);
}

void sm__array_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i];
  }
}

sm_status *sm__array_copy(sm_tensor *dst, int64_t doff, const sm_tensor *src, int64_t soff, int64_t n) {
  if (n <= 0) return NULL;
  int dt = sm_tensor_dtype(src);
  if (dt == SM_STRING) {
    for (int64_t i = 0; i < n; i++) {
      size_t len;
      const char *p = sm_tensor_string(src, soff + i, &len);
      sm_status *s = sm_tensor_set_string(dst, doff + i, p, len);
      if (s) return s;
    }
    return NULL;
  }
  if (dt == SM_VARIANT) { /* the objects are shared: one more reference each */
    sm_variant **d = sm__tensor_variants(dst), **sv = sm__tensor_variants(src);
    for (int64_t i = 0; i < n; i++) {
      sm__variant_unref(d[doff + i]);
      d[doff + i] = sm__variant_ref(sv[soff + i]);
    }
    return NULL;
  }
  size_t es = sm__array_esize(dt);
  memcpy((char *)sm_tensor_data(dst) + (size_t)doff * es, (const char *)sm_tensor_data(src) + (size_t)soff * es,
         (size_t)n * es);
  return NULL;
}

/* One run along the innermost dimension, for fixed-size elements. */
static void run_fixed(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, size_t es) {
  if (ds == 1 && ss == 1) {
    memcpy(d, s, (size_t)n * es);
    return;
  }
  const int64_t dstep = ds * (int64_t)es, sstep = ss * (int64_t)es;
  switch (es) {
  case 1:
    for (int64_t i = 0; i < n; i++, d += dstep, s += sstep) *d = *s;
    break;
  case 2:
    for (int64_t i = 0; i < n; i++, d += dstep, s += sstep) memcpy(d, s, 2);
    break;
  case 4:
    for (int64_t i = 0; i < n; i++, d += dstep, s += sstep) memcpy(d, s, 4);
    break;
  case 8:
    for (int64_t i = 0; i < n; i++, d += dstep, s += sstep) memcpy(d, s, 8);
    break;
  default:
    for (int64_t i = 0; i < n; i++, d += dstep, s += sstep) memcpy(d, s, es);
    break;
  }
}

sm_status *sm__array_strided_copy(sm_tensor *dst, int64_t doff, const int64_t *dstride, const sm_tensor *src,
                                  int64_t soff, const int64_t *sstride, int rank, const int64_t *dims) {
  /* Merge dimensions: drop size-1 ones, fuse an outer dim into the next inner one when both sides
   * step over it contiguously. Callers may pass up to 2*SM_MAX_RANK dims (Tile). */
  int64_t md[2 * SM_MAX_RANK], mds[2 * SM_MAX_RANK], mss[2 * SM_MAX_RANK];
  int r = 0;
  for (int k = 0; k < rank; k++) {
    if (dims[k] == 0) return NULL;
    if (dims[k] == 1) continue;
    if (r > 0 && mds[r - 1] == dstride[k] * dims[k] && mss[r - 1] == sstride[k] * dims[k]) {
      md[r - 1] *= dims[k];
      mds[r - 1] = dstride[k];
      mss[r - 1] = sstride[k];
      continue;
    }
    md[r] = dims[k];
    mds[r] = dstride[k];
    mss[r] = sstride[k];
    r++;
  }
  if (r == 0) {
    md[0] = 1;
    mds[0] = mss[0] = 1;
    r = 1;
  }
  int dt = sm_tensor_dtype(src);
  size_t es = sm__array_esize(dt);
  char *dbase = dt == SM_STRING || dt == SM_VARIANT ? NULL : sm_tensor_data(dst);
  const char *sbase = dt == SM_STRING || dt == SM_VARIANT ? NULL : sm_tensor_data(src);
  sm_variant **dv = dt == SM_VARIANT ? sm__tensor_variants(dst) : NULL, **sv = dt == SM_VARIANT ? sm__tensor_variants(src) : NULL;
  int64_t idx[2 * SM_MAX_RANK] = {0};
  int64_t d = doff, s = soff;
  const int inner = r - 1;
  for (;;) {
    if (dt == SM_STRING) {
      for (int64_t i = 0; i < md[inner]; i++) {
        size_t len;
        const char *p = sm_tensor_string(src, s + i * mss[inner], &len);
        sm_status *st = sm_tensor_set_string(dst, d + i * mds[inner], p, len);
        if (st) return st;
      }
    } else if (dt == SM_VARIANT) { /* the objects are shared: one more reference each */
      for (int64_t i = 0; i < md[inner]; i++) {
        sm__variant_unref(dv[d + i * mds[inner]]);
        dv[d + i * mds[inner]] = sm__variant_ref(sv[s + i * mss[inner]]);
      }
    } else {
      run_fixed(dbase + d * (int64_t)es, mds[inner], sbase + s * (int64_t)es, mss[inner], md[inner], es);
    }
    int k = inner - 1;
    for (; k >= 0; k--) {
      idx[k]++;
      d += mds[k];
      s += mss[k];
      if (idx[k] < md[k]) break;
      d -= mds[k] * md[k];
      s -= mss[k] * md[k];
      idx[k] = 0;
    }
    if (k < 0) break;
  }
  return NULL;
}

int sm__array_is_int(int dtype) {
  switch (dtype) {
  case SM_INT8: case SM_UINT8: case SM_INT16: case SM_UINT16: case SM_INT32: case SM_UINT32: case SM_INT64:
  case SM_UINT64:
    return 1;
  default:
    return 0;
  }
}

int64_t sm__array_int_at(const sm_tensor *t, int64_t i) {
  const void *p = sm_tensor_data(t);
  switch (sm_tensor_dtype(t)) {
  case SM_INT8: return ((const int8_t *)p)[i];
  case SM_UINT8: return ((const uint8_t *)p)[i];
  case SM_INT16: return ((const int16_t *)p)[i];
  case SM_UINT16: return ((const uint16_t *)p)[i];
  case SM_INT32: return ((const int32_t *)p)[i];
  case SM_UINT32: return ((const uint32_t *)p)[i];
  case SM_INT64: return ((const int64_t *)p)[i];
  case SM_UINT64: return (int64_t)((const uint64_t *)p)[i];
  default: return 0;
  }
}

sm_status *sm__array_read_ints(const sm_tensor *t, const char *what, int64_t *out, int64_t cap, int64_t *n) {
  int dt = sm_tensor_dtype(t);
  if (dt != SM_INT32 && dt != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be int32 or int64, not %s", what, sm__array_dtype_str(dt));
  int64_t count = sm_tensor_num_elements(t);
  if (count > cap)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s has %lld elements, more than the %lld this op allows", what,
                         (long long)count, (long long)cap);
  for (int64_t i = 0; i < count; i++) out[i] = sm__array_int_at(t, i);
  *n = count;
  return NULL;
}

sm_status *sm__array_fill(sm_tensor *dst, const sm_tensor *value) {
  int64_t n = sm_tensor_num_elements(dst);
  if (n == 0) return NULL;
  if (sm_tensor_dtype(dst) == SM_STRING) {
    size_t len;
    const char *p = sm_tensor_string(value, 0, &len);
    for (int64_t i = 0; i < n; i++) {
      sm_status *s = sm_tensor_set_string(dst, i, p, len);
      if (s) return s;
    }
    return NULL;
  }
  size_t es = sm__array_esize(sm_tensor_dtype(dst));
  char *d = sm_tensor_data(dst);
  memcpy(d, sm_tensor_data(value), es);
  /* Doubling copies: log2(n) memcpy calls. */
  size_t done = es, total = (size_t)n * es;
  while (done < total) {
    size_t k = done < total - done ? done : total - done;
    memcpy(d + done, d, k);
    done += k;
  }
  return NULL;
}

sm_status *sm__array_rows(const sm_tensor *t, int64_t a, int64_t b, sm_tensor **out) {
  int64_t dims[SM_MAX_RANK];
  int r = sm_tensor_rank(t);
  memcpy(dims, sm_tensor_dims(t), (size_t)r * sizeof *dims);
  int64_t inner = 1;
  for (int d = 1; d < r; d++) inner *= dims[d];
  dims[0] = b - a;
  sm_status *s = sm_tensor_new(sm_tensor_dtype(t), r, dims, out);
  if (!s && b > a && inner) s = sm__array_copy(*out, 0, t, a * inner, (b - a) * inner);
  if (s) {
    sm_tensor_free(*out);
    *out = NULL;
  }
  return s;
}

/* lookup.c - the lookup kernel family: the tables' creation ops (static HashTableV2 and TF1's
 * HashTable; the mutable MutableHashTableV2, MutableHashTableOfTensorsV2, MutableDenseHashTableV2,
 * their V1 forms and the Anonymous* ones), their initializers (from tensors, from a text file),
 * import, lookups and size. Insert, remove and export are table_mutable.c's.
 *
 * A table handle is a DT_RESOURCE scalar whose element is the sm_table * kept by the model's
 * sm_resources (an anonymous table's handle owns its table instead: it goes with the last
 * reference to the handle tensor). TF1's HashTable outputs a string ref; here it outputs the same
 * handle, and the v1 consumers take it through their ref input. Locks: resource.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "runtime/kernel.h"
#include "savedmodel/model.h"

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}

static sm_status *input_table(sm_kctx *ctx, int i, sm_table **out) {
  return sm__handle_table(sm__kctx_input(ctx, i), i, out);
}

/* ---- HashTableV2 / HashTable ---------------------------------------------------------------- */

typedef struct {
  char *container, *name;
  int key_dtype, value_dtype;
  int kind, anonymous, vrank;
  int64_t vdims[SM_MAX_RANK];
  int64_t num_buckets;
  float max_load;
} table_state;

static void table_release(void *p) {
  table_state *st = p;
  if (!st) return;
  free(st->container);
  free(st->name);
  free(st);
}

static sm_status *dup_attr(const sm_node *n, const char *attr, const char *prefix, char **out) {
  const char *s = "";
  size_t len = 0;
  if (sm__node_attr(n, attr)) {
    sm_status *st = sm__node_attr_string(n, attr, &s, &len);
    if (st) return st;
  }
  if (memchr(s, 0, len)) return sm_status_new(SM_INVALID_ARGUMENT, "attr %s contains a NUL byte", attr);
  size_t lp = strlen(prefix);
  *out = malloc(lp + len + 1);
  if (!*out) return sm_status_new(SM_NO_MEMORY, "out of memory");
  memcpy(*out, prefix, lp);
  memcpy(*out + lp, s, len);
  (*out)[lp + len] = 0;
  return NULL;
}

static sm_status *table_prepare(const sm_node *node, void **state) {
  table_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  int share_by_node = 0;
  sm_status *s = sm__node_attr_type(node, "key_dtype", &st->key_dtype);
  if (!s) s = sm__node_attr_type(node, "value_dtype", &st->value_dtype);
  if (!s) s = dup_attr(node, "container", "", &st->container);
  if (!s) s = dup_attr(node, "shared_name", "", &st->name);
  if (!s && sm__node_attr(node, "use_node_name_sharing"))
    s = sm__node_attr_bool(node, "use_node_name_sharing", &share_by_node);
  const char *op = sm__node_op(node);
  st->anonymous = !strncmp(op, "Anonymous", 9);
  st->kind = strstr(op, "Dense") ? SM_TABLE_DENSE : strstr(op, "Mutable") ? SM_TABLE_MUTABLE : SM_TABLE_STATIC;
  if (!s && sm__node_attr(node, "value_shape")) {
    s = sm__node_attr_shape(node, "value_shape", &st->vrank, st->vdims);
    for (int i = 0; !s && i < st->vrank; i++)
      if (st->vdims[i] < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "value_shape must be fully defined");
    if (!s && st->vrank < 0) s = sm_status_new(SM_INVALID_ARGUMENT, "value_shape must be fully defined");
  }
  st->num_buckets = 131072;
  st->max_load = 0.8f;
  if (!s && st->kind == SM_TABLE_DENSE) {
    if (sm__node_attr(node, "initial_num_buckets")) s = sm__node_attr_int(node, "initial_num_buckets", &st->num_buckets);
    if (!s && sm__node_attr(node, "max_load_factor")) s = sm__node_attr_float(node, "max_load_factor", &st->max_load);
    if (!s && (st->num_buckets < 4 || (st->num_buckets & (st->num_buckets - 1))))
      s = sm_status_new(SM_INVALID_ARGUMENT, "Number of buckets must be at least 4 and a power of 2, got: %lld",
                        (long long)st->num_buckets);
    if (!s && !(st->max_load > 0 && st->max_load < 1))
      s = sm_status_new(SM_INVALID_ARGUMENT, "max_load_factor must be between 0 and 1, got: %g", (double)st->max_load);
  }
  if (!s && !st->name[0]) {
    /* TF gives an unshared table to each kernel; one plan node = one table here, keyed by a name
     * no shared_name takes unless node-name sharing was asked for. */
    const char *nn = sm__node_name(node);
    const char *pre = share_by_node ? "" : "_sm_private/";
    free(st->name);
    size_t lp = strlen(pre), ln = strlen(nn);
    if (!(st->name = malloc(lp + ln + 1))) {
      s = sm_status_new(SM_NO_MEMORY, "out of memory");
    } else {
      memcpy(st->name, pre, lp);
      memcpy(st->name + lp, nn, ln + 1);
    }
  }
  if (s) {
    table_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static void anon_release(void *arg) { sm__htable_free(arg); }

static sm_status *table_compute(const void *state, sm_kctx *ctx) {
  const table_state *st = state;
  sm_table_spec spec = {.key_dtype = st->key_dtype, .value_dtype = st->value_dtype, .kind = st->kind,
                        .vrank = st->vrank, .vdims = st->vdims, .num_buckets = st->num_buckets,
                        .max_load_factor = st->max_load};
  if (st->kind == SM_TABLE_DENSE) {
    int ni = sm__kctx_num_inputs(ctx);
    spec.empty_key = sm__kctx_input(ctx, 0);
    spec.deleted_key = ni > 1 ? sm__kctx_input(ctx, 1) : NULL;
    if (!spec.deleted_key)
      return sm_status_new(SM_UNIMPLEMENTED, "a dense table without a deleted_key (TF1's MutableDenseHashTable)");
    for (int i = 0; i < 2; i++) {
      const sm_tensor *k = i ? spec.deleted_key : spec.empty_key;
      if (sm_tensor_dtype(k) != st->key_dtype || sm_tensor_num_elements(k) != 1) {
        char b[64];
        return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a scalar of the key dtype %s, got %s of shape %s",
                             i ? "deleted_key" : "empty_key", dname(st->key_dtype), dname(sm_tensor_dtype(k)),
                             sm_shape_str(sm_tensor_rank(k), sm_tensor_dims(k), b, sizeof b));
      }
    }
    int same;
    if (st->key_dtype == SM_STRING) {
      size_t la, lb;
      const char *a = sm_tensor_string(spec.empty_key, 0, &la), *b = sm_tensor_string(spec.deleted_key, 0, &lb);
      same = la == lb && (!la || !memcmp(a, b, la));
    } else {
      same = !memcmp(sm_tensor_data(spec.empty_key), sm_tensor_data(spec.deleted_key), sm_dtype_size(st->key_dtype));
    }
    if (same) return sm_status_new(SM_INVALID_ARGUMENT, "Empty and deleted keys cannot be equal");
  }
  sm_table *t;
  sm_tensor *out;
  sm_status *s;
  if (st->anonymous) {
    if ((s = sm__htable_new(sm__node_name(sm__kctx_node(ctx)), &spec, &t))) return s;
    if ((s = sm_tensor_wrap(SM_RESOURCE, 0, NULL, sm__htable_self(t), sizeof(void *), anon_release, t, &out))) {
      sm__htable_free(t);
      return s;
    }
    sm__kctx_set_output(ctx, 0, out);
    return NULL;
  }
  s = sm__resources_table_spec(sm__kctx_resources(ctx), st->container, st->name, &spec, &t);
  if (s) return s;
  s = sm__kctx_alloc_output(ctx, 0, SM_RESOURCE, 0, NULL, &out);
  if (s) return s;
  ((void **)sm_tensor_data(out))[0] = t;
  return NULL;
}

/* ---- LookupTableImportV2 / InitializeTableV2 / InitializeTable ------------------------------ */

/* t as a 1-D view (no copy) when it is not one already. */
static sm_status *flat_view(const sm_tensor *t, sm_tensor **out) {
  int64_t n = sm_tensor_num_elements(t);
  return sm_tensor_view((sm_tensor *)t, 1, &n, out);
}

static sm_status *import_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_table *t;
  sm_status *s = input_table(ctx, 0, &t);
  if (s) return s;
  const sm_tensor *keys = sm__kctx_input(ctx, 1), *values = sm__kctx_input(ctx, 2);
  if (sm__table_kind(t) != SM_TABLE_STATIC) return sm__table_import(t, ctx, keys, values);
  if (!sm_tensor_num_elements(keys) && strncmp(sm__node_op(sm__kctx_node(ctx)), "LookupTableImport", 17))
    return sm_status_new(SM_INVALID_ARGUMENT, "keys and values cannot be empty tensors.");
  if (sm_tensor_rank(keys) != sm_tensor_rank(values) ||
      memcmp(sm_tensor_dims(keys), sm_tensor_dims(values), (size_t)sm_tensor_rank(keys) * sizeof(int64_t))) {
    char a[128], b[128];
    return sm_status_new(SM_INVALID_ARGUMENT, "keys and values must have the same shape: %s vs %s",
                         sm_shape_str(sm_tensor_rank(keys), sm_tensor_dims(keys), a, sizeof a),
                         sm_shape_str(sm_tensor_rank(values), sm_tensor_dims(values), b, sizeof b));
  }
  if (sm__table_is_initialized(t)) return NULL;
  sm_tensor *k1 = NULL, *v1 = NULL;
  s = flat_view(keys, &k1);
  if (!s) s = flat_view(values, &v1);
  if (!s) s = sm__table_init(t, k1, v1);
  sm_tensor_free(k1);
  sm_tensor_free(v1);
  return s;
}

/* ---- InitializeTableFromTextFileV2 / InitializeTableFromTextFile ---------------------------- */

enum { WHOLE_LINE = -2, LINE_NUMBER = -1 };

typedef struct {
  int64_t key_index, value_index, vocab_size, offset;
  char delimiter;
} text_state;

static sm_status *text_prepare(const sm_node *node, void **state) {
  text_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->vocab_size = -1;
  st->delimiter = '\t';
  sm_status *s = sm__node_attr_int(node, "key_index", &st->key_index);
  if (!s) s = sm__node_attr_int(node, "value_index", &st->value_index);
  if (!s && sm__node_attr(node, "vocab_size")) s = sm__node_attr_int(node, "vocab_size", &st->vocab_size);
  if (!s && sm__node_attr(node, "offset")) s = sm__node_attr_int(node, "offset", &st->offset);
  if (!s && sm__node_attr(node, "delimiter")) {
    const char *d;
    size_t len;
    s = sm__node_attr_string(node, "delimiter", &d, &len);
    if (!s && len != 1) s = sm_status_new(SM_INVALID_ARGUMENT, "delimiter should be only 1 char, has %zu", len);
    if (!s) st->delimiter = d[0];
  }
  if (!s && (st->key_index < -2 || st->value_index < -2 || st->key_index > (1 << 20) || st->value_index > (1 << 20)))
    s = sm_status_new(SM_INVALID_ARGUMENT, "key_index %lld / value_index %lld out of range", (long long)st->key_index,
                      (long long)st->value_index);
  if (!s && st->vocab_size < -1)
    s = sm_status_new(SM_INVALID_ARGUMENT, "vocab_size %lld is invalid", (long long)st->vocab_size);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* TF's safe_strto* accept surrounding whitespace and nothing else around the number. */
static int parse_number(const char *p, size_t len, int dtype, void *out) {
  char buf[128];
  while (len && is_space(*p)) p++, len--;
  while (len && is_space(p[len - 1])) len--;
  if (len == 0 || len >= sizeof buf) return 0;
  memcpy(buf, p, len);
  buf[len] = 0;
  char *end;
  errno = 0;
  if (dtype == SM_INT32 || dtype == SM_INT64) {
    if (buf[0] != '-' && buf[0] != '+' && (buf[0] < '0' || buf[0] > '9')) return 0;
    long long v = strtoll(buf, &end, 10);
    if (*end || errno) return 0;
    if (dtype == SM_INT32) {
      if (v < INT32_MIN || v > INT32_MAX) return 0;
      *(int32_t *)out = (int32_t)v;
    } else {
      *(int64_t *)out = v;
    }
    return 1;
  }
  if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) return 0; /* no hex floats */
  if (dtype == SM_FLOAT) {
    float v = strtof(buf, &end);
    if (*end) return 0;
    *(float *)out = v;
  } else {
    double v = strtod(buf, &end);
    if (*end) return 0;
    *(double *)out = v;
  }
  return 1;
}

/* Sets element i of t from a field (or the line number). */
static sm_status *set_field(const char *fname, sm_tensor *t, int64_t i, int64_t index, int64_t line_no, int64_t offset,
                            const char *field, size_t flen) {
  int dtype = sm_tensor_dtype(t);
  void *d = sm_tensor_data(t);
  if (index == LINE_NUMBER) {
    ((int64_t *)d)[i] = line_no + offset;
    return NULL;
  }
  if (dtype == SM_STRING) return sm_tensor_set_string(t, i, field, flen);
  size_t es = sm_dtype_size(dtype);
  union {
    int32_t i32;
    int64_t i64;
    float f;
    double g;
  } v;
  if (!parse_number(field, flen, dtype, &v))
    return sm_status_new(SM_INVALID_ARGUMENT, "field \"%.*s\" in line %lld of %s is not a valid %s",
                         (int)(flen > 100 ? 100 : flen), field, (long long)line_no, fname, sm_dtype_numpy_name(dtype));
  if (dtype == SM_INT32) v.i32 = (int32_t)((uint32_t)v.i32 + (uint32_t)offset); /* as TF: int32 fields get the offset */
  memcpy((char *)d + (size_t)i * es, &v, es);
  return NULL;
}

static int dtype_is_integer(int d) {
  return d == SM_INT8 || d == SM_INT16 || d == SM_INT32 || d == SM_INT64 || d == SM_UINT8 || d == SM_UINT16 ||
         d == SM_UINT32 || d == SM_UINT64;
}

static int text_dtype_ok(int d) {
  return d == SM_STRING || d == SM_INT32 || d == SM_INT64 || d == SM_FLOAT || d == SM_DOUBLE;
}

static sm_status *text_compute(const void *state, sm_kctx *ctx) {
  const text_state *st = state;
  sm_table *t;
  sm_status *s = input_table(ctx, 0, &t);
  if (s) return s;
  const sm_tensor *fn = sm__kctx_input(ctx, 1);
  if (!fn || sm_tensor_dtype(fn) != SM_STRING || sm_tensor_num_elements(fn) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "filename must be a string scalar");
  int kd = sm__table_key_dtype(t), vd = sm__table_value_dtype(t);
  if (st->key_index == LINE_NUMBER && kd != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "key index for line number requires table key dtype of int64, got %s",
                         dname(kd));
  if (st->key_index == WHOLE_LINE && !dtype_is_integer(kd) && kd != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "key index for whole line requires string or integer table key, got %s",
                         dname(kd));
  if (st->value_index == LINE_NUMBER && vd != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "value index for line number requires table value dtype of int64, got %s",
                         dname(vd));
  if (st->value_index == WHOLE_LINE && !dtype_is_integer(vd) && vd != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "value index for whole line requires table value dtype of integer or string, got %s",
                         dname(vd));
  if (!text_dtype_ok(kd) || !text_dtype_ok(vd))
    return sm_status_new(SM_INVALID_ARGUMENT, "table dtypes %s -> %s are not supported from a text file", dname(kd),
                         dname(vd));
  if (sm__table_is_initialized(t)) return NULL; /* file initializers run once, as TF's */
  size_t flen;
  const char *fraw = sm_tensor_string(fn, 0, &flen);
  char *fname = sm__kctx_scratch(ctx, flen + 1, &s);
  if (!fname) return s;
  memcpy(fname, fraw, flen);
  fname[flen] = 0;
  sm_file_map fm = {0};
  if (strlen(fname) != flen)
    s = sm_status_new(SM_INVALID_ARGUMENT, "filename contains a NUL byte");
  else
    s = sm__kctx_open_file(ctx, fname, SM_MAX_VOCAB_FILE_BYTES, &fm);
  if (s) {
    sm__kctx_scratch_free(ctx, fname);
    return s;
  }
  const char *data = (const char *)fm.data;
  size_t len = fm.size;
  /* Count lines as TF's InputBuffer::ReadLine splits them: on '\n', one trailing '\r' dropped, a
   * last line without '\n' counted unless empty. */
  int64_t nlines = 0;
  for (size_t i = 0; i < len;) {
    const char *nl = memchr(data + i, '\n', len - i);
    nlines++;
    i = nl ? (size_t)(nl - data) + 1 : len;
  }
  if (st->vocab_size >= 0 && nlines < st->vocab_size) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "invalid vocab_size in %s: expected %lld but got %lld", fname,
                      (long long)st->vocab_size, (long long)nlines);
  }
  int64_t n = st->vocab_size >= 0 ? st->vocab_size : nlines;
  sm_tensor *keys = NULL, *values = NULL;
  if (!s) s = sm_tensor_new(kd, 1, &n, &keys);
  if (!s) s = sm_tensor_new(vd, 1, &n, &values);
  int64_t maxcol = st->key_index > st->value_index ? st->key_index : st->value_index;
  size_t pos = 0;
  for (int64_t ln = 0; ln < n && !s; ln++) {
    const char *line = data + pos;
    const char *nl = memchr(line, '\n', len - pos);
    size_t ll = nl ? (size_t)(nl - line) : len - pos;
    pos += ll + (nl ? 1 : 0);
    if (ll && line[ll - 1] == '\r') ll--;
    if (ll == 0) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "invalid content in %s: empty line found at line %lld", fname,
                        (long long)ln);
      break;
    }
    const char *kf = line, *vf = line;
    size_t kl = ll, vl = ll;
    if (maxcol >= 0) {
      /* split on the delimiter; find the key and value columns */
      int64_t col = 0;
      const char *f = line, *end = line + ll;
      for (;;) {
        const char *d = memchr(f, st->delimiter, (size_t)(end - f));
        const char *fe = d ? d : end;
        if (col == st->key_index) kf = f, kl = (size_t)(fe - f);
        if (col == st->value_index) vf = f, vl = (size_t)(fe - f);
        col++;
        if (!d || col > maxcol) break;
        f = d + 1;
      }
      if (col <= maxcol) {
        s = sm_status_new(SM_INVALID_ARGUMENT,
                          "invalid number of columns in %s line %lld (%.*s) : expected at least %lld got %lld", fname,
                          (long long)ln, (int)(ll > 100 ? 100 : ll), line, (long long)(maxcol + 1), (long long)col);
        break;
      }
    }
    s = set_field(fname, keys, ln, st->key_index, ln, st->offset, kf, kl);
    if (!s) s = set_field(fname, values, ln, st->value_index, ln, st->offset, vf, vl);
  }
  if (!s) s = sm__table_init(t, keys, values);
  sm_tensor_free(keys);
  sm_tensor_free(values);
  sm__file_map_close(&fm);
  sm__kctx_scratch_free(ctx, fname);
  return s;
}

/* ---- LookupTableFindV2 / LookupTableFind / LookupTableSizeV2 / LookupTableSize -------------- */

static sm_status *find_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_table *t;
  sm_status *s = input_table(ctx, 0, &t);
  if (s) return s;
  const sm_tensor *keys = sm__kctx_input(ctx, 1), *dflt = sm__kctx_input(ctx, 2);
  const int64_t *vdims;
  int vrank = sm__table_value_shape(t, &vdims), kr = sm_tensor_rank(keys);
  char a[128], b[128];
  if (sm__table_kind(t) == SM_TABLE_STATIC) {
    if (sm_tensor_num_elements(dflt) != 1 &&
        !(sm_tensor_rank(dflt) == kr && !memcmp(sm_tensor_dims(dflt), sm_tensor_dims(keys), (size_t)kr * sizeof(int64_t))))
      return sm_status_new(SM_INVALID_ARGUMENT, "default_value must be a scalar or the shape of keys, has shape %s",
                           sm_shape_str(sm_tensor_rank(dflt), sm_tensor_dims(dflt), a, sizeof a));
  } else {
    /* a dense table takes value_shape or [1] + value_shape */
    int dr = sm_tensor_rank(dflt), lead = sm__table_kind(t) == SM_TABLE_DENSE && dr == vrank + 1 && sm_tensor_dims(dflt)[0] == 1;
    if (dr != vrank + lead || memcmp(sm_tensor_dims(dflt) + lead, vdims, (size_t)vrank * sizeof(int64_t))) {
      sm_shape_str(vrank, vdims, a, sizeof a);
      if (sm__table_kind(t) == SM_TABLE_DENSE) {
        int64_t d1[SM_MAX_RANK + 1] = {1};
        memcpy(d1 + 1, vdims, (size_t)vrank * sizeof(int64_t));
        size_t la = strlen(a);
        snprintf(a + la, sizeof a - la, " or ");
        la = strlen(a);
        sm_shape_str(vrank + 1, d1, a + la, sizeof a - la);
      }
      return sm_status_new(SM_INVALID_ARGUMENT, "Expected shape %s for default value, got %s", a,
                           sm_shape_str(dr, sm_tensor_dims(dflt), b, sizeof b));
    }
  }
  if (sm_tensor_dtype(dflt) != sm__table_value_dtype(t))
    return sm_status_new(SM_INVALID_ARGUMENT, "default_value is %s, the table's values are %s",
                         dname(sm_tensor_dtype(dflt)), dname(sm__table_value_dtype(t)));
  if (kr + vrank > SM_MAX_RANK)
    return sm_status_new(SM_INVALID_ARGUMENT, "keys of rank %d with values of rank %d are too many dims", kr, vrank);
  int64_t od[SM_MAX_RANK];
  memcpy(od, sm_tensor_dims(keys), (size_t)kr * sizeof(int64_t));
  memcpy(od + kr, vdims, (size_t)vrank * sizeof(int64_t));
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, sm__table_value_dtype(t), kr + vrank, od, &out);
  if (!s) s = sm__table_find(t, keys, dflt, out);
  return s;
}

static sm_status *size_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_table *t;
  sm_status *s = input_table(ctx, 0, &t);
  if (s) return s;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, SM_INT64, 0, NULL, &out);
  if (s) return s;
  *(int64_t *)sm_tensor_data(out) = sm__table_size(t);
  return NULL;
}

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_lookup[] = {
    {"HashTableV2", table_prepare, table_compute, table_release, 0},
    {"HashTable", table_prepare, table_compute, table_release, 0},
    {"MutableHashTableV2", table_prepare, table_compute, table_release, 0},
    {"MutableHashTable", table_prepare, table_compute, table_release, 0},
    {"MutableHashTableOfTensorsV2", table_prepare, table_compute, table_release, 0},
    {"MutableHashTableOfTensors", table_prepare, table_compute, table_release, 0},
    {"MutableDenseHashTableV2", table_prepare, table_compute, table_release, 0},
    {"AnonymousHashTable", table_prepare, table_compute, table_release, 0},
    {"AnonymousMutableHashTable", table_prepare, table_compute, table_release, 0},
    {"AnonymousMutableHashTableOfTensors", table_prepare, table_compute, table_release, 0},
    {"AnonymousMutableDenseHashTable", table_prepare, table_compute, table_release, 0},
    {"LookupTableImportV2", NULL, import_compute, NULL, 0},
    {"LookupTableImport", NULL, import_compute, NULL, 0},
    {"InitializeTableV2", NULL, import_compute, NULL, 0},
    {"InitializeTable", NULL, import_compute, NULL, 0},
    {"InitializeTableFromTextFileV2", text_prepare, text_compute, free, 0},
    {"InitializeTableFromTextFile", text_prepare, text_compute, free, 0},
    {"LookupTableFindV2", NULL, find_compute, NULL, 0},
    {"LookupTableFind", NULL, find_compute, NULL, 0},
    {"LookupTableSizeV2", NULL, size_compute, NULL, 0},
    {"LookupTableSize", NULL, size_compute, NULL, 0},
    {0},
};

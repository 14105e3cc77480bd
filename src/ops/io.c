/* io.c - the io kernel family: checkpoint restore and the string ops of TF's save subgraph.
 *
 * RestoreV2 opens the bundle named by its prefix input on every run (nothing is cached: restore
 * runs once per load) and returns each named tensor, assembling "shape and slice" requests from
 * the whole tensor. SaveV2 and MergeV2Checkpoints are known but not run (save paths only).
 * StaticRegexFullMatch supports the RE2 subset TF's save paths use (literals, '.', '*', '+', '?',
 * anchors), matched by an NFA walk so no pattern can take more than O(pattern x input) time; any
 * other pattern goes to RE2 (regex.h), as TF's kernel does, where the library has it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "runtime/kernel.h"
#include "format/bundle_internal.h"
#include "ops/regex.h"
#include "savedmodel/bundle.h"

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}

static sm_status *want_string(sm_kctx *ctx, int i, const char *what, const sm_tensor **t) {
  *t = sm__kctx_input(ctx, i);
  if (!*t || sm_tensor_dtype(*t) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a string tensor", what);
  return NULL;
}

/* ---- RestoreV2 ------------------------------------------------------------------------------ */

typedef struct {
  int n;
  int *dtypes;
} restore_state;

static void restore_release(void *p) {
  restore_state *st = p;
  if (st) free(st->dtypes);
  free(st);
}

static sm_status *restore_prepare(const sm_node *node, void **state) {
  const int *types;
  size_t n;
  sm_status *s = sm__node_attr_types(node, "dtypes", &types, &n);
  if (s) return s;
  if (n == 0 || n > (1u << 24))
    return sm_status_new(SM_INVALID_ARGUMENT, "RestoreV2 needs 1 or more dtypes, has %zu", n);
  if ((int)n != sm__node_num_outputs(node))
    return sm_status_new(SM_INVALID_ARGUMENT, "%zu dtypes but %d outputs", n, sm__node_num_outputs(node));
  restore_state *st = calloc(1, sizeof *st);
  if (!st || !(st->dtypes = malloc(n * sizeof *st->dtypes))) {
    free(st);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  memcpy(st->dtypes, types, n * sizeof *types);
  st->n = (int)n;
  *state = st;
  return NULL;
}

/* A slice spec "d0 d1 ... s0,l0:s1,l1:..." ("-" = whole dim), TF's TensorSlice text form.
 * Fills full dims, and start/len per dim. */
static int parse_int64(const char **p, const char *end, int64_t *v) {
  const char *q = *p;
  int neg = 0;
  if (q < end && *q == '-') {
    neg = 1;
    q++;
  }
  if (q >= end || *q < '0' || *q > '9') return 0;
  int64_t x = 0;
  for (; q < end && *q >= '0' && *q <= '9'; q++)
    if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *q - '0', &x)) return 0;
  *v = neg ? -x : x;
  *p = q;
  return 1;
}

static sm_status *parse_slice(const char *spec, size_t len, const char *tname, int *rank, int64_t *full, int64_t *start,
                              int64_t *count) {
  const char *p = spec, *end = spec + len;
  int r = 0;
  /* dims: space-separated integers; the last space-separated token is the slice part */
  const char *last_space = NULL;
  for (const char *q = spec; q < end; q++)
    if (*q == ' ') last_space = q;
  if (!last_space) goto bad;
  while (p < last_space) {
    if (r >= SM_MAX_RANK || !parse_int64(&p, last_space, &full[r]) || full[r] < 0) goto bad;
    r++;
    if (p < last_space) {
      if (*p != ' ') goto bad;
      p++;
    }
  }
  p = last_space + 1;
  for (int d = 0; d < r; d++) {
    if (p < end && *p == '-') {
      start[d] = 0;
      count[d] = full[d];
      p++;
    } else {
      if (!parse_int64(&p, end, &start[d]) || p >= end || *p != ',') goto bad;
      p++;
      if (!parse_int64(&p, end, &count[d])) goto bad;
      if (count[d] == -1) count[d] = full[d] - start[d];
      if (start[d] < 0 || count[d] < 0 || start[d] > full[d] || count[d] > full[d] - start[d]) goto bad;
    }
    if (d + 1 < r) {
      if (p >= end || *p != ':') goto bad;
      p++;
    }
  }
  if (p != end) goto bad;
  *rank = r;
  return NULL;
bad:
  return sm_status_new(SM_INVALID_ARGUMENT, "bad shape_and_slice \"%.*s\" for tensor %s", (int)(len > 200 ? 200 : len),
                       spec, tname);
}

/* out = full[start : start+count] per dim. */
static sm_status *extract_slice(const sm_tensor *full, int rank, const int64_t *start, const int64_t *count,
                                sm_tensor **out) {
  int dtype = sm_tensor_dtype(full);
  sm_status *s = sm_tensor_new(dtype, rank, count, out);
  if (s) return s;
  int64_t n = sm_tensor_num_elements(*out);
  if (n == 0) return NULL;
  const int64_t *fd = sm_tensor_dims(full);
  int64_t idx[SM_MAX_RANK] = {0};
  size_t es = sm_dtype_size(dtype);
  int64_t inner = rank ? count[rank - 1] : 1;
  for (int64_t o = 0; o < n; o += inner) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off = off * fd[d] + start[d] + idx[d];
    if (dtype == SM_STRING) {
      for (int64_t k = 0; k < inner && !s; k++) {
        size_t len;
        const char *str = sm_tensor_string(full, off + k, &len);
        s = sm_tensor_set_string(*out, o + k, str, len);
      }
      if (s) {
        sm_tensor_free(*out);
        *out = NULL;
        return s;
      }
    } else {
      memcpy((char *)sm_tensor_data(*out) + (size_t)o * es, (const char *)sm_tensor_data(full) + (size_t)off * es,
             (size_t)inner * es);
    }
    /* advance idx over all dims but the last */
    for (int d = rank - 2; d >= 0; d--) {
      if (++idx[d] < count[d]) break;
      idx[d] = 0;
    }
  }
  return NULL;
}

static sm_status *restore_one(const sm_bundle *b, const char *prefix, const char *name, int dtype, const char *spec,
                              size_t spec_len, sm_tensor **out) {
  sm_bundle_entry e;
  sm_status *s = sm_bundle_lookup(b, name, &e);
  if (s) {
    if (sm_status_code(s) == SM_NOT_FOUND) {
      sm_status_free(s);
      return sm_status_new(SM_NOT_FOUND, "key %s not found in checkpoint %s", name, prefix);
    }
    return s;
  }
  if (e.dtype != dtype)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "expected to restore a tensor of type %s, got a tensor of type %s instead: "
                         "tensor_name = %s",
                         dname(dtype), dname(e.dtype), name);
  sm_tensor *full;
  s = sm_bundle_read(b, name, &full);
  if (s) return s;
  if (spec_len == 0) {
    *out = full;
    return NULL;
  }
  int rank;
  int64_t fd[SM_MAX_RANK], st[SM_MAX_RANK], cnt[SM_MAX_RANK];
  s = parse_slice(spec, spec_len, name, &rank, fd, st, cnt);
  if (!s && (rank != sm_tensor_rank(full) || (rank && memcmp(fd, sm_tensor_dims(full), (size_t)rank * sizeof *fd)))) {
    char a[128], c[128];
    s = sm_status_new(SM_INVALID_ARGUMENT, "tensor %s has shape %s in the checkpoint, the slice spec says %s", name,
                      sm_shape_str(sm_tensor_rank(full), sm_tensor_dims(full), a, sizeof a),
                      sm_shape_str(rank, fd, c, sizeof c));
  }
  if (!s) s = extract_slice(full, rank, st, cnt, out);
  sm_tensor_free(full);
  return s;
}

/* The checkpoint's index and shards are read through the runtime's confined opener (a map: no
 * size limit, the index says what is read). */
static sm_status *confined_open(void *ctx, const char *path, sm_file_map *m) {
  return sm__kctx_open_file(ctx, path, UINT64_MAX, m);
}

static sm_status *restore_compute(const void *state, sm_kctx *ctx) {
  const restore_state *st = state;
  const sm_tensor *prefix_t, *names, *slices;
  sm_status *s = want_string(ctx, 0, "prefix", &prefix_t);
  if (!s) s = want_string(ctx, 1, "tensor_names", &names);
  if (!s) s = want_string(ctx, 2, "shape_and_slices", &slices);
  if (s) return s;
  if (sm_tensor_num_elements(prefix_t) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "prefix must have 1 element, has %lld",
                         (long long)sm_tensor_num_elements(prefix_t));
  if (sm_tensor_num_elements(names) != st->n || sm_tensor_num_elements(slices) != st->n)
    return sm_status_new(SM_INVALID_ARGUMENT, "%d dtypes but %lld tensor_names and %lld shape_and_slices", st->n,
                         (long long)sm_tensor_num_elements(names), (long long)sm_tensor_num_elements(slices));
  size_t plen;
  const char *praw = sm_tensor_string(prefix_t, 0, &plen);
  char *prefix = sm__kctx_scratch(ctx, plen + 1, &s);
  if (!prefix) return s;
  memcpy(prefix, praw, plen);
  prefix[plen] = 0;
  if (strlen(prefix) != plen) return sm_status_new(SM_INVALID_ARGUMENT, "checkpoint prefix contains a NUL byte");
  sm_bundle *b;
  s = sm__bundle_open_with(prefix, confined_open, ctx, &b);
  if (s) return s;
  char *name = NULL;
  for (int i = 0; i < st->n && !s; i++) {
    size_t nlen, slen;
    const char *nraw = sm_tensor_string(names, i, &nlen);
    const char *spec = sm_tensor_string(slices, i, &slen);
    char *nn = sm__kctx_scratch_realloc(ctx, name, nlen + 1, &s);
    if (!nn) break;
    name = nn;
    memcpy(name, nraw, nlen);
    name[nlen] = 0;
    if (strlen(name) != nlen) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "tensor_names[%d] contains a NUL byte", i);
      break;
    }
    sm_tensor *t;
    s = restore_one(b, prefix, name, st->dtypes[i], spec, slen, &t);
    if (!s) sm__kctx_set_output(ctx, i, t);
  }
  sm__kctx_scratch_free(ctx, name);
  sm__kctx_scratch_free(ctx, prefix);
  sm_bundle_close(b);
  return s;
}

/* ---- ShardedFilename ------------------------------------------------------------------------ */

static sm_status *sharded_filename_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *base;
  sm_status *s = want_string(ctx, 0, "basename", &base);
  if (s) return s;
  const sm_tensor *shard = sm__kctx_input(ctx, 1), *num = sm__kctx_input(ctx, 2);
  if (sm_tensor_rank(base) != 0 || sm_tensor_rank(shard) != 0 || sm_tensor_rank(num) != 0 ||
      sm_tensor_dtype(shard) != SM_INT32 || sm_tensor_dtype(num) != SM_INT32)
    return sm_status_new(SM_INVALID_ARGUMENT, "ShardedFilename takes a string scalar and two int32 scalars");
  size_t blen;
  const char *b = sm_tensor_string(base, 0, &blen);
  char suffix[64];
  int k = snprintf(suffix, sizeof suffix, "-%05d-of-%05d", *(const int32_t *)sm_tensor_data(shard),
                   *(const int32_t *)sm_tensor_data(num));
  char *buf = sm__kctx_scratch(ctx, blen + (size_t)k + 1, &s);
  if (!buf) return s;
  memcpy(buf, b, blen);
  memcpy(buf + blen, suffix, (size_t)k);
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 0, NULL, &out);
  if (!s) s = sm_tensor_set_string(out, 0, buf, blen + (size_t)k);
  sm__kctx_scratch_free(ctx, buf);
  return s;
}

/* ---- StringJoin ----------------------------------------------------------------------------- */

typedef struct {
  char *sep;
  size_t sep_len;
} join_state;

static void join_release(void *p) {
  join_state *st = p;
  if (st) free(st->sep);
  free(st);
}

static sm_status *join_prepare(const sm_node *node, void **state) {
  const char *sep = "";
  size_t len = 0;
  if (sm__node_attr(node, "separator")) {
    sm_status *s = sm__node_attr_string(node, "separator", &sep, &len);
    if (s) return s;
  }
  join_state *st = calloc(1, sizeof *st);
  if (!st || !(st->sep = malloc(len + 1))) {
    free(st);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  memcpy(st->sep, sep, len);
  st->sep_len = len;
  *state = st;
  return NULL;
}

static sm_status *join_compute(const void *state, sm_kctx *ctx) {
  const join_state *st = state;
  int n = sm__kctx_num_inputs(ctx);
  const sm_tensor *shape_of = NULL;
  for (int i = 0; i < n; i++) {
    const sm_tensor *t;
    sm_status *s = want_string(ctx, i, "every input", &t);
    if (s) return s;
    if (sm_tensor_rank(t) == 0) continue;
    if (!shape_of) {
      shape_of = t;
    } else if (sm_tensor_rank(t) != sm_tensor_rank(shape_of) ||
               memcmp(sm_tensor_dims(t), sm_tensor_dims(shape_of), (size_t)sm_tensor_rank(t) * sizeof(int64_t))) {
      char a[128], b[128];
      return sm_status_new(SM_INVALID_ARGUMENT, "inputs must be scalars or have the same shape: %s vs %s",
                           sm_shape_str(sm_tensor_rank(shape_of), sm_tensor_dims(shape_of), a, sizeof a),
                           sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, sizeof b));
    }
  }
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_STRING, shape_of ? sm_tensor_rank(shape_of) : 0,
                                      shape_of ? sm_tensor_dims(shape_of) : NULL, &out);
  if (s) return s;
  int64_t m = sm_tensor_num_elements(out);
  char *buf = NULL;
  for (int64_t e = 0; e < m && !s; e++) {
    size_t total = 0;
    for (int i = 0; i < n; i++) {
      const sm_tensor *t = sm__kctx_input(ctx, i);
      size_t len;
      sm_tensor_string(t, sm_tensor_rank(t) ? e : 0, &len);
      if (sm__add_size(total, len, &total) || (i && sm__add_size(total, st->sep_len, &total)) ||
          total > SM_MAX_TENSOR_BYTES) {
        s = sm_status_new(SM_OUT_OF_RANGE, "joined string is too long");
        break;
      }
    }
    if (s) break;
    char *nb = sm__kctx_scratch_realloc(ctx, buf, total, &s);
    if (!nb) break;
    buf = nb;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
      const sm_tensor *t = sm__kctx_input(ctx, i);
      size_t len;
      const char *p = sm_tensor_string(t, sm_tensor_rank(t) ? e : 0, &len);
      if (i && st->sep_len) {
        memcpy(buf + at, st->sep, st->sep_len);
        at += st->sep_len;
      }
      if (len) memcpy(buf + at, p, len);
      at += len;
    }
    s = sm_tensor_set_string(out, e, buf, at);
  }
  sm__kctx_scratch_free(ctx, buf);
  return s;
}

/* ---- StaticRegexFullMatch ------------------------------------------------------------------- */

typedef struct {
  uint32_t cp;  /* code point to match; ignored for '.' */
  uint8_t any;  /* '.' */
  uint8_t min;  /* 0 or 1 */
  uint8_t many; /* no upper bound */
} re_atom;

typedef struct {
  int n;
  re_atom *atoms;
  void *re2; /* a pattern outside the subset: RE2's (regex.h) */
} re_state;

static void re_release(void *p) {
  re_state *st = p;
  if (st) free(st->atoms), sm__re2_free(st->re2);
  free(st);
}

/* One UTF-8 code point from p (n > 0 bytes left); an invalid byte decodes as 0x110000 + byte, a
 * unit nothing matches ('.' included: RE2's '.' is a well-formed UTF-8 sequence). */
static uint32_t utf8_next(const uint8_t *p, size_t n, size_t *used) {
  uint8_t c = p[0];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 1) {
    *used = 1;
    return c;
  }
  if (len == 0 || (size_t)len > n) goto bad;
  uint32_t cp = c & (0x7f >> len);
  for (int i = 1; i < len; i++) {
    if ((p[i] & 0xc0) != 0x80) goto bad;
    cp = cp << 6 | (p[i] & 0x3f);
  }
  static const uint32_t minimum[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < minimum[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) goto bad;
  *used = (size_t)len;
  return cp;
bad:
  *used = 1;
  return 0x110000u + c;
}

static sm_status *re_prepare(const sm_node *node, void **state) {
  const char *pat;
  size_t len;
  sm_status *s = sm__node_attr_string(node, "pattern", &pat, &len);
  if (s) return s;
  re_state *st = calloc(1, sizeof *st);
  if (!st || !(st->atoms = calloc(len ? len : 1, sizeof *st->atoms))) {
    free(st);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  const uint8_t *p = (const uint8_t *)pat, *end = p + len;
  /* Full match: leading ^ and trailing $ change nothing. */
  if (p < end && *p == '^') p++;
  if (end > p && end[-1] == '$' && (end - p < 2 || end[-2] != '\\')) end--;
  const char *why = NULL;
  while (p < end && !why) {
    re_atom a = {0, 0, 1, 0};
    if (*p == '.') {
      a.any = 1;
      p++;
    } else if (*p == '\\') {
      if (p + 1 >= end) {
        why = "a trailing backslash";
        break;
      }
      uint8_t c = p[1];
      if (c == 'n')
        a.cp = '\n';
      else if (c == 't')
        a.cp = '\t';
      else if (c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        a.cp = c;
      else {
        why = "a character class escape";
        break;
      }
      p += 2;
    } else if (strchr("()[]{}|^$*+?", *p)) {
      why = "groups, classes, alternation, counted repetition or a misplaced operator";
      break;
    } else {
      size_t used;
      a.cp = utf8_next(p, (size_t)(end - p), &used);
      p += used;
    }
    if (p < end && (*p == '*' || *p == '+' || *p == '?')) {
      a.min = *p != '*' && *p != '?' ? 1 : 0;
      a.many = *p != '?';
      p++;
      if (p < end && (*p == '*' || *p == '+' || *p == '?')) {
        why = "a doubled or non-greedy quantifier";
        break;
      }
    }
    st->atoms[st->n++] = a;
  }
  if (why) { /* RE2 itself, when the library has it */
    s = sm__re2_compile("StaticRegexFullMatch", pat, len, &st->re2);
    if (s && sm_status_code(s) == SM_UNIMPLEMENTED) {
      sm_status_free(s);
      s = sm_status_new(SM_UNIMPLEMENTED,
                        "StaticRegexFullMatch pattern \"%.*s\" uses %s; without RE2 only literals, '.', '*', '+', "
                        "'?' and anchors are supported",
                        (int)(len > 200 ? 200 : len), pat, why);
    }
    if (s) {
      re_release(st);
      return s;
    }
  }
  *state = st;
  return NULL;
}

static void re_close(const re_state *st, uint8_t *set) {
  /* epsilon moves: skip atoms that may match zero times (left to right suffices) */
  for (int i = 0; i < st->n; i++)
    if (set[i] && st->atoms[i].min == 0) set[i + 1] = 1;
}

static int re_full_match(const re_state *st, const uint8_t *s, size_t n, uint8_t *cur, uint8_t *next) {
  memset(cur, 0, (size_t)st->n + 1);
  cur[0] = 1;
  re_close(st, cur);
  size_t i = 0;
  while (i < n) {
    size_t used;
    uint32_t c = utf8_next(s + i, n - i, &used);
    i += used;
    memset(next, 0, (size_t)st->n + 1);
    int any = 0;
    for (int k = 0; k < st->n; k++) {
      if (!cur[k]) continue;
      const re_atom *a = &st->atoms[k];
      if (a->any ? c != '\n' && c < 0x110000u : c == a->cp) { /* RE2's '.' is valid UTF-8 only */
        next[k + 1] = 1;
        if (a->many) next[k] = 1;
        any = 1;
      }
    }
    if (!any) return 0;
    re_close(st, next);
    uint8_t *t = cur;
    cur = next;
    next = t;
  }
  return cur[st->n];
}

static sm_status *re_compute(const void *state, sm_kctx *ctx) {
  const re_state *st = state;
  const sm_tensor *in;
  sm_status *s = want_string(ctx, 0, "input", &in);
  if (s) return s;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, SM_BOOL, sm_tensor_rank(in), sm_tensor_dims(in), &out);
  if (s) return s;
  uint8_t *sets = sm__kctx_scratch(ctx, 2 * ((size_t)st->n + 1), &s);
  if (!sets) return s;
  int64_t n = sm_tensor_num_elements(in);
  uint8_t *o = sm_tensor_data(out);
  for (int64_t i = 0; i < n; i++) {
    size_t len;
    const char *p = sm_tensor_string(in, i, &len);
    o[i] = (uint8_t)(st->re2 ? sm__re2_full_match(st->re2, p, len)
                             : re_full_match(st, (const uint8_t *)p, len, sets, sets + st->n + 1));
  }
  sm__kctx_scratch_free(ctx, sets);
  return NULL;
}

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_io[] = {
    {"RestoreV2", restore_prepare, restore_compute, restore_release, 0},
    {"SaveV2", NULL, NULL, NULL, SM_KERNEL_PARSE_ONLY},
    {"MergeV2Checkpoints", NULL, NULL, NULL, SM_KERNEL_PARSE_ONLY},
    {"ShardedFilename", NULL, sharded_filename_compute, NULL, 0},
    {"StringJoin", join_prepare, join_compute, join_release, 0},
    {"StaticRegexFullMatch", re_prepare, re_compute, re_release, 0},
    {0},
};

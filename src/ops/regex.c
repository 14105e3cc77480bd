/* regex.c - the regex kernel family, with RE2's semantics as TensorFlow has them: RegexReplace,
 * StaticRegexReplace (RE2::Replace, or RE2::GlobalReplace under replace_global; rewrites name groups
 * \0..\9), RegexFullMatch (RE2::FullMatch). StaticRegexFullMatch stays in io.c (its RE2 subset
 * needs no library and serves the save paths every export has); a pattern outside that subset
 * comes here through regex.h.
 *
 * RE2 is C++; the library is C. src/ops/re2_shim.cc wraps the four calls these kernels need in an
 * extern "C" module (libsavedmodel_re2.so, built only when libre2-dev is found) that is dlopened
 * here at the first regex op, so that neither the library nor the CLI links RE2 or libstdc++.
 * It is looked for where it was installed, in the build directory, beside the library this code is
 * in, then on the loader's path. Where the module was not built or cannot be opened, the ops fail
 * with SM_UNIMPLEMENTED naming RE2. SM_RE2_MODULE in the environment names another module file
 * (tests point it at nothing to check that path). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/lazylib.h"
#include "ops/regex.h"
#include "runtime/kernel.h"

/* ---- the module ------------------------------------------------------------------------------ */

typedef void *(*re_compile_fn)(const char *, size_t, char **);
typedef void (*re_free_fn)(void *);
typedef int (*re_full_fn)(const void *, const char *, size_t);
typedef int (*re_replace_fn)(const void *, const char *, size_t, const char *, size_t, int, char **, size_t *);
typedef int (*re_find_fn)(const void *, const char *, size_t, size_t *, size_t *, size_t *);

/* The module binds RE2's symbols in its own scope first (RTLD_DEEPBIND): a process that has
 * already loaded another RE2 build globally (TensorFlow's libtensorflow_framework exports its
 * own re2:: symbols) would otherwise hand the module that build's functions, whose object layout
 * differs from Debian's headers, and crash. The sanitizers refuse RTLD_DEEPBIND, so their builds
 * (never run beside TensorFlow) go without. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SM_RE2_DEEPBIND 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SM_RE2_DEEPBIND 0
#endif
#endif
#if !defined(SM_RE2_DEEPBIND) && defined(RTLD_DEEPBIND)
#define SM_RE2_DEEPBIND RTLD_DEEPBIND
#elif !defined(SM_RE2_DEEPBIND)
#define SM_RE2_DEEPBIND 0
#endif

static pthread_once_t re2_once = PTHREAD_ONCE_INIT;
static re_compile_fn re2_compile;
static re_free_fn re2_free;
static re_full_fn re2_full;
static re_replace_fn re2_replace;
static re_find_fn re2_find;
static char re2_why[256];

static void re2_try(const char *path) {
  if (re2_compile || !path || !*path) return;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | SM_RE2_DEEPBIND);
  if (!h) {
    const char *e = dlerror();
    snprintf(re2_why, sizeof re2_why, "%s", e ? e : path);
    return;
  }
  SM_BIND(h, re2_compile, "sm_re2_compile");
  SM_BIND(h, re2_free, "sm_re2_free");
  SM_BIND(h, re2_full, "sm_re2_full_match");
  SM_BIND(h, re2_replace, "sm_re2_replace");
  SM_BIND(h, re2_find, "sm_re2_find_group1");
  if (!re2_compile || !re2_free || !re2_full || !re2_replace || !re2_find) {
    snprintf(re2_why, sizeof re2_why, "%s lacks the sm_re2_* functions", path);
    re2_compile = NULL;
    dlclose(h);
  }
}

static void re2_load(void) {
  const char *env = getenv("SM_RE2_MODULE");
  snprintf(re2_why, sizeof re2_why, "the library was built without RE2 (install libre2-dev and rebuild)");
  if (env) {
    re2_try(env);
    return;
  }
#ifdef SM_RE2_MODULE_BUILD
  re2_try(SM_RE2_MODULE_INSTALL);
  re2_try(SM_RE2_MODULE_BUILD);
  /* beside the library (or program) this code is in: a relocated install, the Python package */
  Dl_info info;
  const char *slash;
  if (!re2_compile && dladdr((void *)re2_load, &info) && info.dli_fname && (slash = strrchr(info.dli_fname, '/'))) {
    char path[4096];
    if (snprintf(path, sizeof path, "%.*s/libsavedmodel_re2.so", (int)(slash - info.dli_fname), info.dli_fname) <
        (int)sizeof path)
      re2_try(path);
  }
  re2_try("libsavedmodel_re2.so"); /* the loader's search path */
#endif
}

static sm_status *re2_need(const char *op) {
  pthread_once(&re2_once, re2_load);
  if (re2_compile) return NULL;
  return sm_status_new(SM_UNIMPLEMENTED, "%s needs RE2 (libsavedmodel_re2.so): %s", op, re2_why);
}

/* Compiles pattern (TF's message on a bad one); *re is freed with re2_free. */
static sm_status *compile(const char *pat, size_t len, void **re) {
  char *err = NULL;
  *re = re2_compile(pat, len, &err);
  if (*re) return NULL;
  sm_status *s = err ? sm_status_new(SM_INVALID_ARGUMENT, "Invalid pattern: %.*s, error: %s", (int)len, pat, err)
                     : sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory compiling pattern %.*s", (int)len, pat);
  free(err); /* the module's malloc */
  return s;
}

/* ---- for io.c's StaticRegexFullMatch (regex.h) ---------------------------------------------- */

sm_status *sm__re2_compile(const char *op, const char *pat, size_t len, void **re) {
  sm_status *s = re2_need(op);
  return s ? s : compile(pat, len, re);
}

int sm__re2_full_match(const void *re, const char *s, size_t n) { return re2_full(re, s, n); }

int sm__re2_find_group1(const void *re, const char *s, size_t n, size_t *gb, size_t *ge, size_t *end) {
  return re2_find(re, s, n, gb, ge, end);
}

void sm__re2_free(void *re) {
  if (re) re2_free(re);
}

/* ---- state ----------------------------------------------------------------------------------- */

typedef struct regex_state {
  void *re;      /* the Static ops' compiled pattern; NULL for the dynamic ones */
  char *rewrite; /* StaticRegexReplace's (sm__alloc'd) */
  size_t rewrite_len;
  int global;
} regex_state;

static void regex_release(void *p) {
  regex_state *st = p;
  if (!st) return;
  if (st->re) re2_free(st->re);
  sm__free(st->rewrite);
  sm__free(st);
}

static sm_status *regex_prepare_op(const sm_node *node, void **state, const char *op, int is_static, int replace) {
  sm_status *s = re2_need(op);
  if (s) return s;
  regex_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  int64_t g = 1;
  if (replace && sm__node_attr(node, "replace_global")) {
    int b;
    s = sm__node_attr_bool(node, "replace_global", &b);
    g = b;
  }
  st->global = (int)g;
  if (!s && is_static) {
    const char *pat = "", *rw = "";
    size_t plen = 0, rlen = 0;
    s = sm__node_attr_string(node, "pattern", &pat, &plen);
    if (!s && replace) s = sm__node_attr_string(node, "rewrite", &rw, &rlen);
    if (!s && replace) {
      st->rewrite = sm__alloc(rlen + 1);
      if (!st->rewrite) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
      else memcpy(st->rewrite, rw, rlen), st->rewrite_len = rlen;
    }
    if (!s) s = compile(pat, plen, &st->re);
  }
  if (s) {
    regex_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *static_replace_prepare(const sm_node *n, void **s) {
  return regex_prepare_op(n, s, "StaticRegexReplace", 1, 1);
}
static sm_status *replace_prepare(const sm_node *n, void **s) { return regex_prepare_op(n, s, "RegexReplace", 0, 1); }
static sm_status *full_match_prepare(const sm_node *n, void **s) {
  return regex_prepare_op(n, s, "RegexFullMatch", 0, 0);
}

/* ---- compute --------------------------------------------------------------------------------- */

static sm_status *want_string(const sm_tensor *t, const char *what) {
  if (sm_tensor_dtype(t) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "%s must be a string tensor", what);
  return NULL;
}

/* A scalar string input (pattern, rewrite): TF's "<What> must be scalar, but received [2]". */
static sm_status *scalar_string(sm_kctx *ctx, int i, const char *what, const char **p, size_t *n) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  sm_status *s = want_string(t, what);
  if (s) return s;
  if (sm_tensor_rank(t) != 0) {
    char b[128];
    return sm_status_new(SM_INVALID_ARGUMENT, "%c%s must be scalar, but received %s", what[0] - 32, what + 1,
                         sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), b, sizeof b));
  }
  *p = sm_tensor_string(t, 0, n);
  return NULL;
}

static sm_status *replace_all(sm_kctx *ctx, const void *re, const char *rw, size_t rlen, int global) {
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  sm_status *s = want_string(x, "input");
  sm_tensor *y;
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  for (int64_t i = 0; !s && i < sm_tensor_num_elements(x); i++) {
    size_t n, on;
    const char *p = sm_tensor_string(x, i, &n);
    char *o;
    if (re2_replace(re, p, n, rw, rlen, global, &o, &on))
      return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory replacing in a string of %zu bytes", n);
    s = sm_tensor_set_string(y, i, o, on);
    free(o);
  }
  return s;
}

static sm_status *static_replace_compute(const void *state, sm_kctx *ctx) {
  const regex_state *st = state;
  return replace_all(ctx, st->re, st->rewrite, st->rewrite_len, st->global);
}

static sm_status *replace_compute(const void *state, sm_kctx *ctx) {
  const regex_state *st = state;
  const char *pat, *rw;
  size_t plen, rlen;
  void *re;
  sm_status *s = scalar_string(ctx, 1, "pattern", &pat, &plen);
  if (!s) s = compile(pat, plen, &re);
  if (s) return s;
  s = scalar_string(ctx, 2, "rewrite", &rw, &rlen);
  if (!s) s = replace_all(ctx, re, rw, rlen, st->global);
  re2_free(re);
  return s;
}

static sm_status *full_match_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  const char *pat;
  size_t plen;
  void *re;
  sm_status *s = want_string(x, "input");
  if (!s) s = scalar_string(ctx, 1, "pattern", &pat, &plen);
  if (!s) s = compile(pat, plen, &re);
  if (s) return s;
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, SM_BOOL, sm_tensor_rank(x), sm_tensor_dims(x), &y);
  if (!s) {
    uint8_t *out = sm_tensor_data(y);
    for (int64_t i = 0; i < sm_tensor_num_elements(x); i++) {
      size_t n;
      const char *p = sm_tensor_string(x, i, &n);
      out[i] = (uint8_t)re2_full(re, p, n);
    }
  }
  re2_free(re);
  return s;
}

const sm_kernel sm_kernels_regex[] = {
    {"StaticRegexReplace", static_replace_prepare, static_replace_compute, regex_release, 0},
    {"RegexReplace", replace_prepare, replace_compute, regex_release, 0},
    {"RegexFullMatch", full_match_prepare, full_match_compute, regex_release, 0},
    {0},
};

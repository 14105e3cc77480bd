/* tftext_sp.c - TensorFlow Text's SentencePiece kernels (text.SentencepieceTokenizer,
 * keras_hub's SentencePieceTokenizer): SentencepieceOp (the model resource, made from the
 * serialized ModelProto attr `model`, keyed by container/shared_name or the node's name under
 * use_node_name_sharing), SentencepieceTokenizeOp, SentencepieceTokenizeWithOffsetsOp (nbest_size,
 * alpha, add_bos/add_eos/reverse, out_type int32 or string, return_nbest, Tsplits int32/int64),
 * SentencepieceDetokenizeOp, SentencepieceVocabSizeOp, SentencepieceIdToStringOp and
 * SentencepieceStringToIdOp, with TF Text's semantics (tensorflow_text/core/kernels/
 * sentencepiece_kernels.cc) and SentencePiece's own errors.
 *
 * SentencePiece is C++: src/ops/sentencepiece_shim.cc is a thin extern "C" module
 * (libsavedmodel_sp.so, built only when libsentencepiece-dev is found), dlopened here at the
 * first op, as regex.c opens RE2's; without it the ops fail with SM_UNIMPLEMENTED naming
 * SentencePiece. SM_SP_MODULE in the environment names another module file.
 *
 * Sampling (nbest_size other than 0 and 1, with alpha) draws from SentencePiece's own random
 * source, as TF Text's does: its samples are valid segmentations, not TF's exact draws. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lazylib.h"
#include "ops/state_internal.h"
#include "runtime/kernel.h"
#include "runtime/resource.h"

/* ---- the module ------------------------------------------------------------------------------ */

typedef struct sp_enc {
  size_t n;
  int32_t *ids;
  int64_t *begin, *end;
  char *pieces;
  size_t *plen;
} sp_enc;

typedef void *(*sp_load_fn)(const char *, size_t, char **);
typedef void (*sp_free_fn)(void *);
typedef int (*sp_opts_fn)(void *, const char *, char **);
typedef int (*sp_encode_fn)(const void *, const char *, size_t, int, float, sp_enc *, char **);
typedef int (*sp_nbest_fn)(const void *, const char *, size_t, int, sp_enc **, size_t *, char **);
typedef void (*sp_enc_free_fn)(sp_enc *);
typedef int (*sp_decode_fn)(const void *, const int32_t *, const char *const *, const size_t *, size_t, char **,
                            size_t *, char **);
typedef int (*sp_size_fn)(const void *);
typedef const char *(*sp_id2p_fn)(const void *, int, size_t *);
typedef int (*sp_p2id_fn)(const void *, const char *, size_t);

/* As regex.c: the sanitizers refuse RTLD_DEEPBIND. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SM_SP_DEEPBIND 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SM_SP_DEEPBIND 0
#endif
#endif
#if !defined(SM_SP_DEEPBIND) && defined(RTLD_DEEPBIND)
#define SM_SP_DEEPBIND RTLD_DEEPBIND
#elif !defined(SM_SP_DEEPBIND)
#define SM_SP_DEEPBIND 0
#endif

static pthread_once_t sp_once = PTHREAD_ONCE_INIT;
static sp_load_fn f_load;
static sp_free_fn f_free;
static sp_opts_fn f_opts;
static sp_encode_fn f_encode;
static sp_nbest_fn f_nbest;
static sp_enc_free_fn f_enc_free;
static sp_decode_fn f_decode;
static sp_size_fn f_size;
static sp_id2p_fn f_id2p;
static sp_p2id_fn f_p2id;
static char sp_why[256];

static void sp_try(const char *path) {
  if (f_load || !path || !*path) return;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | SM_SP_DEEPBIND);
  if (!h) {
    const char *e = dlerror();
    snprintf(sp_why, sizeof sp_why, "%s", e ? e : path);
    return;
  }
  SM_BIND(h, f_load, "sm_sp_load");
  SM_BIND(h, f_free, "sm_sp_free");
  SM_BIND(h, f_opts, "sm_sp_set_options");
  SM_BIND(h, f_encode, "sm_sp_encode");
  SM_BIND(h, f_nbest, "sm_sp_nbest");
  SM_BIND(h, f_enc_free, "sm_sp_enc_free");
  SM_BIND(h, f_decode, "sm_sp_decode");
  SM_BIND(h, f_size, "sm_sp_piece_size");
  SM_BIND(h, f_id2p, "sm_sp_id_to_piece");
  SM_BIND(h, f_p2id, "sm_sp_piece_to_id");
  if (!f_load || !f_free || !f_opts || !f_encode || !f_nbest || !f_enc_free || !f_decode || !f_size || !f_id2p ||
      !f_p2id) {
    snprintf(sp_why, sizeof sp_why, "%s lacks the sm_sp_* functions", path);
    f_load = NULL;
    dlclose(h);
  }
}

static void sp_load_module(void) {
  const char *env = getenv("SM_SP_MODULE");
  snprintf(sp_why, sizeof sp_why,
           "the library was built without SentencePiece (install libsentencepiece-dev and rebuild)");
  if (env) {
    sp_try(env);
    return;
  }
#ifdef SM_SP_MODULE_BUILD
  sp_try(SM_SP_MODULE_INSTALL);
  sp_try(SM_SP_MODULE_BUILD);
  Dl_info info;
  const char *slash;
  if (!f_load && dladdr((void *)sp_load_module, &info) && info.dli_fname &&
      (slash = strrchr(info.dli_fname, '/'))) {
    char path[4096];
    if (snprintf(path, sizeof path, "%.*s/libsavedmodel_sp.so", (int)(slash - info.dli_fname), info.dli_fname) <
        (int)sizeof path)
      sp_try(path);
  }
  sp_try("libsavedmodel_sp.so");
#endif
}

static sm_status *sp_need(const char *op) {
  pthread_once(&sp_once, sp_load_module);
  if (f_load) return NULL;
  return sm_status_new(SM_UNIMPLEMENTED, "%s needs SentencePiece (libsavedmodel_sp.so): %s", op, sp_why);
}

/* SentencePiece's status codes are absl's; TF Text passes them through. */
static sm_status *sp_error(const char *op, int code, char *err) {
  sm_code c = code == 3   ? SM_INVALID_ARGUMENT
              : code == 5 ? SM_NOT_FOUND
              : code == 8 ? SM_RESOURCE_EXHAUSTED
              : code == 9 ? SM_FAILED_PRECONDITION
              : code == 11 ? SM_OUT_OF_RANGE
              : code == 12 ? SM_UNIMPLEMENTED
                           : SM_INTERNAL;
  sm_status *s = sm_status_new(c, "%s: %s", op, err ? err : "out of memory");
  free(err); /* the module's malloc */
  return s;
}

/* ---- the resource ---------------------------------------------------------------------------- */

#define SP_MAGIC 0x53504d44u /* "SPMD" */
#define SP_RES_KIND 0x5350   /* sm__resources_object's kind tag, this file's own */

typedef struct spm {
  uint32_t magic;
  void *proc;
  pthread_rwlock_t mu; /* the options below and the processor's extra options */
  int add_bos, add_eos, reverse;
} spm;

typedef struct sp_spec {
  char *container, *name;
  const char *model;
  size_t model_len;
} sp_spec;

static void sp_spec_release(void *p) {
  sp_spec *sp = p;
  if (!sp) return;
  free(sp->container);
  free(sp->name);
  free(sp);
}

static sm_status *sp_prepare(const sm_node *node, void **state) {
  sp_spec *sp = calloc(1, sizeof *sp);
  if (!sp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = NULL;
  int by_node = 0;
  const char *sn = "";
  size_t snl = 0;
  if (sm__node_attr(node, "use_node_name_sharing")) s = sm__node_attr_bool(node, "use_node_name_sharing", &by_node);
  if (!s && sm__node_attr(node, "shared_name") && sm__node_attr_string(node, "shared_name", &sn, &snl)) snl = 0;
  if (!s && !sm__node_attr(node, "model"))
    s = sm_status_new(SM_INVALID_ARGUMENT, "SentencepieceOp: Model argument must be specified.");
  if (!s) s = sm__node_attr_string(node, "model", &sp->model, &sp->model_len);
  if (!s && !sp->model_len) s = sm_status_new(SM_INVALID_ARGUMENT, "SentencepieceOp: Model argument must be specified.");
  if (!s) s = sm__state_names(node, &sp->container, &sp->name);
  if (!s && by_node && !snl) { /* TF's ContainerInfo: the node's name is the shared name */
    free(sp->name);
    const char *nn = sm__node_name(node);
    sp->name = malloc(strlen(nn) + 1);
    if (!sp->name) s = sm_status_new(SM_NO_MEMORY, "out of memory");
    else strcpy(sp->name, nn);
  }
  if (s) {
    sp_spec_release(sp);
    return s;
  }
  *state = sp;
  return NULL;
}

static void spm_destroy(void *obj) {
  spm *m = obj;
  if (!m) return;
  if (m->proc) f_free(m->proc);
  pthread_rwlock_destroy(&m->mu);
  free(m);
}

static sm_status *spm_make(void *arg, const char *dname, void **obj) {
  const sp_spec *sp = arg;
  spm *m = calloc(1, sizeof *m);
  if (!m) return sm_status_new(SM_NO_MEMORY, "SentencepieceOp '%s': out of memory", dname);
  char *err = NULL;
  m->proc = f_load(sp->model, sp->model_len, &err);
  if (!m->proc) {
    free(m);
    return sp_error("SentencepieceOp: the model attr is not a SentencePiece ModelProto", 3, err);
  }
  m->magic = SP_MAGIC;
  pthread_rwlock_init(&m->mu, NULL);
  *obj = m;
  return NULL;
}

static sm_status *sp_compute(const void *state, sm_kctx *ctx) {
  const sp_spec *sp = state;
  sm_status *s = sp_need("SentencepieceOp");
  if (s) return s;
  if ((s = sm__kctx_charge_check(ctx, sp->model_len, "a SentencePiece model"))) return s;
  void *obj;
  if ((s = sm__resources_object(sm__kctx_resources(ctx), SP_RES_KIND, sp->container, sp->name, spm_make, (void *)sp,
                                spm_destroy, &obj)))
    return s;
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_RESOURCE, 0, NULL, &out))) return s;
  ((void **)sm_tensor_data(out))[0] = obj;
  return NULL;
}

/* Input 0 as a SentencePiece model. */
static sm_status *spm_of(const char *op, sm_kctx *ctx, spm **out) {
  *out = NULL;
  sm_status *s = sp_need(op);
  if (s) return s;
  const sm_tensor *t = sm__kctx_input(ctx, 0);
  if (!t || sm_tensor_dtype(t) != SM_RESOURCE || sm_tensor_num_elements(t) != 1 || !sm_tensor_data(t))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input 0 (sp_handle) is not a resource handle scalar", op);
  spm *m = ((void *const *)sm_tensor_data(t))[0];
  if (!m || m->magic != SP_MAGIC)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input 0 (sp_handle) is not a SentencePiece model (SentencepieceOp)",
                         op);
  *out = m;
  return NULL;
}

/* A bool scalar input. */
static sm_status *bool_in(const char *op, sm_kctx *ctx, int i, const char *name, int *v) {
  const sm_tensor *t = sm__kctx_input(ctx, i);
  if (!t || sm_tensor_dtype(t) != SM_BOOL || sm_tensor_num_elements(t) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must be a bool scalar", op, name);
  *v = ((const uint8_t *)sm_tensor_data(t))[0] != 0;
  return NULL;
}

/* TF Text's HandleExtraOptions: inputs first..first+2 (add_bos, add_eos, reverse) set on the
 * shared model when they differ; returns with m->mu read-locked on success. */
static sm_status *sp_options_rdlock(const char *op, sm_kctx *ctx, spm *m, int first) {
  int bos, eos, rev;
  sm_status *s = bool_in(op, ctx, first, "add_bos", &bos);
  if (!s) s = bool_in(op, ctx, first + 1, "add_eos", &eos);
  if (!s) s = bool_in(op, ctx, first + 2, "reverse", &rev);
  if (s) return s;
  for (;;) {
    pthread_rwlock_rdlock(&m->mu);
    if (m->add_bos == bos && m->add_eos == eos && m->reverse == rev) return NULL;
    pthread_rwlock_unlock(&m->mu);
    pthread_rwlock_wrlock(&m->mu);
    if (m->add_bos != bos || m->add_eos != eos || m->reverse != rev) {
      char o[32] = "";
      if (bos) strcat(o, "bos");
      if (eos) strcat(o, *o ? ":eos" : "eos");
      if (rev) strcat(o, *o ? ":reverse" : "reverse");
      char *err = NULL;
      int rc = f_opts(m->proc, o, &err);
      if (rc) {
        pthread_rwlock_unlock(&m->mu);
        return sp_error(op, rc, err);
      }
      m->add_bos = bos, m->add_eos = eos, m->reverse = rev;
    }
    pthread_rwlock_unlock(&m->mu);
  }
}

/* ---- tokenize -------------------------------------------------------------------------------- */

typedef struct tok_spec {
  int out_type, tsplits, nbest, offsets;
} tok_spec;

static sm_status *tok_prepare_common(const sm_node *node, void **state, int offsets) {
  tok_spec *t = calloc(1, sizeof *t);
  if (!t) return sm_status_new(SM_NO_MEMORY, "out of memory");
  t->out_type = SM_INT32, t->tsplits = SM_INT64, t->offsets = offsets;
  const char *op = sm__node_op(node);
  sm_status *s = NULL;
  if (sm__node_attr(node, "out_type")) s = sm__node_attr_type(node, "out_type", &t->out_type);
  if (!s && sm__node_attr(node, "Tsplits")) s = sm__node_attr_type(node, "Tsplits", &t->tsplits);
  if (!s && sm__node_attr(node, "return_nbest")) s = sm__node_attr_bool(node, "return_nbest", &t->nbest);
  if (!s && t->out_type != SM_INT32 && t->out_type != SM_STRING)
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s: out_type must be int32 or string", op);
  if (!s && t->tsplits != SM_INT32 && t->tsplits != SM_INT64)
    s = sm_status_new(SM_INVALID_ARGUMENT, "%s: Tsplits must be int32 or int64", op);
  if (s) {
    free(t);
    return s;
  }
  *state = t;
  return NULL;
}
static sm_status *tok_prepare(const sm_node *n, void **st) { return tok_prepare_common(n, st, 0); }
static sm_status *tokoff_prepare(const sm_node *n, void **st) { return tok_prepare_common(n, st, 1); }

/* A per-element int32 / float input: a scalar, or a vector of the input's length. */
static sm_status *per_elem(const char *op, const sm_tensor *t, int dtype, const char *name, int64_t n) {
  if (!t || sm_tensor_dtype(t) != dtype || sm_tensor_rank(t) > 1 ||
      (sm_tensor_rank(t) == 1 && sm_tensor_dims(t)[0] != n))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %s must be a scalar or a vector of the input's length %lld", op,
                         name, (long long)n);
  return NULL;
}

static sm_status *tok_compute(const void *state, sm_kctx *ctx) {
  const tok_spec *ts = state;
  const char *op = ts->offsets ? "SentencepieceTokenizeWithOffsetsOp" : "SentencepieceTokenizeOp";
  spm *m;
  sm_status *s = spm_of(op, ctx, &m);
  if (s) return s;
  const sm_tensor *in = sm__kctx_input(ctx, 1), *nb = sm__kctx_input(ctx, 2), *al = sm__kctx_input(ctx, 3);
  if (!in || sm_tensor_dtype(in) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input must be a string tensor", op);
  int64_t n = sm_tensor_num_elements(in);
  if ((s = per_elem(op, nb, SM_INT32, "nbest_size", n)) || (s = per_elem(op, al, SM_FLOAT, "alpha", n))) return s;
  const int32_t *nbv = sm_tensor_data(nb);
  const float *alv = sm_tensor_data(al);
  if (ts->nbest) {
    if (sm_tensor_rank(nb) != 0)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: When return_nbest is true nbest_size must be a scalar; got[%lld]instead",
                           op, (long long)sm_tensor_dims(nb)[0]);
    if (nbv[0] < 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: When return_nbest is true nbest_size must be >= 1; got %d", op,
                           (int)nbv[0]);
  }
  if ((s = sp_options_rdlock(op, ctx, m, 4))) return s;
  /* every row's encoding, in order (nbest: each input's candidates one after another) */
  sp_enc *rows = NULL;
  size_t nrows = 0, cap = 0, total = 0;
  for (int64_t i = 0; !s && i < n; i++) {
    size_t len = 0;
    const char *str = sm_tensor_string(in, i, &len);
    int nbest = nbv[sm_tensor_rank(nb) == 1 ? i : 0];
    float alpha = alv[sm_tensor_rank(al) == 1 ? i : 0];
    char *err = NULL;
    sp_enc *got = NULL, one;
    size_t k = 1;
    int rc;
    if (ts->nbest) rc = f_nbest(m->proc, str, len, nbest, &got, &k, &err);
    else rc = f_encode(m->proc, str, len, nbest, alpha, &one, &err), got = &one;
    if (rc) {
      s = sp_error(op, rc, err);
      break;
    }
    if (nrows + k > cap) {
      size_t nc = (cap ? cap * 2 : 16) + k;
      sp_enc *r = realloc(rows, nc * sizeof *r);
      if (!r) s = sm_status_new(SM_NO_MEMORY, "%s: out of memory", op);
      else rows = r, cap = nc;
    }
    for (size_t j = 0; j < k; j++) {
      if (s) f_enc_free(&got[j]);
      else rows[nrows++] = got[j], total += got[j].n;
    }
    if (ts->nbest) free(got); /* the module's malloc */
    if (!s && (i & 63) == 63) s = sm__kctx_check_stop(ctx);
  }
  pthread_rwlock_unlock(&m->mu);
  sm_tensor *vals = NULL, *splits = NULL, *st = NULL, *li = NULL;
  int64_t d = (int64_t)total, sd = (int64_t)nrows + 1;
  if (!s) s = sm__kctx_alloc_output(ctx, 0, ts->out_type, 1, &d, &vals);
  if (!s) s = sm__kctx_alloc_output(ctx, 1, ts->tsplits, 1, &sd, &splits);
  if (!s && ts->offsets) s = sm__kctx_alloc_output(ctx, 2, SM_INT64, 1, &d, &st);
  if (!s && ts->offsets) s = sm__kctx_alloc_output(ctx, 3, SM_INT64, 1, &d, &li);
  int64_t at = 0;
  for (size_t r = 0; !s && r < nrows; r++) {
    const sp_enc *e = &rows[r];
    size_t po = 0;
    for (size_t j = 0; !s && j < e->n; j++, at++) {
      if (ts->out_type == SM_INT32) ((int32_t *)sm_tensor_data(vals))[at] = e->ids[j];
      else s = sm_tensor_set_string(vals, at, e->pieces + po, e->plen[j]);
      po += e->plen[j];
      if (st) ((int64_t *)sm_tensor_data(st))[at] = e->begin[j], ((int64_t *)sm_tensor_data(li))[at] = e->end[j];
    }
    if (ts->tsplits == SM_INT32) ((int32_t *)sm_tensor_data(splits))[r + 1] = (int32_t)at;
    else ((int64_t *)sm_tensor_data(splits))[r + 1] = at;
  }
  for (size_t r = 0; r < nrows; r++) f_enc_free(&rows[r]);
  free(rows);
  return s;
}

/* ---- detokenize ------------------------------------------------------------------------------ */

static sm_status *detok_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const char *op = "SentencepieceDetokenizeOp";
  spm *m;
  sm_status *s = spm_of(op, ctx, &m);
  if (s) return s;
  const sm_tensor *v = sm__kctx_input(ctx, 1), *sp = sm__kctx_input(ctx, 2);
  int vt = v ? sm_tensor_dtype(v) : -1, st = sp ? sm_tensor_dtype(sp) : -1;
  if (vt != SM_INT32 && vt != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_values must be int32 or string", op);
  if (st != SM_INT32 && st != SM_INT64)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_splits must be int32 or int64", op);
  int64_t nv = sm_tensor_num_elements(v), ns = sm_tensor_num_elements(sp);
  if (ns <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input_splits must have at least 1 element.", op);
  int64_t prev = 0;
  for (int64_t i = 0; i < ns; i++) {
    int64_t x = st == SM_INT32 ? ((const int32_t *)sm_tensor_data(sp))[i] : ((const int64_t *)sm_tensor_data(sp))[i];
    if (x > nv)
      return sm_status_new(SM_OUT_OF_RANGE, "%s: Splits and values do not match; split %lld but values size is %lld",
                           op, (long long)x, (long long)nv);
    if (x < prev || (i == 0 && x != 0))
      return sm_status_new(SM_OUT_OF_RANGE, "%s: Invalid splits; split %lld is %lld", op, (long long)i, (long long)x);
    prev = x;
  }
  int64_t nout = ns - 1;
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 1, &nout, &out))) return s;
  if ((s = sp_options_rdlock(op, ctx, m, 3))) return s;
  const char **pp = NULL;
  size_t *pl = NULL;
  if (vt == SM_STRING && nv > 0) {
    pp = malloc((size_t)nv * sizeof *pp);
    pl = malloc((size_t)nv * sizeof *pl);
    if (!pp || !pl) s = sm_status_new(SM_NO_MEMORY, "%s: out of memory", op);
    for (int64_t i = 0; !s && i < nv; i++) pp[i] = sm_tensor_string(v, i, &pl[i]);
  }
  /* TF Text decodes nothing when there are no values: every output stays "" */
  for (int64_t i = 0; !s && nv > 0 && i < nout; i++) {
    int64_t b, e;
    if (st == SM_INT32) b = ((const int32_t *)sm_tensor_data(sp))[i], e = ((const int32_t *)sm_tensor_data(sp))[i + 1];
    else b = ((const int64_t *)sm_tensor_data(sp))[i], e = ((const int64_t *)sm_tensor_data(sp))[i + 1];
    char *txt = NULL, *err = NULL;
    size_t tl = 0;
    int rc = vt == SM_INT32
                 ? f_decode(m->proc, (const int32_t *)sm_tensor_data(v) + b, NULL, NULL, (size_t)(e - b), &txt, &tl, &err)
                 : f_decode(m->proc, NULL, pp + b, pl + b, (size_t)(e - b), &txt, &tl, &err);
    if (rc) s = sp_error(op, rc, err);
    else s = sm_tensor_set_string(out, i, txt, tl);
    free(txt);
  }
  pthread_rwlock_unlock(&m->mu);
  free(pp);
  free(pl);
  return s;
}

/* ---- vocabulary ------------------------------------------------------------------------------ */

static sm_status *vocab_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  spm *m;
  sm_status *s = spm_of("SentencepieceVocabSizeOp", ctx, &m);
  sm_tensor *out;
  if (s || (s = sm__kctx_alloc_output(ctx, 0, SM_INT32, 0, NULL, &out))) return s;
  ((int32_t *)sm_tensor_data(out))[0] = f_size(m->proc);
  return NULL;
}

static sm_status *id2s_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const char *op = "SentencepieceIdToStringOp";
  spm *m;
  sm_status *s = spm_of(op, ctx, &m);
  if (s) return s;
  const sm_tensor *in = sm__kctx_input(ctx, 1);
  if (!in || sm_tensor_dtype(in) != SM_INT32) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input must be int32", op);
  int64_t n = sm_tensor_num_elements(in), size = f_size(m->proc);
  const int32_t *ids = sm_tensor_data(in);
  for (int64_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= size) /* TF Text reads past the model's pieces; refused here */
      return sm_status_new(SM_INVALID_ARGUMENT, "%s: id %d at index %lld is outside the vocabulary [0, %lld)", op,
                           (int)ids[i], (long long)i, (long long)size);
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_STRING, sm_tensor_rank(in), sm_tensor_dims(in), &out))) return s;
  for (int64_t i = 0; !s && i < n; i++) {
    size_t len = 0;
    const char *p = f_id2p(m->proc, ids[i], &len);
    s = sm_tensor_set_string(out, i, p, len);
  }
  return s;
}

static sm_status *s2id_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const char *op = "SentencepieceStringToIdOp";
  spm *m;
  sm_status *s = spm_of(op, ctx, &m);
  if (s) return s;
  const sm_tensor *in = sm__kctx_input(ctx, 1);
  if (!in || sm_tensor_dtype(in) != SM_STRING) return sm_status_new(SM_INVALID_ARGUMENT, "%s: input must be string", op);
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_INT32, sm_tensor_rank(in), sm_tensor_dims(in), &out))) return s;
  int64_t n = sm_tensor_num_elements(in);
  for (int64_t i = 0; i < n; i++) {
    size_t len = 0;
    const char *p = sm_tensor_string(in, i, &len);
    ((int32_t *)sm_tensor_data(out))[i] = f_p2id(m->proc, p, len);
  }
  return NULL;
}

const sm_kernel sm_kernels_tftext_sp[] = {
    {"SentencepieceOp", sp_prepare, sp_compute, sp_spec_release, 0},
    {"SentencepieceTokenizeOp", tok_prepare, tok_compute, free, 0},
    {"SentencepieceTokenizeWithOffsetsOp", tokoff_prepare, tok_compute, free, 0},
    {"SentencepieceDetokenizeOp", NULL, detok_compute, NULL, 0},
    {"SentencepieceVocabSizeOp", NULL, vocab_compute, NULL, 0},
    {"SentencepieceIdToStringOp", NULL, id2s_compute, NULL, 0},
    {"SentencepieceStringToIdOp", NULL, s2id_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};

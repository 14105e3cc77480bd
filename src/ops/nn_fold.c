/* nn_fold.c - inference BatchNorm folded into the convolution before it: the graph rewrite rule
 * (sm_rewrites_nn_fold, run by the plan's rewrite pass, src/runtime/rewrite.h) and the kernel of
 * the helper node it emits (_SmFoldBN, a system op of src/graph/builtin_ops.c).
 *
 * The pattern is the one Keras 3 exports for Conv2D [+ bias] + BatchNormalization (inference):
 *   c = Conv2D(x, f) [-> BiasAdd(c, bias)] -> Mul(·, scale) -> AddV2|Add(·, shift) [-> Relu|Relu6]
 * where scale = gamma * rsqrt(variance + eps) and shift = beta - mean * scale are computed in the
 * graph from the variables every run (five nodes per BatchNorm: when they are exactly that,
 * sm__nn_bn_params_match, the helper takes gamma, beta, mean and variance instead and computes
 * them itself; the rewrite driver drops the five, or, where Keras first reshapes the four to
 * [1, .., 1, C], those nodes join the fused chain). It becomes two nodes:
 *   ff, fb = _SmFoldBN(f, scale, shift[, bias])     ff = f * scale (per output channel),
 *                                                   fb = [bias * scale +] shift
 *   _FusedConv2D(x, ff, fb, fused_ops [BiasAdd[, Relu|Relu6]])
 * and a residual AddV2(·, shortcut) [-> Relu|Relu6] after the BatchNorm joins the fused node as
 * nn_fuse.c's rule joins it (fused_ops [BiasAdd, Add[, Relu|Relu6]], args [fb, shortcut]).
 * which is what the chain computes, up to float rounding (conv(x, f * s) + b * s + t instead of
 * (conv(x, f) + b) * s + t), as TensorFlow's grappler folds it too. The same for an inference
 * FusedBatchNorm[V2|V3] (is_training false, NHWC) after the conv [+ bias]: the helper then also takes
 * mean and variance (num_stats 2) and computes TF's s = scale * rsqrt(variance + epsilon),
 * t = offset - mean * s itself; its batch statistics outputs must be unused when it ends the chain.
 *
 * Exactness when variables change: nothing is folded at load. _SmFoldBN reads its inputs every run
 * and keeps its last result with a key: a reference to the filter tensor it folded (a variable's
 * value or a Const's is never written in place: an assignment swaps in a new tensor, so while the
 * key holds a reference the same pointer means the same values) and a copy of the small inputs
 * (scale, shift, bias: compared byte for byte, with their shapes; or, attr _sm_cache_inputs, when
 * each is a variable's or Const's value or a view of one (Reshape, Squeeze, ...), a reference to
 * it compared by data pointer and shape, same_view). Any change, an assigned
 * variable included, misses the key and folds again. A helper that reads all its inputs itself
 * (_SmFoldBNVars with no node input) skips even the reads while no variable of the process was
 * assigned since it last read them (sm__variables_generation, fold_state.gen). The rule emits the node only when the filter
 * comes from a ReadVariableOp (or state.c's _SmReadVariable) or a Const and is not fed (a caller's
 * fed tensor could be rewritten between runs under the same pointer); the kernel trusts the
 * pointer only when attr _sm_cache says so, and otherwise folds every run. Memory: with the
 * cache, a filter that wraps the mapped checkpoint gives its resident pages back once folded
 * (sm__tensor_drop_pages: read again from the file only on a refold; the first fold only), so the
 * weights are resident as the folded copy (and the oneDNN pack made from it), not a third time as
 * the variable's value. Helpers of different plans (a model's signatures) folding the same tensors
 * share one folded copy (shared_fold below). The loader runs the helpers whose inputs need no feed
 * at load (SM_KERNEL_PRELOAD, sm__plan_preload), so a model's first call finds its folds made.
 *
 * A DepthwiseConv2dNative (padding SAME or VALID) heads the same chains, without the residual Add:
 * _SmFoldBN (attr _sm_depthwise) scales its [kh, kw, c, m] filter per output channel c*m, and a
 * _FusedDepthwiseConv2dNative (TF's op) takes the folded filter and bias. A zero Pad before a VALID
 * Conv2D or depthwise (Keras' ZeroPadding2D) joins the chain too: the fused node reads the Pad's
 * input and pads as it convolves (attr _sm_explicit_paddings, sm__nn_depthwise_pad in nn_fuse.c).
 *
 * The rule applies only to float NHWC Conv2D / depthwise chains whose every intermediate value is read by the
 * next node alone (not fetched, not fed, no control edges: sm__rewrite_can_fuse), with no TF1 ref
 * reads, and whose scale and shift are not computed from a source the conv's input comes from too
 * (shares_source: an activation added after a scaled conv, as in InceptionResNetV2's residual
 * blocks, is no BatchNorm and is left alone). They must be per output channel (scalars, or
 * [.., 1, C] of rank <= 4): that is checked at run time, where the shapes are known; another shape
 * (one TF would broadcast over the conv output's H or W) fails the run naming the node, since the
 * fused convolution cannot compute it. This family is offered before nn (files in name order), so a Conv2D that heads a
 * BatchNorm chain is folded here rather than fused with its BiasAdd alone. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/tensor_internal.h"
#include "graph/synth.h"
#include "ops/nn_internal.h"
#include "runtime/kernel.h"
#include "runtime/resource.h"
#include "runtime/rewrite.h"

/* ---- _SmFoldBN ----------------------------------------------------------------------------- */
#define FOLD_MAX_IN 6 /* filter, scale, shift, bias, mean, variance */

typedef struct fold_state {
  int cache;          /* attr _sm_cache: the filter's pointer may key the cache */
  int depthwise;      /* attr _sm_depthwise: a [kh, kw, c, m] filter, c*m output channels */
  int has_bias;       /* num_bias */
  int stats;          /* num_stats == 2: FusedBatchNorm's mean and variance follow */
  int bcast;          /* attr _sm_broadcast: the four are Keras' variables (per_channel shapes) */
  int cache_in;       /* attr _sm_cache_inputs: the small inputs' pointers key the cache too */
  int bias_flat;      /* attr _sm_bias_flat: the bias is any shape of c floats (bias_view) */
  sm_tensor *key_in[5]; /* with cache_in: the small inputs folded last (references held) */
  float eps;
  pthread_mutex_t mu; /* runs of one plan may overlap */
  sm_tensor *key_f;   /* the filter folded last (a reference held) */
  unsigned char *key; /* the small inputs' shapes and bytes */
  size_t nkey;
  sm_tensor *ff, *fb; /* the result */
  long folds;         /* folds made (under mu) */
  /* attr _sm_vars: per logical input (filter, then the small ones) the shared_name of the variable
   * the node reads itself (the rule took its _SmReadVariable into the chain), NULL for a node input */
  int nlogical;
  char *var_name[FOLD_MAX_IN];
  sm_resources *res;               /* the resources var[] were found in (under mu) */
  sm_variable *var[FOLD_MAX_IN];
  /* every logical input a variable (var_name[] all set, no node input): the result ff, fb stands
   * while no variable was assigned since it was read (sm__variables_generation), so a run skips
   * the reads and the key; gen is the count seen before the reads of ff's inputs, in res (under mu) */
  int gen_ok;
  uint64_t gen;
  sm_resources *gen_res;
  struct shared_fold *sh; /* with cache_in: the shared result ff, fb came from (a use counted) */
} fold_state;

static void fold_release(void *state);

static sm_status *fold_prepare(const sm_node *n, void **state) {
  int cache = 0, depthwise = 0, bcast = 0, cache_in = 0, bias_flat = 0, dt;
  int64_t nb = 0, ns = 0;
  float eps = 0;
  sm_status *st = sm__node_attr_type(n, "T", &dt);
  if (!st && sm__node_attr(n, "_sm_cache")) st = sm__node_attr_bool(n, "_sm_cache", &cache);
  if (!st && sm__node_attr(n, "_sm_depthwise")) st = sm__node_attr_bool(n, "_sm_depthwise", &depthwise);
  if (!st && sm__node_attr(n, "_sm_broadcast")) st = sm__node_attr_bool(n, "_sm_broadcast", &bcast);
  if (!st && sm__node_attr(n, "_sm_cache_inputs")) st = sm__node_attr_bool(n, "_sm_cache_inputs", &cache_in);
  if (!st && sm__node_attr(n, "_sm_bias_flat")) st = sm__node_attr_bool(n, "_sm_bias_flat", &bias_flat);
  if (!st) st = sm__node_attr_int(n, "num_bias", &nb);
  if (!st) st = sm__node_attr_int(n, "num_stats", &ns);
  if (!st) st = sm__node_attr_float(n, "epsilon", &eps);
  if (st) return st;
  if (dt != SM_FLOAT) return sm_status_new(SM_UNIMPLEMENTED, "T=%s is not supported (float only)", sm_dtype_name(dt));
  if (nb > 1 || (ns != 0 && ns != 2))
    return sm_status_new(SM_INVALID_ARGUMENT, "num_bias %lld (0 or 1) / num_stats %lld (0 or 2)", (long long)nb,
                         (long long)ns);
  fold_state *s = sm__calloc(sizeof *s);
  if (!s) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating the BatchNorm fold's state");
  s->cache = cache;
  s->depthwise = depthwise;
  s->has_bias = nb == 1;
  s->stats = ns == 2;
  s->bcast = bcast;
  s->cache_in = cache && cache_in;
  s->bias_flat = bias_flat;
  s->eps = eps;
  pthread_mutex_init(&s->mu, NULL);
  *state = s;
  if (!sm__node_attr(n, "_sm_vars")) return NULL;
  size_t nv = 0;
  const ProtobufCBinaryData *names = NULL;
  st = sm__node_attr_strings(n, "_sm_vars", &names, &nv);
  if (!st && nv != (size_t)(3 + nb + ns))
    st = sm_status_new(SM_INVALID_ARGUMENT, "_sm_vars has %zu names for %lld inputs", nv, (long long)(3 + nb + ns));
  for (size_t i = 0; i < nv && !st; i++) {
    size_t len = names[i].len;
    if (!len) continue;
    if (memchr(names[i].data, 0, len))
      st = sm_status_new(SM_INVALID_ARGUMENT, "_sm_vars[%zu] contains a NUL byte", i);
    else if (!(s->var_name[i] = sm__alloc(len + 1)))
      st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating the BatchNorm fold's state");
    else
      memcpy(s->var_name[i], names[i].data, len), s->var_name[i][len] = 0;
  }
  s->nlogical = (int)nv;
  if (st) {
    fold_release(s);
    *state = NULL;
  }
  return st;
}

static void shared_drop(struct shared_fold *e);

static void fold_release(void *state) {
  fold_state *s = state;
  if (!s) return;
  shared_drop(s->sh);
  pthread_mutex_destroy(&s->mu);
  sm_tensor_free(s->key_f);
  sm_tensor_free(s->ff);
  sm_tensor_free(s->fb);
  sm__free(s->key);
  for (int i = 0; i < 5; i++) sm_tensor_free(s->key_in[i]);
  for (int i = 0; i < FOLD_MAX_IN; i++) sm__free(s->var_name[i]);
  sm__free(s);
}

/* A per-channel operand of the chain: a float scalar or [.., 1, C'] with C' in {1, c}, rank <= 4
 * (so that broadcasting it over the [N, H, W, c] conv output keeps that shape). */
static sm_status *per_channel(const sm_tensor *t, const char *what, int64_t c) {
  int r = sm_tensor_rank(t), ok = sm_tensor_dtype(t) == SM_FLOAT && r <= 4;
  for (int d = 0; d < r - 1 && ok; d++) ok = sm_tensor_dims(t)[d] == 1;
  if (ok && r) ok = sm_tensor_dims(t)[r - 1] == 1 || sm_tensor_dims(t)[r - 1] == c;
  if (ok) return NULL;
  char sh[96];
  sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), sh, sizeof sh);
  return sm_status_new(SM_UNIMPLEMENTED,
                       "the BatchNorm %s folded into the convolution has shape %s, not one value per output "
                       "channel (%lld)",
                       what, sh, (long long)c);
}

/* The key of the small inputs (1..3 of the node): per input its rank, dims and bytes. */
static unsigned char *make_key(const sm_tensor *const *t, int n, size_t *len) {
  size_t need = 0;
  for (int i = 0; i < n; i++)
    need += sizeof(int) + (size_t)sm_tensor_rank(t[i]) * sizeof(int64_t) + sm_tensor_nbytes(t[i]);
  unsigned char *k = sm__alloc(need ? need : 1), *p = k;
  if (!k) return NULL;
  for (int i = 0; i < n; i++) {
    int r = sm_tensor_rank(t[i]);
    memcpy(p, &r, sizeof r);
    p += sizeof r;
    if (r) memcpy(p, sm_tensor_dims(t[i]), (size_t)r * sizeof(int64_t));
    p += (size_t)r * sizeof(int64_t);
    if (sm_tensor_nbytes(t[i])) memcpy(p, sm_tensor_data(t[i]), sm_tensor_nbytes(t[i]));
    p += sm_tensor_nbytes(t[i]);
  }
  *len = need;
  return k;
}

/* With FusedBatchNorm's statistics (mean, var), the scale and shift it applies: TF's inference
 * kernel's scale * rsqrt(var + eps) and offset - mean * that; Keras' graph computes the same
 * (_sm_broadcast: each of the four may be one value for all channels). */
static void fbn_scale_shift(const fold_state *s, const sm_tensor *const *in, int64_t c, float *sc, float *sh) {
  const float *g = sm_tensor_data(in[0]), *o = sm_tensor_data(in[1]), *m = sm_tensor_data(in[2 + s->has_bias]),
              *v = sm_tensor_data(in[3 + s->has_bias]);
  int64_t dg = sm_tensor_num_elements(in[0]) == c, d_o = sm_tensor_num_elements(in[1]) == c,
          dm = sm_tensor_num_elements(in[2 + s->has_bias]) == c, dv = sm_tensor_num_elements(in[3 + s->has_bias]) == c;
  for (int64_t j = 0; j < c; j++) {
    sc[j] = g[j * dg] * (1.0f / sqrtf(v[j * dv] + s->eps));
    sh[j] = o[j * d_o] - m[j * dm] * sc[j];
  }
}

/* ff = f * scale over the last dim, fb = [bias * scale +] shift; in: scale, shift, [bias], [mean,
 * variance]. */
static sm_status *fold(const fold_state *s, const sm_tensor *f, const sm_tensor *const *in, int64_t c,
                       sm_tensor **ff, sm_tensor **fb) {
  float *tmp = NULL;
  if (s->stats && !(tmp = sm__alloc((size_t)c * 2 * sizeof *tmp)))
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when folding a BatchNorm of %lld channels", (long long)c);
  sm_status *st = sm_tensor_new(SM_FLOAT, sm_tensor_rank(f), sm_tensor_dims(f), ff);
  if (!st && (st = sm_tensor_new(SM_FLOAT, 1, &c, fb))) sm_tensor_free(*ff);
  if (st) {
    sm__free(tmp);
    return st;
  }
  const float *w = sm_tensor_data(f), *sc = sm_tensor_data(in[0]), *sh = sm_tensor_data(in[1]),
              *bb = s->has_bias ? sm_tensor_data(in[2]) : NULL;
  int s1 = sm_tensor_num_elements(in[0]) == 1, t1 = sm_tensor_num_elements(in[1]) == 1;
  if (tmp) {
    fbn_scale_shift(s, in, c, tmp, tmp + c);
    sc = tmp, sh = tmp + c, s1 = t1 = 0;
  }
  float *o = sm_tensor_data(*ff), *ob = sm_tensor_data(*fb);
  int64_t rows = c ? sm_tensor_num_elements(f) / c : 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < c; j++) o[r * c + j] = w[r * c + j] * sc[s1 ? 0 : j];
  for (int64_t j = 0; j < c; j++) ob[j] = bb ? bb[j] * sc[s1 ? 0 : j] + sh[t1 ? 0 : j] : sh[t1 ? 0 : j];
  sm__free(tmp);
  return NULL;
}

/* TF's FusedBatchNorm demands vectors of the channel count. */
static sm_status *channels(const sm_tensor *t, const char *what, int64_t c) {
  if (sm_tensor_dtype(t) == SM_FLOAT && sm_tensor_rank(t) == 1 && sm_tensor_dims(t)[0] == c) return NULL;
  char sh[96];
  sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), sh, sizeof sh);
  return sm_status_new(SM_INVALID_ARGUMENT, "%s must have the same number of elements as the channels of x, got %s vs. %lld",
                       what, sh, (long long)c);
}

/* Whether t holds what the key's tensor k held when folded: k itself, or a view of the same memory
 * with the same dtype and shape (a Reshape made anew each run). The key holds a reference to k, and
 * a view holds one to its base, so that memory is alive and shared: never written in place, never
 * handed to another tensor; its bytes are the ones folded. */
static int same_view(const sm_tensor *k, const sm_tensor *t) {
  if (k == t) return 1;
  int r = sm_tensor_rank(t);
  return k && t && sm_tensor_data(k) == sm_tensor_data(t) && sm_tensor_dtype(k) == sm_tensor_dtype(t) &&
         sm_tensor_rank(k) == r && (!r || !memcmp(sm_tensor_dims(k), sm_tensor_dims(t), (size_t)r * sizeof(int64_t)));
}

/* ---- folds shared between plans ---------------------------------------------------------------
 * Each signature of a model has its own plan, so its own _SmFoldBN node per BatchNorm, reading the
 * same variables: the loader runs all of them (sm__plan_preload), and a server may call several.
 * A helper keyed by the tensors themselves (cache_in) takes the folded pair from another helper
 * that folded the same filter and small inputs (the same tensors or views of them, as its own key
 * compares; the same attrs), so the model holds one folded copy, not one per signature. An entry
 * holds references to its key's tensors and its result, and lives while a helper uses it. */
typedef struct shared_fold {
  struct shared_fold *next;
  long users;
  int depthwise, has_bias, stats, bcast, nsmall;
  float eps;
  sm_tensor *key_f, *key_in[5];
  sm_tensor *ff, *fb;
} shared_fold;

#define SHARED_BUCKETS 64
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static shared_fold *shared_tab[SHARED_BUCKETS];

static size_t shared_bucket(const sm_tensor *f) { return ((uintptr_t)sm_tensor_data(f) >> 6) % SHARED_BUCKETS; }

/* The entry for f and in under s's attrs, with a use taken for the caller, or NULL (under shared_mu). */
static shared_fold *shared_find(const fold_state *s, const sm_tensor *f, const sm_tensor *const *in, int nsmall) {
  for (shared_fold *e = shared_tab[shared_bucket(f)]; e; e = e->next) {
    int same = e->key_f == f && e->nsmall == nsmall && e->depthwise == s->depthwise && e->has_bias == s->has_bias &&
               e->stats == s->stats && e->bcast == s->bcast && !memcmp(&e->eps, &s->eps, sizeof e->eps);
    for (int i = 0; i < nsmall && same; i++) same = same_view(e->key_in[i], in[i]);
    if (same) {
      e->users++;
      return e;
    }
  }
  return NULL;
}

size_t sm__nn_fold_shared_entries(void) {
  size_t n = 0;
  pthread_mutex_lock(&shared_mu);
  for (int b = 0; b < SHARED_BUCKETS; b++)
    for (const shared_fold *e = shared_tab[b]; e; e = e->next) n++;
  pthread_mutex_unlock(&shared_mu);
  return n;
}

/* Gives up a use of e (NULL: nothing); the last one frees it. */
static void shared_drop(shared_fold *e) {
  if (!e) return;
  pthread_mutex_lock(&shared_mu);
  int last = --e->users == 0;
  if (last)
    for (shared_fold **pp = &shared_tab[shared_bucket(e->key_f)]; *pp; pp = &(*pp)->next)
      if (*pp == e) {
        *pp = e->next;
        break;
      }
  pthread_mutex_unlock(&shared_mu);
  if (!last) return;
  sm_tensor_free(e->key_f);
  for (int i = 0; i < 5; i++) sm_tensor_free(e->key_in[i]);
  sm_tensor_free(e->ff);
  sm_tensor_free(e->fb);
  free(e);
}

/* The fold of f with in for s (cache_in): another helper's when there is one (*e that entry,
 * *shared 1), else folded here and offered to the others (*e NULL when there was no memory for the
 * entry: the fold is then this helper's alone). */
static sm_status *fold_shared(const fold_state *s, const sm_tensor *f, const sm_tensor *const *in, int nsmall,
                              int64_t c, sm_tensor **ff, sm_tensor **fb, shared_fold **e) {
  pthread_mutex_lock(&shared_mu);
  *e = shared_find(s, f, in, nsmall);
  pthread_mutex_unlock(&shared_mu);
  if (!*e) {
    sm_status *st = fold(s, f, in, c, ff, fb);
    if (st) return st;
    shared_fold *n = calloc(1, sizeof *n);
    pthread_mutex_lock(&shared_mu);
    if ((*e = shared_find(s, f, in, nsmall))) { /* another run folded the same meanwhile */
      free(n);
      sm_tensor_free(*ff);
      sm_tensor_free(*fb);
    } else if (n) {
      *n = (shared_fold){shared_tab[shared_bucket(f)], 1, s->depthwise, s->has_bias, s->stats, s->bcast, nsmall, s->eps,
                         sm_tensor_ref((sm_tensor *)f), {NULL}, sm_tensor_ref(*ff), sm_tensor_ref(*fb)};
      for (int i = 0; i < nsmall; i++) n->key_in[i] = sm_tensor_ref((sm_tensor *)in[i]);
      shared_tab[shared_bucket(f)] = n;
      *e = n;
      pthread_mutex_unlock(&shared_mu);
      return NULL;
    }
    pthread_mutex_unlock(&shared_mu);
    if (!*e) return NULL;
  }
  *ff = sm_tensor_ref((*e)->ff);
  *fb = sm_tensor_ref((*e)->fb);
  return NULL;
}

/* The n logical inputs (filter, then the small ones): node inputs in order, and with _sm_vars the
 * named variables' values, read here (new references into owned[], the caller frees them). The
 * variables found are kept with the run's resources, as _SmReadVariable keeps its one. */
static sm_status *fold_inputs(fold_state *s, sm_kctx *ctx, int n, const sm_tensor **all, sm_tensor **owned) {
  int nin = 0;
  for (int i = 0; i < n; i++) nin += !s->var_name[i];
  if (sm__kctx_num_inputs(ctx) != nin || (s->nlogical && s->nlogical != n))
    return sm_status_new(SM_INVALID_ARGUMENT, "%d inputs, expected %d", sm__kctx_num_inputs(ctx), nin);
  sm_resources *r = sm__kctx_resources(ctx);
  sm_variable *kept[FOLD_MAX_IN] = {NULL};
  if (s->nlogical) { /* one lock for all: a fold runs every call */
    pthread_mutex_lock(&s->mu);
    if (r && s->res == r) memcpy(kept, s->var, sizeof kept);
    pthread_mutex_unlock(&s->mu);
  }
  for (int i = 0, k = 0; i < n; i++) {
    if (!s->var_name[i]) {
      all[i] = sm__kctx_input(ctx, k++);
      continue;
    }
    sm_variable *v = kept[i];
    if (!v) {
      sm_status *st = sm__resources_variable(r, "", s->var_name[i], SM_FLOAT, &v);
      if (st) return st;
      pthread_mutex_lock(&s->mu);
      if (s->res != r) memset(s->var, 0, sizeof s->var);
      s->res = r, s->var[i] = v;
      pthread_mutex_unlock(&s->mu);
    }
    if (sm__variable_dtype(v) != SM_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT, "trying to read variable %s with wrong dtype: expected float, got %s",
                           sm__variable_name(v), sm_dtype_name(sm__variable_dtype(v)));
    sm_status *st = sm__variable_read(v, &owned[i]);
    if (st) return st;
    all[i] = owned[i];
  }
  return NULL;
}

static sm_status *fold_run(fold_state *s, sm_kctx *ctx, const sm_tensor *f, const sm_tensor *const *in, int nsmall,
                           const uint64_t *gen);

/* The all-variables helper's result when no variable was assigned since its inputs were read
 * (fold_state.gen): the outputs set, 1; else 0. */
static int gen_hit(fold_state *s, sm_kctx *ctx, uint64_t gen) {
  pthread_mutex_lock(&s->mu);
  int hit = s->gen_ok && s->gen == gen && s->gen_res == sm__kctx_resources(ctx) && s->ff;
  if (hit) {
    sm__kctx_set_output(ctx, 0, sm_tensor_ref(s->ff));
    sm__kctx_set_output(ctx, 1, sm_tensor_ref(s->fb));
  }
  pthread_mutex_unlock(&s->mu);
  return hit;
}

static sm_status *fold_compute(const void *state, sm_kctx *ctx) {
  fold_state *s = (fold_state *)state; /* the cache is the one thing a run writes, under mu */
  const sm_tensor *all[FOLD_MAX_IN] = {NULL};
  sm_tensor *owned[FOLD_MAX_IN] = {NULL};
  int nsmall = 2 + s->has_bias + 2 * s->stats;
  int allvars = s->cache && s->cache_in && s->nlogical == 1 + nsmall && !sm__kctx_num_inputs(ctx);
  uint64_t gen = allvars ? sm__variables_generation() : 0; /* before the reads */
  if (allvars && gen_hit(s, ctx, gen)) return NULL;
  sm_status *st = fold_inputs(s, ctx, 1 + nsmall, all, owned);
  if (!st) st = fold_run(s, ctx, all[0], all + 1, nsmall, allvars ? &gen : NULL);
  for (int i = 0; i < FOLD_MAX_IN; i++) sm_tensor_free(owned[i]);
  return st;
}

/* The fold of filter f with the small inputs, or the cached one when the key matches; gen (when
 * given): the assignment count seen before f and in were read, which then tags the result. */
static sm_status *fold_run(fold_state *s, sm_kctx *ctx, const sm_tensor *f, const sm_tensor *const *in, int nsmall,
                           const uint64_t *gen) {
  if (sm_tensor_dtype(f) != SM_FLOAT || sm_tensor_rank(f) < (s->depthwise ? 4 : 1))
    return sm_status_new(SM_INVALID_ARGUMENT, "the filter must be a float tensor of rank >= %d", s->depthwise ? 4 : 1);
  /* a depthwise filter [kh, kw, c, m] gives output channel i*m + k from [.., i, k]: its last two
   * dims flattened are the output channels, so ff = f * scale over them as over a Conv2D's last */
  int64_t c = sm_tensor_dims(f)[sm_tensor_rank(f) - 1];
  if (s->depthwise && __builtin_mul_overflow(c, sm_tensor_dims(f)[2], &c))
    return sm_status_new(SM_INVALID_ARGUMENT, "the depthwise filter's channels overflow");
  sm_status *st = NULL;
  if (s->stats) {
    static const char *const what[] = {"scale", "offset", "mean", "variance"};
    for (int i = 0; i < 4 && !st; i++)
      st = (s->bcast ? per_channel : channels)(in[i < 2 ? i : i + s->has_bias], what[i], c);
  } else {
    st = per_channel(in[0], "scale", c);
    if (!st) st = per_channel(in[1], "shift", c);
  }
  if (st) return st;
  if (s->has_bias && (sm_tensor_dtype(in[2]) != SM_FLOAT ||
                      (s->bias_flat ? sm_tensor_num_elements(in[2]) != c
                                    : sm_tensor_rank(in[2]) != 1 || sm_tensor_dims(in[2])[0] != c))) {
    char sh[96];
    sm_shape_str(sm_tensor_rank(in[2]), sm_tensor_dims(in[2]), sh, sizeof sh);
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Must provide as many biases as the last dimension of the filter: %s vs. %lld", sh,
                         (long long)c);
  }
  /* the small inputs key the cache by their bytes, or (cache_in) by the tensors themselves, as
   * the filter does: no copy and compare of up to 4 x C floats a run */
  size_t nkey = 0;
  unsigned char *key = s->cache_in ? NULL : make_key(in, nsmall, &nkey);
  if (!s->cache_in && !key) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating the BatchNorm fold's key");
  pthread_mutex_lock(&s->mu);
  int hit = s->cache && s->ff && s->key_f == f;
  if (s->cache_in)
    for (int i = 0; i < nsmall && hit; i++) hit = same_view(s->key_in[i], in[i]);
  else
    hit = hit && s->nkey == nkey && !memcmp(s->key, key, nkey);
  if (!hit) {
    sm_tensor *ff, *fb;
    shared_fold *e = NULL;
    st = s->cache_in ? fold_shared(s, f, in, nsmall, c, &ff, &fb, &e) : fold(s, f, in, c, &ff, &fb);
    if (!st) {
      shared_drop(s->sh);
      s->sh = e;
      sm_tensor_free(s->key_f);
      sm_tensor_free(s->ff);
      sm_tensor_free(s->fb);
      sm__free(s->key);
      s->key_f = s->cache ? sm_tensor_ref((sm_tensor *)f) : NULL;
      s->key = key, s->nkey = nkey, key = NULL;
      for (int i = 0; i < nsmall && s->cache_in; i++) {
        sm_tensor_free(s->key_in[i]);
        s->key_in[i] = sm_tensor_ref((sm_tensor *)in[i]);
      }
      s->ff = ff, s->fb = fb;
      /* cached: until the key misses, the filter is read no more, so a checkpoint-mapped one
       * need not stay resident beside its folded copy (it faults in again on a refold). Only
       * after the first fold: a node that refolds (its BatchNorm assigned between runs) would
       * otherwise fault the filter in again on every one. */
      if (s->cache && ++s->folds == 1) sm__tensor_drop_pages(f);
    }
  }
  if (!st) {
    sm__kctx_set_output(ctx, 0, sm_tensor_ref(s->ff));
    sm__kctx_set_output(ctx, 1, sm_tensor_ref(s->fb));
  }
  /* ff now holds what this run read (a hit: the same tensors; else its fold): tagged with the count
   * this run saw, under the same lock as the result, so a slower run of an older count that
   * folds later retags it with its own */
  s->gen_ok = !st && gen;
  if (gen) s->gen = *gen, s->gen_res = sm__kctx_resources(ctx);
  pthread_mutex_unlock(&s->mu);
  sm__free(key);
  return st;
}

const sm_kernel sm_kernels_nn_fold[] = {
    {"_SmFoldBN", fold_prepare, fold_compute, fold_release, SM_KERNEL_PRELOAD},
    {"_SmFoldBNVars", fold_prepare, fold_compute, fold_release, SM_KERNEL_PRELOAD},
    {0},
};

/* ---- the rule ------------------------------------------------------------------------------ */
static int op_is(const sm_node *n, const char *op) { return !strcmp(sm__node_op(n), op); }
static int same(sm_edge a, sm_edge b) { return a.node == b.node && a.index == b.index; }

/* Whether edge e is a value the fold's cache may key by its pointer: an unfed ReadVariableOp's or
 * Const's (never written in place: an assignment swaps in a new tensor). */
static int stable_value(const sm_rewrite *rw, sm_edge e) {
  const sm_node *n = e.node >= 0 ? sm__rewrite_node(rw, e.node) : NULL;
  return n && !sm__rewrite_is_fed(rw, e) && (op_is(n, "ReadVariableOp") || op_is(n, "_SmReadVariable") || op_is(n, "Const"));
}

/* The same, or a view of one (a few unfed Identity, Reshape, Squeeze, ExpandDims: array_shape.c's
 * views share their input's memory; Keras 3 gives a conv's bias to BiasAdd as
 * Squeeze(Reshape(bias, [1, 1, 1, C]))), which the small inputs' key compares by its data pointer
 * and shape (fold_compute). */
static int stable_view(const sm_rewrite *rw, sm_edge e) {
  for (int depth = 0; depth < 4; depth++) {
    const sm_node *n = e.node >= 0 ? sm__rewrite_node(rw, e.node) : NULL;
    if (!n || sm__rewrite_is_fed(rw, e)) return 0;
    if (!(op_is(n, "Identity") || op_is(n, "Reshape") || op_is(n, "Squeeze") || op_is(n, "ExpandDims")))
      return stable_value(rw, e);
    if (sm__node_num_inputs(n) < 1 || sm__rewrite_reads_ref(rw, e.node, 0)) return 0;
    e = sm__rewrite_input(rw, e.node, 0);
  }
  return 0;
}

/* A float node of `op` with two inputs, one of them v and the other not: that other one. */
static int other_input(const sm_rewrite *rw, int id, sm_edge v, sm_edge *other) {
  const sm_node *n = sm__rewrite_node(rw, id);
  if (sm__node_num_inputs(n) != 2 || sm__node_num_outputs(n) != 1 || sm__node_output_dtype(n, 0) != SM_FLOAT)
    return 0;
  sm_edge a = sm__rewrite_input(rw, id, 0), b = sm__rewrite_input(rw, id, 1);
  if (same(a, v) == same(b, v)) return 0;
  *other = same(a, v) ? b : a;
  return 1;
}

/* When e is the value of a float _SmReadVariable (state.c; no container, no inputs) that only a
 * node of the chain reads, once: 1 and its variable's shared_name in buf (the helper may read it
 * itself, the read joining the chain when sm__rewrite_can_fuse allows); else 0. */
static int absorbable_read(const sm_rewrite *rw, sm_edge e, const int *chain, int n, char *buf, size_t cap) {
  const sm_node *rn = e.node >= 0 && e.index == 0 ? sm__rewrite_node(rw, e.node) : NULL;
  if (!rn || !op_is(rn, "_SmReadVariable") || sm__node_num_inputs(rn) || sm__node_output_dtype(rn, 0) != SM_FLOAT)
    return 0;
  int reader = sm__rewrite_only_reader(rw, e), in_chain = 0;
  for (int k = 0; k < n && !in_chain; k++) in_chain = chain[k] == reader;
  const char *cont = "", *name = NULL;
  size_t clen = 0, nlen = 0;
  sm_status *st = NULL;
  if (sm__node_attr(rn, "container")) st = sm__node_attr_string(rn, "container", &cont, &clen);
  if (!st) st = sm__node_attr_string(rn, "shared_name", &name, &nlen);
  int ok = !st && in_chain && !clen && nlen && nlen < cap && !memchr(name, 0, nlen);
  sm_status_free(st);
  if (ok) memcpy(buf, name, nlen), buf[nlen] = 0;
  return ok;
}

/* Whether a and b are computed from a common source (a node with no inputs other than a Const or a
 * variable read, a placeholder or an argument say; or a fed edge): then b is no BatchNorm parameter
 * of a conv reading a, but an activation. InceptionResNetV2's residual blocks compute
 * x + conv(f(x)) * 0.17: the Add's other operand x comes from the model's input as the conv's does,
 * and a fold would ask the fused convolution's per-channel shift to hold a whole activation. Keras'
 * and TF's BatchNorm parameters come from variables and Consts (the walk stops at their reads). */
/* shares_source's walk w: edge e reached; a fed edge is a source, another's node is walked once. */
static void walk_edge(const sm_rewrite *rw, sm_edge e, int w, unsigned char *mark, unsigned char *src, int *stack,
                      int *top, int n) {
  if (e.node < 0 || e.node >= n) return;
  if (sm__rewrite_is_fed(rw, e))
    src[e.node] |= (unsigned char)w;
  else if (!(mark[e.node] & w))
    mark[e.node] |= (unsigned char)w, stack[(*top)++] = e.node;
}

static sm_status *shares_source(const sm_rewrite *rw, sm_edge a, sm_edge b, int *shared) {
  *shared = 0;
  int n = sm__rewrite_num_ids(rw), top = 0;
  unsigned char *mark = calloc((size_t)n, 2);
  int *stack = malloc((size_t)n * sizeof *stack);
  if (!mark || !stack) {
    free(mark), free(stack);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when tracing a BatchNorm's parameters");
  }
  unsigned char *src = mark + n; /* src[id] & w: a source reached in walk w */
  for (int w = 1; w <= 2; w++) {
    walk_edge(rw, w == 1 ? a : b, w, mark, src, stack, &top, n);
    while (top > 0) {
      int id = stack[--top];
      const sm_node *nd = sm__rewrite_node(rw, id);
      if (!nd || op_is(nd, "Const") || op_is(nd, "ReadVariableOp") || op_is(nd, "_SmReadVariable")) continue;
      int nin = sm__node_num_inputs(nd);
      if (!nin) src[id] |= (unsigned char)w;
      for (int k = 0; k < nin; k++) walk_edge(rw, sm__rewrite_input(rw, id, k), w, mark, src, stack, &top, n);
    }
  }
  for (int id = 0; id < n && !*shared; id++) *shared = src[id] == 3;
  free(mark), free(stack);
  return NULL;
}

static int nhwc(const sm_node *n) {
  int nchw = 1;
  sm_status *st = sm__nn_data_format(n, 0, &nchw);
  sm_status_free(st);
  return !st && !nchw;
}

/* ---- Keras 3's BatchNorm parameters ------------------------------------------------------------ */
/* The producer of e (output 0) when it is a float node of `op` (or `op2`) with nin inputs and one
 * output, that output not fed and no input a ref read; else -1. */
static int made_by(const sm_rewrite *rw, sm_edge e, const char *op, const char *op2, int nin) {
  const sm_node *n = e.node >= 0 && e.index == 0 ? sm__rewrite_node(rw, e.node) : NULL;
  if (!n || !(op_is(n, op) || (op2 && op_is(n, op2))) || sm__node_num_inputs(n) != nin ||
      sm__node_num_outputs(n) != 1 || sm__node_output_dtype(n, 0) != SM_FLOAT || sm__rewrite_is_fed(rw, e))
    return -1;
  for (int i = 0; i < nin; i++)
    if (sm__rewrite_reads_ref(rw, e.node, i)) return -1;
  return e.node;
}

/* An integer Const (not fed) of shape [r], 1 <= r <= 4: [1, .., 1, K] with K > 1 -> *rank, *k. */
static sm_status *bn_shape(const sm_rewrite *rw, sm_edge e, int *rank, int64_t *k) {
  *rank = 0;
  sm_tensor *t;
  sm_status *st = sm__rewrite_const_value(rw, e, &t);
  if (st || !t) return st;
  int dt = sm_tensor_dtype(t);
  int64_t r = sm_tensor_rank(t) == 1 ? sm_tensor_num_elements(t) : 0;
  int ok = (dt == SM_INT32 || dt == SM_INT64) && r >= 1 && r <= 4;
  for (int64_t i = 0; ok && i < r; i++) {
    int64_t v = dt == SM_INT32 ? ((const int32_t *)sm_tensor_data(t))[i] : ((const int64_t *)sm_tensor_data(t))[i];
    ok = i < r - 1 ? v == 1 : v > 1;
    if (ok && i == r - 1) *k = v;
  }
  sm_tensor_free(t);
  if (ok) *rank = (int)r;
  return NULL;
}

/* A Reshape (float) of a vector to [1, .., 1, K], K and the rank those of p's others: its input
 * into *v, its nodes (the Reshape, and its shape Const when only the Reshape reads it) appended
 * to p. The Reshape's output may be fed: the caller's sm__rewrite_can_fuse refuses that chain. */
static sm_status *bn_vector(const sm_rewrite *rw, sm_edge e, sm_edge *v, sm__nn_bn_params *p, int *ok) {
  *ok = 0;
  const sm_node *n = e.node >= 0 && e.index == 0 ? sm__rewrite_node(rw, e.node) : NULL;
  int rank;
  int64_t k = 0;
  if (!n || !op_is(n, "Reshape") || sm__node_num_inputs(n) != 2 || sm__node_num_outputs(n) != 1 ||
      sm__node_output_dtype(n, 0) != SM_FLOAT || sm__rewrite_reads_ref(rw, e.node, 0))
    return NULL;
  sm_edge shape = sm__rewrite_input(rw, e.node, 1);
  sm_status *st = bn_shape(rw, shape, &rank, &k);
  if (st || !rank || (p->rank && (rank != p->rank || k != p->c))) return st;
  p->rank = rank, p->c = k;
  *v = sm__rewrite_input(rw, e.node, 0);
  p->nodes[p->n++] = e.node;
  if (sm__rewrite_only_reader(rw, shape) == e.node) p->nodes[p->n++] = shape.node;
  *ok = 1;
  return NULL;
}

/* Keras 3's conv bias, Squeeze(Reshape(b, [1, .., 1, K])) with no squeeze_dims: the same K floats
 * as b, in b's order (a Reshape keeps the order; the Squeeze drops the leading 1s), so the fold
 * may read b itself (attr _sm_bias_flat: any shape of c elements). *src = b, and the view's nodes
 * (the Squeeze, the Reshape, its shape Const when only the Reshape reads it) into nodes[*nn];
 * *nn = 0 when e is not that. */
static sm_status *bias_view(const sm_rewrite *rw, sm_edge e, sm_edge *src, int nodes[3], int *nn) {
  *nn = 0;
  int sq = made_by(rw, e, "Squeeze", NULL, 1), ok = 0;
  const int64_t *dims = NULL;
  size_t nd = 0;
  if (sq < 0) return NULL;
  if (sm__node_attr(sm__rewrite_node(rw, sq), "squeeze_dims")) {
    sm_status *st = sm__node_attr_ints(sm__rewrite_node(rw, sq), "squeeze_dims", &dims, &nd);
    sm_status_free(st);
    if (st || nd) return NULL;
  }
  sm__nn_bn_params p;
  memset(&p, 0, sizeof p);
  sm_status *st = bn_vector(rw, sm__rewrite_input(rw, sq, 0), src, &p, &ok);
  if (st || !ok) return st;
  nodes[0] = sq;
  memcpy(nodes + 1, p.nodes, (size_t)p.n * sizeof *nodes);
  *nn = 1 + p.n;
  return NULL;
}

sm_status *sm__nn_bn_params_match(const sm_rewrite *rw, sm_edge scale, sm_edge shift, sm__nn_bn_params *p, int *ok) {
  *ok = 0;
  memset(p, 0, sizeof *p);
  int mul = made_by(rw, scale, "Mul", NULL, 2), sub = made_by(rw, shift, "Sub", NULL, 2), rsq = -1, add = -1,
      mul2 = -1;
  if (mul < 0 || sub < 0) return NULL;
  sm_edge gamma = {-1, -1}, mean = {-1, -1}, var = {-1, -1}, eps = {-1, -1};
  for (int k = 0; k < 2 && rsq < 0; k++)
    if ((rsq = made_by(rw, sm__rewrite_input(rw, mul, k), "Rsqrt", NULL, 1)) >= 0) gamma = sm__rewrite_input(rw, mul, 1 - k);
  if (rsq < 0 || (add = made_by(rw, sm__rewrite_input(rw, rsq, 0), "AddV2", "Add", 2)) < 0 ||
      (mul2 = made_by(rw, sm__rewrite_input(rw, sub, 1), "Mul", NULL, 2)) < 0 || !other_input(rw, mul2, scale, &mean))
    return NULL;
  /* eps: a float Const of one element, not fed, on either side of the Add */
  int eps_rank = -1;
  for (int k = 0; k < 2 && eps_rank < 0; k++) {
    sm_tensor *ev = NULL;
    sm_status *st = sm__rewrite_const_value(rw, sm__rewrite_input(rw, add, k), &ev);
    if (st) return st;
    if (ev && sm_tensor_dtype(ev) == SM_FLOAT && sm_tensor_num_elements(ev) == 1) {
      eps_rank = sm_tensor_rank(ev), p->eps = *(const float *)sm_tensor_data(ev);
      eps = sm__rewrite_input(rw, add, k), var = sm__rewrite_input(rw, add, 1 - k);
    }
    sm_tensor_free(ev);
  }
  sm_edge beta = sm__rewrite_input(rw, sub, 0), vec[4] = {gamma, beta, mean, var};
  if (eps_rank < 0) return NULL;
  for (int i = 0; i < 4; i++)
    if (vec[i].node < 0) return NULL;
  /* the Reshape form: all four through Reshapes of one shape, eps no wider */
  sm_edge *out[4] = {&p->gamma, &p->beta, &p->mean, &p->var};
  int vok = 1;
  for (int i = 0; i < 4 && vok; i++) {
    sm_status *st = bn_vector(rw, vec[i], out[i], p, &vok);
    if (st) return st;
  }
  if (!vok || eps_rank > p->rank) {
    /* the plain form: eps must not widen the conv output's rank 4 (the fold keeps that shape) */
    if (eps_rank > 4) return NULL;
    p->n = p->rank = 0, p->c = 0;
    for (int i = 0; i < 4; i++) *out[i] = vec[i];
  }
  if (sm__rewrite_only_reader(rw, eps) == add) p->nodes[p->n++] = eps.node;
  int rest[] = {add, rsq, mul, mul2, sub};
  for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) p->nodes[p->n++] = rest[i];
  *ok = 1;
  return NULL;
}

#define FOLD_RULE "Conv2D[+BiasAdd]+Mul+Add[+Add][+Relu|Relu6] (inference BatchNorm) -> _SmFoldBN + _FusedConv2D"
#define FBN_RULE "Conv2D[+BiasAdd]+FusedBatchNorm[V2|V3][+Add][+Relu|Relu6] (inference) -> _SmFoldBN + _FusedConv2D"
#define DW_FOLD_RULE                                                                                   \
  "[Pad+]DepthwiseConv2dNative[+BiasAdd]+Mul+Add[+Relu|Relu6] (inference BatchNorm) -> _SmFoldBN + " \
  "_FusedDepthwiseConv2dNative"
#define DW_FBN_RULE                                                                               \
  "[Pad+]DepthwiseConv2dNative[+BiasAdd]+FusedBatchNorm[V2|V3][+Relu|Relu6] (inference) -> " \
  "_SmFoldBN + _FusedDepthwiseConv2dNative"

/* A FusedBatchNorm[V2|V3] in inference mode, NHWC, float, reading v as x (and not otherwise), with
 * an epsilon of at least FLT_MIN: with epsilon 0 (or a subnormal one, 0 in TF's flushed mode) a
 * variance of 0 makes the scale Inf, and TF's (conv - mean) * Inf + offset is +-Inf per element
 * where the folded filter's products of +-Inf sum to NaN; that BatchNorm runs unfolded, as TF's. */
static int fbn_fits(const sm_rewrite *rw, int id, sm_edge v) {
  const sm_node *n = sm__rewrite_node(rw, id);
  if (!(op_is(n, "FusedBatchNorm") || op_is(n, "FusedBatchNormV2") || op_is(n, "FusedBatchNormV3")) ||
      sm__node_num_inputs(n) != 5 || sm__node_output_dtype(n, 0) != SM_FLOAT || !nhwc(n))
    return 0;
  for (int i = 0; i < 5; i++)
    if (same(sm__rewrite_input(rw, id, i), v) != (i == 0) || sm__node_input_dtype(n, i) != SM_FLOAT) return 0;
  int training = 1;
  float eps = 0;
  sm_status *st = sm__node_attr_bool(n, "is_training", &training);
  if (!st) st = sm__node_attr_float(n, "epsilon", &eps);
  sm_status_free(st);
  return !st && !training && eps >= FLT_MIN;
}

static sm_status *fold_bn(sm_rewrite *rw, int anchor) {
  const sm_node *c = sm__rewrite_node(rw, anchor);
  int dw = op_is(c, "DepthwiseConv2dNative");
  if (sm__node_num_inputs(c) != 2 || sm__node_num_outputs(c) != 1 || sm__node_output_dtype(c, 0) != SM_FLOAT ||
      !nhwc(c) || (dw && !sm__nn_depthwise_fusable(c)))
    return NULL;
  sm_edge f = sm__rewrite_input(rw, anchor, 1), bias = {-1, -1}, scale, shift;
  if (!stable_value(rw, f)) return NULL;
  int chain[7 + 16 + 3 + FOLD_MAX_IN] = {anchor}, n = 1, fbn = -1;
  int r = sm__rewrite_only_reader(rw, (sm_edge){anchor, 0});
  if (r < 0) return NULL;
  const sm_node *rn = sm__rewrite_node(rw, r);
  if ((op_is(rn, "BiasAddV1") || (op_is(rn, "BiasAdd") && nhwc(rn))) && other_input(rw, r, (sm_edge){anchor, 0}, &bias) &&
      same(sm__rewrite_input(rw, r, 0), (sm_edge){anchor, 0})) {
    chain[n++] = r;
    if ((r = sm__rewrite_only_reader(rw, (sm_edge){r, 0})) < 0) return NULL;
    rn = sm__rewrite_node(rw, r);
  }
  if (fbn_fits(rw, r, (sm_edge){chain[n - 1], 0})) {
    chain[n++] = fbn = r;
    scale = sm__rewrite_input(rw, r, 1), shift = sm__rewrite_input(rw, r, 2);
  } else {
    if (!op_is(rn, "Mul") || !other_input(rw, r, (sm_edge){chain[n - 1], 0}, &scale)) return NULL;
    chain[n++] = r;
    if ((r = sm__rewrite_only_reader(rw, (sm_edge){r, 0})) < 0) return NULL;
    rn = sm__rewrite_node(rw, r);
    if (!(op_is(rn, "AddV2") || op_is(rn, "Add")) || !other_input(rw, r, (sm_edge){chain[n - 1], 0}, &shift))
      return NULL;
    chain[n++] = r;
  }
  /* Keras' scale and shift computed in the graph (sm__nn_bn_params_match): the helper reads the
   * four vectors instead. The nodes that compute them (and Keras 3's Reshapes to [1, .., 1, C])
   * join the chain when it may take them (kp), so that the variable reads feeding them may join it
   * too; otherwise the driver's drop_unread drops them. */
  sm__nn_bn_params bp;
  memset(&bp, 0, sizeof bp);
  int kv = 0, kp = 0; /* the helper reads Keras' four vectors; their nodes join the chain */
  if (fbn < 0) {
    sm_status *bst = sm__nn_bn_params_match(rw, scale, shift, &bp, &kv);
    if (bst) return bst;
    if (kv && !(bp.eps >= FLT_MIN)) return NULL; /* as fbn_fits: epsilon 0 is TF's +-Inf unfolded */
    kp = kv && bp.n > 0;
    for (int k = 0; k < 2 && !kv; k++) { /* not Keras' BatchNorm: neither operand an activation */
      int act_in = 0;
      if ((bst = shares_source(rw, sm__rewrite_input(rw, anchor, 0), k ? shift : scale, &act_in)) || act_in)
        return bst;
    }
  }
  const char *ops[3] = {"BiasAdd", NULL, NULL}, *act = NULL;
  sm_edge addend = {-1, -1};
  int base = n, add = !dw && sm__nn_residual(rw, chain, &n, &addend, &act); /* no Add for a depthwise */
  if (!add) {
    r = sm__rewrite_only_reader(rw, (sm_edge){chain[n - 1], 0});
    rn = r >= 0 ? sm__rewrite_node(rw, r) : NULL;
    if (rn && (op_is(rn, "Relu") || op_is(rn, "Relu6")) && sm__node_num_inputs(rn) == 1 &&
        sm__node_output_dtype(rn, 0) == SM_FLOAT) {
      chain[n++] = r;
      act = sm__node_op(rn);
    }
  }
  /* a zero Pad before the VALID conv or depthwise joins the chain ahead of it (Keras' ZeroPadding2D:
   * ResNet50's 7x7 first conv, MobileNetV2's stride-2 depthwise) */
  int pad_id = -1;
  int64_t pads[4];
  sm_status *pst = sm__nn_depthwise_pad(rw, anchor, &pad_id, pads);
  if (pst) return pst;
  if (pad_id >= 0) {
    memmove(chain + 1, chain, (size_t)n * sizeof *chain);
    chain[0] = pad_id;
    n++, base++;
  }
  for (int k = 0; k < base; k++)
    for (int i = 0; i < sm__node_num_inputs(sm__rewrite_node(rw, chain[k])); i++)
      if (sm__rewrite_reads_ref(rw, chain[k], i)) return NULL;
  if (kp) { /* the parameter nodes ahead of the chain, when the shortest chain may take them */
    memmove(chain + bp.n, chain, (size_t)n * sizeof *chain);
    memcpy(chain, bp.nodes, (size_t)bp.n * sizeof *chain);
    n += bp.n, base += bp.n;
    if (!sm__rewrite_can_fuse(rw, chain, base)) {
      memmove(chain, chain + bp.n, (size_t)(n - bp.n) * sizeof *chain);
      n -= bp.n, base -= bp.n, kp = 0;
      kv = kv && !bp.rank; /* the plain form's nodes are left for drop_unread, as Reshapes are not */
    }
  }
  /* Keras 3's bias view ahead of the chain too, when it may take it: the helper reads the bias
   * vector (the variable, below) rather than a Squeeze of a Reshape of it each run */
  int bv[3], nbv = 0;
  sm_edge bias_src = bias;
  if (bias.node >= 0) {
    sm_status *vst = bias_view(rw, bias, &bias_src, bv, &nbv);
    if (vst) return vst;
  }
  if (nbv) {
    memmove(chain + nbv, chain, (size_t)n * sizeof *chain);
    memcpy(chain, bv, (size_t)nbv * sizeof *chain);
    n += nbv, base += nbv;
    if (!sm__rewrite_can_fuse(rw, chain, base)) {
      memmove(chain, chain + nbv, (size_t)(n - nbv) * sizeof *chain);
      n -= nbv, base -= nbv, nbv = 0, bias_src = bias;
    }
  }
  /* the longest allowed chain: without the activation, then without the residual Add */
  while (n > base && !sm__rewrite_can_fuse(rw, chain, n)) {
    n--;
    if (act)
      act = NULL;
    else
      add = 0, addend = (sm_edge){-1, -1};
  }
  if (!sm__rewrite_can_fuse(rw, chain, n)) return NULL;
  int nops = 1;
  if (add) ops[nops++] = "Add";
  if (act) ops[nops++] = act;
  /* a FusedBatchNorm that ends the chain: the fused node has only its y */
  for (int o = 1; chain[n - 1] == fbn && o < sm__node_num_outputs(sm__rewrite_node(rw, fbn)); o++)
    if (sm__rewrite_is_used(rw, (sm_edge){fbn, o})) return NULL;
  /* the helper: the folded filter and bias, keyed by its small inputs' pointers when all are
   * stable values (the fold's cache, fold_compute) */
  sm_edge small[5] = {kv ? bp.gamma : scale, kv ? bp.beta : shift, bias_src,
                      fbn >= 0 ? sm__rewrite_input(rw, fbn, 3) : kv ? bp.mean : (sm_edge){-1, -1},
                      fbn >= 0 ? sm__rewrite_input(rw, fbn, 4) : kv ? bp.var : (sm_edge){-1, -1}};
  int stable = 1;
  for (int i = 0; i < 5 && stable; i++) stable = (i >= 2 && small[i].node < 0) || stable_view(rw, small[i]);
  /* the helper's logical inputs; the variable reads among them that only the chain reads join it
   * (the helper reads those variables itself: one step instead of up to seven) */
  sm_edge lin[FOLD_MAX_IN] = {f, small[0], small[1]};
  int nl = 3;
  if (bias.node >= 0) lin[nl++] = bias_src;
  if (small[3].node >= 0) lin[nl++] = small[3], lin[nl++] = small[4];
  const char *vars[FOLD_MAX_IN] = {NULL};
  char vbuf[FOLD_MAX_IN][256];
  int nvars = 0;
  for (int i = 0; i < nl; i++) {
    if (!absorbable_read(rw, lin[i], chain, n, vbuf[i], sizeof vbuf[i])) continue;
    memmove(chain + 1, chain, (size_t)n * sizeof *chain);
    chain[0] = lin[i].node;
    if (sm__rewrite_can_fuse(rw, chain, n + 1))
      n++, vars[i] = vbuf[i], nvars++;
    else
      memmove(chain, chain + 1, (size_t)n * sizeof *chain);
  }
  char name[512];
  snprintf(name, sizeof name, "%s/_sm_fold_bn", sm__node_name(c));
  sm_node *nodes[2] = {NULL, NULL};
  sm_status *st = sm__synth_new(sm__rewrite_graph(rw), name, nvars ? "_SmFoldBNVars" : "_SmFoldBN", &nodes[0]);
  if (!st && nvars) st = sm__synth_set_int(nodes[0], "num_args", nl - nvars);
  for (int i = 0; i < nl && !st; i++)
    if (!vars[i]) st = sm__synth_add_input(nodes[0], lin[i]);
  if (!st && nvars) {
    for (int i = 0; i < nl; i++)
      if (!vars[i]) vars[i] = "";
    st = sm__synth_set_strings(nodes[0], "_sm_vars", vars, (size_t)nl);
  }
  if (!st) st = sm__synth_set_type(nodes[0], "T", SM_FLOAT);
  if (!st) st = sm__synth_set_int(nodes[0], "num_bias", bias.node >= 0);
  if (!st) st = sm__synth_set_int(nodes[0], "num_stats", fbn >= 0 || kv ? 2 : 0);
  if (!st && fbn >= 0) st = sm__synth_copy_attr(nodes[0], "epsilon", sm__rewrite_node(rw, fbn), "epsilon");
  if (!st && kv) st = sm__synth_set_float(nodes[0], "epsilon", bp.eps);
  if (!st && kv) st = sm__synth_set_bool(nodes[0], "_sm_broadcast", 1);
  if (!st) st = sm__synth_set_bool(nodes[0], "_sm_cache", 1);
  if (!st && stable) st = sm__synth_set_bool(nodes[0], "_sm_cache_inputs", 1);
  if (!st && nbv) st = sm__synth_set_bool(nodes[0], "_sm_bias_flat", 1);
  if (!st && dw) st = sm__synth_set_bool(nodes[0], "_sm_depthwise", 1);
  if (!st) st = sm__synth_finish(nodes[0]);
  int h = sm__rewrite_next_id(rw);
  if (!st)
    st = sm__nn_fused_node(rw, anchor, sm__rewrite_input(rw, pad_id >= 0 ? pad_id : anchor, 0), (sm_edge){h, 0},
                           (sm_edge){h, 1}, addend, ops, nops, &nodes[1]);
  if (!st && pad_id >= 0) {
    int64_t ep[8] = {0, 0, pads[0], pads[1], pads[2], pads[3], 0, 0};
    st = sm__synth_set_ints(nodes[1], "_sm_explicit_paddings", ep, 8);
  }
  if (!st) st = sm__synth_finish(nodes[1]);
  if (st) {
    sm__synth_free(nodes[0]);
    sm__synth_free(nodes[1]);
    return st;
  }
  return sm__rewrite_replace_n(rw, dw ? (fbn >= 0 ? DW_FBN_RULE : DW_FOLD_RULE) : fbn >= 0 ? FBN_RULE : FOLD_RULE, chain,
                               n, nodes, 2);
}

const sm_rewrite_rule sm_rewrites_nn_fold[] = {
    {"Conv2D", FOLD_RULE, fold_bn},
    {"DepthwiseConv2dNative", DW_FOLD_RULE, fold_bn},
    {0},
};

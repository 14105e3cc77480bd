/* model.c - sm_model: load a SavedModel as TensorFlow's C++ loader does, and run its signatures.
 *
 * Loading: read saved_model.pb, pick the MetaGraph by exact tag set, make a session, collect asset
 * feeds (asset_file_def, else the saved_model_assets collection), run the SaverDef's restore op
 * with the variables prefix fed (skipped when variables/variables.index is absent, as TF does),
 * then the init op (__saved_model_init_op signature, else saved_model_main_op, else
 * legacy_init_op; TF1 table_initializer collection when there is none) with the asset feeds.
 * Every signature's plan is then built (sm__session_plan; only those sm_load_options.signatures
 * lists, when it lists some), and its steps that no feed reaches and whose kernels are registered
 * SM_KERNEL_PRELOAD run once (sm__plan_preload: the BatchNorm folds, which a first call made before),
 * and a run of a signature goes straight to its plan (sm__plan_run): no
 * names, no sorting, no cache lookup, no lock; a run asking for only some outputs, or of a signature
 * not compiled at load, takes the by-name path (the session's plan cache). A signature whose plan
 * finds ops without a kernel (SM_UNIMPLEMENTED) does not fail the load: its message becomes the
 * signature's warning and the error of every run of it; the load fails only when no compiled
 * signature can run, with the first such message, as before. Signatures are kept sorted by key, their inputs and outputs sorted by alias,
 * so lookups are binary searches and listings come out in a stable order. */
#include "savedmodel/model.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "runtime/model_internal.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/session.h"
#include "savedmodel/bundle.h"
#include "runtime/verify.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"

typedef struct sig {
  char *key;
  const char *method;
  sm_tensor_info *in, *out;
  int nin, nout;
  sm_tensor **defaults; /* per input (sorted order), NULL when the SignatureDef has none */
  const char **out_names; /* tensor names in sorted alias order */
  char *unsupported;      /* why this signature cannot run (sparse/composite tensors, ops without a
                           * kernel: "signature 'k': ..."), or NULL; the model's warning for it */
  /* The plan over every input and every output, built at load (owned by the session's cache), and
   * where each input / output (alias order) sits among its feeds / fetches. */
  const sm_plan *plan;
  int *feed_pos, *fetch_pos;
} sig;

struct sm_model {
  Tensorflow__SavedModel *sm;
  const Tensorflow__MetaGraphDef *mg;
  sm_session *sess;
  char *dir;
  sig *sigs;
  int nsigs;
  const char **warnings; /* the sigs' `unsupported`, in key order (not owned) */
  int nwarnings;
};

static const char *dtname(int dt) {
  const char *n = sm_dtype_name(dt);
  return n ? n : "DT_INVALID";
}

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* "[?,1]" style, TF's way of printing partial shapes. */
static const char *shape_text(int rank, const int64_t *dims, char *buf, size_t cap) {
  if (rank < 0) {
    snprintf(buf, cap, "<unknown>");
    return buf;
  }
  size_t n = 0;
  buf[0] = 0;
  n += (size_t)snprintf(buf + n, cap - n, "[");
  for (int i = 0; i < rank && n < cap; i++) {
    if (dims[i] < 0)
      n += (size_t)snprintf(buf + n, cap - n, "%s?", i ? "," : "");
    else
      n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, i ? "," : "", dims[i]);
  }
  if (n < cap) snprintf(buf + n, cap - n, "]");
  return buf;
}

static void sig_free(sig *s) {
  free(s->key);
  for (int i = 0; i < s->nin; i++) {
    free((void *)s->in[i].dims);
    if (s->defaults) sm_tensor_free(s->defaults[i]);
  }
  for (int i = 0; i < s->nout; i++) free((void *)s->out[i].dims);
  free(s->in);
  free(s->out);
  free(s->defaults);
  free(s->out_names);
  free(s->unsupported);
  free(s->feed_pos);
  free(s->fetch_pos);
}

void sm_model_free(sm_model *m) {
  if (!m) return;
  for (int i = 0; i < m->nsigs; i++) sig_free(&m->sigs[i]);
  free(m->sigs);
  free(m->warnings);
  sm__session_free(m->sess);
  sm_saved_model_free(m->sm);
  free(m->dir);
  free(m);
}

/* ---- signatures ------------------------------------------------------------------------------ */
typedef struct kv {
  const char *key;
  const Tensorflow__TensorInfo *ti;
} kv;

static int cmp_kv(const void *a, const void *b) { return strcmp(((const kv *)a)->key, ((const kv *)b)->key); }
static int cmp_sig(const void *a, const void *b) { return strcmp(((const sig *)a)->key, ((const sig *)b)->key); }

static sm_status *fill_infos(const sm_cgraph *g, sig *sg, kv *items, int n, sm_tensor_info *out, const char *what) {
  qsort(items, (size_t)n, sizeof *items, cmp_kv);
  for (int i = 0; i < n; i++) {
    const Tensorflow__TensorInfo *ti = items[i].ti;
    sm_tensor_info *o = &out[i];
    o->alias = items[i].key;
    o->name = "";
    o->rank = -1;
    o->dims = NULL;
    o->dtype = ti ? sm_dtype_base((int)ti->dtype) : 0;
    if (i > 0 && !strcmp(items[i - 1].key, items[i].key))
      return sm_status_new(SM_INVALID_ARGUMENT, "signature '%s': %s alias '%s' appears twice", sg->key, what,
                           items[i].key);
    if (!ti) continue;
    if (ti->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME || !ti->name) {
      if (!sg->unsupported) {
        char buf[512];
        snprintf(buf, sizeof buf, "signature '%s': %s '%s' is a %s tensor, which this runtime does not run",
                 sg->key, what, items[i].key,
                 ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_COO_SPARSE ? "sparse" : "composite");
        sg->unsupported = dupstr(buf);
        if (!sg->unsupported) return sm_status_new(SM_NO_MEMORY, "out of memory");
      }
      continue;
    }
    o->name = ti->name;
    /* trust the graph's dtype over the TensorInfo's (TF1 exports have wrong and _REF ones) */
    sm_edge e;
    int ctl = 0;
    sm_status *st = sm__cgraph_resolve(g, ti->name, &e, &ctl);
    if (st) return sm_status_prefix(st, "signature '%s' %s '%s'", sg->key, what, items[i].key);
    o->dtype = sm_dtype_base(sm__node_output_dtype(sm__cgraph_node(g, e.node), e.index));
    if (ti->tensor_shape && !ti->tensor_shape->unknown_rank) {
      size_t r = ti->tensor_shape->n_dim;
      if (r > SM_MAX_RANK)
        return sm_status_new(SM_OUT_OF_RANGE, "signature '%s' %s '%s': rank %zu is more than %d", sg->key, what,
                             items[i].key, r, SM_MAX_RANK);
      int64_t *d = malloc((r ? r : 1) * sizeof *d);
      if (!d) return sm_status_new(SM_NO_MEMORY, "out of memory");
      for (size_t k = 0; k < r; k++) d[k] = ti->tensor_shape->dim[k] ? ti->tensor_shape->dim[k]->size : -1;
      for (size_t k = 0; k < r; k++)
        if (d[k] < -1) d[k] = -1;
      o->rank = (int)r;
      o->dims = d;
    }
  }
  return NULL;
}

static sm_status *build_sig(const sm_cgraph *g, const char *key, const Tensorflow__SignatureDef *sd, sig *sg) {
  memset(sg, 0, sizeof *sg);
  if (!(sg->key = dupstr(key))) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sg->method = sd && sd->method_name ? sd->method_name : "";
  int nin = sd ? (int)sd->n_inputs : 0, nout = sd ? (int)sd->n_outputs : 0;
  kv *ki = calloc((size_t)nin + 1, sizeof *ki), *ko = calloc((size_t)nout + 1, sizeof *ko);
  sg->in = calloc((size_t)nin + 1, sizeof *sg->in);
  sg->out = calloc((size_t)nout + 1, sizeof *sg->out);
  sg->defaults = calloc((size_t)nin + 1, sizeof *sg->defaults);
  sg->out_names = calloc((size_t)nout + 1, sizeof *sg->out_names);
  sm_status *st = NULL;
  if (!ki || !ko || !sg->in || !sg->out || !sg->defaults || !sg->out_names) {
    st = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < nin; i++) {
    ki[i].key = sd->inputs[i] && sd->inputs[i]->key ? sd->inputs[i]->key : "";
    ki[i].ti = sd->inputs[i] ? sd->inputs[i]->value : NULL;
  }
  for (int i = 0; i < nout; i++) {
    ko[i].key = sd->outputs[i] && sd->outputs[i]->key ? sd->outputs[i]->key : "";
    ko[i].ti = sd->outputs[i] ? sd->outputs[i]->value : NULL;
  }
  sg->nin = nin;
  sg->nout = nout;
  if ((st = fill_infos(g, sg, ki, nin, sg->in, "input"))) goto done;
  if ((st = fill_infos(g, sg, ko, nout, sg->out, "output"))) goto done;
  for (int i = 0; i < nout; i++) sg->out_names[i] = sg->out[i].name;
  for (size_t d = 0; sd && d < sd->n_defaults; d++) {
    const Tensorflow__SignatureDef__DefaultsEntry *e = sd->defaults[d];
    if (!e || !e->key || !e->value) continue;
    for (int i = 0; i < nin; i++)
      if (!strcmp(sg->in[i].alias, e->key)) {
        sm_tensor_free(sg->defaults[i]);
        sg->defaults[i] = NULL;
        if ((st = sm__tensor_from_proto(e->value, &sg->defaults[i]))) {
          st = sm_status_prefix(st, "signature '%s': default of input '%s'", key, e->key);
          goto done;
        }
      }
  }
done:
  free(ki);
  free(ko);
  return st;
}

static const sig *find_sig(const sm_model *m, const char *key) {
  int lo = 0, hi = m->nsigs - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int c = strcmp(key, m->sigs[mid].key);
    if (!c) return &m->sigs[mid];
    if (c < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return NULL;
}

static int find_info(const sm_tensor_info *infos, int n, const char *alias) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int c = strcmp(alias, infos[mid].alias);
    if (!c) return mid;
    if (c < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return -1;
}

/* "a, b, c" of the aliases (or keys), for error messages. */
static void list_text(char *buf, size_t cap, const char *const *names, int n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < n && k + 1 < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s'%s'", i ? ", " : "", names[i]);
  if (!n) snprintf(buf, cap, "(none)");
}

static sm_status *no_such_sig(const sm_model *m, const char *key) {
  char buf[2048];
  const char **keys = malloc(((size_t)m->nsigs + 1) * sizeof *keys);
  if (!keys) return sm_status_new(SM_NOT_FOUND, "no signature '%s' in this model", key);
  for (int i = 0; i < m->nsigs; i++) keys[i] = m->sigs[i].key;
  list_text(buf, sizeof buf, keys, m->nsigs);
  free(keys);
  return sm_status_new(SM_NOT_FOUND, "no signature '%s' in this model; signatures are: %s", key, buf);
}

static sm_status *alias_error(const sig *sg, const sm_tensor_info *infos, int n, const char *what, const char *alias) {
  char buf[2048];
  const char **names = malloc(((size_t)n + 1) * sizeof *names);
  if (!names) return sm_status_new(SM_INVALID_ARGUMENT, "signature '%s' has no %s '%s'", sg->key, what, alias);
  for (int i = 0; i < n; i++) names[i] = infos[i].alias;
  list_text(buf, sizeof buf, names, n);
  free(names);
  return sm_status_new(SM_INVALID_ARGUMENT, "signature '%s' has no %s '%s'; its %ss are: %s", sg->key, what, alias,
                       what, buf);
}

int sm_model_num_signatures(const sm_model *m) { return m ? m->nsigs : 0; }
const char *sm_model_signature_key(const sm_model *m, int i) {
  return m && i >= 0 && i < m->nsigs ? m->sigs[i].key : NULL;
}
const char *sm_model_signature_method(const sm_model *m, const char *key) {
  const sig *s = m && key ? find_sig(m, key) : NULL;
  return s ? s->method : NULL;
}

sm_status *sm_model_signature_inputs(const sm_model *m, const char *key, const sm_tensor_info **infos, int *n) {
  *infos = NULL;
  *n = 0;
  if (!m || !key) return sm_status_new(SM_INVALID_ARGUMENT, "signature inputs: NULL model or key");
  const sig *s = find_sig(m, key);
  if (!s) return no_such_sig(m, key);
  *infos = s->in;
  *n = s->nin;
  return NULL;
}

sm_status *sm_model_signature_outputs(const sm_model *m, const char *key, const sm_tensor_info **infos, int *n) {
  *infos = NULL;
  *n = 0;
  if (!m || !key) return sm_status_new(SM_INVALID_ARGUMENT, "signature outputs: NULL model or key");
  const sig *s = find_sig(m, key);
  if (!s) return no_such_sig(m, key);
  *infos = s->out;
  *n = s->nout;
  return NULL;
}

static sm_status *check_input(const sig *sg, const sm_tensor_info *info, const sm_tensor *t) {
  if (!t) return sm_status_new(SM_INVALID_ARGUMENT, "signature '%s': input '%s' is NULL", sg->key, info->alias);
  if (info->dtype && sm_tensor_dtype(t) != info->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "signature '%s': input '%s' expects dtype %s, given %s", sg->key,
                         info->alias, dtname(info->dtype), dtname(sm_tensor_dtype(t)));
  if (info->rank < 0) return NULL;
  int r = sm_tensor_rank(t);
  const int64_t *d = sm_tensor_dims(t);
  int ok = r == info->rank;
  for (int i = 0; ok && i < r; i++)
    if (info->dims[i] >= 0 && info->dims[i] != d[i]) ok = 0;
  if (!ok) {
    char a[256], b[256];
    return sm_status_new(SM_INVALID_ARGUMENT, "signature '%s': input '%s' expects shape %s, given %s", sg->key,
                         info->alias, shape_text(info->rank, info->dims, a, sizeof a), shape_text(r, d, b, sizeof b));
  }
  return NULL;
}

sm_status *sm_model_run(sm_model *m, const char *key, const char *const *in_aliases, sm_tensor *const *inputs,
                        int nin, const char *const *out_aliases, int nout, sm_tensor **outputs) {
  return sm_model_run_opts(m, key, in_aliases, inputs, nin, out_aliases, nout, outputs, NULL);
}

const char *sm_model_signature_warning(const sm_model *m, const char *key) {
  const sig *sg = m && key ? find_sig(m, key) : NULL;
  return sg ? sg->unsupported : NULL;
}

int sm_model_num_warnings(const sm_model *m) { return m ? m->nwarnings : 0; }

const char *sm_model_warning(const sm_model *m, int i) {
  return m && i >= 0 && i < m->nwarnings ? m->warnings[i] : NULL;
}

sm_status *sm_model_run_opts(sm_model *m, const char *key, const char *const *in_aliases, sm_tensor *const *inputs,
                             int nin, const char *const *out_aliases, int nout, sm_tensor **outputs,
                             const sm_run_options *opts) {
  if (!m || !key) return sm_status_new(SM_INVALID_ARGUMENT, "run: NULL model or signature key");
  if (nin < 0 || nout < 0 || (nin && (!in_aliases || !inputs)) || (nout && !outputs))
    return sm_status_new(SM_INVALID_ARGUMENT, "run '%s': bad input or output arrays", key);
  for (int i = 0; i < nout; i++) outputs[i] = NULL;
  const sig *sg = find_sig(m, key);
  if (!sg) return no_such_sig(m, key);
  if (sg->unsupported) return sm_status_new(SM_UNIMPLEMENTED, "%s", sg->unsupported);
  if (!out_aliases && nout != sg->nout)
    return sm_status_new(SM_INVALID_ARGUMENT, "run '%s': %d outputs asked for, the signature has %d", key, nout,
                         sg->nout);
  /* per input (alias order) its tensor; the plan's feeds and fetches; per output asked for, its
   * index (alias order); which outputs are asked for */
  size_t nin_s = (size_t)sg->nin, nout_s = (size_t)sg->nout;
  size_t bytes = (nin_s + nin_s + nout_s + 1) * sizeof(sm_tensor *) + ((size_t)nout + 1) * sizeof(int) + nout_s + 1;
  _Alignas(max_align_t) unsigned char small[512]; /* most signatures: no allocation */
  void *block = bytes <= sizeof small ? memset(small, 0, bytes) : calloc(1, bytes);
  if (!block) return sm_status_new(SM_NO_MEMORY, "run '%s': out of memory", key);
  sm_tensor **fvals = block, **pf = fvals + nin_s, **po = pf + nin_s;
  int *oidx = (int *)(po + nout_s + 1);
  unsigned char *asked = (unsigned char *)(oidx + nout + 1);
  sm_status *st = NULL;
  for (int i = 0; i < nin; i++) {
    if (!in_aliases[i]) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "run '%s': input alias %d is NULL", key, i);
      goto done;
    }
    int k = find_info(sg->in, sg->nin, in_aliases[i]);
    if (k < 0) {
      st = alias_error(sg, sg->in, sg->nin, "input", in_aliases[i]);
      goto done;
    }
    if (fvals[k]) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "run '%s': input '%s' is given twice", key, in_aliases[i]);
      goto done;
    }
    if ((st = check_input(sg, &sg->in[k], inputs[i]))) goto done;
    fvals[k] = inputs[i];
  }
  for (int k = 0; k < sg->nin; k++) {
    if (fvals[k]) continue;
    if (!sg->defaults[k]) {
      char b[256];
      st = sm_status_new(SM_INVALID_ARGUMENT, "signature '%s': missing input '%s' (%s %s)", key, sg->in[k].alias,
                         dtname(sg->in[k].dtype), shape_text(sg->in[k].rank, sg->in[k].dims, b, sizeof b));
      goto done;
    }
    fvals[k] = sg->defaults[k];
  }
  int nasked = 0;
  for (int j = 0; j < nout; j++) {
    int k = j;
    if (out_aliases && (k = out_aliases[j] ? find_info(sg->out, sg->nout, out_aliases[j]) : -1) < 0) {
      st = alias_error(sg, sg->out, sg->nout, "output", out_aliases[j] ? out_aliases[j] : "(null)");
      goto done;
    }
    oidx[j] = k;
    if (!asked[k]) nasked++;
    asked[k] = 1;
  }
  if (nasked == sg->nout && sg->plan) {
    /* every output: the signature's own plan, no names, no lookup, no lock */
    for (int k = 0; k < sg->nin; k++) pf[sg->feed_pos[k]] = fvals[k];
    if (!(st = sm__plan_run(sg->plan, sm__session_env(m->sess), pf, po, opts))) {
      if (nout == nasked) { /* each output once: handed over */
        for (int j = 0; j < nout; j++) outputs[j] = po[sg->fetch_pos[oidx[j]]];
      } else {
        for (int j = 0; j < nout; j++) outputs[j] = sm_tensor_ref(po[sg->fetch_pos[oidx[j]]]);
        for (int k = 0; k < sg->nout; k++) sm_tensor_free(po[k]);
      }
    }
  } else {
    /* some of the outputs: a plan that computes only those, by name, as Session.run would */
    const char **fnames = calloc(nin_s + 1, sizeof *fnames), **onames = calloc((size_t)nout + 1, sizeof *onames);
    if (fnames && onames) {
      for (int k = 0; k < sg->nin; k++) fnames[k] = sg->in[k].name;
      for (int j = 0; j < nout; j++) onames[j] = sg->out[oidx[j]].name;
      st = sm__session_run_opts(m->sess, fnames, fvals, sg->nin, onames, nout, NULL, 0, outputs, opts);
    } else {
      st = sm_status_new(SM_NO_MEMORY, "run '%s': out of memory", key);
    }
    free(fnames);
    free(onames);
  }
  if (st) st = sm_status_prefix(st, "running signature '%s'", key);
done:
  if (block != small) free(block);
  return st;
}

sm_status *sm_model_session_run(sm_model *m, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                                const char *const *fetch_names, int nfetches, const char *const *targets,
                                int ntargets, sm_tensor **outputs) {
  return sm_model_session_run_opts(m, feed_names, feeds, nfeeds, fetch_names, nfetches, targets, ntargets, outputs,
                                   NULL);
}

sm_status *sm_model_session_run_opts(sm_model *m, const char *const *feed_names, sm_tensor *const *feeds, int nfeeds,
                                     const char *const *fetch_names, int nfetches, const char *const *targets,
                                     int ntargets, sm_tensor **outputs, const sm_run_options *opts) {
  if (!m) return sm_status_new(SM_INVALID_ARGUMENT, "session run: NULL model");
  return sm__session_run_opts(m->sess, feed_names, feeds, nfeeds, fetch_names, nfetches, targets, ntargets, outputs,
                             opts);
}

/* ---- loading --------------------------------------------------------------------------------- */
static const Tensorflow__CollectionDef *collection(const Tensorflow__MetaGraphDef *mg, const char *key) {
  for (size_t i = 0; i < mg->n_collection_def; i++)
    if (mg->collection_def[i] && mg->collection_def[i]->key && !strcmp(mg->collection_def[i]->key, key))
      return mg->collection_def[i]->value;
  return NULL;
}

static const Tensorflow__SignatureDef *signature(const Tensorflow__MetaGraphDef *mg, const char *key) {
  for (size_t i = 0; i < mg->n_signature_def; i++)
    if (mg->signature_def[i] && mg->signature_def[i]->key && !strcmp(mg->signature_def[i]->key, key))
      return mg->signature_def[i]->value;
  return NULL;
}

typedef struct feeds {
  int n;
  const char **names;
  sm_tensor **vals;
  Tensorflow__AssetFileDef **unpacked; /* from the collection; freed with the feeds */
  int nunpacked;
} feeds;

static void feeds_free(feeds *f) {
  for (int i = 0; i < f->n; i++) sm_tensor_free(f->vals[i]);
  for (int i = 0; i < f->nunpacked; i++) protobuf_c_message_free_unpacked(&f->unpacked[i]->base, NULL);
  free(f->unpacked);
  free(f->names);
  free(f->vals);
}

static sm_status *string_scalar(const char *s, sm_tensor **out) {
  sm_status *st = sm_tensor_new(SM_STRING, 0, NULL, out);
  if (!st) st = sm_tensor_set_string(*out, 0, s, strlen(s));
  if (st) {
    sm_tensor_free(*out);
    *out = NULL;
  }
  return st;
}

static sm_status *add_feed(feeds *f, const char *name, const char *value) {
  const char **nn = realloc(f->names, ((size_t)f->n + 1) * sizeof *nn);
  if (!nn) return sm_status_new(SM_NO_MEMORY, "out of memory");
  f->names = nn;
  sm_tensor **nv = realloc(f->vals, ((size_t)f->n + 1) * sizeof *nv);
  if (!nv) return sm_status_new(SM_NO_MEMORY, "out of memory");
  f->vals = nv;
  sm_status *st = string_scalar(value, &f->vals[f->n]);
  if (st) return st;
  f->names[f->n++] = name;
  return NULL;
}

static sm_status *add_asset(feeds *f, const char *dir, const Tensorflow__AssetFileDef *a, int i) {
  if (!a || !a->tensor_info || a->tensor_info->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME ||
      !a->tensor_info->name || !*a->tensor_info->name)
    return sm_status_new(SM_INVALID_ARGUMENT, "asset %d names no tensor to feed", i);
  const char *fn = a->filename ? a->filename : "";
  sm_status *vs = sm__verify_asset_name(dir, fn); /* confined to EXPORT_DIR/assets */
  if (vs) return vs;
  size_t n = strlen(dir) + strlen(fn) + 16;
  char *p = malloc(n);
  if (!p) return sm_status_new(SM_NO_MEMORY, "out of memory");
  snprintf(p, n, "%s/assets/%s", dir, fn);
  sm_status *st = add_feed(f, a->tensor_info->name, p);
  free(p);
  return st;
}

static sm_status *asset_feeds(const Tensorflow__MetaGraphDef *mg, const char *dir, feeds *f) {
  sm_status *st;
  if (mg->n_asset_file_def > 0) {
    for (size_t i = 0; i < mg->n_asset_file_def; i++)
      if ((st = add_asset(f, dir, mg->asset_file_def[i], (int)i))) return st;
    return NULL;
  }
  const Tensorflow__CollectionDef *c = collection(mg, SM_ASSETS_KEY);
  if (!c) return NULL;
  if (c->kind_case != TENSORFLOW__COLLECTION_DEF__KIND_ANY_LIST || !c->any_list)
    return sm_status_new(SM_INVALID_ARGUMENT, "collection '%s' is not an any_list", SM_ASSETS_KEY);
  size_t n = c->any_list->n_value;
  f->unpacked = calloc(n + 1, sizeof *f->unpacked);
  if (!f->unpacked) return sm_status_new(SM_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const Google__Protobuf__Any *any = c->any_list->value[i];
    if (!any) continue;
    ProtobufCMessage *msg;
    st = sm_pb_parse(&tensorflow__asset_file_def__descriptor, any->value.data, any->value.len,
                     "collection saved_model_assets", &msg);
    if (st) return st;
    f->unpacked[f->nunpacked++] = (Tensorflow__AssetFileDef *)msg;
    if ((st = add_asset(f, dir, (Tensorflow__AssetFileDef *)msg, (int)i))) return st;
  }
  return NULL;
}

/* The init op's node name, as TF's GetInitOp finds it; NULL when there is none. */
static sm_status *init_op(const Tensorflow__MetaGraphDef *mg, const char *dir, const char **out) {
  *out = NULL;
  const Tensorflow__SignatureDef *sd = signature(mg, SM_INIT_OP_SIGNATURE_KEY);
  if (sd) {
    for (size_t i = 0; i < sd->n_outputs; i++) {
      const Tensorflow__SignatureDef__OutputsEntry *e = sd->outputs[i];
      if (e && e->key && !strcmp(e->key, SM_INIT_OP_SIGNATURE_KEY) && e->value &&
          e->value->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME && e->value->name) {
        *out = e->value->name;
        return NULL;
      }
    }
    return sm_status_new(SM_FAILED_PRECONDITION, "Could not find output %s", SM_INIT_OP_SIGNATURE_KEY);
  }
  const char *keys[] = {SM_MAIN_OP_KEY, SM_LEGACY_INIT_OP_KEY};
  for (int k = 0; k < 2; k++) {
    const Tensorflow__CollectionDef *c = collection(mg, keys[k]);
    if (!c) continue;
    if (c->kind_case != TENSORFLOW__COLLECTION_DEF__KIND_NODE_LIST || !c->node_list || c->node_list->n_value != 1 ||
        !c->node_list->value[0])
      return sm_status_new(SM_FAILED_PRECONDITION, "Expected exactly one main op in : %s (collection '%s')", dir,
                           keys[k]);
    *out = c->node_list->value[0];
    return NULL;
  }
  return NULL;
}

/* ---- TF2 object-graph restore ---------------------------------------------------------------
 * Keras 3 exports capture one set of VarHandleOps in their signature functions and restore another
 * set (Variable, Variable_1, ...) in _traced_restore, so TF's session loader leaves the captured
 * variables uninitialized; tf.saved_model.load works because it binds captures through the object
 * graph. We do what it does for exactly those variables: a signature call node's captured inputs
 * are the SavedObjects in its concrete function's bound_inputs; the checkpoint's
 * TrackableObjectGraph, walked in step with the SavedObjectGraph by child names, gives each one's
 * checkpoint key. Variables the restore op already set are left alone. */
static const Tensorflow__SavedConcreteFunction *concrete_fn(const Tensorflow__SavedObjectGraph *og, const char *name) {
  for (size_t i = 0; i < og->n_concrete_functions; i++)
    if (og->concrete_functions[i] && og->concrete_functions[i]->key && !strcmp(og->concrete_functions[i]->key, name))
      return og->concrete_functions[i]->value;
  return NULL;
}

static const Tensorflow__NodeDef *graph_node(const Tensorflow__GraphDef *gd, const char *input) {
  size_t n = strcspn(input, ":");
  for (size_t i = 0; i < gd->n_node; i++)
    if (gd->node[i] && gd->node[i]->name && strlen(gd->node[i]->name) == n && !strncmp(gd->node[i]->name, input, n))
      return gd->node[i];
  return NULL;
}

static const char *call_function(const Tensorflow__NodeDef *nd) {
  for (size_t i = 0; i < nd->n_attr; i++)
    if (nd->attr[i] && nd->attr[i]->key && !strcmp(nd->attr[i]->key, "f") && nd->attr[i]->value &&
        nd->attr[i]->value->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC && nd->attr[i]->value->func)
      return nd->attr[i]->value->func->name;
  return NULL;
}

static sm_status *restore_object_graph(sm_model *m, const char *export_dir) {
  const Tensorflow__SavedObjectGraph *og = m->mg->object_graph_def;
  const Tensorflow__GraphDef *gd = m->mg->graph_def;
  if (!og || !og->n_nodes || !gd) return NULL;
  size_t nobj = og->n_nodes;
  const char **handle = calloc(nobj, sizeof *handle); /* SavedObject id -> VarHandleOp node name */
  int *ck = malloc(nobj * sizeof *ck), *queue = malloc(nobj * sizeof *queue);
  const char **names = NULL;
  sm_tensor **vals = NULL;
  sm_bundle *b = NULL;
  ProtobufCMessage *tog = NULL;
  sm_tensor *graph_str = NULL;
  char *prefix = NULL, *index = NULL;
  sm_status *st = NULL;
  int nh = 0;
  if (!handle || !ck || !queue) {
    st = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    if (!nd || !nd->op || (strcmp(nd->op, "StatefulPartitionedCall") && strcmp(nd->op, "PartitionedCall"))) continue;
    const char *fn = call_function(nd);
    const Tensorflow__SavedConcreteFunction *cf = fn ? concrete_fn(og, fn) : NULL;
    if (!cf || !cf->n_bound_inputs) continue;
    size_t ndata = 0;
    while (ndata < nd->n_input && nd->input[ndata] && nd->input[ndata][0] != '^') ndata++;
    if (cf->n_bound_inputs > ndata) continue;
    for (size_t k = 0; k < cf->n_bound_inputs; k++) {
      int32_t id = cf->bound_inputs[k];
      const Tensorflow__NodeDef *h = graph_node(gd, nd->input[ndata - cf->n_bound_inputs + k]);
      if (id < 0 || (size_t)id >= nobj || !h || !h->op || strcmp(h->op, "VarHandleOp") || handle[id]) continue;
      if (!og->nodes[id] || og->nodes[id]->kind_case != TENSORFLOW__SAVED_OBJECT__KIND_VARIABLE) continue;
      handle[id] = h->name;
      nh++;
    }
  }
  if (!nh) goto done;
  prefix = sm__path_join(export_dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME);
  index = sm__path_join(export_dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME ".index");
  if (!prefix || !index) {
    st = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto done;
  }
  if (!sm__path_exists(index)) goto done;
  /* the captured variables' current state: which need a value */
  names = calloc((size_t)nh, sizeof *names);
  vals = calloc((size_t)nh, sizeof *vals);
  if (!names || !vals) {
    st = sm_status_new(SM_NO_MEMORY, "out of memory");
    goto done;
  }
  int k = 0;
  for (size_t i = 0; i < nobj; i++)
    if (handle[i]) names[k++] = handle[i];
  if ((st = sm__session_run(m->sess, NULL, NULL, 0, names, nh, NULL, 0, vals))) goto done;
  int need = 0;
  for (int i = 0; i < nh; i++) {
    sm_variable *v = sm_tensor_dtype(vals[i]) == SM_RESOURCE && sm_tensor_num_elements(vals[i]) == 1
                         ? *(sm_variable **)sm_tensor_data(vals[i])
                         : NULL;
    if (v && sm__is_variable(v) && !sm__variable_is_initialized(v)) need = 1;
  }
  if (!need) goto done;
  if ((st = sm_bundle_open(prefix, &b))) goto done;
  if ((st = sm_bundle_read(b, "_CHECKPOINTABLE_OBJECT_GRAPH", &graph_str))) goto done;
  size_t glen = 0;
  const char *gbytes = sm_tensor_dtype(graph_str) == SM_STRING && sm_tensor_num_elements(graph_str) == 1
                           ? sm_tensor_string(graph_str, 0, &glen)
                           : NULL;
  if (!gbytes) {
    st = sm_status_new(SM_DATA_LOSS, "_CHECKPOINTABLE_OBJECT_GRAPH is not a string scalar");
    goto done;
  }
  if ((st = sm_pb_parse(&tensorflow__trackable_object_graph__descriptor, (const uint8_t *)gbytes, glen,
                        "_CHECKPOINTABLE_OBJECT_GRAPH", &tog)))
    goto done;
  const Tensorflow__TrackableObjectGraph *tg = (const Tensorflow__TrackableObjectGraph *)tog;
  /* saved id -> checkpoint id, walking both graphs from the root by child name */
  for (size_t i = 0; i < nobj; i++) ck[i] = -1;
  size_t qh = 0, qt = 0;
  if (tg->n_nodes) {
    ck[0] = 0;
    queue[qt++] = 0;
  }
  while (qh < qt) {
    int sid = queue[qh++], cid = ck[sid];
    const Tensorflow__SavedObject *so = og->nodes[sid];
    const Tensorflow__TrackableObjectGraph__TrackableObject *to =
        cid >= 0 && (size_t)cid < tg->n_nodes ? tg->nodes[cid] : NULL;
    if (!so || !to) continue;
    for (size_t c = 0; c < to->n_children; c++) {
      const Tensorflow__TrackableObjectGraph__TrackableObject__ObjectReference *r = to->children[c];
      if (!r || !r->local_name) continue;
      for (size_t d = 0; d < so->n_children; d++) {
        const Tensorflow__TrackableObjectGraph__TrackableObject__ObjectReference *q = so->children[d];
        if (!q || !q->local_name || strcmp(q->local_name, r->local_name)) continue;
        if (q->node_id >= 0 && (size_t)q->node_id < nobj && ck[q->node_id] < 0) {
          ck[q->node_id] = r->node_id;
          queue[qt++] = q->node_id;
        }
        break;
      }
    }
  }
  k = 0;
  for (size_t i = 0; i < nobj; i++) {
    if (!handle[i]) continue;
    int idx = k++;
    sm_variable *v = sm_tensor_dtype(vals[idx]) == SM_RESOURCE && sm_tensor_num_elements(vals[idx]) == 1
                         ? *(sm_variable **)sm_tensor_data(vals[idx])
                         : NULL;
    if (!v || !sm__is_variable(v) || sm__variable_is_initialized(v) || ck[i] < 0 || (size_t)ck[i] >= tg->n_nodes || !tg->nodes[ck[i]])
      continue;
    const Tensorflow__TrackableObjectGraph__TrackableObject *to = tg->nodes[ck[i]];
    const char *key = NULL;
    for (size_t a = 0; a < to->n_attributes; a++)
      if (to->attributes[a] && to->attributes[a]->name && !strcmp(to->attributes[a]->name, "VARIABLE_VALUE"))
        key = to->attributes[a]->checkpoint_key;
    if (!key) continue;
    sm_tensor *t;
    /* a private copy: kernels may update a variable's value in place when it is not shared */
    if ((st = sm_bundle_read_copy(b, key, &t))) {
      st = sm_status_prefix(st, "variable '%s' (checkpoint key '%s')", handle[i], key);
      goto done;
    }
    if ((st = sm__variable_assign(v, t))) {
      st = sm_status_prefix(st, "variable '%s' (checkpoint key '%s')", handle[i], key);
      goto done;
    }
  }
done:
  if (vals)
    for (int i = 0; i < nh; i++) sm_tensor_free(vals[i]);
  free(vals);
  free(names);
  sm_tensor_free(graph_str);
  if (tog) protobuf_c_message_free_unpacked(tog, NULL);
  sm_bundle_close(b);
  free(prefix);
  free(index);
  free(handle);
  free(ck);
  free(queue);
  return st;
}

/* Does the load compile signature `key` (sm_load_options.signatures)? */
static int wanted(const sm_load_options *opts, const char *key) {
  if (!opts || !opts->signatures) return 1;
  for (int i = 0; i < opts->nsignatures; i++)
    if (opts->signatures[i] && !strcmp(opts->signatures[i], key)) return 1;
  return 0;
}

sm_status *sm_model_load(const char *export_dir, const char *const *tags, int ntags, const sm_load_options *opts,
                         sm_model **out) {
  return sm__model_load_parsed(export_dir, NULL, tags, ntags, opts, out);
}

sm_status *sm__model_load_parsed(const char *export_dir, Tensorflow__SavedModel *sm, const char *const *tags,
                                 int ntags, const sm_load_options *opts, sm_model **out) {
  *out = NULL;
  sm_status *st = NULL;
  if (!export_dir) st = sm_status_new(SM_INVALID_ARGUMENT, "load: no export directory");
  else if (ntags < 0 || (ntags > 0 && !tags)) st = sm_status_new(SM_INVALID_ARGUMENT, "load: bad tag array");
  sm_model *m = st ? NULL : calloc(1, sizeof *m);
  if (!st && !m) st = sm_status_new(SM_NO_MEMORY, "load: out of memory");
  if (st) {
    sm_saved_model_free(sm);
    return st;
  }
  m->sm = sm; /* owned from here: sm_model_free frees it */
  feeds af = {0};
  char *prefix = NULL, *index = NULL;
  if (!(m->dir = dupstr(export_dir))) {
    st = sm_status_new(SM_NO_MEMORY, "load: out of memory");
    goto fail;
  }
  if (!m->sm && (st = sm_saved_model_read(export_dir, &m->sm))) goto fail;
  if ((st = sm_saved_model_find_meta_graph(m->sm, tags, (size_t)ntags, &m->mg))) goto fail;
  if (!m->mg->graph_def) {
    st = sm_status_new(SM_INVALID_ARGUMENT, "%s: the MetaGraph has no graph_def", export_dir);
    goto fail;
  }
  int nthreads = opts ? opts->num_threads : 0;
  int device = opts ? opts->device : SM_DEVICE_CPU;
  if (device != SM_DEVICE_CPU && device != SM_DEVICE_GPU) {
    st = sm_status_new(SM_INVALID_ARGUMENT, "load: device %d is neither SM_DEVICE_CPU nor SM_DEVICE_GPU", device);
    goto fail;
  }
  if (device == SM_DEVICE_GPU) {
    const sm_device *dev;
    if ((st = sm__device_open(SM_BACKEND_CUDA, &dev))) {
      st = sm_status_prefix(st, "%s: load with device GPU", export_dir);
      goto fail;
    }
  }
  sm_load_budget budget;
  sm__load_budget_for(export_dir, opts ? opts->max_graph_nodes : 0, opts ? opts->max_load_bytes : 0, &budget);
  if ((st = sm__session_new_budget(m->mg, export_dir, nthreads, &budget, &m->sess))) goto fail;
  sm__session_allow_external_files(m->sess, opts && opts->allow_external_files);
  if ((st = asset_feeds(m->mg, export_dir, &af))) {
    st = sm_status_prefix(st, "%s: assets", export_dir);
    goto fail;
  }
  /* restore */
  const Tensorflow__SaverDef *sv = m->mg->saver_def;
  if (sv && sv->restore_op_name && *sv->restore_op_name) {
    prefix = sm__path_join(export_dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME);
    index = sm__path_join(export_dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME ".index");
    if (!prefix || !index) {
      st = sm_status_new(SM_NO_MEMORY, "load: out of memory");
      goto fail;
    }
    if (sm__path_exists(index)) {
      feeds rf = {0};
      st = add_feed(&rf, sv->filename_tensor_name ? sv->filename_tensor_name : "", prefix);
      for (int i = 0; !st && i < af.n; i++) {
        /* the asset feeds too, unless one names the filename tensor */
        if (!strcmp(af.names[i], rf.names[0])) continue;
        const char **nn = realloc(rf.names, ((size_t)rf.n + 1) * sizeof *nn);
        sm_tensor **nv = nn ? realloc(rf.vals, ((size_t)rf.n + 1) * sizeof *nv) : NULL;
        if (nn) rf.names = nn;
        if (nv) rf.vals = nv;
        if (!nn || !nv) {
          st = sm_status_new(SM_NO_MEMORY, "out of memory");
          break;
        }
        rf.names[rf.n] = af.names[i];
        rf.vals[rf.n++] = sm_tensor_ref(af.vals[i]);
      }
      const char *target = sv->restore_op_name;
      /* the checkpoint's keys, dtypes and shapes against the graph's variables, before running */
      sm_bundle *vb = NULL;
      if (!st && !(st = sm_bundle_open(prefix, &vb)))
        st = sm__verify_restore(sm__session_graph(m->sess), rf.names, rf.n, target, vb, NULL);
      sm_bundle_close(vb);
      if (!st) st = sm__session_run(m->sess, rf.names, rf.vals, rf.n, NULL, 0, &target, 1, NULL);
      feeds_free(&rf);
      if (st) {
        st = sm_status_prefix(st, "%s: restoring variables (op '%s')", export_dir, target);
        goto fail;
      }
    }
  }
  if ((st = restore_object_graph(m, export_dir))) {
    st = sm_status_prefix(st, "%s: restoring variables through the object graph", export_dir);
    goto fail;
  }
  /* init op, or TF1 table initializers when there is none */
  const char *init = NULL;
  if ((st = init_op(m->mg, export_dir, &init))) goto fail;
  if (init) {
    if ((st = sm__session_run(m->sess, af.names, af.vals, af.n, NULL, 0, &init, 1, NULL))) {
      st = sm_status_prefix(st, "%s: running init op '%s'", export_dir, init);
      goto fail;
    }
  } else {
    const Tensorflow__CollectionDef *c = collection(m->mg, "table_initializer");
    if (c && c->kind_case == TENSORFLOW__COLLECTION_DEF__KIND_NODE_LIST && c->node_list && c->node_list->n_value) {
      if ((st = sm__session_run(m->sess, af.names, af.vals, af.n, NULL, 0, (const char *const *)c->node_list->value,
                               (int)c->node_list->n_value, NULL))) {
        st = sm_status_prefix(st, "%s: running table initializers", export_dir);
        goto fail;
      }
    }
  }
  /* signatures, sorted, each with its plan prepared (placed on the device asked for) */
  if (device == SM_DEVICE_GPU) sm__session_set_backend(m->sess, SM_BACKEND_CUDA);
  const sm_cgraph *g = sm__session_graph(m->sess);
  m->sigs = calloc(m->mg->n_signature_def + 1, sizeof *m->sigs);
  if (!m->sigs) {
    st = sm_status_new(SM_NO_MEMORY, "load: out of memory");
    goto fail;
  }
  for (size_t i = 0; i < m->mg->n_signature_def; i++) {
    const Tensorflow__MetaGraphDef__SignatureDefEntry *e = m->mg->signature_def[i];
    if (!e || !e->key || !strcmp(e->key, SM_INIT_OP_SIGNATURE_KEY)) continue;
    for (int j = 0; j < m->nsigs; j++)
      if (!strcmp(m->sigs[j].key, e->key)) {
        st = sm_status_new(SM_INVALID_ARGUMENT, "%s: signature '%s' appears twice", export_dir, e->key);
        goto fail;
      }
    st = build_sig(g, e->key, e->value, &m->sigs[m->nsigs]);
    m->nsigs++;
    if (st) {
      st = sm_status_prefix(st, "%s", export_dir);
      goto fail;
    }
  }
  qsort(m->sigs, (size_t)m->nsigs, sizeof *m->sigs, cmp_sig);
  int nrunnable = 0;
  const char *pre = getenv("SM_LOAD_PRELOAD");
  int preload = !pre || strcmp(pre, "0");
  sm_status *first_missing = NULL; /* the first signature without kernels, for a load nothing can run */
  for (int i = 0; i < m->nsigs; i++) {
    sig *sg = &m->sigs[i];
    if (sg->unsupported || !wanted(opts, sg->key)) continue;
    const char **in = calloc((size_t)sg->nin + 1, sizeof *in);
    if (!in) {
      st = sm_status_new(SM_NO_MEMORY, "load: out of memory");
      goto fail;
    }
    for (int k = 0; k < sg->nin; k++) in[k] = sg->in[k].name;
    sg->feed_pos = calloc((size_t)sg->nin + 1, sizeof *sg->feed_pos);
    sg->fetch_pos = calloc((size_t)sg->nout + 1, sizeof *sg->fetch_pos);
    if (!sg->feed_pos || !sg->fetch_pos)
      st = sm_status_new(SM_NO_MEMORY, "load: out of memory");
    else
      st = sm__session_plan(m->sess, in, sg->nin, sg->out_names, sg->nout, NULL, 0, &sg->plan, sg->feed_pos,
                           sg->fetch_pos);
    free(in);
    if (st && sm_status_code(st) == SM_UNIMPLEMENTED) {
      /* ops without a kernel: this signature cannot run, the others may */
      st = sm_status_prefix(st, "signature '%s'", sg->key);
      if (!(sg->unsupported = dupstr(sm_status_message(st)))) {
        sm_status_free(st);
        st = sm_status_new(SM_NO_MEMORY, "load: out of memory");
      } else if (!first_missing) {
        first_missing = st;
        st = NULL;
      } else {
        sm_status_free(st);
        st = NULL;
      }
    }
    if (st) {
      sm_status_free(first_missing);
      st = sm_status_prefix(st, "%s: signature '%s'", export_dir, sg->key);
      goto fail;
    }
    if (!sg->unsupported) nrunnable++;
    /* what the first call would compute once from the variables alone (BatchNorm folds), now:
     * SM_LOAD_PRELOAD=0 leaves it to the first call (for A/B) */
    if (!sg->unsupported && preload) sm__plan_preload(sg->plan, sm__session_env(m->sess));
  }
  if (first_missing && !nrunnable) {
    st = sm_status_prefix(first_missing, "%s", export_dir);
    goto fail;
  }
  sm_status_free(first_missing);
  m->warnings = calloc((size_t)m->nsigs + 1, sizeof *m->warnings);
  if (!m->warnings) {
    st = sm_status_new(SM_NO_MEMORY, "load: out of memory");
    goto fail;
  }
  for (int i = 0; i < m->nsigs; i++)
    if (m->sigs[i].unsupported) m->warnings[m->nwarnings++] = m->sigs[i].unsupported;
  feeds_free(&af);
  free(prefix);
  free(index);
  *out = m;
  return NULL;
fail:
  feeds_free(&af);
  free(prefix);
  free(index);
  sm_model_free(m);
  return st;
}

/* ---- scan ------------------------------------------------------------------------------------ */
/* saved_model_cli's _OP_DENYLIST (tensorflow/python/tools/saved_model_cli.py). */
static const char *const denylist[] = {"PrintV2", "ReadFile", "WriteFile"};

void sm_string_list_free(char **list) {
  if (!list) return;
  for (char **p = list; *p; p++) free(*p);
  free(list);
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int is_function(const Tensorflow__GraphDef *gd, const char *op) {
  if (!gd->library) return 0;
  for (size_t i = 0; i < gd->library->n_function; i++) {
    const Tensorflow__FunctionDef *f = gd->library->function[i];
    if (f && f->signature && f->signature->name && !strcmp(f->signature->name, op)) return 1;
  }
  return 0;
}

static sm_status *push(char ***list, int *n, const char *s) {
  char **nl = realloc(*list, ((size_t)*n + 2) * sizeof *nl);
  if (!nl) return sm_status_new(SM_NO_MEMORY, "scan: out of memory");
  *list = nl;
  if (!(nl[*n] = dupstr(s))) return sm_status_new(SM_NO_MEMORY, "scan: out of memory");
  nl[++*n] = NULL;
  return NULL;
}

sm_status *sm_model_scan(const char *export_dir, const char *const *tags, int ntags, char ***denylisted,
                         char ***unsupported) {
  *denylisted = NULL;
  *unsupported = NULL;
  if (!export_dir) return sm_status_new(SM_INVALID_ARGUMENT, "scan: no export directory");
  if (ntags < 0 || (ntags > 0 && !tags)) return sm_status_new(SM_INVALID_ARGUMENT, "scan: bad tag array");
  Tensorflow__SavedModel *sm;
  sm_status *st = sm_saved_model_read(export_dir, &sm);
  if (st) return st;
  const Tensorflow__MetaGraphDef *mg;
  if ((st = sm_saved_model_find_meta_graph(sm, tags, (size_t)ntags, &mg))) {
    sm_saved_model_free(sm);
    return st;
  }
  /* every op type in the graph and every function body */
  const char **ops = NULL;
  size_t nops = 0, cap = 0;
  const Tensorflow__GraphDef *gd = mg->graph_def;
  for (int pass = 0; gd && pass < 2 && !st; pass++) {
    size_t nf = pass == 0 ? 1 : (gd->library ? gd->library->n_function : 0);
    for (size_t f = 0; f < nf && !st; f++) {
      Tensorflow__NodeDef **nodes;
      size_t nn;
      if (pass == 0) {
        nodes = gd->node;
        nn = gd->n_node;
      } else {
        if (!gd->library->function[f]) continue;
        nodes = gd->library->function[f]->node_def;
        nn = gd->library->function[f]->n_node_def;
      }
      for (size_t i = 0; i < nn; i++) {
        if (!nodes[i] || !nodes[i]->op || !*nodes[i]->op) continue;
        if (nops == cap) {
          size_t nc = cap ? cap * 2 : 64;
          const char **no = realloc(ops, nc * sizeof *no);
          if (!no) {
            st = sm_status_new(SM_NO_MEMORY, "scan: out of memory");
            break;
          }
          ops = no;
          cap = nc;
        }
        ops[nops++] = nodes[i]->op;
      }
    }
  }
  char **deny = NULL, **unsup = NULL;
  int nd = 0, nu = 0;
  if (!st) {
    qsort(ops, nops, sizeof *ops, cmp_cstr);
    for (size_t i = 0; i < nops && !st; i++) {
      if (i && !strcmp(ops[i], ops[i - 1])) continue;
      const char *op = ops[i];
      for (size_t k = 0; k < sizeof denylist / sizeof *denylist && !st; k++)
        if (!strcmp(op, denylist[k])) st = push(&deny, &nd, op);
      /* function calls are inlined by the graph layer: they need no kernel */
      if (!strcmp(op, "StatefulPartitionedCall") || !strcmp(op, "PartitionedCall") || is_function(gd, op)) continue;
      if (!strcmp(op, "Placeholder") || !strcmp(op, "PlaceholderV2")) continue;
      const sm_kernel *kern = NULL; /* a registry out of memory is an error, not "no kernel" */
      if (!st && !(st = sm__kernel_lookup(op, SM_BACKEND_CPU, &kern)) && !kern) st = push(&unsup, &nu, op);
    }
  }
  free(ops);
  sm_saved_model_free(sm);
  /* empty lists are a lone NULL, never a NULL array */
  if (!st && !deny && !(deny = calloc(1, sizeof *deny))) st = sm_status_new(SM_NO_MEMORY, "scan: out of memory");
  if (!st && !unsup && !(unsup = calloc(1, sizeof *unsup))) st = sm_status_new(SM_NO_MEMORY, "scan: out of memory");
  if (st) {
    sm_string_list_free(deny);
    sm_string_list_free(unsup);
    return st;
  }
  *denylisted = deny;
  *unsupported = unsup;
  return NULL;
}

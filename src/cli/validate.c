/* validate.c - `savedmodel validate`: every check a load makes, and more, without running a kernel.
 *
 * For the SavedModel in --dir (every MetaGraph, or the one --tag_set names): the protobuf parses
 * (with the library's nesting and size guards); tag sets are distinct (sorted keys: one fault per
 * tag set several MetaGraphs share, n log n); each MetaGraph compiles within the load budget a load
 * would have (graph.h's sm_load_budget; constants are checked against it, never materialised)
 * (graph layer: inputs resolve, no cycles, no recursive functions, OpDefs and attrs complete); the
 * plans sm_model_load builds (restore op, init op or table initializers, every signature) prepare,
 * which means every op they need has a kernel and every kernel accepts its attrs (a signature with
 * ops lacking a kernel is a warning, as the load makes it, unless no signature can run: then a
 * fault; ops named there are left out of the closing note on ops nothing runs); signature tensors
 * exist and their declared dtypes match the graph (a mismatch is a warning: TF's own exports have
 * them); asset file names stay inside EXPORT_DIR/assets (no absolute names, no "..", no symlink
 * out; a missing file is a warning); the variables bundle opens (footer, block CRCs), every tensor
 * reads back with its CRC checked, the data shards hold nothing but the tensors the index lists,
 * and each variable restored has the dtype and shape its graph declares. Every op that reads a file
 * is noted with its path (sm__file_ops); one outside EXPORT_DIR is a fault, as a load refuses it
 * (a warning with --allow_external_files). Text output escapes control bytes: one finding, one line.
 * Prints one line per fault ("fault: ...") and per warning ("warning: ..."), then a summary;
 * exits 0 when there are no faults, 1 otherwise (2 for usage errors). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file.h"
#include "cli/cli.h"
#include "format/table.h"
#include "graph/graph.h"
#include "runtime/device.h"
#include "runtime/session.h"
#include "runtime/verify.h"
#include "savedmodel/bundle.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"
#include "tensor_bundle.pb-c.h"

static const char usage[] =
    "usage: savedmodel validate --dir DIR [--tag_set TAGS] [--json] [--allow_external_files]\n"
    "                           [--device gpu]\n"
    "                           [--max_graph_nodes N] [--max_load_bytes BYTES]\n"
    "\n"
    "Checks a SavedModel without running it: parsing, tag sets, graph compilation, kernels for\n"
    "every op a load runs, signatures, assets confined to the export directory, and the variables\n"
    "bundle (every checksum, every byte of the shards, dtypes and shapes against the graph).\n"
    "Every op that reads a file is noted with its path; a path outside DIR (after '..' and\n"
    "symlinks) is a fault, as a load refuses it, or a warning with --allow_external_files.\n"
    "Names and paths are printed escaped (\\n, \\xNN): one finding is one line.\n"
    "Exit status 0: sound; 1: faults, each listed on a line starting with 'fault:'.\n"
    "With --json, one document (same exit status):\n"
    "  {\"dir\": str, \"sound\": bool, \"faults\": int, \"warnings\": int, \"meta_graphs\": int,\n"
    "   \"signatures\": int, \"checkpoint_tensors\": int, \"variables_checked\": int,\n"
    "   \"findings\": [{\"kind\": \"fault\"|\"warning\"|\"note\", \"context\": str|null, \"message\": str}]}\n";

typedef struct report {
  int faults, warnings;
  const char *ctx; /* "MetaGraph ['serve']" or NULL */
  FILE *json;      /* --json: the "findings" items, written here (a memory stream); NULL: text */
  int nitems;
  sm_load_budget budget; /* the load's, sized once (--max_graph_nodes, --max_load_bytes or the files) */
  int allow_external; /* --allow_external_files: a file read from outside is a warning, not a fault */
  int gpu;            /* --device gpu: note each signature's placement on the GPU */
} report;

/* Text output: one finding is one line, whatever the names in it hold. A newline, any other
 * control byte and backslash are escaped (\n, \t, \r, \\, \xNN); other bytes go out as they are. */
static void put_escaped(const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '\n') fputs("\\n", stdout);
    else if (c == '\t') fputs("\\t", stdout);
    else if (c == '\r') fputs("\\r", stdout);
    else if (c == '\\') fputs("\\\\", stdout);
    else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
    else putchar(c);
  }
}

static void vline(report *r, const char *kind, const char *fmt, va_list ap) {
  char small[512], *msg = small;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1)) != NULL) vsnprintf(msg, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  if (!msg) msg = small; /* out of memory: the message truncated rather than lost */
  if (!r->json) {
    printf("%s: ", kind);
    if (r->ctx) {
      put_escaped(r->ctx);
      fputs(": ", stdout);
    }
    put_escaped(msg);
    putchar('\n');
    if (msg != small) free(msg);
    return;
  }
  fprintf(r->json, "%s{\"kind\": \"%s\", \"context\": ", r->nitems++ ? ",\n  " : "\n  ", kind);
  if (r->ctx) sm__json_str(r->json, r->ctx, strlen(r->ctx));
  else fputs("null", r->json);
  fputs(", \"message\": ", r->json);
  sm__json_str(r->json, msg, strlen(msg));
  fputc('}', r->json);
  if (msg != small) free(msg);
}

static void note(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(report *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vline(r, "note", fmt, ap);
  va_end(ap);
}

static void fault(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fault(report *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vline(r, "fault", fmt, ap);
  va_end(ap);
  r->faults++;
}

static void warn(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(report *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vline(r, "warning", fmt, ap);
  va_end(ap);
  r->warnings++;
}

/* Records s as a fault (prefixed by what) and frees it; returns 1 when there was one. */
static int fault_st(report *r, sm_status *s, const char *what) {
  if (!s) return 0;
  if (what)
    fault(r, "%s: %s", what, sm_status_message(s));
  else
    fault(r, "%s", sm_status_message(s));
  sm_status_free(s);
  return 1;
}

/* ---- tag sets -------------------------------------------------------------------------------- */
static void tags_text(const Tensorflow__MetaGraphDef *mg, char *buf, size_t cap);

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A MetaGraph's tag set as one string, equal for equal sets whatever the order or repeats: its
 * distinct tags sorted, each written "<length>:<tag>". NULL when out of memory. */
static char *tag_key(const Tensorflow__MetaGraphDef *mg) {
  size_t n = mg->meta_info_def ? mg->meta_info_def->n_tags : 0, len = 1;
  const char **t = malloc((n + 1) * sizeof *t);
  if (!t) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (mg->meta_info_def->tags[i]) t[k++] = mg->meta_info_def->tags[i];
  qsort(t, k, sizeof *t, cmp_cstr);
  for (size_t i = 0; i < k; i++) len += strlen(t[i]) + 24;
  char *key = malloc(len), *p = key;
  for (size_t i = 0; key && i < k; i++)
    if (!i || strcmp(t[i], t[i - 1])) p += sprintf(p, "%zu:%s", strlen(t[i]), t[i]);
  if (key) *p = 0;
  free(t);
  return key;
}

typedef struct keyed {
  char *key;
  size_t idx;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* One fault per tag set that more than one MetaGraph has (sorted keys: n log n, not pairs). */
static void check_tag_sets(report *r, const Tensorflow__SavedModel *sm) {
  size_t n = 0;
  keyed *ks = calloc(sm->n_meta_graphs + 1, sizeof *ks);
  if (!ks) {
    fault(r, "out of memory");
    return;
  }
  for (size_t i = 0; i < sm->n_meta_graphs; i++) {
    if (!sm->meta_graphs[i]) continue;
    if (!(ks[n].key = tag_key(sm->meta_graphs[i]))) {
      fault(r, "out of memory");
      break;
    }
    ks[n++].idx = i;
  }
  qsort(ks, n, sizeof *ks, cmp_keyed);
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && !strcmp(ks[j].key, ks[i].key);) j++;
    if (j - i < 2) continue;
    char list[256];
    size_t at = 0;
    for (size_t k = i; k < j && k < i + 8 && at < sizeof list; k++)
      at += (size_t)snprintf(list + at, sizeof list - at, "%s%zu", k == i ? "" : k + 1 == j ? " and " : ", ", ks[k].idx);
    char tags[512];
    tags_text(sm->meta_graphs[ks[i].idx], tags, sizeof tags);
    if (j - i > 8)
      fault(r, "%zu MetaGraphs (%s, ...) have the same tag set (%s): a load cannot choose between them", j - i, list,
            tags);
    else
      fault(r, "MetaGraphs %s have the same tag set (%s): a load cannot choose between them", list, tags);
  }
  for (size_t i = 0; i < n; i++) free(ks[i].key);
  free(ks);
}

static void tags_text(const Tensorflow__MetaGraphDef *mg, char *buf, size_t cap) {
  size_t k = (size_t)snprintf(buf, cap, "MetaGraph [");
  size_t n = mg->meta_info_def ? mg->meta_info_def->n_tags : 0;
  for (size_t i = 0; i < n && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, "%s'%s'", i ? ", " : "",
                          mg->meta_info_def->tags[i] ? mg->meta_info_def->tags[i] : "");
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* ---- plans: what sm_model_load runs, prepared only ------------------------------------------- */
static const Tensorflow__CollectionDef *collection(const Tensorflow__MetaGraphDef *mg, const char *key) {
  for (size_t i = 0; i < mg->n_collection_def; i++)
    if (mg->collection_def[i] && mg->collection_def[i]->key && !strcmp(mg->collection_def[i]->key, key))
      return mg->collection_def[i]->value;
  return NULL;
}

static const char *info_name(const Tensorflow__TensorInfo *ti) {
  return ti && ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME ? ti->name : NULL;
}

typedef struct names {
  const char **v;
  int n, cap;
} names;

static int names_push(names *ns, const char *s) {
  if (ns->n == ns->cap) {
    int nc = ns->cap ? ns->cap * 2 : 8;
    const char **nv = realloc(ns->v, (size_t)nc * sizeof *nv);
    if (!nv) return -1;
    ns->v = nv;
    ns->cap = nc;
  }
  ns->v[ns->n++] = s;
  return 0;
}

/* The asset tensors (asset_file_def, else the saved_model_assets collection), with each file name
 * checked. unpacked collects messages to free. */
static void check_assets(report *r, const char *dir, const Tensorflow__MetaGraphDef *mg, names *feeds,
                         ProtobufCMessage ***unpacked, size_t *nunpacked) {
  const Tensorflow__AssetFileDef **defs = NULL;
  size_t n = 0;
  const Tensorflow__CollectionDef *c = NULL;
  if (mg->n_asset_file_def) {
    defs = (const Tensorflow__AssetFileDef **)mg->asset_file_def;
    n = mg->n_asset_file_def;
  } else if ((c = collection(mg, SM_ASSETS_KEY))) {
    if (c->kind_case != TENSORFLOW__COLLECTION_DEF__KIND_ANY_LIST || !c->any_list) {
      fault(r, "collection '%s' is not an any_list", SM_ASSETS_KEY);
      return;
    }
    n = c->any_list->n_value;
    *unpacked = calloc(n + 1, sizeof **unpacked);
    if (!*unpacked) {
      fault(r, "out of memory");
      return;
    }
    for (size_t i = 0; i < n; i++) {
      const Google__Protobuf__Any *any = c->any_list->value[i];
      if (!any) continue;
      ProtobufCMessage *m = NULL;
      if (fault_st(r, sm_pb_parse(&tensorflow__asset_file_def__descriptor, any->value.data, any->value.len,
                                  "collection saved_model_assets", &m),
                   NULL))
        continue;
      (*unpacked)[(*nunpacked)++] = m;
    }
    defs = (const Tensorflow__AssetFileDef **)*unpacked;
    n = *nunpacked;
  }
  for (size_t i = 0; i < n; i++) {
    const Tensorflow__AssetFileDef *a = defs[i];
    const char *tn = a ? info_name(a->tensor_info) : NULL;
    if (!tn || !*tn) {
      fault(r, "asset %zu names no tensor to feed", i);
      continue;
    }
    if (names_push(feeds, tn)) fault(r, "out of memory");
    const char *fn = a->filename ? a->filename : "";
    if (!*fn) {
      fault(r, "asset %zu ('%s') has an empty file name", i, tn);
      continue;
    }
    if (fault_st(r, sm__verify_asset_name(dir, fn), NULL)) continue;
    size_t plen = strlen(dir) + strlen(fn) + 16;
    char *path = malloc(plen);
    if (!path) {
      fault(r, "out of memory");
      continue;
    }
    snprintf(path, plen, "%s/%s/%s", dir, SM_ASSETS_DIRECTORY, fn);
    /* TF feeds the path either way, and real exports lack some (the tf-serving *_saved_model_config
     * models): only a graph that reads the file would fail */
    if (!sm__path_exists(path)) warn(r, "asset '%s': %s does not exist", fn, path);
    free(path);
  }
}

/* Every op that reads a file, with its path when the graph gives it: a note each; one outside the
 * export is a fault (a load refuses it) unless --allow_external_files. */
static void check_file_ops(report *r, const char *dir, const Tensorflow__MetaGraphDef *mg) {
  sm_file_op *ops = NULL;
  size_t n = 0;
  if (fault_st(r, sm__file_ops(dir, mg, &ops, &n), NULL)) return;
  for (size_t i = 0; i < n; i++) {
    const sm_file_op *f = &ops[i];
    char where[600];
    if (f->function) snprintf(where, sizeof where, "node '%s' (%s) in function '%s'", f->node, f->op, f->function);
    else snprintf(where, sizeof where, "node '%s' (%s)", f->node, f->op);
    if (!f->path) {
      note(r, "%s reads a file whose path is computed when it runs", where);
      continue;
    }
    note(r, "%s reads %s (%s)", where, f->path, f->source);
    if (f->inside != 0 || !strcmp(f->source, "asset")) continue; /* an asset out: check_assets said so */
    sm_status *s = sm__verify_path_confined(dir, f->path, NULL);
    const char *why = s ? sm_status_message(s) : "outside the export directory";
    if (r->allow_external) warn(r, "%s: %s", where, why);
    else fault(r, "%s: %s", where, why);
    sm_status_free(s);
  }
  sm__file_ops_free(ops, n);
}

/* The init op as sm_model_load finds it (signature __saved_model_init_op, then the main op and
 * legacy init op collections); NULL when there is none. */
static const char *find_init_op(report *r, const Tensorflow__MetaGraphDef *mg) {
  for (size_t i = 0; i < mg->n_signature_def; i++) {
    const Tensorflow__MetaGraphDef__SignatureDefEntry *e = mg->signature_def[i];
    if (!e || !e->key || strcmp(e->key, SM_INIT_OP_SIGNATURE_KEY) || !e->value) continue;
    for (size_t k = 0; k < e->value->n_outputs; k++) {
      const Tensorflow__SignatureDef__OutputsEntry *o = e->value->outputs[k];
      if (o && o->key && !strcmp(o->key, SM_INIT_OP_SIGNATURE_KEY) && info_name(o->value)) return o->value->name;
    }
    fault(r, "signature %s has no output %s", SM_INIT_OP_SIGNATURE_KEY, SM_INIT_OP_SIGNATURE_KEY);
    return NULL;
  }
  const char *keys[] = {SM_MAIN_OP_KEY, SM_LEGACY_INIT_OP_KEY};
  for (int k = 0; k < 2; k++) {
    const Tensorflow__CollectionDef *c = collection(mg, keys[k]);
    if (!c) continue;
    if (c->kind_case != TENSORFLOW__COLLECTION_DEF__KIND_NODE_LIST || !c->node_list || c->node_list->n_value != 1 ||
        !c->node_list->value[0]) {
      fault(r, "collection '%s' must hold exactly one node name", keys[k]);
      return NULL;
    }
    return c->node_list->value[0];
  }
  return NULL;
}

/* The messages of plans that found ops without a kernel (load or signature), so that the note on
 * ops nothing runs leaves out the ops they name. */
typedef struct missing_list {
  char **v;
  int n, cap;
} missing_list;

static void missing_add(report *r, missing_list *ms, const char *msg) {
  if (ms->n == ms->cap) {
    int nc = ms->cap ? ms->cap * 2 : 8;
    char **nv = realloc(ms->v, (size_t)nc * sizeof *nv);
    if (!nv) {
      fault(r, "out of memory");
      return;
    }
    ms->v = nv;
    ms->cap = nc;
  }
  if (!(ms->v[ms->n] = strdup(msg))) {
    fault(r, "out of memory");
    return;
  }
  ms->n++;
}

static void missing_free(missing_list *ms) {
  for (int i = 0; i < ms->n; i++) free(ms->v[i]);
  free(ms->v);
}

/* Does a "no kernel" message (plan.c: "...: Op (node 'n'); Op2 [parsed ...] (nodes ...)") name op? */
static int missing_names(const missing_list *ms, const char *op) {
  size_t n = strlen(op);
  for (int i = 0; i < ms->n; i++)
    for (const char *p = strstr(ms->v[i], op); p; p = strstr(p + 1, op))
      if (p > ms->v[i] && p[-1] == ' ' && (!strncmp(p + n, " (", 2) || !strncmp(p + n, " [", 2))) return 1;
  return 0;
}

/* A load plan (restore, init): any failure is a fault; kernels it lacks are remembered. */
static int load_plan(report *r, missing_list *ms, sm_status *st, const char *ctx) {
  if (st && sm_status_code(st) == SM_UNIMPLEMENTED) missing_add(r, ms, sm_status_message(st));
  return fault_st(r, st, ctx);
}

/* Signatures: a signature whose plan finds ops without a kernel is a warning, as sm_model_load
 * makes it (the model loads, running that signature fails), unless no signature can run: then the
 * load fails, and each is a fault. */
static void check_signatures(report *r, sm_session *s, const Tensorflow__MetaGraphDef *mg, int *nsigs, missing_list *ms) {
  const sm_cgraph *g = sm__session_graph(s);
  int nrunnable = 0, first = ms->n;
  for (size_t i = 0; i < mg->n_signature_def; i++) {
    const Tensorflow__MetaGraphDef__SignatureDefEntry *e = mg->signature_def[i];
    if (!e || !e->key) {
      fault(r, "signature %zu has no key", i);
      continue;
    }
    if (!strcmp(e->key, SM_INIT_OP_SIGNATURE_KEY)) continue;
    for (size_t j = 0; j < i; j++)
      if (mg->signature_def[j] && mg->signature_def[j]->key && !strcmp(mg->signature_def[j]->key, e->key))
        fault(r, "signature '%s' appears twice", e->key);
    (*nsigs)++;
    const Tensorflow__SignatureDef *sd = e->value;
    if (!sd) continue;
    names in = {0}, out = {0};
    int composite = 0;
    for (int side = 0; side < 2; side++) {
      size_t n = side ? sd->n_outputs : sd->n_inputs;
      for (size_t k = 0; k < n; k++) {
        const char *alias = side ? (sd->outputs[k] ? sd->outputs[k]->key : NULL) : (sd->inputs[k] ? sd->inputs[k]->key : NULL);
        const Tensorflow__TensorInfo *ti = side ? (sd->outputs[k] ? sd->outputs[k]->value : NULL)
                                                : (sd->inputs[k] ? sd->inputs[k]->value : NULL);
        const char *what = side ? "output" : "input";
        alias = alias ? alias : "";
        for (size_t j = 0; j < k; j++) {
          const char *other = side ? (sd->outputs[j] ? sd->outputs[j]->key : NULL) : (sd->inputs[j] ? sd->inputs[j]->key : NULL);
          if (other && !strcmp(other, alias)) fault(r, "signature '%s': %s alias '%s' appears twice", e->key, what, alias);
        }
        if (!ti) continue;
        const char *nm = info_name(ti);
        if (!nm) {
          composite = 1;
          warn(r, "signature '%s': %s '%s' is a sparse or composite tensor, which this runtime does not run", e->key,
               what, alias);
          continue;
        }
        if (names_push(side ? &out : &in, nm)) fault(r, "out of memory");
        sm_edge ed;
        int ctl = 0;
        sm_status *st = sm__cgraph_resolve(g, nm, &ed, &ctl);
        if (st) {
          char ctx[512];
          snprintf(ctx, sizeof ctx, "signature '%s' %s '%s'", e->key, what, alias);
          fault_st(r, st, ctx);
          continue;
        }
        if (ctl) {
          fault(r, "signature '%s' %s '%s': '%s' names a control input, not a tensor", e->key, what, alias, nm);
          continue;
        }
        int gd = sm_dtype_base(sm__node_output_dtype(sm__cgraph_node(g, ed.node), ed.index));
        int sdt = sm_dtype_base((int)ti->dtype);
        if (ti->dtype == 0)
          warn(r, "signature '%s' %s '%s' declares no dtype (the graph says %s)", e->key, what, alias,
               sm_dtype_name(gd) ? sm_dtype_name(gd) : "?");
        else if (gd != sdt)
          /* TF's own exports have this (saved_model_half_plus_three's regress input), and TF loads
           * them trusting the graph, so it is a warning */
          warn(r, "signature '%s' %s '%s' declares %s but tensor '%s' is %s", e->key, what, alias,
               sm_dtype_name(sdt) ? sm_dtype_name(sdt) : "an unknown dtype", nm, sm_dtype_name(gd) ? sm_dtype_name(gd) : "?");
        if (ti->tensor_shape && !ti->tensor_shape->unknown_rank && ti->tensor_shape->n_dim > SM_MAX_RANK)
          fault(r, "signature '%s' %s '%s': rank %zu is more than %d", e->key, what, alias, ti->tensor_shape->n_dim,
                SM_MAX_RANK);
      }
    }
    if (!composite) {
      char ctx[512];
      snprintf(ctx, sizeof ctx, "signature '%s'", e->key);
      sm_status *st = sm__session_prepare(s, in.v, in.n, out.v, out.n, NULL, 0);
      if (st && sm_status_code(st) == SM_UNIMPLEMENTED) {
        st = sm_status_prefix(st, "%s", ctx);
        missing_add(r, ms, sm_status_message(st));
        sm_status_free(st);
      } else if (!fault_st(r, st, ctx)) {
        nrunnable++;
        char *placed = NULL;
        if (r->gpu && !fault_st(r, sm__session_placement(s, in.v, in.n, out.v, out.n, SM_BACKEND_CUDA, &placed), ctx))
          note(r, "%s on the GPU: %s", ctx, placed);
        free(placed);
      }
    }
    free(in.v);
    free(out.v);
  }
  for (int i = first; i < ms->n; i++) {
    if (nrunnable)
      warn(r, "%s (the model loads; running this signature fails)", ms->v[i]);
    else
      fault(r, "%s (no signature can run, so a load fails)", ms->v[i]);
  }
}

/* ---- variables --------------------------------------------------------------------------------- */
typedef struct span {
  int shard;
  uint64_t off, size;
  char key[96];
} span;

static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
  return x->off < y->off ? -1 : x->off > y->off;
}

/* The index file's footer padding (TF writes zeros after the two block handles) and every byte
 * of the data shards: each must belong to exactly one entry, so no damage goes unseen. */
static void check_bundle_layout(report *r, const char *prefix, int nshards) {
  size_t plen = strlen(prefix) + 64;
  char *path = malloc(plen);
  if (!path) return;
  snprintf(path, plen, "%s.index", prefix);
  uint8_t *buf = NULL;
  size_t n = 0;
  { /* a file that is not regular or cannot be read was reported by check_bundle */
    char *text = NULL;
    sm_status *s = sm__file_read_all(path, &text, &n);
    if (s) n = 0;
    sm_status_free(s);
    buf = (uint8_t *)text;
  }
  span *sp = NULL;
  size_t nsp = 0, cap = 0;
  if (buf && n >= 48) {
    const uint8_t *ft = buf + n - 48, *p = ft;
    uint64_t v;
    for (int i = 0; i < 4 && p; i++) p = sm__get_varint64(p, ft + 40, &v);
    for (; p && p < ft + 40; p++)
      if (*p) {
        fault(r, "%s: footer padding byte %zu is 0x%02x, not zero (damaged footer)", path, (size_t)(p - buf), *p);
        break;
      }
    sm_table *t = NULL;
    sm_table_iter *it = NULL;
    sm_status *s = sm__table_open(path, buf, n, &t);
    if (!s) s = sm__table_iter_new(t, &it);
    if (!s) s = sm__table_iter_first(it);
    while (!s && sm__table_iter_valid(it)) {
      size_t kl, vl;
      const uint8_t *k = sm__table_iter_key(it, &kl), *val = sm__table_iter_value(it, &vl);
      if (kl) {
        Tensorflow__BundleEntryProto *e = tensorflow__bundle_entry_proto__unpack(NULL, vl, val);
        if (e && e->n_slices == 0 && e->size > 0) {
          if (nsp == cap) {
            size_t nc = cap ? cap * 2 : 64;
            span *ns = realloc(sp, nc * sizeof *ns);
            if (!ns) {
              tensorflow__bundle_entry_proto__free_unpacked(e, NULL);
              break;
            }
            sp = ns;
            cap = nc;
          }
          span *x = &sp[nsp++];
          x->shard = e->shard_id;
          x->off = (uint64_t)e->offset;
          x->size = (uint64_t)e->size;
          size_t cl = kl < sizeof x->key - 1 ? kl : sizeof x->key - 1;
          for (size_t i = 0; i < cl; i++) x->key[i] = (k[i] >= 32 && k[i] < 127) ? (char)k[i] : '?';
          x->key[cl] = 0;
        }
        if (e) tensorflow__bundle_entry_proto__free_unpacked(e, NULL);
      }
      s = sm__table_iter_next(it);
    }
    sm_status_free(s); /* sm_bundle_open reported any damage already */
    sm__table_iter_free(it);
    sm__table_free(t);
  }
  qsort(sp, nsp, sizeof *sp, span_cmp);
  size_t j = 0;
  for (int sh = 0; sh < nshards; sh++) {
    snprintf(path, plen, "%s.data-%05d-of-%05d", prefix, sh, nshards);
    struct stat st;
    if (stat(path, &st) != 0) continue; /* the bundle reader said so already */
    uint64_t size = (uint64_t)st.st_size, at = 0;
    for (; j < nsp && sp[j].shard == sh; j++) {
      if (sp[j].off > at) {
        fault(r, "%s: bytes %llu..%llu belong to no tensor", path, (unsigned long long)at,
              (unsigned long long)sp[j].off);
      } else if (sp[j].off < at) {
        fault(r, "%s: tensor '%s' at offset %llu overlaps the tensor before it", path, sp[j].key,
              (unsigned long long)sp[j].off);
      }
      if (sp[j].off + sp[j].size > at) at = sp[j].off + sp[j].size;
    }
    if (at < size)
      fault(r, "%s: bytes %llu..%llu belong to no tensor (the file has %llu bytes)", path, (unsigned long long)at,
            (unsigned long long)size, (unsigned long long)size);
    /* entries past the end were reported by the reader */
  }
  free(sp);
  free(buf);
  free(path);
}

static void check_bundle(report *r, const char *prefix, int *ntensors) {
  sm_bundle *b = NULL;
  if (fault_st(r, sm_bundle_open(prefix, &b), NULL)) return;
  size_t n = sm_bundle_num_entries(b);
  for (size_t i = 0; i < n; i++) {
    sm_bundle_entry e;
    if (fault_st(r, sm_bundle_entry_at(b, i, &e), NULL)) continue;
    sm_tensor *t = NULL;
    if (!fault_st(r, sm_bundle_read_copy(b, e.key, &t), NULL)) (*ntensors)++;
    sm_tensor_free(t);
  }
  check_bundle_layout(r, prefix, sm_bundle_num_shards(b));
  sm_bundle_close(b);
}

/* ---- one MetaGraph -------------------------------------------------------------------------- */
static void validate_meta_graph(report *r, const char *dir, const Tensorflow__MetaGraphDef *mg, int *nsigs,
                                int *nvars) {
  if (!mg->graph_def) {
    fault(r, "the MetaGraph has no graph_def");
    return;
  }
  /* the load's budget, checked without materialising a constant */
  sm_session *s = NULL;
  if (fault_st(r, sm__session_new_budget(mg, dir, 1, &r->budget, &s), NULL)) return;
  const sm_cgraph *g = sm__session_graph(s);

  /* assets */
  missing_list ms = {0};
  names af = {0};
  ProtobufCMessage **unpacked = NULL;
  size_t nunpacked = 0;
  check_assets(r, dir, mg, &af, &unpacked, &nunpacked);
  check_file_ops(r, dir, mg);

  /* restore */
  char *prefix = sm__path_join(dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME);
  char *index = sm__path_join(dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME ".index");
  const Tensorflow__SaverDef *sv = mg->saver_def;
  int have_index = index && sm__path_exists(index);
  if (sv && sv->restore_op_name && *sv->restore_op_name && have_index) {
    names rf = {0};
    const char *fname = sv->filename_tensor_name ? sv->filename_tensor_name : "";
    names_push(&rf, fname);
    for (int i = 0; i < af.n; i++)
      if (strcmp(af.v[i], fname)) names_push(&rf, af.v[i]);
    const char *target = sv->restore_op_name;
    char ctx[512];
    snprintf(ctx, sizeof ctx, "restoring variables (op '%s')", target);
    if (!load_plan(r, &ms, sm__session_prepare(s, rf.v, rf.n, NULL, 0, &target, 1), ctx)) {
      sm_bundle *b = NULL;
      sm_status *st = sm_bundle_open(prefix, &b); /* damage is reported once, by check_bundle */
      if (!st) fault_st(r, sm__verify_restore(g, rf.v, rf.n, target, b, nvars), NULL);
      sm_status_free(st);
      sm_bundle_close(b);
    }
    free(rf.v);
  } else if (have_index && (!sv || !sv->restore_op_name || !*sv->restore_op_name)) {
    warn(r, "there is a variables bundle but no SaverDef restore op: a load leaves the variables unset unless the "
            "object graph restores them");
  }

  /* init op, or TF1 table initializers */
  const char *init = find_init_op(r, mg);
  if (init) {
    char ctx[512];
    snprintf(ctx, sizeof ctx, "init op '%s'", init);
    load_plan(r, &ms, sm__session_prepare(s, af.v, af.n, NULL, 0, &init, 1), ctx);
  } else {
    const Tensorflow__CollectionDef *c = collection(mg, "table_initializer");
    if (c && c->kind_case == TENSORFLOW__COLLECTION_DEF__KIND_NODE_LIST && c->node_list && c->node_list->n_value)
      load_plan(r, &ms,
                sm__session_prepare(s, af.v, af.n, NULL, 0, (const char *const *)c->node_list->value,
                                   (int)c->node_list->n_value),
                "table initializers");
  }

  check_signatures(r, s, mg, nsigs, &ms);

  /* ops that exist in the graph but that no load or signature runs: informational (those a plan
   * above reported missing are not repeated) */
  int nops = 0;
  const char *const *ops = sm__cgraph_all_ops(g, &nops);
  char *list = NULL;
  size_t listlen = 0;
  FILE *lf = open_memstream(&list, &listlen);
  for (int i = 0; lf && i < nops; i++) {
    if (!strcmp(ops[i], "Placeholder") || !strcmp(ops[i], "PlaceholderV2") ||
        !strcmp(ops[i], "StatefulPartitionedCall") || !strcmp(ops[i], "PartitionedCall") ||
        sm__kernel_find(ops[i], SM_BACKEND_CPU) || sm__cgraph_op_def(g, ops[i]) == NULL || missing_names(&ms, ops[i]))
      continue;
    fprintf(lf, " %s", ops[i]);
  }
  if (lf && fclose(lf) == 0 && listlen) note(r, "ops no load or signature runs, without a kernel here:%s", list);
  free(list);

  for (size_t i = 0; i < nunpacked; i++) protobuf_c_message_free_unpacked(unpacked[i], NULL);
  free(unpacked);
  missing_free(&ms);
  free(af.v);
  free(prefix);
  free(index);
  sm__session_free(s);
}

int sm__cli_validate(int argc, char **argv) {
  sm_flag flags[] = {
      {"dir", SM_FLAG_STRING, "Directory containing the SavedModel.", NULL, 0},
      {"tag_set", SM_FLAG_STRING, "Comma-separated tags of the one MetaGraphDef to check (default: all).", NULL, 0},
      {"json", SM_FLAG_BOOL, "Print one JSON document instead (schema above).", NULL, 0},
      {"max_graph_nodes", SM_FLAG_STRING, "The load budget's node limit (default: from the file sizes).", NULL, 0},
      {"max_load_bytes", SM_FLAG_STRING, "The load budget's byte limit, K/M/G suffixes (default: from the file sizes).",
       NULL, 0},
      {"allow_external_files", SM_FLAG_BOOL,
       "A file read from outside --dir (which a load refuses by default) is a warning, not a fault.", NULL, 0},
      {"device", SM_FLAG_STRING, "gpu: also note how each signature would be placed on the GPU (the nodes that "
                                 "fall back to the CPU, the copies); needs no GPU.", NULL, 0},
  };
  size_t nflags = sizeof flags / sizeof *flags;
  int rc = sm__cli_parse_flags(argc, argv, flags, nflags, usage);
  if (rc == -1) return 0;
  if (rc) return rc;
  const char *dir = flags[0].value, *tag_set = flags[1].value;
  if (!dir) return sm__cli_error(2, "validate: --dir is required");
  report r = {0};
  size_t mb = 0, mn = 0;
  if (flags[3].value && sm__cli_parse_bytes("validate", "max_graph_nodes", flags[3].value, &mn)) return 2;
  if (flags[4].value && sm__cli_parse_bytes("validate", "max_load_bytes", flags[4].value, &mb)) return 2;
  sm__load_budget_for(dir, (int64_t)mn, (int64_t)mb, &r.budget);
  r.budget.check_only = 1;
  r.allow_external = flags[5].on;
  int device;
  if (sm__cli_parse_device("validate", flags[6].value, &device)) return 2;
  r.gpu = device == SM_DEVICE_GPU;
  if (r.gpu) {
    sm_status *st = sm__device_plan_only(SM_BACKEND_CUDA);
    if (st) return sm__cli_fail(st);
  }
  char *items = NULL;
  size_t itemslen = 0;
  if (flags[2].on && !(r.json = open_memstream(&items, &itemslen))) return sm__cli_error(1, "out of memory");
  int nsigs = 0, nvars = 0, ntensors = 0, nmg = 0;
  Tensorflow__SavedModel *sm = NULL;
  if (!fault_st(&r, sm_saved_model_read(dir, &sm), NULL)) {
    if (sm->n_meta_graphs == 0) fault(&r, "%s: the SavedModel has no MetaGraph", dir);
    check_tag_sets(&r, sm);
    const Tensorflow__MetaGraphDef *only = NULL;
    if (tag_set) {
      char *copy = strdup(tag_set);
      const char *tags[64];
      size_t nt = 0;
      for (char *save = NULL, *t = copy ? strtok_r(copy, ",", &save) : NULL; t && nt < 64; t = strtok_r(NULL, ",", &save))
        tags[nt++] = t;
      sm_status *st = sm_saved_model_find_meta_graph(sm, tags, nt, &only);
      free(copy);
      if (fault_st(&r, st, NULL)) only = NULL, tag_set = "";
    }
    for (size_t i = 0; i < sm->n_meta_graphs; i++) {
      const Tensorflow__MetaGraphDef *mg = sm->meta_graphs[i];
      if (!mg || (tag_set && mg != only)) continue;
      char ctx[512];
      tags_text(mg, ctx, sizeof ctx);
      r.ctx = ctx;
      nmg++;
      validate_meta_graph(&r, dir, mg, &nsigs, &nvars);
      r.ctx = NULL;
    }
    /* the bundle is the export's, shared by every MetaGraph: its bytes are checked once */
    char *index = sm__path_join(dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME ".index");
    char *prefix = sm__path_join(dir, SM_VARIABLES_DIRECTORY "/" SM_VARIABLES_FILENAME);
    if (index && prefix && sm__path_exists(index)) check_bundle(&r, prefix, &ntensors);
    free(index);
    free(prefix);
  }
  sm_saved_model_free(sm);
  if (r.json) {
    int bad = fclose(r.json) != 0;
    fputs("{\"dir\": ", stdout);
    sm__json_str(stdout, dir, strlen(dir));
    printf(", \"sound\": %s, \"faults\": %d, \"warnings\": %d, \"meta_graphs\": %d, \"signatures\": %d,\n"
           " \"checkpoint_tensors\": %d, \"variables_checked\": %d,\n \"findings\": [%s%s}\n",
           r.faults ? "false" : "true", r.faults, r.warnings, nmg, nsigs, ntensors, nvars, bad ? "" : items,
           r.nitems && !bad ? "\n ]" : "]");
    free(items);
    fflush(stdout);
    return r.faults ? 1 : 0;
  }
  put_escaped(dir);
  if (r.faults)
    printf(": %d fault%s, %d warning%s\n", r.faults, r.faults == 1 ? "" : "s", r.warnings,
           r.warnings == 1 ? "" : "s");
  else
    printf(": sound (%d MetaGraph%s, %d signature%s, %d checkpoint tensors read, %d variables checked against "
           "the graph, %d warning%s)\n",
           nmg, nmg == 1 ? "" : "s", nsigs, nsigs == 1 ? "" : "s", ntensors, nvars, r.warnings,
           r.warnings == 1 ? "" : "s");
  fflush(stdout);
  return r.faults ? 1 : 0;
}

/* show_util.c - protobuf map entries in Python's order, and the set of ops a graph uses.
 *
 * ops_used_by_graph_def (tensorflow/python/framework/meta_graph.py): every node's op, and for
 * PartitionedCall / StatefulPartitionedCall also attr "f"; ops naming a library function pull in
 * that function's nodes, recursively; function names are then dropped from the set. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/show.h"

static int kv_cmp(const void *a, const void *b) {
  const sm_kv *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

size_t sm__kv_sort_unique(sm_kv *kv, size_t n) {
  if (n == 0) return 0;
  qsort(kv, n, sizeof *kv, kv_cmp);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k > 0 && strcmp(kv[k - 1].key, kv[i].key) == 0) kv[k - 1] = kv[i]; /* last one wins */
    else kv[k++] = kv[i];
  }
  return k;
}

#define COLLECT(entries, count, nout)                                   \
  do {                                                                  \
    *(nout) = 0;                                                        \
    if ((count) == 0) return NULL;                                      \
    sm_kv *kv = malloc((count) * sizeof *kv);                           \
    if (!kv) return NULL;                                               \
    for (size_t i = 0; i < (count); i++) {                              \
      kv[i].key = (entries)[i]->key ? (entries)[i]->key : "";           \
      kv[i].value = (entries)[i]->value;                                \
      kv[i].index = i;                                                  \
    }                                                                   \
    *(nout) = sm__kv_sort_unique(kv, (count));                           \
    return kv;                                                          \
  } while (0)

sm_kv *sm__signature_inputs(const Tensorflow__SignatureDef *s, size_t *n) {
  COLLECT(s->inputs, s->n_inputs, n);
}
sm_kv *sm__signature_outputs(const Tensorflow__SignatureDef *s, size_t *n) {
  COLLECT(s->outputs, s->n_outputs, n);
}
sm_kv *sm__meta_graph_signatures(const Tensorflow__MetaGraphDef *mg, size_t *n) {
  COLLECT(mg->signature_def, mg->n_signature_def, n);
}

/* ---- a string set (open addressing) ---- */
typedef struct strset {
  const char **slot;
  size_t cap, count;
} strset;

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* 1 if added, 0 if present, -1 out of memory. */
static int strset_add(strset *set, const char *s) {
  if (2 * (set->count + 1) > set->cap) {
    size_t cap = set->cap ? 2 * set->cap : 64;
    const char **slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < set->cap; i++) {
      if (!set->slot[i]) continue;
      size_t j = hash(set->slot[i]) & (cap - 1);
      while (slot[j]) j = (j + 1) & (cap - 1);
      slot[j] = set->slot[i];
    }
    free(set->slot);
    set->slot = slot;
    set->cap = cap;
  }
  size_t j = hash(s) & (set->cap - 1);
  for (; set->slot[j]; j = (j + 1) & (set->cap - 1))
    if (strcmp(set->slot[j], s) == 0) return 0;
  set->slot[j] = s;
  set->count++;
  return 1;
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Function name -> FunctionDef, the last definition winning as in the Python dict. */
static const Tensorflow__FunctionDef *find_function(const sm_kv *fns, size_t n, const char *name) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(fns[mid].key, name);
    if (c == 0) return fns[mid].value;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static const char *call_target(const Tensorflow__NodeDef *node) {
  const char *f = "";
  for (size_t i = 0; i < node->n_attr; i++) {
    const Tensorflow__NodeDef__AttrEntry *a = node->attr[i];
    if (!a->key || strcmp(a->key, "f") != 0) continue;
    f = "";
    if (a->value && a->value->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC && a->value->func &&
        a->value->func->name)
      f = a->value->func->name;
  }
  return f;
}

int sm__graph_ops_used(const Tensorflow__GraphDef *graph, const char ***names, size_t *n) {
  strset used = {0};
  sm_kv *fns = NULL;
  size_t nfns = 0;
  const Tensorflow__FunctionDef **stack = NULL;
  size_t depth = 0, cap = 0;
  int rc = -1;
  *names = NULL;
  *n = 0;
  if (!graph) return 0;

  const Tensorflow__FunctionDefLibrary *lib = graph->library;
  if (lib && lib->n_function) {
    fns = malloc(lib->n_function * sizeof *fns);
    if (!fns) goto out;
    for (size_t i = 0; i < lib->n_function; i++) {
      const Tensorflow__FunctionDef *fd = lib->function[i];
      if (!fd->signature || !fd->signature->name) continue;
      fns[nfns].key = fd->signature->name;
      fns[nfns].value = fd;
      fns[nfns].index = i;
      nfns++;
    }
    nfns = sm__kv_sort_unique(fns, nfns);
  }

  /* Iterative walk over the main graph, then over every function reached. */
  const Tensorflow__NodeDef *const *nodes = (const Tensorflow__NodeDef *const *)graph->node;
  size_t nnodes = graph->n_node;
  for (;;) {
    for (size_t i = 0; i < nnodes; i++) {
      const char *ops[2] = {nodes[i]->op ? nodes[i]->op : "", NULL};
      if (!strcmp(ops[0], "PartitionedCall") || !strcmp(ops[0], "StatefulPartitionedCall"))
        ops[1] = call_target(nodes[i]);
      for (int k = 0; k < 2 && ops[k]; k++) {
        int added = strset_add(&used, ops[k]);
        if (added < 0) goto out;
        const Tensorflow__FunctionDef *fd = added ? find_function(fns, nfns, ops[k]) : NULL;
        if (!fd) continue;
        if (depth == cap) {
          size_t ncap = cap ? 2 * cap : 16;
          const Tensorflow__FunctionDef **s = realloc(stack, ncap * sizeof *s);
          if (!s) goto out;
          stack = s;
          cap = ncap;
        }
        stack[depth++] = fd;
      }
    }
    if (depth == 0) break;
    const Tensorflow__FunctionDef *fd = stack[--depth];
    nodes = (const Tensorflow__NodeDef *const *)fd->node_def;
    nnodes = fd->n_node_def;
  }

  const char **list = malloc((used.count ? used.count : 1) * sizeof *list);
  if (!list) goto out;
  size_t k = 0;
  for (size_t i = 0; i < used.cap; i++)
    if (used.slot[i] && !find_function(fns, nfns, used.slot[i])) list[k++] = used.slot[i];
  qsort(list, k, sizeof *list, str_cmp);
  *names = list;
  *n = k;
  rc = 0;
out:
  free(used.slot);
  free(fns);
  free(stack);
  return rc;
}

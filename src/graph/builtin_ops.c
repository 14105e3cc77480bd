/* builtin_ops.c - lookup in the built-in OpDef table (op_defs.c), parsed once per process. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/op_defs.h"
#include "savedmodel/pbtxt.h"

static Tensorflow__OpList *g_ops;
static sm_smap g_map;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) {
  ProtobufCMessage *m = NULL;
  sm_status *s = sm_pbtxt_parse(&tensorflow__op_list__descriptor, sm_builtin_op_list_text,
                                strlen(sm_builtin_op_list_text), "built-in op table", &m);
  if (s) { /* a build defect, not a user error: report loudly once */
    fprintf(stderr, "libsavedmodel: %s\n", sm_status_message(s));
    sm_status_free(s);
    return;
  }
  g_ops = (Tensorflow__OpList *)m;
  for (size_t i = 0; i < g_ops->n_op; i++)
    if (sm_smap_get(&g_map, g_ops->op[i]->name) < 0 && !sm_smap_put(&g_map, g_ops->op[i]->name, (int)i)) {
      fprintf(stderr, "libsavedmodel: out of memory indexing the built-in op table\n");
      sm_smap_free(&g_map);
      g_ops = NULL; /* the parsed message stays: a one-off, process-lifetime table */
      return;
    }
}

const Tensorflow__OpDef *sm_builtin_op_def(const char *op_type) {
  pthread_once(&g_once, load);
  if (!g_ops || !op_type) return NULL;
  int i = sm_smap_get(&g_map, op_type);
  return i < 0 ? NULL : g_ops->op[i];
}

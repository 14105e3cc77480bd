/* tf_session.c - TensorFlow C API: TF_SessionOptions, TF_LoadSessionFromSavedModel,
 * TF_SessionRun, TF_CloseSession, TF_DeleteSession, on sm_model (savedmodel/model.h).
 *
 * The load reads the SavedModel once for the graph the caller inspects (tf_graph.c) and the
 * serialized MetaGraphDef it may ask for, and loads it with sm_model_load. A run names its
 * feeds and fetches "op:index" and its targets by op name, as TensorFlow's C API does for its
 * session, and goes through sm_model_session_run. The errors TensorFlow's own checks give before a
 * run (a missing export directory, no MetaGraph with the tag set, an output index past the op's
 * outputs, a feed of the wrong dtype, a closed session) have TensorFlow's codes and messages;
 * errors from the run itself are libsavedmodel's messages with TensorFlow's codes.
 * Session options (config, target) and run options / run metadata are accepted and ignored. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "compat/compat_internal.h"

struct TF_SessionOptions {
  int unused;
};

struct TF_Session {
  sm_model *model;
  TF_Graph *graph;
  int closed;
};

TF_SessionOptions *TF_NewSessionOptions(void) { return sm__calloc(sizeof(TF_SessionOptions)); }
void TF_DeleteSessionOptions(TF_SessionOptions *o) { sm__free(o); }
void TF_SetTarget(TF_SessionOptions *o, const char *target) {
  (void)o;
  (void)target;
}
void TF_SetConfig(TF_SessionOptions *o, const void *proto, size_t proto_len, TF_Status *s) {
  (void)o;
  (void)proto;
  (void)proto_len;
  sm__tf_ok(s);
}

/* TensorFlow's "{ a b }" for a tag set: each tag once, space-separated. */
static void tag_set_text(const char *const *tags, int ntags, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < ntags; i++) {
    int dup = 0;
    for (int j = 0; j < i && !dup; j++) dup = !strcmp(tags[i], tags[j]);
    if (dup) continue;
    int n = snprintf(buf + len, cap - len, "%s%s", len ? " " : "", tags[i]);
    if (n < 0 || (size_t)n >= cap - len) break;
    len += (size_t)n;
  }
}

static int fill_meta_graph_def(const Tensorflow__MetaGraphDef *mg, TF_Buffer *out, TF_Status *s) {
  if (out->data) {
    sm__tf_set(s, TF_INVALID_ARGUMENT, "Passing non-empty TF_Buffer is invalid.");
    return 0;
  }
  size_t len = protobuf_c_message_get_packed_size(&mg->base);
  uint8_t *buf = sm__alloc(len);
  if (!buf) {
    sm__tf_set(s, TF_RESOURCE_EXHAUSTED, "OOM when allocating a MetaGraphDef of %zu bytes", len);
    return 0;
  }
  protobuf_c_message_pack(&mg->base, buf);
  TF_Buffer *copy = TF_NewBufferFromString(buf, len);
  sm__free(buf);
  if (!copy) {
    sm__tf_set(s, TF_RESOURCE_EXHAUSTED, "OOM when allocating a MetaGraphDef of %zu bytes", len);
    return 0;
  }
  *out = *copy;
  copy->data_deallocator = NULL;
  TF_DeleteBuffer(copy);
  return 1;
}

TF_Session *TF_LoadSessionFromSavedModel(const TF_SessionOptions *opts, const TF_Buffer *run_options,
                                         const char *export_dir, const char *const *tags, int tags_len,
                                         TF_Graph *graph, TF_Buffer *meta_graph_def, TF_Status *s) {
  (void)opts;
  (void)run_options;
  if (!export_dir || !graph || tags_len < 0 || (tags_len && !tags)) {
    sm__tf_set(s, TF_INVALID_ARGUMENT, "TF_LoadSessionFromSavedModel: %s is NULL",
               !export_dir ? "export_dir" : !graph ? "graph" : "tags");
    return NULL;
  }
  if (graph->nops || graph->sm) {
    sm__tf_set(s, TF_INVALID_ARGUMENT, "Passing non-empty graph to TF_LoadSessionFromSavedModel");
    return NULL;
  }
  Tensorflow__SavedModel *sm;
  sm_status *e = sm_saved_model_read(export_dir, &sm);
  if (e && sm_status_code(e) == SM_NOT_FOUND) {
    sm_status_free(e);
    sm__tf_set(s, TF_NOT_FOUND,
               "Could not find SavedModel .pb or .pbtxt at supplied export directory path: %s. Check that the "
               "directory exists and that you have the right permissions for accessing it.",
               export_dir);
    return NULL;
  }
  if (sm__tf_from_sm(s, e)) return NULL;
  const Tensorflow__MetaGraphDef *mg;
  e = sm_saved_model_find_meta_graph(sm, tags, (size_t)tags_len, &mg);
  if (e) {
    sm_status_free(e);
    sm_saved_model_free(sm);
    char text[1024];
    tag_set_text(tags, tags_len, text, sizeof text);
    sm__tf_set(s, TF_NOT_FOUND,
               "Could not find meta graph def matching supplied tags: { %s }. To inspect available tag-sets in the "
               "SavedModel, please use the SavedModel CLI: `saved_model_cli`",
               text);
    return NULL;
  }
  TF_Session *sess = sm__calloc(sizeof *sess);
  if (!sess) {
    sm_saved_model_free(sm);
    sm__tf_set(s, TF_RESOURCE_EXHAUSTED, "OOM when allocating a session");
    return NULL;
  }
  e = sm__tf_graph_fill(graph, sm, mg); /* the graph owns sm from here on, also on failure */
  if (!e) e = sm_model_load(export_dir, tags, tags_len, NULL, &sess->model);
  if (sm__tf_from_sm(s, e) || (meta_graph_def && !fill_meta_graph_def(mg, meta_graph_def, s))) {
    sm_model_free(sess->model);
    sm__free(sess);
    return NULL; /* the graph keeps what it was filled with, as TensorFlow's does after a failed load */
  }
  sess->graph = graph;
  sm__tf_graph_attach(graph);
  sm__tf_ok(s);
  return sess;
}

void TF_CloseSession(TF_Session *sess, TF_Status *s) {
  if (sess) sess->closed = 1;
  sm__tf_ok(s);
}

void TF_DeleteSession(TF_Session *sess, TF_Status *s) {
  sm__tf_ok(s);
  if (!sess) return;
  sm_model_free(sess->model);
  sm__tf_graph_detach(sess->graph);
  sm__free(sess);
}

/* "op:index" for sm_model_session_run. */
static char *tensor_name(TF_Output o) {
  size_t n = strlen(o.oper->node->name) + 16;
  char *p = sm__alloc(n);
  if (p) snprintf(p, n, "%s:%d", o.oper->node->name, o.index);
  return p;
}

void TF_SessionRun(TF_Session *sess, const TF_Buffer *run_options, const TF_Output *inputs,
                   TF_Tensor *const *input_values, int ninputs, const TF_Output *outputs, TF_Tensor **output_values,
                   int noutputs, const TF_Operation *const *target_opers, int ntargets, TF_Buffer *run_metadata,
                   TF_Status *s) {
  (void)run_options;
  (void)run_metadata;
  for (int i = 0; output_values && i < noutputs; i++) output_values[i] = NULL;
  if (!sess || ninputs < 0 || noutputs < 0 || ntargets < 0 || (ninputs && (!inputs || !input_values)) ||
      (noutputs && (!outputs || !output_values)) || (ntargets && !target_opers)) {
    sm__tf_set(s, TF_INVALID_ARGUMENT, "TF_SessionRun: %s", !sess ? "session is NULL" : "bad arguments");
    return;
  }
  if (sess->closed) {
    sm__tf_set(s, TF_CANCELLED, "Session has been closed.");
    return;
  }
  for (int i = 0; i < ninputs; i++) {
    if (!sm__tf_check_output(inputs[i], s)) return;
    if (!input_values[i]) {
      sm__tf_set(s, TF_INVALID_ARGUMENT, "input_values[%d] is NULL", i);
      return;
    }
    int want = sm_dtype_base((int)TF_OperationOutputType(inputs[i]));
    int got = (int)TF_TensorType(input_values[i]);
    if (want && want != got) {
      char a[64], b[64];
      sm__tf_set(s, TF_INVALID_ARGUMENT, "Expects arg[%d] to be %s but %s is provided", i,
                 sm__tf_type_name(want, a, sizeof a), sm__tf_type_name(got, b, sizeof b));
      return;
    }
  }
  for (int i = 0; i < noutputs; i++) {
    if (!sm__tf_check_output(outputs[i], s)) return;
    for (int j = 0; j < ninputs; j++)
      if (inputs[j].oper == outputs[i].oper && inputs[j].index == outputs[i].index) {
        sm__tf_set(s, TF_INVALID_ARGUMENT, "%s:%d is both fed and fetched.", outputs[i].oper->node->name,
                   outputs[i].index);
        return;
      }
  }
  for (int i = 0; i < ntargets; i++)
    if (!target_opers[i]) {
      sm__tf_set(s, TF_INVALID_ARGUMENT, "target_opers[%d] is NULL", i);
      return;
    }

  /* One block for the names and tensors handed to the model. */
  int nall = ninputs + noutputs + ntargets;
  char **names = sm__calloc(sizeof(char *) * (size_t)(nall ? nall : 1));
  sm_tensor **feeds = sm__calloc(sizeof(sm_tensor *) * (size_t)(ninputs + noutputs + 1));
  sm_status *e = NULL;
  if (!names || !feeds) e = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a run's arguments");
  for (int i = 0; !e && i < ninputs; i++) {
    names[i] = tensor_name(inputs[i]);
    if (!names[i]) e = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a run's arguments");
    else e = sm_status_prefix(sm__tf_to_sm(input_values[i], &feeds[i]), "feeding %s", names[i]);
  }
  for (int i = 0; !e && i < noutputs; i++)
    if (!(names[ninputs + i] = tensor_name(outputs[i])))
      e = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a run's arguments");
  for (int i = 0; !e && i < ntargets; i++) names[ninputs + noutputs + i] = (char *)target_opers[i]->node->name;
  sm_tensor **outs = feeds ? feeds + ninputs : NULL;
  if (!e)
    e = sm_model_session_run(sess->model, (const char *const *)names, feeds, ninputs,
                             (const char *const *)names + ninputs, noutputs,
                             (const char *const *)names + ninputs + noutputs, ntargets, outs);
  for (int i = 0; !e && i < noutputs; i++) {
    sm_tensor *t = outs[i];
    outs[i] = NULL;
    e = sm__tf_from_sm_tensor(t, &output_values[i]);
  }
  if (e) {
    for (int i = 0; i < noutputs; i++) {
      TF_DeleteTensor(output_values[i]);
      output_values[i] = NULL;
      if (outs) sm_tensor_free(outs[i]);
    }
  }
  for (int i = 0; names && i < ninputs + noutputs; i++) sm__free(names[i]);
  for (int i = 0; feeds && i < ninputs; i++) sm_tensor_free(feeds[i]);
  sm__free(names);
  sm__free(feeds);
  sm__tf_from_sm(s, e);
}

/* signature.c - SignatureDefs as signature_def_utils builds them, and TensorFlow's per-method
 * validity rules (signature_def_utils_impl.is_valid_signature). */
#include <stdlib.h>
#include <string.h>

#include "builder/builder_internal.h"
#include "savedmodel/builder.h"
#include "savedmodel/constants.h"

struct sm_signature {
  char *key;
  Tensorflow__SignatureDef *def;
};

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

sm_status *sm_signature_new(const char *key, const char *method, sm_signature **out) {
  *out = NULL;
  if (!key || !*key) return sm_status_new(SM_INVALID_ARGUMENT, "signature without a key");
  if (!method || !*method) return sm_status_new(SM_INVALID_ARGUMENT, "signature \"%s\": empty method name", key);
  sm_signature *s = calloc(1, sizeof *s);
  if (!s) return oom();
  s->key = sm__b_strdup(key);
  s->def = malloc(sizeof *s->def);
  if (s->def) {
    tensorflow__signature_def__init(s->def);
    s->def->method_name = sm__b_strdup(method);
  }
  if (!s->key || !s->def || !s->def->method_name) {
    sm_signature_free(s);
    return oom();
  }
  *out = s;
  return NULL;
}

void sm_signature_free(sm_signature *s) {
  if (!s) return;
  free(s->key);
  if (s->def) protobuf_c_message_free_unpacked(&s->def->base, NULL);
  free(s);
}

const Tensorflow__SignatureDef *sm_signature_def(const sm_signature *s) { return s->def; }
const char *sm_signature_key(const sm_signature *s) { return s->key; }

static sm_status *add(sm_signature *s, int output, const char *key, const char *tensor, int dtype, int rank,
                      const int64_t *dims) {
  if (!key || !*key || !tensor || !*tensor)
    return sm_status_new(SM_INVALID_ARGUMENT, "signature \"%s\": %s needs a key and a tensor name", s->key,
                         output ? "output" : "input");
  if (!sm_dtype_name(dtype))
    return sm_status_new(SM_INVALID_ARGUMENT, "signature \"%s\": %s \"%s\" has unknown dtype %d", s->key,
                         output ? "output" : "input", key, dtype);
  /* Map keys are unique: a second add under the same key is a mistake, not an overwrite. */
  size_t n = output ? s->def->n_outputs : s->def->n_inputs;
  for (size_t i = 0; i < n; i++) {
    const char *k = output ? s->def->outputs[i]->key : s->def->inputs[i]->key;
    if (!strcmp(k, key))
      return sm_status_new(SM_ALREADY_EXISTS, "signature \"%s\": %s key \"%s\" given twice", s->key,
                           output ? "output" : "input", key);
  }
  Tensorflow__TensorInfo *ti = malloc(sizeof *ti);
  if (!ti) return oom();
  tensorflow__tensor_info__init(ti);
  ti->encoding_case = TENSORFLOW__TENSOR_INFO__ENCODING_NAME;
  ti->name = sm__b_tensor_name(tensor);
  ti->dtype = (Tensorflow__DataType)dtype;
  ti->tensor_shape = sm__b_shape(rank, dims);
  if (!ti->name || !ti->tensor_shape) {
    protobuf_c_message_free_unpacked(&ti->base, NULL);
    return oom();
  }
  int ok;
  if (output) {
    Tensorflow__SignatureDef__OutputsEntry *e = malloc(sizeof *e);
    if (e) {
      tensorflow__signature_def__outputs_entry__init(e);
      e->value = ti;
      e->key = sm__b_strdup(key);
    }
    ok = e && e->key && sm__b_push(&s->def->outputs, &s->def->n_outputs, e);
    if (!ok) {
      if (e) protobuf_c_message_free_unpacked(&e->base, NULL);
      else protobuf_c_message_free_unpacked(&ti->base, NULL);
    }
  } else {
    Tensorflow__SignatureDef__InputsEntry *e = malloc(sizeof *e);
    if (e) {
      tensorflow__signature_def__inputs_entry__init(e);
      e->value = ti;
      e->key = sm__b_strdup(key);
    }
    ok = e && e->key && sm__b_push(&s->def->inputs, &s->def->n_inputs, e);
    if (!ok) {
      if (e) protobuf_c_message_free_unpacked(&e->base, NULL);
      else protobuf_c_message_free_unpacked(&ti->base, NULL);
    }
  }
  return ok ? NULL : oom();
}

sm_status *sm_signature_add_input(sm_signature *s, const char *key, const char *tensor, int dtype, int rank,
                                  const int64_t *dims) {
  return add(s, 0, key, tensor, dtype, rank, dims);
}
sm_status *sm_signature_add_output(sm_signature *s, const char *key, const char *tensor, int dtype, int rank,
                                   const int64_t *dims) {
  return add(s, 1, key, tensor, dtype, rank, dims);
}

static sm_status *add_from(sm_signature *s, int output, const char *key, const sm_graph *g, const char *tensor) {
  int dt, rank;
  const int64_t *dims;
  sm_status *st = sm_graph_tensor(g, tensor ? tensor : "", &dt, &rank, &dims);
  if (st) return sm_status_prefix(st, "signature \"%s\" %s \"%s\"", s->key, output ? "output" : "input", key);
  return add(s, output, key, tensor, dt, rank, dims);
}
sm_status *sm_signature_add_input_from(sm_signature *s, const char *key, const sm_graph *g, const char *tensor) {
  return add_from(s, 0, key, g, tensor);
}
sm_status *sm_signature_add_output_from(sm_signature *s, const char *key, const sm_graph *g, const char *tensor) {
  return add_from(s, 1, key, g, tensor);
}

sm_status *sm_signature_predict(const char *key, const sm_graph *g, const char *in_key, const char *in_tensor,
                                const char *out_key, const char *out_tensor, sm_signature **out) {
  sm_status *s = sm_signature_new(key, SM_PREDICT_METHOD_NAME, out);
  if (!s) s = sm_signature_add_input_from(*out, in_key, g, in_tensor);
  if (!s) s = sm_signature_add_output_from(*out, out_key, g, out_tensor);
  if (s) {
    sm_signature_free(*out);
    *out = NULL;
  }
  return s;
}

sm_status *sm_signature_classify(const char *key, const sm_graph *g, const char *examples, const char *classes,
                                 const char *scores, sm_signature **out) {
  if (!classes && !scores)
    return sm_status_new(SM_INVALID_ARGUMENT, "classify signature \"%s\" needs classes and/or scores", key ? key : "");
  sm_status *s = sm_signature_new(key, SM_CLASSIFY_METHOD_NAME, out);
  if (!s) s = sm_signature_add_input_from(*out, SM_CLASSIFY_INPUTS, g, examples);
  if (!s && classes) s = sm_signature_add_output_from(*out, SM_CLASSIFY_OUTPUT_CLASSES, g, classes);
  if (!s && scores) s = sm_signature_add_output_from(*out, SM_CLASSIFY_OUTPUT_SCORES, g, scores);
  if (!s) s = sm_signature_validate(*out, g);
  if (s) {
    sm_signature_free(*out);
    *out = NULL;
  }
  return s;
}

sm_status *sm_signature_regress(const char *key, const sm_graph *g, const char *examples, const char *outputs,
                                sm_signature **out) {
  sm_status *s = sm_signature_new(key, SM_REGRESS_METHOD_NAME, out);
  if (!s) s = sm_signature_add_input_from(*out, SM_REGRESS_INPUTS, g, examples);
  if (!s) s = sm_signature_add_output_from(*out, SM_REGRESS_OUTPUTS, g, outputs);
  if (!s) s = sm_signature_validate(*out, g);
  if (s) {
    sm_signature_free(*out);
    *out = NULL;
  }
  return s;
}

static const Tensorflow__TensorInfo *find(Tensorflow__SignatureDef__InputsEntry **e, size_t n, const char *k) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(e[i]->key, k)) return e[i]->value;
  return NULL;
}

sm_status *sm_signature_validate(const sm_signature *s, const sm_graph *g) {
  const Tensorflow__SignatureDef *d = s->def;
  const char *m = d->method_name;
  const char *k = s->key;
  /* Inputs and outputs entries have the same layout; find() reads both. */
  Tensorflow__SignatureDef__InputsEntry **outs = (Tensorflow__SignatureDef__InputsEntry **)d->outputs;
  if (!strcmp(m, SM_PREDICT_METHOD_NAME)) {
    if (!d->n_inputs || !d->n_outputs)
      return sm_status_new(SM_INVALID_ARGUMENT, "predict signature \"%s\" needs at least one input and one output", k);
  } else if (!strcmp(m, SM_CLASSIFY_METHOD_NAME)) {
    const Tensorflow__TensorInfo *in = find(d->inputs, d->n_inputs, SM_CLASSIFY_INPUTS);
    if (d->n_inputs != 1 || !in || in->dtype != TENSORFLOW__DATA_TYPE__DT_STRING)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "classify signature \"%s\" needs exactly one input \"inputs\" of dtype DT_STRING", k);
    if (!d->n_outputs)
      return sm_status_new(SM_INVALID_ARGUMENT, "classify signature \"%s\" needs output \"classes\" and/or \"scores\"", k);
    for (size_t i = 0; i < d->n_outputs; i++) {
      const char *ok = d->outputs[i]->key;
      int dt = d->outputs[i]->value->dtype;
      if (!strcmp(ok, SM_CLASSIFY_OUTPUT_CLASSES)) {
        if (dt != SM_STRING)
          return sm_status_new(SM_INVALID_ARGUMENT, "classify signature \"%s\": output \"classes\" must be DT_STRING", k);
      } else if (!strcmp(ok, SM_CLASSIFY_OUTPUT_SCORES)) {
        if (dt != SM_FLOAT)
          return sm_status_new(SM_INVALID_ARGUMENT, "classify signature \"%s\": output \"scores\" must be DT_FLOAT", k);
      } else {
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "classify signature \"%s\": output \"%s\" is not \"classes\" or \"scores\"", k, ok);
      }
    }
  } else if (!strcmp(m, SM_REGRESS_METHOD_NAME)) {
    const Tensorflow__TensorInfo *in = find(d->inputs, d->n_inputs, SM_REGRESS_INPUTS);
    if (d->n_inputs != 1 || !in || in->dtype != TENSORFLOW__DATA_TYPE__DT_STRING)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "regress signature \"%s\" needs exactly one input \"inputs\" of dtype DT_STRING", k);
    const Tensorflow__TensorInfo *o = find(outs, d->n_outputs, SM_REGRESS_OUTPUTS);
    if (d->n_outputs != 1 || !o || o->dtype != TENSORFLOW__DATA_TYPE__DT_FLOAT)
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "regress signature \"%s\" needs exactly one output \"outputs\" of dtype DT_FLOAT", k);
  } else if (!d->n_inputs && !d->n_outputs) {
    return sm_status_new(SM_INVALID_ARGUMENT, "signature \"%s\" has no inputs and no outputs", k);
  }
  if (!g) return NULL;
  for (int o = 0; o < 2; o++) {
    size_t n = o ? d->n_outputs : d->n_inputs;
    for (size_t i = 0; i < n; i++) {
      const char *key = o ? d->outputs[i]->key : d->inputs[i]->key;
      const Tensorflow__TensorInfo *ti = o ? d->outputs[i]->value : d->inputs[i]->value;
      if (ti->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME) continue;
      int dt;
      sm_status *st = sm_graph_tensor(g, ti->name, &dt, NULL, NULL);
      if (st)
        return sm_status_prefix(st, "signature \"%s\" %s \"%s\"", k, o ? "output" : "input", key);
      if (sm_dtype_base(dt) != (int)ti->dtype)
        return sm_status_new(SM_INVALID_ARGUMENT, "signature \"%s\" %s \"%s\": tensor \"%s\" is %s, the signature says %s",
                             k, o ? "output" : "input", key, ti->name, sm_dtype_name(dt) ? sm_dtype_name(dt) : "?",
                             sm_dtype_name(ti->dtype) ? sm_dtype_name(ti->dtype) : "?");
    }
  }
  return NULL;
}

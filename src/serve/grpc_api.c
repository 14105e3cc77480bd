/* grpc_api.c - TF Serving's PredictionService and ModelService over protobuf bytes (grpc_api.h):
 * request decoding (sm_pb_parse: malformed, truncated or oversized input is refused before
 * protobuf-c unpacks it), the checks and messages of TF Serving's servable-side code, and the
 * response encoding. Numeric output tensors go out as tensor_content pointing at the tensor's own
 * bytes (packed once, no intermediate copy); strings as string_val. Predict's answer of numeric
 * tensors is written directly (sm__grpc_pack_predict_response: protobuf-c's bytes, without its
 * descriptor walks); other answers are packed by protobuf-c.
 *
 * Response messages (and Predict's per-request arrays) are built from pieces cut from a `pool`
 * (format/pb_arena.c's bump allocator) and freed together after packing. */
#include "serve/grpc_api.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/pb_arena.h"
#include "format/pb_decode.h"
#include "graph/graph.h"
#include "savedmodel/format.h"
#include "savedmodel/model.h"
#include "serving_classification.pb-c.h"
#include "serving_get_model_metadata.pb-c.h"
#include "serving_get_model_status.pb-c.h"
#include "serving_inference.pb-c.h"
#include "serving_model_management.pb-c.h"
#include "serving_predict.pb-c.h"
#include "serving_regression.pb-c.h"

#define CLASSIFY_METHOD "tensorflow/serving/classify"
#define REGRESS_METHOD "tensorflow/serving/regress"
#define SIGNATURE_DEF_MAP_URL "type.googleapis.com/tensorflow.serving.SignatureDefMap"

int sm__grpc_code(sm_code c) {
  switch (c) {
    case SM_OK: return SM_GRPC_OK;
    case SM_INVALID_ARGUMENT: return SM_GRPC_INVALID_ARGUMENT;
    case SM_NOT_FOUND: return SM_GRPC_NOT_FOUND;
    case SM_DATA_LOSS: return SM_GRPC_DATA_LOSS;
    case SM_UNIMPLEMENTED: return SM_GRPC_UNIMPLEMENTED;
    case SM_NO_MEMORY: return SM_GRPC_RESOURCE_EXHAUSTED;
    case SM_ALREADY_EXISTS: return SM_GRPC_ALREADY_EXISTS;
    case SM_OUT_OF_RANGE: return SM_GRPC_OUT_OF_RANGE;
    case SM_FAILED_PRECONDITION: return SM_GRPC_FAILED_PRECONDITION;
    case SM_INTERNAL: return SM_GRPC_INTERNAL;
    case SM_UNAVAILABLE: return SM_GRPC_UNAVAILABLE;
    case SM_DEADLINE_EXCEEDED: return SM_GRPC_DEADLINE_EXCEEDED;
    case SM_CANCELLED: return SM_GRPC_CANCELLED;
    case SM_RESOURCE_EXHAUSTED: return SM_GRPC_RESOURCE_EXHAUSTED;
    default: return SM_GRPC_UNKNOWN; /* SM_IO */
  }
}

static sm_status *inval(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static sm_status *inval(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sm_status *s = sm_status_newv(SM_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return s;
}

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

/* ---- pool: the pieces of one response ---- */

/* Pieces come zeroed from format/pb_arena.c's bump allocator (the one decoded requests use: a
 * few large blocks, recycled process-wide), all freed together by pool_free. The arena's root is a
 * small sentinel, so the first piece may be of any size. */
typedef struct pool {
  sm_pb_arena *a;
  void *root;
} pool;

static void *palloc(pool *p, size_t size) {
  if (size > SIZE_MAX / 2) return NULL;
  if (!size) size = 1;
  if (!p->a && !(p->a = sm__pb_arena_begin(16, &p->root))) return NULL;
  void *x = sm__pb_arena_alloc(p->a, size);
  if (x) memset(x, 0, size);
  return x;
}

static void pool_free(pool *p) {
  sm__pb_arena_free(p->root);
  p->a = NULL;
  p->root = NULL;
}

static char *pstrdup(pool *p, const char *s) {
  size_t n = strlen(s);
  char *d = palloc(p, n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

/* Packs msg into out (malloc'ed). */
static sm_status *pack(const ProtobufCMessage *msg, sm_grpc_reply *out) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  out->body = malloc(n ? n : 1);
  if (!out->body) return oom();
  out->len = protobuf_c_message_pack(msg, out->body);
  return NULL;
}

/* The request decoded into an arena (format/pb_decode.c: one pass, one block instead of a malloc
 * per field; anything unusual goes through sm_pb_check and protobuf-c as sm_pb_parse does, with
 * the same answers), every refusal (malformed, truncated, wrong wire type, too large once decoded)
 * an INVALID_ARGUMENT: the bytes are the client's. Free with msg_free. */
static sm_status *parse(const ProtobufCMessageDescriptor *d, const uint8_t *req, size_t len, ProtobufCMessage **msg) {
  sm_status *s = sm__pb_decode(d, req, len, d->short_name, msg);
  if (s && sm_status_code(s) != SM_NO_MEMORY) {
    sm_status *e = inval("%s", sm_status_message(s)); /* "PredictRequest: malformed protobuf at byte ..." */
    sm_status_free(s);
    return e;
  }
  return s;
}

static void msg_free(ProtobufCMessage *msg) { sm__pb_arena_free(msg); }

/* ---- model specs ---- */

static sm_status *need_spec(const Tensorflow__Serving__ModelSpec *spec) {
  return spec ? NULL : inval("Missing ModelSpec");
}

static sm_status *acquire(sm_rest *r, const Tensorflow__Serving__ModelSpec *spec, sm_servable **sv) {
  int64_t version = 0;
  const char *label = NULL;
  if (spec->version_choice_case == TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION && spec->version)
    version = spec->version->value;
  else if (spec->version_choice_case == TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION_LABEL)
    label = spec->version_label;
  return sm__manager_acquire(sm__rest_manager(r), spec->name ? spec->name : "", version, label, sv);
}

static const char *sig_key(const Tensorflow__Serving__ModelSpec *spec) {
  return spec->signature_name && spec->signature_name[0] ? spec->signature_name : "serving_default";
}

/* MakeModelSpec: the name, the signature (empty: serving_default; NULL: none), the version served. */
static Tensorflow__Serving__ModelSpec *make_spec(pool *p, const char *name, const char *signature, int64_t version) {
  Tensorflow__Serving__ModelSpec *m = palloc(p, sizeof *m);
  Google__Protobuf__Int64Value *v = palloc(p, sizeof *v);
  char *nm = pstrdup(p, name ? name : "");
  char *sg = pstrdup(p, signature ? signature : "");
  if (!m || !v || !nm || !sg) return NULL;
  tensorflow__serving__model_spec__init(m);
  google__protobuf__int64_value__init(v);
  m->name = nm;
  m->signature_name = sg;
  v->value = version;
  m->version_choice_case = TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION;
  m->version = v;
  return m;
}

/* ---- tensors ---- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* "a,b,c" of the sorted strings v[0..n) into buf. */
static const char *join(const char **v, int n, char *buf, size_t cap) {
  qsort(v, (size_t)n, sizeof *v, cmp_str);
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < n && o < cap; i++) o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? "," : "", v[i]);
  return buf;
}

/* More elements than this in one request tensor are refused ("tensor parsing error"): a shape
 * with one typed value would otherwise ask for any amount of memory. */
#define MAX_REQUEST_ELEMENTS ((int64_t)1 << 31)
/* TF fills a shape from fewer typed values (the last repeats). A request may do that for up to
 * this many elements; past it the tensor must carry its values (then the message size, which
 * gRPC bounds, bounds the memory): a 40-byte request asked for 3 GiB (found by fuzz_grpc). */
#define MAX_FILLED_ELEMENTS ((int64_t)1 << 24)

/* The values a TensorProto carries: tensor_content's bytes plus every typed field's count (an
 * upper bound on what its dtype's decode can use, for the fill limit above). */
static int64_t values_carried(const Tensorflow__TensorProto *tp) {
  size_t v = tp->tensor_content.len + tp->n_half_val + tp->n_float_val + tp->n_double_val + tp->n_int_val +
             tp->n_string_val + tp->n_scomplex_val + tp->n_int64_val + tp->n_bool_val + tp->n_dcomplex_val +
             tp->n_resource_handle_val + tp->n_variant_val + tp->n_uint32_val + tp->n_uint64_val +
             tp->float8_val.len;
  return v > (size_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

static sm_status *tensor_in(const char *alias, const Tensorflow__TensorProto *tp, sm_tensor **out) {
  int64_t n = 1;
  if (tp->tensor_shape)
    for (size_t i = 0; i < tp->tensor_shape->n_dim; i++) {
      int64_t d = tp->tensor_shape->dim[i] ? tp->tensor_shape->dim[i]->size : 0;
      if (d < 0 || (d && n > MAX_REQUEST_ELEMENTS / d)) return inval("tensor parsing error: %s", alias);
      n *= d;
    }
  if (n > MAX_REQUEST_ELEMENTS) return inval("tensor parsing error: %s", alias);
  if (n > MAX_FILLED_ELEMENTS && n > values_carried(tp))
    return inval("tensor parsing error: %s: %lld elements filled from %lld values (requests may fill at most %lld)",
                 alias, (long long)n, (long long)values_carried(tp), (long long)MAX_FILLED_ELEMENTS);
  sm_status *s = sm__tensor_from_proto(tp, out);
  if (s && sm_status_code(s) != SM_NO_MEMORY) {
    sm_status_free(s);
    return inval("tensor parsing error: %s", alias);
  }
  return s;
}

/* The TensorProto of t: tensor_content is t's own buffer (t must outlive the packing). */
static Tensorflow__TensorProto *tensor_out(pool *p, const sm_tensor *t) {
  Tensorflow__TensorProto *tp = palloc(p, sizeof *tp);
  Tensorflow__TensorShapeProto *sh = palloc(p, sizeof *sh);
  int rank = sm_tensor_rank(t);
  Tensorflow__TensorShapeProto__Dim *dims = palloc(p, (size_t)(rank + 1) * sizeof *dims);
  Tensorflow__TensorShapeProto__Dim **dimp = palloc(p, (size_t)(rank + 1) * sizeof *dimp);
  if (!tp || !sh || !dims || !dimp) return NULL;
  tensorflow__tensor_proto__init(tp);
  tensorflow__tensor_shape_proto__init(sh);
  for (int i = 0; i < rank; i++) {
    tensorflow__tensor_shape_proto__dim__init(&dims[i]);
    dims[i].size = sm_tensor_dims(t)[i];
    dimp[i] = &dims[i];
  }
  sh->n_dim = (size_t)rank;
  sh->dim = dimp;
  tp->tensor_shape = sh;
  tp->dtype = (Tensorflow__DataType)sm_tensor_dtype(t);
  if (sm_tensor_dtype(t) == SM_STRING) {
    int64_t n = sm_tensor_num_elements(t);
    ProtobufCBinaryData *sv = palloc(p, (size_t)(n + 1) * sizeof *sv);
    if (!sv) return NULL;
    for (int64_t i = 0; i < n; i++) {
      size_t len = 0;
      const char *str = sm_tensor_string(t, i, &len);
      sv[i].data = (uint8_t *)(uintptr_t)str;
      sv[i].len = str ? len : 0;
    }
    tp->n_string_val = (size_t)n;
    tp->string_val = sv;
  } else {
    tp->tensor_content.data = sm_tensor_data(t);
    tp->tensor_content.len = sm_tensor_nbytes(t);
  }
  return tp;
}

/* ---- a PredictResponse of numeric tensors, written directly ---- */

/* The bytes protobuf-c packs for a PredictResponse whose outputs are all numeric (the tests compare
 * the two for every rank and type), without building its messages and walking their descriptors
 * twice (get_packed_size, then pack): fields in number order, proto3's zeros and empty strings
 * left out, the model spec's version always sent (a oneof member). ~10x fewer instructions than
 * protobuf-c for half_plus_two's answer. */
static size_t vlen(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) n++;
  return n;
}

static uint8_t *vput(uint8_t *o, uint64_t v) {
  for (; v >= 0x80; v >>= 7) *o++ = (uint8_t)(v | 0x80);
  *o++ = (uint8_t)v;
  return o;
}

static size_t field_len(size_t len) { return 1 + vlen(len) + len; } /* tag, length, bytes */

static size_t dim_len(int64_t d) { return d ? 1 + vlen((uint64_t)d) : 0; }

static size_t shape_len(const sm_tensor *t) {
  size_t n = 0;
  for (int i = 0; i < sm_tensor_rank(t); i++) n += field_len(dim_len(sm_tensor_dims(t)[i]));
  return n;
}

static size_t tensor_len(const sm_tensor *t) {
  size_t n = sm_tensor_dtype(t) ? 1 + vlen((uint64_t)sm_tensor_dtype(t)) : 0;
  n += field_len(shape_len(t));
  return n + (sm_tensor_nbytes(t) ? field_len(sm_tensor_nbytes(t)) : 0);
}

static size_t spec_len(const char *name, const char *sig, int64_t version) {
  size_t n = strlen(name), g = strlen(sig);
  return (n ? field_len(n) : 0) + field_len(version ? 1 + vlen((uint64_t)version) : 0) + (g ? field_len(g) : 0);
}

static uint8_t *put_bytes(uint8_t *o, uint8_t tag, const void *b, size_t n) {
  *o++ = tag;
  o = vput(o, n);
  if (n) memcpy(o, b, n);
  return o + n;
}

static uint8_t *put_str(uint8_t *o, uint8_t tag, const char *str) {
  size_t n = strlen(str);
  return n ? put_bytes(o, tag, str, n) : o;
}

int sm__grpc_pack_predict_response(const char *name, const char *signature, int64_t version, const char *const *aliases,
                                   sm_tensor *const *outputs, int n, sm_grpc_reply *out) {
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    if (sm_tensor_dtype(outputs[i]) == SM_STRING) return 0;
    size_t a = strlen(aliases[i]);
    total += field_len((a ? field_len(a) : 0) + field_len(tensor_len(outputs[i])));
  }
  total += field_len(spec_len(name, signature, version));
  uint8_t *o = out->body = malloc(total);
  if (!o) return -1;
  for (int i = 0; i < n; i++) { /* outputs = 1: map entries {key = 1, value = 2} */
    const sm_tensor *t = outputs[i];
    size_t a = strlen(aliases[i]), tl = tensor_len(t);
    *o++ = 0x0a;
    o = vput(o, (a ? field_len(a) : 0) + field_len(tl));
    o = put_str(o, 0x0a, aliases[i]);
    *o++ = 0x12;
    o = vput(o, tl);
    if (sm_tensor_dtype(t)) { /* TensorProto: dtype = 1, tensor_shape = 2 {dim = 2 {size = 1}}, tensor_content = 4 */
      *o++ = 0x08;
      o = vput(o, (uint64_t)sm_tensor_dtype(t));
    }
    *o++ = 0x12;
    o = vput(o, shape_len(t));
    for (int d = 0; d < sm_tensor_rank(t); d++) {
      int64_t v = sm_tensor_dims(t)[d];
      *o++ = 0x12;
      o = vput(o, dim_len(v));
      if (v) {
        *o++ = 0x08;
        o = vput(o, (uint64_t)v);
      }
    }
    if (sm_tensor_nbytes(t)) o = put_bytes(o, 0x22, sm_tensor_data(t), sm_tensor_nbytes(t));
  }
  *o++ = 0x12; /* model_spec = 2: name = 1, version = 2 {value = 1}, signature_name = 3 */
  o = vput(o, spec_len(name, signature, version));
  o = put_str(o, 0x0a, name);
  *o++ = 0x12;
  o = vput(o, version ? 1 + vlen((uint64_t)version) : 0);
  if (version) {
    *o++ = 0x08;
    o = vput(o, (uint64_t)version);
  }
  o = put_str(o, 0x1a, signature);
  out->len = (size_t)(o - out->body);
  return 1;
}

/* ======================================================================== Predict ==== */

static const Tensorflow__TensorProto empty_tensor = TENSORFLOW__TENSOR_PROTO__INIT;

static sm_status *predict(sm_rest *r, const uint8_t *req, size_t len, const sm_run_options *ro, sm_grpc_reply *out) {
  ProtobufCMessage *msg = NULL;
  sm_servable *sv = NULL;
  sm_tensor **inputs = NULL, **outputs = NULL;
  const char **aliases = NULL, **keys = NULL;
  const Tensorflow__TensorProto **values = NULL;
  sm_tensor_info *fetch = NULL;
  int nin = 0, nfetch = 0;
  pool p = {0};
  sm_status *s = parse(&tensorflow__serving__predict_request__descriptor, req, len, &msg);
  if (s) goto done;
  const Tensorflow__Serving__PredictRequest *rq = (const Tensorflow__Serving__PredictRequest *)msg;
  if ((s = need_spec(rq->model_spec))) goto done;
  snprintf(out->model_name, sizeof out->model_name, "%s", rq->model_spec->name ? rq->model_spec->name : "");
  if ((s = acquire(r, rq->model_spec, &sv))) goto done;
  sm_model *m = sm__servable_model(sv);
  const char *key = sig_key(rq->model_spec);
  if (!sm_model_signature_method(m, key)) {
    s = sm_status_new(SM_FAILED_PRECONDITION, "Serving signature key \"%s\" not found.", key);
    goto done;
  }
  const sm_tensor_info *ins, *outs;
  int nins, nouts;
  s = sm_model_signature_inputs(m, key, &ins, &nins);
  if (!s) s = sm_model_signature_outputs(m, key, &outs, &nouts);
  if (s) goto done;
  nin = (int)rq->n_inputs;
  /* the request's arrays, one allocation (the pool's first chunk) */
  fetch = palloc(&p, ((size_t)nouts + 1) * sizeof *fetch);
  inputs = palloc(&p, ((size_t)nin + 1) * sizeof *inputs);
  aliases = palloc(&p, ((size_t)nin + 1) * sizeof *aliases);
  values = palloc(&p, ((size_t)nin + 1) * sizeof *values);
  keys = palloc(&p, ((size_t)nin + (size_t)nins + (size_t)nouts + 1) * sizeof *keys);
  outputs = palloc(&p, ((size_t)nouts + 1) * sizeof *outputs);
  if (!inputs || !aliases || !values || !keys || !fetch || !outputs) {
    s = oom();
    goto done;
  }
  /* a map: a key sent twice keeps its last value */
  int u = 0;
  for (int i = 0; i < nin; i++) {
    const char *k = rq->inputs[i]->key ? rq->inputs[i]->key : "";
    int at = u;
    for (int j = 0; j < u; j++)
      if (!strcmp(aliases[j], k)) at = j;
    aliases[at] = k;
    values[at] = rq->inputs[i]->value ? rq->inputs[i]->value : &empty_tensor;
    if (at == u) u++;
  }
  nin = u;
  /* VerifyRequestInputsSize: the sets of aliases, sorted, with what is extra and what is missing */
  if (nin != nins) {
    char a[1024], b[1024], extra[1024], missing[1024];
    int ne = 0, nm = 0;
    for (int i = 0; i < nin; i++) keys[i] = aliases[i];
    join(keys, nin, a, sizeof a);
    for (int i = 0; i < nins; i++) keys[i] = ins[i].alias;
    join(keys, nins, b, sizeof b);
    for (int i = 0; i < nin; i++) {
      int found = 0;
      for (int j = 0; j < nins; j++) found |= !strcmp(aliases[i], ins[j].alias);
      if (!found) keys[ne++] = aliases[i];
    }
    join(keys, ne, extra, sizeof extra);
    for (int j = 0; j < nins; j++) {
      int found = 0;
      for (int i = 0; i < nin; i++) found |= !strcmp(aliases[i], ins[j].alias);
      if (!found) keys[nm++] = ins[j].alias;
    }
    join(keys, nm, missing, sizeof missing);
    s = inval("input size does not match signature: %d!=%d len({%s}) != len({%s}). Sent extra: {%s}. Missing but "
              "required: {%s}.",
              nin, nins, a, b, extra, missing);
    goto done;
  }
  for (int i = 0; i < nin && !s; i++) {
    int found = 0;
    for (int j = 0; j < nins; j++) found |= !strcmp(aliases[i], ins[j].alias);
    if (!found) {
      char set[1024];
      for (int j = 0; j < nins; j++) keys[j] = ins[j].alias;
      s = inval("input tensor alias not found in signature: %s. Inputs expected to be in the set {%s}.", aliases[i],
                join(keys, nins, set, sizeof set));
      break;
    }
    s = tensor_in(aliases[i], values[i], &inputs[i]);
  }
  if (s) goto done;
  /* output_filter, in its order; none: every output of the signature */
  for (size_t f = 0; f < rq->n_output_filter; f++) {
    const char *alias = rq->output_filter[f];
    int at = -1;
    for (int j = 0; j < nouts; j++)
      if (!strcmp(outs[j].alias, alias)) at = j;
    if (at < 0) {
      char set[1024];
      for (int j = 0; j < nouts; j++) keys[j] = outs[j].alias;
      s = inval("output tensor alias not found in signature: %s Outputs expected to be in the set {%s}.", alias,
                join(keys, nouts, set, sizeof set));
      goto done;
    }
    for (int k = 0; k < nfetch; k++)
      if (!strcmp(fetch[k].alias, alias)) {
        s = inval("duplicate output tensor alias: %s", alias);
        goto done;
      }
    fetch[nfetch++] = outs[at];
  }
  if (!nfetch)
    for (int j = 0; j < nouts; j++) fetch[nfetch++] = outs[j];
  s = sm__rest_run(r, sv, key, aliases, inputs, nin, fetch, nfetch, outputs, ro);
  if (s) goto done;
  for (int i = 0; i < nfetch; i++) keys[i] = fetch[i].alias;
  int packed = sm__grpc_pack_predict_response(rq->model_spec->name ? rq->model_spec->name : "", key,
                                              sm__servable_version(sv), keys, outputs, nfetch, out);
  if (packed) {
    if (packed < 0) s = oom();
    goto done;
  }
  Tensorflow__Serving__PredictResponse resp = TENSORFLOW__SERVING__PREDICT_RESPONSE__INIT;
  Tensorflow__Serving__PredictResponse__OutputsEntry *ents = palloc(&p, (size_t)nfetch * sizeof *ents);
  Tensorflow__Serving__PredictResponse__OutputsEntry **entp = palloc(&p, (size_t)nfetch * sizeof *entp);
  resp.model_spec = make_spec(&p, rq->model_spec->name, key, sm__servable_version(sv));
  if (!ents || !entp || !resp.model_spec) {
    s = oom();
    goto done;
  }
  for (int i = 0; i < nfetch; i++) {
    tensorflow__serving__predict_response__outputs_entry__init(&ents[i]);
    ents[i].key = (char *)fetch[i].alias;
    if (!(ents[i].value = tensor_out(&p, outputs[i]))) {
      s = oom();
      goto done;
    }
    entp[i] = &ents[i];
  }
  resp.n_outputs = (size_t)nfetch;
  resp.outputs = entp;
  s = pack(&resp.base, out);
done:
  for (int i = 0; inputs && i < nin; i++) sm_tensor_free(inputs[i]);
  for (int i = 0; outputs && i < nfetch; i++) sm_tensor_free(outputs[i]);
  pool_free(&p);
  sm__servable_release(sv);
  msg_free(msg);
  return s;
}

/* ========================================================= Classify, Regress, Multi ==== */

/* InputToSerializedExampleTensor: each example serialized; with a context, the context's bytes
 * first (protobuf concatenation merges the two messages, as TF Serving's does). */
typedef struct examples {
  int64_t n;
  uint8_t **v;
  size_t *lens;
} examples;

static void examples_clear(examples *e) {
  for (int64_t i = 0; e->v && i < e->n; i++) free(e->v[i]);
  free(e->v);
  free(e->lens);
  memset(e, 0, sizeof *e);
}

static sm_status *examples_from_input(const Tensorflow__Serving__Input *in, examples *e) {
  memset(e, 0, sizeof *e);
  size_t n = 0;
  Tensorflow__Example **ex = NULL;
  const Tensorflow__Example *ctx = NULL;
  if (in && in->kind_case == TENSORFLOW__SERVING__INPUT__KIND_EXAMPLE_LIST && in->example_list) {
    n = in->example_list->n_examples;
    ex = in->example_list->examples;
  } else if (in && in->kind_case == TENSORFLOW__SERVING__INPUT__KIND_EXAMPLE_LIST_WITH_CONTEXT &&
             in->example_list_with_context) {
    n = in->example_list_with_context->n_examples;
    ex = in->example_list_with_context->examples;
    ctx = in->example_list_with_context->context;
  }
  if (!n) return inval("Input is empty.");
  size_t clen = ctx ? tensorflow__example__get_packed_size(ctx) : 0;
  e->v = calloc(n, sizeof *e->v);
  e->lens = calloc(n, sizeof *e->lens);
  if (!e->v || !e->lens) {
    examples_clear(e);
    return oom();
  }
  e->n = (int64_t)n;
  for (size_t i = 0; i < n; i++) {
    size_t l = tensorflow__example__get_packed_size(ex[i]);
    if (!(e->v[i] = malloc(clen + l + 1))) {
      examples_clear(e);
      return oom();
    }
    if (ctx) tensorflow__example__pack(ctx, e->v[i]);
    tensorflow__example__pack(ex[i], e->v[i] + clen);
    e->lens[i] = clen + l;
  }
  return NULL;
}

static Tensorflow__Serving__ClassificationResult *classification_result(pool *p, const sm_examples_outputs *o) {
  Tensorflow__Serving__ClassificationResult *res = palloc(p, sizeof *res);
  Tensorflow__Serving__Classifications **cv = palloc(p, (size_t)o->n * sizeof *cv);
  if (!res || !cv) return NULL;
  tensorflow__serving__classification_result__init(res);
  const float *scores = o->scores ? sm_tensor_data(o->scores) : NULL;
  for (int64_t i = 0; i < o->n; i++) {
    Tensorflow__Serving__Classifications *c = palloc(p, sizeof *c);
    Tensorflow__Serving__Class *cls = palloc(p, (size_t)o->k * sizeof *cls);
    Tensorflow__Serving__Class **clp = palloc(p, (size_t)o->k * sizeof *clp);
    if (!c || !cls || !clp) return NULL;
    tensorflow__serving__classifications__init(c);
    for (int64_t j = 0; j < o->k; j++) {
      tensorflow__serving__class__init(&cls[j]);
      if (o->classes) {
        size_t l = 0;
        const char *lab = sm_tensor_string(o->classes, i * o->k + j, &l);
        char *d = palloc(p, l + 1);
        if (!d) return NULL;
        if (lab && l) memcpy(d, lab, l);
        cls[j].label = d;
      }
      if (scores) cls[j].score = scores[i * o->k + j];
      clp[j] = &cls[j];
    }
    c->n_classes = (size_t)o->k;
    c->classes = clp;
    cv[i] = c;
  }
  res->n_classifications = (size_t)o->n;
  res->classifications = cv;
  return res;
}

static Tensorflow__Serving__RegressionResult *regression_result(pool *p, const sm_examples_outputs *o) {
  Tensorflow__Serving__RegressionResult *res = palloc(p, sizeof *res);
  Tensorflow__Serving__Regression *rg = palloc(p, (size_t)o->n * sizeof *rg);
  Tensorflow__Serving__Regression **rgp = palloc(p, (size_t)o->n * sizeof *rgp);
  if (!res || !rg || !rgp) return NULL;
  tensorflow__serving__regression_result__init(res);
  for (int64_t i = 0; i < o->n; i++) {
    tensorflow__serving__regression__init(&rg[i]);
    rg[i].value = o->values[i];
    rgp[i] = &rg[i];
  }
  res->n_regressions = (size_t)o->n;
  res->regressions = rgp;
  return res;
}

/* Classify (classify = 1) and Regress: the request messages share their layout (model_spec, input). */
static sm_status *classify_regress(sm_rest *r, int classify, const uint8_t *req, size_t len, const sm_run_options *ro,
                                   sm_grpc_reply *out) {
  ProtobufCMessage *msg = NULL;
  sm_servable *sv = NULL;
  examples ex = {0};
  sm_examples_outputs o = {0};
  pool p = {0};
  sm_status *s = classify ? parse(&tensorflow__serving__classification_request__descriptor, req, len, &msg)
                          : parse(&tensorflow__serving__regression_request__descriptor, req, len, &msg);
  if (s) goto done;
  const Tensorflow__Serving__ModelSpec *spec;
  const Tensorflow__Serving__Input *input;
  if (classify) {
    spec = ((Tensorflow__Serving__ClassificationRequest *)msg)->model_spec;
    input = ((Tensorflow__Serving__ClassificationRequest *)msg)->input;
  } else {
    spec = ((Tensorflow__Serving__RegressionRequest *)msg)->model_spec;
    input = ((Tensorflow__Serving__RegressionRequest *)msg)->input;
  }
  if ((s = need_spec(spec))) goto done;
  snprintf(out->model_name, sizeof out->model_name, "%s", spec->name ? spec->name : "");
  if ((s = acquire(r, spec, &sv))) goto done;
  const char *key = sig_key(spec);
  if (!sm_model_signature_method(sm__servable_model(sv), key)) {
    s = inval("No signature was found with the name: %s", key);
    goto done;
  }
  if ((s = examples_from_input(input, &ex))) goto done;
  if ((s = sm__rest_run_examples(r, sv, key, classify, ex.v, ex.lens, ex.n, ro, &o))) goto done;
  Tensorflow__Serving__ModelSpec *ms = make_spec(&p, spec->name, key, sm__servable_version(sv));
  if (classify) {
    Tensorflow__Serving__ClassificationResponse resp = TENSORFLOW__SERVING__CLASSIFICATION_RESPONSE__INIT;
    resp.model_spec = ms;
    resp.result = classification_result(&p, &o);
    s = ms && resp.result ? pack(&resp.base, out) : oom();
  } else {
    Tensorflow__Serving__RegressionResponse resp = TENSORFLOW__SERVING__REGRESSION_RESPONSE__INIT;
    resp.model_spec = ms;
    resp.result = regression_result(&p, &o);
    s = ms && resp.result ? pack(&resp.base, out) : oom();
  }
done:
  sm__examples_outputs_clear(&o);
  examples_clear(&ex);
  pool_free(&p);
  sm__servable_release(sv);
  msg_free(msg);
  return s;
}

/* RunMultiInference: one model, several classify / regress signatures over the same examples. */
static sm_status *multi_inference(sm_rest *r, const uint8_t *req, size_t len, const sm_run_options *ro,
                                  sm_grpc_reply *out) {
  ProtobufCMessage *msg = NULL;
  sm_servable *sv = NULL;
  examples ex = {0};
  pool p = {0};
  sm_examples_outputs *os = NULL;
  sm_status *s = parse(&tensorflow__serving__multi_inference_request__descriptor, req, len, &msg);
  if (s) goto done;
  const Tensorflow__Serving__MultiInferenceRequest *rq = (const Tensorflow__Serving__MultiInferenceRequest *)msg;
  size_t nt = rq->n_tasks;
  if (!nt) {
    s = inval("Found no tasks in MultiInferenceRequest.");
    goto done;
  }
  for (size_t i = 0; i < nt; i++)
    if ((s = need_spec(rq->tasks[i]->model_spec))) goto done;
  const Tensorflow__Serving__ModelSpec *spec0 = rq->tasks[0]->model_spec;
  const char *name = spec0->name ? spec0->name : "";
  snprintf(out->model_name, sizeof out->model_name, "%s", name);
  for (size_t i = 0; i < nt; i++) {
    const char *ni = rq->tasks[i]->model_spec->name ? rq->tasks[i]->model_spec->name : "";
    if (strcmp(ni, name)) {
      s = inval("All ModelSpecs in a MultiInferenceRequest must access the same model name.");
      goto done;
    }
    for (size_t k = 0; k < i; k++)
      if (!strcmp(sig_key(rq->tasks[k]->model_spec), sig_key(rq->tasks[i]->model_spec))) {
        s = inval("Duplicate evaluation of signature: %s", sig_key(rq->tasks[i]->model_spec));
        goto done;
      }
  }
  if ((s = acquire(r, spec0, &sv))) goto done;
  sm_model *m = sm__servable_model(sv);
  for (size_t i = 0; i < nt; i++) {
    const char *key = sig_key(rq->tasks[i]->model_spec);
    const char *meth = rq->tasks[i]->method_name ? rq->tasks[i]->method_name : "";
    if (!sm_model_signature_method(m, key)) {
      s = inval("No signature was found with the name: %s", key);
      goto done;
    }
    if (strcmp(meth, CLASSIFY_METHOD) && strcmp(meth, REGRESS_METHOD)) {
      s = sm_status_new(SM_UNIMPLEMENTED, "Unsupported signature method_name: %s", meth);
      goto done;
    }
  }
  if ((s = examples_from_input(rq->input, &ex))) goto done;
  os = calloc(nt, sizeof *os);
  Tensorflow__Serving__InferenceResult *res = palloc(&p, nt * sizeof *res);
  Tensorflow__Serving__InferenceResult **resp_v = palloc(&p, nt * sizeof *resp_v);
  if (!os || !res || !resp_v) {
    s = oom();
    goto done;
  }
  for (size_t i = 0; i < nt && !s; i++) {
    const char *key = sig_key(rq->tasks[i]->model_spec);
    int classify = !strcmp(rq->tasks[i]->method_name, CLASSIFY_METHOD);
    s = sm__rest_run_examples(r, sv, key, classify, ex.v, ex.lens, ex.n, ro, &os[i]);
    if (s) break;
    tensorflow__serving__inference_result__init(&res[i]);
    res[i].model_spec = make_spec(&p, name, key, sm__servable_version(sv));
    if (classify) {
      res[i].result_case = TENSORFLOW__SERVING__INFERENCE_RESULT__RESULT_CLASSIFICATION_RESULT;
      res[i].classification_result = classification_result(&p, &os[i]);
    } else {
      res[i].result_case = TENSORFLOW__SERVING__INFERENCE_RESULT__RESULT_REGRESSION_RESULT;
      res[i].regression_result = regression_result(&p, &os[i]);
    }
    if (!res[i].model_spec || !res[i].classification_result) s = oom(); /* a union: either result */
    resp_v[i] = &res[i];
  }
  if (!s) {
    Tensorflow__Serving__MultiInferenceResponse resp = TENSORFLOW__SERVING__MULTI_INFERENCE_RESPONSE__INIT;
    resp.n_results = nt;
    resp.results = resp_v;
    s = pack(&resp.base, out);
  }
done:
  for (size_t i = 0; os && i < (msg ? ((Tensorflow__Serving__MultiInferenceRequest *)msg)->n_tasks : 0); i++)
    sm__examples_outputs_clear(&os[i]);
  free(os);
  examples_clear(&ex);
  pool_free(&p);
  sm__servable_release(sv);
  msg_free(msg);
  return s;
}

/* =============================================================== GetModelMetadata ==== */

static sm_status *model_metadata(sm_rest *r, const uint8_t *req, size_t len, sm_grpc_reply *out) {
  ProtobufCMessage *msg = NULL;
  sm_servable *sv = NULL;
  Tensorflow__SavedModel *smp = NULL;
  uint8_t *map_bytes = NULL;
  pool p = {0};
  sm_status *s = parse(&tensorflow__serving__get_model_metadata_request__descriptor, req, len, &msg);
  if (s) goto done;
  const Tensorflow__Serving__GetModelMetadataRequest *rq = (const Tensorflow__Serving__GetModelMetadataRequest *)msg;
  if ((s = need_spec(rq->model_spec))) goto done;
  snprintf(out->model_name, sizeof out->model_name, "%s", rq->model_spec->name ? rq->model_spec->name : "");
  if (!rq->n_metadata_field) {
    s = inval("GetModelMetadataRequest must specify at least one metadata_field");
    goto done;
  }
  for (size_t i = 0; i < rq->n_metadata_field; i++)
    if (strcmp(rq->metadata_field[i], "signature_def")) {
      s = inval("Metadata field %s is not supported", rq->metadata_field[i]);
      goto done;
    }
  if ((s = acquire(r, rq->model_spec, &sv))) goto done;
  const Tensorflow__MetaGraphDef *mg = NULL;
  int ntags = 0;
  const char *const *tags = sm__rest_tags(r, &ntags);
  s = sm_saved_model_read(sm__servable_path(sv), &smp);
  if (!s) s = sm_saved_model_find_meta_graph(smp, tags, (size_t)ntags, &mg);
  if (s) goto done;
  Tensorflow__Serving__SignatureDefMap map = TENSORFLOW__SERVING__SIGNATURE_DEF_MAP__INIT;
  size_t ns = mg->n_signature_def;
  Tensorflow__Serving__SignatureDefMap__SignatureDefEntry *ents = palloc(&p, ns * sizeof *ents);
  Tensorflow__Serving__SignatureDefMap__SignatureDefEntry **entp = palloc(&p, ns * sizeof *entp);
  if (!ents || !entp) {
    s = oom();
    goto done;
  }
  for (size_t i = 0; i < ns; i++) {
    tensorflow__serving__signature_def_map__signature_def_entry__init(&ents[i]);
    ents[i].key = mg->signature_def[i]->key;
    ents[i].value = mg->signature_def[i]->value;
    entp[i] = &ents[i];
  }
  map.n_signature_def = ns;
  map.signature_def = entp;
  size_t ml = tensorflow__serving__signature_def_map__get_packed_size(&map);
  if (!(map_bytes = malloc(ml ? ml : 1))) {
    s = oom();
    goto done;
  }
  tensorflow__serving__signature_def_map__pack(&map, map_bytes);
  Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
  any.type_url = SIGNATURE_DEF_MAP_URL;
  any.value.data = map_bytes;
  any.value.len = ml;
  Tensorflow__Serving__GetModelMetadataResponse__MetadataEntry ent =
      TENSORFLOW__SERVING__GET_MODEL_METADATA_RESPONSE__METADATA_ENTRY__INIT;
  Tensorflow__Serving__GetModelMetadataResponse__MetadataEntry *entv[1] = {&ent};
  ent.key = "signature_def";
  ent.value = &any;
  Tensorflow__Serving__GetModelMetadataResponse resp = TENSORFLOW__SERVING__GET_MODEL_METADATA_RESPONSE__INIT;
  resp.model_spec = make_spec(&p, rq->model_spec->name, NULL, sm__servable_version(sv));
  if (!resp.model_spec) {
    s = oom();
    goto done;
  }
  resp.n_metadata = 1;
  resp.metadata = entv;
  s = pack(&resp.base, out);
done:
  free(map_bytes);
  sm_saved_model_free(smp);
  pool_free(&p);
  sm__servable_release(sv);
  msg_free(msg);
  return s;
}

/* ================================================================= ModelService ==== */

static int enum_value(const ProtobufCEnumDescriptor *d, const char *name, int dflt) {
  const ProtobufCEnumValue *v = name ? protobuf_c_enum_descriptor_get_value_by_name(d, name) : NULL;
  return v ? v->value : dflt;
}

static sm_status *model_status(sm_rest *r, const uint8_t *req, size_t len, sm_grpc_reply *out) {
  ProtobufCMessage *msg = NULL;
  sm_version_status *vs = NULL;
  int n = 0;
  pool p = {0};
  sm_status *s = parse(&tensorflow__serving__get_model_status_request__descriptor, req, len, &msg);
  if (s) goto done;
  const Tensorflow__Serving__ModelSpec *spec = ((Tensorflow__Serving__GetModelStatusRequest *)msg)->model_spec;
  if ((s = need_spec(spec))) goto done;
  snprintf(out->model_name, sizeof out->model_name, "%s", spec->name ? spec->name : "");
  int64_t version = 0;
  const char *label = NULL;
  if (spec->version_choice_case == TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION && spec->version)
    version = spec->version->value;
  else if (spec->version_choice_case == TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION_LABEL)
    label = spec->version_label;
  if ((s = sm__manager_status(sm__rest_manager(r), spec->name ? spec->name : "", version, label, &vs, &n))) goto done;
  Tensorflow__Serving__ModelVersionStatus *mv = palloc(&p, (size_t)n * sizeof *mv);
  Tensorflow__Serving__ModelVersionStatus **mvp = palloc(&p, (size_t)n * sizeof *mvp);
  Tensorflow__Serving__StatusProto *st = palloc(&p, (size_t)n * sizeof *st);
  if (!mv || !mvp || !st) {
    s = oom();
    goto done;
  }
  for (int i = 0; i < n; i++) {
    tensorflow__serving__model_version_status__init(&mv[i]);
    tensorflow__serving__status_proto__init(&st[i]);
    mv[i].version = vs[i].version;
    mv[i].state = (Tensorflow__Serving__ModelVersionStatus__State)enum_value(
        &tensorflow__serving__model_version_status__state__descriptor, vs[i].state, 0);
    st[i].error_code = (Tensorflow__Serving__ErrorCode)enum_value(&tensorflow__serving__error_code__descriptor,
                                                                  vs[i].error_code, SM_GRPC_UNKNOWN);
    st[i].error_message = (char *)(vs[i].error_message ? vs[i].error_message : "");
    mv[i].status = &st[i];
    mvp[i] = &mv[i];
  }
  Tensorflow__Serving__GetModelStatusResponse resp = TENSORFLOW__SERVING__GET_MODEL_STATUS_RESPONSE__INIT;
  resp.n_model_version_status = (size_t)n;
  resp.model_version_status = mvp;
  s = pack(&resp.base, out);
done:
  sm__version_status_free(vs, n);
  pool_free(&p);
  msg_free(msg);
  return s;
}

static sm_status *reload_config(sm_rest *r, const uint8_t *req, size_t len, sm_grpc_reply *out) {
  ProtobufCMessage *msg = NULL;
  sm_model_config_list *cl = NULL;
  sm_model_config *mc = NULL;
  sm_status *s = parse(&tensorflow__serving__reload_config_request__descriptor, req, len, &msg);
  if (s) goto done;
  const Tensorflow__Serving__ModelServerConfig *cfg = ((Tensorflow__Serving__ReloadConfigRequest *)msg)->config;
  if (!cfg || cfg->config_case != TENSORFLOW__SERVING__MODEL_SERVER_CONFIG__CONFIG_MODEL_CONFIG_LIST) {
    s = inval("ServerModelConfig type not supported by HandleReloadConfigRequest. Only ModelConfigList is currently "
              "supported");
    goto done;
  }
  if ((s = sm__model_config_list_from_proto(cfg, "HandleReloadConfigRequest", &cl))) goto done;
  int n = sm__model_config_list_count(cl);
  if (!(mc = calloc((size_t)n + 1, sizeof *mc))) {
    s = oom();
    goto done;
  }
  for (int i = 0; i < n; i++) mc[i] = *sm__model_config_list_at(cl, i);
  if ((s = sm__manager_set_config(sm__rest_manager(r), mc, n))) goto done;
  Tensorflow__Serving__StatusProto st = TENSORFLOW__SERVING__STATUS_PROTO__INIT;
  Tensorflow__Serving__ReloadConfigResponse resp = TENSORFLOW__SERVING__RELOAD_CONFIG_RESPONSE__INIT;
  resp.status = &st;
  s = pack(&resp.base, out);
done:
  if (s) fprintf(stderr, "ReloadConfig failed: %s\n", sm_status_message(s));
  free(mc);
  sm__model_config_list_free(cl);
  msg_free(msg);
  return s;
}

/* ======================================================================= dispatch ==== */

#define PS "/tensorflow.serving.PredictionService/"
#define MS "/tensorflow.serving.ModelService/"

void sm__grpc_api_call(sm_rest *r, const char *method, const uint8_t *req, size_t len, int64_t deadline_us,
                       sm_grpc_reply *out) {
  memset(out, 0, sizeof *out);
  sm_run_options ro = {.deadline_us = deadline_us};
  static const uint8_t empty[1];
  if (!req) req = empty, len = 0;
  sm_status *s = NULL;
  if (!method) method = "";
  if (!strcmp(method, PS "Predict")) s = predict(r, req, len, &ro, out);
  else if (!strcmp(method, PS "Classify")) s = classify_regress(r, 1, req, len, &ro, out);
  else if (!strcmp(method, PS "Regress")) s = classify_regress(r, 0, req, len, &ro, out);
  else if (!strcmp(method, PS "MultiInference")) s = multi_inference(r, req, len, &ro, out);
  else if (!strcmp(method, PS "GetModelMetadata")) s = model_metadata(r, req, len, out);
  else if (!strcmp(method, MS "GetModelStatus")) s = model_status(r, req, len, out);
  else if (!strcmp(method, MS "HandleReloadConfigRequest")) s = reload_config(r, req, len, out);
  else s = sm_status_new(SM_UNIMPLEMENTED, "Method not found: %s", method);
  if (s) {
    free(out->body);
    out->body = NULL;
    out->len = 0;
    out->code = sm__grpc_code(sm_status_code(s));
    out->message = strdup(sm_status_message(s));
    sm_status_free(s);
  } else {
    out->message = strdup("");
  }
  if (!out->message) { /* no memory even for the message: the code says it */
    free(out->body);
    out->body = NULL;
    out->len = 0;
    out->code = SM_GRPC_RESOURCE_EXHAUSTED;
  }
}

void sm__grpc_reply_clear(sm_grpc_reply *rep) {
  if (!rep) return;
  free(rep->message);
  free(rep->body);
  memset(rep, 0, sizeof *rep);
}

/* rest.c - TF Serving's REST handler: routing (http_rest_api_util.cc's regexes, matched by hand
 * with the same preferences), model status, metadata, predict, classify and regress
 * (predict_util.cc, classifier.cc, regressor.cc), and ToHTTPStatusCode.
 *
 * Metadata lists every signature, as TF Serving does, and adds "warnings" (sm_model_warning) for
 * those this runtime cannot run; predict on one of them answers UNIMPLEMENTED (501).
 * Signatures run as TF Serving runs them: a Session::Run feeding the signature's tensor names,
 * so a request's shapes are the graph's business, not the SignatureDef's. */
#include "serve/rest.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "savedmodel/format.h"
#include "savedmodel/model.h"

struct sm_rest {
  sm_manager *manager;
  sm_batcher *batcher;
  sm_status *(*batcher_run)(sm_batcher *, sm_servable *, const char *, const char *const *, sm_tensor *const *, int,
                            const char *const *, int, sm_tensor **, const sm_run_options *);
  sm_rest_submit_fn batcher_submit; /* NULL: requests wait for their batch on their thread */
  int64_t timeout_ms;
  size_t max_run_bytes; /* each request's run budget (sm_run_options); 0: none */
  char **tags;
  int ntags;
};

int sm__rest_http_status(sm_code code) {
  switch (code) {
    case SM_OK: return 200;
    case SM_INVALID_ARGUMENT: return 400;
    case SM_NOT_FOUND: return 404;
    case SM_ALREADY_EXISTS: return 409;
    case SM_NO_MEMORY: return 429; /* RESOURCE_EXHAUSTED */
    case SM_FAILED_PRECONDITION: return 400;
    case SM_OUT_OF_RANGE: return 400;
    case SM_UNIMPLEMENTED: return 501;
    case SM_UNAVAILABLE: return 503;
    case SM_DEADLINE_EXCEEDED: return 504;
    case SM_CANCELLED: return 499; /* CLIENT_CLOSED_REQUEST */
    case SM_RESOURCE_EXHAUSTED: return 429;
    default: return 500; /* UNKNOWN, INTERNAL, DATA_LOSS */
  }
}

static const char *tf_code_name(sm_code c) {
  switch (c) {
    case SM_OK: return "OK";
    case SM_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case SM_NOT_FOUND: return "NOT_FOUND";
    case SM_DATA_LOSS: return "DATA_LOSS";
    case SM_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case SM_NO_MEMORY: return "RESOURCE_EXHAUSTED";
    case SM_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case SM_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case SM_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case SM_INTERNAL: return "INTERNAL";
    case SM_UNAVAILABLE: return "UNAVAILABLE";
    case SM_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case SM_CANCELLED: return "CANCELLED";
    case SM_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    default: return "UNKNOWN";
  }
}

int sm__rest_path_is_api(const char *path) { return path && !strncasecmp(path, "/v1/", 4); }

sm_status *sm__rest_new(const sm_rest_options *o, sm_rest **out) {
  *out = NULL;
  if (!o || !o->manager) return sm_status_new(SM_INVALID_ARGUMENT, "rest: a manager is required");
  sm_rest *r = calloc(1, sizeof *r);
  if (!r) return sm_status_new(SM_NO_MEMORY, "rest: out of memory");
  r->manager = o->manager;
  r->batcher = o->batcher_run ? o->batcher : NULL;
  r->batcher_run = o->batcher_run;
  r->batcher_submit = r->batcher ? o->batcher_submit : NULL;
  const char *park = getenv("SM_REST_PARK"); /* 0: requests wait for their batch on their thread (A/B runs) */
  if (park && atoi(park) == 0) r->batcher_submit = NULL;
  r->timeout_ms = o->timeout_ms;
  r->max_run_bytes = o->max_run_bytes;
  int nt = o->tags ? o->ntags : 1;
  r->tags = calloc((size_t)nt + 1, sizeof *r->tags);
  if (!r->tags) {
    free(r);
    return sm_status_new(SM_NO_MEMORY, "rest: out of memory");
  }
  for (int i = 0; i < nt; i++) {
    r->tags[i] = strdup(o->tags ? o->tags[i] : "serve");
    if (!r->tags[i]) {
      r->ntags = i;
      sm__rest_free(r);
      return sm_status_new(SM_NO_MEMORY, "rest: out of memory");
    }
  }
  r->ntags = nt;
  *out = r;
  return NULL;
}

void sm__rest_free(sm_rest *r) {
  if (!r) return;
  for (int i = 0; i < r->ntags; i++) free(r->tags[i]);
  free(r->tags);
  free(r);
}

void sm__rest_response_clear(sm_rest_response *resp) {
  if (resp) sm__jbuf_free(&resp->body);
}

static sm_status *inval(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static sm_status *inval(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sm_status *s = sm_status_newv(SM_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return s;
}

/* ======================================================================== routing ==== */

typedef struct route {
  char name[256];
  int64_t version; /* 0: none */
  int has_version;
  char label[256];
  int has_label;
  char method[16];      /* POST: as written ("predict", "PREDICT" ...) */
  char subresource[16]; /* GET: "metadata" as written, or "" */
} route;

static int ci_prefix(const char *s, const char *p) { return !strncasecmp(s, p, strlen(p)); }

/* curl_easy_unescape: %XX becomes the byte; anything else stays. Returns the bytes written, or
 * cap when they did not fit. */
static size_t unescape(const char *s, size_t n, char *out, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (o + 1 >= cap) {
      out[o] = 0;
      return cap;
    }
    if (s[i] == '%' && i + 2 < n + 0 && isxdigit((unsigned char)s[i + 1]) && isxdigit((unsigned char)s[i + 2])) {
      char h[3] = {s[i + 1], s[i + 2], 0};
      out[o++] = (char)strtol(h, NULL, 16);
      i += 2;
    } else {
      out[o++] = s[i];
    }
  }
  out[o] = 0;
  return o;
}

/* A model name or label as sent, or 400: one with a NUL byte (%00) or too long to keep would be
 * served cut, as another name. */
static sm_status *path_name(const char *what, const char *s, size_t n, char *out, size_t cap) {
  size_t o = unescape(s, n, out, cap);
  if (o == cap) return inval("Malformed request: %s is longer than %zu bytes", what, cap - 1);
  if (strlen(out) != o) return inval("Malformed request: %s has a NUL byte", what);
  return NULL;
}

static size_t run_of(const char *s, int digits) {
  size_t n = 0;
  while (s[n] && (digits ? isdigit((unsigned char)s[n]) : (s[n] != '/' && s[n] != ':'))) n++;
  return n;
}

/* The optional "/versions/N" or "/labels/L" group, in the regex's order of preference. Returns
 * the text after it for alternative `alt` (0 versions, 1 labels, 2 none), or NULL. */
static const char *version_group(const char *p, int alt, const char **v, size_t *vn, const char **l, size_t *ln) {
  *v = *l = NULL;
  *vn = *ln = 0;
  if (alt == 0) {
    if (!ci_prefix(p, "/versions/")) return NULL;
    p += 10;
    size_t n = run_of(p, 1);
    if (!n) return NULL;
    *v = p, *vn = n;
    return p + n;
  }
  if (alt == 1) {
    if (!ci_prefix(p, "/labels/")) return NULL;
    p += 8;
    size_t n = run_of(p, 0);
    if (!n) return NULL;
    *l = p, *ln = n;
    return p + n;
  }
  return p;
}

/* ParseModelInfo. Returns an error status (bad version/label text) or NULL; *ok says whether the
 * path matched. */
static sm_status *parse_route(const char *method, const char *path, route *rt, int *ok) {
  memset(rt, 0, sizeof *rt);
  *ok = 0;
  const char *name = NULL, *v = NULL, *l = NULL;
  size_t namen = 0, vn = 0, ln = 0;
  if (!strcmp(method, "POST")) {
    /* (?i)/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?:(classify|regress|predict) */
    if (!ci_prefix(path, "/v1/models/")) return NULL;
    const char *p = path + 11;
    namen = run_of(p, 0);
    if (!namen) return NULL;
    name = p;
    p += namen;
    for (int alt = 0; alt < 3 && !*ok; alt++) {
      const char *q = version_group(p, alt, &v, &vn, &l, &ln);
      if (!q || *q != ':') continue;
      q++;
      if (!strcasecmp(q, "classify") || !strcasecmp(q, "regress") || !strcasecmp(q, "predict")) {
        snprintf(rt->method, sizeof rt->method, "%s", q);
        *ok = 1;
      }
    }
  } else if (!strcmp(method, "GET")) {
    /* (?i)/v1/models(?:/([^/:]+))?(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?(?:\/(metadata))? */
    if (!ci_prefix(path, "/v1/models")) return NULL;
    const char *p0 = path + 10;
    for (int has_name = 1; has_name >= 0 && !*ok; has_name--) {
      const char *p = p0;
      name = NULL, namen = 0;
      if (has_name) {
        if (*p != '/') continue;
        namen = run_of(p + 1, 0);
        if (!namen) continue;
        name = p + 1;
        p += 1 + namen;
      }
      for (int alt = 0; alt < 3 && !*ok; alt++) {
        const char *q = version_group(p, alt, &v, &vn, &l, &ln);
        if (!q) continue;
        for (int md = 1; md >= 0 && !*ok; md--) {
          const char *r = q;
          if (md) {
            if (!ci_prefix(r, "/metadata")) continue;
            snprintf(rt->subresource, sizeof rt->subresource, "%.8s", r + 1);
            r += 9;
          } else {
            rt->subresource[0] = 0;
          }
          if (!*r) *ok = 1;
        }
      }
    }
  }
  if (!*ok) return NULL;
  sm_status *s = name ? path_name("model name", name, namen, rt->name, sizeof rt->name) : NULL;
  if (s) return s;
  if (v) {
    char buf[32];
    if (vn >= sizeof buf) return inval("Failed to convert version: %.*s to numeric.", (int)vn, v);
    memcpy(buf, v, vn);
    buf[vn] = 0;
    errno = 0;
    char *end;
    long long x = strtoll(buf, &end, 10);
    if (errno || *end) return inval("Failed to convert version: %s to numeric.", buf);
    rt->version = x;
    rt->has_version = 1;
  }
  if (l) {
    if ((s = path_name("version label", l, ln, rt->label, sizeof rt->label))) return s;
    rt->has_label = 1;
  }
  return NULL;
}

/* ==================================================================== model status ==== */

static void put_i64_string(sm_jbuf *b, int64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "\"%" PRId64 "\"", v);
  sm__jbuf_puts(b, buf);
}

static sm_status *model_status(sm_rest *r, const route *rt, sm_jbuf *out) {
  if (!rt->name[0]) return inval("Missing model name in request.");
  sm_version_status *vs = NULL;
  int n = 0;
  sm_status *s = sm__manager_status(r->manager, rt->name, rt->has_version ? rt->version : 0,
                                   rt->has_label ? rt->label : NULL, &vs, &n);
  if (s) return s;
  /* MessageToJsonString with add_whitespace: one-space indentation */
  sm__jbuf_puts(out, "{\n \"model_version_status\": [");
  for (int i = 0; i < n; i++) {
    sm__jbuf_puts(out, i ? ",\n  {\n   \"version\": " : "\n  {\n   \"version\": ");
    put_i64_string(out, vs[i].version);
    sm__jbuf_puts(out, ",\n   \"state\": ");
    sm__jbuf_str(out, vs[i].state ? vs[i].state : "UNKNOWN", strlen(vs[i].state ? vs[i].state : "UNKNOWN"));
    sm__jbuf_puts(out, ",\n   \"status\": {\n    \"error_code\": ");
    const char *ec = vs[i].error_code ? vs[i].error_code : "OK";
    const char *em = vs[i].error_message ? vs[i].error_message : "";
    sm__jbuf_str(out, ec, strlen(ec));
    sm__jbuf_puts(out, ",\n    \"error_message\": ");
    sm__jbuf_str(out, em, strlen(em));
    sm__jbuf_puts(out, "\n   }\n  }");
  }
  sm__jbuf_puts(out, n ? "\n ]\n}\n" : "]\n}\n");
  sm__version_status_free(vs, n);
  return NULL;
}

/* ======================================================================= metadata ==== */

static void indent(sm_jbuf *b, int level) {
  sm__jbuf_puts(b, "\n");
  for (int i = 0; i < level; i++) sm__jbuf_puts(b, " ");
}

static void key(sm_jbuf *b, int level, const char *k, int first) {
  if (!first) sm__jbuf_puts(b, ",");
  indent(b, level);
  sm__jbuf_str(b, k, strlen(k));
  sm__jbuf_puts(b, ": ");
}

static const char *dt_name(int dt) {
  const char *n = sm_dtype_name(dt);
  return n ? n : "DT_INVALID";
}

static void shape_json(sm_jbuf *b, int level, const Tensorflow__TensorShapeProto *sh) {
  sm__jbuf_puts(b, "{");
  key(b, level + 1, "dim", 1);
  if (!sh->n_dim) {
    sm__jbuf_puts(b, "[]");
  } else {
    sm__jbuf_puts(b, "[");
    for (size_t d = 0; d < sh->n_dim; d++) {
      if (d) sm__jbuf_puts(b, ",");
      indent(b, level + 2);
      sm__jbuf_puts(b, "{");
      key(b, level + 3, "size", 1);
      put_i64_string(b, sh->dim[d]->size);
      key(b, level + 3, "name", 0);
      const char *nm = sh->dim[d]->name ? sh->dim[d]->name : "";
      sm__jbuf_str(b, nm, strlen(nm));
      indent(b, level + 2);
      sm__jbuf_puts(b, "}");
    }
    indent(b, level + 1);
    sm__jbuf_puts(b, "]");
  }
  key(b, level + 1, "unknown_rank", 0);
  sm__jbuf_puts(b, sh->unknown_rank ? "true" : "false");
  indent(b, level);
  sm__jbuf_puts(b, "}");
}

static void tensor_info_json(sm_jbuf *b, int level, const Tensorflow__TensorInfo *ti) {
  sm__jbuf_puts(b, "{");
  key(b, level + 1, "dtype", 1);
  sm__jbuf_str(b, dt_name((int)ti->dtype), strlen(dt_name((int)ti->dtype)));
  if (ti->tensor_shape) {
    key(b, level + 1, "tensor_shape", 0);
    shape_json(b, level + 1, ti->tensor_shape);
  }
  if (ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME) {
    key(b, level + 1, "name", 0);
    sm__jbuf_str(b, ti->name ? ti->name : "", strlen(ti->name ? ti->name : ""));
  } else if (ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_COO_SPARSE && ti->coo_sparse) {
    const Tensorflow__TensorInfo__CooSparse *c = ti->coo_sparse;
    key(b, level + 1, "coo_sparse", 0);
    sm__jbuf_puts(b, "{");
    const char *k[] = {"values_tensor_name", "indices_tensor_name", "dense_shape_tensor_name"};
    const char *v[] = {c->values_tensor_name, c->indices_tensor_name, c->dense_shape_tensor_name};
    for (int i = 0; i < 3; i++) {
      key(b, level + 2, k[i], i == 0);
      sm__jbuf_str(b, v[i] ? v[i] : "", strlen(v[i] ? v[i] : ""));
    }
    indent(b, level + 1);
    sm__jbuf_puts(b, "}");
  }
  indent(b, level);
  sm__jbuf_puts(b, "}");
}

typedef struct ti_entry {
  const char *key;
  const Tensorflow__TensorInfo *value;
} ti_entry;

static void tensor_map_json(sm_jbuf *b, int level, size_t n, void *const *entries) {
  if (!n) {
    sm__jbuf_puts(b, "{}");
    return;
  }
  sm__jbuf_puts(b, "{");
  for (size_t i = 0; i < n; i++) {
    /* InputsEntry and OutputsEntry share this layout: base, key, value */
    const Tensorflow__SignatureDef__InputsEntry *e = entries[i];
    key(b, level + 1, e->key ? e->key : "", i == 0);
    if (e->value) tensor_info_json(b, level + 1, e->value);
    else sm__jbuf_puts(b, "{}");
  }
  indent(b, level);
  sm__jbuf_puts(b, "}");
}

/* ---- TensorProto as protobuf's JSON printer writes it with TF Serving's options
 * (preserve_proto_field_names, always_print_primitive_fields): every scalar and repeated field,
 * int64/uint64 as strings, bytes as base64, non-finite floats as "NaN"/"Infinity"; an absent
 * tensor_shape is left out (a message field). */

typedef void (*put_elem_fn)(sm_jbuf *b, const void *arr, size_t i);

static void put_num(sm_jbuf *b, double v, int single) {
  if (isnan(v)) {
    sm__jbuf_puts(b, "\"NaN\"");
  } else if (isinf(v)) {
    sm__jbuf_puts(b, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buf[48];
    int n = sm__json_format_decimal(v, single, buf, sizeof buf);
    sm__jbuf_put(b, buf, (size_t)n);
  }
}
static void el_f32(sm_jbuf *b, const void *a, size_t i) { put_num(b, ((const float *)a)[i], 1); }
static void el_f64(sm_jbuf *b, const void *a, size_t i) { put_num(b, ((const double *)a)[i], 0); }
static void el_i32(sm_jbuf *b, const void *a, size_t i) {
  char buf[16];
  snprintf(buf, sizeof buf, "%" PRId32, ((const int32_t *)a)[i]);
  sm__jbuf_puts(b, buf);
}
static void el_u32(sm_jbuf *b, const void *a, size_t i) {
  char buf[16];
  snprintf(buf, sizeof buf, "%" PRIu32, ((const uint32_t *)a)[i]);
  sm__jbuf_puts(b, buf);
}
static void el_i64(sm_jbuf *b, const void *a, size_t i) { put_i64_string(b, ((const int64_t *)a)[i]); }
static void el_u64(sm_jbuf *b, const void *a, size_t i) {
  char buf[32];
  snprintf(buf, sizeof buf, "\"%" PRIu64 "\"", ((const uint64_t *)a)[i]);
  sm__jbuf_puts(b, buf);
}
static void el_bool(sm_jbuf *b, const void *a, size_t i) {
  sm__jbuf_puts(b, ((const protobuf_c_boolean *)a)[i] ? "true" : "false");
}
static void el_bytes(sm_jbuf *b, const void *a, size_t i) {
  const ProtobufCBinaryData *d = &((const ProtobufCBinaryData *)a)[i];
  sm__jbuf_puts(b, "\"");
  sm__jbuf_base64(b, d->data, d->len);
  sm__jbuf_puts(b, "\"");
}
/* ResourceHandleProto / VariantTensorDataProto values: not expected in a default, written as {} */
static void el_msg(sm_jbuf *b, const void *a, size_t i) {
  (void)a, (void)i;
  sm__jbuf_puts(b, "{}");
}

static void repeated(sm_jbuf *b, int level, const char *k, const void *arr, size_t n, put_elem_fn f) {
  key(b, level, k, 0);
  if (!n) {
    sm__jbuf_puts(b, "[]");
    return;
  }
  sm__jbuf_puts(b, "[");
  for (size_t i = 0; i < n; i++) {
    if (i) sm__jbuf_puts(b, ",");
    indent(b, level + 1);
    f(b, arr, i);
  }
  indent(b, level);
  sm__jbuf_puts(b, "]");
}

static void tensor_proto_json(sm_jbuf *b, int level, const Tensorflow__TensorProto *t) {
  int l = level + 1;
  sm__jbuf_puts(b, "{");
  key(b, l, "dtype", 1);
  sm__jbuf_str(b, dt_name((int)t->dtype), strlen(dt_name((int)t->dtype)));
  if (t->tensor_shape) {
    key(b, l, "tensor_shape", 0);
    shape_json(b, l, t->tensor_shape);
  }
  char buf[16];
  snprintf(buf, sizeof buf, "%" PRId32, t->version_number);
  key(b, l, "version_number", 0);
  sm__jbuf_puts(b, buf);
  key(b, l, "tensor_content", 0);
  el_bytes(b, &t->tensor_content, 0);
  repeated(b, l, "half_val", t->half_val, t->n_half_val, el_i32);
  repeated(b, l, "float_val", t->float_val, t->n_float_val, el_f32);
  repeated(b, l, "double_val", t->double_val, t->n_double_val, el_f64);
  repeated(b, l, "int_val", t->int_val, t->n_int_val, el_i32);
  repeated(b, l, "string_val", t->string_val, t->n_string_val, el_bytes);
  repeated(b, l, "scomplex_val", t->scomplex_val, t->n_scomplex_val, el_f32);
  repeated(b, l, "int64_val", t->int64_val, t->n_int64_val, el_i64);
  repeated(b, l, "bool_val", t->bool_val, t->n_bool_val, el_bool);
  repeated(b, l, "dcomplex_val", t->dcomplex_val, t->n_dcomplex_val, el_f64);
  repeated(b, l, "resource_handle_val", t->resource_handle_val, t->n_resource_handle_val, el_msg);
  repeated(b, l, "variant_val", t->variant_val, t->n_variant_val, el_msg);
  repeated(b, l, "uint32_val", t->uint32_val, t->n_uint32_val, el_u32);
  repeated(b, l, "uint64_val", t->uint64_val, t->n_uint64_val, el_u64);
  key(b, l, "float8_val", 0);
  el_bytes(b, &t->float8_val, 0);
  indent(b, level);
  sm__jbuf_puts(b, "}");
}

static void signature_json(sm_jbuf *b, int level, const Tensorflow__SignatureDef *sd) {
  sm__jbuf_puts(b, "{");
  key(b, level + 1, "inputs", 1);
  tensor_map_json(b, level + 1, sd->n_inputs, (void *const *)sd->inputs);
  key(b, level + 1, "outputs", 0);
  tensor_map_json(b, level + 1, sd->n_outputs, (void *const *)sd->outputs);
  key(b, level + 1, "method_name", 0);
  sm__jbuf_str(b, sd->method_name ? sd->method_name : "", strlen(sd->method_name ? sd->method_name : ""));
  key(b, level + 1, "defaults", 0);
  if (!sd->n_defaults) {
    sm__jbuf_puts(b, "{}");
  } else {
    sm__jbuf_puts(b, "{");
    for (size_t i = 0; i < sd->n_defaults; i++) {
      const Tensorflow__SignatureDef__DefaultsEntry *e = sd->defaults[i];
      key(b, level + 2, e->key ? e->key : "", i == 0);
      if (e->value) tensor_proto_json(b, level + 2, e->value);
      else sm__jbuf_puts(b, "{}");
    }
    indent(b, level + 1);
    sm__jbuf_puts(b, "}");
  }
  indent(b, level);
  sm__jbuf_puts(b, "}");
}

static sm_status *model_metadata(sm_rest *r, const route *rt, sm_jbuf *out) {
  if (!rt->name[0]) return inval("Missing model name in request.");
  sm_servable *sv = NULL;
  sm_status *s = sm__manager_acquire(r->manager, rt->name, rt->has_version ? rt->version : 0,
                                    rt->has_label ? rt->label : NULL, &sv);
  if (s) return s;
  Tensorflow__SavedModel *smp = NULL;
  const Tensorflow__MetaGraphDef *mg = NULL;
  s = sm_saved_model_read(sm__servable_path(sv), &smp);
  if (!s) s = sm_saved_model_find_meta_graph(smp, (const char *const *)r->tags, (size_t)r->ntags, &mg);
  if (!s) {
    /* ToJsonString(GetModelMetadataResponse): model_spec and the SignatureDefMap printed apart */
    sm__jbuf_puts(out, "{\n\"model_spec\":{");
    key(out, 1, "name", 1);
    sm__jbuf_str(out, rt->name, strlen(rt->name));
    key(out, 1, "signature_name", 0);
    sm__jbuf_puts(out, "\"\"");
    key(out, 1, "version", 0);
    put_i64_string(out, sm__servable_version(sv));
    sm__jbuf_puts(out, "\n},\n\"metadata\": {\"signature_def\": {");
    key(out, 1, "signature_def", 1);
    if (!mg->n_signature_def) {
      sm__jbuf_puts(out, "{}");
    } else {
      sm__jbuf_puts(out, "{");
      for (size_t i = 0; i < mg->n_signature_def; i++) {
        const Tensorflow__MetaGraphDef__SignatureDefEntry *e = mg->signature_def[i];
        key(out, 2, e->key ? e->key : "", i == 0);
        if (e->value) signature_json(out, 2, e->value);
        else sm__jbuf_puts(out, "{}");
      }
      indent(out, 1);
      sm__jbuf_puts(out, "}");
    }
    sm__jbuf_puts(out, "\n}");
    /* ours, beside TF Serving's: the signatures this runtime cannot run, and why (the metadata map
     * is open to other keys); absent when every signature runs, so TF Serving's output is kept */
    const sm_model *model = sm__servable_model(sv);
    int nw = sm_model_num_warnings(model);
    if (nw > 0) {
      sm__jbuf_puts(out, ",\n\"warnings\": [");
      for (int i = 0; i < nw; i++) {
        const char *w = sm_model_warning(model, i);
        if (i) sm__jbuf_puts(out, ", ");
        sm__jbuf_str(out, w, strlen(w));
      }
      sm__jbuf_puts(out, "]");
    }
    sm__jbuf_puts(out, "}\n}\n");
  }
  sm_saved_model_free(smp);
  sm__servable_release(sv);
  return s;
}

/* ======================================================================== running ==== */

typedef struct pctx {
  sm_rest *r;
  const route *rt;
  sm_servable *sv;
  const char *key;   /* key_own, or "serving_default" */
  char *key_own;
  const sm_tensor_info *in;
  int nin;
  sm_json_input *jin;
} pctx;

static const char *sig_key(const char *name) { return name && name[0] ? name : "serving_default"; }

static sm_status *acquire(pctx *c) {
  if (c->sv) return NULL;
  return sm__manager_acquire(c->r->manager, c->rt->name, c->rt->has_version ? c->rt->version : 0,
                            c->rt->has_label ? c->rt->label : NULL, &c->sv);
}

/* GetInfoMap. The decoder may ask more than once (its fast path, then the DOM one): each call
 * replaces the last, and the key is kept here, not in the decoder's buffers. */
static sm_status *predict_inputs(void *ctx, const char *signature_name, const sm_json_input **inputs, int *n) {
  pctx *c = ctx;
  sm_status *s = acquire(c);
  if (s) return s;
  sm_model *m = sm__servable_model(c->sv);
  free(c->key_own);
  free(c->jin);
  c->jin = NULL;
  c->key_own = NULL;
  c->key = "serving_default";
  if (signature_name && signature_name[0]) {
    size_t kl = strlen(signature_name);
    if (!(c->key_own = malloc(kl + 1))) return sm_status_new(SM_NO_MEMORY, "out of memory");
    memcpy(c->key_own, signature_name, kl + 1);
    c->key = c->key_own;
  }
  if (!sm_model_signature_method(m, c->key))
    return inval("Serving signature name: \"%s\" not found in signature def", c->key);
  s = sm_model_signature_inputs(m, c->key, &c->in, &c->nin);
  if (s) return s;
  c->jin = calloc((size_t)c->nin + 1, sizeof *c->jin);
  if (!c->jin) return sm_status_new(SM_NO_MEMORY, "out of memory");
  for (int i = 0; i < c->nin; i++) {
    c->jin[i].alias = c->in[i].alias;
    c->jin[i].dtype = sm_dtype_base(c->in[i].dtype);
  }
  *inputs = c->jin;
  *n = c->nin;
  return NULL;
}

/* UNIMPLEMENTED, with the load's reason, for a signature this runtime cannot run: answered
 * before any plan is tried, so such requests cost nothing. */
static sm_status *runnable(const sm_model *m, const char *key) {
  const char *w = sm_model_signature_warning(m, key);
  return w ? sm_status_new(SM_UNIMPLEMENTED, "%s", w) : NULL;
}

/* Session::Run on the signature's tensor names, or through the batcher. */
static sm_status *run_signature(sm_rest *r, sm_servable *sv, const char *key, const char *const *aliases,
                                sm_tensor *const *inputs, int nin, const sm_tensor_info *outs, int nout,
                                sm_tensor **outputs, const sm_run_options *ro) {
  sm_model *m = sm__servable_model(sv);
  const sm_tensor_info *ins;
  int nins;
  sm_status *s = runnable(m, key);
  if (s) return s;
  s = sm_model_signature_inputs(m, key, &ins, &nins);
  if (s) return s;
  if (r->batcher) {
    const char **oa = calloc((size_t)nout + 1, sizeof *oa);
    if (!oa) return sm_status_new(SM_NO_MEMORY, "out of memory");
    for (int i = 0; i < nout; i++) oa[i] = outs[i].alias;
    s = r->batcher_run(r->batcher, sv, key, aliases, inputs, nin, oa, nout, outputs, ro);
    free(oa);
    return s;
  }
  const char **feeds = calloc((size_t)nin + 1, sizeof *feeds);
  const char **fetches = calloc((size_t)nout + 1, sizeof *fetches);
  if (!feeds || !fetches) {
    free(feeds), free(fetches);
    return sm_status_new(SM_NO_MEMORY, "out of memory");
  }
  for (int i = 0; i < nin && !s; i++) {
    feeds[i] = NULL;
    for (int j = 0; j < nins; j++)
      if (!strcmp(ins[j].alias, aliases[i])) feeds[i] = ins[j].name;
    if (!feeds[i]) s = inval("input tensor alias not found in signature: %s", aliases[i]);
  }
  for (int i = 0; i < nout; i++) fetches[i] = outs[i].name;
  if (!s) s = sm_model_session_run_opts(m, feeds, inputs, nin, fetches, nout, NULL, 0, outputs, ro);
  free(feeds);
  free(fetches);
  return s;
}

/* After a run that finished: the answer is late all the same when the deadline passed during
 * the last step (the executor checks between steps). */
static sm_status *deadline_check(sm_rest *r, const sm_run_options *ro) {
  if (ro->deadline_us > 0 && sm_monotonic_us() > ro->deadline_us)
    return sm_status_new(SM_DEADLINE_EXCEEDED, "Deadline exceeded: the request took longer than %" PRId64 " ms",
                         r->timeout_ms);
  return NULL;
}

/* One predict request from its body to its answer; parked between predict_begin and predict_end
 * while its batch forms and runs (sm__rest_start). */
struct sm_rest_pending {
  sm_rest *r;
  route rt;
  pctx c;
  sm_predict_request req;
  const sm_tensor_info *outs;
  int nout;
  sm_tensor **outputs;
  const char **oa; /* the output aliases, for the batcher */
  sm_run_options ro;
  sm_status *s;    /* the run's */
  void (*wake)(void *);
  void *wake_arg;
};

/* Decodes the request and gets its outputs ready to be filled. */
static sm_status *predict_begin(sm_rest_pending *p, const char *body, size_t len) {
  p->c = (pctx){.r = p->r, .rt = &p->rt};
  sm_status *s = sm__json_parse_predict(body, len, predict_inputs, &p->c, &p->req);
  if (!s) s = sm_model_signature_outputs(sm__servable_model(p->c.sv), p->c.key, &p->outs, &p->nout);
  if (!s && !(p->outputs = calloc((size_t)p->nout + 1, sizeof *p->outputs)))
    s = sm_status_new(SM_NO_MEMORY, "out of memory");
  return s;
}

/* After the run (its status s): writes the answer, frees what the request held. */
static sm_status *predict_end(sm_rest_pending *p, sm_status *s, sm_jbuf *out) {
  if (!s) s = deadline_check(p->r, &p->ro);
  const char **names = s ? NULL : calloc((size_t)p->nout + 1, sizeof *names);
  if (!s && !names) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  for (int i = 0; !s && i < p->nout; i++) names[i] = p->outs[i].alias;
  if (!s) s = sm__json_write_tensors(out, names, p->outputs, p->nout, p->req.format);
  free(names);
  if (p->outputs)
    for (int i = 0; i < p->nout; i++) sm_tensor_free(p->outputs[i]);
  free(p->outputs);
  free(p->oa);
  sm__predict_request_clear(&p->req);
  free(p->c.jin);
  free(p->c.key_own);
  sm__servable_release(p->c.sv);
  return s;
}

static sm_status *predict(sm_rest *r, const route *rt, const char *body, size_t len, sm_jbuf *out,
                          const sm_run_options *ro) {
  sm_rest_pending p = {.r = r, .rt = *rt, .ro = *ro};
  sm_status *s = predict_begin(&p, body, len);
  if (!s)
    s = run_signature(r, p.c.sv, p.c.key, (const char *const *)p.req.aliases, p.req.tensors, p.req.n, p.outs, p.nout,
                      p.outputs, ro);
  return predict_end(&p, s, out);
}

static const sm_tensor_info *find_info(const sm_tensor_info *v, int n, const char *alias) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i].alias, alias)) return &v[i];
  return NULL;
}

/* Classify and regress over serialized tf.Examples (PreProcess*, Run*, PostProcess* of
 * classifier.cc / regressor.cc): checks the signature, runs it, checks the outputs. Shared with
 * the gRPC API (rest.h). */
sm_status *sm__rest_run_examples(sm_rest *r, sm_servable *sv, const char *key, int classify,
                                 uint8_t *const *examples, const size_t *lens, int64_t n, const sm_run_options *ro,
                                 sm_examples_outputs *res) {
  memset(res, 0, sizeof *res);
  sm_tensor *in = NULL, **outputs = res->t;
  sm_model *m = sm__servable_model(sv);
  sm_status *s = NULL;
  if (!sm_model_signature_method(m, key)) return inval("No signature was found with the name: %s", key);
  if ((s = runnable(m, key))) return s;
  const sm_tensor_info *ins, *outs;
  int nins, nouts;
  s = sm_model_signature_inputs(m, key, &ins, &nins);
  if (!s) s = sm_model_signature_outputs(m, key, &outs, &nouts);
  if (s) return s;
  if (nins != 1) return inval("Expected one input Tensor.");
  const sm_tensor_info *cls = NULL, *scr = NULL, *reg = NULL;
  if (classify) {
    if (nouts != 1 && nouts != 2) return inval("Expected one or two output Tensors, found %d", nouts);
    if (!find_info(ins, nins, "inputs")) return inval("No classification inputs found in SignatureDef: %s", key);
    cls = find_info(outs, nouts, "classes");
    scr = find_info(outs, nouts, "scores");
    if (!cls && !scr)
      return inval("Expected classification signature outputs to contain at least one of \"classes\" or "
                   "\"scores\". Signature was: %s",
                   key);
  } else {
    if (nouts != 1) return inval("Expected one output Tensor.");
    if (!find_info(ins, nins, "inputs")) return inval("No regression inputs found in SignatureDef: %s", key);
    reg = find_info(outs, nouts, "outputs");
    if (!reg) return inval("No regression outputs found in SignatureDef: %s", key);
  }
  s = sm_tensor_new(SM_STRING, 1, &n, &in);
  for (int64_t i = 0; !s && i < n; i++) s = sm_tensor_set_string(in, i, examples[i], lens[i]);
  if (s) goto done;
  const char *feed = ins[0].name;
  const char *fetch[2];
  int nf = 0;
  if (classify) {
    if (cls) fetch[nf++] = cls->name;
    if (scr) fetch[nf++] = scr->name;
  } else {
    fetch[nf++] = reg->name;
  }
  s = sm_model_session_run_opts(m, &feed, &in, 1, fetch, nf, NULL, 0, outputs, ro);
  if (!s) s = deadline_check(r, ro);
  if (s) goto done;
  res->n = n;
  if (classify) {
    const sm_tensor *ct = cls ? outputs[0] : NULL, *st = scr ? outputs[cls ? 1 : 0] : NULL;
    char sh[256];
    if (ct) {
      if (sm_tensor_rank(ct) != 2) {
        s = inval("Expected Tensor shape: [batch_size num_classes] but got %s",
                  sm_shape_str(sm_tensor_rank(ct), sm_tensor_dims(ct), sh, sizeof sh));
        goto done;
      }
      if (sm_tensor_dtype(ct) != SM_STRING) {
        s = inval("Expected classes Tensor of DT_STRING. Got: %s", dt_name(sm_tensor_dtype(ct)));
        goto done;
      }
      if (sm_tensor_dims(ct)[0] != n) {
        s = inval("Expected classes output batch size of %" PRId64 ". Got: %" PRId64, n, sm_tensor_dims(ct)[0]);
        goto done;
      }
    }
    if (st) {
      if (sm_tensor_rank(st) != 2) {
        s = inval("Expected Tensor shape: [batch_size num_classes] but got %s",
                  sm_shape_str(sm_tensor_rank(st), sm_tensor_dims(st), sh, sizeof sh));
        goto done;
      }
      if (sm_tensor_dtype(st) != SM_FLOAT) {
        s = inval("Expected scores Tensor of DT_FLOAT. Got: %s", dt_name(sm_tensor_dtype(st)));
        goto done;
      }
      if (sm_tensor_dims(st)[0] != n) {
        s = inval("Expected scores output batch size of %" PRId64 ". Got: %" PRId64, n, sm_tensor_dims(st)[0]);
        goto done;
      }
    }
    if (ct && st && sm_tensor_dims(ct)[1] != sm_tensor_dims(st)[1]) {
      s = inval("Tensors class and score should match in dim_size(1). Got %" PRId64 " vs. %" PRId64,
                sm_tensor_dims(ct)[1], sm_tensor_dims(st)[1]);
      goto done;
    }
    res->classes = ct;
    res->scores = st;
    res->k = ct ? sm_tensor_dims(ct)[1] : sm_tensor_dims(st)[1];
  } else {
    const sm_tensor *t = outputs[0];
    int rk = sm_tensor_rank(t);
    char sh[256];
    if (!(rk == 1 || (rk == 2 && sm_tensor_dims(t)[1] == 1))) {
      s = inval("Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got %s",
                sm_shape_str(rk, sm_tensor_dims(t), sh, sizeof sh));
      goto done;
    }
    if (sm_tensor_dims(t)[0] != n) {
      s = inval("Input batch size did not match output batch size: %" PRId64 " vs. %" PRId64, n,
                sm_tensor_dims(t)[0]);
      goto done;
    }
    if (sm_tensor_dtype(t) != SM_FLOAT) {
      s = inval("Expected output Tensor of DT_FLOAT.  Got: %s", dt_name(sm_tensor_dtype(t)));
      goto done;
    }
    res->values = sm_tensor_data(t);
  }
done:
  sm_tensor_free(in);
  if (s) sm__examples_outputs_clear(res);
  return s;
}

void sm__examples_outputs_clear(sm_examples_outputs *res) {
  if (!res) return;
  sm_tensor_free(res->t[0]);
  sm_tensor_free(res->t[1]);
  memset(res, 0, sizeof *res);
}

static sm_status *classify_regress(sm_rest *r, const route *rt, int classify, const char *body, size_t len,
                                   sm_jbuf *out, const sm_run_options *ro) {
  sm_examples_request req;
  sm_servable *sv = NULL;
  sm_examples_outputs res = {0};
  sm_status *s = sm__json_parse_examples(body, len, &req);
  if (s) return s;
  s = sm__manager_acquire(r->manager, rt->name, rt->has_version ? rt->version : 0, rt->has_label ? rt->label : NULL,
                         &sv);
  if (!s)
    s = sm__rest_run_examples(r, sv, sig_key(req.signature_name), classify, req.examples, req.lens, req.n, ro, &res);
  if (!s && classify)
    s = sm__json_write_classification(out, res.n, res.k, res.classes, res.scores ? sm_tensor_data(res.scores) : NULL);
  else if (!s)
    s = sm__json_write_regression(out, res.values, res.n);
  sm__examples_outputs_clear(&res);
  sm__servable_release(sv);
  sm__examples_request_clear(&req);
  return s;
}

/* ---- shared with the gRPC API ---- */

sm_manager *sm__rest_manager(const sm_rest *r) { return r->manager; }

const char *const *sm__rest_tags(const sm_rest *r, int *n) {
  *n = r->ntags;
  return (const char *const *)r->tags;
}

sm_status *sm__rest_run(sm_rest *r, sm_servable *sv, const char *key, const char *const *aliases,
                        sm_tensor *const *inputs, int nin, const sm_tensor_info *outs, int nout, sm_tensor **outputs,
                        const sm_run_options *ro) {
  return run_signature(r, sv, key, aliases, inputs, nin, outs, nout, outputs, ro);
}

/* ======================================================================= dispatch ==== */

static void respond(sm_status *s, sm_rest_response *out);

void sm__rest_handle(sm_rest *r, const char *method, const char *path, const char *body, size_t len,
                    sm_rest_response *out) {
  memset(out, 0, sizeof *out);
  out->api = "";
  sm_run_options ro = {.deadline_us = r->timeout_ms > 0 ? sm_monotonic_us() + r->timeout_ms * 1000 : 0,
                       .max_run_bytes = r->max_run_bytes};
  route rt;
  int ok = 0;
  sm_status *s = parse_route(method, path, &rt, &ok);
  if (!s) {
    snprintf(out->model_name, sizeof out->model_name, "%s", rt.name);
    if (ok && !strcmp(method, "POST")) {
      if (!strcmp(rt.method, "classify") || !strcmp(rt.method, "regress")) {
        out->api = rt.method[0] == 'c' ? "classify" : "regress";
        s = classify_regress(r, &rt, rt.method[0] == 'c', body, len, &out->body, &ro);
      } else if (!strcmp(rt.method, "predict")) {
        out->api = "predict";
        s = predict(r, &rt, body, len, &out->body, &ro);
      } else {
        s = inval("Malformed request: %s %s", method, path);
      }
    } else if (ok && !strcmp(method, "GET")) {
      if (!strcmp(rt.subresource, "metadata")) {
        out->api = "metadata";
        s = model_metadata(r, &rt, &out->body);
      } else {
        out->api = "status";
        s = model_status(r, &rt, &out->body);
      }
    } else {
      s = inval("Malformed request: %s %s", method, path);
    }
  }
  respond(s, out);
}

/* The response for a handler's status s (NULL: out->body is the answer). */
static void respond(sm_status *s, sm_rest_response *out) {
  if (!s && out->body.oom) s = sm_status_new(SM_NO_MEMORY, "out of memory writing the response");
  if (s) {
    sm_code c = sm_status_code(s);
    out->http_status = sm__rest_http_status(c);
    out->code = tf_code_name(c);
    sm__jbuf_free(&out->body);
    sm__json_write_error(&out->body, sm_status_message(s));
    sm_status_free(s);
  } else {
    out->http_status = 200;
    out->code = "OK";
  }
}

/* ============================================================== parked requests ==== */

int sm__rest_can_park(const sm_rest *r, const char *method, const char *path) {
  if (!r->batcher_submit || !method || strcmp(method, "POST") != 0) return 0;
  route rt;
  int ok = 0;
  sm_status *s = parse_route(method, path, &rt, &ok);
  int parsed = !s;
  sm_status_free(s);
  return parsed && ok && !strcmp(rt.method, "predict");
}

static void predict_ran(void *arg, sm_status *s) {
  sm_rest_pending *p = arg;
  p->s = s;
  p->wake(p->wake_arg);
}

/* The run of predict_begin's request through the batcher, answered in predict_ran. */
static void predict_submit(sm_rest_pending *p) {
  sm_model *m = sm__servable_model(p->c.sv);
  sm_status *s = runnable(m, p->c.key);
  if (!s && !(p->oa = calloc((size_t)p->nout + 1, sizeof *p->oa))) s = sm_status_new(SM_NO_MEMORY, "out of memory");
  if (s) {
    predict_ran(p, s);
    return;
  }
  for (int i = 0; i < p->nout; i++) p->oa[i] = p->outs[i].alias;
  p->r->batcher_submit(p->r->batcher, p->c.sv, p->c.key, (const char *const *)p->req.aliases, p->req.tensors,
                       p->req.n, p->oa, p->nout, p->outputs, &p->ro, predict_ran, p);
}

sm_rest_pending *sm__rest_start(sm_rest *r, const char *method, const char *path, const char *body, size_t len,
                                void (*wake)(void *), void *arg, sm_rest_response *out) {
  sm_rest_pending *p = sm__rest_can_park(r, method, path) ? calloc(1, sizeof *p) : NULL;
  if (!p) {
    sm__rest_handle(r, method, path, body, len, out);
    wake(arg);
    return NULL;
  }
  int ok = 0;
  sm_status *s = parse_route(method, path, &p->rt, &ok); /* as sm__rest_can_park found: ok */
  p->r = r;
  p->wake = wake;
  p->wake_arg = arg;
  p->ro = (sm_run_options){.deadline_us = r->timeout_ms > 0 ? sm_monotonic_us() + r->timeout_ms * 1000 : 0,
                           .max_run_bytes = r->max_run_bytes};
  if (!s) s = predict_begin(p, body, len);
  if (s)
    predict_ran(p, s);
  else
    predict_submit(p);
  return p;
}

void sm__rest_finish(sm_rest_pending *p, sm_rest_response *out) {
  memset(out, 0, sizeof *out);
  out->api = "predict";
  snprintf(out->model_name, sizeof out->model_name, "%s", p->rt.name);
  respond(predict_end(p, p->s, &out->body), out);
  free(p);
}

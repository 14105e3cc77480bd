/* config.c - model_config_file: TF Serving's ModelServerConfig text proto (model_config_list of
 * ModelConfig with model_version_policy and version_labels) read into sm_model_config entries.
 * The schema is our transcription in proto/model_server_config.proto; the text goes through the
 * generic pbtxt parser, so anything TF Serving's TextFormat accepts for it parses here. */
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "model_server_config.pb-c.h"
#include "savedmodel/pbtxt.h"
#include "serve/manager.h"

struct sm_model_config_list {
  sm_model_config *v;
  int n;
};

int sm__model_config_list_count(const sm_model_config_list *l) { return l ? l->n : 0; }

const sm_model_config *sm__model_config_list_at(const sm_model_config_list *l, int i) {
  return l && i >= 0 && i < l->n ? &l->v[i] : NULL;
}

void sm__model_config_list_free(sm_model_config_list *l) {
  if (!l) return;
  for (int i = 0; i < l->n; i++) {
    sm_model_config *c = &l->v[i];
    free((char *)c->name);
    free((char *)c->base_path);
    free((int64_t *)c->versions);
    for (int k = 0; k < c->nlabels; k++) free((char *)c->labels[k].label);
    free((sm_version_label *)c->labels);
  }
  free(l->v);
  free(l);
}

typedef Tensorflow__Serving__FileSystemStoragePathSourceConfig__ServableVersionPolicy policy_pb;

/* One ModelConfig; fields as ServerCore checks them (GetPlatform). */
static sm_status *convert_one(const char *path, int idx, const Tensorflow__Serving__ModelConfig *mc,
                              sm_model_config *c) {
  const char *name = mc->name && *mc->name ? mc->name : NULL;
  if (!name) return sm_status_new(SM_INVALID_ARGUMENT, "%s: config %d has no name", path, idx);
  if (mc->model_type != TENSORFLOW__SERVING__MODEL_TYPE__MODEL_TYPE_UNSPECIFIED && mc->model_platform &&
      *mc->model_platform)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: model %s: Illegal setting both model_type(deprecated) and model_platform.",
                         path, name);
  const char *platform = mc->model_platform && *mc->model_platform ? mc->model_platform : "tensorflow";
  if (mc->model_type == TENSORFLOW__SERVING__MODEL_TYPE__OTHER) platform = "other";
  if (strcmp(platform, "tensorflow") != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: Model %s requests unsupported platform %s", path, name, platform);
  if (!mc->base_path || !*mc->base_path)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: model %s has no base_path", path, name);
  if (!(c->name = strdup(name)) || !(c->base_path = strdup(mc->base_path)))
    return sm_status_new(SM_NO_MEMORY, "%s: out of memory", path);
  c->policy = SM_POLICY_LATEST;
  c->latest_n = 1;
  const policy_pb *p = mc->model_version_policy;
  if (p) {
    switch (p->policy_choice_case) {
      case TENSORFLOW__SERVING__FILE_SYSTEM_STORAGE_PATH_SOURCE_CONFIG__SERVABLE_VERSION_POLICY__POLICY_CHOICE_ALL:
        c->policy = SM_POLICY_ALL;
        break;
      case TENSORFLOW__SERVING__FILE_SYSTEM_STORAGE_PATH_SOURCE_CONFIG__SERVABLE_VERSION_POLICY__POLICY_CHOICE_SPECIFIC: {
        c->policy = SM_POLICY_SPECIFIC;
        size_t nv = p->specific ? p->specific->n_versions : 0;
        if (nv > 1000000) return sm_status_new(SM_OUT_OF_RANGE, "%s: model %s lists %zu versions", path, name, nv);
        int64_t *vs = calloc(nv ? nv : 1, sizeof *vs);
        if (!vs) return sm_status_new(SM_NO_MEMORY, "%s: out of memory", path);
        if (nv) memcpy(vs, p->specific->versions, nv * sizeof *vs);
        c->versions = vs;
        c->nversions = (int)nv;
        break;
      }
      case TENSORFLOW__SERVING__FILE_SYSTEM_STORAGE_PATH_SOURCE_CONFIG__SERVABLE_VERSION_POLICY__POLICY_CHOICE_LATEST:
        /* num_versions 0 means the default, 1 (FileSystemStoragePathSource takes max(n, 1)). */
        if (p->latest && p->latest->num_versions > 0) c->latest_n = p->latest->num_versions;
        break;
      default:
        break;
    }
  }
  size_t nl = mc->n_version_labels;
  if (nl > 100000) return sm_status_new(SM_OUT_OF_RANGE, "%s: model %s has %zu version labels", path, name, nl);
  sm_version_label *ls = calloc(nl ? nl : 1, sizeof *ls);
  if (!ls) return sm_status_new(SM_NO_MEMORY, "%s: out of memory", path);
  c->labels = ls;
  /* A map: a key given twice keeps its last value, as protobuf's text parser does. */
  int n = 0;
  for (size_t i = 0; i < nl; i++) {
    const char *key = mc->version_labels[i]->key ? mc->version_labels[i]->key : "";
    int at = n;
    for (int k = 0; k < n; k++)
      if (strcmp(ls[k].label, key) == 0) at = k;
    if (at == n) {
      if (!(ls[n].label = strdup(key))) return sm_status_new(SM_NO_MEMORY, "%s: out of memory", path);
      n++;
      c->nlabels = n;
    }
    ls[at].version = mc->version_labels[i]->value;
  }
  return NULL;
}

/* A decoded ModelServerConfig (a file's, or a HandleReloadConfigRequest's); `path` names it in errors. */
sm_status *sm__model_config_list_from_proto(const Tensorflow__Serving__ModelServerConfig *cfg, const char *path,
                                            sm_model_config_list **out) {
  *out = NULL;
  sm_status *s = NULL;
  sm_model_config_list *l = calloc(1, sizeof *l);
  if (!l) return sm_status_new(SM_NO_MEMORY, "%s: out of memory", path);
  if (cfg->config_case == TENSORFLOW__SERVING__MODEL_SERVER_CONFIG__CONFIG_CUSTOM_MODEL_CONFIG) {
    s = sm_status_new(SM_UNIMPLEMENTED, "%s: custom_model_config is not supported; use model_config_list", path);
  } else if (cfg->config_case == TENSORFLOW__SERVING__MODEL_SERVER_CONFIG__CONFIG_MODEL_CONFIG_LIST &&
             cfg->model_config_list) {
    size_t n = cfg->model_config_list->n_config;
    if (n > 100000) s = sm_status_new(SM_OUT_OF_RANGE, "%s: %zu models in model_config_list", path, n);
    if (!s && n && !(l->v = calloc(n, sizeof *l->v))) s = sm_status_new(SM_NO_MEMORY, "%s: out of memory", path);
    for (size_t i = 0; !s && i < n; i++) {
      s = convert_one(path, (int)i, cfg->model_config_list->config[i], &l->v[i]);
      l->n = (int)i + 1; /* the entry, even half filled, is freed with the list */
    }
    for (int i = 0; !s && i < l->n; i++)
      for (int k = 0; k < i; k++)
        if (strcmp(l->v[i].name, l->v[k].name) == 0 && !s)
          s = sm_status_new(SM_INVALID_ARGUMENT, "%s: Illegal to list model %s multiple times in config list", path,
                            l->v[i].name);
  }
  /* CONFIG_NOT_SET: an empty list (TF Serving takes no action for an empty config). */
  if (s) {
    sm__model_config_list_free(l);
    return s;
  }
  *out = l;
  return NULL;
}

sm_status *sm__model_config_list_read(const char *path, sm_model_config_list **out) {
  *out = NULL;
  char *text = NULL;
  size_t len = 0;
  sm_status *s = sm__file_read_all(path, &text, &len);
  if (s) return sm_status_prefix(s, "reading model config file");
  ProtobufCMessage *msg = NULL;
  s = sm_pbtxt_parse(&tensorflow__serving__model_server_config__descriptor, text, len, path, &msg);
  free(text);
  if (s) return s;
  s = sm__model_config_list_from_proto((Tensorflow__Serving__ModelServerConfig *)msg, path, out);
  protobuf_c_message_free_unpacked(msg, NULL);
  return s;
}

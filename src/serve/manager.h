/* manager.h - TensorFlow Serving's model manager: which versions of which models are served.
 *
 * Each model has a base path whose numbered subdirectories (1/, 2/, 17/ ...; anything else is
 * ignored) are versions. A version policy picks the versions to serve: the latest N (default 1),
 * all, or specific ones. A poll pass (every file_system_poll_wait_seconds, or sm__manager_poll)
 * loads newly wanted versions in the background, makes a version available only once it has
 * loaded, then unloads the versions no longer wanted; a version that fails to load is reported
 * in its status (state END, error) and whatever was serving keeps serving. A version is loaded
 * only when complete (a graph that restores variables needs variables/ whose bundle opens) and
 * its files have settled (settle_seconds), so a directory being copied in is never loaded half
 * way; a failed version is tried again when its files change. Labels ("stable",
 * "canary") name versions. The set of models can be replaced at run time (model_config_file
 * reloads).
 *
 * Requests take a reference on one servable (sm__manager_acquire) and drop it when done
 * (sm__servable_release): a version being unloaded is freed only after its last request ends.
 * Every function is safe to call from many threads. */
#ifndef SM_SERVE_MANAGER_H
#define SM_SERVE_MANAGER_H
#include <stdint.h>

#include "savedmodel/model.h"
#include "savedmodel/status.h"

enum { SM_POLICY_LATEST = 0, SM_POLICY_ALL = 1, SM_POLICY_SPECIFIC = 2 };

typedef struct sm_version_label {
  const char *label;
  int64_t version;
} sm_version_label;

/* One entry of model_config_list (TF Serving's ModelConfig). Strings are copied by the manager. */
typedef struct sm_model_config {
  const char *name;
  const char *base_path;
  int policy;               /* SM_POLICY_* */
  int64_t latest_n;         /* LATEST: how many (default 1) */
  const int64_t *versions;  /* SPECIFIC: which */
  int nversions;
  const sm_version_label *labels;
  int nlabels;
} sm_model_config;

/* A parsed model_config_file (text-format ModelServerConfig with a model_config_list). */
typedef struct sm_model_config_list sm_model_config_list;
sm_status *sm__model_config_list_read(const char *path, sm_model_config_list **out);
int sm__model_config_list_count(const sm_model_config_list *l);
const sm_model_config *sm__model_config_list_at(const sm_model_config_list *l, int i);
void sm__model_config_list_free(sm_model_config_list *l); /* NULL-safe */
/* The same from a decoded ModelServerConfig (HandleReloadConfigRequest); `what` names it in errors. */
struct Tensorflow__Serving__ModelServerConfig;
sm_status *sm__model_config_list_from_proto(const struct Tensorflow__Serving__ModelServerConfig *cfg, const char *what,
                                            sm_model_config_list **out);

typedef struct sm_manager_options {
  double poll_wait_seconds; /* 0 = no background polling (call sm__manager_poll) */
  int num_threads;          /* for each loaded model's kernels (sm_load_options) */
  const char *const *tags;  /* tag set to load (NULL: {"serve"}) */
  int ntags;
  /* TF Serving's --allow_version_labels_for_unavailable_models: a label may name a version that
   * is not AVAILABLE yet (only when the label is new or keeps its version). Without it a config
   * whose labels name versions not AVAILABLE is refused (FAILED_PRECONDITION), as TF Serving. */
  int allow_version_labels_for_unavailable_models;
  /* A version directory is loaded only once its files have stopped changing for this long
   * (unchanged across passes that far apart, or every mtime older); 0: at first sight. */
  double settle_seconds;
  int allow_external_files; /* sm_load_options.allow_external_files for every model loaded */
  int device;               /* sm_load_options.device for every model loaded (SM_DEVICE_CPU / GPU) */
  int max_num_load_retries;  /* a failed load is tried this many more times (TF Serving's flag) */
  int64_t load_retry_interval_micros; /* between tries */
} sm_manager_options;

typedef struct sm_manager sm_manager;
sm_status *sm__manager_new(const sm_manager_options *opts, sm_manager **out);
/* Stops polling, waits for loads in flight, unloads everything (after in-flight requests). */
void sm__manager_free(sm_manager *m); /* NULL-safe */

/* Replaces the set of served models (names are the keys: a model kept keeps its loaded
 * versions). Runs one poll pass before returning, so the first versions are loaded (or have
 * failed) when it returns. */
sm_status *sm__manager_set_config(sm_manager *m, const sm_model_config *models, int n);
/* Re-reads the config file every `seconds` (0: never) and applies it when it changed. */
sm_status *sm__manager_watch_config_file(sm_manager *m, const char *path, double seconds);
/* One poll pass over every model's base path; waits for the loads it starts. */
void sm__manager_poll(sm_manager *m);

/* ---- requests ---- */
typedef struct sm_servable sm_servable;
/* The servable for model `name`: version > 0 that version, else label != NULL that label's
 * version, else the highest available version. Errors (status codes as TF Serving's):
 * NOT_FOUND "Servable not found for request: Specific(M, 3)" / "Latest(M)", and
 * INVALID_ARGUMENT for an unknown label. */
sm_status *sm__manager_acquire(sm_manager *m, const char *name, int64_t version, const char *label,
                              sm_servable **out);
void sm__servable_release(sm_servable *s); /* NULL-safe */
sm_model *sm__servable_model(const sm_servable *s);
const char *sm__servable_name(const sm_servable *s);
int64_t sm__servable_version(const sm_servable *s);
const char *sm__servable_path(const sm_servable *s); /* the version's directory */

/* ---- status (GET /v1/models/M) ---- */
typedef struct sm_version_status {
  int64_t version;
  const char *state;         /* "START", "LOADING", "AVAILABLE", "UNLOADING", "END" */
  const char *error_code;    /* "OK" or TF's code name ("NOT_FOUND", "UNKNOWN", ...) */
  const char *error_message; /* "" when OK */
} sm_version_status;
/* Every version the manager knows of model `name` (version 0) or just `version` (or the version
 * `label` names), sorted by descending version. NOT_FOUND like acquire when none. The caller frees
 * the array with sm__version_status_free. */
sm_status *sm__manager_status(sm_manager *m, const char *name, int64_t version, const char *label,
                             sm_version_status **out, int *n);
void sm__version_status_free(sm_version_status *v, int n);

/* Counters for /monitoring/prometheus/metrics: loads attempted/failed per model. */
typedef struct sm_manager_counts {
  uint64_t loads, load_failures, unloads;
} sm_manager_counts;
sm_manager_counts sm__manager_counts_get(sm_manager *m);

#endif

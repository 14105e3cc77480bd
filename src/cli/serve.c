/* serve.c - `savedmodel serve`: a TensorFlow Serving-compatible REST model server, with
 * tensorflow_model_server's flag names. One model (--model_name, --model_base_path) or several
 * (--model_config_file, reloaded every --model_config_file_poll_wait_seconds); versions polled
 * every --file_system_poll_wait_seconds; SIGTERM or SIGINT stop accepting, let requests in flight
 * finish, and exit 0. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "runtime/kernel.h"
#include "savedmodel/version.h"
#include "serve/batch.h"
#include "serve/http.h"
#include "serve/limits.h"
#include "serve/manager.h"
#include "serve/rest.h"
#ifdef SM_HAVE_GRPC
#include "grpc/grpc_server.h"
#endif

static const char usage[] =
    "usage: savedmodel serve --model_name M --model_base_path DIR [--rest_api_port 8501] [flags]\n"
    "       savedmodel serve --model_config_file F [--rest_api_port 8501] [flags]\n"
    "\n"
    "Serves SavedModels over TensorFlow Serving's REST API (/v1/models/...) and, with --port or\n"
    "--grpc_socket_path, its gRPC API (PredictionService, ModelService), with TF Serving's flag names.\n";

static int parse_long(const char *name, const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end || end == v || x < lo || x > hi)
    return sm__cli_error(2, "serve: --%s=%s: expected an integer in [%ld, %ld]", name, v, lo, hi);
  *out = x;
  return 0;
}

static int parse_double(const char *name, const char *v, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || *end || end == v || !(x >= 0) || x > 1e9)
    return sm__cli_error(2, "serve: --%s=%s: expected a number of seconds >= 0", name, v);
  *out = x;
  return 0;
}

/* TF Serving flags accepted here without effect (another design, or another platform): named in
 * one warning line when given. */
static const char *const no_effect[] = {
    "rest_api_enable_cors_support", "enable_per_model_batching_parameters", "num_load_threads",
    "num_unload_threads", "flush_filesystem_caches", "tensorflow_session_config_file",
    "tensorflow_inter_op_parallelism", "use_alts_credentials", "ssl_config_file", "platform_config_file",
    "per_process_gpu_memory_fraction", "num_request_iterations_for_warmup",
    "remove_unused_fields_from_bundle_metagraph", "prefer_tflite_model", "num_tflite_pools",
    "num_tflite_interpreters_per_pool", "enable_signature_method_name_check", "xla_cpu_compilation_enabled",
    "xla_gpu_compilation_enabled", "enable_profiler", "thread_pool_factory_config_file", "mixed_precision",
    "skip_initialize_tpu", "enable_grpc_healthcheck_service", "enable_serialization_as_tensor_content",
};
static const char *const no_effect_bool[] = {
    "rest_api_enable_cors_support", "enable_per_model_batching_parameters", "flush_filesystem_caches",
    "use_alts_credentials", "remove_unused_fields_from_bundle_metagraph", "prefer_tflite_model",
    "enable_signature_method_name_check", "xla_cpu_compilation_enabled", "xla_gpu_compilation_enabled",
    "enable_profiler", "skip_initialize_tpu", "enable_grpc_healthcheck_service",
    "enable_serialization_as_tensor_content",
};

static int is_bool_flag(const char *name) {
  for (size_t i = 0; i < sizeof no_effect_bool / sizeof *no_effect_bool; i++)
    if (!strcmp(no_effect_bool[i], name)) return 1;
  return 0;
}

/* Was --name given at all (--name, --name=v, -name, --noname)? */
static int flag_given(int argc, char **argv, const char *name) {
  size_t n = strlen(name);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') continue;
    a += a[1] == '-' ? 2 : 1;
    if (!strncmp(a, "no", 2) && !strcmp(a + 2, name)) return 1;
    if (!strncmp(a, name, n) && (a[n] == 0 || a[n] == '=')) return 1;
  }
  return 0;
}

static void warn_no_effect(int argc, char **argv) {
  char line[2048];
  size_t len = 0;
  for (size_t i = 0; i < sizeof no_effect / sizeof *no_effect; i++)
    if (flag_given(argc, argv, no_effect[i]) && len < sizeof line) {
      int w = snprintf(line + len, sizeof line - len, "%s--%s", len ? ", " : "", no_effect[i]);
      if (w > 0) len += (size_t)w;
    }
  if (len)
    fprintf(stderr, "savedmodel serve: warning: TensorFlow Serving flags accepted without effect here: %s\n", line);
}

int sm__cli_serve(int argc, char **argv) {
  const sm_flag flagdefs[] = {
      {"model_name", SM_FLAG_STRING, "Name of the model (default \"default\")", NULL, 0},
      {"model_base_path", SM_FLAG_STRING, "Directory whose numbered subdirectories are the versions", NULL, 0},
      {"model_config_file", SM_FLAG_STRING, "A ModelServerConfig text file (model_config_list) for several models",
       NULL, 0},
      {"model_config_file_poll_wait_seconds", SM_FLAG_STRING, "Re-read --model_config_file this often (0: never)",
       NULL, 0},
      {"file_system_poll_wait_seconds", SM_FLAG_STRING, "Look for new versions this often (default 1; 0: once)",
       NULL, 0},
      {"rest_api_port", SM_FLAG_STRING, "Port of the REST API (default 8501; 0: any free port, printed)", NULL, 0},
      {"rest_api_bind", SM_FLAG_STRING, "Address to listen on (default 0.0.0.0)", NULL, 0},
      {"rest_api_num_threads", SM_FLAG_STRING, "HTTP worker threads (default 4 per core)", NULL, 0},
      {"rest_api_timeout_in_ms", SM_FLAG_STRING, "Per-request deadline in ms (default 30000; 0: none)", NULL, 0},
      {"rest_api_max_request_bytes", SM_FLAG_STRING, "Largest request body accepted (default 67108864)", NULL, 0},
      {"rest_api_max_connections", SM_FLAG_STRING,
       "Open connections in all (default 4096); when full, the longest idle one is closed", NULL, 0},
      {"rest_api_max_connections_per_client", SM_FLAG_STRING,
       "Open connections from one client address (default 512); likewise", NULL, 0},
      {"rest_api_header_timeout_seconds", SM_FLAG_STRING,
       "A connection must send a whole request header within this (default 10)", NULL, 0},
      {"rest_api_idle_timeout_seconds", SM_FLAG_STRING, "Close connections idle this long (default 60)", NULL, 0},
      {"file_system_settle_seconds", SM_FLAG_STRING,
       "Load a new version only once its files have not changed for this long (default 1; 0: at once)", NULL, 0},
      {"max_run_bytes", SM_FLAG_STRING, "Memory budget of each request's run, K/M/G suffixes (default: none)", NULL, 0},
      {"enable_batching", SM_FLAG_BOOL, "Merge concurrent predict requests into one run", NULL, 0},
      {"batching_parameters_file", SM_FLAG_STRING, "BatchingParameters text file for --enable_batching", NULL, 0},
      {"tensorflow_intra_op_parallelism", SM_FLAG_STRING, "Threads per model for large kernels (0: one per core)",
       NULL, 0},
      {"saved_model_tags", SM_FLAG_STRING, "Comma-separated MetaGraph tags to load (default \"serve\")", NULL, 0},
      {"port", SM_FLAG_STRING, "Port of the gRPC API (0: any free port, printed; absent: no gRPC)", NULL, 0},
      {"grpc_socket_path", SM_FLAG_STRING, "Also serve gRPC on this unix socket", NULL, 0},
      {"grpc_channel_arguments", SM_FLAG_STRING,
       "gRPC server arguments, k=v,...: grpc.max_receive_message_length (default 2147483647), "
       "grpc.max_send_message_length",
       NULL, 0},
      {"grpc_max_threads", SM_FLAG_STRING, "gRPC worker threads (default 4 per core)", NULL, 0},
      {"monitoring_config_file", SM_FLAG_STRING, "Accepted and ignored: metrics are always at "
                                                 "/monitoring/prometheus/metrics", NULL, 0},
      {"enable_model_warmup", SM_FLAG_BOOL, "Accepted and ignored", NULL, 0},
      {"allow_external_files", SM_FLAG_BOOL,
       "Let the models' ops read files outside their version directory (vocabularies, checkpoints); only for "
       "models you trust.",
       NULL, 0},
      {"allow_version_labels_for_unavailable_models", SM_FLAG_BOOL,
       "Let --model_config_file labels name versions not yet available (new labels only)", NULL, 0},
      {"max_num_load_retries", SM_FLAG_STRING,
       "Try a failed load this many more times (default 0; TF Serving's is 5)", NULL, 0},
      {"load_retry_interval_micros", SM_FLAG_STRING, "Between load tries (default 60000000)", NULL, 0},
      {"tensorflow_session_parallelism", SM_FLAG_STRING,
       "Threads per model when --tensorflow_intra_op_parallelism is not given", NULL, 0},
      {"version", SM_FLAG_BOOL, "Print the version and exit", NULL, 0},
      {"device", SM_FLAG_STRING, SM_CLI_DEVICE_HELP, NULL, 0},
  };
  enum { NBASE = sizeof flagdefs / sizeof *flagdefs, NO_EFFECT_N = sizeof no_effect / sizeof *no_effect };
  sm__threadpool_spin_default(0); /* before any pool: request threads, not polling workers, use the cores */
  sm_flag flags[NBASE + NO_EFFECT_N];
  memcpy(flags, flagdefs, sizeof flagdefs);
  size_t nflags = NBASE;
  for (size_t i = 0; i < NO_EFFECT_N; i++)
    flags[nflags++] = (sm_flag){no_effect[i], is_bool_flag(no_effect[i]) ? SM_FLAG_BOOL : SM_FLAG_STRING,
                                "TF Serving flag: accepted, without effect here", NULL, 0};
  int r = sm__cli_parse_flags(argc, argv, flags, nflags, usage);
  if (r == -1) return 0;
  if (r) return r;
#define FV(name) (sm__cli_flag(flags, nflags, name)->value)
  if (sm__cli_flag(flags, nflags, "version")->on) {
    printf("TensorFlow ModelServer: savedmodel %s\nTensorFlow Library: none (libsavedmodel)\n", sm_version());
    return 0;
  }
  warn_no_effect(argc, argv);
#ifndef SM_HAVE_GRPC
  if (FV("port") || FV("grpc_socket_path"))
    return sm__cli_error(2, "serve: --port / --grpc_socket_path: gRPC is not built in (libgrpc-dev was not found "
                            "when this savedmodel was configured); only the REST API is served");
#endif
  const char *name = FV("model_name") ? FV("model_name") : "default";
  const char *base = FV("model_base_path"), *cfg = FV("model_config_file");
  if (!base && !cfg) return sm__cli_error(2, "serve: --model_base_path or --model_config_file is required");
  if (base && cfg)
    return sm__cli_error(2, "serve: --model_base_path and --model_config_file cannot both be given");
  long port = 8501, threads = 0, timeout = 30000, maxbody = (long)SM_SERVE_MAX_BODY_BYTES, intra = 0;
  long maxconn = SM_SERVE_MAX_CONNECTIONS, maxper = SM_SERVE_MAX_CONNECTIONS_PER_CLIENT;
  long idle = SM_SERVE_IDLE_TIMEOUT_SECONDS;
  double fs_poll = 1, cfg_poll = 0, settle = SM_SERVE_SETTLE_SECONDS, header_to = SM_SERVE_HEADER_TIMEOUT_SECONDS;
  if (FV("rest_api_port") && parse_long("rest_api_port", FV("rest_api_port"), 0, 65535, &port)) return 2;
  if (FV("rest_api_num_threads") && parse_long("rest_api_num_threads", FV("rest_api_num_threads"), 0, 4096, &threads))
    return 2;
  if (FV("rest_api_timeout_in_ms") &&
      parse_long("rest_api_timeout_in_ms", FV("rest_api_timeout_in_ms"), 0, 86400000L, &timeout))
    return 2;
  if (FV("rest_api_max_request_bytes") &&
      parse_long("rest_api_max_request_bytes", FV("rest_api_max_request_bytes"), 1, 1L << 40, &maxbody))
    return 2;
  if (FV("rest_api_max_connections") &&
      parse_long("rest_api_max_connections", FV("rest_api_max_connections"), 1, 1000000, &maxconn))
    return 2;
  if (FV("rest_api_max_connections_per_client") &&
      parse_long("rest_api_max_connections_per_client", FV("rest_api_max_connections_per_client"), 1, 1000000,
                 &maxper))
    return 2;
  if (FV("rest_api_idle_timeout_seconds") &&
      parse_long("rest_api_idle_timeout_seconds", FV("rest_api_idle_timeout_seconds"), 1, 86400, &idle))
    return 2;
  if (FV("rest_api_header_timeout_seconds") &&
      parse_double("rest_api_header_timeout_seconds", FV("rest_api_header_timeout_seconds"), &header_to))
    return 2;
  if (header_to <= 0) return sm__cli_error(2, "serve: --rest_api_header_timeout_seconds must be > 0");
  if (FV("file_system_settle_seconds") &&
      parse_double("file_system_settle_seconds", FV("file_system_settle_seconds"), &settle))
    return 2;
  size_t max_run_bytes = 0;
  if (FV("max_run_bytes") && sm__cli_parse_bytes("serve", "max_run_bytes", FV("max_run_bytes"), &max_run_bytes)) return 2;
  if (FV("tensorflow_intra_op_parallelism") &&
      parse_long("tensorflow_intra_op_parallelism", FV("tensorflow_intra_op_parallelism"), 0, 1024, &intra))
    return 2;
  long retries = 0, retry_us = 60000000L, session_par = 0;
  if (FV("max_num_load_retries") && parse_long("max_num_load_retries", FV("max_num_load_retries"), 0, 1000, &retries))
    return 2;
  if (FV("load_retry_interval_micros") &&
      parse_long("load_retry_interval_micros", FV("load_retry_interval_micros"), 0, 86400000000L, &retry_us))
    return 2;
  if (FV("tensorflow_session_parallelism") &&
      parse_long("tensorflow_session_parallelism", FV("tensorflow_session_parallelism"), 0, 1024, &session_par))
    return 2;
  if (!FV("tensorflow_intra_op_parallelism")) intra = session_par;
  int device;
  if (sm__cli_parse_device("serve", FV("device"), &device)) return 2;
  if (FV("file_system_poll_wait_seconds") &&
      parse_double("file_system_poll_wait_seconds", FV("file_system_poll_wait_seconds"), &fs_poll))
    return 2;
  if (FV("model_config_file_poll_wait_seconds") &&
      parse_double("model_config_file_poll_wait_seconds", FV("model_config_file_poll_wait_seconds"), &cfg_poll))
    return 2;
  long grpc_port = -1, grpc_threads = 0;
  int64_t grpc_max_recv = 0, grpc_max_send = 0;
  if (FV("port") && parse_long("port", FV("port"), 0, 65535, &grpc_port)) return 2;
  if (FV("grpc_max_threads") && parse_long("grpc_max_threads", FV("grpc_max_threads"), 0, 4096, &grpc_threads))
    return 2;
  if (grpc_port > 0 && grpc_port == port)
    return sm__cli_error(2, "serve: --rest_api_port cannot be same as --port. Please use a different port for "
                            "HTTP/REST API.");
  if (FV("grpc_channel_arguments")) {
    char *args = strdup(FV("grpc_channel_arguments"));
    for (char *save = NULL, *kv = args ? strtok_r(args, ",", &save) : NULL; kv; kv = strtok_r(NULL, ",", &save)) {
      char *eq = strchr(kv, '=');
      long v = 0;
      if (eq) *eq = 0;
      int known = eq && (!strcmp(kv, "grpc.max_receive_message_length") || !strcmp(kv, "grpc.max_send_message_length"));
      if (known && parse_long(kv, eq + 1, -1, 2147483647L, &v)) {
        free(args);
        return 2;
      }
      if (!known) fprintf(stderr, "savedmodel serve: --grpc_channel_arguments: %s ignored\n", kv);
      else if (!strcmp(kv, "grpc.max_receive_message_length")) grpc_max_recv = v;
      else grpc_max_send = v;
    }
    free(args);
  }
#ifndef SM_HAVE_GRPC
  (void)grpc_threads, (void)grpc_max_recv, (void)grpc_max_send;
#endif

  /* tags: "serve" or a comma list */
  char *tagbuf = strdup(FV("saved_model_tags") ? FV("saved_model_tags") : "serve");
  const char *tags[16];
  int ntags = 0;
  for (char *save = NULL, *t = tagbuf ? strtok_r(tagbuf, ",", &save) : NULL; t && ntags < 16;
       t = strtok_r(NULL, ",", &save))
    tags[ntags++] = t;

  /* signals go to sigwait below, not to whichever thread happens to run */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  int rc = 1;
  sm_manager *m = NULL;
  sm_batcher *b = NULL;
  sm_rest *rest = NULL;
  sm_http *http = NULL;
#ifdef SM_HAVE_GRPC
  sm_grpc_server *grpc = NULL;
#endif
  sm_model_config_list *cl = NULL;
  int64_t *allowed = NULL;
  sm_manager_options mo = {.poll_wait_seconds = fs_poll, .num_threads = (int)intra, .tags = tags, .ntags = ntags,
                          .allow_version_labels_for_unavailable_models =
                              sm__cli_flag(flags, nflags, "allow_version_labels_for_unavailable_models")->on,
                          .settle_seconds = settle,
                          .allow_external_files = sm__cli_flag(flags, nflags, "allow_external_files")->on,
                          .max_num_load_retries = (int)retries, .load_retry_interval_micros = retry_us,
                          .device = device};
  sm_status *s = sm__manager_new(&mo, &m);
  if (!s && cfg) {
    s = sm__model_config_list_read(cfg, &cl);
    if (!s) {
      int n = sm__model_config_list_count(cl);
      sm_model_config *mc = calloc((size_t)n + 1, sizeof *mc);
      if (!mc) s = sm_status_new(SM_NO_MEMORY, "serve: out of memory");
      for (int i = 0; mc && i < n; i++) mc[i] = *sm__model_config_list_at(cl, i);
      if (mc) s = sm__manager_set_config(m, mc, n);
      free(mc);
    }
    if (!s && cfg_poll > 0) s = sm__manager_watch_config_file(m, cfg, cfg_poll);
  } else if (!s) {
    sm_model_config mc = {.name = name, .base_path = base, .policy = SM_POLICY_LATEST, .latest_n = 1};
    s = sm__manager_set_config(m, &mc, 1);
  }
  if (!s && sm__cli_flag(flags, nflags, "enable_batching")->on) {
    sm_batching_params bp = {.max_batch_size = 32, .batch_timeout_micros = 1000, .num_batch_threads = 0,
                             .max_enqueued_batches = 100};
    if (FV("batching_parameters_file")) s = sm__batching_params_read(FV("batching_parameters_file"), &bp, &allowed);
    if (!s) s = sm__batcher_new(&bp, &b);
  }
  if (!s) {
    sm_rest_options ro = {.manager = m, .batcher = b, .batcher_run = b ? sm__batcher_run : NULL,
                          .batcher_submit = b ? sm__batcher_submit : NULL,
                          .timeout_ms = timeout, .max_run_bytes = max_run_bytes, .tags = tags, .ntags = ntags};
    s = sm__rest_new(&ro, &rest);
  }
  if (!s) {
    sm_http_options ho = {.bind_addr = FV("rest_api_bind"), .port = (int)port, .num_threads = (int)threads,
                          .max_body_bytes = (size_t)maxbody, .idle_timeout_seconds = (int)idle,
                          .max_connections = (int)maxconn, .max_connections_per_client = (int)maxper,
                          .header_timeout_seconds = header_to};
    s = sm__http_start(&ho, rest, m, &http);
  }
#ifdef SM_HAVE_GRPC
  if (!s && (grpc_port >= 0 || FV("grpc_socket_path"))) {
    char addr[64];
    snprintf(addr, sizeof addr, "0.0.0.0:%ld", grpc_port);
    sm_grpc_server_options go = {.addr = grpc_port >= 0 ? addr : NULL, .socket_path = FV("grpc_socket_path"),
                                 .num_threads = (int)grpc_threads, .max_receive_bytes = grpc_max_recv,
                                 .max_send_bytes = grpc_max_send, .calls_may_block = b != NULL};
    s = sm__grpc_server_start(&go, rest, &grpc);
    if (!s && grpc_port >= 0)
      fprintf(stderr, "Running gRPC ModelServer at 0.0.0.0:%d ...\n", sm__grpc_server_port(grpc));
    if (!s && FV("grpc_socket_path"))
      fprintf(stderr, "Running gRPC ModelServer at UNIX socket %s ...\n", FV("grpc_socket_path"));
  }
#endif
  if (s) {
    rc = sm__cli_fail(s);
  } else {
    fprintf(stderr, "Exporting HTTP/REST API at:%s:%d ...\n", FV("rest_api_bind") ? FV("rest_api_bind") : "0.0.0.0",
            sm__http_port(http));
    fflush(stderr);
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    fprintf(stderr, "savedmodel serve: signal %d: finishing requests in flight and stopping\n", sig);
    sm__batcher_hurry(b); /* requests waiting for a batch to fill are answered now */
    sm__http_stop(http, 30000);
    http = NULL;
#ifdef SM_HAVE_GRPC
    sm__grpc_server_stop(grpc, 30000);
    grpc = NULL;
#endif
    rc = 0;
  }
  sm__http_stop(http, 0);
#ifdef SM_HAVE_GRPC
  sm__grpc_server_stop(grpc, 0);
#endif
  if (b) { /* after the servers stopped: every batch is counted */
    int64_t nb = 0, nt = 0;
    sm__batcher_stats(b, &nb, &nt);
    if (nb) fprintf(stderr, "Batching: %lld requests in %lld batches (%.2f a batch)\n", (long long)nt, (long long)nb,
                    (double)nt / (double)nb);
  }
  sm__batcher_free(b);
  sm__rest_free(rest);
  sm__manager_free(m);
  sm__model_config_list_free(cl);
  free(allowed);
  free(tagbuf);
#undef FV
  return rc;
}

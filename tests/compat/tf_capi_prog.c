/* tf_capi_prog.c - a TensorFlow C API program for the compatibility tests: compiled against
 * TensorFlow's own headers (tensorflow/c/c_api.h from the pip package) and linked once to the real
 * libtensorflow and once to libsavedmodel_tf (tests/interop/test_tf_c_api.py compares the two
 * outputs), or compiled against our private header with -DSM_OWN_HEADER (test_tf_compat runs it).
 *
 * usage: tf_capi_prog EXPORT_DIR TAGS [COMMAND...]   (TAGS: comma-separated, "" = none)
 * It loads the model (TF_LoadSessionFromSavedModel) and prints "load code=N msg=...", then runs
 * the commands in order:
 *   op NAME                          the operation's type, inputs, outputs, their dtypes and shapes
 *   feed NAME:I DTYPE DIMS VALUES    DTYPE float|double|int32|int64|uint8|bool|string; DIMS "2,3"
 *                                    or "-" (scalar); VALUES comma-separated ('|' for strings)
 *   fetch NAME:I / target NAME       what the next run fetches / runs
 *   run                              TF_SessionRun with what was given since the last run; prints
 *                                    "run code=N msg=..." and one "out" line per fetch
 *   meta FILE                        writes the meta_graph_def buffer the load filled to FILE
 * Lines are stable text: the Python side compares them (numbers within a tolerance). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SM_OWN_HEADER
#include "compat/tf_c_api.h"
#else
#include "tensorflow/c/c_api.h"
#endif

#define MAXIO 16

static TF_Graph *graph;
static TF_Session *sess;
static TF_Status *st;
static TF_Output feeds[MAXIO], fetches[MAXIO];
static TF_Tensor *feed_vals[MAXIO];
static const TF_Operation *targets[MAXIO];
static int nfeeds, nfetches, ntargets;

static void print_msg(const char *what, const TF_Status *s) {
  printf("%s code=%d msg=", what, (int)TF_GetCode(s));
  for (const char *p = TF_Message(s); *p; p++) putchar(*p == '\n' ? ' ' : *p);
  putchar('\n');
}

static void print_bytes(const char *p, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c >= 32 && c < 127 && c != '"' && c != '\\' && c != ',') putchar(c);
    else printf("\\x%02x", c);
  }
  putchar('"');
}

/* A string element's bytes: TensorFlow's inline accessors when compiled against its headers (the
 * layout test), the exported functions otherwise. */
static const char *tstr_data(const TF_TString *t, size_t *n) {
#ifdef SM_OWN_HEADER
  *n = TF_StringGetSize(t);
  return TF_StringGetDataPointer(t);
#else
  *n = TF_TString_GetSize(t);
  return TF_TString_GetDataPointer(t);
#endif
}

static TF_Operation *find_op(const char *spec, int *index) {
  char name[512];
  snprintf(name, sizeof name, "%s", spec);
  *index = 0;
  char *colon = strrchr(name, ':');
  if (colon) {
    *index = atoi(colon + 1);
    *colon = 0;
  }
  TF_Operation *op = TF_GraphOperationByName(graph, name);
  if (!op) printf("op %s: not found\n", name);
  return op;
}

static void cmd_op(const char *name) {
  TF_Operation *op = TF_GraphOperationByName(graph, name);
  if (!op) {
    printf("op %s: not found\n", name);
    return;
  }
  printf("op %s type=%s name=%s inputs=%d outputs=%d\n", name, TF_OperationOpType(op), TF_OperationName(op),
         TF_OperationNumInputs(op), TF_OperationNumOutputs(op));
  for (int i = 0; i < TF_OperationNumInputs(op); i++) {
    TF_Input in = {op, i};
    TF_Output src = TF_OperationInput(in);
    printf("  in %d dtype=%d from=%s:%d\n", i, (int)TF_OperationInputType(in), TF_OperationName(src.oper), src.index);
  }
  for (int i = 0; i < TF_OperationNumOutputs(op); i++) {
    TF_Output o = {op, i};
    int nd = TF_GraphGetTensorNumDims(graph, o, st);
    printf("  out %d dtype=%d ndims=%d", i, (int)TF_OperationOutputType(o), nd);
    if (TF_GetCode(st) != TF_OK) print_msg(" shape", st);
    else if (nd >= 0 && nd <= 8) {
      int64_t dims[8];
      TF_GraphGetTensorShape(graph, o, dims, nd, st);
      printf(" shape=[");
      for (int d = 0; d < nd; d++) printf("%s%" PRId64, d ? "," : "", dims[d]);
      printf("] code=%d\n", (int)TF_GetCode(st));
    } else
      putchar('\n');
  }
}

static int dtype_of(const char *s) {
  static const struct { const char *n; TF_DataType t; } m[] = {
      {"float", TF_FLOAT}, {"double", TF_DOUBLE}, {"int32", TF_INT32}, {"int64", TF_INT64},
      {"uint8", TF_UINT8}, {"bool", TF_BOOL},     {"string", TF_STRING}};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (!strcmp(s, m[i].n)) return m[i].t;
  fprintf(stderr, "unknown dtype %s\n", s);
  exit(2);
}

static void free_feed(void *data, size_t len, void *arg) {
  (void)len;
  (void)arg;
  free(data);
}

static TF_Tensor *make_tensor(int dtype, const char *dimspec, const char *values) {
  int64_t dims[8];
  int nd = 0;
  int64_t n = 1;
  if (strcmp(dimspec, "-")) {
    for (const char *p = dimspec; *p && nd < 8;) {
      dims[nd] = strtoll(p, NULL, 10);
      n *= dims[nd++];
      p = strchr(p, ',');
      if (!p) break;
      p++;
    }
  }
  char *copy = strdup(values);
  char *save = NULL;
  const char *sep = dtype == TF_STRING ? "|" : ",";
  if (dtype == TF_STRING) {
    /* TF_AllocateTensor + TF_StringInit/TF_StringCopy per element, as TensorFlow's docs show. */
    TF_Tensor *t = TF_AllocateTensor(TF_STRING, dims, nd, (size_t)n * sizeof(TF_TString));
    TF_TString *s = (TF_TString *)TF_TensorData(t);
    char *tok = strtok_r(copy, sep, &save);
    for (int64_t i = 0; i < n; i++) {
      TF_StringInit(&s[i]);
      const char *v = tok ? tok : "";
      TF_StringCopy(&s[i], v, strlen(v));
      tok = tok ? strtok_r(NULL, sep, &save) : NULL;
    }
    free(copy);
    return t;
  }
  size_t esz = TF_DataTypeSize((TF_DataType)dtype);
  size_t len = (size_t)n * esz;
  void *buf = malloc(len ? len : 1);
  char *tok = strtok_r(copy, sep, &save);
  for (int64_t i = 0; i < n; i++) {
    double v = tok ? strtod(tok, NULL) : 0;
    switch (dtype) {
    case TF_FLOAT: ((float *)buf)[i] = (float)v; break;
    case TF_DOUBLE: ((double *)buf)[i] = v; break;
    case TF_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case TF_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case TF_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case TF_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    }
    tok = tok ? strtok_r(NULL, sep, &save) : NULL;
  }
  free(copy);
  /* TF_NewTensor with a deallocator: the library calls it when it no longer needs the buffer. */
  return TF_NewTensor((TF_DataType)dtype, dims, nd, buf, len, free_feed, NULL);
}

static void print_tensor(const char *name, const TF_Tensor *t) {
  int dtype = (int)TF_TensorType(t);
  printf("out %s dtype=%d shape=[", name, dtype);
  for (int d = 0; d < TF_NumDims(t); d++) printf("%s%" PRId64, d ? "," : "", TF_Dim(t, d));
  int64_t n = TF_TensorElementCount(t);
  printf("] count=%" PRId64 " values=", n);
  const void *data = TF_TensorData(t);
  for (int64_t i = 0; i < n && i < 64; i++) {
    if (i) putchar(',');
    switch (dtype) {
    case TF_FLOAT: printf("%.9g", ((const float *)data)[i]); break;
    case TF_DOUBLE: printf("%.17g", ((const double *)data)[i]); break;
    case TF_INT32: printf("%" PRId32, ((const int32_t *)data)[i]); break;
    case TF_INT64: printf("%" PRId64, ((const int64_t *)data)[i]); break;
    case TF_UINT8:
    case TF_BOOL: printf("%u", ((const uint8_t *)data)[i]); break;
    case TF_STRING: {
      size_t len;
      const char *p = tstr_data(&((const TF_TString *)data)[i], &len);
      print_bytes(p, len);
      break;
    }
    default: printf("?");
    }
  }
  if (dtype != TF_STRING) printf(" bytes=%zu", TF_TensorByteSize(t));
  putchar('\n');
}

static void cmd_run(char **names) {
  TF_Tensor *out[MAXIO];
  for (int i = 0; i < MAXIO; i++) out[i] = (TF_Tensor *)&out; /* must be set by TF_SessionRun */
  TF_SessionRun(sess, NULL, feeds, feed_vals, nfeeds, fetches, out, nfetches, targets, ntargets, NULL, st);
  print_msg("run", st);
  for (int i = 0; i < nfetches; i++) {
    if (TF_GetCode(st) == TF_OK) print_tensor(names[i], out[i]);
    else if (out[i]) printf("out %d: not NULL after a failed run\n", i);
    if (TF_GetCode(st) == TF_OK) TF_DeleteTensor(out[i]);
  }
  for (int i = 0; i < nfeeds; i++) {
    if (TF_TensorType(feed_vals[i]) == TF_STRING) {
      TF_TString *s = (TF_TString *)TF_TensorData(feed_vals[i]);
      for (int64_t j = 0; j < TF_TensorElementCount(feed_vals[i]); j++) TF_StringDealloc(&s[j]);
    }
    TF_DeleteTensor(feed_vals[i]);
  }
  nfeeds = nfetches = ntargets = 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s EXPORT_DIR TAGS [COMMAND...]\n", argv[0]);
    return 2;
  }
  printf("version %s\nsizes", TF_Version()[0] ? "set" : "empty");
  for (int dt = 1; dt <= 23; dt++) printf(" %zu", TF_DataTypeSize((TF_DataType)dt));
  putchar('\n');
  const char *tags[8];
  int ntags = 0;
  char *tagcopy = strdup(argv[2]), *save = NULL;
  for (char *t = strtok_r(tagcopy, ",", &save); t && ntags < 8; t = strtok_r(NULL, ",", &save)) tags[ntags++] = t;

  st = TF_NewStatus();
  graph = TF_NewGraph();
  TF_SessionOptions *opts = TF_NewSessionOptions();
  /* A serialized ConfigProto (intra_op_parallelism_threads: 1), as programs commonly pass. */
  static const uint8_t config[] = {0x10, 0x01};
  TF_SetConfig(opts, config, sizeof config, st);
  print_msg("config", st);
  TF_Buffer *meta = TF_NewBuffer();
  sess = TF_LoadSessionFromSavedModel(opts, NULL, argv[1], tags, ntags, graph, meta, st);
  print_msg("load", st);
  TF_DeleteSessionOptions(opts);
  char *names[MAXIO];
  for (int i = 3; sess && i < argc; i++) {
    if (!strcmp(argv[i], "op") && i + 1 < argc) {
      cmd_op(argv[++i]);
    } else if (!strcmp(argv[i], "feed") && i + 4 < argc && nfeeds < MAXIO) {
      int idx;
      TF_Operation *op = find_op(argv[i + 1], &idx);
      int dtype = dtype_of(argv[i + 2]);
      if (op) {
        feeds[nfeeds] = (TF_Output){op, idx};
        feed_vals[nfeeds++] = make_tensor(dtype, argv[i + 3], argv[i + 4]);
      }
      i += 4;
    } else if (!strcmp(argv[i], "fetch") && i + 1 < argc && nfetches < MAXIO) {
      int idx;
      TF_Operation *op = find_op(argv[++i], &idx);
      if (op) {
        names[nfetches] = argv[i];
        fetches[nfetches++] = (TF_Output){op, idx};
      }
    } else if (!strcmp(argv[i], "target") && i + 1 < argc && ntargets < MAXIO) {
      int idx;
      TF_Operation *op = find_op(argv[++i], &idx);
      if (op) targets[ntargets++] = op;
    } else if (!strcmp(argv[i], "run")) {
      cmd_run(names);
    } else if (!strcmp(argv[i], "meta") && i + 1 < argc) {
      FILE *f = fopen(argv[++i], "wb");
      if (!f || fwrite(meta->data, 1, meta->length, f) != meta->length || fclose(f)) return 1;
      printf("meta written\n");
    } else {
      fprintf(stderr, "bad command %s\n", argv[i]);
      return 2;
    }
  }
  if (sess) {
    TF_CloseSession(sess, st);
    print_msg("close", st);
    TF_DeleteSession(sess, st);
    print_msg("delete", st);
  }
  TF_DeleteBuffer(meta);
  TF_DeleteGraph(graph);
  TF_DeleteStatus(st);
  free(tagcopy);
  return 0;
}

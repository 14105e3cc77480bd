/* run.c - `savedmodel run`: saved_model_cli run, on this library's runtime.
 *
 * Mirrors tensorflow/python/tools/saved_model_cli.py (TF 2.21): load_inputs_from_input_arg_string
 * (--inputs files through np.load's rules, --input_exprs through literal_eval - here a parser that
 * evaluates nothing - and --input_examples into serialized tf.Example; later flags override
 * earlier ones per key) and run_saved_model_with_feed_dict (input keys checked against the
 * SignatureDef, outputs fetched by tensor name in sorted key order, printed as print() prints the
 * numpy value, saved as <outdir>/<key>.npy). The load compiles only the signature run, so other
 * signatures with ops this runtime has no kernel for do not stop it. Values are converted to each input's dtype the way
 * Session.run's np.asarray does (feed.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "cli/cli.h"
#include "cli/feed.h"
#include "cli/print_value.h"
#include "cli/pyliteral.h"
#include "cli/show.h"
#include "runtime/model_internal.h"
#include "savedmodel/format.h"
#include "savedmodel/model.h"
#include "savedmodel/npy.h"

static const char usage[] =
    "usage: savedmodel run --dir DIR --tag_set TAGS --signature_def KEY\n"
    "                      [--inputs INPUTS] [--input_exprs EXPRS] [--input_examples EXAMPLES]\n"
    "                      [--outdir DIR [--overwrite]] [--json] [--allow_external_files]\n"
    "                      [--device cpu|gpu]\n"
    "                      [--timeout SECONDS] [--max_run_bytes BYTES]\n"
    "\n"
    "Runs a SignatureDef of a SavedModel and prints its outputs, as `saved_model_cli run` does:\n"
    "  savedmodel run --dir /tmp/saved_model --tag_set serve --signature_def serving_default \\\n"
    "     --inputs 'x=/tmp/x.npy;y=/tmp/in.npz[y]' --input_exprs 'z=[[1.0],[2.0]]' \\\n"
    "     --input_examples 'examples=[{\"id\":[26],\"weights\":[0.5, 0.5]}]' --outdir /tmp/out\n"
    "--inputs reads .npy and .npz files (pickles are refused); --input_exprs takes Python literals\n"
    "only (numbers, strings, bytes, True/False/None, nested lists and tuples), never code;\n"
    "--input_examples builds serialized tf.train.Example protos from lists of dicts.\n"
    "With --json, one document instead of numpy's text (outputs keyed and sorted as above):\n"
    "  {\"outputs\": {KEY: {\"dtype\": \"DT_FLOAT\", \"shape\": [int], \"value\": V, \"file\": PATH}}}\n"
    "V nests lists by the shape (a scalar is bare); floats with the digits that read back to the\n"
    "same value, \"nan\"/\"inf\"/\"-inf\" for non-finite ones, complex as [re, im], strings as JSON\n"
    "strings when UTF-8 and {\"base64\": ...} otherwise; \"file\" only with --outdir.\n"
    "--timeout stops the run once SECONDS have passed (large kernels check between tiles), with\n"
    "DEADLINE_EXCEEDED; --max_run_bytes (e.g. 256M) refuses a step whose tensors would take the\n"
    "run past that many bytes at once, before allocating them (RESOURCE_EXHAUSTED).\n"
    "The model's ops read files (vocabularies, checkpoints) only inside --dir, symlinks and '..'\n"
    "resolved, unless --allow_external_files; only regular files are read.\n";

/* One input as the flags gave it, in the order of Python's feed dict. */
typedef struct {
  char *key;
  char *file, *var;   /* --inputs, until the file is read */
  sm_tensor *array;   /* from --inputs or --input_examples */
  py_value *literal;  /* from --input_exprs */
  int from_examples;
} feed;

typedef struct {
  feed *f;
  size_t n;
} feeds;

static void feeds_free(feeds *fs) {
  for (size_t i = 0; i < fs->n; i++) {
    free(fs->f[i].key);
    free(fs->f[i].file);
    free(fs->f[i].var);
    sm_tensor_free(fs->f[i].array);
    py_value_free(fs->f[i].literal);
  }
  free(fs->f);
}

/* Python dict assignment: a key keeps its first position, the value is replaced. */
static feed *feeds_put(feeds *fs, const char *key, size_t keylen, int *existed) {
  for (size_t i = 0; i < fs->n; i++)
    if (strlen(fs->f[i].key) == keylen && memcmp(fs->f[i].key, key, keylen) == 0) {
      *existed = 1;
      sm_tensor_free(fs->f[i].array);
      py_value_free(fs->f[i].literal);
      fs->f[i].array = NULL;
      fs->f[i].literal = NULL;
      return &fs->f[i];
    }
  *existed = 0;
  feed *nf = realloc(fs->f, (fs->n + 1) * sizeof *nf);
  if (!nf) return NULL;
  fs->f = nf;
  feed *f = &fs->f[fs->n];
  memset(f, 0, sizeof *f);
  if (!(f->key = malloc(keylen + 1))) return NULL;
  memcpy(f->key, key, keylen);
  f->key[keylen] = 0;
  fs->n++;
  return f;
}

/* ---- --inputs ------------------------------------------------------------------------------- */
/* np.load of one file: .npy gives the array (a [name] is ignored with a warning); .npz gives the
 * named member, or its only member; anything else would be a pickle, which is refused. */
static sm_status *load_input_file(const char *file, const char *var, sm_tensor **out) {
  *out = NULL;
  int fd;
  uint64_t fsize;
  sm_status *ost = sm__file_open_regular(file, UINT64_MAX, &fd, &fsize); /* no FIFO, no device */
  if (ost) return ost;
  unsigned char magic[6] = {0};
  ssize_t rd = read(fd, magic, 6);
  size_t got = rd > 0 ? (size_t)rd : 0;
  close(fd);
  if (got >= 6 && memcmp(magic, SM_NPY_MAGIC, 6) == 0) {
    if (var) fprintf(stderr, "WARNING: Input file %s contains a single ndarray. Name key \"%s\" ignored.\n", file, var);
    return sm_npy_read(file, out);
  }
  if (got >= 4 && memcmp(magic, "PK", 2) == 0 && ((magic[2] == 3 && magic[3] == 4) || (magic[2] == 5 && magic[3] == 6))) {
    sm_npz *z;
    sm_status *st = sm_npz_open(file, &z);
    if (st) return st;
    if (var) {
      st = sm_npz_get(z, var, out);
      if (st && sm_status_code(st) == SM_NOT_FOUND) {
        sm_status_free(st);
        st = sm_status_new(SM_NOT_FOUND, "Input file %s does not contain variable with name \"%s\".", file, var);
      }
    } else if (sm_npz_count(z) != 1) {
      st = sm_status_new(SM_INVALID_ARGUMENT,
                         "Input file %s contains more than one ndarrays. Please specify the name of ndarray to use.", file);
    } else {
      st = sm_npz_get(z, sm_npz_name(z, 0), out);
    }
    sm_npz_free(z);
    return st;
  }
  return sm_status_new(SM_UNIMPLEMENTED,
                       "Input file %s is neither .npy nor .npz; saved_model_cli would unpickle it, which this tool never "
                       "does (save arrays with np.save or np.savez)", file);
}

/* '<key>=<file>' or '<key>=<file>[<name>]', as preprocess_inputs_arg_string's two regexes. */
static sm_status *parse_inputs(const char *arg, feeds *fs) {
  const char *p = arg;
  while (*p) {
    const char *e = strchr(p, ';');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len) {
      const char *eq = memchr(p, '=', len);
      const char *rest = eq ? eq + 1 : NULL;
      size_t rlen = eq ? len - (size_t)(rest - p) : 0;
      int ok = eq && eq > p && rlen > 0;
      /* the file part may not contain brackets; an optional [name] (no brackets inside) ends it */
      const char *lb = ok ? memchr(rest, '[', rlen) : NULL;
      size_t flen = lb ? (size_t)(lb - rest) : rlen;
      size_t vlen = 0;
      if (ok) {
        if (memchr(rest, ']', flen)) ok = 0;
        if (lb) {
          vlen = rlen - flen - 2;
          ok = ok && flen > 0 && rlen >= flen + 3 && rest[rlen - 1] == ']' && !memchr(lb + 1, '[', vlen) &&
               !memchr(lb + 1, ']', vlen);
        }
      }
      if (!ok)
        return sm_status_new(SM_INVALID_ARGUMENT,
                             "--inputs \"%.*s\" format is incorrect. Please follow\"<input_key>=<filename>\", "
                             "or\"<input_key>=<filename>[<variable_name>]\"", (int)len, p);
      char *file = strndup(rest, flen), *var = lb ? strndup(lb + 1, vlen) : NULL;
      if (!file || (lb && !var)) { free(file); free(var); return sm_status_new(SM_NO_MEMORY, "out of memory"); }
      int existed;
      feed *f = feeds_put(fs, p, (size_t)(eq - p), &existed);
      if (!f) { free(file); free(var); return sm_status_new(SM_NO_MEMORY, "out of memory"); }
      free(f->file);
      free(f->var);
      f->file = file;
      f->var = var;
    }
    if (!e) break;
    p = e + 1;
  }
  return NULL;
}

/* '<key>=<literal>' items separated by ';' (preprocess_input_exprs_arg_string). */
static sm_status *parse_exprs(const char *arg, const char *flag, feeds *fs) {
  if (*arg && !strchr(arg, '='))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s \"%s\" format is incorrect. Please follow\"<input_key>=<python expression>\"",
                         flag, arg);
  const char *p = arg;
  while (*p) {
    const char *e = strchr(p, ';');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len) {
      const char *eq = memchr(p, '=', len);
      if (!eq)
        return sm_status_new(SM_INVALID_ARGUMENT, "%s \"%.*s\" format is incorrect. Please follow\"<input_key>=<python expression>\"",
                             flag, (int)len, p);
      char *expr = strndup(eq + 1, len - (size_t)(eq + 1 - p));
      if (!expr) return sm_status_new(SM_NO_MEMORY, "out of memory");
      py_value *v;
      sm_status *st = sm__py_literal_parse(expr, &v);
      if (st) {
        sm_status *r = sm_status_new(SM_INVALID_ARGUMENT, "%s: Expression \"%s\" is not a valid python literal: %s", flag, expr,
                                     sm_status_message(st));
        sm_status_free(st);
        free(expr);
        return r;
      }
      free(expr);
      int existed;
      feed *f = feeds_put(fs, p, (size_t)(eq - p), &existed);
      if (!f) { py_value_free(v); return sm_status_new(SM_NO_MEMORY, "out of memory"); }
      if (strcmp(flag, "--input_examples") == 0) {
        st = sm__cli_examples_to_tensor(v, f->key, &f->array);
        py_value_free(v);
        if (st) return st;
        f->from_examples = 1;
      } else {
        f->literal = v;
      }
    }
    if (!e) break;
    p = e + 1;
  }
  return NULL;
}

/* ---- running -------------------------------------------------------------------------------- */
static int mkdirs(const char *path) {
  char *p = strdup(path);
  if (!p) return -1;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST) { free(p); return -1; }
    *s = '/';
  }
  int r = mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
  free(p);
  return r;
}

static const Tensorflow__TensorInfo *find_info(const sm_kv *kv, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(kv[i].key, key) == 0) return kv[i].value;
  return NULL;
}

static int run_model(const char *dir, const char *tag_set, const char *sig_key, feeds *fs, const char *outdir,
                     int overwrite, int json, int64_t timeout_us, size_t max_run_bytes, const size_t *load_limits,
                     int allow_external, int device) {
  Tensorflow__SavedModel *sm = NULL;
  sm_status *st = sm_saved_model_read(dir, &sm);
  if (st) return sm__cli_fail(st);
  const Tensorflow__MetaGraphDef *mg;
  int rc = sm__cli_find_meta_graph(sm, tag_set, &mg);
  if (rc) { sm_saved_model_free(sm); return rc; }
  size_t nsig = 0, nin = 0, nout = 0;
  sm_kv *sigs = sm__meta_graph_signatures(mg, &nsig);
  const Tensorflow__SignatureDef *sig = NULL;
  for (size_t i = 0; i < nsig; i++)
    if (strcmp(sigs[i].key, sig_key) == 0) sig = sigs[i].value;
  sm_kv *ins = NULL, *outs = NULL;
  const char **feed_names = NULL, **fetch_names = NULL, **tags = NULL;
  sm_tensor **feed_vals = NULL, **results = NULL;
  sm_model *m = NULL;
  size_t ntags = 0;
  if (!sig) {
    fprintf(stderr, "savedmodel: SignatureDef \"%s\" is not in the MetaGraphDef with tag-set \"%s\"; it has: ", sig_key, tag_set);
    for (size_t i = 0; i < nsig; i++) fprintf(stderr, "%s\"%s\"", i ? ", " : "", sigs[i].key);
    fputs(nsig ? "\n" : "none\n", stderr);
    rc = 1;
    goto done;
  }
  ins = sm__signature_inputs(sig, &nin);
  outs = sm__signature_outputs(sig, &nout);
  for (size_t i = 0; i < fs->n; i++) {
    if (find_info(ins, nin, fs->f[i].key)) continue;
    fprintf(stderr, "savedmodel: \"%s\" is not a valid input key. Please choose from ", fs->f[i].key);
    fputc('"', stderr);
    for (size_t k = 0; k < nin; k++) fprintf(stderr, "%s%s", k ? "\", \"" : "", ins[k].key);
    fputs("\", or use --show option.\n", stderr);
    rc = 1;
    goto done;
  }
  feed_names = calloc(fs->n + 1, sizeof *feed_names);
  feed_vals = calloc(fs->n + 1, sizeof *feed_vals);
  fetch_names = calloc(nout + 1, sizeof *fetch_names);
  results = calloc(nout + 1, sizeof *results);
  if (!feed_names || !feed_vals || !fetch_names || !results) { rc = sm__cli_error(1, "out of memory"); goto done; }
  for (size_t i = 0; i < fs->n; i++) {
    const Tensorflow__TensorInfo *ti = find_info(ins, nin, fs->f[i].key);
    if (ti->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME) {
      rc = sm__cli_error(1, "input \"%s\" is a sparse or composite tensor; only dense inputs can be fed", fs->f[i].key);
      goto done;
    }
    feed_names[i] = ti->name;
    int dt = sm_dtype_base((int)ti->dtype);
    if (fs->f[i].literal) st = sm__cli_literal_to_tensor(fs->f[i].literal, dt, fs->f[i].key, &feed_vals[i]);
    else st = sm__cli_cast_tensor(fs->f[i].array, dt, fs->f[i].key, &feed_vals[i]);
    if (st) { rc = sm__cli_fail(st); goto done; }
    /* saved_model_cli feeds through Python's Session.run, which refuses a value the tensor's static
     * shape does not admit; the signature's TensorInfo carries that shape. */
    const Tensorflow__TensorShapeProto *ts = ti->tensor_shape;
    if (ts && !ts->unknown_rank) {
      int r = sm_tensor_rank(feed_vals[i]), ok = (size_t)r == ts->n_dim;
      const int64_t *d = sm_tensor_dims(feed_vals[i]);
      for (int j = 0; ok && j < r; j++) ok = ts->dim[j]->size < 0 || ts->dim[j]->size == d[j];
      if (!ok) {
        char a[256], b[256];
        size_t ka = (size_t)snprintf(a, sizeof a, "("), kb = (size_t)snprintf(b, sizeof b, "(");
        for (int j = 0; j < r && ka < sizeof a; j++)
          ka += (size_t)snprintf(a + ka, sizeof a - ka, "%s%lld", j ? ", " : "", (long long)d[j]);
        for (size_t j = 0; j < ts->n_dim && kb < sizeof b; j++) {
          if (ts->dim[j]->size < 0) kb += (size_t)snprintf(b + kb, sizeof b - kb, "%sNone", j ? ", " : "");
          else kb += (size_t)snprintf(b + kb, sizeof b - kb, "%s%lld", j ? ", " : "", (long long)ts->dim[j]->size);
        }
        if (ka < sizeof a) snprintf(a + ka, sizeof a - ka, r == 1 ? ",)" : ")");
        if (kb < sizeof b) snprintf(b + kb, sizeof b - kb, ts->n_dim == 1 ? ",)" : ")");
        rc = sm__cli_error(1, "Cannot feed value of shape %s for Tensor %s, which has shape %s", a, ti->name, b);
        goto done;
      }
    }
  }
  for (size_t k = 0; k < nout; k++) {
    const Tensorflow__TensorInfo *ti = outs[k].value;
    if (!ti || ti->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME) {
      rc = sm__cli_error(1, "output \"%s\" is a sparse or composite tensor; only dense outputs can be fetched", outs[k].key);
      goto done;
    }
    fetch_names[k] = ti->name;
  }
  /* The loader matches the tag set given on the command line, blanks trimmed. */
  tags = calloc(mg->meta_info_def ? mg->meta_info_def->n_tags + 1 : 1, sizeof *tags);
  if (!tags) { rc = sm__cli_error(1, "out of memory"); goto done; }
  for (size_t i = 0; mg->meta_info_def && i < mg->meta_info_def->n_tags; i++) tags[ntags++] = mg->meta_info_def->tags[i];
  /* The model takes the SavedModel read above (and frees it), rather than reading it again, and
   * compiles only this signature: another one this runtime cannot run does not matter here. */
  sm_load_options lo = {.signatures = &sig_key, .nsignatures = 1, .max_graph_nodes = (int64_t)load_limits[0],
                        .max_load_bytes = (int64_t)load_limits[1],
                        .allow_external_files = allow_external, .device = device};
  st = sm__model_load_parsed(dir, sm, tags, (int)ntags, &lo, &m);
  sm = NULL;
  if (st) { rc = sm__cli_fail(st); goto done; }
  sm_run_options ro = {.deadline_us = timeout_us ? sm_monotonic_us() + timeout_us : 0, .max_run_bytes = max_run_bytes};
  if ((st = sm_model_session_run_opts(m, feed_names, feed_vals, (int)fs->n, fetch_names, (int)nout, NULL, 0, results,
                                      &ro))) {
    rc = sm__cli_fail(st);
    goto done;
  }
  if (json) fputs("{\"outputs\": {", stdout);
  for (size_t k = 0; k < nout; k++) {
    if (json) {
      fputs(k ? ",\n  " : "\n  ", stdout);
      sm__json_str(stdout, outs[k].key, strlen(outs[k].key));
      fputs(": {\"dtype\": ", stdout);
      const char *dn = sm_dtype_name(sm_tensor_dtype(results[k]));
      if (dn) sm__json_str(stdout, dn, strlen(dn));
      else printf("%d", (int)sm_tensor_dtype(results[k]));
      fputs(", \"shape\": [", stdout);
      for (int d = 0; d < sm_tensor_rank(results[k]); d++)
        printf(d ? ", %lld" : "%lld", (long long)sm_tensor_dims(results[k])[d]);
      fputs("], \"value\": ", stdout);
      sm__cli_print_json_value(stdout, results[k]);
    } else {
      printf("Result for output key %s:\n", outs[k].key);
      sm__cli_print_numpy(stdout, results[k]);
    }
    if (!outdir) {
      if (json) fputc('}', stdout);
      continue;
    }
    fflush(stdout);
    if (mkdirs(outdir) != 0) { rc = sm__cli_error(1, "cannot create --outdir %s: %s", outdir, strerror(errno)); goto done; }
    char *name = malloc(strlen(outs[k].key) + 5);
    if (!name) { rc = sm__cli_error(1, "out of memory"); goto done; }
    sprintf(name, "%s.npy", outs[k].key);
    size_t ol = strlen(outdir);
    char *path = malloc(ol + strlen(name) + 2);
    if (path) sprintf(path, "%s%s%s", outdir, ol && outdir[ol - 1] == '/' ? "" : "/", name); /* os.path.join */
    free(name);
    if (!path) { rc = sm__cli_error(1, "out of memory"); goto done; }
    struct stat sb;
    if (!overwrite && stat(path, &sb) == 0) {
      rc = sm__cli_error(1, "Output file %s already exists. Add \"--overwrite\" to overwrite the existing output files.", path);
      free(path);
      goto done;
    }
    st = sm_npy_write(path, results[k]);
    if (st) { free(path); rc = sm__cli_fail(st); goto done; }
    if (json) {
      fputs(", \"file\": ", stdout);
      sm__json_str(stdout, path, strlen(path));
      fputc('}', stdout);
    } else {
      printf("Output %s is saved to %s\n", outs[k].key, path);
    }
    free(path);
  }
  if (json) fputs("\n}}\n", stdout);
done:
  fflush(stdout);
  for (size_t i = 0; feed_vals && i < fs->n; i++) sm_tensor_free(feed_vals[i]);
  for (size_t k = 0; results && k < nout; k++) sm_tensor_free(results[k]);
  free(feed_vals);
  free(results);
  free(feed_names);
  free(fetch_names);
  free(tags);
  free(ins);
  free(outs);
  free(sigs);
  sm_model_free(m);
  sm_saved_model_free(sm);
  return rc;
}

int sm__cli_run(int argc, char **argv) {
  sm_flag flags[] = {
      {"dir", SM_FLAG_STRING, "Directory containing the SavedModel.", NULL, 0},
      {"tag_set", SM_FLAG_STRING, "Comma-separated set of tags that identify the MetaGraphDef to run.", NULL, 0},
      {"signature_def", SM_FLAG_STRING, "Key of the SignatureDef to run.", NULL, 0},
      {"inputs", SM_FLAG_STRING,
       "'<input_key>=<filename>' or '<input_key>=<filename>[<variable_name>]', separated by ';'; .npy or .npz files.",
       NULL, 0},
      {"input_exprs", SM_FLAG_STRING,
       "'<input_key>=<python literal>', separated by ';'. Overrides the same keys from --inputs.", NULL, 0},
      {"input_examples", SM_FLAG_STRING,
       "'<input_key>=[{feature0:value_list,feature1:value_list}]', separated by ';'. Overrides the same keys from "
       "--inputs and --input_exprs.", NULL, 0},
      {"outdir", SM_FLAG_STRING, "If given, each output is also written to <outdir>/<output_key>.npy.", NULL, 0},
      {"overwrite", SM_FLAG_BOOL, "Overwrite output files that already exist.", NULL, 0},
      {"json", SM_FLAG_BOOL, "Print the outputs as one JSON document instead (schema above).", NULL, 0},
      {"allow_external_files", SM_FLAG_BOOL,
       "Let the model's ops read files outside --dir (vocabularies, checkpoints); only for models you trust.", NULL,
       0},
      {"tf_debug", SM_FLAG_BOOL, "Accepted for compatibility; there is no TensorFlow debugger here.", NULL, 0},
      {"worker", SM_FLAG_STRING, "Remote TensorFlow workers are not supported.", NULL, 0},
      {"init_tpu", SM_FLAG_BOOL, "Accepted for compatibility; there is no TPU here.", NULL, 0},
      {"use_tfrt", SM_FLAG_BOOL, "Accepted for compatibility; results do not depend on it.", NULL, 0},
      {"timeout", SM_FLAG_STRING, "Deadline for the run in seconds (default: none).", NULL, 0},
      {"max_run_bytes", SM_FLAG_STRING, "Memory budget of the run in bytes, K/M/G suffixes (default: none).", NULL, 0},
      {"max_graph_nodes", SM_FLAG_STRING, "The load budget's node limit (default: from the file sizes).", NULL, 0},
      {"max_load_bytes", SM_FLAG_STRING, "The load budget's byte limit, K/M/G suffixes (default: from the file sizes).",
       NULL, 0},
      {"device", SM_FLAG_STRING, SM_CLI_DEVICE_HELP, NULL, 0},
  };
  size_t nflags = sizeof flags / sizeof *flags;
  int r = sm__cli_parse_flags(argc, argv, flags, nflags, usage);
  if (r == -1) return 0;
  if (r) return r;
  for (int i = 0; i < 3; i++)
    if (!flags[i].value)
      return sm__cli_error(2, "flag --%s=None: Flag --%s must have a value other than None.", flags[i].name, flags[i].name);
  const char *inputs = sm__cli_flag(flags, nflags, "inputs")->value;
  const char *exprs = sm__cli_flag(flags, nflags, "input_exprs")->value;
  const char *examples = sm__cli_flag(flags, nflags, "input_examples")->value;
  if ((!inputs || !*inputs) && (!exprs || !*exprs) && (!examples || !*examples))
    return sm__cli_error(1, "At least one of --inputs, --input_exprs or --input_examples must be required");
  int64_t timeout_us = 0;
  size_t max_run_bytes = 0;
  const char *tv = sm__cli_flag(flags, nflags, "timeout")->value, *mv = sm__cli_flag(flags, nflags, "max_run_bytes")->value;
  if (tv && sm__cli_parse_seconds("run", "timeout", tv, &timeout_us)) return 2;
  if (mv && sm__cli_parse_bytes("run", "max_run_bytes", mv, &max_run_bytes)) return 2;
  size_t load_limits[2] = {0, 0};
  const char *lv[2] = {sm__cli_flag(flags, nflags, "max_graph_nodes")->value,
                       sm__cli_flag(flags, nflags, "max_load_bytes")->value};
  if (lv[0] && sm__cli_parse_bytes("run", "max_graph_nodes", lv[0], &load_limits[0])) return 2;
  if (lv[1] && sm__cli_parse_bytes("run", "max_load_bytes", lv[1], &load_limits[1])) return 2;
  int device;
  if (sm__cli_parse_device("run", sm__cli_flag(flags, nflags, "device")->value, &device)) return 2;
  if (sm__cli_flag(flags, nflags, "worker")->value)
    return sm__cli_error(1, "--worker: running on a remote TensorFlow worker is not supported");
  if (sm__cli_flag(flags, nflags, "tf_debug")->on)
    fprintf(stderr, "savedmodel run: --tf_debug ignored (there is no TensorFlow debugger here)\n");
  if (sm__cli_flag(flags, nflags, "init_tpu")->on)
    fprintf(stderr, "savedmodel run: --init_tpu ignored (there is no TPU here)\n");

  feeds fs = {0};
  feeds ex = {0}, lit = {0};
  sm_status *st = NULL;
  if (inputs) st = parse_inputs(inputs, &fs);
  /* TF parses --input_exprs and --input_examples before reading any file; errors come first */
  sm_status *st2 = exprs ? parse_exprs(exprs, "--input_exprs", &lit) : NULL;
  sm_status *st3 = !st2 && examples ? parse_exprs(examples, "--input_examples", &ex) : NULL;
  if (st2 || st3) { sm_status_free(st); st = st2 ? st2 : st3; }
  if (st) {
    feeds_free(&fs); feeds_free(&lit); feeds_free(&ex);
    return sm__cli_fail(st);
  }
  /* then the files, as load_inputs_from_input_arg_string reads them */
  for (size_t i = 0; i < fs.n && !st; i++) {
    st = load_input_file(fs.f[i].file, fs.f[i].var, &fs.f[i].array);
  }
  if (st) {
    feeds_free(&fs); feeds_free(&lit); feeds_free(&ex);
    return sm__cli_fail(st);
  }
  /* merge: --input_exprs over --inputs, --input_examples over both, with TF's warnings */
  for (int pass = 0; pass < 2 && !st; pass++) {
    feeds *src = pass ? &ex : &lit;
    for (size_t i = 0; i < src->n; i++) {
      int existed;
      feed *f = feeds_put(&fs, src->f[i].key, strlen(src->f[i].key), &existed);
      if (!f) { st = sm_status_new(SM_NO_MEMORY, "out of memory"); break; }
      if (existed && !pass)
        fprintf(stderr, "WARNING: input_key %s has been specified with both --inputs and --input_exprs options. Value in "
                        "--input_exprs will be used.\n", f->key);
      if (existed && pass)
        fprintf(stderr, "WARNING: input_key %s has been specified in multiple options. Value in --input_examples will be "
                        "used.\n", f->key);
      free(f->file);
      free(f->var);
      f->file = f->var = NULL;
      f->array = src->f[i].array;
      f->literal = src->f[i].literal;
      f->from_examples = src->f[i].from_examples;
      src->f[i].array = NULL;
      src->f[i].literal = NULL;
    }
  }
  feeds_free(&lit);
  feeds_free(&ex);
  if (st) { feeds_free(&fs); return sm__cli_fail(st); }
  int rc = run_model(flags[0].value, flags[1].value, flags[2].value, &fs, sm__cli_flag(flags, nflags, "outdir")->value,
                     sm__cli_flag(flags, nflags, "overwrite")->on, sm__cli_flag(flags, nflags, "json")->on, timeout_us,
                     max_run_bytes, load_limits, sm__cli_flag(flags, nflags, "allow_external_files")->on, device);
  feeds_free(&fs);
  return rc;
}

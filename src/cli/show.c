/* show.c - `savedmodel show`: saved_model_cli show, byte for byte.
 *
 * Reproduces tensorflow/python/tools/saved_model_cli.py (TF 2.21): _show_tag_sets,
 * _show_signature_def_map_keys, _show_inputs_outputs, _print_tensor_info, _show_all and
 * _show_ops_in_metagraph, with their quirks (tag-set lookups that strip blanks in one mode and not
 * in the other, the ops set printed as a Python set - here sorted, since Python's order is
 * arbitrary). The "Concrete Functions" part of --all lives in show_functions.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/show.h"
#include "savedmodel/dtype.h"
#include "savedmodel/format.h"

static const char usage[] =
    "usage: savedmodel show --dir DIR [--all] [--tag_set TAGS [--signature_def KEY]] [--list_ops]\n"
    "                       [--json]\n"
    "\n"
    "Shows what a SavedModel holds, printing exactly what `saved_model_cli show` prints:\n"
    "  savedmodel show --dir /tmp/saved_model                      (tag-sets)\n"
    "  savedmodel show --dir /tmp/saved_model --tag_set serve      (SignatureDef keys)\n"
    "  savedmodel show --dir /tmp/saved_model --tag_set serve --signature_def serving_default\n"
    "  savedmodel show --dir /tmp/saved_model --tag_set serve --list_ops\n"
    "  savedmodel show --dir /tmp/saved_model --all\n"
    "With --json the same information is printed as one JSON document.\n";

/* ---- tag-sets ---- */

static size_t meta_graph_ntags(const Tensorflow__MetaGraphDef *mg) {
  return mg->meta_info_def ? mg->meta_info_def->n_tags : 0;
}
static const char *meta_graph_tag(const Tensorflow__MetaGraphDef *mg, size_t i) {
  const char *t = mg->meta_info_def->tags[i];
  return t ? t : "";
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The tags of mg, sorted (malloc'ed array of borrowed strings). */
static const char **sorted_tags(const Tensorflow__MetaGraphDef *mg, size_t *n) {
  *n = meta_graph_ntags(mg);
  const char **t = malloc((*n ? *n : 1) * sizeof *t);
  if (!t) return *n = 0, NULL;
  for (size_t i = 0; i < *n; i++) t[i] = meta_graph_tag(mg, i);
  qsort(t, *n, sizeof *t, str_cmp);
  return t;
}

/* Python's comparison of two lists of str: the order of sorted(meta_graphs, key=list(tags)). */
static int tag_list_cmp(const Tensorflow__MetaGraphDef *a, const Tensorflow__MetaGraphDef *b) {
  size_t na = meta_graph_ntags(a), nb = meta_graph_ntags(b);
  for (size_t i = 0; i < na && i < nb; i++) {
    int c = strcmp(meta_graph_tag(a, i), meta_graph_tag(b, i));
    if (c) return c;
  }
  return (na > nb) - (na < nb);
}

/* Meta graphs in Python's stable sorted() order (insertion sort keeps equal ones in place). */
static const Tensorflow__MetaGraphDef **sorted_meta_graphs(const Tensorflow__SavedModel *sm) {
  size_t n = sm->n_meta_graphs;
  const Tensorflow__MetaGraphDef **m = malloc((n ? n : 1) * sizeof *m);
  if (!m) return NULL;
  for (size_t i = 0; i < n; i++) {
    const Tensorflow__MetaGraphDef *x = sm->meta_graphs[i];
    size_t j = i;
    for (; j > 0 && tag_list_cmp(m[j - 1], x) > 0; j--) m[j] = m[j - 1];
    m[j] = x;
  }
  return m;
}

static int show_tag_sets(const Tensorflow__SavedModel *sm) {
  const Tensorflow__MetaGraphDef **mgs = sorted_meta_graphs(sm);
  if (!mgs) return sm__cli_error(1, "out of memory");
  printf("The given SavedModel contains the following tag-sets:\n");
  for (size_t i = 0; i < sm->n_meta_graphs; i++) {
    size_t n;
    const char **tags = sorted_tags(mgs[i], &n);
    char *joined = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&joined, &len);
    if (!mem || !tags) {
      if (mem) fclose(mem);
      free(joined);
      free(tags);
      free(mgs);
      return sm__cli_error(1, "out of memory");
    }
    for (size_t k = 0; k < n; k++) fprintf(mem, k ? ", %s" : "%s", tags[k]);
    fclose(mem);
    sm__py_repr_str(stdout, joined, len);
    putchar('\n');
    free(joined);
    free(tags);
  }
  free(mgs);
  return 0;
}

/* ---- finding a MetaGraph the way saved_model_utils.get_meta_graph_def does ---- */

static int is_py_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* Splits tag_set on ','. strip = 1: trims blanks (_sanitize_nonempty_str_list); empty items are
 * dropped either way. Returns a malloc'ed array of malloc'ed strings. */
static char **split_tags(const char *tag_set, int strip, size_t *n) {
  size_t cap = 1;
  for (const char *p = tag_set; *p; p++) cap += *p == ',';
  char **out = calloc(cap, sizeof *out);
  *n = 0;
  if (!out) return NULL;
  const char *p = tag_set;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    const char *s = p;
    if (strip) {
      while (len && is_py_space(*s)) s++, len--;
      while (len && is_py_space(s[len - 1])) len--;
    }
    if (len) {
      char *t = malloc(len + 1);
      if (!t) break;
      memcpy(t, s, len);
      t[len] = 0;
      out[(*n)++] = t;
    }
    if (!e) break;
    p = e + 1;
  }
  return out;
}

static void free_tags(char **t, size_t n) {
  for (size_t i = 0; t && i < n; i++) free(t[i]);
  free(t);
}

/* TF's RuntimeError text, printed as our error. */
static int tag_set_not_found(const Tensorflow__SavedModel *sm, const char *tag_set) {
  fprintf(stderr,
          "savedmodel: MetaGraphDef associated with tag-set %s could not be found in the "
          "SavedModel. Please use one of the following tag-sets: [",
          tag_set);
  for (size_t i = 0; i < sm->n_meta_graphs; i++) {
    size_t n;
    const char **tags = sorted_tags(sm->meta_graphs[i], &n);
    char *joined = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&joined, &len);
    if (mem) {
      for (size_t k = 0; tags && k < n; k++) /* ",".join(set(tags)): duplicates collapse */
        if (k == 0 || strcmp(tags[k], tags[k - 1]) != 0) fprintf(mem, k ? ",%s" : "%s", tags[k]);
      fclose(mem);
      if (i) fputs(", ", stderr);
      sm__py_repr_str(stderr, joined ? joined : "", len);
    }
    free(joined);
    free(tags);
  }
  fputs("]\n", stderr);
  return 1;
}

/* Looks up the MetaGraph for tag_set; on failure prints TF's message and returns 1. */
static int find_meta_graph(const Tensorflow__SavedModel *sm, const char *tag_set, int sanitize,
                           const Tensorflow__MetaGraphDef **mg) {
  size_t n;
  char **tags = split_tags(tag_set, sanitize, &n);
  if (!tags) return sm__cli_error(1, "out of memory");
  if (sanitize && n == 0) {
    free_tags(tags, n);
    return sm__cli_error(1, "tag_set must contain at least one non-empty item.");
  }
  sm_status *st = sm_saved_model_find_meta_graph(sm, (const char *const *)tags, n, mg);
  int rc = 0;
  if (st) {
    int notfound = sm_status_code(st) == SM_NOT_FOUND;
    if (!notfound) rc = sm__cli_fail(st);
    else {
      sm_status_free(st);
      /* The message names the tag-set as TF received it: re-joined when sanitized. */
      char *joined = NULL;
      size_t len = 0;
      FILE *mem = open_memstream(&joined, &len);
      if (mem) {
        if (sanitize)
          for (size_t i = 0; i < n; i++) fprintf(mem, i ? ",%s" : "%s", tags[i]);
        else fputs(tag_set, mem);
        fclose(mem);
      }
      rc = tag_set_not_found(sm, joined ? joined : tag_set);
      free(joined);
    }
  }
  free_tags(tags, n);
  return rc;
}

/* For run and scan: the same lookup, sanitized as they sanitize (declared in show.h). */
int sm__cli_find_meta_graph(const Tensorflow__SavedModel *sm, const char *tag_set, const Tensorflow__MetaGraphDef **mg) {
  return find_meta_graph(sm, tag_set, 1, mg);
}

/* ---- signatures ---- */

static void print_tensor_info(const Tensorflow__TensorInfo *ti, int indent) {
  int dtype = ti ? (int)ti->dtype : 0;
  const char *dn = sm_dtype_name(dtype);
  printf("%*s    dtype: ", 2 * indent, "");
  if (dn) fputs(dn, stdout);
  else printf("%d", dtype); /* TF raises KeyError here; a number says more */
  printf("\n%*s    shape: ", 2 * indent, "");
  const Tensorflow__TensorShapeProto *sh = ti ? ti->tensor_shape : NULL;
  if (sh && sh->unknown_rank) {
    fputs("unknown_rank", stdout);
  } else {
    putchar('(');
    for (size_t i = 0; sh && i < sh->n_dim; i++)
      printf(i ? ", %lld" : "%lld", (long long)(sh->dim[i] ? sh->dim[i]->size : 0));
    putchar(')');
  }
  const char *name = ti && ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME && ti->name
                         ? ti->name
                         : "";
  printf("\n%*s    name: %s\n", 2 * indent, "", name);
}

/* TF lists the keys in its map's hash order, which nothing can reproduce; sorted is stable. */
static int signature_not_found(const Tensorflow__MetaGraphDef *mg, const char *key) {
  fprintf(stderr, "savedmodel: Could not find signature \"%s\". Please choose from: ", key);
  size_t n;
  sm_kv *sigs = sm__meta_graph_signatures(mg, &n);
  for (size_t i = 0; i < n; i++) fprintf(stderr, i ? ", %s" : "%s", sigs[i].key);
  fputc('\n', stderr);
  free(sigs);
  return 1;
}

static const Tensorflow__SignatureDef *find_signature(const Tensorflow__MetaGraphDef *mg,
                                                      const char *key, int *found) {
  const Tensorflow__SignatureDef *s = NULL;
  *found = 0;
  for (size_t i = 0; i < mg->n_signature_def; i++)
    if (mg->signature_def[i]->key && strcmp(mg->signature_def[i]->key, key) == 0) {
      s = mg->signature_def[i]->value;
      *found = 1;
    }
  return s;
}

static void print_tensor_map(sm_kv *kv, size_t n, const char *what, int indent) {
  for (size_t i = 0; i < n; i++) {
    printf("%*s  %s['%s'] tensor_info:\n", 2 * indent, "", what, kv[i].key);
    print_tensor_info(kv[i].value, indent + 1);
  }
}

static int show_inputs_outputs(const Tensorflow__MetaGraphDef *mg, const char *key, int indent) {
  int found;
  const Tensorflow__SignatureDef *s = find_signature(mg, key, &found);
  if (!found) return signature_not_found(mg, key);
  size_t nin = 0, nout = 0;
  sm_kv *in = s ? sm__signature_inputs(s, &nin) : NULL;
  sm_kv *out = s ? sm__signature_outputs(s, &nout) : NULL;
  printf("%*sThe given SavedModel SignatureDef contains the following input(s):\n", 2 * indent, "");
  print_tensor_map(in, nin, "inputs", indent);
  printf("%*sThe given SavedModel SignatureDef contains the following output(s):\n", 2 * indent, "");
  print_tensor_map(out, nout, "outputs", indent);
  printf("%*sMethod name is: %s\n", 2 * indent, "", s && s->method_name ? s->method_name : "");
  free(in);
  free(out);
  return 0;
}

static int show_signature_keys(const Tensorflow__MetaGraphDef *mg) {
  size_t n;
  sm_kv *sigs = sm__meta_graph_signatures(mg, &n);
  printf("The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:\n");
  for (size_t i = 0; i < n; i++) printf("SignatureDef key: \"%s\"\n", sigs[i].key);
  free(sigs);
  return 0;
}

/* "The MetaGraph with tag set ['serve'] contains the following ops: {'Add', 'Const'}" */
static int show_ops(const Tensorflow__MetaGraphDef *mg) {
  const char **ops;
  size_t n;
  if (sm__graph_ops_used(mg->graph_def, &ops, &n) != 0) return sm__cli_error(1, "out of memory");
  fputs("The MetaGraph with tag set [", stdout);
  for (size_t i = 0; i < meta_graph_ntags(mg); i++) {
    if (i) fputs(", ", stdout);
    const char *t = meta_graph_tag(mg, i);
    sm__py_repr_str(stdout, t, strlen(t));
  }
  fputs("] contains the following ops: ", stdout);
  if (n == 0) fputs("set()", stdout);
  else {
    putchar('{');
    for (size_t i = 0; i < n; i++) {
      if (i) fputs(", ", stdout);
      sm__py_repr_str(stdout, ops[i], strlen(ops[i]));
    }
    putchar('}');
  }
  putchar('\n');
  free(ops);
  return 0;
}

static int show_all(const Tensorflow__SavedModel *sm) {
  const Tensorflow__MetaGraphDef **mgs = sorted_meta_graphs(sm);
  int rc = 0;
  if (!mgs) return sm__cli_error(1, "out of memory");
  for (size_t i = 0; i < sm->n_meta_graphs && rc == 0; i++) {
    const Tensorflow__MetaGraphDef *mg = mgs[i];
    fputs("\nMetaGraphDef with tag-set: '", stdout);
    for (size_t k = 0; k < meta_graph_ntags(mg); k++) printf(k ? ", %s" : "%s", meta_graph_tag(mg, k));
    fputs("' contains the following SignatureDefs:\n", stdout);
    size_t n;
    sm_kv *sigs = sm__meta_graph_signatures(mg, &n);
    for (size_t k = 0; k < n && rc == 0; k++) {
      printf("\nsignature_def['%s']:\n", sigs[k].key);
      rc = show_inputs_outputs(mg, sigs[k].key, 1);
    }
    free(sigs);
    if (rc == 0) rc = show_ops(mg);
  }
  free(mgs);
  if (rc == 0) sm__show_functions(stdout, sm);
  return rc;
}

int sm__cli_show(int argc, char **argv) {
  sm_flag flags[] = {
      {"dir", SM_FLAG_STRING, "Directory containing the SavedModel.", NULL, 0},
      {"all", SM_FLAG_BOOL, "Output all available information in the SavedModel.", NULL, 0},
      {"tag_set", SM_FLAG_STRING,
       "Comma-separated set of tags that identify variant graphs in the SavedModel.", NULL, 0},
      {"signature_def", SM_FLAG_STRING,
       "A SignatureDef (by key) within the SavedModel to display input(s) and output(s) for.",
       NULL, 0},
      {"list_ops", SM_FLAG_BOOL, "Output ops used by a MetaGraphDef specified by tag_set.", NULL, 0},
      {"json", SM_FLAG_BOOL, "Print the information as JSON.", NULL, 0},
  };
  const size_t nflags = sizeof flags / sizeof *flags;
  int rc = sm__cli_parse_flags(argc, argv, flags, nflags, usage);
  if (rc) return rc < 0 ? 0 : rc;
  const char *dir = flags[0].value, *tag_set = flags[2].value, *sig = flags[3].value;
  int all = flags[1].on, list_ops = flags[4].on, json = flags[5].on;
  if (!dir) {
    fprintf(stderr, "savedmodel show: flag --dir must have a value\n%s", usage);
    return 2;
  }

  Tensorflow__SavedModel *sm = NULL;
  sm_status *st = sm_saved_model_read(dir, &sm);
  if (st) return sm__cli_fail(st);

  const Tensorflow__MetaGraphDef *mg = NULL;
  if (json) {
    if (!all && tag_set) rc = find_meta_graph(sm, tag_set, 1, &mg);
    int found = 1;
    if (rc == 0 && mg && sig && (find_signature(mg, sig, &found), !found)) rc = signature_not_found(mg, sig);
    if (rc == 0) sm__show_json(stdout, sm, mg, all ? NULL : sig, all || list_ops);
  } else if (all) {
    rc = show_all(sm);
  } else if (!tag_set) {
    if (list_ops) printf("--list_ops must be paired with a tag-set or with --all.\n");
    rc = show_tag_sets(sm);
  } else {
    if (list_ops) {
      rc = find_meta_graph(sm, tag_set, 1, &mg);
      if (rc == 0) rc = show_ops(mg);
    }
    if (rc == 0 && !sig) {
      /* TF looks the tag-set up unstripped here (get_signature_def_map). */
      rc = find_meta_graph(sm, tag_set, 0, &mg);
      if (rc == 0) rc = show_signature_keys(mg);
    } else if (rc == 0) {
      rc = find_meta_graph(sm, tag_set, 1, &mg);
      if (rc == 0) rc = show_inputs_outputs(mg, sig, 0);
    }
  }
  sm_saved_model_free(sm);
  if (fflush(stdout) != 0 && rc == 0) rc = sm__cli_error(1, "writing to stdout failed");
  return rc;
}

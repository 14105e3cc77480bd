/* scan.c - `savedmodel scan`: saved_model_cli scan, plus what this runtime cannot run.
 *
 * Mirrors scan() and scan_meta_graph_def() of tensorflow/python/tools/saved_model_cli.py (TF 2.21):
 * every MetaGraph (or the one --tag_set names) is checked for the ops of the denylist (default
 * WriteFile, ReadFile, PrintV2, or --op_denylist) among ops_used_by_graph_def, and one line is
 * printed per MetaGraph with the tags as a Python list and the ops as a Python set (sorted here;
 * Python's set order is arbitrary). After each, one line of ours lists the ops the runtime of
 * this library has no kernel for (sm_model_scan), and one per op that reads a file (sm__file_ops: its path,
 * inside or outside the export). Unlike saved_model_cli, scan exits 1 when it finds
 * either kind of op (so that scripts and CI can gate on it); --json prints the same as one document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/show.h"
#include "runtime/verify.h"
#include "savedmodel/format.h"
#include "savedmodel/model.h"

static const char usage[] =
    "usage: savedmodel scan --dir DIR [--tag_set TAGS] [--op_denylist OPS] [--json]\n"
    "\n"
    "Scans a SavedModel for ops on a denylist, printing what `saved_model_cli scan` prints, and\n"
    "after each MetaGraph a line naming the ops this library's runtime cannot run:\n"
    "  savedmodel scan --dir /tmp/saved_model\n"
    "  savedmodel scan --dir /tmp/saved_model --op_denylist OpName,OpName,OpName\n"
    "  savedmodel scan --dir /tmp/saved_model --tag_set serve\n"
    "\n"
    "Exit status: 0 when no MetaGraph uses a denylisted op or one the runtime lacks, 1 when one\n"
    "does (or on an error), 2 on a usage error. With --json, one document:\n"
    "  {\"meta_graphs\": [{\"tags\": [str], \"denylist\": [str], \"denylisted_ops\": [str],\n"
    "                    \"unsupported_ops\": [str], \"file_ops\": [{\"op\": str, \"node\": str,\n"
    "                    \"function\": str|null, \"path\": str|null,\n"
    "                    \"source\": \"const\"|\"asset\"|\"loader\"|\"computed\", \"outside\": bool|null}]}],\n"
    " \"found\": bool}\n"
    "(one object per MetaGraph scanned; op lists sorted; found: any op in either list, or a file\n"
    "read from outside the export directory). Every op that reads a file is listed with its path\n"
    "when the graph gives it (a Const, an asset, the checkpoint the loader feeds).\n";

static const char *const default_denylist[] = {"PrintV2", "ReadFile", "WriteFile"};

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Python's repr of a set of str, in sorted order; set() when empty. */
static void print_set(const char *const *items, size_t n) {
  if (n == 0) { fputs("set()", stdout); return; }
  fputc('{', stdout);
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(", ", stdout);
    sm__py_repr_str(stdout, items[i], strlen(items[i]));
  }
  fputc('}', stdout);
}

static void print_tags(const Tensorflow__MetaGraphDef *mg) {
  fputc('[', stdout);
  size_t n = mg->meta_info_def ? mg->meta_info_def->n_tags : 0;
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(", ", stdout);
    const char *t = mg->meta_info_def->tags[i] ? mg->meta_info_def->tags[i] : "";
    sm__py_repr_str(stdout, t, strlen(t));
  }
  fputc(']', stdout);
}

/* JSON list of strings. */
static void json_list(const char *const *items, size_t n) {
  fputc('[', stdout);
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(", ", stdout);
    sm__json_str(stdout, items[i], strlen(items[i]));
  }
  fputc(']', stdout);
}

/* Scans one MetaGraph: prints its lines (or, with json, its object of the "meta_graphs" list) and
 * sets *found when a denylisted op or one the runtime lacks is there. Returns the exit code. */
static int scan_one(const char *dir, const Tensorflow__MetaGraphDef *mg, char **deny, size_t ndeny, int json,
                    int first, int *found) {
  const char **ops = NULL;
  size_t nops = 0;
  if (sm__graph_ops_used(mg->graph_def, &ops, &nops) != 0) return sm__cli_error(1, "out of memory");
  const char **hit = malloc((ndeny ? ndeny : 1) * sizeof *hit);
  if (!hit) { free(ops); return sm__cli_error(1, "out of memory"); }
  size_t nhit = 0;
  for (size_t i = 0; i < ndeny; i++)
    for (size_t k = 0; k < nops; k++)
      if (strcmp(deny[i], ops[k]) == 0) { hit[nhit++] = deny[i]; break; }
  free(ops);

  /* ours: the ops the runtime lacks, for the same tag set */
  size_t ntags = mg->meta_info_def ? mg->meta_info_def->n_tags : 0;
  const char **tags = calloc(ntags + 1, sizeof *tags);
  if (!tags) { free(hit); return sm__cli_error(1, "out of memory"); }
  for (size_t i = 0; i < ntags; i++) tags[i] = mg->meta_info_def->tags[i] ? mg->meta_info_def->tags[i] : "";
  char **denied = NULL, **missing = NULL;
  sm_status *st = sm_model_scan(dir, tags, (int)ntags, &denied, &missing);
  if (st) {
    free(tags);
    free(hit);
    return sm__cli_fail(st);
  }
  size_t nmiss = 0;
  while (missing && missing[nmiss]) nmiss++;
  if (nhit || nmiss) *found = 1;
  sm_file_op *fops = NULL;
  size_t nfops = 0;
  if ((st = sm__file_ops(dir, mg, &fops, &nfops))) {
    free(tags);
    free(hit);
    sm_string_list_free(denied);
    sm_string_list_free(missing);
    return sm__cli_fail(st);
  }
  for (size_t i = 0; i < nfops; i++)
    if (fops[i].inside == 0) *found = 1;

  if (json) {
    fputs(first ? "\n  {\"tags\": " : ",\n  {\"tags\": ", stdout);
    json_list(tags, ntags);
    fputs(", \"denylist\": ", stdout);
    json_list((const char *const *)deny, ndeny);
    fputs(", \"denylisted_ops\": ", stdout);
    json_list(hit, nhit);
    fputs(", \"unsupported_ops\": ", stdout);
    json_list((const char *const *)missing, nmiss);
    fputs(", \"file_ops\": [", stdout);
    for (size_t i = 0; i < nfops; i++) {
      const sm_file_op *f = &fops[i];
      fputs(i ? ", {\"op\": " : "{\"op\": ", stdout);
      sm__json_str(stdout, f->op, strlen(f->op));
      fputs(", \"node\": ", stdout);
      sm__json_str(stdout, f->node, strlen(f->node));
      fputs(", \"function\": ", stdout);
      if (f->function) sm__json_str(stdout, f->function, strlen(f->function));
      else fputs("null", stdout);
      fputs(", \"path\": ", stdout);
      if (f->path) sm__json_str(stdout, f->path, strlen(f->path));
      else fputs("null", stdout);
      printf(", \"source\": \"%s\", \"outside\": %s}", f->source,
             f->inside == 0 ? "true" : f->inside == 1 ? "false" : "null");
    }
    fputs("]}", stdout);
  } else {
    fputs("MetaGraph with tag set ", stdout);
    print_tags(mg);
    if (nhit) {
      fputs(" contains the following denylisted ops: ", stdout);
      print_set(hit, nhit);
    } else {
      fputs(" does not contain the default denylisted ops: ", stdout);
      print_set((const char *const *)deny, ndeny);
    }
    fputs("\nMetaGraph with tag set ", stdout);
    print_tags(mg);
    if (nmiss) {
      fputs(" uses ops this runtime does not implement: ", stdout);
      print_set((const char *const *)missing, nmiss);
      fputc('\n', stdout);
    } else {
      fputs(" uses only ops this runtime implements\n", stdout);
    }
    for (size_t i = 0; i < nfops; i++) {
      const sm_file_op *f = &fops[i];
      fputs("MetaGraph with tag set ", stdout);
      print_tags(mg);
      printf(" reads a file: %s node ", f->op);
      sm__py_repr_str(stdout, f->node, strlen(f->node));
      if (f->function) {
        fputs(" in function ", stdout);
        sm__py_repr_str(stdout, f->function, strlen(f->function));
      }
      if (f->path) {
        printf(", path (%s) ", f->source);
        sm__py_repr_str(stdout, f->path, strlen(f->path));
      } else {
        fputs(", path computed when it runs", stdout);
      }
      fputs(f->inside == 0   ? ": OUTSIDE the export directory (refused unless --allow_external_files)\n"
            : f->inside == 1 ? ": inside the export directory\n"
                             : "\n",
            stdout);
    }
  }
  sm__file_ops_free(fops, nfops);
  free(tags);
  free(hit);
  sm_string_list_free(denied);
  sm_string_list_free(missing);
  return 0;
}

/* _get_op_denylist_set: split on ',', strip blanks, drop empty items; sorted and unique here. */
static char **parse_denylist(const char *s, size_t *n) {
  size_t cap = 1;
  for (const char *p = s; *p; p++) cap += *p == ',';
  char **out = calloc(cap, sizeof *out);
  *n = 0;
  if (!out) return NULL;
  for (const char *p = s;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    const char *b = p;
    while (len && (*b == ' ' || (*b >= '\t' && *b <= '\r'))) b++, len--;
    while (len && (b[len - 1] == ' ' || (b[len - 1] >= '\t' && b[len - 1] <= '\r'))) len--;
    if (len) out[(*n)++] = strndup(b, len);
    if (!e) break;
    p = e + 1;
  }
  qsort(out, *n, sizeof *out, str_cmp);
  size_t k = 0;
  for (size_t i = 0; i < *n; i++) {
    if (!out[i]) continue;
    if (k && strcmp(out[k - 1], out[i]) == 0) { free(out[i]); continue; }
    out[k++] = out[i];
  }
  *n = k;
  return out;
}

int sm__cli_scan(int argc, char **argv) {
  sm_flag flags[] = {
      {"dir", SM_FLAG_STRING, "Directory containing the SavedModel.", NULL, 0},
      {"tag_set", SM_FLAG_STRING, "Comma-separated tags of the one MetaGraphDef to scan (default: all).", NULL, 0},
      {"op_denylist", SM_FLAG_STRING,
       "Comma-separated ops to report instead of the default WriteFile, ReadFile, PrintV2.", NULL, 0},
      {"json", SM_FLAG_BOOL, "Print one JSON document instead (schema above).", NULL, 0},
  };
  size_t nflags = sizeof flags / sizeof *flags;
  int r = sm__cli_parse_flags(argc, argv, flags, nflags, usage);
  if (r == -1) return 0;
  if (r) return r;
  const char *dir = flags[0].value, *tag_set = flags[1].value, *deny_arg = flags[2].value;
  if (!dir) return sm__cli_error(2, "flag --dir=None: Flag --dir must have a value other than None.");
  char **deny;
  size_t ndeny;
  if (deny_arg && *deny_arg) { /* as in TF, an empty --op_denylist means the default list */
    deny = parse_denylist(deny_arg, &ndeny);
  } else {
    ndeny = sizeof default_denylist / sizeof *default_denylist;
    deny = calloc(ndeny, sizeof *deny);
    for (size_t i = 0; deny && i < ndeny; i++) deny[i] = strdup(default_denylist[i]);
  }
  if (!deny) return sm__cli_error(1, "out of memory");
  Tensorflow__SavedModel *sm = NULL;
  sm_status *st = sm_saved_model_read(dir, &sm);
  int rc = 0, found = 0, json = flags[3].on;
  if (st) rc = sm__cli_fail(st);
  else if (tag_set && *tag_set) {
    const Tensorflow__MetaGraphDef *mg;
    rc = sm__cli_find_meta_graph(sm, tag_set, &mg);
    if (!rc && json) fputs("{\"meta_graphs\": [", stdout);
    if (!rc) rc = scan_one(dir, mg, deny, ndeny, json, 1, &found);
  } else {
    if (json) fputs("{\"meta_graphs\": [", stdout);
    for (size_t i = 0; i < sm->n_meta_graphs && !rc; i++)
      rc = scan_one(dir, sm->meta_graphs[i], deny, ndeny, json, i == 0, &found);
  }
  if (!rc && json) printf("\n ],\n \"found\": %s}\n", found ? "true" : "false");
  if (!rc && found) rc = 1; /* denylisted or unsupported ops: a finding, as a linter reports one */
  fflush(stdout);
  sm_saved_model_free(sm);
  for (size_t i = 0; i < ndeny; i++) free(deny[i]);
  free(deny);
  return rc;
}

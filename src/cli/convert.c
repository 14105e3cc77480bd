/* convert.c - `savedmodel convert`: rewrites a SavedModel through libsavedmodel.
 *
 * DST gets saved_model.pb (or .pbtxt with --as_text) written by sm_saved_model_write, a
 * variables/ bundle in which every tensor was read and re-written by our bundle reader/writer,
 * and verbatim copies of assets/, assets.extra/ and fingerprint.pb. Everything is built in a
 * sibling directory DST.partial-PID and renamed to DST at the end, so a failure leaves no
 * half-written export behind (messages name DST, never the staging name). An existing DST is
 * refused; its missing parent directories are created. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "cli/cli.h"
#include "runtime/verify.h"
#include "savedmodel/bundle.h"
#include "savedmodel/constants.h"
#include "savedmodel/format.h"

static const char usage[] =
    "usage: savedmodel convert --dir SRC --out DST [--as_text]\n"
    "\n"
    "Reads the SavedModel in SRC (saved_model.pb or .pbtxt) and writes a new export directory\n"
    "DST through libsavedmodel: saved_model.pb (saved_model.pbtxt with --as_text), the\n"
    "variables re-written tensor by tensor, assets/, assets.extra/ and fingerprint.pb copied\n"
    "(a symlink that leads out of SRC is refused, not copied).\n"
    "DST must not exist; its missing parent directories are created.\n";

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", a, b);
  return p;
}

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory"); }

static sm_status *make_dir(const char *path) {
  if (mkdir(path, 0755) != 0)
    return sm_status_new(SM_IO, "%s: cannot create directory (%s)", path, strerror(errno));
  return NULL;
}

static sm_status *copy_file(const char *from, const char *to) {
  sm_status *st = NULL;
  int fd;
  uint64_t fsize;
  if ((st = sm__file_open_regular(from, UINT64_MAX, &fd, &fsize))) return st; /* a FIFO would block */
  FILE *in = fdopen(fd, "rb"), *out = NULL;
  if (!in) {
    close(fd);
    return sm_status_new(SM_IO, "%s: cannot open (%s)", from, strerror(errno));
  }
  out = fopen(to, "wb");
  if (!out) {
    st = sm_status_new(SM_IO, "%s: cannot create (%s)", to, strerror(errno));
    goto done;
  }
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) {
      st = sm_status_new(SM_IO, "%s: write failed (%s)", to, strerror(errno));
      goto done;
    }
  if (ferror(in)) st = sm_status_new(SM_IO, "%s: read failed", from);
done:
  fclose(in);
  if (out && fclose(out) != 0 && !st) st = sm_status_new(SM_IO, "%s: write failed (%s)", to, strerror(errno));
  return st;
}

/* Copies directory `from` into the new directory `to`, recursively. Symlinks are followed while
 * they resolve inside the export `root`; one that leads out of it is refused (copying it would
 * put a file from elsewhere, /etc/passwd say, into the new export). */
static sm_status *copy_tree(const char *root, const char *from, const char *to, int depth) {
  if (depth > 64) return sm_status_new(SM_OUT_OF_RANGE, "%s: directories nested too deep", from);
  sm_status *st = make_dir(to);
  if (st) return st;
  DIR *d = opendir(from);
  if (!d) return sm_status_new(SM_IO, "%s: cannot list (%s)", from, strerror(errno));
  struct dirent *ent;
  while (!st && (ent = readdir(d)) != NULL) {
    if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
    char *src = join(from, ent->d_name), *dst = join(to, ent->d_name);
    struct stat sb;
    if (!src || !dst) st = oom();
    else if (stat(src, &sb) != 0) st = sm_status_new(SM_IO, "%s: %s", src, strerror(errno));
    else if (sm__path_inside(root, src) != 1)
      st = sm_status_new(SM_FAILED_PRECONDITION, "%s: a symlink out of the export directory %s; not copied", src, root);
    else if (S_ISDIR(sb.st_mode)) st = copy_tree(root, src, dst, depth + 1);
    else st = copy_file(src, dst);
    free(src);
    free(dst);
  }
  closedir(d);
  return st;
}

static int is_dir(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}
static int exists(const char *p) {
  struct stat sb;
  return lstat(p, &sb) == 0;
}

/* Every tensor of SRC's bundle read and appended to a new bundle at DST's prefix. */
static sm_status *rewrite_variables(const char *src_prefix, const char *dst_prefix) {
  sm_bundle *b = NULL;
  sm_bundle_writer *w = NULL;
  sm_status *st = sm_bundle_open(src_prefix, &b);
  if (!st) st = sm_bundle_writer_open(dst_prefix, &w);
  for (size_t i = 0; !st && i < sm_bundle_num_entries(b); i++) {
    sm_bundle_entry e;
    sm_tensor *t = NULL;
    st = sm_bundle_entry_at(b, i, &e);
    if (!st) st = sm_bundle_read(b, e.key, &t);
    if (!st) st = sm_bundle_writer_add(w, e.key, t);
    sm_tensor_free(t);
  }
  if (!st) st = sm_bundle_writer_finish(w);
  sm_bundle_writer_free(w);
  sm_bundle_close(b);
  return st;
}

static sm_status *convert(const char *src, const char *tmp, int as_text) {
  Tensorflow__SavedModel *sm = NULL;
  char *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
  sm_status *st = sm_saved_model_read(src, &sm);
  if (!st) st = sm_saved_model_write(sm, tmp, as_text);
  sm_saved_model_free(sm);
  if (st) return st;

  /* variables/ */
  p1 = join(src, SM_VARIABLES_DIRECTORY);
  p2 = join(tmp, SM_VARIABLES_DIRECTORY);
  p3 = p1 ? join(p1, SM_VARIABLES_FILENAME) : NULL;
  p4 = p2 ? join(p2, SM_VARIABLES_FILENAME) : NULL;
  if (!p1 || !p2 || !p3 || !p4) st = oom();
  else if (is_dir(p1)) {
    st = make_dir(p2);
    char *index = st ? NULL : malloc(strlen(p3) + sizeof ".index");
    if (!st && !index) st = oom();
    if (index) {
      sprintf(index, "%s.index", p3);
      if (exists(index)) st = rewrite_variables(p3, p4);
      free(index);
    }
  }
  free(p1), free(p2), free(p3), free(p4);
  if (st) return st;

  /* assets/, assets.extra/, fingerprint.pb: copied as they are */
  static const char *const dirs[] = {SM_ASSETS_DIRECTORY, SM_EXTRA_ASSETS_DIRECTORY};
  for (size_t i = 0; !st && i < 2; i++) {
    p1 = join(src, dirs[i]);
    p2 = join(tmp, dirs[i]);
    if (!p1 || !p2) st = oom();
    else if (is_dir(p1)) st = copy_tree(src, p1, p2, 0);
    free(p1), free(p2);
  }
  if (!st) {
    p1 = join(src, SM_FINGERPRINT_FILENAME);
    p2 = join(tmp, SM_FINGERPRINT_FILENAME);
    if (!p1 || !p2) st = oom();
    else if (exists(p1)) st = copy_file(p1, p2);
    free(p1), free(p2);
  }
  return st;
}

/* The staging directory is ours, not the user's: a message that names a path inside it names the
 * same path under DST instead. */
static sm_status *unstage(sm_status *st, const char *tmp, const char *dst) {
  const char *msg = sm_status_message(st), *at = strstr(msg, tmp);
  if (!at) return st;
  size_t tl = strlen(tmp);
  sm_status *r = sm_status_new(sm_status_code(st), "%.*s%s%s", (int)(at - msg), msg, dst, at + tl);
  sm_status_free(st);
  return r;
}

int sm__cli_convert(int argc, char **argv) {
  sm_flag flags[] = {
      {"dir", SM_FLAG_STRING, "The SavedModel to read.", NULL, 0},
      {"out", SM_FLAG_STRING, "The export directory to create (must not exist).", NULL, 0},
      {"as_text", SM_FLAG_BOOL, "Write saved_model.pbtxt instead of saved_model.pb.", NULL, 0},
  };
  int rc = sm__cli_parse_flags(argc, argv, flags, 3, usage);
  if (rc) return rc < 0 ? 0 : rc;
  const char *src = flags[0].value, *dst = flags[1].value;
  if (!src || !dst) {
    fprintf(stderr, "savedmodel convert: --dir and --out are required\n%s", usage);
    return 2;
  }
  if (exists(dst)) return sm__cli_error(1, "%s: already exists; refusing to overwrite", dst);
  sm_status *st = sm__make_parents(dst); /* as Keras and TF do for an export directory */
  if (st) return sm__cli_fail(st);

  size_t n = strlen(dst) + 32;
  char *tmp = malloc(n);
  if (!tmp) return sm__cli_error(1, "out of memory");
  snprintf(tmp, n, "%s.partial-%ld", dst, (long)getpid());
  if (mkdir(tmp, 0755) != 0) {
    st = sm_status_new(SM_IO, "--out %s: cannot create directory (%s)", dst, strerror(errno));
    free(tmp);
    return sm__cli_fail(st);
  }
  st = convert(src, tmp, flags[2].on);
  if (!st && rename(tmp, dst) != 0)
    st = sm_status_new(SM_IO, "%s: cannot rename into place (%s)", dst, strerror(errno));
  if (st) {
    sm__remove_tree(tmp);
    st = unstage(st, tmp, dst);
  }
  free(tmp);
  return st ? sm__cli_fail(st) : 0;
}

/* verify.c - the load-time checks of verify.h: asset names and the files kernels read confined to
 * the export directory, and the variables bundle against the graph that restores it. Nothing here
 * runs a kernel. */
#include "runtime/verify.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when the resolved path real is dir or lies below it (both resolved: no "..", no symlinks). */
static int under(const char *real, const char *dir) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return 1;
  return !strncmp(real, dir, n) && (real[n] == '/' || real[n] == 0);
}

sm_status *sm__verify_asset_name(const char *export_dir, const char *fn) {
  if (!fn || !*fn) return sm_status_new(SM_INVALID_ARGUMENT, "asset file name is empty");
  if (fn[0] == '/')
    return sm_status_new(SM_INVALID_ARGUMENT, "asset '%s': file name is an absolute path, outside the assets directory",
                         fn);
  for (const char *p = fn; *p;) {
    size_t len = strcspn(p, "/");
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return sm_status_new(SM_INVALID_ARGUMENT,
                           "asset '%s': file name has a '..' component, outside the assets directory", fn);
    p += len;
    if (*p) p++;
  }
  size_t plen = strlen(export_dir) + strlen(fn) + 16;
  char *path = malloc(plen);
  if (!path) return sm_status_new(SM_NO_MEMORY, "out of memory");
  snprintf(path, plen, "%s/assets/%s", export_dir, fn);
  char real[PATH_MAX], real_dir[PATH_MAX];
  sm_status *s = NULL;
  /* a missing file is the graph's business (TF feeds the path regardless); a symlink out is not */
  if (realpath(path, real) && realpath(export_dir, real_dir) && !under(real, real_dir))
    s = sm_status_new(SM_INVALID_ARGUMENT, "asset '%s': %s resolves to %s, outside the export directory", fn, path,
                      real);
  free(path);
  return s;
}

sm_status *sm__verify_path_confined(const char *export_dir, const char *path, char **resolved) {
  if (resolved) *resolved = NULL;
  char real[PATH_MAX], real_dir[PATH_MAX];
  if (!realpath(path, real)) {
    int e = errno;
    return sm_status_new(e == ENOENT ? SM_NOT_FOUND : SM_IO, "%s: %s", path, strerror(e));
  }
  if (!realpath(export_dir, real_dir))
    return sm_status_new(SM_IO, "%s: %s (the export directory)", export_dir, strerror(errno));
  if (!under(real, real_dir))
    return sm_status_new(SM_FAILED_PRECONDITION,
                         "%s resolves to %s, outside the export directory %s: files outside it are read only with "
                         "allow_external_files (--allow_external_files)",
                         path, real, real_dir);
  if (resolved && !(*resolved = strdup(real))) return sm_status_new(SM_NO_MEMORY, "out of memory");
  return NULL;
}

int sm__path_inside(const char *export_dir, const char *path) {
  char real[PATH_MAX], real_dir[PATH_MAX];
  if (!realpath(path, real) || !realpath(export_dir, real_dir)) return -1;
  return under(real, real_dir);
}

/* The variable node a restored tensor (node:index) is assigned to, through Identity chains. */
static const sm_node *variable_of(const sm_cgraph *g, int node, int index, int depth) {
  int n = sm__cgraph_num_nodes(g);
  for (int i = 0; i < n; i++) {
    const sm_node *c = sm__cgraph_node(g, i);
    for (int k = 0; k < sm__node_num_inputs(c); k++) {
      sm_edge e = sm__node_input(c, k);
      if (e.node != node || e.index != index) continue;
      const char *op = sm__node_op(c);
      if ((!strcmp(op, "Assign") || !strcmp(op, "AssignVariableOp")) && k == 1)
        return sm__cgraph_node(g, sm__node_input(c, 0).node);
      if (!strcmp(op, "Identity") && depth < 4) {
        const sm_node *v = variable_of(g, i, 0, depth + 1);
        if (v) return v;
      }
    }
  }
  return NULL;
}

static const char *dn(int dt) {
  const char *s = sm_dtype_name(dt);
  return s ? s : "an invalid dtype";
}

static sm_status *check_one(const sm_cgraph *g, int node, const sm_node *nd, const sm_bundle *b, int *nchecked) {
  if (sm__node_num_inputs(nd) < 3) return NULL;
  const sm_node *kn = sm__cgraph_node(g, sm__node_input(nd, 1).node);
  const sm_node *sn = sm__cgraph_node(g, sm__node_input(nd, 2).node);
  sm_tensor *keys = NULL, *slices = NULL;
  if (strcmp(sm__node_op(kn), "Const")) return NULL; /* computed names: RestoreV2 checks dtypes itself */
  sm_status *s = sm__node_attr_tensor(kn, "value", &keys);
  if (s) return s;
  /* slices that cannot be read are RestoreV2's to report, at run time; out of memory is not */
  if (!strcmp(sm__node_op(sn), "Const") && (s = sm__node_attr_tensor(sn, "value", &slices))) {
    if (sm_status_code(s) == SM_RESOURCE_EXHAUSTED) goto out;
    sm_status_free(s);
    s = NULL;
  }
  const int *dts = NULL;
  size_t ndt = 0;
  if ((s = sm__node_attr_types(nd, "dtypes", &dts, &ndt))) goto out;
  int64_t nk = sm_tensor_num_elements(keys);
  if (sm_tensor_dtype(keys) != SM_STRING || (uint64_t)nk != ndt) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "restore op '%s': %lld tensor names for %zu dtypes", sm__node_name(nd),
                      (long long)nk, ndt);
    goto out;
  }
  for (int64_t i = 0; i < nk && !s; i++) {
    size_t kl = 0;
    const char *k = sm_tensor_string(keys, i, &kl);
    char key[512];
    snprintf(key, sizeof key, "%.*s", (int)(kl < 500 ? kl : 500), k ? k : "");
    sm_bundle_entry be;
    if ((s = sm_bundle_lookup(b, key, &be))) {
      sm_status_free(s);
      s = sm_status_new(SM_NOT_FOUND, "restore op '%s' restores '%s', which is not in the variables bundle",
                        sm__node_name(nd), key);
      break;
    }
    if (nchecked) (*nchecked)++;
    if (be.dtype != sm_dtype_base(dts[i])) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "variable '%s' is %s in the checkpoint but restore op '%s' expects %s",
                        key, dn(be.dtype), sm__node_name(nd), dn(sm_dtype_base(dts[i])));
      break;
    }
    size_t sl = 0;
    const char *spec = slices && sm_tensor_dtype(slices) == SM_STRING && i < sm_tensor_num_elements(slices)
                           ? sm_tensor_string(slices, i, &sl)
                           : NULL;
    if (spec && sl) continue; /* one slice of a partitioned variable: RestoreV2 checks the spec */
    const sm_node *var = variable_of(g, node, (int)i, 0);
    if (!var) continue;
    int vdt = 0;
    if (sm__node_attr(var, "dtype") && !sm__node_attr_type(var, "dtype", &vdt) && vdt &&
        sm_dtype_base(vdt) != be.dtype) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "variable '%s' is %s in the checkpoint but %s in the graph (node '%s')",
                        key, dn(be.dtype), dn(sm_dtype_base(vdt)), sm__node_name(var));
      break;
    }
    int rank;
    int64_t dims[SM_MAX_RANK];
    if (!sm__node_attr(var, "shape")) continue;
    sm_status *ss = sm__node_attr_shape(var, "shape", &rank, dims);
    if (ss) {
      sm_status_free(ss);
      continue;
    }
    if (rank < 0) continue;
    int bad = rank != be.rank;
    for (int d = 0; !bad && d < rank; d++) bad = dims[d] >= 0 && dims[d] != be.dims[d];
    if (bad) {
      char a[128], c[128];
      s = sm_status_new(SM_INVALID_ARGUMENT, "variable '%s' has shape %s in the checkpoint but %s in the graph (node '%s')",
                        key, sm_shape_str(be.rank, be.dims, c, sizeof c), sm_shape_str(rank, dims, a, sizeof a),
                        sm__node_name(var));
    }
  }
out:
  sm_tensor_free(keys);
  sm_tensor_free(slices);
  return s;
}

sm_status *sm__verify_restore(const sm_cgraph *g, const char *const *feeds, int nfeeds, const char *restore_op,
                             const sm_bundle *b, int *nchecked) {
  sm_edge *fe = calloc((size_t)nfeeds + 1, sizeof *fe);
  if (!fe) return sm_status_new(SM_NO_MEMORY, "out of memory");
  int nf = 0, ctl = 0, *order = NULL, norder = 0;
  for (int i = 0; i < nfeeds; i++) {
    sm_status *s = sm__cgraph_resolve(g, feeds[i], &fe[nf], &ctl);
    if (!s && !ctl) nf++;
    sm_status_free(s);
  }
  int tn = sm__cgraph_find(g, restore_op[0] == '^' ? restore_op + 1 : restore_op);
  sm_status *s = NULL;
  if (tn < 0) s = sm_status_new(SM_NOT_FOUND, "restore op '%s' is not a node of the graph", restore_op);
  if (!s) s = sm__cgraph_prune(g, fe, nf, NULL, 0, &tn, 1, &order, &norder);
  for (int i = 0; !s && i < norder; i++) {
    const sm_node *nd = sm__cgraph_node(g, order[i]);
    if (!strcmp(sm__node_op(nd), "RestoreV2")) s = check_one(g, order[i], nd, b, nchecked);
  }
  free(order);
  free(fe);
  return s;
}

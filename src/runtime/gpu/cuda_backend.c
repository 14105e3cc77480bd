/* cuda_backend.c - the CUDA device (device.h) over libsavedmodel_cuda.so: finding and opening the
 * module at first use, device tensors (device memory wrapped in an sm_tensor whose space is
 * SM_MEM_DEVICE, released stream-ordered into the module's arena), host<->device copies, one
 * stream of the module's pool per run, and the registration of the CUDA kernels.
 *
 * The module is looked for as $SM_CUDA_MODULE, then next to the library (or program) this code is
 * linked into, then by the dynamic linker's search path; where it, libcudart / libcublas /
 * libcudnn, the driver or a GPU is missing, opening fails with a message that says which, and
 * the next load asking for the GPU tries again (the module, once loaded, is never unloaded). */
#define _GNU_SOURCE
#include "runtime/gpu/cuda_backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/tensor_internal.h"
#include "runtime/device.h"

static const smcu_api *api; /* set once, under device.c's open lock */
static char desc[160];

const smcu_api *sm__cuda_api(void) { return __atomic_load_n(&api, __ATOMIC_ACQUIRE); }

sm_status *sm__cuda_err(const char *err) { return sm_status_new(SM_INTERNAL, "%s", err[0] ? err : "CUDA call failed"); }

/* ---- device tensors ------------------------------------------------------------------------ */
typedef struct dmem {
  void *p, *stream;
} dmem;

static void dmem_release(void *ctx) {
  dmem *m = ctx;
  if (m->p) api->release(m->stream, m->p);
  sm__free(m);
}

/* A device tensor of dtype/shape on stream (uninitialised); the caller owns *out. */
static sm_status *dev_tensor(void *stream, int dtype, int rank, const int64_t *dims, sm_tensor **out) {
  *out = NULL;
  size_t bytes;
  sm_status *st = sm__tensor_alloc_bytes(dtype, rank, dims, &bytes);
  if (st) return st;
  if (dtype == SM_STRING || dtype == SM_VARIANT || dtype == SM_RESOURCE)
    return sm_status_new(SM_UNIMPLEMENTED, "%s tensors cannot live in GPU memory", sm_dtype_name(dtype));
  dmem *m = sm__calloc(sizeof *m);
  if (!m) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a GPU tensor header");
  m->stream = stream;
  char err[SMCU_ERR] = "";
  if (bytes && api->alloc(stream, bytes, &m->p, err)) {
    sm__free(m);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes on the GPU: %s", bytes, err);
  }
  if ((st = sm_tensor_wrap(dtype, rank, dims, m->p, bytes, dmem_release, m, out))) {
    dmem_release(m);
    return st;
  }
  sm__tensor_set_space(*out, SM_MEM_DEVICE);
  return NULL;
}

sm_status *sm__cuda_output(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims, sm_tensor **out) {
  sm_status *st = dev_tensor(sm__kctx_device_run(c), dtype, rank, dims, out);
  if (st) return sm_status_prefix(st, "output %d", i);
  sm__kctx_set_output(c, i, *out);
  return NULL;
}

sm_status *sm__cuda_scratch(sm_kctx *c, size_t bytes, sm_tensor **hold, void **p) {
  int64_t n = (int64_t)((bytes + 3) / 4);
  sm_status *st = dev_tensor(sm__kctx_device_run(c), SM_FLOAT, 1, &n, hold);
  *p = st ? NULL : sm_tensor_data(*hold);
  return st;
}

/* ---- the device ---------------------------------------------------------------------------- */
static sm_status *run_begin(void *ctx, void **run) {
  (void)ctx;
  char err[SMCU_ERR] = "";
  return api->stream_get(run, err) ? sm__cuda_err(err) : NULL;
}

static sm_status *run_end(void *ctx, void *run) {
  (void)ctx;
  char err[SMCU_ERR] = "";
  return api->stream_put(run, err) ? sm__cuda_err(err) : NULL;
}

/* A copy of src in the other space (up: host -> GPU), complete (download) or queued on run (upload). */
static sm_status *copy_across(void *run, const sm_tensor *src, int up, sm_tensor **out) {
  *out = NULL;
  if (sm__tensor_space(src) != (up ? SM_MEM_HOST : SM_MEM_DEVICE))
    return sm_status_new(SM_INTERNAL, "%s: the tensor is not in %s memory", up ? "upload" : "download",
                         up ? "host" : "GPU");
  int dt = sm_tensor_dtype(src), rank = sm_tensor_rank(src);
  const int64_t *dims = sm_tensor_dims(src);
  sm_status *st = up ? dev_tensor(run, dt, rank, dims, out) : sm__tensor_new_uninit(dt, rank, dims, out);
  if (st) return st;
  char err[SMCU_ERR] = "";
  size_t n = sm_tensor_nbytes(src);
  int bad = n && (up ? api->h2d(run, sm_tensor_data(*out), sm_tensor_data(src), n, err)
                     : api->d2h(run, sm_tensor_data(*out), sm_tensor_data(src), n, err));
  if (!bad) return NULL;
  sm_tensor_free(*out);
  *out = NULL;
  return sm__cuda_err(err);
}

static sm_status *upload(void *ctx, void *run, const sm_tensor *host, sm_tensor **out) {
  (void)ctx;
  return copy_across(run, host, 1, out);
}

static sm_status *download(void *ctx, void *run, const sm_tensor *dev, sm_tensor **out) {
  (void)ctx;
  return copy_across(run, dev, 0, out);
}

static sm_device cuda_device = {"CUDA", NULL, run_begin, run_end, upload, download};

/* ---- opening --------------------------------------------------------------------------------- */
static int kernels_registered; /* under device.c's open lock */

sm_status *sm__cuda_kernels_register(void) {
  if (kernels_registered) return NULL;
  sm_status *st = sm__kernels_add(sm_kernels_cuda, SM_BACKEND_CUDA);
  if (!st) kernels_registered = 1;
  return st;
}

static void *open_module(char *why, size_t cap) {
  const char *env = getenv("SM_CUDA_MODULE");
  if (env && *env) {
    void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h) snprintf(why, cap, "SM_CUDA_MODULE=%s: %s", env, dlerror());
    return h;
  }
  Dl_info info;
  if (dladdr((void *)&open_module, &info) && info.dli_fname) {
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash) {
      char path[4096];
      snprintf(path, sizeof path, "%.*s/libsavedmodel_cuda.so", (int)(slash - info.dli_fname), info.dli_fname);
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h) return h;
      const char *e = dlerror();
      /* present but unloadable (libcudart or libcudnn missing): that is the message */
      FILE *f = fopen(path, "rb");
      if (f) {
        fclose(f);
        snprintf(why, cap, "%s: %s", path, e ? e : "cannot be loaded");
        return NULL;
      }
    }
  }
  void *h = dlopen("libsavedmodel_cuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    snprintf(why, cap,
             "the CUDA module libsavedmodel_cuda.so is not installed (a build without the CUDA backend: nvcc "
             "absent or SM_WITH_CUDA=OFF when it was configured) or cannot be loaded: %s",
             dlerror());
  return h;
}

sm_status *sm__cuda_open(void) {
  if (sm__device_get(SM_BACKEND_CUDA)) return NULL;
  char why[1024] = "";
  void *h = open_module(why, sizeof why);
  if (!h) return sm_status_new(SM_FAILED_PRECONDITION, "no GPU backend: %s", why);
  smcu_get_api_fn get;
  *(void **)(&get) = dlsym(h, "smcu_get_api");
  const smcu_api *a = get ? get(SMCU_ABI_VERSION) : NULL;
  if (!a) /* the module stays loaded (as after any failure: see below) */
    return sm_status_new(SM_FAILED_PRECONDITION, "no GPU backend: libsavedmodel_cuda.so is not of this library's "
                                                 "version (ABI %d)", SMCU_ABI_VERSION);
  /* Never dlclosed, even when opening failed: libstdc++ and the CUDA libraries it brought keep
   * allocations (the exception pool) that unloading would orphan; a later load asking for the GPU
   * gets the same handle back and tries the driver again. */
  return sm__cuda_open_with(a);
}

sm_status *sm__cuda_open_with(const smcu_api *a) {
  if (sm__device_get(SM_BACKEND_CUDA)) return NULL;
  char err[SMCU_ERR] = "";
  if (a->open(err)) return sm_status_new(SM_FAILED_PRECONDITION, "no GPU: %s", err);
  __atomic_store_n(&api, a, __ATOMIC_RELEASE);
  a->describe(desc, sizeof desc);
  cuda_device.name = "CUDA";
  sm_status *st = sm__cuda_kernels_register();
  if (!st) st = sm__device_register(SM_BACKEND_CUDA, &cuda_device);
  return st ? sm_status_prefix(st, "GPU backend %s", desc) : NULL;
}

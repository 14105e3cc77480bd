/* device.c - the device of each backend (device.h): registered once, opened at first use. */
#include "runtime/device.h"

#include <pthread.h>

static const sm_device *devices[SM_NUM_BACKENDS]; /* atomic */
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;

sm_status *sm__device_register(sm_backend b, const sm_device *d) {
  if ((int)b <= SM_BACKEND_CPU || (int)b >= SM_NUM_BACKENDS || !d)
    return sm_status_new(SM_INVALID_ARGUMENT, "device registry: bad backend %d or no device", (int)b);
  const sm_device *none = NULL;
  if (!__atomic_compare_exchange_n(&devices[b], &none, d, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return sm_status_new(SM_ALREADY_EXISTS, "device registry: backend %s has a device already", sm__backend_name(b));
  return NULL;
}

const sm_device *sm__device_get(sm_backend b) {
  if ((int)b <= SM_BACKEND_CPU || (int)b >= SM_NUM_BACKENDS) return NULL;
  return __atomic_load_n(&devices[b], __ATOMIC_ACQUIRE);
}

sm_status *sm__device_plan_only(sm_backend b) {
  if (b != SM_BACKEND_CUDA) return sm_status_new(SM_INVALID_ARGUMENT, "no device backend %d", (int)b);
  pthread_mutex_lock(&open_mu);
  sm_status *st = sm__cuda_kernels_register();
  pthread_mutex_unlock(&open_mu);
  return st;
}

sm_status *sm__device_open(sm_backend b, const sm_device **out) {
  *out = sm__device_get(b);
  if (*out) return NULL;
  if (b != SM_BACKEND_CUDA) return sm_status_new(SM_INVALID_ARGUMENT, "no device backend %d", (int)b);
  pthread_mutex_lock(&open_mu); /* one load of the module at a time; a failed one is tried again */
  sm_status *st = sm__device_get(b) ? NULL : sm__cuda_open();
  pthread_mutex_unlock(&open_mu);
  if (st) return st;
  *out = sm__device_get(b);
  return *out ? NULL : sm_status_new(SM_INTERNAL, "the %s backend registered no device", sm__backend_name(b));
}

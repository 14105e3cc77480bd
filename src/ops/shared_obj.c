/* shared_obj.c - what the kernels of state shared across runs (queue.c, staging.c, accum.c, barrier.c,
 * reader.c, mutex.c, batch_fn.c) share, declared in state_internal.h: the (container, shared_name)
 * key of a handle op's prepared state, getting or making the model's object under it
 * (sm__resources_object: made once under the resources' lock, destroyed with the model), allocating
 * and freeing such an object's common part (magic, name, lock), writing
 * its handle, checking a consumer's handle input against the object's magic, and the bounded wait of
 * a kernel that blocks until another run acts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/kernel.h"
#include "state_internal.h"

static char *dup_attr(const sm_node *node, const char *attr) {
  const char *v = "";
  size_t len = 0;
  if (sm__node_attr(node, attr) && sm__node_attr_string(node, attr, &v, &len)) v = "", len = 0;
  char *d = malloc(len + 1);
  if (d) {
    memcpy(d, v, len);
    d[len] = 0;
  }
  return d;
}

sm_status *sm__state_names(const sm_node *node, char **container, char **name) {
  *container = dup_attr(node, "container");
  *name = dup_attr(node, "shared_name");
  if (*name && !(*name)[0]) { /* "_sm_private/<node>" for a resource no shared_name shares */
    const char *nn = sm__node_name(node);
    size_t n = strlen(nn) + 13;
    free(*name);
    if ((*name = malloc(n))) snprintf(*name, n, "_sm_private/%s", nn);
  }
  if (*container && *name) return NULL;
  free(*container);
  free(*name);
  *container = *name = NULL;
  return sm_status_new(SM_NO_MEMORY, "out of memory");
}

void sm__state_spec_release(void *spec) {
  sm__state_key *k = spec;
  if (!k) return;
  free(k->container);
  free(k->name);
  free(spec);
}

sm_status *sm__state_object(sm_kctx *ctx, int kind, const sm__state_key *key, sm_resource_make_fn make, void *arg,
                            void (*destroy)(void *obj), void **obj) {
  return sm__resources_object(sm__kctx_resources(ctx), kind, key->container, key->name, make, arg, destroy, obj);
}

sm_status *sm__state_output(sm_kctx *ctx, void *obj) {
  sm_tensor *out;
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_RESOURCE, 0, NULL, &out);
  if (!s) ((void **)sm_tensor_data(out))[0] = obj;
  return s;
}

sm_status *sm__state_of(const sm_tensor *t, uint32_t magic, const char *op, const char *what, void **out) {
  *out = NULL;
  const char *sep = op ? ": " : "";
  if (!op) op = "";
  if (!t || sm_tensor_dtype(t) != SM_RESOURCE || sm_tensor_num_elements(t) != 1 || !sm_tensor_data(t))
    return sm_status_new(SM_INVALID_ARGUMENT, "%s%sinput 0 is not %s handle scalar", op, sep, what);
  void *obj = ((void *const *)sm_tensor_data(t))[0];
  if (!obj || *(const uint32_t *)obj != magic)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s%sinput 0 is not %s handle", op, sep, what);
  *out = obj;
  return NULL;
}

void *sm__state_alloc(size_t size, uint32_t magic, size_t name_off, const char *name) {
  char *obj = calloc(1, size);
  char *nm = obj ? malloc(strlen(name) + 1) : NULL;
  if (!nm) {
    free(obj);
    return NULL;
  }
  strcpy(nm, name);
  memcpy(obj, &magic, sizeof magic);
  memcpy(obj + name_off, &nm, sizeof nm);
  return obj;
}

void sm__state_free(void *obj, char *name, pthread_mutex_t *mu, pthread_cond_t *cv) {
  if (cv) pthread_cond_destroy(cv);
  if (mu) pthread_mutex_destroy(mu);
  free(name);
  free(obj);
}

sm_status *sm__state_wait(pthread_cond_t *cv, pthread_mutex_t *mu, sm_kctx *ctx) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 10 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  pthread_cond_timedwait(cv, mu, &ts);
  return sm__kctx_check_stop(ctx);
}

/* mutex.c - tf.CriticalSection's ops: MutexV2 (a mutex resource), MutexLock (takes it, giving a
 * lock variant) and ConsumeMutexLock (the lock's last user).
 *
 * A mutex is an object of the model's resources (kind SM_RES_MUTEX) keyed by (container,
 * shared_name) as queue.c keys its queues (no shared_name: one per node), so concurrent runs of the
 * model exclude each other in CriticalSection.execute as TF's do. MutexLock waits while another
 * lock holds it (the run's deadline or cancel flag ends the wait, checked every 10 ms) and outputs
 * a DT_VARIANT scalar ("SharedLockReleaser", as TF names it) that holds the mutex: it is released
 * when the last reference to that variant goes, which is after ConsumeMutexLock (the execute's
 * last step: its body's outputs are its control inputs) has run, or when the run ends, whichever
 * frees the tensor. TF's mutex_ops.cc. A lock taken twice in one run waits for itself, as TF's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/variant.h"
#include "runtime/kernel.h"
#include "state_internal.h"

#define MUTEX_MAGIC 0x4d555458u
#define LOCK_TYPE "SharedLockReleaser"

typedef struct mutex {
  uint32_t magic;
  char *name;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int held;
} mutex;

typedef struct lock {
  sm_variant v;
  mutex *m;
} lock;

static void mutex_destroy(void *obj) {
  mutex *m = obj;
  if (!m) return;
  sm__state_free(m, m->name, &m->mu, &m->cv);
}

static sm_status *mutex_make(void *arg, const char *dname, void **obj) {
  (void)arg;
  mutex *m = sm__state_alloc(sizeof *m, MUTEX_MAGIC, offsetof(mutex, name), dname);
  if (!m) return sm_status_new(SM_NO_MEMORY, "mutex '%s': out of memory", dname);
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->cv, NULL);
  *obj = m;
  return NULL;
}

static sm_status *mutex_prepare(const sm_node *node, void **state) {
  sm__state_key *sp = calloc(1, sizeof *sp);
  if (!sp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__state_names(node, &sp->container, &sp->name);
  if (s) {
    free(sp);
    return s;
  }
  *state = sp;
  return NULL;
}

static sm_status *mutex_compute(const void *state, sm_kctx *ctx) {
  const sm__state_key *sp = state;
  void *obj;
  sm_status *s = sm__state_object(ctx, SM_RES_MUTEX, sp, mutex_make, NULL, mutex_destroy, &obj);
  return s ? s : sm__state_output(ctx, obj);
}

static void lock_release(sm_variant *v) {
  lock *l = (lock *)v;
  pthread_mutex_lock(&l->m->mu);
  l->m->held = 0;
  pthread_cond_broadcast(&l->m->cv);
  pthread_mutex_unlock(&l->m->mu);
  free(l);
}

static sm_status *lock_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  void *o;
  sm_status *s = sm__state_of(sm__kctx_input(ctx, 0), MUTEX_MAGIC, "MutexLock", "a mutex", &o);
  if (s) return s;
  mutex *m = o;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, SM_VARIANT, 0, NULL, &out);
  if (s) return s;
  lock *l = calloc(1, sizeof *l);
  if (!l) return sm_status_new(SM_NO_MEMORY, "MutexLock: out of memory");
  pthread_mutex_lock(&m->mu);
  while (m->held && !s) s = sm__state_wait(&m->cv, &m->mu, ctx);
  if (!s) m->held = 1;
  pthread_mutex_unlock(&m->mu);
  if (s) {
    free(l);
    return s;
  }
  l->m = m;
  sm__variant_init(&l->v, LOCK_TYPE, lock_release);
  sm__tensor_variants(out)[0] = &l->v;
  return NULL;
}

static sm_status *consume_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *t = sm__kctx_input(ctx, 0);
  sm_variant **vs = t && sm_tensor_dtype(t) == SM_VARIANT && sm_tensor_num_elements(t) == 1 ? sm__tensor_variants(t) : NULL;
  if (!vs || !vs[0] || strcmp(vs[0]->type_name, LOCK_TYPE))
    return sm_status_new(SM_INVALID_ARGUMENT, "ConsumeMutexLock: input 0 is not a MutexLock's lock");
  return NULL;
}

const sm_kernel sm_kernels_mutex[] = {
    {"MutexV2", mutex_prepare, mutex_compute, sm__state_spec_release, 0},
    {"MutexLock", NULL, lock_compute, NULL, 0},
    {"ConsumeMutexLock", NULL, consume_compute, NULL, 0},
    {NULL, NULL, NULL, NULL, 0},
};

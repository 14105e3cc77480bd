/* state_internal.h - what the kernels of state shared across runs (queue.c, staging.c, accum.c, barrier.c,
 * reader.c, mutex.c, batch_fn.c) share: the (container, shared_name) a handle op's object is keyed by,
 * getting or making that object and writing its handle, checking a consumer's handle by the object's
 * magic, and the bounded wait of a kernel that blocks until another run acts. Defined in shared_obj.c. */
#ifndef SM_OPS_STATE_INTERNAL_H
#define SM_OPS_STATE_INTERNAL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/kernel.h"
#include "runtime/resource.h"

/* The key of a handle op's prepared state; the first member of every such state (a "spec"). */
typedef struct {
  char *container, *name;
} sm__state_key;

/* New copies of the node's container and shared_name attrs (empty when absent); an empty
 * shared_name becomes "_sm_private/<node>" (TF gives each kernel its own object). Free both. */
sm_status *sm__state_names(const sm_node *node, char **container, char **name);
/* A kernel's release of a prepared state that starts with a sm__state_key: frees the key and it. */
void sm__state_spec_release(void *spec);
/* The model's object of kind under key, made by make(arg, ...) on first use (sm__resources_object). */
sm_status *sm__state_object(sm_kctx *ctx, int kind, const sm__state_key *key, sm_resource_make_fn make, void *arg,
                            void (*destroy)(void *obj), void **obj);
/* Writes obj's handle as output 0, a DT_RESOURCE scalar. */
sm_status *sm__state_output(sm_kctx *ctx, void *obj);
/* The object a handle tensor points to, when it starts with magic (every object's first member is its
 * uint32_t magic); else SM_INVALID_ARGUMENT "[op: ]input 0 is not <what> handle[ scalar]". */
sm_status *sm__state_of(const sm_tensor *t, uint32_t magic, const char *op, const char *what, void **out);
/* A make function's start: a zeroed object of size bytes, its first member (uint32_t) set to magic and
 * its char * member at name_off to a new copy of name; NULL (nothing held) when out of memory. */
void *sm__state_alloc(size_t size, uint32_t magic, size_t name_off, const char *name);
/* A destroy function's end: destroys cv and mu (NULL: none), frees name and obj. */
void sm__state_free(void *obj, char *name, pthread_mutex_t *mu, pthread_cond_t *cv);
/* Waits on cv (mu held) for up to 10 ms, then the run's deadline / cancel flag (sm__kctx_check_stop). */
sm_status *sm__state_wait(pthread_cond_t *cv, pthread_mutex_t *mu, sm_kctx *ctx);

#endif

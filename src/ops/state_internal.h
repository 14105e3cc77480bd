/* state_internal.h - what the kernels of state shared across runs (queue.c, accum.c, mutex.c, reader.c, staging.c, batch_fn.c) share:
 * the (container, shared_name) a handle op's object is keyed by, and the bounded wait of a kernel
 * that blocks until another run acts. Defined in queue.c. */
#ifndef SM_OPS_STATE_INTERNAL_H
#define SM_OPS_STATE_INTERNAL_H
#include <pthread.h>

#include "runtime/kernel.h"

/* New copies of the node's container and shared_name attrs (empty when absent); an empty
 * shared_name becomes "_sm_private/<node>" (TF gives each kernel its own object). Free both. */
sm_status *sm__state_names(const sm_node *node, char **container, char **name);
/* Waits on cv (mu held) for up to 10 ms, then the run's deadline / cancel flag (sm__kctx_check_stop). */
sm_status *sm__state_wait(pthread_cond_t *cv, pthread_mutex_t *mu, sm_kctx *ctx);

#endif

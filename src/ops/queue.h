/* queue.h - what other kernels use of TF1's queues (src/ops/queue.c). */
#ifndef SM_OPS_QUEUE_H
#define SM_OPS_QUEUE_H

#include <stddef.h>

#include "runtime/kernel.h"

/* A reader's next work unit (TF's ReaderBase::GetNextWorkLocked): dequeues one element of the queue
 * `handle` names (a queue handle scalar), waiting as QueueDequeue does (the run's deadline and
 * cancel flag end the wait; a closed, empty queue gives the queue's OutOfRange error). The queue
 * must have one string component and the element one string; *work is a NUL-terminated malloc'd
 * copy (its length in *len: it may hold NULs). */
sm_status *sm__queue_dequeue_work(sm_kctx *ctx, const sm_tensor *handle, char **work, size_t *len);

#endif

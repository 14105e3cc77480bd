/* dist.h - what the trainer (fit.c, fit_dist.c) uses of src/train/dist.c, the MPI layer of
 * data-parallel training: the process's place in the job, and collectives that never wait past
 * the collective timeout (a rank that dies or hangs ends the job with a message, not a hang). */
#ifndef SM_TRAIN_DIST_H
#define SM_TRAIN_DIST_H
#include <stddef.h>
#include <stdint.h>

#include "savedmodel/status.h"

/* Metrics a rank reports each step (and after validation): sums over its shard. */
enum { SM_DIST_NMETRIC = 3 };

int sm__dist_rank(void);
int sm__dist_size(void); /* 1 unless sm_dist_init found a job of several ranks */

/* bytes of buf from rank 0 to every rank (blocking, within the timeout). */
sm_status *sm__dist_bcast(void *buf, size_t bytes, const char *what);
/* Starts sending this rank's metrics for `step` to rank 0 (which starts receiving everyone's):
 * also how rank 0 names a rank that stopped answering. */
sm_status *sm__dist_report(const double *v, int64_t step);
/* Starts sending n floats of buf to rank `to` / receiving n floats from rank `from` into buf
 * (point to point, one tag: pieces between two ranks arrive in the order posted); buf stays
 * untouched until waited for. A send or receive that times out names the other rank. */
sm_status *sm__dist_send_start(const float *buf, int64_t n, int to);
sm_status *sm__dist_recv_start(float *buf, int64_t n, int from);
/* Requests started and not yet reset by sm__dist_wait: a mark for sm__dist_wait_first. */
int sm__dist_pending(void);
/* Waits for the first k requests started (those before a mark), leaving the later ones running;
 * `what` and `step` name the wait in the timeout's message. */
sm_status *sm__dist_wait_first(const char *what, int64_t step, int k);
/* Lets the started collectives move on (MPI progresses only inside its calls). */
void sm__dist_poll(void);
/* The trainer's progress point between any two layers, forward and backward: sm__dist_poll unless
 * SM_MPI_LAYER_POLL=0 (a no-op without MPI or with nothing in flight). */
void sm__dist_progress(void);
/* Waits for everything started; on rank 0 `sum` (may be NULL) gets the reported metrics summed
 * over the ranks in rank order. `what` names the wait in the timeout's message. */
sm_status *sm__dist_wait(const char *what, double *sum);
/* One buffer of `bytes` mapped by every rank (an MPI-3 shared window on the node's communicator),
 * when every rank of the job runs on this node and shared memory is allowed: not when Open MPI's
 * transports were restricted to others (OMPI_MCA_btl without vader/sm, e.g. the bench's TCP rows)
 * or SM_MPI_SHARED=0 (rank 0's setting decides for all). Collective: every rank calls it alike.
 * *out is NULL when there is none (one process, no MPI-3, ranks on several nodes). Writes to it
 * that a message announces are visible to the receiver once that message's wait has returned. */
sm_status *sm__dist_shared_alloc(size_t bytes, void **out);
/* Frees it (collective; only on a path every rank takes). */
void sm__dist_shared_free(void);
/* Time spent in sm__dist_wait so far: wall and this process's CPU seconds. */
void sm__dist_wait_totals(double *wall_s, double *cpu_s);
/* This process's CPU time (all its threads), seconds. */
double sm__cpu_seconds(void);

#endif

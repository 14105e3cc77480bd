/* fit_dist.c - what sm_seq_fit does differently as one rank of an MPI job (src/train/dist.c):
 * agreeing on the run (data size, batch, architecture), starting from rank 0's weights, optimizer
 * state and RNG, and one training step on this rank's shard of the global batch, its gradients
 * summed over the ranks layer by layer as the backward pass finishes each (one bucket per layer,
 * MPI_Iallreduce, waited for before the optimizer step).
 *
 * The loss's gradient on a shard of nb samples is the mean over the shard; scaled by nb / b (b the
 * global batch) before the backward pass, the sum over the ranks is the gradient of the mean over
 * the global batch: what one process computes on the whole batch, up to the order of float sums.
 * Shuffling draws from the shared RNG (the same permutation on every rank); dropout masks from a
 * per-rank stream, so that the shared one stays in step. A layer with state that is not a weight
 * (BatchNormalization's moving statistics, when the trainer has one) must have it averaged here too:
 * no such layer exists yet. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/dist.h"
#include "train/train_internal.h"

static sm_status *bcast_tensor(sm_tensor *t, const char *layer) {
  if (!t) return NULL;
  sm_status *st = sm__dist_bcast(sm_tensor_data(t), sm_tensor_nbytes(t), "the initial broadcast");
  return st ? sm_status_prefix(st, "%s", layer) : NULL;
}

/* Test hook (tests/cli/train_mpi.sh): SM_TEST_MPI_FAIL=RANK:STEP:MODE makes rank RANK, before its
 * STEP-th optimizer step (1-based, counted over fits), hang (stop answering) or die by SIGKILL.
 * Read once per fit (fault_read), checked per step (test_fault). */
static void fault_read(sm__train *t) {
  const char *v = getenv("SM_TEST_MPI_FAIL");
  int r;
  long long s;
  t->fault_mode = 0;
  if (!v || sscanf(v, "%d:%lld:%7s", &r, &s, t->fault_name) != 3) return;
  t->fault_rank = r;
  t->fault_step = s;
  t->fault_mode = !strcmp(t->fault_name, "kill") ? 1 : !strcmp(t->fault_name, "hang") ? 2 : 3;
}

static void test_fault(const sm__train *t, int64_t step) {
  if (!t->fault_mode || t->fault_rank != sm__dist_rank() || t->fault_step != step) return;
  fprintf(stderr, "rank %d: SM_TEST_MPI_FAIL: %s at step %lld\n", t->fault_rank, t->fault_name, (long long)step);
  if (t->fault_mode == 1) raise(SIGKILL);
  if (t->fault_mode == 2)
    for (;;) pause();
}

sm_status *sm__dist_fit_begin(sm_seq *m, int64_t ntr, int64_t bs) {
  sm__train *t = m->priv;
  fault_read(t);
  /* what must agree: the data, the batch, the architecture (the broadcasts below assume it) */
  int64_t params = 0;
  for (int l = 0; l < m->nlayers; l++)
    if (m->layers[l].kernel)
      params += sm_tensor_num_elements(m->layers[l].kernel) + sm_tensor_num_elements(m->layers[l].bias);
  int64_t mine[4] = {ntr, bs, m->nlayers, params}, root[4];
  memcpy(root, mine, sizeof root);
  sm_status *st = sm__dist_bcast(root, sizeof root, "the initial broadcast");
  if (st) return st;
  if (memcmp(root, mine, sizeof root))
    return sm_status_new(SM_FAILED_PRECONDITION, "MPI rank %d: %lld training samples, batch %lld, %lld layers, %lld "
                         "weights; rank 0 has %lld, %lld, %lld, %lld (every rank must train the same model on the "
                         "same data)", sm__dist_rank(), (long long)mine[0], (long long)mine[1], (long long)mine[2],
                         (long long)mine[3], (long long)root[0], (long long)root[1], (long long)root[2],
                         (long long)root[3]);
  int64_t counters[2] = {m->iterations, m->epochs_done};
  if ((st = sm__dist_bcast(counters, sizeof counters, "the initial broadcast"))) return st;
  m->iterations = counters[0];
  m->epochs_done = counters[1];
  for (int l = 0; l < m->nlayers && !st; l++) {
    sm__layer *L = &m->layers[l];
    st = bcast_tensor(L->kernel, L->name);
    if (!st) st = bcast_tensor(L->bias, L->name);
    for (int s = 0; s < SM_OPT_SLOTS && !st; s++)
      if (!(st = bcast_tensor(L->kernel_slot[s], L->name))) st = bcast_tensor(L->bias_slot[s], L->name);
    /* batch norm's moving statistics start as rank 0's; each rank then updates its own from its
     * shard's batch statistics, and rank 0's are the ones exported (README: MPI and batch norm) */
    if (!st) st = bcast_tensor(L->moving_mean, L->name);
    if (!st) st = bcast_tensor(L->moving_var, L->name);
  }
  if (!st) st = sm__dist_bcast(&t->rng, sizeof t->rng, "the initial broadcast");
  if (st) return st;
  sm__rng tmp = t->rng;
  sm__rng_seed(&t->drop_rng, sm__rng_next(&tmp) + 0x9e3779b97f4a7c15ull * (uint64_t)(sm__dist_rank() + 1));
  t->dist_drop = 1;
  return NULL;
}

typedef struct {
  sm_seq *m;
  sm_status *st;
} bucket_ctx;

static void bucket_start(sm_seq *m, int l, sm_status **st) {
  const sm__layer *L = &m->layers[l];
  sm__train *t = m->priv;
  if (!L->kernel || *st) return;
  *st = sm__dist_allreduce_start(t->gk[l], sm_tensor_num_elements(L->kernel));
  if (!*st) *st = sm__dist_allreduce_start(t->gb[l], L->units);
  sm__dist_poll();
}

static void layer_done(void *ctx, int l) {
  bucket_ctx *c = ctx;
  bucket_start(c->m, l, &c->st);
}

sm_status *sm__dist_step(sm_seq *m, int64_t nb, int64_t b, int64_t out_per, double *loss_sum, int64_t *correct) {
  sm__train *t = m->priv;
  test_fault(t, m->iterations + 1);
  double v[SM_DIST_NMETRIC] = {0.0, 0.0, (double)nb}, sum[SM_DIST_NMETRIC];
  bucket_ctx bc = {m, NULL};
  if (nb > 0) {
    const float *out;
    sm_status *st = sm__forward(m, t->xbatch, nb, 1, &out);
    if (st) return st;
    int64_t c = 0;
    float *g = t->grad[m->nlayers - 1];
    double l = sm__loss(m, out, nb, out_per, t->lbatch, t->ybatch, g, &c, &t->fused_last);
    float scale = (float)nb / (float)b;
    for (int64_t i = 0; i < nb * out_per; i++) g[i] *= scale;
    v[0] = l * (double)nb;
    v[1] = (double)c;
    t->layer_done = layer_done;
    t->layer_done_ctx = &bc;
    sm__backward(m, t->xbatch, nb);
    t->layer_done = NULL;
    t->layer_done_ctx = NULL;
  } else { /* a global batch smaller than the job: this rank adds nothing, in the same order */
    for (int l = m->nlayers - 1; l >= 0; l--)
      if (m->layers[l].kernel) {
        memset(t->gk[l], 0, (size_t)sm_tensor_num_elements(m->layers[l].kernel) * sizeof(float));
        memset(t->gb[l], 0, (size_t)m->layers[l].units * sizeof(float));
        bucket_start(m, l, &bc.st);
      }
  }
  if (!bc.st) bc.st = sm__dist_report(v, m->iterations + 1);
  if (!bc.st) bc.st = sm__dist_wait("training", sum);
  if (bc.st) return bc.st;
  *loss_sum = sum[0];
  *correct = (int64_t)sum[1];
  return NULL;
}

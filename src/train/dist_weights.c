/* dist_weights.c - a data-parallel fit's weights in one copy that every rank maps, where all ranks
 * run on one node (dist.c's sm__dist_shared_alloc: an MPI-3 shared window). fit_dist.c's sharded
 * optimizer has each rank update its range of the flat weights and then send that range to every
 * other rank; with the weights shared, the update writes them where every rank reads them, and the
 * exchange becomes one empty message per pair of ranks ("my range is updated"), which the next
 * step's forward pass waits for, as it waited for the weights: no copy of the weights per step.
 *
 * Why it is safe: each rank also sends every other rank an empty message when its backward pass
 * (the step's last reader of the weights) is over, and a rank updates its range only once it has
 * waited for them all (with the gradients); a rank's next forward pass reads the weights only after
 * every rank's message that its update is done (with the gradients shared too, both messages are
 * per layer: fit_dist.c's pipelined synchronization). The layers' kernel and bias tensors are replaced, for the fit, by tensors over
 * the shared buffer (each 64-byte aligned); at the fit's end (or when it fails) their values go
 * back into the layers' own tensors, so nothing after the fit sees the window. Optimizer slots
 * stay per rank.
 *
 * The gradients too (unless SM_MPI_SHARED_GRADS=0, rank 0's setting): each rank's weight gradients
 * lie in the window as one flat vector (the weights' flat order, nothing between tensors), so the
 * owner of a range reads the other ranks' gradients of it in place (sm__dist_grads_of) instead of
 * receiving a copy; the "backward over" message announces them. A rank writes its gradients again
 * only in its next backward pass, after every rank's "update done", i.e. after every owner has
 * read them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"
#include "train/train_internal.h"

struct sm__wshare {
  sm_tensor *own[SM_SEQ_MAX_LAYERS][2]; /* the layers' own kernel and bias, put back at the end */
  float *gown[SM_SEQ_MAX_LAYERS][2];    /* the trainer's own gk / gb, when the gradients are shared */
  float *grads;                         /* rank 0's flat gradients in the window (NULL: not shared) */
  int64_t gstride;                      /* floats from one rank's flat gradients to the next's */
};

static int64_t padded(int64_t n) { return (n + 15) & ~(int64_t)15; } /* floats, to 64 bytes */

static void no_release(void *ctx) { (void)ctx; }

/* Puts the layers' own tensors back, with the shared values in them. */
static void restore(sm_seq *m) {
  sm__train *t = m->priv;
  for (int l = 0; l < m->nlayers; l++)
    for (int w = 0; w < 2; w++) {
      float *gown = t->wshare->gown[l][w], **gcur = w ? &t->gb[l] : &t->gk[l];
      if (gown) {
        int64_t n = w ? m->layers[l].units : sm_tensor_num_elements(m->layers[l].kernel);
        memcpy(gown, *gcur, (size_t)n * sizeof(float));
        *gcur = gown;
      }
      sm_tensor *own = t->wshare->own[l][w];
      if (!own) continue;
      sm_tensor **cur = w ? &m->layers[l].bias : &m->layers[l].kernel;
      memcpy(sm_tensor_data(own), sm_tensor_data(*cur), sm_tensor_nbytes(own));
      sm_tensor_free(*cur);
      *cur = own;
    }
  free(t->wshare);
  t->wshare = NULL;
}

sm_status *sm__dist_weights_share(sm_seq *m) {
  sm__train *t = m->priv;
  /* rank 0's choice for all (each rank's layout must agree) */
  const char *v = getenv("SM_MPI_SHARED_GRADS");
  int grads = !(v && !strcmp(v, "0"));
  sm_status *st = sm__dist_bcast(&grads, sizeof grads, "the shared weights' setup");
  if (st) return st;
  int64_t total = 16, P = 0;
  for (int l = 0; l < m->nlayers; l++)
    if (m->layers[l].kernel) {
      int64_t nk = sm_tensor_num_elements(m->layers[l].kernel), nb = sm_tensor_num_elements(m->layers[l].bias);
      total += padded(nk) + padded(nb);
      P += nk + nb;
    }
  int64_t gstride = padded(P);
  if (grads) total += gstride * sm__dist_size();
  void *mem;
  st = sm__dist_shared_alloc((size_t)total * sizeof(float), &mem);
  if (st || !mem) return st;
  t->wshare = calloc(1, sizeof *t->wshare);
  if (!t->wshare) {
    sm__dist_shared_free();
    return sm_status_new(SM_NO_MEMORY, "MPI rank %d: out of memory", sm__dist_rank());
  }
  float *p = (float *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
  for (int l = 0; l < m->nlayers && !st; l++) {
    sm__layer *L = &m->layers[l];
    if (!L->kernel) continue;
    for (int w = 0; w < 2 && !st; w++) {
      sm_tensor **cur = w ? &L->bias : &L->kernel, *wrap;
      size_t nb = sm_tensor_nbytes(*cur);
      /* every rank has rank 0's weights (broadcast); rank 0 writes the one copy */
      if (sm__dist_rank() == 0) memcpy(p, sm_tensor_data(*cur), nb);
      st = sm_tensor_wrap(sm_tensor_dtype(*cur), sm_tensor_rank(*cur), sm_tensor_dims(*cur), p, nb, no_release, NULL,
                          &wrap);
      if (st) break;
      t->wshare->own[l][w] = *cur;
      *cur = wrap;
      p += padded(sm_tensor_num_elements(wrap));
    }
  }
  if (!st && grads) { /* this rank's gradients: its flat vector, tensors back to back */
    t->wshare->grads = p;
    t->wshare->gstride = gstride;
    float *q = p + gstride * sm__dist_rank();
    for (int l = 0; l < m->nlayers; l++) {
      if (!m->layers[l].kernel) continue;
      t->wshare->gown[l][0] = t->gk[l];
      t->wshare->gown[l][1] = t->gb[l];
      t->gk[l] = q;
      q += sm_tensor_num_elements(m->layers[l].kernel);
      t->gb[l] = q;
      q += sm_tensor_num_elements(m->layers[l].bias);
    }
  }
  /* every rank reads rank 0's copy only after it is written: a broadcast orders it */
  int one = 1;
  if (!st) st = sm__dist_bcast(&one, sizeof one, "the shared weights' setup");
  if (st) {
    restore(m);
    sm__dist_shared_free();
  }
  return st;
}

int sm__dist_weights_shared(const sm_seq *m) { return ((const sm__train *)m->priv)->wshare != NULL; }

float *sm__dist_grads_of(const sm_seq *m, int k) {
  const struct sm__wshare *w = ((const sm__train *)m->priv)->wshare;
  return w && w->grads ? w->grads + w->gstride * k : NULL;
}

/* Empty messages to and from every other rank (the step's "backward over": also "my gradients
 * are written", when they are shared; and "update done"). */
sm_status *sm__dist_weights_announce(sm_seq *m) {
  (void)m;
  static float none;
  int N = sm__dist_size(), r = sm__dist_rank();
  sm_status *st = NULL;
  for (int k = 0; k < N && !st; k++)
    if (k != r && !(st = sm__dist_send_start(&none, 0, k))) st = sm__dist_recv_start(&none, 0, k);
  return st;
}

void sm__dist_weights_unshare(sm_seq *m, int collective) {
  sm__train *t = m->priv;
  if (!t || !t->wshare) return;
  restore(m);
  /* after a failure another rank may be gone: the window stays until MPI's end */
  if (collective) sm__dist_shared_free();
}

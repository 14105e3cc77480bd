/* train_internal.h - what the trainer's files (seq.c, loss.c, optim.c, grad.c, fit.c) share: the
 * private state behind sm_seq.priv (thread pool, RNG, scratch sized once per batch size) and the
 * per-layer forward/backward, loss and optimizer steps, exposed so that tests can check each one
 * (finite differences, TensorFlow goldens) in isolation. */
#ifndef SM_TRAIN_INTERNAL_H
#define SM_TRAIN_INTERNAL_H
#include <stdint.h>

#include "runtime/kernel.h"
#include "train/seq.h"

/* xoshiro256** seeded through splitmix64: small, fast, and the same stream on every platform. */
typedef struct sm__rng {
  uint64_t s[4];
} sm__rng;
void sm__rng_seed(sm__rng *r, uint64_t seed);
uint64_t sm__rng_next(sm__rng *r);
float sm__rng_uniform(sm__rng *r);               /* [0, 1) with 24 random bits */
uint64_t sm__rng_below(sm__rng *r, uint64_t n);  /* [0, n), unbiased */

typedef struct sm__train {
  sm_threadpool *pool;
  int nthreads;
  sm__rng rng; /* shuffling and dropout masks */
  /* Under MPI (fit_dist.c): dropout masks come from drop_rng, this rank's own stream, so that rng
   * (shuffling) stays the same on every rank; layer_done is called by sm__backward as soon as
   * layer l's weight gradients are final. */
  sm__rng drop_rng;
  int dist_drop;
  /* tests/cli/train_mpi.sh's fault hook (SM_TEST_MPI_FAIL), read once per fit: fault_mode 0 = none */
  int fault_rank, fault_mode; /* 1 kill, 2 hang, 3 another word (printed, nothing done) */
  char fault_name[8];
  int64_t fault_step;
  void (*layer_done)(void *ctx, int l);
  void *layer_done_ctx;
  /* called by sm__forward(training=1) before a layer with weights runs (its weights may still be
   * arriving from the other ranks); its ctx is layer_done_ctx */
  sm_status *(*layer_begin)(void *ctx, int l);
  /* The sharded optimizer under MPI (fit_dist.c): this rank updates the elements [zlo, zhi) of the
   * flat weight vector; zrecv receives the other ranks' gradient pieces of that range; zag[l] marks
   * (sm__dist_pending) the requests up to layer l's weights of the exchange started after the last
   * step, which is live (not waited for yet) while zag_live is set. */
  float *zrecv;
  struct sm__wshare *wshare; /* dist_weights.c: the weights in one node-shared copy during the fit */
  int64_t zlo, zhi, zstep;
  int zag[SM_SEQ_MAX_LAYERS], zag_live;
  /* Dense layers that exchange their inputs instead of their kernel gradients (fit_dist.c,
   * SM_MPI_EXCHANGE): where xchg[l] is set, sm__backward makes only the kernel gradient's rows
   * [xrows[l][0], xrows[l][1]) (this rank's share; the other rows are their owners' to make), and
   * xin[l] holds the other ranks' input columns and output gradients (for global batches of up to
   * xcap samples). zslack: floats of room before and after each piece of zrecv (whole rows of
   * those products land there). */
  unsigned char xchg[SM_SEQ_MAX_LAYERS];
  int64_t xrows[SM_SEQ_MAX_LAYERS][2], xcap, zslack;
  float *xin[SM_SEQ_MAX_LAYERS];
  /* Under MPI (fit_dist.c, every Dense layer, whatever the exchange): xcut[l] (nxcut[l] ascending
   * rows, 0 to K) cuts layer l's kernel gradient X^T dY [K, U] at every rank's first and last row of
   * its share; sm__train_wgrad makes it one product per piece between cuts, so that a rank's rows
   * and an owner's rows of another rank's gradient (the input exchange) come from the same products
   * as the whole (oneDNN's AVX2 gemm:jit makes a product's rows with other operations depending on
   * where they fall in it). NULL: one product (one process). */
  int64_t *xcut[SM_SEQ_MAX_LAYERS];
  int nxcut[SM_SEQ_MAX_LAYERS];
  /* zpipe (weights and gradients shared, SM_MPI_PIPELINE not 0): the step's two synchronizations
   * are per layer (fit_dist.c); zbw[l] marks the requests up to the other ranks' "backward past
   * layer l" messages, which the owners of a part of layer l wait for before updating it */
  int zpipe, zbw[SM_SEQ_MAX_LAYERS];
  /* Scratch for batches of up to `cap` samples (0 = none yet). Index i is layer i; act[i] is
   * layer i's output (an alias of its input for flatten, and for dropout outside training),
   * grad[i] the loss's gradient with respect to it (alias likewise). */
  int64_t cap;
  float *act[SM_SEQ_MAX_LAYERS], *grad[SM_SEQ_MAX_LAYERS];
  float *act_buf[SM_SEQ_MAX_LAYERS], *grad_buf[SM_SEQ_MAX_LAYERS]; /* owned; NULL for flatten */
  int fused_last; /* the loss gave the gradient w.r.t. the last layer's softmax input */
  int64_t *argmax[SM_SEQ_MAX_LAYERS];
  float *mask[SM_SEQ_MAX_LAYERS];
  float *xbatch;   /* gathered (shuffled) inputs, cap x in_elems */
  float *ybatch;   /* MSE targets, cap x out_elems */
  int32_t *lbatch; /* class ids */
  /* Weight gradients, sized at compile. */
  float *gk[SM_SEQ_MAX_LAYERS], *gb[SM_SEQ_MAX_LAYERS];
  /* Per-thread conv scratch: im2col rows (col_per_thread floats each) and partial weight
   * gradients (part_per_thread floats each). */
  float *col, *part;
  int64_t col_per_thread, part_per_thread;
  int scratch_threads;
  /* sm_seq_fit_timing: the last epoch's (filled while it runs, kept after) */
  sm_fit_timing timing;
  /* sm__train_matmul's oneDNN primitives, one cache per product (forward, weight gradient,
   * input gradient), made at its first use while oneDNN is on */
  struct sm__dnnl_cache *mm_cache[3];
} sm__train;

/* Elements of one sample's tensor of the given shape. */
int64_t sm__elems(int rank, const int64_t *shape);

/* Thread pool with n threads (0 = one per core), (re)made when n changes. */
sm_status *sm__train_pool(sm_seq *m, int nthreads);
/* Scratch for batches of `cap` samples; no-op when already big enough. */
sm_status *sm__train_scratch(sm_seq *m, int64_t cap);

/* Forward pass of n <= cap samples from x; *out is the model's output (scratch-owned). Dropout
 * masks are drawn from the trainer's RNG when `training` is set. */
sm_status *sm__forward(sm_seq *m, const float *x, int64_t n, int training, const float **out);
/* Softmax over the last axis (k wide) of rows x k values, in place. */
void sm__softmax_rows(float *v, int64_t rows, int64_t k);

/* Layer l's backward for n samples: x its input, y its output, gy the gradient with respect to y
 * (overwritten: activations are undone in place), gx (NULL: not wanted) the gradient with respect
 * to x, gk/gb (for layers with weights) the gradients of the kernel and bias. */
sm_status *sm__layer_backward(sm_seq *m, int l, const float *x, const float *y, float *gy, float *gx, float *gk,
                              float *gb, int64_t n);
/* Whole backward pass after sm__forward(training=1), from the gradient of the loss w.r.t. the
 * model's output (in tr->grad[last]); fills tr->gk/gb. An error only from sm__train_matmul. */
sm_status *sm__backward(sm_seq *m, const float *x, int64_t n);

/* The Dense layers' products: C [m, n] = op(A) op(B), row-major and dense (A [m, k], or [k, m]
 * when ta; B [k, n], or [n, k] when tb). `which` names the product (0 forward, 1 weight gradient,
 * 2 input gradient: each has its own primitive cache). oneDNN's matmul on the operands as they
 * lie (brgemm; nothing packed, the weights change every step), rows (or, for few rows, columns)
 * split over the trainer's pool, where oneDNN is on (sm__dnnl_enabled); else, or where it has no primitive, the pool's gemm
 * (OpenBLAS). An error (out of memory in oneDNN) is returned, never hidden by a fallback. */
sm_status *sm__train_matmul(sm__train *t, int which, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                            const float *b, float *c);
/* The same with A's rows lda floats apart (rows of A, or of the transposed [k, m] A when ta). */
sm_status *sm__train_matmul_lda(sm__train *t, int which, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                const float *a, int64_t lda, const float *b, float *c);
/* Rows [r0, r1) of Dense layer l's kernel gradient X^T dY [K, u] over nb samples (a: column r0 of
 * X [nb, K], its rows lda floats apart; dy [nb, u]; c: row r0 of the gradient): one product, or
 * under MPI one per piece between t->xcut[l]'s cuts (r0, r1 should be cuts). */
sm_status *sm__train_wgrad(sm__train *t, int l, int64_t r0, int64_t r1, int64_t u, int64_t nb, const float *a,
                           int64_t lda, const float *dy, float *c);

/* Loss over n samples of the model's output `out` ([n, k] logits/probabilities for
 * cross-entropy with integer labels, [n, k] values for MSE with float targets), its gradient
 * with respect to `out` into g (NULL: not wanted), and the number of correct argmax predictions
 * into *correct (cross-entropy only). When the last layer ends in softmax and the loss is
 * cross-entropy on probabilities, `g` is the gradient w.r.t. the softmax's input (Keras uses the
 * logits then too) and *fused is set. Returns the mean loss. */
double sm__loss(const sm_seq *m, const float *out, int64_t n, int64_t k, const int32_t *labels, const float *targets,
                float *g, int64_t *correct, int *fused);

/* One optimizer step on every weight with the gradients in tr->gk/gb; increments iterations. */
void sm__optimizer_step(sm_seq *m);
/* The same step on the elements [lo, hi) of the weights taken as one flat vector (layers in
 * order, each layer's kernel then bias): a rank's share under the sharded optimizer (fit_dist.c).
 * add (NULL: none): flat values over [lo, hi) added to the gradients as they are read. */
void sm__optimizer_step_part(sm_seq *m, int64_t lo, int64_t hi, const float *add);
/* sm__optimizer_step_part without the increment of iterations: a step's update made in several
 * ranges, iterations incremented once after the last (add: flat values over [lo, hi) as above). */
void sm__optimizer_step_range(sm_seq *m, int64_t lo, int64_t hi, const float *add);
/* One update of one variable (n elements) by its gradient: exposed for tests. */
void sm__apply_update(const sm_optimizer *o, int64_t iterations, float *w, const float *g, float *s0, float *s1,
                      int64_t n);

/* optim.c: one step's factors (the learning rate of step `iterations`, Adam's bias-corrected
 * alpha, the 1 - beta terms as Keras rounds them), as the CPU's update loops use them: the GPU
 * backend passes them to its kernels. kind..omrho mirror smcu_opt (src/cuda/smcu.h). */
typedef struct sm__opt_factors {
  int kind, nesterov, centered;
  float lr, mom, alpha, omb1, omb2, eps, wd, rho, omrho;
} sm__opt_factors;
void sm__opt_factors_get(const sm_optimizer *o, int64_t iterations, sm__opt_factors *f);

/* The trainer's backends (fit.c drives them; the same seam for both): the CPU's (fit.c: the
 * forward / loss / backward / optimizer of this directory, data-parallel under MPI) and the
 * GPU's (fit_gpu.c: every layer's forward and backward on the GPU, the weights, gradients,
 * optimizer slots, activations and the data set in device memory for the whole fit). */
typedef struct sm__train_backend {
  const char *name;
  /* x [n, in...] with labels (class ids) or targets; rows [0, ntr) train, [ntr, n) validate,
   * steps of at most bs rows. */
  sm_status *(*begin)(sm_seq *m, const float *x, const int32_t *labels, const float *targets, int64_t n, int64_t ntr,
                      int64_t bs, void **ctx);
  /* An epoch's sample order perm[0, ntr); resets the epoch's sums. */
  sm_status *(*epoch)(void *ctx, const int64_t *perm);
  /* One optimizer step on the samples perm[b0, b0 + b) (m->iterations + 1). */
  sm_status *(*step)(void *ctx, int64_t b0, int64_t b);
  /* The epoch's summed loss and correct count so far (the GPU's: waits for its steps). */
  sm_status *(*totals)(void *ctx, double *loss_sum, int64_t *correct);
  /* Mean loss and accuracy over the rows [ntr, n). */
  sm_status *(*validate)(void *ctx, double *loss, double *accuracy);
  /* The trained weights, optimizer slots and statistics back into m (the GPU's: copied). */
  sm_status *(*end)(void *ctx);
  void (*free)(void *ctx);
  int report_every; /* steps between progress callbacks (and each epoch's last step) */
} sm__train_backend;
extern const sm__train_backend sm__train_cpu, sm__train_gpu;

/* optim.c: the Keras name of optimizer slot k ("momentum", "velocity", "average_gradient"), NULL
 * when the optimizer keeps no such slot; the learning rate of step `iterations` (the schedule's);
 * the settings' checks (ranges, schedule). */
const char *sm__opt_slot_name(const sm_optimizer *o, int k);
float sm__opt_learning_rate(const sm_optimizer *o, int64_t iterations);
sm_status *sm__check_optimizer(const sm_optimizer *o);

/* fit_dist.c: as one rank of an MPI job of several, fit starts from rank 0's model and RNG
 * (checking every rank trains the same model on the same data), and each step trains on this
 * rank's nb samples (in xbatch/lbatch/ybatch) of a global batch of b, summing the gradients over
 * the ranks, and takes the optimizer step (its share); *loss_sum and *correct are the global
 * batch's (on rank 0). */
sm_status *sm__dist_fit_begin(sm_seq *m, int64_t ntr, int64_t bs);
sm_status *sm__dist_step(sm_seq *m, int64_t nb, int64_t b, int64_t out_per, double *loss_sum, int64_t *correct);
/* After sm__dist_step the weights are still arriving: sm__dist_sync waits for them (before anything
 * but the next step reads them); sm__dist_fit_end also gathers the optimizer slots, which each rank
 * updated only in its share (then every rank holds the whole model and state). */
sm_status *sm__dist_sync(sm_seq *m);
sm_status *sm__dist_fit_end(sm_seq *m);
/* dist_weights.c: the weights in one copy every rank maps, where all ranks share a node.
 * sm__dist_weights_share (collective, after the initial broadcasts; nothing when no shared window)
 * puts the layers' kernels and biases there for the fit; while shared, sm__dist_weights_announce's
 * empty messages say "backward over" (before the update) and stand for the weights exchange;
 * sm__dist_weights_unshare puts the values back into the layers' own tensors (collective: also
 * frees the window; else, after a failure, it stays). */
sm_status *sm__dist_weights_share(sm_seq *m);
int sm__dist_weights_shared(const sm_seq *m);
/* Rank k's weight gradients, one flat vector (the weights' flat order) in the shared window, when
 * the gradients are shared too (then tr->gk/gb point into this rank's); else NULL. */
float *sm__dist_grads_of(const sm_seq *m, int k);
sm_status *sm__dist_weights_announce(sm_seq *m);
void sm__dist_weights_unshare(sm_seq *m, int collective);

/* layers.c: the layers of Keras configs (see seq.h's kinds) built by keras.c, whose forward and
 * backward fit.c and grad.c dispatch to here (x: the layer's input, y: its output). */
sm_status *sm__seq_batchnorm(sm_seq *m, float momentum, float epsilon, int center, int scale);
sm_status *sm__seq_avg_pool2d(sm_seq *m, int ph, int pw, int sh, int sw, int padding);
sm_status *sm__seq_gap2d(sm_seq *m);
sm_status *sm__seq_rescaling(sm_seq *m, float scale, float offset);
sm_status *sm__seq_leaky_relu(sm_seq *m, float slope);
sm_status *sm__seq_reshape(sm_seq *m, int rank, const int64_t *shape);
/* Renames the last layer added (Keras's own names: [a-z0-9_], unique). */
sm_status *sm__seq_name_last(sm_seq *m, const char *name);
/* keras.c: sm_seq_from_keras over text in memory (`what` names it in messages; the fuzz target). */
sm_status *sm__seq_from_keras_text(const char *text, size_t len, const char *what, sm_seq **out);
/* Bytes of batch norm's per-layer scratch (tr->mask[l]) for c channels. */
#define SM_BN_SCRATCH(c) (6 * (size_t)(c) * sizeof(float) + 2 * (size_t)(c) * sizeof(double))
void sm__layer_forward_extra(sm_seq *m, int l, const float *x, float *y, int64_t n, int training);
void sm__layer_backward_extra(sm_seq *m, int l, const float *x, const float *gy, float *gx, float *gk, float *gb,
                              int64_t n);

/* The trainer's private state, created on first use. */
sm_status *sm__train_get(sm_seq *m, sm__train **out);
void sm__train_free(sm__train *t);

#endif

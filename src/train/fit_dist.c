/* fit_dist.c - what sm_seq_fit does differently as one rank of an MPI job (src/train/dist.c):
 * agreeing on the run (data size, batch, architecture), starting from rank 0's weights, optimizer
 * state and RNG, and one training step on this rank's shard of the global batch, its gradients
 * summed over the ranks layer by layer as the backward pass finishes each, each rank updating its
 * share of the weights (the sharded optimizer below); or, for a Dense layer without the shared
 * window, its inputs sent to the owners of its kernel's rows instead (the input exchange below).
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

#include "ops/nn_dnnl.h"
#include "train/dist.h"
#include "train/train_internal.h"

static sm_status *xl_choose(sm_seq *m, int64_t P, int l, int64_t bs, const char *mode);
static sm_status *xl_exact(sm_seq *m, int64_t P, int64_t ntr, int64_t bs, int *exact);
static sm_status *xl_cuts(sm_seq *m, int64_t P);

/* No layer exchanges its inputs (fit_dist.c's input exchange, below). */
static void xl_reset(sm__train *t) {
  for (int l = 0; l < SM_SEQ_MAX_LAYERS; l++) {
    free(t->xin[l]);
    t->xin[l] = NULL;
    t->xchg[l] = 0;
    free(t->xcut[l]);
    t->xcut[l] = NULL;
    t->nxcut[l] = 0;
  }
}

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
  t->zpipe = 0;
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
  /* this rank's share of the flat weight vector, and room for the others' gradients of it */
  int N = sm__dist_size(), r = sm__dist_rank();
  t->zlo = params * r / N;
  t->zhi = params * (r + 1) / N;
  t->zag_live = 0;
  sm__rng tmp = t->rng;
  sm__rng_seed(&t->drop_rng, sm__rng_next(&tmp) + 0x9e3779b97f4a7c15ull * (uint64_t)(sm__dist_rank() + 1));
  t->dist_drop = 1;
  free(t->zrecv);
  t->zrecv = NULL;
  t->zslack = 0;
  xl_reset(t); /* a failed fit's (never ended) too */
  t->zpipe = 0;
  if ((st = xl_cuts(m, params))) return st; /* whatever the exchange: the same bits on every transport */
  if ((st = sm__dist_weights_share(m))) return st;
  if (sm__dist_grads_of(m, 0)) { /* the pieces are read in place */
    /* rank 0's choice for all: the ranks' messages must pair up */
    const char *v = getenv("SM_MPI_PIPELINE");
    int pipe = !(v && !strcmp(v, "0"));
    st = sm__dist_bcast(&pipe, sizeof pipe, "the initial broadcast");
    t->zpipe = !st && pipe;
    return st;
  }
  /* which Dense layers exchange their inputs: rank 0's settings decide for all */
  char mode[8] = "auto";
  const char *e = getenv("SM_MPI_EXCHANGE");
  if (e) snprintf(mode, sizeof mode, "%s", e);
  if (!sm__dnnl_enabled() && (!strcmp(mode, "auto") || !strcmp(mode, "inputs"))) strcpy(mode, "grads");
  if (r == 0 && (!strcmp(mode, "auto") || !strcmp(mode, "inputs"))) { /* rank 0's CPU decides for all */
    int exact = 1;
    if ((st = xl_exact(m, params, ntr, bs, &exact))) return st;
    if (!exact && !strcmp(mode, "auto")) strcpy(mode, "grads");
    if (!exact && !strcmp(mode, "inputs"))
      fprintf(stderr, "warning: SM_MPI_EXCHANGE=inputs: on this CPU oneDNN's product of a Dense layer's rows is not "
              "bit-equal to the same rows of the whole gradient (A's rows at another stride): the run differs "
              "from the gradients' exchange in the last bits\n");
  }
  if ((st = sm__dist_bcast(mode, sizeof mode, "the initial broadcast"))) return st;
  if (strcmp(mode, "auto") && strcmp(mode, "inputs") && strcmp(mode, "grads"))
    return sm_status_new(SM_INVALID_ARGUMENT, "SM_MPI_EXCHANGE=%.7s: auto, inputs or grads", mode);
  for (int l = 0; l < m->nlayers && !st; l++) st = xl_choose(m, params, l, bs, mode);
  if (st) return st;
  int64_t n = (N - 1) * (t->zhi - t->zlo + t->zslack) + t->zslack + 1;
  if (!(t->zrecv = malloc((size_t)n * sizeof(float))))
    return sm_status_new(SM_NO_MEMORY, "MPI rank %d: out of memory for %lld gradient values", r, (long long)n);
  return NULL;
}

/* ---- the sharded optimizer ---------------------------------------------------------------------
 * The weights as one flat vector (layers in order, each one's kernel then bias) are cut into one
 * contiguous range per rank. As the backward pass finishes a layer, each rank sends every other rank
 * its gradient of that rank's range and receives theirs of its own (a reduce-scatter in one round,
 * point to point: Open MPI's nonblocking reduce-scatter reduces everything on one rank first); after
 * the last layer it sums them in rank order, updates its range of the weights and the optimizer slots
 * (a 1/N share of the optimizer's work and memory traffic), then sends that range to every rank
 * (an allgather) while the next step's forward pass runs, which waits for a layer's weights only
 * just before the layer. The optimizer slots are gathered at the end of the fit (the export and
 * --resume need all of them). With the weights and gradients in a node-shared window
 * (dist_weights.c), nothing is sent but empty messages: the owner reads the other ranks'
 * gradients of its range in place (piece), after their "backward over" message (per layer: the
 * pipelined synchronization below). */
static int64_t flat_off(const sm_seq *m, int upto) {
  int64_t off = 0;
  for (int l = 0; l < upto; l++)
    if (m->layers[l].kernel)
      off += sm_tensor_num_elements(m->layers[l].kernel) + sm_tensor_num_elements(m->layers[l].bias);
  return off;
}

/* [*a, *b): the part of the flat range [off, off + n) that rank j updates (empty: *a >= *b) */
static void share(int64_t P, int j, int64_t off, int64_t n, int64_t *a, int64_t *b) {
  int N = sm__dist_size();
  int64_t lo = P * j / N, hi = P * (j + 1) / N;
  *a = lo > off ? lo : off;
  *b = hi < off + n ? hi : off + n;
}

/* Rank k's gradient at flat index a of this rank's range: in place in k's shared gradients when
 * the gradients are shared (dist_weights.c), else where its piece lands in zrecv. */
static float *piece(const sm_seq *m, int k, int64_t a) {
  const sm__train *t = m->priv;
  float *g = sm__dist_grads_of(m, k);
  if (g) return g + a;
  int r = sm__dist_rank();
  return t->zrecv + t->zslack + (int64_t)(k < r ? k : k - 1) * (t->zhi - t->zlo + t->zslack) + (a - t->zlo);
}

/* The tensor at flat [off, off + n), buf its values there. Gradients (t set): every other rank's
 * range out to it, their pieces of this rank's range into zrecv. Weights or a slot (t NULL): this
 * rank's range out to every other rank, theirs in, in place. */
static sm_status *exchange(sm_seq *m, sm__train *t, int64_t P, float *buf, int64_t off, int64_t n) {
  int N = sm__dist_size(), r = sm__dist_rank();
  sm_status *st = NULL;
  for (int j = 0; j < N && !st; j++) {
    int64_t a, b;
    share(P, j, off, n, &a, &b);
    if (a >= b) continue;
    if (j != r)
      st = t ? sm__dist_send_start(buf + (a - off), b - a, j) : sm__dist_recv_start(buf + (a - off), b - a, j);
    for (int k = 0; k < N && !st && j == r; k++)
      if (k != r)
        st = t ? sm__dist_recv_start(piece(m, k, a), b - a, k) : sm__dist_send_start(buf + (a - off), b - a, k);
  }
  return st;
}

/* The received pieces added to this rank's range of g in rank order, as every rank would, but for
 * the last addition, which the optimizer makes as it reads the gradient (sm__optimizer_step_part's
 * add, last_piece below), so that the sum is not written out and read back: rank 0 adds all but
 * the last piece into its own range; another rank sums from rank 0's piece on, the sum of all but
 * the last term into its own range, except the last rank (its own range is the last term), whose
 * sum stays in rank 0's piece. Float addition commutes: the same bits as summing first. With the
 * gradients shared, rank 0's piece is rank 0's own gradients of this rank's range in the window,
 * which no other rank reads, and which rank 0 writes again only after this rank's "update done". */
static void sum_pieces(const sm_seq *m, int64_t P, float *g, int64_t off, int64_t n) {
  int N = sm__dist_size(), r = sm__dist_rank();
  int64_t a, b;
  share(P, r, off, n, &a, &b);
  if (a >= b) return;
  float *own = g + (a - off);
  int64_t c = b - a;
  if (r == 0) {
    for (int k = 1; k < N - 1; k++) {
      const float *p = piece(m, k, a);
      for (int64_t i = 0; i < c; i++) own[i] += p[i];
    }
    return;
  }
  float *acc = piece(m, 0, a);
  for (int k = 1; k < N - 1; k++) {
    const float *p = k == r ? own : piece(m, k, a);
    float *dst = k == N - 2 && r != N - 1 ? own : acc;
    for (int64_t i = 0; i < c; i++) dst[i] = acc[i] + p[i];
  }
}

/* What the optimizer adds to this rank's own range of the gradients (flat over [zlo, zhi)) after
 * sum_pieces: the last rank's piece, or on the last rank the running sum in rank 0's piece. */
static const float *last_piece(const sm_seq *m) {
  const sm__train *t = m->priv;
  int N = sm__dist_size(), r = sm__dist_rank();
  return r == N - 1 ? piece(m, 0, t->zlo) : piece(m, N - 1, t->zlo);
}

/* ---- Dense layers that exchange their inputs instead of their kernel gradients ----------------
 * A Dense layer's kernel gradient is X^T dY over the batch (X [nb, K] its input, dY [nb, U] the
 * gradient of its pre-activation output): each rank's K x U of it is written and nearly all of it
 * sent to the owners of its rows, although nb (the rank's shard) is far below K. Instead, each rank
 * sends each owner the columns of its X of the rows that owner updates (packed, as the forward
 * pass reaches the layer: they travel during the rest of the forward and the backward pass) and
 * its dY (as the backward pass leaves the layer), and makes only its own rows of its own gradient
 * (xrows, grad.c); each owner then makes the other ranks' gradients of its rows from their columns,
 * one product per rank, straight into where their pieces would have landed in zrecv. The bias's
 * gradient travels as before. Same bits as the gradients' exchange: under MPI every Dense layer's
 * X^T dY, on every path, is made one product per piece between the layer's cuts (xl_cuts: every
 * rank's first and last row), so a rank's own rows and an owner's rows of another rank's gradient
 * are the very products the whole is made of, only with A's rows further apart (strided in X, or
 * packed as received). Without the cuts it held only where oneDNN makes a row of X^T dY with the
 * same operations whatever the other rows: an AVX-512 CPU, not an AVX2 one, whose gemm:jit makes a
 * product's rows with other operations depending on where in the product they fall (session 17 -
 * k5; bench/RESULTS.md session 18 - a3). What is left to chance, A's row stride, xl_exact checks on
 * the fit's shapes at its start; tests/cli/train_mpi.sh compares the two exactly. So the sum and
 * the optimizer below are unchanged. The forward products need no cuts: each rank makes its
 * shard's, whatever the exchange. At -np 2 on the seed CNN a rank sends
 * 0.35 MB of columns and 8 kB of dY a step instead of a 0.69 MB gradient piece; it pays the
 * columns' packing. SM_MPI_EXCHANGE (rank 0's): auto (the default) every Dense layer where that
 * sends fewer floats, if rank 0's xl_exact finds the products exact, inputs every Dense layer (with a
 * warning where they are not), grads none; never with the gradients read in place
 * (shared memory, dist_weights.c: no bytes to save) or without oneDNN (the gemm's small-row
 * kernels round differently). */
static int64_t shard_lo(int64_t b, int k) { return b * k / sm__dist_size(); }
static int64_t shard_n(int64_t b, int k) { return shard_lo(b, k + 1) - shard_lo(b, k); }

/* [*r0, *r1): the rows of layer l's kernel [K, U] that hold rank j's share of it (none: equal) */
static void xl_rows(const sm_seq *m, int64_t P, int l, int j, int64_t *r0, int64_t *r1) {
  const sm__layer *L = &m->layers[l];
  int64_t off = flat_off(m, l), U = L->units, a, b;
  share(P, j, off, sm_tensor_num_elements(L->kernel), &a, &b);
  *r0 = *r1 = 0;
  if (a < b) *r0 = (a - off) / U, *r1 = (b - off + U - 1) / U;
}

/* Every Dense layer's cuts (t->xcut): rows 0 and K and every rank's first and last row of its
 * share of the kernel. At -np 2 on the seed CNN: Dense(5408->64) [0, 2707), [2707, 2708) (the row
 * both ranks' shares hold part of), [2708, 5408). */
static sm_status *xl_cuts(sm_seq *m, int64_t P) {
  sm__train *t = m->priv;
  int N = sm__dist_size();
  for (int l = 0; l < m->nlayers; l++) {
    const sm__layer *L = &m->layers[l];
    if (L->kind != SM_LAYER_DENSE || !L->kernel || L->units <= 0) continue;
    int64_t K = sm_tensor_num_elements(L->kernel) / L->units, r0, r1, *c = malloc((size_t)(2 * N + 2) * sizeof *c);
    if (!c) return sm_status_new(SM_NO_MEMORY, "MPI: out of memory for %s's cuts", L->name);
    int n = 0;
    c[n++] = 0, c[n++] = K;
    for (int j = 0; j < N; j++) {
      xl_rows(m, P, l, j, &r0, &r1);
      if (r0 < r1) c[n++] = r0, c[n++] = r1;
    }
    for (int i = 1; i < n; i++) /* ascending, each once */
      for (int k = i; k > 0 && c[k - 1] > c[k]; k--) {
        int64_t v = c[k];
        c[k] = c[k - 1], c[k - 1] = v;
      }
    int u = 0;
    for (int i = 0; i < n; i++)
      if (!u || c[i] != c[u - 1]) c[u++] = c[i];
    t->xcut[l] = c;
    t->nxcut[l] = u;
  }
  return NULL;
}

/* Rank k's slot (k != this rank) in the order of the other ranks. */
static int slot(int k) { return k < sm__dist_rank() ? k : k - 1; }

/* Whether layer l exchanges its inputs (global batches of up to bs), and if so its buffer xin[l]:
 * the other ranks' columns of this rank's rows (w each of up to ms samples per rank), their dY,
 * then the columns this rank sends. */
static sm_status *xl_choose(sm_seq *m, int64_t P, int l, int64_t bs, const char *mode) {
  sm__train *t = m->priv;
  const sm__layer *L = &m->layers[l];
  int N = sm__dist_size(), r = sm__dist_rank();
  t->xchg[l] = 0;
  free(t->xin[l]);
  t->xin[l] = NULL;
  if (L->kind != SM_LAYER_DENSE || !L->kernel || !strcmp(mode, "grads")) return NULL;
  int64_t U = L->units, ms = (bs + N - 1) / N, out = 0, r0, r1;
  double xfl = 0.0, gfl = (double)(N - 1) * (double)sm_tensor_num_elements(L->kernel);
  for (int j = 0; j < N; j++) {
    xl_rows(m, P, l, j, &r0, &r1);
    if (j != r) out += r1 - r0;
    for (int k = 0; k < N && r1 > r0; k++)
      if (k != j) xfl += (double)shard_n(bs, k) * (double)(r1 - r0 + U);
  }
  if (xfl >= gfl && strcmp(mode, "inputs")) return NULL;
  xl_rows(m, P, l, r, &r0, &r1);
  int64_t n = (N - 1) * ms * (r1 - r0 + U) + ms * out + 1;
  if (!(t->xin[l] = malloc((size_t)n * sizeof(float))))
    return sm_status_new(SM_NO_MEMORY, "MPI rank %d: out of memory for %lld floats of %s's inputs", r, (long long)n,
                         L->name);
  t->xchg[l] = 1;
  t->xrows[l][0] = r0, t->xrows[l][1] = r1;
  t->xcap = bs;
  if (t->zslack < U) t->zslack = U;
  return NULL;
}

/* Whether the input exchange gives the gradients' exchange's bits here: for every Dense layer, every
 * shard size the fit's batches give (ntr samples in global batches of bs) and every rank's rows
 * [r0, r1) of the layer's kernel, those rows made as a rank makes its own (A strided) and as an owner
 * makes another rank's (A packed) equal those rows of the whole, bit for bit, on random data of those
 * shapes (the products' operations depend on the shapes, not on the values). All are made by
 * sm__train_wgrad over the layer's cuts (xl_cuts), so the same products but for A's row stride; a
 * CPU where that stride changed the bits would fail here and "auto" exchange the gradients there.
 * (Before the cuts, an AVX2 CPU failed here: session 17 - k5.) */
static sm_status *xl_exact(sm_seq *m, int64_t P, int64_t ntr, int64_t bs, int *exact) {
  sm__train *t = m->priv;
  int N = sm__dist_size();
  int64_t sizes[2 * 64], ns = 0, last = bs > 0 ? ntr % bs : 0;
  for (int k = 0; k < N && ns + 2 <= (int64_t)(sizeof sizes / sizeof *sizes); k++) {
    sizes[ns++] = shard_n(bs, k);
    if (last) sizes[ns++] = shard_n(last, k);
  }
  *exact = 1;
  sm_status *st = NULL;
  for (int l = 0; l < m->nlayers && !st && *exact; l++) {
    const sm__layer *L = &m->layers[l];
    if (L->kind != SM_LAYER_DENSE || !L->kernel || L->units <= 0) continue;
    int64_t U = L->units, K = sm_tensor_num_elements(L->kernel) / U, mx = 0;
    for (int64_t i = 0; i < ns; i++) mx = sizes[i] > mx ? sizes[i] : mx;
    if (mx <= 0 || K <= 0) continue;
    float *x = malloc((size_t)(mx * K) * sizeof(float)), *dy = malloc((size_t)(mx * U) * sizeof(float));
    float *whole = malloc((size_t)(K * U) * sizeof(float)), *part = malloc((size_t)(K * U) * sizeof(float));
    float *pk = malloc((size_t)(mx * K) * sizeof(float));
    if (!x || !dy || !whole || !part || !pk) st = sm_status_new(SM_NO_MEMORY, "MPI: out of memory probing %s", L->name);
    sm__rng g;
    sm__rng_seed(&g, 0x5eedu + (uint64_t)l);
    for (int64_t i = 0; i < mx * K && !st; i++) { /* relu's zeros too */
      float u = sm__rng_uniform(&g);
      x[i] = u < 0.25f ? 0.0f : u - 0.5f;
    }
    for (int64_t i = 0; i < mx * U && !st; i++) dy[i] = sm__rng_uniform(&g) - 0.5f;
    for (int64_t q = 0; q < ns && !st && *exact; q++) {
      int64_t nb = sizes[q], r0, r1;
      if (nb <= 0) continue;
      st = sm__train_wgrad(t, l, 0, K, U, nb, x, K, dy, whole);
      for (int j = 0; j < N && !st && *exact; j++) {
        xl_rows(m, P, l, j, &r0, &r1);
        int64_t w = r1 - r0;
        if (w <= 0) continue;
        st = sm__train_wgrad(t, l, r0, r1, U, nb, x + r0, K, dy, part);
        if (!st && memcmp(part, whole + r0 * U, (size_t)(w * U) * sizeof(float))) *exact = 0;
        for (int64_t i = 0; i < nb && !st; i++) memcpy(pk + i * w, x + i * K + r0, (size_t)w * sizeof(float));
        if (!st) st = sm__train_wgrad(t, l, r0, r1, U, nb, pk, w, dy, part);
        if (!st && memcmp(part, whole + r0 * U, (size_t)(w * U) * sizeof(float))) *exact = 0;
      }
    }
    free(x), free(dy), free(whole), free(part), free(pk);
  }
  return st ? sm_status_prefix(st, "probing the input exchange") : NULL;
}

/* As the forward pass reaches layer l (x its input, nb of this step's global batch of b): this
 * rank's columns out to the rows' owners, theirs of this rank's rows in. */
static sm_status *xl_inputs(sm_seq *m, int64_t P, int l, const float *x, int64_t nb, int64_t b) {
  sm__train *t = m->priv;
  const sm__layer *L = &m->layers[l];
  int N = sm__dist_size(), r = sm__dist_rank();
  int64_t U = L->units, K = sm_tensor_num_elements(L->kernel) / U, ms = (t->xcap + N - 1) / N;
  int64_t w = t->xrows[l][1] - t->xrows[l][0], r0, r1;
  float *out = t->xin[l] + (N - 1) * ms * (w + U);
  sm_status *st = NULL;
  for (int j = 0; j < N && !st && nb > 0; j++) {
    xl_rows(m, P, l, j, &r0, &r1);
    int64_t c = r1 - r0;
    if (j == r || c <= 0) continue;
    for (int64_t i = 0; i < nb; i++) memcpy(out + i * c, x + i * K + r0, (size_t)c * sizeof(float));
    st = sm__dist_send_start(out, nb * c, j);
    out += nb * c;
  }
  for (int k = 0; k < N && !st; k++)
    if (k != r && w > 0 && shard_n(b, k) > 0)
      st = sm__dist_recv_start(t->xin[l] + slot(k) * ms * w, shard_n(b, k) * w, k);
  return st;
}

/* As the backward pass leaves layer l: this rank's dY (tr->grad[l], nb rows, untouched until the
 * step's end) out to the owners of rows, theirs in. */
static sm_status *xl_grads(sm_seq *m, int64_t P, int l, int64_t nb, int64_t b) {
  sm__train *t = m->priv;
  int N = sm__dist_size(), r = sm__dist_rank();
  int64_t U = m->layers[l].units, ms = (t->xcap + N - 1) / N, w = t->xrows[l][1] - t->xrows[l][0], r0, r1;
  sm_status *st = NULL;
  for (int j = 0; j < N && !st && nb > 0; j++) {
    xl_rows(m, P, l, j, &r0, &r1);
    if (j != r && r1 > r0) st = sm__dist_send_start(t->grad[l], nb * U, j);
  }
  float *dy = t->xin[l] + (N - 1) * ms * w;
  for (int k = 0; k < N && !st; k++)
    if (k != r && w > 0 && shard_n(b, k) > 0) st = sm__dist_recv_start(dy + slot(k) * ms * U, shard_n(b, k) * U, k);
  return st;
}

/* Once they are in: the other ranks' gradients of this rank's rows, where their pieces go (whole
 * rows: the first and last may stick out of this rank's range, into zrecv's slack). */
static sm_status *xl_finish(sm_seq *m, int l, int64_t b) {
  sm__train *t = m->priv;
  int N = sm__dist_size(), r = sm__dist_rank();
  int64_t U = m->layers[l].units, ms = (t->xcap + N - 1) / N, r0 = t->xrows[l][0], w = t->xrows[l][1] - r0;
  const float *dy = t->xin[l] + (N - 1) * ms * w;
  sm_status *st = NULL;
  for (int k = 0; k < N && !st && w > 0; k++) {
    if (k == r) continue;
    float *dst = piece(m, k, flat_off(m, l) + r0 * U);
    if (shard_n(b, k) > 0)
      st = sm__train_wgrad(t, l, r0, r0 + w, U, shard_n(b, k), t->xin[l] + slot(k) * ms * w, w,
                           dy + slot(k) * ms * U, dst);
    else
      memset(dst, 0, (size_t)(w * U) * sizeof(float));
  }
  return st ? sm_status_prefix(st, "%s", m->layers[l].name) : NULL;
}


/* ---- the pipelined synchronization (zpipe: weights and gradients in the shared window) ----------
 * Without it a step has two barriers: every rank's "backward over" before any update, every rank's
 * "update done" before the next forward pass. With it both are per layer: after its backward pass
 * of layer l, a rank tells the other ranks that update a part of l (it reads l's weights no more
 * this step, and its gradients of them are written); an owner updates its part of l once every
 * other rank has, then tells every other rank, whose next forward pass waits for that before layer
 * l (layer_begin). So a rank waits only for the layers it is about to touch: the owner of the
 * first layer's weights still waits for every other rank's whole backward pass, but the others
 * start their update before it, and each rank starts its next forward pass while the owners of
 * later layers still update those. The same updates, element by element: the same bits. */
static float pipe_none; /* the empty messages' buffer */

static int owner_of(const sm_seq *m, int64_t P, int j, int l) {
  int64_t a, b, off = flat_off(m, l);
  share(P, j, off, sm_tensor_num_elements(m->layers[l].kernel) + sm_tensor_num_elements(m->layers[l].bias), &a, &b);
  return a < b;
}

/* after this rank's backward pass of layer l (weighted) */
static sm_status *pipe_past(sm_seq *m, int64_t P, int l) {
  sm__train *t = m->priv;
  int N = sm__dist_size(), r = sm__dist_rank();
  sm_status *st = NULL;
  for (int k = 0; k < N && !st; k++)
    if (k != r && owner_of(m, P, k, l)) st = sm__dist_send_start(&pipe_none, 0, k);
  for (int k = 0; k < N && !st && owner_of(m, P, r, l); k++)
    if (k != r) st = sm__dist_recv_start(&pipe_none, 0, k);
  t->zbw[l] = sm__dist_pending();
  return st;
}

/* this rank's update, layer by layer, and then the step's last wait (the report, into sum) */
static sm_status *pipe_update(sm_seq *m, int64_t P, double *sum) {
  sm__train *t = m->priv;
  int N = sm__dist_size(), r = sm__dist_rank();
  const float *add = last_piece(m);
  sm_status *st = NULL;
  for (int l = 0; l < m->nlayers && !st; l++) {
    const sm__layer *L = &m->layers[l];
    if (!L->kernel || !owner_of(m, P, r, l)) continue;
    int64_t off = flat_off(m, l), nk = sm_tensor_num_elements(L->kernel), nb = sm_tensor_num_elements(L->bias), a, b;
    if ((st = sm__dist_wait_first("training", t->zstep, t->zbw[l]))) break;
    sum_pieces(m, P, t->gk[l], off, nk);
    sum_pieces(m, P, t->gb[l], off + nk, nb);
    share(P, r, off, nk + nb, &a, &b);
    sm__optimizer_step_range(m, a, b, add + (a - t->zlo));
    for (int k = 0; k < N && !st; k++)
      if (k != r) st = sm__dist_send_start(&pipe_none, 0, k);
  }
  if (st) return st;
  m->iterations++;
  if ((st = sm__dist_wait("training", sum))) return st;
  /* the other owners' "layer l updated", in the order they send them */
  for (int l = 0; l < m->nlayers && !st; l++) {
    if (!m->layers[l].kernel) continue;
    for (int k = 0; k < N && !st; k++)
      if (k != r && owner_of(m, P, k, l)) st = sm__dist_recv_start(&pipe_none, 0, k);
    t->zag[l] = sm__dist_pending();
  }
  if (!st) t->zag_live = 1;
  return st;
}

typedef struct {
  sm_seq *m;
  int64_t P, nb, b;
  int xmark; /* requests up to the last input-exchanging layer's dY (0: none) */
  sm_status *st;
} bucket_ctx;

static void bucket_start(bucket_ctx *c, int l) {
  const sm__layer *L = &c->m->layers[l];
  sm__train *t = c->m->priv;
  if (!L->kernel || c->st) return;
  if (t->zpipe) {
    c->st = pipe_past(c->m, c->P, l);
  } else if (!sm__dist_grads_of(c->m, 0)) { /* shared gradients: the owners read them in place */
    int64_t off = flat_off(c->m, l), nk = sm_tensor_num_elements(L->kernel);
    if (t->xchg[l]) {
      c->st = xl_grads(c->m, c->P, l, c->nb, c->b);
      c->xmark = sm__dist_pending();
    } else {
      c->st = exchange(c->m, t, c->P, t->gk[l], off, nk);
    }
    if (!c->st) c->st = exchange(c->m, t, c->P, t->gb[l], off + nk, sm_tensor_num_elements(L->bias));
  }
  sm__dist_poll();
}

static void layer_done(void *ctx, int l) { bucket_start(ctx, l); }

/* before layer l's forward: its inputs out (an input-exchanging layer), its weights of the last
 * step's exchange here */
static sm_status *layer_begin(void *ctx, int l) {
  bucket_ctx *c = ctx;
  sm__train *t = c->m->priv;
  if (t->xchg[l]) {
    sm_status *st = xl_inputs(c->m, c->P, l, l ? t->act[l - 1] : t->xbatch, c->nb, c->b);
    if (st) return st;
  }
  return t->zag_live ? sm__dist_wait_first("training", t->zstep, t->zag[l]) : NULL;
}

sm_status *sm__dist_sync(sm_seq *m) {
  sm__train *t = m->priv;
  if (!t->zag_live) return NULL;
  t->zag_live = 0;
  return sm__dist_wait("the weights' exchange after", NULL);
}

sm_status *sm__dist_fit_end(sm_seq *m) {
  sm__train *t = m->priv;
  sm_status *st = sm__dist_sync(m);
  int64_t P = flat_off(m, m->nlayers);
  for (int l = 0; l < m->nlayers && !st; l++) {
    sm__layer *L = &m->layers[l];
    if (!L->kernel) continue;
    int64_t off = flat_off(m, l), nk = sm_tensor_num_elements(L->kernel);
    for (int s = 0; s < SM_OPT_SLOTS && !st; s++) {
      if (L->kernel_slot[s]) st = exchange(m, NULL, P, sm_tensor_data(L->kernel_slot[s]), off, nk);
      if (!st && L->bias_slot[s])
        st = exchange(m, NULL, P, sm_tensor_data(L->bias_slot[s]), off + nk, sm_tensor_num_elements(L->bias));
    }
  }
  free(t->zrecv);
  t->zrecv = NULL;
  xl_reset(t);
  if (!st) st = sm__dist_wait("the optimizer state's exchange after", NULL);
  sm__dist_weights_unshare(m, !st);
  return st;
}

sm_status *sm__dist_step(sm_seq *m, int64_t nb, int64_t b, int64_t out_per, double *loss_sum, int64_t *correct) {
  sm__train *t = m->priv;
  test_fault(t, m->iterations + 1);
  t->zstep = m->iterations + 1;
  double v[SM_DIST_NMETRIC] = {0.0, 0.0, (double)nb}, sum[SM_DIST_NMETRIC];
  bucket_ctx bc = {m, flat_off(m, m->nlayers), nb, b, 0, NULL};
  if (nb > 0) {
    const float *out;
    t->layer_begin = layer_begin;
    t->layer_done_ctx = &bc;
    sm_status *st = sm__forward(m, t->xbatch, nb, 1, &out);
    t->layer_begin = NULL;
    if (st) return st;
    int64_t c = 0;
    float *g = t->grad[m->nlayers - 1];
    double l = sm__loss(m, out, nb, out_per, t->lbatch, t->ybatch, g, &c, &t->fused_last);
    float scale = (float)nb / (float)b;
    for (int64_t i = 0; i < nb * out_per; i++) g[i] *= scale;
    v[0] = l * (double)nb;
    v[1] = (double)c;
    t->layer_done = layer_done;
    st = sm__backward(m, t->xbatch, nb);
    t->layer_done = NULL;
    t->layer_done_ctx = NULL;
    if (st) return st;
  } else { /* a global batch smaller than the job: this rank adds nothing, in the same order */
    /* with shared gradients, the owners may still be reading this rank's of the last step (with
     * a forward pass, its first layer waits for their "update done" before any gradient is written) */
    if (t->zag_live && sm__dist_grads_of(m, 0)) bc.st = sm__dist_wait_first("training", t->zstep, sm__dist_pending());
    for (int l = 0; l < m->nlayers && !bc.st; l++)
      if (t->xchg[l]) bc.st = xl_inputs(m, bc.P, l, NULL, 0, b);
    for (int l = m->nlayers - 1; l >= 0 && !bc.st; l--)
      if (m->layers[l].kernel) {
        memset(t->gk[l], 0, (size_t)sm_tensor_num_elements(m->layers[l].kernel) * sizeof(float));
        memset(t->gb[l], 0, (size_t)m->layers[l].units * sizeof(float));
        bucket_start(&bc, l);
      }
  }
  /* the input-exchanging layers' gradients of this rank's rows, while the last pieces travel */
  if (!bc.st && bc.xmark) bc.st = sm__dist_wait_first("training", t->zstep, bc.xmark);
  for (int l = 0; l < m->nlayers && !bc.st; l++)
    if (t->xchg[l]) bc.st = xl_finish(m, l, b);
  /* with the weights shared, "my backward pass is over (I read the weights no more)": no rank
   * updates its range before every rank's (whatever the gradients' exchange) */
  if (!bc.st && sm__dist_weights_shared(m) && !t->zpipe) bc.st = sm__dist_weights_announce(m);
  if (!bc.st) bc.st = sm__dist_report(v, m->iterations + 1);
  if (!bc.st && !t->zpipe) bc.st = sm__dist_wait("training", sum);
  t->zag_live = 0; /* the forward pass (or the empty shard's wait) waited for all of it */
  if (!bc.st && t->zpipe) bc.st = pipe_update(m, bc.P, sum);
  if (bc.st) return bc.st;
  *loss_sum = sum[0];
  *correct = (int64_t)sum[1];
  if (t->zpipe) {
    sm__dist_poll();
    return NULL;
  }
  for (int l = 0; l < m->nlayers; l++)
    if (m->layers[l].kernel) {
      int64_t off = flat_off(m, l), nk = sm_tensor_num_elements(m->layers[l].kernel);
      sum_pieces(m, bc.P, t->gk[l], off, nk);
      sum_pieces(m, bc.P, t->gb[l], off + nk, sm_tensor_num_elements(m->layers[l].bias));
    }
  sm__optimizer_step_part(m, t->zlo, t->zhi, last_piece(m));
  int shared = sm__dist_weights_shared(m); /* then the weights exchange is "updated" messages */
  sm_status *st = shared ? sm__dist_weights_announce(m) : NULL;
  for (int l = 0; l < m->nlayers && !st; l++) {
    sm__layer *L = &m->layers[l];
    if (!L->kernel) continue;
    int64_t off = flat_off(m, l), nk = sm_tensor_num_elements(L->kernel);
    if (!shared) {
      st = exchange(m, NULL, bc.P, sm_tensor_data(L->kernel), off, nk);
      if (!st) st = exchange(m, NULL, bc.P, sm_tensor_data(L->bias), off + nk, sm_tensor_num_elements(L->bias));
    }
    t->zag[l] = sm__dist_pending();
  }
  t->zag_live = 1;
  sm__dist_poll();
  return st;
}

/* dataset.h - what the dataset family's files share: the dataset object (`ds`), its iterator
 * (`dit`) and the node state (`kstate`) dataset.c defines, and the calls dataset_io.c and
 * dataset_shuffle.c make into it. Internal to src/ops/dataset*.c. */
#ifndef SM_OPS_DATASET_H
#define SM_OPS_DATASET_H
#include <stdatomic.h>
#include <stdint.h>

#include "base/variant.h"
#include "runtime/kernel.h"

enum {
  K_TENSOR, K_SLICE, K_RANGE, K_MAP, K_FILTER, K_BATCH, K_PADDED, K_TAKE, K_SKIP, K_REPEAT, K_ZIP, K_CONCAT,
  K_FLATMAP, K_SCAN, K_TAKEWHILE, K_UNBATCH, K_PASS, K_REDUCE, K_CARD, K_WINDOW, K_LIST, K_INTERLEAVE, K_UNIQUE,
  K_SHUFFLE,
  /* dataset_more.c, dataset_shuffle.c (random) */
  K_SHARD, K_CHOOSE, K_ASSERTCARD, K_IGNORE, K_CACHE, K_RANDOM, K_MAPBATCH,
  /* dataset_group.c */
  K_GROUPWIN, K_GROUPRED,
  /* dataset_rebatch.c */
  K_SPBATCH, K_REBATCH, K_REBATCH1
};

typedef struct kstate {
  atomic_int refs;
  int kind;
  const char *op;
  sm_plan *f;        /* NULL for stages without a function */
  int nstate;        /* Tstate (reduce, scan) */
  int ncap;          /* Targuments */
  int preserve_card; /* map, scan */
  int range_dtype;   /* RangeDataset's output_types[0] */
  int trailing;      /* inputs after the captured ones (parallel map's num_parallel_calls) */
} kstate;

typedef struct ds {
  sm_variant v; /* first */
  int kind;
  int ncomp; /* components of an element */
  struct ds **in;
  int nin;
  sm_tensor **t; /* components (tensor, slice), captured args, scan's initial state, padding */
  int nt;
  int64_t a, b, c; /* range start/stop/step; count; batch size */
  int drop;        /* drop_remainder */
  kstate *k;       /* function stages: a reference */
  void *ext;       /* shuffle: its seed generator (dataset_shuffle.c), freed by ext_free */
  void (*ext_free)(void *);
} ds;

typedef struct dit {
  const ds *d; /* held by whoever holds the root */
  struct dit **in;
  int nin;
  int64_t i;       /* elements given (slice, take, skip, range), passes done (repeat), input index (concat) */
  int64_t cur;     /* range: the next value */
  int done;        /* no more elements */
  int got;         /* repeat: this pass gave an element */
  sm_tensor **st;  /* scan: the state */
  ds *inner;       /* flat_map: the current inner dataset (a reference) */
  struct dit *iin; /* and its iterator */
  sm_tensor **ub;  /* unbatch: the current batch */
  int64_t ubn, ubi;
  sm_tensor **wb;  /* window: buffered elements (ncomp each) from position wbase; unique: those seen */
  int64_t wn, wcap, wbase, wpos, wstart;
  int in_end;
  struct dit **cyc; /* interleave: the cycle's iterators and their datasets */
  ds **cycds;
  int64_t ci, bi, nopen;
  uint64_t *uh; /* unique: hash slots (index + 1, 0 empty) */
  int64_t uhcap;
  void *ext; /* shuffle: its buffer and generator (dataset_shuffle.c), freed by ext_free */
  void (*ext_free)(struct dit *);
  sm_mem_account acct;
} dit;

/* Output 0 of c = a dataset of the rows of t (as TensorSliceDataset over it); takes over the
 * caller's reference to t. */
sm_status *sm__dataset_output_slices(sm_kctx *c, sm_tensor *t);

/* dataset.c: input i as a dataset; a scalar int input; iterators (new, next element into out -
 * d->ncomp new tensors - or *end = 1, free); free and clear n tensors. */
sm_status *sm__ds_input(sm_kctx *c, int i, const ds **out);
/* A new dataset of kind with nin inputs and nt tensors (NULLs; ncomp 0) at one reference; the
 * dataset in a variant scalar t (NULL if it is not one); d as output 0 (takes over d's reference). */
sm_status *sm__ds_new(int kind, int nin, int nt, ds **out);
const ds *sm__ds_of(const sm_tensor *t);
sm_status *sm__ds_set_output(sm_kctx *c, ds *d);
sm_status *sm__ds_scalar_i64(sm_kctx *c, int i, const char *what, int64_t *v);
sm_status *sm__ds_it_new(const ds *d, dit **out);
sm_status *sm__ds_it_next(dit *it, sm_kctx *c, sm_tensor **out, int *end);
void sm__ds_it_free(dit *it);
void sm__ds_free_elem(sm_tensor **e, int n);
/* flat_map's step (and group_by_window's): with an inner iterator (it->iin), its next element into out
 * (*got = 1, or an error); when that ends, frees it and it->inner and leaves *got = 0, *end = 0. */
sm_status *sm__ds_inner_next(dit *it, sm_kctx *c, sm_tensor **out, int *end, int *got);

/* dataset_shuffle.c: ShuffleDataset(V2/V3)'s inputs after the dataset into d (buffer size,
 * seeds, its seed generator), and the next element of a shuffle iterator. */
sm_status *sm__ds_shuffle_setup(sm_kctx *c, ds *d);
sm_status *sm__ds_shuffle_next(dit *it, sm_kctx *c, sm_tensor **out, int *end);
/* RandomDataset(V2): its seeds and generator into d; the next element of its iterator. */
sm_status *sm__ds_random_setup(sm_kctx *c, ds *d);
sm_status *sm__ds_random_next(dit *it, sm_kctx *c, sm_tensor **out, int *end);

/* dataset_more.c: the inputs after the dataset(s) of Shard, DirectedInterleave, AssertCardinality,
 * IgnoreErrors and Cache(V2) into d; the next element of their iterators; their cardinality
 * (n: the first input's). */
sm_status *sm__ds_more_setup(sm_kctx *c, ds *d);
sm_status *sm__ds_more_next(dit *it, sm_kctx *c, sm_tensor **out, int *end);
int64_t sm__ds_more_card(const ds *d, int64_t n);

/* dataset_group.c: the next element of GroupByWindowDataset's and GroupByReducerDataset's iterators. */
sm_status *sm__ds_group_next(dit *it, sm_kctx *c, sm_tensor **out, int *end);

/* dataset_rebatch.c: the next element of DenseToSparseBatch's and Rebatch(V2)'s iterators; their
 * cardinality (n: the input's). */
sm_status *sm__ds_rebatch_next(dit *it, sm_kctx *c, sm_tensor **out, int *end);
int64_t sm__ds_rebatch_card(const ds *d, int64_t n);

#endif

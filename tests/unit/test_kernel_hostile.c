/* test_kernel_hostile.c - the kernel fuzzer's generator (fuzz/fuzz_kernels.h), seeded, over every
 * registered op: for each op, SM_HOSTILE_CASES (default 16) cases of hostile attrs, dtypes, shapes
 * and values, each a one-node graph run under a memory budget and a deadline. A run may fail, with
 * a status naming what is wrong; the test fails by crashing (the ASan/UBSan tree is where it
 * matters: an out-of-bounds access, UB or a leak is reported there). The regression table first:
 * (op, seed) pairs that crashed a kernel once, fixed since. Environment: SM_HOSTILE_CASES=n,
 * SM_HOSTILE_OP=name (only that op), SM_HOSTILE_SEED=k (a different seed stream), SM_HOSTILE_VERBOSE=1
 * (print each case and its inputs before running it), SM_HOSTILE_ONE=seed (with SM_HOSTILE_OP: that
 * one case). An ASan crash prints its case from the death callback; for a UBSan report rerun the op
 * with SM_HOSTILE_VERBOSE=1: the last case printed is the one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fuzz/fuzz_kernels.h"
#include "test.h"

static char current[160];

/* (op, seed) of cases that once crashed, kept as regressions */
static const struct {
  const char *op;
  uint64_t seed;
} regressions[] = {
    {"GatherV2", 0x5f9e950f7d5ddd1aull}, /* axis INT64_MIN: UB negating it for the message */
    /* [2^40,1,0] vs [2^31,0]: the broadcast multiplied 2^31 * 2^40 (UB) before the zero dim */
    {"NextAfter", 0x8ad3b37cfccffdc4ull},
    {NULL, 0},
};

/* Hand regressions: op fed one tensor of dtype and shape (zeros), its other attrs as the
 * builder's defaults; the run must come back (any status) - these once looped or crashed. */
static const struct {
  const char *op;
  int dtype, rank;
  int64_t dims[4];
  int nin, nan; /* inputs, every one fed x; nan: x (float) filled with NaN */
} hand[] = {
    /* a zero-row matrix under a batch dim of 2^40: the loops walked the batch (hours) */
    {"MatrixDiagPart", SM_FLOAT, 3, {(int64_t)1 << 40, 0, 5}, 1, 0},
    {"MatrixDiag", SM_FLOAT, 3, {(int64_t)1 << 40, 0, 0}, 1, 0},
    {"Qr", SM_COMPLEX64, 3, {(int64_t)1 << 40, 3, 0}, 1, 0},
    {"MatrixInverse", SM_DOUBLE, 3, {(int64_t)1 << 40, 0, 0}, 1, 0},
    {"Lu", SM_FLOAT, 3, {(int64_t)1 << 40, 0, 0}, 1, 0},
    /* min = max = NaN: the nudged zero point converted NaN to uint16 (UB; fuzz_kernels found it) */
    {"FakeQuantWithMinMaxVars", SM_FLOAT, 0, {0}, 3, 1},
    {"FakeQuantWithMinMaxVarsPerChannel", SM_FLOAT, 1, {1}, 3, 1},
};

static void run_hand(size_t i) {
  snprintf(current, sizeof current, "hand case %zu (%s)", i, hand[i].op);
  sm_graph *g = NULL;
  sm_tensor *x = NULL, *out = NULL;
  CHECK_OK(sm_graph_new(&g));
  CHECK_OK(sm_graph_placeholder(g, "x", hand[i].dtype, -1, NULL, NULL));
  sm_op *op = sm_op_begin(g, hand[i].op, "op");
  for (int k = 0; k < hand[i].nin; k++) sm_op_input(op, "x");
  CHECK_OK(sm_op_finish(op, NULL));
  CHECK_OK(sm_tensor_new(hand[i].dtype, hand[i].rank, hand[i].dims, &x));
  if (hand[i].nan)
    for (int64_t k = 0; k < sm_tensor_num_elements(x); k++) ((float *)sm_tensor_data(x))[k] = NAN;
  Tensorflow__MetaGraphDef mg = TENSORFLOW__META_GRAPH_DEF__INIT;
  mg.graph_def = (Tensorflow__GraphDef *)sm_graph_def(g);
  sm_session *s = NULL;
  CHECK_OK(sm__session_new(&mg, NULL, 1, &s));
  const char *feed = "x", *fetch = "op:0";
  sm_status_free(sm__session_run(s, &feed, &x, 1, &fetch, 1, NULL, 0, &out));
  sm_tensor_free(out);
  sm_tensor_free(x);
  sm__session_free(s);
  sm_graph_free(g);
}

static void print_current(void) { fprintf(stderr, "test_kernel_hostile: the case that failed: %s\n", current); }
void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static uint64_t op_seed(const char *op, uint64_t base, uint64_t k) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = op; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  return h ^ (base * 0x9E3779B97F4A7C15ull) ^ (k * 0xD1B54A32D192ED03ull);
}

static int counts[4];
static void run_one(const char *op, uint64_t seed, int verbose) {
  snprintf(current, sizeof current, "op %s seed 0x%016llx", op, (unsigned long long)seed);
  if (verbose) fprintf(stderr, "%s\n", current), fflush(stderr);
  hk_src s = {.state = seed};
  counts[hk_run_case(&s, op, NULL)]++;
}

int main(void) {
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(print_current);
  const char *e = getenv("SM_HOSTILE_CASES");
  int ncases = e ? atoi(e) : 16;
  e = getenv("SM_HOSTILE_SEED");
  uint64_t base = e ? strtoull(e, NULL, 0) : 0;
  const char *only = getenv("SM_HOSTILE_OP");
  int verbose = getenv("SM_HOSTILE_VERBOSE") != NULL;
  hk_verbose = verbose;
  e = getenv("SM_HOSTILE_ONE"); /* one seed (with SM_HOSTILE_OP) */

  hk_init();
  if (getenv("SM_HOSTILE_LIST")) { /* the ops, one a line (for a driver script running each alone) */
    for (int i = 0; i < hk_nops; i++) printf("%s\n", hk_ops[i]);
    free(hk_ops);
    return 0;
  }
  CHECK(hk_nops > 300);
  for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) run_hand(i);
  for (size_t i = 0; regressions[i].op; i++) run_one(regressions[i].op, regressions[i].seed, verbose);
  if (e && only) {
    run_one(only, strtoull(e, NULL, 0), 1);
  } else {
    for (int i = 0; i < hk_nops; i++) {
      if (only && strcmp(only, hk_ops[i])) continue;
      for (int k = 0; k < ncases; k++) run_one(hk_ops[i], op_seed(hk_ops[i], base, (uint64_t)k), verbose);
    }
  }
  printf("test_kernel_hostile: %d ops, %d cases each: %d ran OK, %d failed with a status, %d refused by the "
         "builder\n",
         hk_nops, ncases, counts[HK_RAN_OK], counts[HK_RAN_ERROR], counts[HK_REFUSED]);
  free(hk_ops);
  TEST_MAIN_END();
}

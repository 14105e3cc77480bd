/* test_registry.c - the kernel registry: (op, backend) keys, the generated family list, counts,
 * duplicates, tables added at run time, and an index build that runs out of memory (retried by
 * the next lookup, not remembered). */
#include <string.h>

#include "base/alloc.h"
#include "runtime/kernel.h"
#include "test.h"

extern const sm_kernel *const sm__kernel_families[];

static sm_status *noop(const void *state, sm_kctx *ctx) {
  (void)state;
  (void)ctx;
  return NULL;
}

static const sm_kernel test_cuda[] = {{"TestOnlyOp", NULL, noop, NULL, 0}, {"Conv2D", NULL, noop, NULL, 0}, {0}};
static const sm_kernel test_dup[] = {{"TestOtherOp", NULL, noop, NULL, 0}, {"MatMul", NULL, noop, NULL, 0}, {0}};

/* Must run before anything else uses the registry: the index is built on first use. */
static void test_build_out_of_memory(void) {
  /* the build's 1st, 2nd, 3rd allocation (header, index, names) fails: each lookup says so */
  for (long k = 1; k <= 3; k++) {
    const sm_kernel *got = (const sm_kernel *)&got;
    sm__alloc_fail_after(k, 0);
    sm_status *st = sm__kernel_lookup("MatMul", SM_BACKEND_CPU, &got);
    CHECK_EQ_INT(sm__alloc_failures(), 1);
    sm__alloc_fail_after(0, 0);
    CHECK_EQ_INT(sm_status_code(st), SM_RESOURCE_EXHAUSTED);
    CHECK(st && strstr(sm_status_message(st), "kernel registry: out of memory"));
    CHECK(got == NULL);
    sm_status_free(st);
  }
  /* the quiet forms: "none" and an empty list while the build fails */
  sm__alloc_fail_after(1, 1);
  int n = -1;
  CHECK(sm__kernel_find("MatMul", SM_BACKEND_CPU) == NULL);
  const char *const *names = sm__kernel_ops(&n);
  CHECK(n == 0 && names && names[0] == NULL);
  sm__alloc_fail_after(0, 0);
  /* memory back: the next lookup builds the index and finds the kernel */
  const sm_kernel *got = NULL;
  CHECK_OK(sm__kernel_lookup("MatMul", SM_BACKEND_CPU, &got));
  CHECK(got != NULL && !strcmp(got->op, "MatMul"));
  /* built: lookups allocate nothing more, so injection no longer reaches them */
  sm__alloc_fail_after(1, 1);
  CHECK(sm__kernel_find("Conv2D", SM_BACKEND_CPU) != NULL);
  CHECK_EQ_INT(sm__alloc_failures(), 0);
  sm__alloc_fail_after(0, 0);
}

int main(void) {
  test_build_out_of_memory();
  /* every entry of every generated family is found under its own name, for the CPU */
  int entries = 0, families = 0;
  for (int f = 0; sm__kernel_families[f]; f++, families++)
    for (const sm_kernel *k = sm__kernel_families[f]; k->op; k++, entries++) {
      const sm_kernel *got = NULL;
      CHECK_OK(sm__kernel_lookup(k->op, SM_BACKEND_CPU, &got));
      if (got != k) {
        fprintf(stderr, "op '%s' does not find its own entry\n", k->op);
        sm_test_failures++;
      }
      CHECK(sm__kernel_find(k->op, SM_BACKEND_CUDA) == NULL);
    }
  CHECK(families >= 9); /* array, einsum, io, lookup, math, nn, parsing, state, string */
  CHECK(entries > 100);
  fprintf(stderr, "%d families, %d CPU kernels\n", families, entries);
  /* names: sorted, distinct, one per entry (no op registered twice for the CPU) */
  int n = 0;
  const char *const *names = sm__kernel_ops(&n);
  CHECK_EQ_INT(n, entries);
  for (int i = 1; i < n; i++)
    if (strcmp(names[i - 1], names[i]) >= 0) {
      fprintf(stderr, "names not sorted and distinct at %d: '%s', '%s'\n", i, names[i - 1], names[i]);
      sm_test_failures++;
    }
  CHECK(names[n] == NULL);
  CHECK(sm__kernel_find("NoSuchOpAnywhere", SM_BACKEND_CPU) == NULL);

  /* a second backend's table: the same op name, a different kernel */
  const sm_kernel *cpu_conv = sm__kernel_find("Conv2D", SM_BACKEND_CPU);
  CHECK(cpu_conv != NULL);
  CHECK_OK(sm__kernels_add(test_cuda, SM_BACKEND_CUDA));
  CHECK(sm__kernel_find("Conv2D", SM_BACKEND_CUDA) == &test_cuda[1]);
  CHECK(sm__kernel_find("Conv2D", SM_BACKEND_CPU) == cpu_conv);
  CHECK(sm__kernel_find("TestOnlyOp", SM_BACKEND_CUDA) == &test_cuda[0]);
  CHECK(sm__kernel_find("TestOnlyOp", SM_BACKEND_CPU) == NULL);
  const char *const *names2 = sm__kernel_ops(&n);
  CHECK_EQ_INT(n, entries + 1); /* TestOnlyOp is new; Conv2D was there */
  int seen = 0;
  for (int i = 0; i < n; i++) seen += !strcmp(names2[i], "TestOnlyOp");
  CHECK_EQ_INT(seen, 1);

  /* an (op, backend) registered twice is refused whole: nothing of the table is registered */
  CHECK_ERR(sm__kernels_add(test_dup, SM_BACKEND_CPU), "'MatMul' is registered twice for backend CPU");
  CHECK(sm__kernel_find("TestOtherOp", SM_BACKEND_CPU) == NULL);
  CHECK(sm__kernel_find("MatMul", SM_BACKEND_CPU) != &test_dup[1]);
  CHECK_ERR(sm__kernels_add(test_cuda, SM_BACKEND_CUDA), "registered twice for backend CUDA");
  CHECK_ERR(sm__kernels_add(NULL, SM_BACKEND_CPU), "no table");
  CHECK_EQ_STR(sm__backend_name(SM_BACKEND_CPU), "CPU");
  CHECK_EQ_STR(sm__backend_name(SM_BACKEND_CUDA), "CUDA");

  TEST_MAIN_END();
}

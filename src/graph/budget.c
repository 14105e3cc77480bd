/* budget.c - the load budget (graph.h's sm_load_budget): what compiling a graph and decoding its
 * constants may take, counted across every graph and plan of one session, and the thread-local
 * "current budget" that compilation and kernels' prepare calls charge.
 *
 * Counters are atomic (plans are built by several threads at once, when signatures compile at
 * their first run); a charge that would pass a limit is refused whole, so nothing is taken. */
#include <stdio.h>

#include "graph/graph_internal.h"

static _Thread_local sm_load_budget *tls_budget;

sm_load_budget *sm__load_budget_swap(sm_load_budget *b) {
  sm_load_budget *old = tls_budget;
  tls_budget = b;
  return old;
}

sm_load_budget *sm__load_budget_current(void) { return tls_budget; }

/* Adds d to *v unless the sum passes max (max 0: no limit); 1 when added. */
static int take1(int64_t *v, int64_t d, int64_t max, int64_t *seen) {
  int64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);
  for (;;) {
    *seen = cur;
    if (max > 0 && (d > max || cur > max - d)) return 0;
    if (__atomic_compare_exchange_n(v, &cur, cur + d, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 1;
  }
}

sm_status *sm__load_budget_take(sm_load_budget *b, int64_t nodes, int64_t bytes, const char *what) {
  if (!b) return NULL;
  int64_t seen;
  if (nodes && !take1(&b->nodes, nodes, b->max_nodes, &seen))
    return sm_status_prefix(
        sm_status_new(SM_RESOURCE_EXHAUSTED,
                      "the graph would have more than %lld nodes after inlining functions, the load budget "
                      "(max_graph_nodes %lld; raise it in sm_load_options or with --max_graph_nodes)",
                      (long long)b->max_nodes, (long long)b->max_nodes),
        "%.200s", what ? what : "");
  if (bytes && !take1(&b->bytes, bytes, b->max_bytes, &seen)) {
    if (nodes) __atomic_sub_fetch(&b->nodes, nodes, __ATOMIC_RELAXED);
    return sm_status_prefix(sm_status_new(SM_RESOURCE_EXHAUSTED,
                                          "%lld bytes more would pass the load budget (max_load_bytes %lld; %lld bytes "
                                          "in use; raise it in sm_load_options or with --max_load_bytes)",
                                          (long long)bytes, (long long)b->max_bytes, (long long)seen),
                            "%.200s", what ? what : "");
  }
  return NULL;
}

sm_status *sm__load_budget_room(const sm_load_budget *b, int64_t bytes, const char *what) {
  if (!b || b->max_bytes <= 0) return NULL;
  int64_t used = __atomic_load_n(&b->bytes, __ATOMIC_RELAXED);
  if (bytes <= b->max_bytes && used <= b->max_bytes - bytes) return NULL;
  return sm_status_new(SM_RESOURCE_EXHAUSTED,
                       "%.200s: %lld bytes would pass the load budget (max_load_bytes %lld; %lld bytes in use; raise "
                       "it in sm_load_options or with --max_load_bytes)",
                       what, (long long)bytes, (long long)b->max_bytes, (long long)used);
}

void sm__load_budget_give(sm_load_budget *b, int64_t nodes, int64_t bytes) {
  if (!b) return;
  if (nodes) __atomic_sub_fetch(&b->nodes, nodes, __ATOMIC_RELAXED);
  if (bytes) __atomic_sub_fetch(&b->bytes, bytes, __ATOMIC_RELAXED);
}

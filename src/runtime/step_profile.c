/* step_profile.c - per-step timings of a plan's runs, for finding where a model's time goes
 * (bench/: "profile first"). Off unless the environment names a file when the plan is built:
 *
 *   SM_STEP_PROFILE=/tmp/prof.tsv build/bench/bench_run build/bench-nets/mobilenetv2 serve ...
 *
 * Each plan built while it is set (sub-plans too) gets a profile (plan.c); every run of the plan
 * adds each step's kernel time (the compute call alone) and the run's whole time (executor.c).
 * When the plan is freed its profile is appended to the file as tab-separated lines:
 *   # plan NAME steps N runs R run_min_us X run_mean_us X outside_min_us X outside_mean_us X
 *   step  op  node  calls  first_us  min_us  mean_us
 * where "outside" is a run's time not spent in kernels (the executor's own per-step work: slots,
 * references, checks), and the means leave out the first call (oneDNN's primitive creation, the
 * caches' first fill), reported on its own as first_us. A run that fails is left out of the
 * run figures. Runs of one plan may overlap: every figure is updated with atomics, nothing here
 * takes a lock on the run path. A file that cannot be opened is skipped in silence (a diagnostic
 * switch must not fail a model's close). */
#include "runtime/step_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/plan.h"

typedef struct step_fig {
  int64_t calls, first, min, sum; /* ns; sum leaves out the first call */
} step_fig;

struct sm_step_prof {
  char *path;
  int nsteps;
  step_fig *steps;
  int64_t runs, run_min, run_sum, out_min, out_sum; /* ns, over runs that succeeded */
};

sm_step_prof *sm__step_prof_new(int nsteps) {
  const char *path = getenv("SM_STEP_PROFILE");
  if (!path || !*path || nsteps < 0) return NULL;
  sm_step_prof *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->path = strdup(path);
  p->steps = calloc((size_t)nsteps + 1, sizeof *p->steps);
  if (!p->path || !p->steps) {
    free(p->path);
    free(p->steps);
    free(p);
    return NULL;
  }
  p->nsteps = nsteps;
  return p;
}

int64_t sm__step_prof_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void atomic_min(int64_t *at, int64_t v) {
  int64_t cur = __atomic_load_n(at, __ATOMIC_RELAXED);
  while ((cur == 0 || v < cur) && !__atomic_compare_exchange_n(at, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

void sm__step_prof_step(sm_step_prof *p, int step, int64_t ns) {
  if (!p || step < 0 || step >= p->nsteps) return;
  step_fig *f = &p->steps[step];
  if (ns < 1) ns = 1; /* 0 means "none yet" to atomic_min */
  if (__atomic_fetch_add(&f->calls, 1, __ATOMIC_RELAXED) == 0) {
    __atomic_store_n(&f->first, ns, __ATOMIC_RELAXED);
    return;
  }
  atomic_min(&f->min, ns);
  __atomic_fetch_add(&f->sum, ns, __ATOMIC_RELAXED);
}

void sm__step_prof_run(sm_step_prof *p, int64_t total_ns, int64_t kernel_ns) {
  if (!p) return;
  int64_t out = total_ns - kernel_ns;
  if (total_ns < 1) total_ns = 1;
  if (out < 1) out = 1;
  __atomic_fetch_add(&p->runs, 1, __ATOMIC_RELAXED);
  atomic_min(&p->run_min, total_ns);
  __atomic_fetch_add(&p->run_sum, total_ns, __ATOMIC_RELAXED);
  atomic_min(&p->out_min, out);
  __atomic_fetch_add(&p->out_sum, out, __ATOMIC_RELAXED);
}

static double us(int64_t ns) { return (double)ns / 1000.0; }

void sm__step_prof_free(sm_step_prof *p, const sm_plan *plan) {
  if (!p) return;
  FILE *f = plan && p->runs ? fopen(p->path, "a") : NULL;
  if (f) {
    int64_t r = p->runs;
    fprintf(f, "# plan %s steps %d runs %lld run_min_us %.2f run_mean_us %.2f outside_min_us %.2f outside_mean_us %.2f\n",
            plan->fname ? plan->fname : "(graph)", p->nsteps, (long long)r, us(p->run_min), us(p->run_sum) / (double)r,
            us(p->out_min), us(p->out_sum) / (double)r);
    for (int i = 0; i < p->nsteps && i < plan->nsteps; i++) {
      const step_fig *s = &p->steps[i];
      if (!s->calls) continue;
      const sm_node *nd = plan->steps[i].node;
      fprintf(f, "%d\t%s\t%s\t%lld\t%.2f\t%.2f\t%.2f\n", i, sm__node_op(nd), sm__node_name(nd), (long long)s->calls,
              us(s->first), us(s->calls > 1 ? s->min : s->first),
              s->calls > 1 ? us(s->sum) / (double)(s->calls - 1) : us(s->first));
    }
    fclose(f);
  }
  free(p->path);
  free(p->steps);
  free(p);
}

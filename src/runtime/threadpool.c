/* threadpool.c - a fixed set of worker threads that help sm__parallel_for loops.
 *
 * A parallel_for splits [0, n) into at most `nthreads` chunks claimed through an atomic counter.
 * The caller posts up to (chunks - 1) "help" tickets on the pool's queue and then claims chunks
 * itself, so a loop always finishes even when every worker is busy (or itself inside a nested
 * parallel_for): nobody ever waits for a chunk that has not been claimed by a running thread.
 * Before returning, the caller withdraws its unused tickets and waits until no worker still holds
 * its loop, since the loop record lives on the caller's stack.
 *
 * The workers start at the first loop that can use them, not with the pool: a session gets a pool
 * sized to the machine, and a model whose loops are all small (or a CLI run that loads, runs once
 * and exits) should not pay for creating and joining a thread per core.
 *
 * A worker keeps off the caller's vCPU (Linux): after an idle spell (tens of ms: a server between
 * requests, a bench's side between bursts) the scheduler often wakes the worker onto the vCPU the
 * caller runs on while the other vCPU sits idle, and moves one of them away only after some ms, so
 * a whole batch-1 call ran at one thread's speed (ResNet50 b1 after 80 ms idle: half the calls
 * ~10 ms instead of ~5.6; bench/RESULTS.md, session 15, h1). So the caller notes its CPU when it
 * posts a loop's tickets, and a worker that takes a ticket on that same CPU narrows its own
 * affinity to the CPUs it may use except that one, which moves it at once; nothing is done when
 * that leaves no CPU (a thread pinned by its program to one CPU stays there). SM_POOL_AVOID=0 (read
 * with SM_POOL_SPIN_US) turns it off.
 *
 * A worker runs in TF's floating-point mode (denormals flushed; base/fpmode.h) for its life, as
 * TF's own pool threads do; the caller's thread has it for the run (executor.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getcpu, sched_setaffinity, CPU_SET */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/fpmode.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"

/* ---- stop sources (executor.h) --------------------------------------------------------------- */
static _Thread_local sm_stop_src *tls_stop;
void (*sm__stop_probe)(void);

sm_stop_src *sm__stop_src_swap(sm_stop_src *s) {
  sm_stop_src *old = tls_stop;
  tls_stop = s;
  return old;
}

sm_stop_src *sm__stop_src_current(void) { return tls_stop; }

int sm__stop_src_check(sm_stop_src *s) {
  if (!s) return 0;
  if (__atomic_load_n(&s->stopped, __ATOMIC_RELAXED)) return 1;
  if (sm__stop_probe) sm__stop_probe();
  const sm_run_options *ro = s->ro;
  int why = ro->cancel && __atomic_load_n(ro->cancel, __ATOMIC_RELAXED)        ? SM_CANCELLED
            : ro->deadline_us > 0 && sm_monotonic_us() >= ro->deadline_us ? SM_DEADLINE_EXCEEDED
                                                                           : 0;
  if (!why) return 0;
  int zero = 0;
  __atomic_compare_exchange_n(&s->stopped, &zero, why, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return 1;
}

/* The loop's stop source, when its run has something to stop on. */
static sm_stop_src *loop_stop(void) {
  sm_stop_src *s = tls_stop;
  return s && s->ro && (s->ro->cancel || s->ro->deadline_us > 0) ? s : NULL;
}

typedef struct loop loop;

typedef struct ticket {
  loop *l;
  struct ticket *next;
} ticket;

struct loop {
  void (*fn)(void *ctx, int64_t begin, int64_t end);
  void *ctx;
  int64_t n, chunk;
  int nchunks;
  sm_stop_src *stop; /* NULL: none */
  atomic_int next;
  atomic_int done;
  atomic_int holders; /* workers that took a ticket of this loop and have not let go (++ under the
                       * pool mutex; -- outside it, the worker's last touch of the loop) */
};

struct sm_threadpool {
  pthread_mutex_t mu;
  pthread_cond_t work;  /* a ticket was queued, or shutdown */
  pthread_cond_t idle;  /* a worker let go of a loop */
  ticket *head, *tail;
  atomic_int queued; /* tickets on the queue (changed under mu; read without it by spinners) */
  int shutdown;
  int nthreads; /* including the caller's */
  int nworkers;
  atomic_int started; /* 1 once the workers were created (set under mu) */
  atomic_int caller_cpu; /* the CPU the last loop's caller posted its tickets from; -1 unknown */
  pthread_t *workers;
};

/* How long (microseconds) a worker that ran out of tickets, and a caller whose loop has a chunk
 * still running on a worker, poll before sleeping on a condition variable (ONNX Runtime's pool
 * spins the same way). At batch 1 a parallel loop lasts tens of microseconds (ResNet50's
 * convolutions: 20-150 us, ~50 loops a call) and waking a sleeping thread (futex) costs ~30 us on
 * the 2-vCPU VM, mean, at load 4, more when its vCPU had halted: without the poll two threads ran
 * ResNet50 b1 no faster than one (bench_run median 8.4-8.5 ms; 4.95-5.05 with 100 us, 5.1-5.2 with
 * 30 us, where a second vCPU was free; bench/RESULTS.md h10). Where no vCPU is free, polling costs
 * CPU others could use. SM_POOL_SPIN_US=N (0: sleep at once; read once, at the first pool) for A/B. */
#define SPIN_US_DEFAULT 100
/* A worker with no ticket polls for the next loop no longer than IDLE_SPIN_US_DEFAULT (at most
 * spin_us): between two loops of a batch-1 call the caller runs a few microseconds of serial steps
 * (ResNet50 b1: 53 convolutions back to back, ~1 us between them once the BatchNorm folds hit their
 * cache; its longest serial step, the first MaxPool, ~11 us), and polling longer only spends the
 * process's CPU share, which the scheduler then takes back from its threads under load: ResNet50
 * b1 at load 3.3-6.4, bench/ab_bin.py --paired, 100 -> 30 us: burst-median 0.857 of the old time
 * (bench/RESULTS.md, session 14, h2). But on a quiet machine 30 us cost EfficientNetB0 b1 12%
 * (bench_run 2 threads, 02:20 UTC: 1.31-1.37 ms at 30 vs 1.19 at 100; ResNet50 b1 3.53 vs 3.60,
 * MobileNetV2 b1 equal), so the default stays 100 until a policy wins both ways. The caller,
 * waiting for a chunk that is running, polls spin_us as before. SM_POOL_IDLE_SPIN_US=N overrides. */
#define IDLE_SPIN_US_DEFAULT 100
static int spin_us = -1, idle_spin_us = -1;
/* The poll yields the vCPU every 64 pauses (~3 us): on a shared VM the caller and its worker often
 * land on one vCPU (the other busy with someone else's work), and a poll that only pauses then
 * holds the vCPU the thread it waits for needs, until its time slice or spin_us runs out.
 * MobileNetV2 b1, 2 threads, load 4-5: median 1.5-2.1 ms a call without, 0.85-0.93 with (1 thread:
 * 0.77-1.09; bench/RESULTS.md session 14, h3). sched_yield returns at once when nothing else
 * waits for the vCPU. SM_POOL_YIELD=0 (read with SM_POOL_SPIN_US) polls without yielding. */
static int spin_yield = 1;
static int avoid_caller = 1; /* SM_POOL_AVOID=0: workers may share the caller's CPU (above) */
static int spin_default = SPIN_US_DEFAULT; /* sm__threadpool_spin_default */
static pthread_once_t spin_once = PTHREAD_ONCE_INIT;
static void spin_init(void) {
  const char *e = getenv("SM_POOL_SPIN_US");
  long v = e && *e ? strtol(e, NULL, 10) : spin_default;
  spin_us = v < 0 ? 0 : v > 100000 ? 100000 : (int)v;
  e = getenv("SM_POOL_IDLE_SPIN_US");
  v = e && *e ? strtol(e, NULL, 10) : IDLE_SPIN_US_DEFAULT;
  idle_spin_us = v < 0 ? 0 : v > spin_us ? spin_us : (int)v;
  e = getenv("SM_POOL_YIELD");
  spin_yield = !(e && e[0] == '0' && !e[1]);
  e = getenv("SM_POOL_AVOID");
  avoid_caller = !(e && e[0] == '0' && !e[1]);
}

/* The calling thread's CPU, or -1. */
static int current_cpu(void) {
#ifdef __linux__
  return sched_getcpu();
#else
  return -1;
#endif
}

/* A worker's CPUs (its affinity when it started), for keeping off the caller's. */
typedef struct worker_cpus {
#ifdef __linux__
  cpu_set_t allowed;
#endif
  int n; /* CPUs in allowed; < 2: nothing to move to */
} worker_cpus;

static void worker_cpus_init(worker_cpus *w) {
  w->n = 0;
#ifdef __linux__
  CPU_ZERO(&w->allowed);
  if (avoid_caller && sched_getaffinity(0, sizeof w->allowed, &w->allowed) == 0) w->n = CPU_COUNT(&w->allowed);
#endif
}

/* The worker runs on the CPU its caller posted from: narrow its affinity to its other CPUs. */
static void keep_off_caller(sm_threadpool *p, const worker_cpus *w) {
#ifdef __linux__
  if (w->n < 2) return;
  int cc = atomic_load_explicit(&p->caller_cpu, memory_order_relaxed);
  if (cc < 0 || cc >= CPU_SETSIZE || !CPU_ISSET(cc, &w->allowed) || current_cpu() != cc) return;
  cpu_set_t m = w->allowed;
  CPU_CLR(cc, &m);
  (void)sched_setaffinity(0, sizeof m, &m); /* a failure leaves it where it was: still correct */
#else
  (void)p;
  (void)w;
#endif
}

void sm__threadpool_spin_default(int us) { spin_default = us; }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Polls until ready(arg) or us microseconds have passed; whether it became ready. */
static int spin_until(int (*ready)(void *), void *arg, int us) {
  if (us <= 0) return 0;
  int64_t end = -1;
  for (int i = 0;; i++) {
    if (ready(arg)) return 1;
    cpu_relax();
    if ((i & 63) == 63) {
      if (spin_yield) sched_yield();
      int64_t t = sm_monotonic_us();
      if (end < 0)
        end = t + us;
      else if (t >= end)
        return 0;
    }
  }
}

static int has_ticket(void *arg) {
  sm_threadpool *p = arg;
  return atomic_load_explicit(&p->queued, memory_order_relaxed) > 0;
}

static void run_chunks(loop *l) {
  for (;;) {
    int c = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
    if (c >= l->nchunks) return;
    int64_t b = (int64_t)c * l->chunk, e = b + l->chunk;
    if (e > l->n) e = l->n;
    if (!l->stop || !sm__stop_src_check(l->stop)) l->fn(l->ctx, b, e);
    atomic_fetch_add_explicit(&l->done, 1, memory_order_acq_rel);
  }
}

/* Every chunk ran and no worker still holds the loop (so the caller may drop it). */
static int loop_finished(void *arg) {
  loop *l = arg;
  return atomic_load_explicit(&l->holders, memory_order_acquire) == 0 &&
         atomic_load_explicit(&l->done, memory_order_acquire) >= l->nchunks;
}

static void *worker_main(void *arg) {
  sm_threadpool *p = arg;
  worker_cpus cpus;
  worker_cpus_init(&cpus);
  sm__fpmode_set_thread(); /* TF's denormal flush and rounding, as a run's caller has them */
  pthread_mutex_lock(&p->mu);
  for (;;) {
    if (!p->head && !p->shutdown && idle_spin_us > 0) { /* poll a while before sleeping */
      pthread_mutex_unlock(&p->mu);
      spin_until(has_ticket, p, idle_spin_us);
      pthread_mutex_lock(&p->mu);
    }
    while (!p->head && !p->shutdown) pthread_cond_wait(&p->work, &p->mu);
    if (!p->head && p->shutdown) break;
    ticket *t = p->head;
    p->head = t->next;
    if (!p->head) p->tail = NULL;
    atomic_fetch_sub_explicit(&p->queued, 1, memory_order_relaxed);
    loop *l = t->l;
    atomic_fetch_add_explicit(&l->holders, 1, memory_order_relaxed);
    pthread_mutex_unlock(&p->mu);
    keep_off_caller(p, &cpus);
    run_chunks(l);
    atomic_fetch_sub_explicit(&l->holders, 1, memory_order_release); /* l may be gone after this */
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->idle);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

sm_status *sm__threadpool_new(int nthreads, sm_threadpool **out) {
  *out = NULL;
  if (nthreads < 1) nthreads = 1;
  if (nthreads > 1024) nthreads = 1024;
  sm_threadpool *p = calloc(1, sizeof *p);
  if (!p) return sm_status_new(SM_NO_MEMORY, "thread pool: out of memory");
  p->nthreads = nthreads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work, NULL);
  pthread_cond_init(&p->idle, NULL);
  atomic_init(&p->started, 0);
  atomic_init(&p->queued, 0);
  atomic_init(&p->caller_cpu, -1);
  pthread_once(&spin_once, spin_init);
  if (nthreads > 1) {
    p->workers = calloc((size_t)nthreads - 1, sizeof *p->workers);
    if (!p->workers) {
      sm__threadpool_free(p);
      return sm_status_new(SM_NO_MEMORY, "thread pool: out of memory");
    }
  }
  *out = p;
  return NULL;
}

/* Creates the workers once. Fewer than asked (thread limits) still works: the caller runs what
 * is left. */
static void start_workers(sm_threadpool *p) {
  pthread_mutex_lock(&p->mu);
  if (!atomic_load_explicit(&p->started, memory_order_relaxed)) {
    for (int i = 0; i < p->nthreads - 1; i++) {
      if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) break;
      p->nworkers++;
    }
    atomic_store_explicit(&p->started, 1, memory_order_release);
  }
  pthread_mutex_unlock(&p->mu);
}

int sm__threadpool_nthreads(const sm_threadpool *p) { return p ? p->nthreads : 1; }

void sm__threadpool_free(sm_threadpool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->shutdown = 1;
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nworkers; i++) pthread_join(p->workers[i], NULL);
  free(p->workers);
  pthread_cond_destroy(&p->work);
  pthread_cond_destroy(&p->idle);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

void sm__parallel_for(sm_threadpool *pool, int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end),
                     void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t maxchunks = (n + grain - 1) / grain;
  int nthreads = 1;
  if (pool && pool->nthreads > 1 && maxchunks > 1) {
    if (!atomic_load_explicit(&pool->started, memory_order_acquire)) start_workers(pool);
    nthreads = pool->nworkers + 1;
  }
  sm_stop_src *stop = loop_stop();
  int64_t want = stop ? (int64_t)nthreads * 16 : nthreads; /* finer when a chunk may have to stop */
  if (!pool || nthreads <= 1 || maxchunks <= 1) {
    if (!stop || maxchunks <= 1) {
      fn(ctx, 0, n);
      return;
    }
    int64_t pieces = maxchunks < want ? maxchunks : want, chunk = (n + pieces - 1) / pieces;
    for (int64_t b = 0; b < n && !sm__stop_src_check(stop); b += chunk) fn(ctx, b, b + chunk < n ? b + chunk : n);
    return;
  }
  int nchunks = maxchunks < want ? (int)maxchunks : (int)want;
  loop l;
  l.stop = stop;
  l.fn = fn;
  l.ctx = ctx;
  l.n = n;
  l.chunk = (n + nchunks - 1) / nchunks;
  l.nchunks = (int)((n + l.chunk - 1) / l.chunk);
  atomic_init(&l.next, 0);
  atomic_init(&l.done, 0);
  atomic_init(&l.holders, 0);
  int nt = l.nchunks - 1;
  ticket stack_tickets[16];
  ticket *tk = nt <= 16 ? stack_tickets : malloc((size_t)nt * sizeof *tk);
  if (!tk) nt = 0; /* no memory for tickets: the caller runs every chunk */
  if (nt > 0) {
    if (avoid_caller) atomic_store_explicit(&pool->caller_cpu, current_cpu(), memory_order_relaxed);
    pthread_mutex_lock(&pool->mu);
    for (int i = 0; i < nt; i++) {
      tk[i].l = &l;
      tk[i].next = NULL;
      if (pool->tail)
        pool->tail->next = &tk[i];
      else
        pool->head = &tk[i];
      pool->tail = &tk[i];
    }
    atomic_fetch_add_explicit(&pool->queued, nt, memory_order_relaxed);
    if (nt == 1)
      pthread_cond_signal(&pool->work);
    else
      pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->mu);
  }
  run_chunks(&l);
  if (nt > 0) {
    pthread_mutex_lock(&pool->mu);
    /* withdraw tickets nobody took */
    ticket *prev = NULL;
    for (ticket *t = pool->head; t;) {
      ticket *nx = t->next;
      if (t->l == &l) {
        if (prev)
          prev->next = nx;
        else
          pool->head = nx;
        if (pool->tail == t) pool->tail = prev;
        atomic_fetch_sub_explicit(&pool->queued, 1, memory_order_relaxed);
      } else {
        prev = t;
      }
      t = nx;
    }
    if (spin_us > 0 && !loop_finished(&l)) { /* a worker still runs a chunk: poll a while, then sleep */
      pthread_mutex_unlock(&pool->mu);
      spin_until(loop_finished, &l, spin_us);
      pthread_mutex_lock(&pool->mu);
    }
    while (!loop_finished(&l)) pthread_cond_wait(&pool->idle, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
  }
  if (tk != stack_tickets) free(tk);
}

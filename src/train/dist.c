/* dist.c - the MPI layer of data-parallel training (sm_dist_*, sm__dist_*): finding out whether
 * this process runs under mpirun, opening libmpi lazily (dlopen, so that the library and the CLI
 * run where MPI is not installed), and the few collectives and point-to-point transfers the trainer
 * needs, each waited for by polling against a deadline so that a dead or hung rank ends the job with
 * a message naming it.
 *
 * Built against mpi.h (CMake's FindMPI) for its types; the functions are bound with dlsym. Open
 * MPI's predefined handles (MPI_COMM_WORLD, MPI_FLOAT, ...) are addresses of globals in
 * libmpi, so they are looked up too; MPICH's are integer constants and need nothing. Without MPI at
 * build time every entry point says so. Only the main thread calls MPI (MPI_THREAD_FUNNELED). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "base/alloc.h"
#include "base/lazylib.h"
#include "savedmodel/train.h"
#include "train/dist.h"

#ifdef SM_HAVE_MPI
#include <mpi.h>
#endif

/* At most this many requests in flight: a step of the sharded optimizer (fit_dist.c) has, per
 * weight tensor (two per layer, SM_SEQ_MAX_LAYERS layers), a send and a receive per other rank for
 * the gradients and as many for the weights; beyond it a step fails saying so. */
#define MAX_PENDING 4096

static struct {
  int rank, size, inited;
  double timeout_s, wait_s, wait_cpu_s;
  double spin_s; /* how long sm__dist_wait polls before it sleeps between polls (SM_MPI_SPIN_US) */
  int layer_poll;  /* sm__dist_progress polls (SM_MPI_LAYER_POLL, default 1) */
  int shared_used; /* sm__dist_shared_alloc has given a window (sm_dist_shared_weights) */
#ifdef SM_HAVE_MPI
  MPI_Request req[MAX_PENDING];
  int peer[MAX_PENDING]; /* the other rank of a send or receive (named when it times out), else -1 */
  int nreq;
  /* metrics: rank 0 receives one row per rank (its own copied), the others send theirs */
  double *rows, mine[SM_DIST_NMETRIC];
  MPI_Request *recv;
  int reporting;
  int64_t report_step;
  /* sm__dist_shared_alloc's window over the node's communicator (win_live: allocated) */
  MPI_Comm node;
  MPI_Win win;
  int win_live;
#endif
} g = {.rank = 0, .size = 1, .timeout_s = 60.0, .spin_s = 2e-3, .layer_poll = 1};

int sm__dist_rank(void) { return g.rank; }
int sm__dist_size(void) { return g.size; }
double sm_dist_wait_seconds(void) { return g.wait_s; }
int sm_dist_shared_weights(void) { return g.shared_used; }
void sm__dist_wait_totals(double *wall_s, double *cpu_s) {
  *wall_s = g.wait_s;
  *cpu_s = g.wait_cpu_s;
}

/* This process's CPU time (every thread: MPI's own threads too), seconds. */
double sm__cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The job's size from the launcher's environment (Open MPI, then PMI: MPICH, Slurm); 0 when this
 * process was not started by one. */
static int env_size(void) {
  const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = getenv(names[i]);
    if (v && *v) {
      long n = strtol(v, NULL, 10);
      return n > 0 && n < (1L << 24) ? (int)n : 0;
    }
  }
  return 0;
}

static sm_status *check_timeout(double timeout_s) {
  if (!(timeout_s > 0))
    return sm_status_new(SM_INVALID_ARGUMENT, "collective timeout must be > 0 seconds, got %g", timeout_s);
  g.timeout_s = timeout_s;
  return NULL;
}

#ifndef SM_HAVE_MPI
sm_status *sm_dist_init(double timeout_s, int *rank, int *size) {
  if (rank) *rank = 0;
  if (size) *size = 1;
  sm_status *st = check_timeout(timeout_s);
  if (st) return st;
  if (env_size() > 0)
    return sm_status_new(SM_UNIMPLEMENTED, "launched under mpirun, but this build of libsavedmodel has no MPI "
                         "support (mpi.h was not found at build time: install libopenmpi-dev and rebuild)");
  return NULL;
}
sm_status *sm_dist_barrier(void) { return NULL; }
void sm_dist_abort(const char *msg) {
  fprintf(stderr, "%s\n", msg);
  exit(1);
}
void sm_dist_finalize(void) {}
sm_status *sm__dist_bcast(void *buf, size_t bytes, const char *what) {
  (void)buf, (void)bytes, (void)what;
  return NULL;
}
sm_status *sm__dist_report(const double *v, int64_t step) {
  (void)v, (void)step;
  return NULL;
}
sm_status *sm__dist_send_start(const float *buf, int64_t n, int to) {
  (void)buf, (void)n, (void)to;
  return NULL;
}
sm_status *sm__dist_recv_start(float *buf, int64_t n, int from) {
  (void)buf, (void)n, (void)from;
  return NULL;
}
int sm__dist_pending(void) { return 0; }
sm_status *sm__dist_wait_first(const char *what, int64_t step, int k) {
  (void)what, (void)step, (void)k;
  return NULL;
}
void sm__dist_poll(void) {}
void sm__dist_progress(void) {}
sm_status *sm__dist_wait(const char *what, double *sum) {
  (void)what, (void)sum;
  return NULL;
}
sm_status *sm__dist_shared_alloc(size_t bytes, void **out) {
  (void)bytes;
  *out = NULL;
  return NULL;
}
void sm__dist_shared_free(void) {}
sm_status *sm_dist_gather(const double *mine, int n, double *all) {
  if (n < 0) return sm_status_new(SM_INVALID_ARGUMENT, "sm_dist_gather: n must be >= 0, got %d", n);
  if (n) memcpy(all, mine, (size_t)n * sizeof *all);
  return NULL;
}
#else

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#ifndef SM_MPI_SONAME
#define SM_MPI_SONAME "libmpi.so.40"
#endif

static struct {
  int (*init_thread)(int *, char ***, int, int *);
  int (*initialized)(int *);
  int (*finalize)(void);
  int (*abort)(MPI_Comm, int);
  int (*comm_rank)(MPI_Comm, int *);
  int (*comm_size)(MPI_Comm, int *);
  int (*ibcast)(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
  int (*ibarrier)(MPI_Comm, MPI_Request *);
  int (*igather)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
  int (*isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
  int (*irecv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
  int (*testall)(int, MPI_Request *, int *, MPI_Status *);
  int (*test)(MPI_Request *, int *, MPI_Status *);
  /* MPI-3 shared windows (optional: without them sm__dist_shared_alloc gives none) */
  int (*comm_split_type)(MPI_Comm, int, int, MPI_Info, MPI_Comm *);
  int (*comm_free)(MPI_Comm *);
  int (*win_allocate_shared)(MPI_Aint, int, MPI_Info, MPI_Comm, void *, MPI_Win *);
  int (*win_shared_query)(MPI_Win, int, MPI_Aint *, int *, void *);
  int (*win_lock_all)(int, MPI_Win);
  int (*win_unlock_all)(MPI_Win);
  int (*win_sync)(MPI_Win);
  int (*win_free)(MPI_Win *);
  MPI_Comm world;
  MPI_Datatype f32, f64, byte;
  MPI_Info info_null;
} mpi;

#ifdef OMPI_MAJOR_VERSION
#define BIND_HANDLE(h, var, sym) *(void **)(&(var)) = dlsym((h), sym)
#endif

static sm_status *mpi_open(void) {
  /* RTLD_GLOBAL: Open MPI's plugins (mca_*.so) resolve their calls into libmpi through it */
  void *h = dlopen(SM_MPI_SONAME, RTLD_NOW | RTLD_GLOBAL);
  if (!h)
    return sm_status_new(SM_UNAVAILABLE, "launched under mpirun, but %s cannot be opened (%s): install Open MPI "
                         "(openmpi-bin, libopenmpi-dev)", SM_MPI_SONAME, dlerror());
  SM_BIND(h, mpi.init_thread, "MPI_Init_thread");
  SM_BIND(h, mpi.initialized, "MPI_Initialized");
  SM_BIND(h, mpi.finalize, "MPI_Finalize");
  SM_BIND(h, mpi.abort, "MPI_Abort");
  SM_BIND(h, mpi.comm_rank, "MPI_Comm_rank");
  SM_BIND(h, mpi.comm_size, "MPI_Comm_size");
  SM_BIND(h, mpi.ibcast, "MPI_Ibcast");
  SM_BIND(h, mpi.ibarrier, "MPI_Ibarrier");
  SM_BIND(h, mpi.igather, "MPI_Igather");
  SM_BIND(h, mpi.isend, "MPI_Isend");
  SM_BIND(h, mpi.irecv, "MPI_Irecv");
  SM_BIND(h, mpi.testall, "MPI_Testall");
  SM_BIND(h, mpi.test, "MPI_Test");
  SM_BIND(h, mpi.comm_split_type, "MPI_Comm_split_type");
  SM_BIND(h, mpi.comm_free, "MPI_Comm_free");
  SM_BIND(h, mpi.win_allocate_shared, "MPI_Win_allocate_shared");
  SM_BIND(h, mpi.win_shared_query, "MPI_Win_shared_query");
  SM_BIND(h, mpi.win_lock_all, "MPI_Win_lock_all");
  SM_BIND(h, mpi.win_unlock_all, "MPI_Win_unlock_all");
  SM_BIND(h, mpi.win_sync, "MPI_Win_sync");
  SM_BIND(h, mpi.win_free, "MPI_Win_free");
#ifdef OMPI_MAJOR_VERSION
  BIND_HANDLE(h, mpi.world, "ompi_mpi_comm_world");
  BIND_HANDLE(h, mpi.f32, "ompi_mpi_float");
  BIND_HANDLE(h, mpi.f64, "ompi_mpi_double");
  BIND_HANDLE(h, mpi.byte, "ompi_mpi_byte");
  BIND_HANDLE(h, mpi.info_null, "ompi_mpi_info_null");
  int handles = mpi.world && mpi.f32 && mpi.f64 && mpi.byte;
#else
  mpi.world = MPI_COMM_WORLD, mpi.f32 = MPI_FLOAT, mpi.f64 = MPI_DOUBLE, mpi.byte = MPI_BYTE;
  mpi.info_null = MPI_INFO_NULL;
  int handles = 1;
#endif
  if (!handles || !mpi.init_thread || !mpi.initialized || !mpi.finalize || !mpi.abort || !mpi.comm_rank ||
      !mpi.comm_size || !mpi.ibcast || !mpi.ibarrier || !mpi.igather || !mpi.isend || !mpi.irecv ||
      !mpi.testall || !mpi.test)
    return sm_status_new(SM_UNAVAILABLE, "%s lacks MPI-3 functions or handles this build expects (built against "
                         "another MPI?)", SM_MPI_SONAME);
  return NULL;
}

sm_status *sm_dist_init(double timeout_s, int *rank, int *size) {
  if (rank) *rank = 0;
  if (size) *size = 1;
  sm_status *st = check_timeout(timeout_s);
  if (st) return st;
  if (!g.inited) {
    if (env_size() == 0) return NULL; /* not under mpirun: one process, as ever */
    st = mpi_open();
    if (st) return st;
    int provided = 0, r = 0, n = 1;
    if (mpi.init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return sm_status_new(SM_UNAVAILABLE, "MPI_Init_thread failed");
    mpi.comm_rank(mpi.world, &r);
    mpi.comm_size(mpi.world, &n);
    if (n > 1) {
      g.rows = sm__calloc((size_t)n * SM_DIST_NMETRIC * sizeof *g.rows);
      g.recv = sm__calloc((size_t)n * sizeof *g.recv);
      if (!g.rows || !g.recv) {
        sm__free(g.rows);
        sm__free(g.recv);
        g.rows = NULL, g.recv = NULL;
        mpi.abort(mpi.world, 1);
        return sm_status_new(SM_NO_MEMORY, "MPI: out of memory for %d ranks", n);
      }
    }
    g.rank = r, g.size = n, g.inited = 1;
    /* microseconds of yielding polls before the 100 spins (default 2000; 0: bench_train_mpi.py's A/B row) */
    const char *spin = getenv("SM_MPI_SPIN_US");
    if (spin && *spin) {
      double us = strtod(spin, NULL);
      g.spin_s = us >= 0 && us <= 1e6 ? us * 1e-6 : g.spin_s;
    }
    const char *lp = getenv("SM_MPI_LAYER_POLL");
    if (lp && *lp) g.layer_poll = strcmp(lp, "0") != 0;
  }
  if (rank) *rank = g.rank;
  if (size) *size = g.size;
  return NULL;
}

void sm_dist_abort(const char *msg) {
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
  if (g.inited) mpi.abort(mpi.world, 1);
  exit(1);
}

void sm_dist_finalize(void) {
  if (!g.inited) return;
  sm__dist_shared_free();
  mpi.finalize();
  sm__free(g.rows);
  sm__free(g.recv);
  g.rows = NULL, g.recv = NULL;
  g.inited = 0, g.rank = 0, g.size = 1;
}

static sm_status *started(int rc, const char *what) {
  if (rc != MPI_SUCCESS) return sm_status_new(SM_INTERNAL, "MPI: %s failed (error %d)", what, rc);
  g.peer[g.nreq++] = -1;
  return NULL;
}

static sm_status *room(int k) {
  if (g.nreq + k > MAX_PENDING)
    return sm_status_new(SM_OUT_OF_RANGE, "MPI: more than %d collectives in flight", MAX_PENDING);
  return NULL;
}

enum { TAG_REPORT = 7, TAG_DATA = 8 };

/* Point-to-point pieces (fit_dist.c's sharded gradients and weights): messages between two ranks
 * on one tag match in the order they were posted, which both sides post alike. */
sm_status *sm__dist_send_start(const float *buf, int64_t n, int to) {
  if (g.size <= 1) return NULL;
  if (n < 0 || n > 0x7fffffff || to < 0 || to >= g.size)
    return sm_status_new(SM_OUT_OF_RANGE, "MPI: send of %lld floats to rank %d", (long long)n, to);
  sm_status *st = room(1);
  if (g.win_live) mpi.win_sync(g.win); /* this rank's writes to the shared window before what announces them */
  if (!st) st = started(mpi.isend(buf, (int)n, mpi.f32, to, TAG_DATA, mpi.world, &g.req[g.nreq]), "MPI_Isend");
  if (!st) g.peer[g.nreq - 1] = to;
  return st;
}

sm_status *sm__dist_recv_start(float *buf, int64_t n, int from) {
  if (g.size <= 1) return NULL;
  if (n < 0 || n > 0x7fffffff || from < 0 || from >= g.size)
    return sm_status_new(SM_OUT_OF_RANGE, "MPI: receive of %lld floats from rank %d", (long long)n, from);
  sm_status *st = room(1);
  if (!st) st = started(mpi.irecv(buf, (int)n, mpi.f32, from, TAG_DATA, mpi.world, &g.req[g.nreq]), "MPI_Irecv");
  if (!st) g.peer[g.nreq - 1] = from;
  return st;
}

int sm__dist_pending(void) { return g.nreq; }

sm_status *sm__dist_report(const double *v, int64_t step) {
  if (g.size <= 1) return NULL;
  if (g.reporting) return sm_status_new(SM_INTERNAL, "MPI: a report is already in flight");
  memcpy(g.mine, v, sizeof g.mine);
  g.report_step = step;
  if (g.rank != 0) {
    sm_status *st = room(1);
    if (st) return st;
    if ((st = started(mpi.isend(g.mine, SM_DIST_NMETRIC, mpi.f64, 0, TAG_REPORT, mpi.world, &g.req[g.nreq]),
                      "MPI_Isend")))
      return st;
  } else {
    memcpy(g.rows, v, sizeof g.mine);
    for (int r = 1; r < g.size; r++)
      if (mpi.irecv(g.rows + (size_t)r * SM_DIST_NMETRIC, SM_DIST_NMETRIC, mpi.f64, r, TAG_REPORT, mpi.world,
                    &g.recv[r]) != MPI_SUCCESS)
        return sm_status_new(SM_INTERNAL, "MPI: MPI_Irecv from rank %d failed", r);
  }
  g.reporting = 1;
  return NULL;
}

void sm__dist_poll(void) {
  if (g.size <= 1 || g.nreq == 0) return;
  int done = 0;
  mpi.testall(g.nreq, g.req, &done, MPI_STATUSES_IGNORE);
}

void sm__dist_progress(void) {
  if (g.layer_poll) sm__dist_poll();
}

/* The ranks that did not answer, as "1, 3" (empty: none named): those rank 0 has not heard from
 * for the current report, and the other ends of the first nwait requests' unfinished sends and
 * receives. */
static void silent_ranks(char *buf, size_t cap, int nwait) {
  size_t k = 0;
  buf[0] = 0;
  for (int r = 0; r < g.size && k + 16 < cap; r++) {
    int flag = 1;
    if (r > 0 && g.rank == 0 && g.reporting) mpi.test(&g.recv[r], &flag, MPI_STATUS_IGNORE);
    for (int i = 0; i < nwait && flag; i++)
      if (g.peer[i] == r) mpi.test(&g.req[i], &flag, MPI_STATUS_IGNORE);
    if (!flag) k += (size_t)snprintf(buf + k, cap - k, "%s%d", k ? ", " : "", r);
  }
}

/* Waits for the first nwait requests, and for the report when `report` is set. */
static sm_status *wait_reqs(const char *what, int64_t step, int nwait, int report) {
  double c0 = sm__cpu_seconds(), t0 = now_s(), deadline = t0 + g.timeout_s;
  long spins = 0;
  for (;;) {
    int a = 1, b = 1;
    if (nwait) mpi.testall(nwait, g.req, &a, MPI_STATUSES_IGNORE);
    if (report && g.reporting && g.rank == 0) mpi.testall(g.size - 1, g.recv + 1, &b, MPI_STATUSES_IGNORE);
    if (a && b) break;
    double t = now_s();
    if (t > deadline) {
      char who[256] = "";
      silent_ranks(who, sizeof who, nwait);
      g.wait_s += t - t0;
      g.wait_cpu_s += sm__cpu_seconds() - c0;
      if (*who)
        return sm_status_new(SM_DEADLINE_EXCEEDED, "MPI: rank %s did not answer within the collective timeout "
                             "(%g s) at %s step %lld: it died or hangs", who, g.timeout_s, what, (long long)step);
      return sm_status_new(SM_DEADLINE_EXCEEDED, "MPI: rank %d: %s did not complete within the collective timeout "
                           "(%g s): another rank died or hangs", g.rank, what, g.timeout_s);
    }
    /* Spin briefly (100 polls), then sleep 50 us at a time: a step takes milliseconds, and a
     * spinning rank would take the core from the rank it waits for wherever ranks share cores.
     * First, for SM_MPI_SPIN_US (default 2 ms), it polls, yielding between polls (so a rank that
     * shares its core gives it up; alone on its core it just polls, as Open MPI's own blocking
     * waits do): Open MPI moves a message only inside an MPI call on both sides, so a sleeping
     * rank stalls a round by up to a sleep. Quiet 2-core VM, seed CNN -np 2 (bench/RESULTS.md,
     * 16:0x UTC): 1.63x / 1.40x one process with the polls against 1.48x / 1.23x without; on the
     * machine loaded 10+ it did not pay (p25 and median no better, CPU higher). */
    if (t < t0 + g.spin_s)
      sched_yield();
    else if (++spins > 100)
      nanosleep(&(struct timespec){0, 50000}, NULL);
  }
  if (g.win_live) mpi.win_sync(g.win); /* the peers' writes that the messages announced */
  g.wait_s += now_s() - t0;
  g.wait_cpu_s += sm__cpu_seconds() - c0;
  return NULL;
}

sm_status *sm__dist_wait_first(const char *what, int64_t step, int k) {
  if (g.size <= 1) return NULL;
  if (k < 0 || k > g.nreq) return sm_status_new(SM_INTERNAL, "MPI: wait for %d of %d requests", k, g.nreq);
  return wait_reqs(what, step, k, 0);
}

sm_status *sm__dist_wait(const char *what, double *sum) {
  if (g.size <= 1) return NULL;
  sm_status *st = wait_reqs(what, g.report_step, g.nreq, 1);
  if (st) return st;
  if (g.reporting && sum) {
    for (int j = 0; j < SM_DIST_NMETRIC; j++) sum[j] = 0.0;
    if (g.rank == 0)
      for (int r = 0; r < g.size; r++)
        for (int j = 0; j < SM_DIST_NMETRIC; j++) sum[j] += g.rows[(size_t)r * SM_DIST_NMETRIC + j];
    else
      memcpy(sum, g.mine, sizeof g.mine);
  }
  g.reporting = 0;
  g.nreq = 0;
  return NULL;
}

sm_status *sm__dist_bcast(void *buf, size_t bytes, const char *what) {
  if (g.size <= 1) return NULL;
  sm_status *st = NULL;
  for (size_t off = 0; !st && off < bytes;) {
    size_t n = bytes - off < ((size_t)1 << 30) ? bytes - off : ((size_t)1 << 30);
    if (!(st = room(1)))
      st = started(mpi.ibcast((char *)buf + off, (int)n, mpi.byte, 0, mpi.world, &g.req[g.nreq]), "MPI_Ibcast");
    if (!st) st = sm__dist_wait(what, NULL);
    off += n;
  }
  return st;
}

sm_status *sm_dist_gather(const double *mine, int n, double *all) {
  if (n < 0 || (size_t)n * (size_t)(g.size > 0 ? g.size : 1) > 0x7fffffff)
    return sm_status_new(SM_INVALID_ARGUMENT, "sm_dist_gather: %d values from each of %d ranks", n, g.size);
  if (g.size <= 1 || n == 0) {
    if (n) memcpy(all, mine, (size_t)n * sizeof *all);
    return NULL;
  }
  sm_status *st = room(1);
  if (!st)
    st = started(mpi.igather(mine, n, mpi.f64, g.rank == 0 ? all : NULL, n, mpi.f64, 0, mpi.world, &g.req[g.nreq]),
                 "MPI_Igather");
  return st ? st : sm__dist_wait("the gather", NULL);
}

/* Does this job allow shared memory between its ranks? Not when OMPI_MCA_btl (mpirun --mca btl)
 * names transports without Open MPI's shared-memory one (vader; sm in Open MPI 5), or excludes it
 * ("^vader"), nor when SM_MPI_SHARED=0. */
static int shared_wanted(void) {
  const char *v = getenv("SM_MPI_SHARED");
  if (v && !strcmp(v, "0")) return 0;
  const char *b = getenv("OMPI_MCA_btl");
  if (!b || !*b) return 1;
  int has = strstr(b, "vader") || strstr(b, "sm");
  return b[0] == '^' ? !has : has;
}

sm_status *sm__dist_shared_alloc(size_t bytes, void **out) {
  *out = NULL;
  if (g.size <= 1 || !mpi.comm_split_type || !mpi.comm_free || !mpi.win_allocate_shared || !mpi.win_shared_query ||
      !mpi.win_lock_all || !mpi.win_unlock_all || !mpi.win_sync || !mpi.win_free || g.win_live)
    return NULL;
  if (bytes > ((size_t)1 << 40))
    return sm_status_new(SM_OUT_OF_RANGE, "MPI: a shared window of %zu bytes", bytes);
  int want = shared_wanted(); /* rank 0's choice for all: the calls below are collective */
  sm_status *st = sm__dist_bcast(&want, sizeof want, "the shared window's setup");
  if (st || !want) return st;
  int n = 0;
  if (mpi.comm_split_type(mpi.world, MPI_COMM_TYPE_SHARED, 0, mpi.info_null, &g.node) != MPI_SUCCESS)
    return sm_status_new(SM_INTERNAL, "MPI: MPI_Comm_split_type failed");
  mpi.comm_size(g.node, &n);
  if (n != g.size) { /* ranks on several nodes: the same answer on each */
    mpi.comm_free(&g.node);
    return NULL;
  }
  /* rank 0 holds all of it (one contiguous buffer); 64-byte aligned by Open MPI's osc/sm */
  void *base = NULL;
  if (mpi.win_allocate_shared(g.rank == 0 ? (MPI_Aint)bytes : 0, 1, mpi.info_null, g.node, &base, &g.win) !=
      MPI_SUCCESS) {
    mpi.comm_free(&g.node);
    return sm_status_new(SM_UNAVAILABLE, "MPI: MPI_Win_allocate_shared of %zu bytes failed", bytes);
  }
  MPI_Aint size = 0;
  int unit = 0;
  if (mpi.win_shared_query(g.win, 0, &size, &unit, &base) != MPI_SUCCESS || (size_t)size < bytes || !base) {
    mpi.win_free(&g.win);
    mpi.comm_free(&g.node);
    return sm_status_new(SM_INTERNAL, "MPI: MPI_Win_shared_query gave %lld bytes, not %zu", (long long)size, bytes);
  }
  mpi.win_lock_all(MPI_MODE_NOCHECK, g.win); /* one passive epoch for the window's life: MPI_Win_sync orders */
  g.win_live = 1;
  g.shared_used = 1;
  *out = base;
  return NULL;
}

void sm__dist_shared_free(void) {
  if (!g.win_live) return;
  mpi.win_unlock_all(g.win);
  mpi.win_free(&g.win);
  mpi.comm_free(&g.node);
  g.win_live = 0;
}

sm_status *sm_dist_barrier(void) {
  if (g.size <= 1) return NULL;
  sm_status *st = room(1);
  if (!st) st = started(mpi.ibarrier(mpi.world, &g.req[g.nreq]), "MPI_Ibarrier");
  return st ? st : sm__dist_wait("the final barrier", NULL);
}
#endif

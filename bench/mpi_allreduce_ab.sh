#!/bin/bash
# bench/mpi_allreduce_ab.sh - the collective under data-parallel training, alone (not a test): an
# MPI_Iallreduce of N floats (default 346112: the seed CNN's Dense(5408 -> 64) kernel gradient,
# 1.4 MB) on -np 2, completed by the two ways src/train/dist.c can wait, A/B interleaved over rounds:
#   alg 2 = libnbc's binomial tree (Open MPI's own choice under 4 ranks), alg 3 = Rabenseifner's
#   reduce-scatter + allgather (what dist.c asked for before the trainer sharded its optimizer and
#   exchanged gradient and weight pieces point to point instead);
#   wait "sleep" = 100 polls then 50 us sleeps between polls (dist.c's wait), "poll" = MPI_Test
#   in a loop with sched_yield between (dist.c's wait under SM_MPI_SPIN_US).
# Prints min / p25 / median wall and CPU microseconds per allreduce over ITERS (300) of them, each
# started after a barrier. Min and p25 are what the shared machine's load moves least.
#   bench/mpi_allreduce_ab.sh [N] [ROUNDS]
set -euo pipefail
N=${1:-346112}
ROUNDS=${2:-2}
command -v mpicc >/dev/null || { echo "mpicc not found (apt-get install libopenmpi-dev)"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/ar.c" <<'EOF'
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n = atoi(argv[1]), it = 300, sleepy = !strcmp(argv[2], "sleep");
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  float *b = malloc((size_t)n * sizeof *b);
  double *w = malloc(it * sizeof *w), *c = malloc(it * sizeof *c);
  for (int k = 0; k < it; k++) {
    for (int i = 0; i < n; i++) b[i] = (float)(i % 7);
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu(), t0 = MPI_Wtime();
    MPI_Request q;
    MPI_Iallreduce(MPI_IN_PLACE, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
    int done = 0;
    for (long spins = 0; !done; spins++) {
      MPI_Test(&q, &done, MPI_STATUS_IGNORE);
      if (done) break;
      if (sleepy && spins > 100) nanosleep(&(struct timespec){0, 50000}, NULL);
      else sched_yield();
    }
    w[k] = MPI_Wtime() - t0, c[k] = cpu() - c0;
    if (b[n - 1] != 2.0f * (float)((n - 1) % 7)) { fprintf(stderr, "wrong sum\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  }
  qsort(w, it, sizeof *w, cmp), qsort(c, it, sizeof *c, cmp);
  if (r == 0)
    printf("wall us min %.0f p25 %.0f median %.0f; CPU us min %.0f median %.0f\n", w[0] * 1e6, w[it / 4] * 1e6,
           w[it / 2] * 1e6, c[0] * 1e6, c[it / 2] * 1e6);
  MPI_Finalize();
  return 0;
}
EOF
mpicc -O2 -o "$TMP/ar" "$TMP/ar.c"
echo "MPI_Iallreduce of $N floats, -np 2, $(date -u '+%F %H:%M UTC'), git $(git -C "$(dirname "$0")" rev-parse --short HEAD)"
for r in $(seq 1 "$ROUNDS"); do
  for alg in 2 3; do
    for wait in sleep poll; do
      printf 'round %s alg %s wait %-5s load %s: ' "$r" "$alg" "$wait" "$(cut -d' ' -f1-3 /proc/loadavg)"
      OMPI_MCA_coll_libnbc_iallreduce_algorithm=$alg mpirun --oversubscribe --allow-run-as-root \
        -x OMPI_MCA_coll_libnbc_iallreduce_algorithm -np 2 "$TMP/ar" "$N" "$wait"
    done
  done
done

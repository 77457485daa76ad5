/*
 * memcpy_bw.c - memcpy bandwidth per size (warm buffers, median of runs): the ceiling
 * bench/compare quotes beside each collective, and with PROCS > 1 the host's all-cores copy bound
 * (PROCS processes, each with its own buffers, copying at once; a run lasts until the slowest
 * finishes, and the bandwidth is all the processes' bytes over that time).
 *
 *     memcpy_bw MIN MAX [REPS [PROCS]]
 *
 * Prints "bytes GB/s" per power-of-two size (GB/s of all processes together).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  pthread_barrier_t go;
  double t[]; /* procs x reps seconds per copy */
} Shared;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One process's runs at size n: every run starts when all processes are ready. */
static void copyRuns(Shared *s, int me, int reps, char *a, char *b, size_t n) {
  int inner = (int)(64 * 1024 * 1024 / n) + 1;
  for (int r = 0; r < reps; r++) {
    pthread_barrier_wait(&s->go);
    double t0 = now();
    for (int i = 0; i < inner; i++) {
      memcpy(b, a, n);
      __asm__ volatile("" ::"r"(b) : "memory");
    }
    s->t[me * reps + r] = (now() - t0) / inner;
  }
}

/* Process me's whole run over a and b (allocated before the fork, first touched here, so each
 * process's pages are its own and on its node), every size. */
static int copier(Shared *s, int me, int reps, size_t lo, size_t hi, char *a, char *b) {
  memset(a, 1, hi);
  memset(b, 2, hi);
  for (size_t n = lo; n <= hi; n *= 2) {
    copyRuns(s, me, reps, a, b, n);
    pthread_barrier_wait(&s->go); /* the parent reads this size's times */
    pthread_barrier_wait(&s->go);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MIN_BYTES MAX_BYTES [REPS [PROCS]]\n", argv[0]);
    return 2;
  }
  size_t lo = strtoull(argv[1], NULL, 0), hi = strtoull(argv[2], NULL, 0);
  int reps = argc > 3 ? atoi(argv[3]) : 9, procs = argc > 4 ? atoi(argv[4]) : 1;
  if (lo == 0 || hi < lo || reps < 1 || reps > 1000 || procs < 1 || procs > 4096) return 2;
  size_t bytes = sizeof(Shared) + sizeof(double) * (size_t)(procs * reps);
  Shared *s = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pthread_barrierattr_t at;
  pthread_barrierattr_init(&at);
  pthread_barrierattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
  if (s == MAP_FAILED || pthread_barrier_init(&s->go, &at, (unsigned)procs + 1) != 0) return 1;
  char *a = malloc(hi), *b = malloc(hi); /* untouched: every process touches its own copy */
  double *run = malloc(sizeof(double) * (size_t)reps);
  if (!a || !b || !run) return 1;
  pid_t *pids = malloc(sizeof(pid_t) * (size_t)procs);
  for (int p = 0; pids && p < procs; p++) {
    if ((pids[p] = fork()) == 0) _exit(copier(s, p, reps, lo, hi, a, b));
    if (pids[p] < 0) { /* the others would wait at the barrier for ever */
      perror("memcpy_bw: fork");
      while (--p >= 0) kill(pids[p], SIGKILL);
      return 1;
    }
  }
  if (!pids) return 1;
  for (size_t n = lo; n <= hi; n *= 2) {
    for (int r = 0; r < reps; r++) pthread_barrier_wait(&s->go);
    pthread_barrier_wait(&s->go);
    for (int r = 0; r < reps; r++) { /* a run's time: its slowest process */
      run[r] = 0;
      for (int p = 0; p < procs; p++)
        run[r] = run[r] > s->t[p * reps + r] ? run[r] : s->t[p * reps + r];
    }
    qsort(run, (size_t)reps, sizeof(double), cmp);
    printf("%zu %.3f\n", n, (double)n * procs / run[reps / 2] / 1e9);
    fflush(stdout);
    pthread_barrier_wait(&s->go);
  }
  int rc = 0;
  for (int p = 0; p < procs; p++) {
    int st;
    if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) rc = 1;
  }
  free(run);
  free(pids);
  free(a);
  free(b);
  return rc;
}

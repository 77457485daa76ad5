/*
 * diff_rt.c - the runtime half of the simulator/runtime differential test (tests/sim/diff.sh):
 * under mpirun, every rank fills its input with the simulator's functional inputs
 * (simInputValue, with fractions, so float sums depend on the order of reduction), runs one
 * collective through the real runtime (algorithm forced by TPU_DIST_ALGO), and rank 0 writes
 * every rank's output, rank after rank, as raw float32 — the layout of tpudist-sim
 * --dump-outputs. diff.sh compares the two files byte for byte, and checks the algorithm that rank
 * 0 names on stdout ("diff_rt: COLL ran ALGO") is the one forced.
 *
 * usage: diff_rt COLL COUNT OUTFILE      (COUNT: the per-block count, as the schedule's count)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_ir.h"
#include "sim.h"
#include "tpu_dist.h"

static tpudistResult_t runColl(int coll, const float *in, float *out, size_t count,
                               tpudistComm_t comm) {
  switch (coll) {
    case TD_COLL_ALLREDUCE:
      return tpudistAllReduce(in, out, count, tpudistFloat32, tpudistSum, comm, NULL);
    case TD_COLL_BROADCAST:
      return tpudistBroadcast(in, out, count, tpudistFloat32, 0, comm, NULL);
    case TD_COLL_REDUCE:
      return tpudistReduce(in, out, count, tpudistFloat32, tpudistSum, 0, comm, NULL);
    case TD_COLL_ALLGATHER:
      return tpudistAllGather(in, out, count, tpudistFloat32, comm, NULL);
    case TD_COLL_REDUCESCATTER:
      return tpudistReduceScatter(in, out, count, tpudistFloat32, tpudistSum, comm, NULL);
    case TD_COLL_ALLTOALL:
      return tpudistAllToAll(in, out, count, tpudistFloat32, comm, NULL);
    default:
      return tpudistInvalidArgument;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int coll = argc == 4 ? schedCollFromName(argv[1]) : -1;
  if (coll < 0) {
    if (!rank) fprintf(stderr, "usage: diff_rt COLL COUNT OUTFILE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  size_t count = strtoull(argv[2], NULL, 10);
  size_t nin = count, nout = count;
  if (coll == TD_COLL_REDUCESCATTER || coll == TD_COLL_ALLTOALL) nin = count * n;
  if (coll == TD_COLL_ALLGATHER || coll == TD_COLL_ALLTOALL) nout = count * n;
  float *in = malloc(nin * sizeof(float) + 4), *out = malloc(nout * sizeof(float) + 4);
  float *all = malloc(nout * sizeof(float) * n + 4);
  for (size_t i = 0; i < nin; i++) in[i] = (float)simInputValue(rank, i, 1);
  memset(out, 0x7f, nout * sizeof(float)); /* what the simulator leaves in unwritten outputs */
  tpudistUniqueId id;
  if (!rank && tpudistGetUniqueId(&id) != tpudistSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  tpudistComm_t comm;
  if (tpudistCommInitRank(&comm, n, id, rank) != tpudistSuccess ||
      runColl(coll, in, out, count, comm) != tpudistSuccess) {
    fprintf(stderr, "[%d] %s\n", rank, tpudistGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Gather(out, (int)(nout * sizeof(float)), MPI_BYTE, all, (int)(nout * sizeof(float)), MPI_BYTE,
             0, MPI_COMM_WORLD);
  int rc = 0;
  if (!rank) {
    printf("diff_rt: %s ran %s\n", argv[1], tpudistLastAlgorithm(comm));
    FILE *f = fopen(argv[3], "wb");
    rc = !f || fwrite(all, sizeof(float), nout * n, f) != nout * (size_t)n;
    if (f) fclose(f);
  }
  tpudistCommDestroy(comm);
  free(in);
  free(out);
  free(all);
  MPI_Finalize();
  return rc;
}

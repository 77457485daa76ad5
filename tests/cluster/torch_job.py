"""tests/cluster/torch_job.py - one torchrun worker of the cluster suite (tests/cluster/run.sh):
the "tpu_dist" backend over torchrun's environment (env://), all-reduce, all-gather and broadcast
checked exactly, then the host and transport facts printed for the suite to check:

    torchrun --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint HOST0:PORT \\
        tests/cluster/torch_job.py

TD_BENCH=1 (with TD_BACKEND=gloo or tpu_dist) times all-reduces instead (docs/results/multi-host.md).
A worker still alive after TD_JOB_STACKS_S seconds (default 120, under the suite's 150 s bound)
prints every thread's Python stack to stderr, so a hang leaves a trace of where it stood.
"""
import faulthandler
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

import tpu_dist  # noqa: F401  (registers the backend)


def bench(backend, rank, n):
    """TD_BENCH=1: median all-reduce time at 1, 4 and 16 MiB (float32), busbw printed by rank 0."""
    for nbytes in (1 << 20, 4 << 20, 16 << 20):
        t = torch.ones(nbytes // 4, dtype=torch.float32)
        times = []
        for i in range(7):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - t0)
        times.sort()
        med = times[len(times) // 2]
        if rank == 0:
            print("bench %s allreduce %d ranks %d bytes: %.0f us, busbw %.3f GB/s" % (
                backend, n, nbytes, med * 1e6, nbytes * 2.0 * (n - 1) / n / med / 1e9), flush=True)


def main():
    faulthandler.dump_traceback_later(float(os.environ.get("TD_JOB_STACKS_S", "120")))
    backend = os.environ.get("TD_BACKEND", "tpu_dist")
    dist.init_process_group(backend, init_method="env://")
    if os.environ.get("TD_BENCH") == "1":
        bench(backend, dist.get_rank(), dist.get_world_size())
        dist.destroy_process_group()
        return 0
    rank, n = dist.get_rank(), dist.get_world_size()
    bad = 0
    for count in (7, 1 << 20):
        t = torch.arange(count, dtype=torch.int32) + 1000 * (rank + 1)
        dist.all_reduce(t)
        want = torch.arange(count, dtype=torch.int32) * n + 1000 * n * (n + 1) // 2
        bad += int(not torch.equal(t, want))
        parts = [torch.empty(count, dtype=torch.int32) for _ in range(n)]
        dist.all_gather(parts, torch.full((count,), rank, dtype=torch.int32))
        bad += sum(int(not torch.equal(p, torch.full((count,), q, dtype=torch.int32)))
                   for q, p in enumerate(parts))
        b = torch.full((count,), rank + 5, dtype=torch.float32)
        dist.broadcast(b, src=n - 1)
        bad += int(not torch.equal(b, torch.full((count,), n + 4, dtype=torch.float32)))
    dist.barrier()
    print("torch_job rank %d of %d (local %s) on %s: %s" % (
        rank, n, os.environ.get("LOCAL_RANK"), socket.gethostname(), "ok" if not bad else
        "%d WRONG" % bad), flush=True)
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""tests/cluster/torch_job.py - one torchrun worker of the cluster suite (tests/cluster/run.sh):
the "tpu_dist" backend over torchrun's environment (env://), all-reduce, all-gather and broadcast
checked exactly, then the host and transport facts printed for the suite to check:

    torchrun --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint HOST0:PORT \\
        tests/cluster/torch_job.py
"""
import os
import socket
import sys

import torch
import torch.distributed as dist

import tpu_dist  # noqa: F401  (registers the backend)


def main():
    dist.init_process_group("tpu_dist", init_method="env://")
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

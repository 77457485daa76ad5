"""Trains a small MLP with DistributedDataParallel (or FSDP) on a chosen backend and prints the
losses.

    /usr/bin/python3 examples/ddp/train.py --backend tpu_dist --world 2 --steps 20
    /usr/bin/python3 examples/ddp/train.py --backend tpu_dist --world 2 --wrap fsdp   # torch 2.x
    torchrun --nproc-per-node 4 examples/ddp/train.py --backend tpu_dist
    (Debian's torch 2.6, built without libuv: see docs/torch.md for the rendezvous options)

Under torchrun (RANK and WORLD_SIZE set) the ranks are torchrun's and rendezvous is env://
(torchrun's own store); otherwise the ranks are spawned here and meet through a file.
--wrap fsdp shards the model with FullyShardedDataParallel (torch 2.x): parameters are
all-gathered and gradients reduce-scattered instead of all-reduced.

Each rank sees its own deterministic shard of a synthetic regression problem; the same run on
gloo gives the same losses (exactly at 2 ranks, where a sum of two gradients does not depend on
order). Returns the per-step mean loss on rank 0.
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(16, 32, generator=g)
    y = x.sum(dim=1, keepdim=True).sin()
    return x, y


def wrap(model, how, world):
    if how == "ddp":
        return DDP(model)
    # FSDP1, placed on the CPU explicitly: torch 2.6's FSDP2 (fully_shard) does not run on CPU
    # (its CPU stream has no record_event), and FSDP1 looks for an accelerator unless told.
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    return FSDP(model, device_id=torch.device("cpu"), use_orig_params=True)


def worker(rank, world, backend, steps, init_file, out, how="ddp"):
    if backend == "tpu_dist":
        import tpu_dist  # noqa: F401
    if init_file is None:  # torchrun: env:// from its variables
        dist.init_process_group(backend)
    else:
        dist.init_process_group(backend, init_method="file://" + init_file, rank=rank,
                                world_size=world)
    model = wrap(make_model(), how, world)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(steps):
        x, y = batch(rank, step)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append((mean / world).item())
    if rank == 0:
        out[:] = losses
    dist.destroy_process_group()


def train(backend, world, steps, how="ddp"):
    with tempfile.TemporaryDirectory() as d:
        manager = mp.Manager()
        out = manager.list()
        mp.spawn(worker, args=(world, backend, steps, os.path.join(d, "init"), out, how),
                 nprocs=world)
        return list(out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="tpu_dist")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--wrap", choices=["ddp", "fsdp"], default="ddp")
    a = ap.parse_args()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # launched by torchrun
        losses = []
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), a.backend, a.steps, None,
               losses, a.wrap)
    else:
        losses = train(a.backend, a.world, a.steps, a.wrap)
    for i, l in enumerate(losses):
        print("step %3d loss %.9f" % (i, l))

"""A failed tpu_dist group is destroyed without hanging and the survivors make a new group in the
same processes (the torchft pattern: a new store prefix, survivors only, no restart).

Three ranks share one store; generation 0 is all three. Rank 2 dies (os._exit) after an exact
all_reduce; the next all_reduce of ranks 0 and 1 fails with an error within the group's timeout;
the group is destroyed (or aborted) without waiting for the dead rank; ranks 0 and 1 then init a
generation-1 group of two under a new store prefix and get exact results on it."""
import datetime
import os
import sys
import time

import pytest

from harness import run_procs

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
TIMEOUT_S = 4


def _rank(rank, store_path, how, out):
    sys.path.insert(0, os.path.join(TOP, "python"))
    import torch
    import torch.distributed as dist
    import tpu_dist

    store = dist.FileStore(store_path, -1)
    timeout = datetime.timedelta(seconds=TIMEOUT_S)
    dist.init_process_group("tpu_dist", store=dist.PrefixStore("gen0/", store), rank=rank,
                            world_size=3, timeout=timeout)
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    assert bool((t == 6.0).all()), t[:4]
    dist.barrier()
    if rank == 2:
        os._exit(0)  # dies without a word: no destroy, no abort
    rec = {}
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1 << 16))
        rec["error"] = None
    except RuntimeError as e:
        rec["error"] = str(e)
    rec["fail_s"] = time.monotonic() - t0
    t0 = time.monotonic()
    if how == "abort":
        tpu_dist.abort_process_group()
    else:
        dist.destroy_process_group()
    rec["destroy_s"] = time.monotonic() - t0
    # Generation 1: the survivors, a new prefix, new ranks 0..1.
    dist.init_process_group("tpu_dist", store=dist.PrefixStore("gen1/", store), rank=rank,
                            world_size=2, timeout=timeout)
    t = torch.full((1 << 16,), float(10 * (rank + 1)))
    dist.all_reduce(t)
    g = [torch.empty(3, dtype=torch.int64) for _ in range(2)]
    dist.all_gather(g, torch.arange(3) + 100 * rank)
    rec["gen1"] = (bool((t == 30.0).all()), [x.tolist() for x in g])
    dist.destroy_process_group()
    out[rank] = rec


@pytest.mark.parametrize("how", ["destroy", "abort"])
def test_survivors_make_a_new_group(how):
    codes, hung, res = run_procs(_rank, lambda r, d, out: (r, os.path.join(d, "store"), how, out),
                                 3, 120)
    assert not hung, "ranks %s still running after 120 s (a hang)" % hung
    assert codes == [0, 0, 0], codes
    assert sorted(res) == [0, 1], res
    for r in (0, 1):
        rec = res[r]
        assert rec["error"] and "tpu_dist" in rec["error"], rec
        # promptness contracts: the error and the destroy within the timeout, plus margin
        assert rec["fail_s"] < 3 * TIMEOUT_S, rec
        assert rec["destroy_s"] < 3 * TIMEOUT_S, rec
        assert rec["gen1"] == (True, [[0, 1, 2], [100, 101, 102]]), rec

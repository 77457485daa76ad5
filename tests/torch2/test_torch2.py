"""torch 2.x Backend features (tests/torch2/torch2_cases.py at 2 and 4 ranks, and at 2 in defer
mode), abort and shutdown (pending Work fails with an error at once, nothing hangs). Run by the
torch2 suite."""
import os
import sys
import tempfile
import time

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
sys.path.insert(0, HERE)
import harness  # noqa: E402

pytestmark = pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2, reason="torch 2.x")


@pytest.mark.parametrize("world", [2, 4])
def test_torch2_cases(world):
    results = harness.run_job(world, "torch2_cases", timeout_s=300)
    assert sorted(results) == list(range(world)), "ranks did not all report: %s" % sorted(results)
    failures = ["rank %d %s:\n%s" % (r, name, tb) for r in sorted(results)
                for name, tb in results[r]]
    assert not failures, "\n".join(failures[:20]) + "\n(%d failures)" % len(failures)


def test_torch2_cases_deferred(monkeypatch):
    """Every torch 2.x case (the coalescing manager's both paths included) in defer mode."""
    monkeypatch.setenv("TPU_DIST_MODE", "defer")
    results = harness.run_job(2, "torch2_cases", timeout_s=300)
    assert sorted(results) == [0, 1], "ranks did not all report: %s" % sorted(results)
    failures = ["rank %d %s:\n%s" % (r, name, tb) for r in sorted(results)
                for name, tb in results[r]]
    assert not failures, "\n".join(failures[:20]) + "\n(%d failures)" % len(failures)


def _lifecycle_worker(rank, world, init_file, how, out):
    import datetime

    import torch.distributed as dist
    import tpu_dist
    dist.init_process_group("tpu_dist", init_method="file://" + init_file, rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=4))
    dist.barrier()
    errors = []
    t0 = time.monotonic()
    if rank == 0:  # the peers never join these: the first blocks in the library, the rest queue
        works = [dist.all_reduce(torch.ones(1 << 16), async_op=True) for _ in range(3)]
        time.sleep(0.5)
        if how == "abort":
            tpu_dist.abort_process_group()
        else:
            dist.destroy_process_group()
        for w in works:
            try:
                w.wait()
                errors.append(None)
            except RuntimeError as e:
                errors.append(str(e))
    else:
        if how == "abort":
            tpu_dist.abort_process_group()
        else:
            dist.destroy_process_group()
    out[rank] = (errors, time.monotonic() - t0)


@pytest.mark.parametrize("how", ["abort", "shutdown"])
def test_pending_work_fails_on(how):
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as d:
        out = mp.Manager().dict()
        mp.spawn(_lifecycle_worker, args=(2, os.path.join(d, "init"), how, out), nprocs=2)
        errors, secs = out[0]
    assert len(errors) == 3 and all(e is not None for e in errors), errors
    # promptness contracts, with margins for a loaded machine
    if how == "abort":  # at once, without waiting for the peer or the timeout
        assert secs < 3.0, secs
        assert all("abort" in e for e in errors), errors
    else:  # the running one ends at the group's timeout (4 s), the queued ones at once
        assert secs < 15.0, secs
        assert all("shut down" in e for e in errors[1:]), errors

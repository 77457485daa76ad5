"""Teardown never crashes or hangs: every rank of a 3-rank job exits 0 (or with the code a rank
chose for itself) within a bound, after destroy_process_group, the backend's shutdown, abort,
interpreter exit with live groups (the default group, a new_group, a split group and a shrunk
group), and after a peer died; no shared-memory segment of the job is left in /dev/shm.
Runs on every torch the project supports (1.13 here, 2.6 and 2.14 in the torch2 roots)."""
import glob
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import run_procs  # noqa: E402

WORLD = 3
DEAD_EXIT = 7  # the exit code of the rank that dies on purpose
TIMEOUT_MS = 4000  # the library's bound on every wait: a dead peer is an error within it
LIMIT_S = 150  # a job still running after this is a hang (killed, and the test fails)


def _groups(dist, tpu_dist, torch2):
    """Makes the live groups a job ends with: the default one, a new_group of ranks 0-1 and (torch
    2.x) a group split from the default one; runs an all_reduce on each and checks it."""
    import torch
    me = dist.get_rank()
    t = torch.full((64,), float(me + 1))
    dist.all_reduce(t)
    assert t.eq(6.0).all(), t[:4]
    sub = dist.new_group([0, 1])
    if me in (0, 1):
        s = torch.ones(8)
        dist.all_reduce(s, group=sub)
        assert s.eq(2.0).all(), s
    if torch2:
        split = tpu_dist.split_group(split_ranks=[[0, 2], [1]])
        s = torch.ones(8)
        dist.all_reduce(s, group=split)
        assert s.eq(2.0 if me in (0, 2) else 1.0).all(), s


def _rank(rank, init_file, how, out):
    os.environ["TPU_DIST_TIMEOUT_MS"] = str(TIMEOUT_MS)
    os.environ.setdefault("TPU_DIST_AGREE_TIMEOUT_MS", "2000")
    import torch
    import torch.distributed as dist
    import tpu_dist
    torch2 = tpu_dist.TORCH2
    dist.init_process_group("tpu_dist", init_method="file://" + init_file, rank=rank,
                            world_size=WORLD)
    _groups(dist, tpu_dist, torch2)
    if how in ("dead", "shrunk") and rank == 2:
        os._exit(DEAD_EXIT)  # dies with its groups live: no teardown at all
    if how == "dead":
        try:
            dist.all_reduce(torch.ones(4))
            out[rank] = "the all_reduce with a dead peer did not fail"
            return
        except RuntimeError as e:
            assert "tpu_dist" in str(e), e
    if how == "shrunk":
        group = tpu_dist.shrink_group()
        t = torch.ones(16)
        dist.all_reduce(t, group=group)
        assert t.eq(2.0).all(), t
    if how == "destroy" or how == "dead":
        dist.destroy_process_group()
    elif how == "shutdown":
        tpu_dist.backend_of().shutdown()
        dist.destroy_process_group()
    elif how == "abort":
        tpu_dist.abort_process_group()
    # "exit", "shrunk": the interpreter exits with every group live
    out[rank] = "ok"


def _segments():
    return set(glob.glob("/dev/shm/tdshm-*"))


@pytest.mark.parametrize("how", ["destroy", "shutdown", "abort", "exit", "dead", "shrunk"])
def test_teardown_exits_cleanly(how):
    before = _segments()
    t0 = time.monotonic()
    codes, hung, out = run_procs(_rank, lambda r, d, o: (r, os.path.join(d, "init"), how, o),
                                 WORLD, LIMIT_S)
    took = time.monotonic() - t0
    assert not hung, "%s: ranks %s still running after %d s (a hang)" % (how, hung, LIMIT_S)
    died = how in ("dead", "shrunk")
    want = [0, 0, DEAD_EXIT] if died else [0] * WORLD
    assert codes == want, "%s: exit codes %s, want %s (%s)" % (how, codes, want, out)
    survivors = [0, 1] if died else list(range(WORLD))
    assert all(out.get(r) == "ok" for r in survivors), (how, out)
    # Segments are unlinked once every peer mapped them: any of this job's still there once
    # its ranks exited is a leftover (another job's appear and go within milliseconds).
    left = _segments() - before
    deadline = time.monotonic() + 5
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left &= _segments()
    assert not left, "%s: left in /dev/shm: %s" % (how, sorted(left))
    print("%s: every rank exited as expected in %.1f s" % (how, took))

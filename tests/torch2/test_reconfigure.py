"""torch's fault-tolerance contract (reconfigure, torch 2.13+) with tpu_dist, at 3 ranks.

Each scenario runs in 3 spawned processes that make the default group with
init_process_group("tpu_dist", enable_reconfigure=True) over a FileStore (no communicator until
the first reconfigure), publish their handles (dist._get_reconfigure_handle()) through the store
and reconfigure with dist._reconfigure(uuid, handles, timeout).wait(); after each reconfigure the
group's size and this process's rank must be the new ones and an all-reduce (rank r contributes
r + 1) exact. The scenarios are those torch checks for its own backends (subset excluding the last
or a middle rank, singletons and back, late join, disjoint groups merged, identity, recovery after
abort, a reused uuid) plus a killed process whose survivors reconfigure and set_timeout. Every
rank's exit code is asserted (0, or SIGKILL for the killed one).
"""
import datetime
import os
import signal
import sys
import traceback

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
import harness  # noqa: E402  (also puts python/ on sys.path)

WORLD = 3
TIMEOUT = datetime.timedelta(seconds=30)


def _reconfigure_supported():
    import tpu_dist
    return tpu_dist._compat.RECONFIGURE


pytestmark = pytest.mark.skipif(
    int(torch.__version__.split(".")[0]) < 2 or not _reconfigure_supported(),
    reason="torch's reconfigure contract needs torch 2.13 or later")


class Rank:
    """One process of a scenario: the store, the group and the helpers torch's tests use."""

    def __init__(self, rank, d):
        import torch.distributed as dist
        self.dist, self.rank = dist, rank
        self.store = dist.FileStore(os.path.join(d, "store"), WORLD)
        dist.init_process_group("tpu_dist", world_size=WORLD, rank=rank, store=self.store,
                                timeout=TIMEOUT, enable_reconfigure=True)
        self.backend = dist.get_backend_impl(dist.group.WORLD, torch.device("cpu"))
        assert dist._supports_reconfigure() and self.backend.supports_reconfigure

    def handles(self, key):
        self.store.set("%s_%d" % (key, self.rank), self.dist._get_reconfigure_handle())
        return [self.store.get("%s_%d" % (key, r)).decode() for r in range(WORLD)]

    def barrier(self, key):
        self.store.set("%s_%d" % (key, self.rank), "1")
        for r in range(WORLD):
            self.store.get("%s_%d" % (key, r))

    def reconfigure(self, uuid, handles, rank, size):
        self.dist._reconfigure(uuid, handles, timeout=TIMEOUT).wait()
        got = (self.dist.get_rank(), self.dist.get_world_size())
        assert got == (rank, size), "uuid %d: rank/size %s, want %s" % (uuid, got, (rank, size))

    def all_reduce(self, members):
        """Exact sum over the members (world ranks) of rank + 1."""
        t = torch.full((4,), self.rank + 1.0)
        self.dist.all_reduce(t)
        want = float(sum(m + 1 for m in members))
        assert torch.equal(t, torch.full((4,), want)), (t.tolist(), want)

    def up(self, key, uuid):
        """All three, in world order."""
        self.reconfigure(uuid, self.handles(key), self.rank, WORLD)
        self.all_reduce(range(WORLD))


def subset_last(p):
    p.up("init", 400)
    h = p.handles("post")
    if p.rank < 2:
        p.reconfigure(401, h[:2], p.rank, 2)
        p.all_reduce([0, 1])
        t = torch.full((4,), 42.0) if p.rank == 0 else torch.zeros(4)
        p.dist.broadcast(t, src=0)
        assert torch.equal(t, torch.full((4,), 42.0)), t
    p.barrier("done")


def subset_middle(p):
    p.up("init", 500)
    h = p.handles("post")
    if p.rank != 1:
        p.reconfigure(501, [h[0], h[2]], 0 if p.rank == 0 else 1, 2)
        p.all_reduce([0, 2])
    p.barrier("done")


def down_up(p):
    p.reconfigure(600 + p.rank, [p.dist._get_reconfigure_handle()], 0, 1)
    p.all_reduce([p.rank])
    p.up("up", 603)
    p.reconfigure(604 + p.rank, [p.dist._get_reconfigure_handle()], 0, 1)
    p.all_reduce([p.rank])
    p.barrier("done")


def late_join(p):
    h = p.handles("init")
    if p.rank < 2:  # rank 2 is in no communicator until the last reconfigure admits it
        p.reconfigure(900, h[:2], p.rank, 2)
        p.all_reduce([0, 1])
    p.up("all", 901)


def merge(p):
    h = p.handles("init")
    if p.rank < 2:
        p.reconfigure(1000, h[:2], p.rank, 2)
        p.all_reduce([0, 1])
    else:
        p.reconfigure(1001, h[2:], 0, 1)
        p.all_reduce([2])
    p.up("all", 1002)


def identity(p):
    p.up("init", 800)
    p.up("again", 801)
    # a reversed list renumbers the ranks
    h = p.handles("rev")[::-1]
    p.reconfigure(802, h, WORLD - 1 - p.rank, WORLD)
    p.all_reduce(range(WORLD))


def after_abort(p):
    from torch._C._distributed_c10d import ErrorType
    p.up("init", 1200)
    ran = []
    p.backend.register_abort_hook(7, lambda: ran.append(7))
    p.backend.register_abort_hook(8, lambda: ran.append(8))
    p.backend.unregister_abort_hook(8)
    p.backend.abort()
    assert ran == [7], ran
    assert p.backend.get_error() == ErrorType.SUCCESS, p.backend.get_error()
    with pytest.raises(RuntimeError, match="aborted"):
        p.dist.all_reduce(torch.ones(4))
    p.up("recover", 1201)
    assert p.backend.get_error() == ErrorType.SUCCESS


def reused_uuid(p):
    uuid = 1100 + p.rank
    p.reconfigure(uuid, [p.dist._get_reconfigure_handle()], 0, 1)
    with pytest.raises(RuntimeError, match="uuid %d was already used" % uuid):
        p.dist._reconfigure(uuid, [p.dist._get_reconfigure_handle()], timeout=TIMEOUT).wait()
    p.all_reduce([p.rank])  # the group goes on


def timeout(p):
    from torch._C._distributed_c10d import ErrorType
    p.up("init", 1300)
    p.backend.set_timeout(datetime.timedelta(seconds=1))
    if p.rank == 0:  # nobody joins it
        work = p.dist.all_reduce(torch.ones(4), async_op=True)
        with pytest.raises(RuntimeError, match="timed out after"):
            work.wait()
        assert p.backend.get_error() == ErrorType.TIMEOUT, p.backend.get_error()
    p.backend.set_timeout(TIMEOUT)
    p.barrier("observed")
    p.up("recover", 1301)  # also ends rank 0's hung all-reduce at once
    assert p.backend.get_error() == ErrorType.SUCCESS


def killed(p):
    from torch._C._distributed_c10d import ErrorType
    p.up("init", 1400)
    h = p.handles("post")
    p.barrier("before_kill")
    if p.rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    with pytest.raises(RuntimeError):
        p.dist.all_reduce(torch.ones(4))  # the dead rank never joins
    err = p.backend.get_error()
    assert err in (ErrorType.REMOTE_ERROR, ErrorType.COMM_ERROR, ErrorType.TIMEOUT), err
    p.reconfigure(1401, [h[0], h[2]], 0 if p.rank == 0 else 1, 2)
    p.all_reduce([0, 2])
    assert p.backend.get_error() == ErrorType.SUCCESS


SCENARIOS = {f.__name__: f for f in (subset_last, subset_middle, down_up, late_join, merge,
                                      identity, after_abort, reused_uuid, timeout, killed)}


def _worker(rank, name, d, out):
    try:
        p = Rank(rank, d)
        SCENARIOS[name](p)
        p.dist.destroy_process_group()
        out[rank] = None
    except BaseException:  # noqa: BLE001  reported by the test
        out[rank] = traceback.format_exc()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_reconfigure(name):
    codes, hung, out = harness.run_procs(_worker, lambda r, d, o: (r, name, d, o), WORLD,
                                         limit_s=120)
    assert not hung, "ranks %s still running after 120 s" % hung
    failures = ["rank %d:\n%s" % (r, tb) for r, tb in sorted(out.items()) if tb]
    assert not failures, "\n".join(failures)
    want = [-signal.SIGKILL if name == "killed" and r == 1 else 0 for r in range(WORLD)]
    assert codes == want, "exit codes %s, want %s" % (codes, want)


def test_not_reconfigurable_group():
    """A group made without enable_reconfigure does not claim the contract and says why."""
    codes, hung, out = harness.run_procs(_not_reconf_worker, lambda r, d, o: (r, d, o), 1, 60)
    assert not hung and codes == [0] and out == {0: None}, (codes, out)


def _not_reconf_worker(rank, d, out):
    try:
        import torch.distributed as dist
        import tpu_dist  # noqa: F401
        dist.init_process_group("tpu_dist", world_size=1, rank=rank,
                                store=dist.FileStore(os.path.join(d, "s"), 1))
        assert not dist._supports_reconfigure()
        with pytest.raises(RuntimeError, match="enable_reconfigure=True"):
            dist._get_reconfigure_handle()
        dist.destroy_process_group()
        out[rank] = None
    except BaseException:  # noqa: BLE001  reported by the test
        out[rank] = traceback.format_exc()

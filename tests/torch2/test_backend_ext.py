"""torch's backend-extension tests (test_c10d_common.py's PythonProcessGroupExtensionTest and
ProcessGroupWithDispatchedCollectivesTests), done with tpu_dist as the plugin backend on CPU.

Debian's python3-torch 2.6 ships torch.testing._internal but not test/distributed, so the same
behaviour is covered here: the registration (Backend.register_backend with extended_api and
devices), the name, BackendConfig strings, the options (pg_options through new_group), and
creation through init_process_group (plain and "cpu:tpu_dist" forms, world size 1 and 2) and
new_group (under a gloo default group), every collective with exact results.
"""
import datetime
import os
import sys
import traceback

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
import harness  # noqa: E402  (also puts python/ on sys.path)

pytestmark = pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2, reason="torch 2.x")


def test_registered_as_extended_plugin():
    import torch.distributed as dist
    import tpu_dist
    assert dist.Backend.TPU_DIST == "tpu_dist"
    assert dist.Backend("TPU_DIST") == "tpu_dist"
    plugin = dist.Backend._plugins["TPU_DIST"]
    assert plugin.creator_fn is tpu_dist._create_ext and plugin.extended_api is True
    assert dist.Backend.backend_capability["tpu_dist"] == ["cpu"]
    assert dist.Backend.backend_type_map["tpu_dist"] == dist.ProcessGroup.BackendType.CUSTOM
    assert "tpu_dist" in dist.Backend.backend_list
    assert dist.is_backend_available("tpu_dist")
    # Importing again (or registering again through the package) is a no-op. torch's own
    # register_backend refuses the name with its message up to 2.13; 2.14 registers it again.
    tpu_dist._register()
    assert dist.Backend._plugins["TPU_DIST"] is plugin
    try:
        dist.Backend.register_backend("tpu_dist", tpu_dist._create_ext, extended_api=True,
                                      devices=["cpu"])
    except AssertionError as e:
        assert "TPU_DIST c10d backend already exist" in str(e), e
    assert dist.Backend._plugins["TPU_DIST"].creator_fn is tpu_dist._create_ext


@pytest.mark.parametrize("config,want", [
    ("tpu_dist", "cpu:tpu_dist"), ("TPU_DIST", "cpu:tpu_dist"), ("cpu:tpu_dist", "cpu:tpu_dist"),
    ("cpu:tpu_dist,cuda:nccl", "cpu:tpu_dist,cuda:nccl")])
def test_backend_config(config, want):
    import torch.distributed as dist
    import tpu_dist  # noqa: F401
    assert str(dist.BackendConfig(config)) == want
    assert str(dist.BackendConfig(dist.Backend.TPU_DIST)) == "cpu:tpu_dist"


@pytest.mark.parametrize("config", ["cpu:tpu_dist,", "cpu:tpu_dist,cpu:gloo"])
def test_backend_config_rejects(config):
    import torch.distributed as dist
    import tpu_dist  # noqa: F401
    with pytest.raises(ValueError):
        dist.BackendConfig(config)


def _expect(got, want, what):
    if got.dtype != want.dtype or not torch.equal(got, want):
        raise AssertionError("%s: got %s want %s" % (what, got.flatten()[:8].tolist(),
                                                      want.flatten()[:8].tolist()))


def _collectives(dist, group, rank, world):
    """Every collective of ProcessGroupWithDispatchedCollectivesTests on group (global ranks ==
    group ranks), exact."""
    seq = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = seq * (rank + 1)
    dist.all_reduce(t, group=group)
    _expect(t, seq * (world * (world + 1) // 2), "all_reduce")
    t = seq * (rank + 1)
    dist.reduce(t, dst=world - 1, group=group)
    if rank == world - 1:
        _expect(t, seq * (world * (world + 1) // 2), "reduce")
    t = seq + rank
    dist.broadcast(t, src=0, group=group)
    _expect(t, seq, "broadcast")
    t = seq.clone()
    dist.broadcast(t, src=0, group=group, async_op=True).wait()
    _expect(t, seq, "async broadcast")
    outs = [torch.zeros(3, 4) for _ in range(world)]
    dist.all_gather(outs, seq + rank, group=group)
    for r in range(world):
        _expect(outs[r], seq + r, "all_gather %d" % r)
    out = torch.zeros(3, 4)
    dist.reduce_scatter(out, [seq * (r + 1) + rank for r in range(world)], group=group)
    _expect(out, seq * (rank + 1) * world + sum(range(world)), "reduce_scatter")
    outs = [torch.zeros(3, 4) for _ in range(world)]
    dist.all_to_all(outs, [seq + 10 * rank + r for r in range(world)], group=group)
    for r in range(world):
        _expect(outs[r], seq + 10 * r + rank, "all_to_all %d" % r)
    out = torch.zeros(world * 2)
    dist.all_to_all_single(out, torch.arange(world * 2, dtype=torch.float32) + 100 * rank,
                           group=group)
    _expect(out, torch.tensor([float(100 * r + 2 * rank + i) for r in range(world)
                               for i in range(2)]), "all_to_all_single")
    out = torch.zeros(3, 4)
    dist.scatter(out, [seq + r for r in range(world)] if rank == 0 else None, src=0, group=group)
    _expect(out, seq + rank, "scatter")
    outs = [torch.zeros(3, 4) for _ in range(world)] if rank == 0 else None
    dist.gather(seq - rank, outs, dst=0, group=group)
    if rank == 0:
        for r in range(world):
            _expect(outs[r], seq - r, "gather %d" % r)
    ts = [torch.ones(10, 10), torch.full((5,), float(rank))]
    dist.all_reduce_coalesced(ts, dist.ReduceOp.SUM, group=group)
    _expect(ts[0], torch.ones(10, 10) * world, "all_reduce_coalesced 0")
    _expect(ts[1], torch.full((5,), float(sum(range(world)))), "all_reduce_coalesced 1")
    if world > 1:
        peer = (rank + 1) % world
        t = seq + rank
        if rank % 2 == 0:
            dist.send(t, peer, group=group)
            dist.recv(t, (rank - 1) % world, group=group)
        else:
            got = torch.zeros(3, 4)
            dist.recv(got, (rank - 1) % world, group=group)
            dist.send(t, peer, group=group)
            t = got
        _expect(t, seq + (rank - 1) % world, "send/recv")
    dist.barrier(group=group)


def _worker(rank, world, how, d, out):
    """One rank of a creation scenario; out[rank] = None, or the traceback of its failure."""
    try:
        import torch.distributed as dist
        import tpu_dist
        init = "file://" + os.path.join(d, "init")
        if how in ("plain", "device"):  # init_process_group("tpu_dist" | "cpu:tpu_dist")
            backend = "tpu_dist" if how == "plain" else "cpu:tpu_dist"
            dist.init_process_group(backend, init_method=init, rank=rank, world_size=world)
            world_pg = dist.group.WORLD
            assert world_pg.name() == "tpu_dist", world_pg.name()
            assert dist.get_backend() == backend, dist.get_backend()
            assert world_pg.rank() == rank and world_pg.size() == world
            b = tpu_dist.backend_of()
            assert b is not None and b.name() == "tpu_dist"
            assert b.options.timeout == datetime.timedelta(minutes=30), b.options.timeout
            assert b.options.group_name == world_pg.group_name
            _collectives(dist, None, rank, world)
        else:  # a gloo default group; tpu_dist groups through new_group with pg_options
            dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
            opts = tpu_dist.Options(datetime.timedelta(seconds=99))
            opts.mode = "strict"
            g = dist.new_group(list(range(world)), backend="tpu_dist", pg_options=opts,
                               timeout=datetime.timedelta(seconds=77))
            assert g.name() == "tpu_dist" and dist.get_backend(g) == "tpu_dist"
            gb = tpu_dist.backend_of(g)
            assert gb.options.timeout == datetime.timedelta(seconds=77), gb.options.timeout
            assert gb.options.mode == "strict", gb.options.mode
            assert gb.options.group_name == g.group_name
            assert list(gb.options.global_ranks_in_group) == list(range(world))
            assert opts.group_name == "" and opts.timeout == datetime.timedelta(seconds=99)
            _collectives(dist, g, rank, world)
            t = torch.arange(8, dtype=torch.float32) * (rank + 1)
            ref = t.clone()
            dist.all_reduce(t, group=g)
            dist.all_reduce(ref)  # gloo, same bits
            _expect(t, ref, "tpu_dist vs gloo")
            try:
                dist.new_group(list(range(world)), backend="tpu_dist", pg_options={"mode": "x"})
                raise AssertionError("pg_options of a wrong type accepted")
            except TypeError as e:
                assert "pg_options must be a tpu_dist.Options" in str(e), e
            bad = tpu_dist.Options(datetime.timedelta(seconds=5))
            bad.mode = "fast"
            try:
                dist.new_group(list(range(world)), backend="tpu_dist", pg_options=bad)
                raise AssertionError("Options.mode 'fast' accepted")
            except RuntimeError as e:
                assert "Options.mode must be strict, debug or defer, not 'fast'" in str(e), e
            dist.barrier()
        dist.destroy_process_group()
        out[rank] = None
    except BaseException:  # noqa: BLE001  reported by the test
        out[rank] = traceback.format_exc()


@pytest.mark.parametrize("how,world", [("plain", 1), ("plain", 2), ("device", 2),
                                       ("new_group", 2)])
def test_creation(how, world):
    codes, hung, out = harness.run_procs(
        _worker, lambda r, d, o: (r, world, how, d, o), world, limit_s=240)
    assert not hung, "ranks %s still running after 240 s" % hung
    assert codes == [0] * world, "exit codes %s" % codes
    assert sorted(out) == list(range(world)), (codes, out)
    failures = ["rank %d:\n%s" % (r, tb) for r, tb in sorted(out.items()) if tb]
    assert not failures, "\n".join(failures)

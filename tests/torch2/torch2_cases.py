"""Cases for the torch 2.x Backend (run by test_torch2.py through tests/torch/harness.py).

Each is a function(rank, world) run on every rank that raises on a wrong result. Inputs are small
integers, so every result is exact and is compared bit for bit (against a local reference, and
against gloo on the same ranks where the case says so).
"""
import datetime

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import tpu_dist

CPU = torch.device("cpu")


def expect_equal(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError("%s: got %s want %s" % (what, got.flatten()[:8].tolist(),
                                                      want.flatten()[:8].tolist()))


def case_name_and_options(rank, world):
    b = tpu_dist.backend_of()
    assert b.name() == "tpu_dist", b.name()
    assert dist.group.WORLD.name() == "tpu_dist", dist.group.WORLD.name()  # DDP logs this name
    assert dist.get_backend() == "tpu_dist"
    assert b.options.backend == "tpu_dist"
    assert b.options.timeout == datetime.timedelta(minutes=30), b.options.timeout  # torch default
    assert b.options.group_name == dist.group.WORLD.group_name, (b.options.group_name,)
    assert b.supports_splitting and b.supports_coalescing
    g = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=45))
    gb = tpu_dist.backend_of(g)
    assert gb.options.timeout == datetime.timedelta(seconds=45), gb.options.timeout
    assert gb.options.group_name == g.group_name
    assert list(gb.options.global_ranks_in_group) == list(range(world))


def case_split(rank, world):
    """split_group halves: exact all_reduce in each; no store operation; new_group for
    comparison costs one store operation per rank (O(1), not O(size))."""
    h = world // 2
    splits = [list(range(h)), list(range(h, world))]
    for fn in (tpu_dist.split_group, dist.split_group):
        g = fn(split_ranks=splits)
        mine = splits[0] if rank < h else splits[1]
        assert g.size() == len(mine) and g.rank() == mine.index(rank), (g.size(), g.rank())
        assert tpu_dist.backend_of(g)._store_ops() == 0
        t = torch.full((1000,), float(rank + 1))
        dist.all_reduce(t, group=g)
        expect_equal(t, torch.full((1000,), float(sum(r + 1 for r in mine))), "split all_reduce")
        assert dist.get_process_group_ranks(g) == mine
    # Ranks in no split get None (they take part in the split as no-color).
    g = tpu_dist.split_group(split_ranks=[[0, 1]])
    assert (g is None) == (rank > 1)
    if g is not None:
        t = torch.full((10,), float(rank))
        dist.all_reduce(t, group=g)
        expect_equal(t, torch.full((10,), 1.0), "partial split")
    ng = dist.new_group(list(range(world)))
    ops = torch.tensor([tpu_dist.backend_of(ng)._store_ops()])
    allops = [torch.zeros(1, dtype=torch.long) for _ in range(world)]
    dist.all_gather(allops, ops)
    assert all(int(x) == 1 for x in allops), allops


def case_coalescing(rank, world):
    """_coalescing_manager: the fast path (allreduce_coalesced, *_tensor_coalesced) and the
    startCoalescing/endCoalescing path; mixed dtypes in one batch."""
    a = torch.full((5,), rank + 1, dtype=torch.int32)
    b = torch.full((3, 4), float(rank + 1), dtype=torch.float64)
    c = torch.full((7,), float(rank + 1), dtype=torch.bfloat16)
    with dist._coalescing_manager(device=CPU):
        for t in (a, b, c):
            dist.all_reduce(t)
    s = world * (world + 1) // 2
    expect_equal(a, torch.full((5,), s, dtype=torch.int32), "coalesced int32")
    expect_equal(b, torch.full((3, 4), float(s), dtype=torch.float64), "coalesced float64")
    expect_equal(c, torch.full((7,), float(s), dtype=torch.bfloat16), "coalesced bf16")
    ins = [torch.full((4,), float(rank * 10 + k)) for k in range(3)]
    outs = [torch.empty(4 * world) for _ in range(3)]
    with dist._coalescing_manager(device=CPU, async_ops=True) as cm:
        for o, i in zip(outs, ins):
            dist.all_gather_into_tensor(o, i)
    cm.wait()
    for k in range(3):
        want = torch.cat([torch.full((4,), float(r * 10 + k)) for r in range(world)])
        expect_equal(outs[k], want, "coalesced all_gather_into_tensor %d" % k)
    ins = [torch.arange(world * 3, dtype=torch.float32) * (rank + 1) + k for k in range(2)]
    outs = [torch.empty(3) for _ in range(2)]
    with dist._coalescing_manager(device=CPU):
        for o, i in zip(outs, ins):
            dist.reduce_scatter_tensor(o, i)
    for k in range(2):
        full = sum(torch.arange(world * 3, dtype=torch.float32) * (r + 1) + k for r in range(world))
        expect_equal(outs[k], full[rank * 3:(rank + 1) * 3], "coalesced reduce_scatter %d" % k)
    # Point to point in one batch: a ring exchange of 4 MiB messages, both directions.
    n = 1 << 20
    right, left = (rank + 1) % world, (rank - 1) % world
    send_r, send_l = torch.full((n,), float(rank)), torch.full((n,), float(-rank))
    from_l, from_r = torch.empty(n), torch.empty(n)
    with dist._coalescing_manager(device=CPU):
        dist.isend(send_r, right)
        dist.isend(send_l, left)
        dist.irecv(from_l, left)
        dist.irecv(from_r, right)
    expect_equal(from_l, torch.full((n,), float(left)), "coalesced ring from left")
    expect_equal(from_r, torch.full((n,), float(-right)), "coalesced ring from right")


def case_sequence_futures(rank, world):
    b = tpu_dist.backend_of()
    s0 = b._get_sequence_number_for_group()
    works = [dist.all_reduce(torch.ones(3), async_op=True), dist.barrier(async_op=True),
             dist.broadcast(torch.ones(2), 0, async_op=True)]
    for w in works:
        w.get_future().wait()
        assert w.is_completed()
    s1 = b._get_sequence_number_for_group()
    assert s1 == s0 + 3, (s0, s1)
    assert dist.group.WORLD._get_sequence_number_for_group() == s1
    seqs = [torch.zeros(1, dtype=torch.long) for _ in range(world)]
    dist.all_gather(seqs, torch.tensor([s1]))
    assert all(int(x) == s1 for x in seqs), seqs  # in step on every rank
    # p2p Works have futures too; recv without a source reports who sent.
    t = torch.empty(4)
    if rank == 0:
        got = set()
        for _ in range(world - 1):
            w = dist.irecv(t)
            w.get_future().wait()
            got.add(w._source_rank())
            assert int(t[0]) == w._source_rank() and bool((t == t[0]).all())
        assert got == set(range(1, world)), got
    else:
        w = dist.isend(torch.full((4,), float(rank)), 0)
        w.get_future().wait()
    dist.barrier()
    dist.barrier(device_ids=[0])  # device ids mean nothing on CPU: the same barrier


def case_functional(rank, world):
    """Functional collectives on tpu_dist equal gloo's on the same ranks, bit for bit."""
    gloo = dist.new_group(list(range(world)), backend="gloo")
    x = torch.arange(world * 6, dtype=torch.float32).reshape(world * 2, 3) * (rank + 1) + rank
    y = torch.arange(world * (world + 1) // 2 * 2, dtype=torch.float32).reshape(-1, 2) + 100 * rank
    for name, fn in [
        ("all_reduce", lambda g: funcol.all_reduce(x, "sum", g)),
        ("all_reduce_max", lambda g: funcol.all_reduce(x, "max", g)),
        ("all_gather_tensor", lambda g: funcol.all_gather_tensor(x, 0, g)),
        ("reduce_scatter_tensor", lambda g: funcol.reduce_scatter_tensor(x, "sum", 0, g)),
        ("all_to_all_single", lambda g: funcol.all_to_all_single(x, None, None, g)),
        ("all_to_all_single_uneven", lambda g: funcol.all_to_all_single(
            y, [rank + 1] * world, [p + 1 for p in range(world)], g)),
    ]:
        ours = funcol.wait_tensor(fn(dist.group.WORLD))
        ref = funcol.wait_tensor(fn(gloo))
        expect_equal(ours, ref, "functional %s vs gloo" % name)
    want = sum(torch.arange(world * 6, dtype=torch.float32).reshape(world * 2, 3) * (r + 1) + r
               for r in range(world))
    expect_equal(funcol.wait_tensor(funcol.all_reduce(x, "sum", dist.group.WORLD)), want,
                 "functional all_reduce exact")


def cases(world):
    return [("name_and_options", case_name_and_options), ("split", case_split),
            ("coalescing", case_coalescing), ("sequence_futures", case_sequence_futures),
            ("functional", case_functional)]

"""Cases for the tpu_dist torch backend, checked exactly against a local reference.

Every rank regenerates every rank's input (seeded by rank and case), so the reference is computed
locally without trusting any collective. Floating-point inputs are small integers (or products of
+-1, +-2), so sums and products are exact in every dtype and the result does not depend on the
reduction order: any difference is a real bug.
"""
import datetime
import time

import torch
import torch.distributed as dist

R = dist.ReduceOp
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
ALL = FLOATS + INTS + [torch.bool, torch.complex64]


def opname(op):
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        if op == getattr(R, name):
            return name.lower()
    raise ValueError(op)


def gen(rank, dtype, n, salt, small=False):
    """Deterministic input of rank `rank` for one case."""
    g = torch.Generator().manual_seed(1000003 * (rank + 1) + salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype == torch.complex64:
        return torch.complex(torch.randint(-8, 9, (n,), generator=g).float(),
                             torch.randint(-8, 9, (n,), generator=g).float())
    lo, hi = (-10, 11) if small else (-100, 101)
    if dtype == torch.uint8:
        lo, hi = (0, 21) if small else (0, 256)
    return torch.randint(lo, hi, (n,), generator=g).to(dtype)


def gen_prod(rank, dtype, n, salt):
    g = torch.Generator().manual_seed(7 * (rank + 1) + salt)
    v = torch.tensor([-2, -1, 1, 2])[torch.randint(0, 4, (n,), generator=g)]
    if dtype == torch.uint8:
        v = v.abs()
    if dtype == torch.bool:
        return v > 0
    return v.to(dtype)


def reference(inputs, op, dtype, world):
    """Exact reduction of the inputs of every rank, in the semantics of tpu_dist."""
    if dtype == torch.bool:
        st = torch.stack([x.to(torch.int64) for x in inputs])
        if op in (R.SUM, R.MAX):
            return st.max(0).values.bool()
        return st.min(0).values.bool()
    if dtype == torch.complex64:
        st = torch.stack([torch.view_as_real(x).double() for x in inputs])
        s = st.sum(0)
        if op == R.AVG:
            s = s / world
        return torch.view_as_complex(s.float().contiguous())
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    st = torch.stack([x.to(wide) for x in inputs])
    if op == R.SUM:
        out = st.sum(0)
    elif op == R.PRODUCT:
        out = st.prod(0)
    elif op == R.MAX:
        out = st.max(0).values
    elif op == R.MIN:
        out = st.min(0).values
    else:  # AVG: exact sum, divided in the dtype's arithmetic
        s = st.sum(0)
        if dtype.is_floating_point:
            base = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
            return (s.to(base) / world).to(dtype)
        return torch.div(s, world, rounding_mode="trunc").to(dtype)
    return out.to(dtype)


def expect_equal(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        bad = (got != want).nonzero()[:5].flatten().tolist() if got.shape == want.shape else []
        raise AssertionError("%s: mismatch (dtype %s/%s, shape %s/%s, first bad %s)" %
                             (what, got.dtype, want.dtype, tuple(got.shape), tuple(want.shape),
                              bad))


def ops_for(dtype):
    if dtype == torch.bool:
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX]
    if dtype == torch.complex64:
        return [R.SUM, R.AVG]
    return [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX]


def case_allreduce(dtype, op, n, group=None, noncontig=False):
    def run(rank, world):
        ranks = grp_ranks(group, world)
        if rank not in ranks:
            return
        salt = sum(map(ord, str(dtype) + opname(op))) * 1000 + n
        mk = (lambda r: gen_prod(r, dtype, n, salt)) if op == R.PRODUCT else (
            lambda r: gen(r, dtype, n, salt, small=(op == R.AVG)))
        inputs = [mk(r) for r in ranks]
        want = reference(inputs, op, dtype, len(ranks))
        mine = inputs[ranks.index(rank)]
        if noncontig:
            base = torch.zeros(n, 2, dtype=dtype)
            base[:, 0] = mine
            t = base[:, 0]
            assert not t.is_contiguous()
        else:
            t = mine.clone()
        dist.all_reduce(t, op=op, group=pg(group))
        expect_equal(t.clone(), want, "all_reduce %s %s n=%d" % (dtype, opname(op), n))
    return run


def make_groups(world):
    """Halves and odd/even groups (torch orders group ranks by global rank), created on every
    rank in the same order. Each is (process group or non-member marker, member ranks)."""
    out = []
    for ranks in ([list(range(world // 2)), list(range(world // 2, world)),
                   list(range(0, world, 2)), list(range(1, world, 2))]):
        out.append((dist.new_group(ranks), ranks))
    return out


def grp_ranks(group, world):
    return list(range(world)) if group is None else group[1]


def pg(group):
    return None if group is None else group[0]


def case_broadcast(dtype, root_idx, n, group=None):
    def run(rank, world):
        ranks = grp_ranks(group, world)
        if rank not in ranks:
            return
        root = ranks[root_idx % len(ranks)]
        want = gen(root, dtype, n, 11)
        t = want.clone() if rank == root else torch.zeros(n, dtype=dtype)
        dist.broadcast(t, src=root, group=pg(group))
        expect_equal(t, want, "broadcast %s root %d" % (dtype, root))
    return run


def case_reduce(dtype, root_idx, op, n, group=None):
    def run(rank, world):
        ranks = grp_ranks(group, world)
        if rank not in ranks:
            return
        root = ranks[root_idx % len(ranks)]
        inputs = [gen(r, dtype, n, 12, small=True) for r in ranks]
        t = inputs[ranks.index(rank)].clone()
        dist.reduce(t, dst=root, op=op, group=pg(group))
        if rank == root:
            expect_equal(t, reference(inputs, op, dtype, len(ranks)), "reduce %s" % dtype)
    return run


def case_allgather(dtype, n, group=None):
    def run(rank, world):
        ranks = grp_ranks(group, world)
        if rank not in ranks:
            return
        k = len(ranks)
        inputs = [gen(r, dtype, n, 13) for r in ranks]
        mine = inputs[ranks.index(rank)]
        outs = [torch.zeros(n, dtype=dtype) for _ in range(k)]
        dist.all_gather(outs, mine, group=pg(group))
        for i in range(k):
            expect_equal(outs[i], inputs[i], "all_gather %s slot %d" % (dtype, i))
        if hasattr(dist, "all_gather_into_tensor"):
            flat = torch.zeros(n * k, dtype=dtype)
            dist.all_gather_into_tensor(flat, mine, group=pg(group))
        else:
            flat = torch.zeros(n * k, dtype=dtype)
            dist._all_gather_base(flat, mine, group=pg(group))
        expect_equal(flat, torch.cat(inputs), "_allgather_base %s" % dtype)
    return run


def case_allgather_coalesced(rank, world):
    a = [gen(r, torch.float32, 5, 14) for r in range(world)]
    b = [gen(r, torch.float32, 3, 15) for r in range(world)]
    outs = [[torch.zeros(5), torch.zeros(3)] for _ in range(world)]
    dist.all_gather_coalesced(outs, [a[rank], b[rank]])
    for r in range(world):
        expect_equal(outs[r][0], a[r], "allgather_coalesced a")
        expect_equal(outs[r][1], b[r], "allgather_coalesced b")


def case_allreduce_coalesced(rank, world):
    a = [gen(r, torch.float32, 7, 16) for r in range(world)]
    b = [gen(r, torch.float32, 2, 17) for r in range(world)]
    ta, tb = a[rank].clone(), b[rank].clone()
    dist.all_reduce_coalesced([ta, tb])
    expect_equal(ta, reference(a, R.SUM, torch.float32, world), "allreduce_coalesced a")
    expect_equal(tb, reference(b, R.SUM, torch.float32, world), "allreduce_coalesced b")


def case_gather_scatter(dtype, root):
    def run(rank, world):
        r0 = root % world
        inputs = [gen(r, dtype, 9, 18) for r in range(world)]
        outs = [torch.zeros(9, dtype=dtype) for _ in range(world)] if rank == r0 else None
        dist.gather(inputs[rank], gather_list=outs, dst=r0)
        if rank == r0:
            for r in range(world):
                expect_equal(outs[r], inputs[r], "gather %s" % dtype)
        t = torch.zeros(9, dtype=dtype)
        dist.scatter(t, scatter_list=inputs if rank == r0 else None, src=r0)
        expect_equal(t, inputs[rank], "scatter %s" % dtype)
    return run


def case_reduce_scatter(dtype, op, n, group=None):
    def run(rank, world):
        ranks = grp_ranks(group, world)
        if rank not in ranks:
            return
        k = len(ranks)
        me = ranks.index(rank)
        inputs = [gen(r, dtype, n * k, 19, small=True) for r in ranks]
        full = reference(inputs, op, dtype, k)
        want = full[me * n:(me + 1) * n]
        out = torch.zeros(n, dtype=dtype)
        dist.reduce_scatter(out, list(inputs[me].clone().chunk(k)), op=op, group=pg(group))
        expect_equal(out, want, "reduce_scatter %s %s" % (dtype, opname(op)))
        out2 = torch.zeros(n, dtype=dtype)
        fn = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
        fn(out2, inputs[me].clone(), op=op, group=pg(group))
        expect_equal(out2, want, "_reduce_scatter_base %s %s" % (dtype, opname(op)))
    return run


def splits_matrix(world, salt):
    """splits[s][r] rows sent from s to r, with zeros and one hot receiver."""
    g = torch.Generator().manual_seed(salt)
    m = torch.randint(0, 4, (world, world), generator=g)
    m[:, world - 1] += 9  # a hot receiver
    m[0, :] = 0  # a rank that sends nothing
    return m.tolist()


def case_alltoall_single(uneven, dtype=torch.float32):
    def run(rank, world):
        width = 3
        if uneven:
            m = splits_matrix(world, 20)
            in_splits = m[rank]
            out_splits = [m[s][rank] for s in range(world)]
        else:
            in_splits = out_splits = [2] * world
        def block(s, r):
            return gen(s * 131 + r, dtype, (m[s][r] if uneven else 2) * width, 21).view(-1, width)
        inp = torch.cat([block(rank, r) for r in range(world)]) if sum(in_splits) else \
            torch.zeros(0, width, dtype=dtype)
        want = torch.cat([block(s, rank) for s in range(world)]) if sum(out_splits) else \
            torch.zeros(0, width, dtype=dtype)
        out = torch.zeros(sum(out_splits), width, dtype=dtype)
        if uneven:
            dist.all_to_all_single(out, inp, out_splits, in_splits)
        else:
            dist.all_to_all_single(out, inp)
        expect_equal(out, want, "all_to_all_single uneven=%s" % uneven)
    return run


def case_alltoall_list(rank, world):
    ins = [gen(rank * 17 + r, torch.int32, r + 1, 22) for r in range(world)]
    want = [gen(s * 17 + rank, torch.int32, rank + 1, 22) for s in range(world)]
    outs = [torch.zeros(rank + 1, dtype=torch.int32) for _ in range(world)]
    dist.all_to_all(outs, ins)
    for s in range(world):
        expect_equal(outs[s], want[s], "all_to_all list from %d" % s)


def case_send_recv(rank, world):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    t = gen(rank, torch.float64, 33, 23)
    got = torch.zeros(33, dtype=torch.float64)
    if rank % 2 == 0:
        dist.send(t, nxt)
        dist.recv(got, prv)
    else:
        dist.recv(got, prv)
        dist.send(t, nxt)
    expect_equal(got, gen(prv, torch.float64, 33, 23), "send/recv ring")
    # any source: rank 0 receives from everyone else
    if rank == 0:
        seen = set()
        for _ in range(world - 1):
            buf = torch.zeros(4, dtype=torch.int64)
            src = dist.recv(buf)
            expect_equal(buf, torch.full((4,), src, dtype=torch.int64), "recv any source")
            seen.add(src)
        assert seen == set(range(1, world)), seen
    else:
        dist.send(torch.full((4,), rank, dtype=torch.int64), 0)


def case_async(rank, world):
    ts = [gen(rank, torch.float32, 1000 + i, 24 + i).clone() for i in range(6)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for w in reversed(works):
        w.wait()
    for i, t in enumerate(ts):
        expect_equal(t, reference([gen(r, torch.float32, 1000 + i, 24 + i) for r in range(world)],
                                  R.SUM, torch.float32, world), "async %d" % i)
    t = gen(rank, torch.float32, 64, 40).clone()
    fut = dist.all_reduce(t, async_op=True).get_future()
    res = fut.wait()
    expect_equal(res[0], reference([gen(r, torch.float32, 64, 40) for r in range(world)], R.SUM,
                                   torch.float32, world), "future")


def case_unclaimed(rank, world):
    """An isend that nobody waits for, asks about or queues behind still runs (the group's worker
    starts it after a period even while blocking calls keep the worker from being woken): rank 1's
    blocking recv completes and says so through the store, which rank 0 watches without touching
    the group."""
    for _ in range(5):  # blocking calls: the worker is left hot (not woken at an issue)
        dist.all_reduce(torch.ones(4))
    store = dist.distributed_c10d._get_default_store()
    if rank == 0:
        base = store.add("unclaimed", 0)
        t = torch.arange(16, dtype=torch.int32)
        w = dist.isend(t, 1)
        deadline = time.monotonic() + 60
        while store.add("unclaimed", 0) == base:
            assert time.monotonic() < deadline, "an isend nobody waited for never ran"
            time.sleep(0.01)
        w.wait()
    elif rank == 1:
        got = torch.zeros(16, dtype=torch.int32)
        dist.recv(got, 0)
        expect_equal(got, torch.arange(16, dtype=torch.int32), "unclaimed isend")
        store.add("unclaimed", 1)
    dist.barrier()


def case_barrier(rank, world):
    dist.barrier()


def case_sparse_rejected(rank, world):
    """A sparse tensor gets a clear error on every rank (gloo sums sparse COO tensors; tpu_dist
    moves dense buffers only) and the group goes on working. all_reduce reaches the backend on
    every torch; torch 2.x's dispatcher refuses a sparse broadcast or all_gather itself."""
    ours = "only dense tensors are supported, got a Sparse tensor"
    sp = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([1.0, 2.0]), (4,))
    calls = [("all_reduce", lambda: dist.all_reduce(sp), (ours,)),
             ("broadcast", lambda: dist.broadcast(sp, 0), (ours, "'SparseCPU' backend")),
             ("all_gather", lambda: dist.all_gather([sp.clone() for _ in range(world)],
                                                    torch.zeros(4)), (ours, "'SparseCPU' backend"))]
    for name, call, allowed in calls:
        try:
            call()
        except (RuntimeError, NotImplementedError) as e:
            assert any(a in str(e) for a in allowed), (name, str(e)[:300])
        else:
            raise AssertionError("%s of a sparse tensor did not fail" % name)
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t)
    expect_equal(t, torch.full((5,), float(world * (world + 1) // 2)), "all_reduce after")


def case_timeout(rank, world):
    """An op whose peers never join raises a timeout within the timeout, not a hang."""
    g = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=2))
    if rank == 0:
        t = torch.ones(4)
        t0 = time.monotonic()
        try:
            dist.all_reduce(t, group=g)
        except RuntimeError as e:
            took = time.monotonic() - t0
            # promptness contract: the error within the 2 s timeout (4 s margin for a loaded machine)
            assert took < 6.0, "timeout took %.1f s" % took
            assert "allreduce" in str(e) and "rank 0" in str(e), str(e)
        else:
            raise AssertionError("all_reduce with absent peers did not fail")
    time.sleep(4.0 if rank != 0 else 0.5)


def cases(world):
    out = []
    for dtype in ALL:
        for op in ops_for(dtype):
            out.append(("allreduce-%s-%s" % (dtype, opname(op)), case_allreduce(dtype, op, 1000)))
    out.append(("allreduce-noncontig", case_allreduce(torch.float32, R.SUM, 100, noncontig=True)))
    for dtype in ALL:
        out.append(("broadcast-%s" % dtype, case_broadcast(dtype, -1, 257)))
        out.append(("allgather-%s" % dtype, case_allgather(dtype, 31)))
    for root in (0, world - 1):
        out.append(("reduce-root%d" % root, case_reduce(torch.int32, root, R.SUM, 77)))
        out.append(("gather-scatter-root%d" % root, case_gather_scatter(torch.bfloat16, root)))
    for dtype in FLOATS + INTS:
        out.append(("reducescatter-%s" % dtype, case_reduce_scatter(dtype, R.SUM, 13)))
    out.append(("reducescatter-max", case_reduce_scatter(torch.float32, R.MAX, 5)))
    out.append(("allgather-coalesced", case_allgather_coalesced))
    out.append(("allreduce-coalesced", case_allreduce_coalesced))
    out.append(("alltoall-single-even", case_alltoall_single(False)))
    out.append(("alltoall-single-uneven", case_alltoall_single(True)))
    out.append(("alltoall-single-uneven-bf16", case_alltoall_single(True, torch.bfloat16)))
    out.append(("alltoall-list", case_alltoall_list))
    out.append(("send-recv", case_send_recv))
    out.append(("async", case_async))
    out.append(("unclaimed", case_unclaimed))
    out.append(("barrier", case_barrier))
    out.append(("sparse-rejected", case_sparse_rejected))
    groups = make_groups(world)
    for gi, g in enumerate(groups):
        out.append(("group%d-allreduce" % gi, case_allreduce(torch.float32, R.SUM, 100, g)))
        out.append(("group%d-allreduce-bf16-avg" % gi, case_allreduce(torch.bfloat16, R.AVG, 64, g)))
        out.append(("group%d-broadcast" % gi, case_broadcast(torch.int64, -1, 50, g)))
        out.append(("group%d-allgather" % gi, case_allgather(torch.float16, 7, g)))
        out.append(("group%d-reducescatter" % gi, case_reduce_scatter(torch.int32, R.SUM, 3, g)))
        out.append(("group%d-reduce" % gi, case_reduce(torch.float64, 0, R.MAX, 9, g)))
    out.append(("timeout", case_timeout))
    return out

"""Cases for TPU_DIST_MODE=defer (tests/torch/test_defer.py): many async all_reduce calls, which
the plugin's worker issues non-blocking so the library fuses them, give the same bits as the same
calls made blocking (each alone), for every float and integer dtype and op; waited out of order;
with a blocking collective and a non-reducing one in between. flush_cases: run with
TPU_DIST_DEFER_US far above their deadline, so only a flush point completes deferred Works."""
import time

import torch
import torch.distributed as dist

R = dist.ReduceOp
SIZES = [1, 7, 100, 1000, 3000, 0, 5]


def _inputs(rank, dtype, salt):
    g = torch.Generator().manual_seed(1000 * salt + rank)
    out = []
    for n in SIZES:
        if dtype.is_floating_point:
            out.append((torch.randn(n, generator=g, dtype=torch.float64) * 100).to(dtype))
        else:
            out.append(torch.randint(-50, 50, (n,), generator=g, dtype=torch.int64).to(dtype))
    return out


def case_fused_like_blocking(rank, world):
    salt = 0
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32,
                  torch.int64):
        for op in (R.SUM, R.MAX, R.PRODUCT):
            salt += 1
            blocking = _inputs(rank, dtype, salt)
            for t in blocking:
                dist.all_reduce(t, op=op)
            asyncs = _inputs(rank, dtype, salt)
            works = [dist.all_reduce(t, op=op, async_op=True) for t in asyncs]
            for w in reversed(works):
                w.wait()
            for i, (a, b) in enumerate(zip(asyncs, blocking)):
                if not torch.equal(a.view(-1).view(torch.uint8) if a.numel() else a,
                                   b.view(-1).view(torch.uint8) if b.numel() else b):
                    raise AssertionError("%s %s size %d: async (deferred) differs from blocking"
                                         % (dtype, op, SIZES[i]))


def case_mixed_queue(rank, world):
    ts = [torch.full((64 * (i + 1),), float(rank + i)) for i in range(10)]
    works = [dist.all_reduce(t, async_op=True) for t in ts[:5]]
    b = torch.full((16,), float(rank))
    works.append(dist.broadcast(b, src=world - 1, async_op=True))
    works += [dist.all_reduce(t, async_op=True) for t in ts[5:]]
    s = torch.ones(3)
    dist.all_reduce(s)  # blocking: a flush point between deferred calls
    for w in works:
        w.wait()
    base = world * (world - 1) / 2
    for i, t in enumerate(ts):
        if not bool((t == base + world * i).all()):
            raise AssertionError("all_reduce %d: %s" % (i, t[:4]))
    if not bool((b == world - 1).all()) or not bool((s == world).all()):
        raise AssertionError("broadcast or blocking all_reduce wrong")


def case_complete_at_flush(rank, world):
    """Deferred all-reduces complete at the next flush point (an async broadcast), with no wait:
    neither the library's timer nor the group's can have fired (TPU_DIST_DEFER_US is 60 s)."""
    ts = [torch.full((100 * (i + 1),), float(rank + i)) for i in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    b = torch.full((8,), float(rank))
    works.append(dist.broadcast(b, src=world - 1, async_op=True))
    deadline = time.monotonic() + 10
    while not all(w.is_completed() for w in works):
        if time.monotonic() > deadline:
            raise AssertionError("not completed 10 s after the flush point: %s"
                                 % [w.is_completed() for w in works])
        time.sleep(0.005)
    if not all(w.get_future().done() for w in works):
        raise AssertionError("a Work completed before its Future")
    base = world * (world - 1) / 2
    for i, t in enumerate(ts):
        if not bool((t == base + world * i).all()):
            raise AssertionError("all_reduce %d: %s" % (i, t[:4]))
    if not bool((b == world - 1).all()):
        raise AssertionError("broadcast: %s" % b)
    for w in works:
        w.wait()  # done already: returns at once


def flush_cases(world):
    return [("complete_at_flush", case_complete_at_flush)]


def cases(world):
    return [("fused_like_blocking", case_fused_like_blocking), ("mixed_queue", case_mixed_queue)]

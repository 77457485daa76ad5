"""FSDP2, DTensor and tensor parallel on CPU over tpu_dist (torch 2.6 and later), run at 4 ranks by
tests/torch2/test_fsdp2.py through tests/torch/harness.py. Each case raises on a wrong result.

- The reductions FSDP2 issues: AVG and PREMUL_SUM on reduce_scatter_tensor and all_reduce, for
  fp32, bf16 and fp16, bit-exact against the arithmetic (values chosen so that every partial sum
  is exact, so the reduction order cannot matter).
- fully_shard on a 1-D mesh and on a 2-D (HSDP) mesh trains to the parameters of a one-process
  reference within fp32 tolerance (where torch's FSDP2 runs on CPU: not 2.6).
- parallelize_module with column- and row-wise parallel layers on a 2-D mesh gives the
  reference's outputs and parameters.
- DTensor redistribution across every placement (Shard(0), Shard(1), Replicate, Partial) on 1-D
  and 2-D meshes keeps the global tensor.
"""
import torch
import torch.distributed as dist

STEPS = 4
TOL = 1e-5
# fully_shard runs on CPU where torch's CPU stream records events (not torch 2.6, whose FSDP2
# fails on CPU with "'Stream' object has no attribute 'record_event'")
FSDP2_ON_CPU = hasattr(torch.cpu.Stream, "record_event")


def _mesh(shape, names=None):
    from torch.distributed.device_mesh import init_device_mesh
    return init_device_mesh("cpu", shape, mesh_dim_names=names)


def _inputs(rank, n, dtype):
    """Small integers (0..9) that differ per rank: sums of four are exact in bf16 and fp16."""
    return ((torch.arange(n) % 7) + rank).to(dtype)


def _expect_sum(world, n, dtype, factor):
    """sum over ranks of (x_r * factor rounded to dtype), each term and the sum exact."""
    terms = [(_inputs(r, n, dtype) * factor).to(torch.float64) for r in range(world)]
    return sum(terms)


def _check_equal(got, want, what):
    if not torch.equal(got, want):
        bad = (got != want).nonzero()[:4].flatten().tolist()
        raise AssertionError("%s: differs at %s: got %s want %s" %
                             (what, bad, got.flatten()[bad].tolist(), want.flatten()[bad].tolist()))


def _reduction_case(dtype, opname, coll):
    def case(rank, world):
        n = 8 * world
        if opname == "avg":
            op, factor = dist.ReduceOp.AVG, 1.0
        else:
            op, factor = dist._make_nccl_premul_sum(0.375), 0.375
        total = _expect_sum(world, n, dtype, factor)
        # AVG: the exact sum divided once in float32 (as the library's float kernels and torch's
        # half-precision division do), rounded to the dtype.
        want = ((total.to(torch.float32) / world) if opname == "avg" else total).to(dtype)
        x = _inputs(rank, n, dtype)
        if coll == "all_reduce":
            dist.all_reduce(x, op=op)
            _check_equal(x, want, "%s all_reduce %s" % (opname, dtype))
        else:
            out = torch.empty(n // world, dtype=dtype)
            dist.reduce_scatter_tensor(out, x, op=op)
            _check_equal(out, want.view(world, -1)[rank], "%s reduce_scatter %s" % (opname, dtype))
    return case


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _data(step, world):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(4 * world, 16, generator=g), torch.randn(4 * world, 8, generator=g)


def _reference(world):
    """The one-process run: the whole batch, plain SGD; returns the final parameters."""
    torch.manual_seed(0)
    model = _Mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = _data(step, world)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    return {k: v.detach() for k, v in model.state_dict().items()}


def _check_params(model, ref, what):
    for k, v in model.state_dict().items():
        full = v.full_tensor() if hasattr(v, "full_tensor") else v
        err = (full - ref[k]).abs().max().item()
        if err > TOL:
            raise AssertionError("%s: %s differs from the reference by %g" % (what, k, err))


def _fsdp_case(hsdp):
    def case(rank, world):
        from torch.distributed.fsdp import fully_shard
        mesh = _mesh((2, world // 2), ("replicate", "shard")) if hsdp else _mesh((world,))
        torch.manual_seed(0)
        model = _Mlp()
        fully_shard(model.fc1, mesh=mesh)
        fully_shard(model.fc2, mesh=mesh)
        fully_shard(model, mesh=mesh)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(STEPS):
            x, y = _data(step, world)
            sl = slice(4 * rank, 4 * rank + 4)  # this rank's quarter of the batch
            torch.nn.functional.mse_loss(model(x[sl]), y[sl]).backward()
            opt.step()
            opt.zero_grad()
        _check_params(model, _reference(world), "HSDP" if hsdp else "FSDP2")
    return case


def _tp_case(rank, world):
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    mesh = _mesh((2, world // 2), ("dp", "tp"))
    torch.manual_seed(0)
    model = _Mlp()
    parallelize_module(model, mesh["tp"], {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = _data(step, world)  # every rank the whole batch: tensor parallel only
        out = model(x)
        out = out.full_tensor() if hasattr(out, "full_tensor") else out
        torch.nn.functional.mse_loss(out, y).backward()
        opt.step()
        opt.zero_grad()
    _check_params(model, _reference(world), "tensor parallel")


def _placements(two_d):
    """A walk through Shard(0), Shard(1) and Replicate on each mesh dimension (every change of
    one placement into another at least once), and the targets a Partial tensor goes to."""
    from torch.distributed.tensor import Replicate, Shard
    S0, S1, R = Shard(0), Shard(1), Replicate()
    if not two_d:
        return [[S0], [S1], [R], [S0], [R], [S1], [S0]], [[S0], [S1], [R]]
    walk = [[S0, S1], [R, S0], [S1, R], [R, R], [S0, S1], [S1, S0], [R, S0], [S0, S1], [S0, R],
            [R, S1]]
    return walk, [[S0, S1], [R, R], [R, S0], [S1, R]]


def _redistribute_case(two_d):
    def case(rank, world):
        from torch.distributed.tensor import DTensor, Partial, distribute_tensor
        mesh = _mesh((2, world // 2)) if two_d else _mesh((world,))
        g = torch.arange(8 * 12, dtype=torch.float32).view(8, 12)
        walk, targets = _placements(two_d)
        d = distribute_tensor(g, mesh, walk[0])
        for placements in walk[1:]:
            d = d.redistribute(mesh, placements)
            _check_equal(d.full_tensor(), g, "redistribute to %s" % (placements,))
        # Partial (pending sums): rank 0 holds g, every other rank zeros, so the sum is g
        # exactly; torch makes Partial tensors itself (from_local), then any placement follows.
        partial = [Partial()] * (2 if two_d else 1)
        for placements in targets:
            local = g.clone() if rank == 0 else torch.zeros_like(g)
            p = DTensor.from_local(local, mesh, partial, run_check=False)
            got = p.redistribute(mesh, placements).full_tensor()
            _check_equal(got, g, "Partial redistributed to %s" % (placements,))
    return case


def cases(world):
    out = []
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for opname in ("avg", "premul_sum"):
            for coll in ("reduce_scatter", "all_reduce"):
                out.append(("%s_%s_%s" % (coll, opname, str(dtype).split(".")[1]),
                            _reduction_case(dtype, opname, coll)))
    if FSDP2_ON_CPU:
        out += [("fsdp2_1d", _fsdp_case(False)), ("hsdp_2d", _fsdp_case(True))]
    out += [("tensor_parallel_2d", _tp_case), ("redistribute_1d", _redistribute_case(False)),
            ("redistribute_2d", _redistribute_case(True))]
    return out

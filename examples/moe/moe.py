"""Expert-parallel mixture-of-experts layer on torch.distributed (tpu_dist backend).

Each rank holds `experts_per_rank` expert MLPs; the router (replicated) picks the top-k experts
of every token, with a fixed bias that makes low-numbered experts popular (skewed traffic, many
zero splits at small batch sizes). Dispatch: the per-destination token counts are exchanged first
(all_to_all_single on a counts tensor), then the tokens travel with uneven splits; experts run on
what they received; combine sends results back along the reversed splits and sums them weighted
by the router's gates. Both all-to-alls are autograd functions (the backward of one is the other
with splits swapped), so gradients reach the experts, the gates and the inputs.

    /usr/bin/python3 examples/moe/moe.py --world 4 --steps 5
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


class AllToAll(torch.autograd.Function):
    """all_to_all_single with uneven splits, differentiable."""

    @staticmethod
    def forward(ctx, x, out_splits, in_splits, group):
        ctx.splits = (out_splits, in_splits)
        ctx.group = group
        out = x.new_empty((sum(out_splits),) + tuple(x.shape[1:]))
        dist.all_to_all_single(out, x.contiguous(), out_splits, in_splits, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        out_splits, in_splits = ctx.splits
        g = grad.new_empty((sum(in_splits),) + tuple(grad.shape[1:]))
        dist.all_to_all_single(g, grad.contiguous(), in_splits, out_splits, group=ctx.group)
        return g, None, None, None


def make_expert(eid, hidden, ffn):
    torch.manual_seed(1000 + eid)
    return torch.nn.Sequential(torch.nn.Linear(hidden, ffn), torch.nn.GELU(),
                               torch.nn.Linear(ffn, hidden))


def make_router(hidden, n_experts, skew):
    torch.manual_seed(7)
    r = torch.nn.Linear(hidden, n_experts)
    with torch.no_grad():  # popularity skew: expert e's logit biased by -skew*log(e+1)
        r.bias.copy_(-skew * torch.log(torch.arange(1, n_experts + 1, dtype=torch.float32)))
    return r


def route(router, x, topk):
    gates = torch.softmax(router(x), dim=-1)
    w, idx = gates.topk(topk, dim=-1)
    return w / w.sum(dim=-1, keepdim=True), idx


class MoELayer(torch.nn.Module):
    def __init__(self, hidden, ffn, experts_per_rank, topk, skew, group=None):
        super().__init__()
        self.group = group
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.epr = experts_per_rank
        self.topk = topk
        self.router = make_router(hidden, self.world * experts_per_rank, skew)
        first = self.rank * experts_per_rank
        self.experts = torch.nn.ModuleList(
            [make_expert(first + i, hidden, ffn) for i in range(experts_per_rank)])

    def forward(self, x):
        w, idx = route(self.router, x, self.topk)
        tok = torch.arange(x.shape[0]).repeat_interleave(self.topk)
        eid = idx.reshape(-1)
        order = torch.argsort(eid, stable=True)
        tok, eid, gate = tok[order], eid[order], w.reshape(-1)[order]
        dest = eid // self.epr
        send_counts = torch.bincount(dest, minlength=self.world)
        recv_counts = torch.empty_like(send_counts)
        dist.all_to_all_single(recv_counts, send_counts, group=self.group)  # counts first
        out_splits, in_splits = recv_counts.tolist(), send_counts.tolist()
        recv_x = AllToAll.apply(x[tok], out_splits, in_splits, self.group)
        recv_e = torch.empty(sum(out_splits), dtype=torch.int64)
        dist.all_to_all_single(recv_e, (eid % self.epr).contiguous(), out_splits, in_splits,
                               group=self.group)
        # y always depends on recv_x and on this rank's expert parameters, even when no token
        # reached these experts: every rank then runs the same backward all-to-alls.
        y = recv_x * 0 + self.experts[0][0].bias[:1] * 0
        for i, expert in enumerate(self.experts):
            sel = (recv_e == i).nonzero().flatten()
            if sel.numel():
                y = y.index_add(0, sel, expert(recv_x[sel]))
        back = AllToAll.apply(y, in_splits, out_splits, self.group)
        return torch.zeros_like(x).index_add(0, tok, back * gate.unsqueeze(1))


def reference_forward(x, router, experts, topk):
    """The same layer in one process: every expert local."""
    w, idx = route(router, x, topk)
    out = torch.zeros_like(x)
    for k in range(topk):
        for e, expert in enumerate(experts):
            sel = (idx[:, k] == e).nonzero().flatten()
            if sel.numel():
                out = out.index_add(0, sel, expert(x[sel]) * w[sel, k].unsqueeze(1))
    return out


def tokens(rank, step, n, hidden):
    g = torch.Generator().manual_seed(100 * rank + step)
    return torch.randn(n, hidden, generator=g)


def train(layer, steps, n_tokens, hidden, lr=0.05):
    """A few SGD steps on each rank's fixed batch; router grads are summed over ranks (it is
    replicated), expert grads are local. Returns the loss history (mean over ranks)."""
    opt = torch.optim.SGD(layer.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x = tokens(layer.rank, 0, n_tokens, hidden)
        opt.zero_grad()
        loss = (layer(x) - x).pow(2).mean()
        loss.backward()
        for p in layer.router.parameters():
            dist.all_reduce(p.grad, group=layer.group)
        opt.step()
        l = loss.detach().clone()
        dist.all_reduce(l, group=layer.group)
        losses.append(l.item() / layer.world)
    return losses


def _worker(rank, world, steps, init_file):
    import tpu_dist  # noqa: F401
    dist.init_process_group("tpu_dist", init_method="file://" + init_file, rank=rank,
                            world_size=world)
    layer = MoELayer(hidden=16, ffn=32, experts_per_rank=2, topk=2, skew=2.0)
    losses = train(layer, steps, 24, 16)
    if rank == 0:
        for i, l in enumerate(losses):
            print("step %d loss %.6f" % (i, l))
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(_worker, args=(a.world, a.steps, os.path.join(d, "init")), nprocs=a.world)

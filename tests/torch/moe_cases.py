"""MoE layer on tpu_dist against the single-process reference of the same layer: outputs, input
gradients, expert and router gradients, then a few training steps."""
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "moe"))
import moe  # noqa: E402

H, F, EPR, K, SKEW, N = 16, 32, 2, 2, 2.0, 24


def close(a, b, what, tol=1e-5):
    if a.shape != b.shape or not torch.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError("%s differs: max abs err %s" % (
            what, (a - b).abs().max().item() if a.shape == b.shape else (a.shape, b.shape)))


def case_forward_backward(rank, world):
    layer = moe.MoELayer(H, F, EPR, K, SKEW)
    xs = [moe.tokens(r, 0, N, H).requires_grad_(True) for r in range(world)]
    out = layer(xs[rank])
    loss = (out - xs[rank].detach()).pow(2).mean()
    loss.backward()
    router_grad = layer.router.weight.grad.clone()
    dist.all_reduce(router_grad)
    # reference: every expert in one process, every rank's tokens
    router = moe.make_router(H, world * EPR, SKEW)
    experts = [moe.make_expert(e, H, F) for e in range(world * EPR)]
    ref_in = [x.detach().clone().requires_grad_(True) for x in xs]
    ref_loss = 0
    for r in range(world):
        ref_out = moe.reference_forward(ref_in[r], router, experts, K)
        if r == rank:
            close(out, ref_out, "output")
        ref_loss = ref_loss + (ref_out - xs[r].detach()).pow(2).mean()
    ref_loss.backward()
    close(xs[rank].grad, ref_in[rank].grad, "input gradient")
    close(router_grad, router.weight.grad, "router gradient")
    for i, expert in enumerate(layer.experts):
        for p, q in zip(expert.parameters(), experts[rank * EPR + i].parameters()):
            # an expert that no token chose has no (or a zero) gradient
            zero = torch.zeros_like(p)
            close(zero if p.grad is None else p.grad, zero if q.grad is None else q.grad,
                  "expert %d gradient" % (rank * EPR + i))
    counts = torch.bincount(moe.route(router, torch.cat([x.detach() for x in xs]), K)[1].flatten(),
                            minlength=world * EPR)
    assert counts[0] >= counts.max(), "expert 0 should be the hot one: %s" % counts.tolist()


def case_training(rank, world):
    layer = moe.MoELayer(H, F, EPR, K, SKEW)
    losses = moe.train(layer, 4, N, H)
    assert all(l == l for l in losses) and losses[-1] < losses[0], losses


def cases(world):
    return [("moe-forward-backward", case_forward_backward), ("moe-training", case_training)]

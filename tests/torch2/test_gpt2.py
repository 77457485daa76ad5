"""A real client: a transformers GPT-2 (built from a small config with random weights; nothing is
downloaded) trained 20 steps on 4 ranks with DDP and with FSDP2 (fully_shard on a CPU mesh), on
tpu_dist and on gloo; the per-step losses agree within 1e-5 relative and every rank exits 0. The
time per step of both backends is printed (pytest -s shows it; never asserted). Runs where
transformers is installed (the torch 2.14 root)."""
import os
import sys
import time

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
import harness  # noqa: E402

transformers = pytest.importorskip("transformers")
_V = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
pytestmark = pytest.mark.skipif(_V < (2, 6), reason="fully_shard on a CPU mesh: torch 2.6+")

WORLD = 4
STEPS = 20
REL = 1e-5


def _model():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(0)
    return GPT2LMHeadModel(cfg)


def _batch(step, rank):
    g = torch.Generator().manual_seed(10_000 * step + rank)
    return torch.randint(0, 256, (2, 32), generator=g)


def _rank(rank, backend, mode, init_file, out):
    os.environ.setdefault("TPU_DIST_TIMEOUT_MS", "120000")
    torch.set_num_threads(1)
    import torch.distributed as dist
    if backend == "tpu_dist":
        import tpu_dist  # noqa: F401
    dist.init_process_group(backend, init_method="file://" + init_file, rank=rank,
                            world_size=WORLD)
    model = _model()
    if mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (WORLD,))
        for block in model.transformer.h:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, t0 = [], None
    for step in range(STEPS):
        if step == 1:
            t0 = time.monotonic()  # the first step pays for warm-up
        ids = _batch(step, rank)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        avg = loss.detach().clone()
        dist.all_reduce(avg)  # the step's loss over every rank's batch
        losses.append(avg.item() / WORLD)
    per_step = (time.monotonic() - t0) / (STEPS - 1)
    dist.destroy_process_group()
    out[rank] = (losses, per_step)


def _train(backend, mode):
    codes, hung, out = harness.run_procs(
        _rank, lambda r, d, o: (r, backend, mode, os.path.join(d, "init"), o), WORLD, 480)
    assert not hung, "%s %s: ranks %s still running (a hang)" % (backend, mode, hung)
    assert codes == [0] * WORLD, "%s %s: exit codes %s" % (backend, mode, codes)
    assert sorted(out) == list(range(WORLD)), out
    return out[0][0], max(out[r][1] for r in out)


@pytest.mark.parametrize("mode", ["ddp", "fsdp2"])
def test_gpt2_matches_gloo(mode):
    ours, ours_s = _train("tpu_dist", mode)
    ref, ref_s = _train("gloo", mode)
    print("gpt2 %s, %d ranks: %.1f ms/step on tpu_dist, %.1f ms/step on gloo" %
          (mode, WORLD, ours_s * 1e3, ref_s * 1e3))
    assert len(ours) == STEPS and ours[-1] < ours[0], "the loss did not fall: %s" % ours
    for i, (a, b) in enumerate(zip(ours, ref)):
        assert abs(a - b) <= REL * abs(b), "step %d: tpu_dist %r gloo %r" % (i, a, b)

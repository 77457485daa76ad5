"""Elastic training on tpu_dist: a rank dies mid-epoch, the survivors shrink the group and finish.

    /usr/bin/python3 examples/elastic/train.py                      # 4 ranks, rank 1 dies at step 5
    /usr/bin/python3 examples/elastic/train.py --victim 3 --kill-step 8 --steps 12

Runs the epoch twice and compares:

- elastic: 4 ranks train a small MLP with DDP; at --kill-step the --victim rank SIGKILLs itself
  in the middle of the step (after its forward pass, before its gradients are all-reduced). The
  survivors' backward fails with an error (the library sees the dead peer), they call
  tpu_dist.shrink_group() (tpudistCommShrink: no store, no new rendezvous), agree on the step to
  resume from, rebuild DDP on the new group of 3 and finish the epoch.
- reference: 4 ranks train up to that step and save the model; a fresh job of 3 ranks loads it and
  trains the rest of the epoch.

The data make both well defined: step s has one global batch of GLOBAL_BATCH samples (seeded by s
alone), split in equal contiguous slices over the live ranks; DDP averages the gradients over
them, so each update is the gradient of the mean loss over the global batch whatever the number
of ranks. The resumed steps run the same arithmetic in both (same slices, same 3-member
communicator renumbered in old-rank order, same algorithms), so losses and parameters are equal
bit for bit.

A survivor that completed one step more than another when the rank died (the failure can reach
the ranks in different collectives) rolls back: every rank keeps the parameters from the start
of its last two steps and the survivors resume from the smallest step any of them was in
(an all_reduce MIN on the new group).
"""
import argparse
import datetime
import multiprocessing
import os
import signal
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

GLOBAL_BATCH = 48  # divisible by 4 and by 3: equal slices before and after the failure
LR = 0.05


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))


def global_batch(step):
    g = torch.Generator().manual_seed(7919 + step)
    x = torch.randn(GLOBAL_BATCH, 32, generator=g)
    y = x.sum(dim=1, keepdim=True).sin()
    return x, y


def my_slice(step, index, n):
    x, y = global_batch(step)
    k = GLOBAL_BATCH // n
    return x[index * k:(index + 1) * k], y[index * k:(index + 1) * k]


def snapshot(model):
    return [p.detach().clone() for p in model.parameters()]


def restored(snap):
    """A fresh module holding snap's parameters: its parameters carry no hook of an old DDP."""
    model = make_model()
    with torch.no_grad():
        for p, s in zip(model.parameters(), snap):
            p.copy_(s)
    return model


def one_step(ddp, opt, step, group, victim_dies=False):
    """One training step on the live ranks of group; returns the mean loss over them."""
    n, me = dist.get_world_size(group), dist.get_rank(group)
    x, y = my_slice(step, me, n)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(ddp(x), y)
    if victim_dies:
        return None
    loss.backward()  # DDP all-reduces the gradients over group here
    opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean, group=group)
    return (mean / n).item()


def worker(rank, world, init_file, cfg, out):
    import tpu_dist

    timeout = datetime.timedelta(seconds=cfg["timeout_s"])
    dist.init_process_group("tpu_dist", init_method="file://" + init_file, rank=rank,
                            world_size=world, timeout=timeout)
    start = 0
    model = make_model()
    if cfg.get("load"):
        state = torch.load(cfg["load"])
        start = state["step"]
        model = restored(state["params"])
    group = None  # the default group until a shrink
    ddp = DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    rec = {"losses": {}, "shrinks": []}
    snaps = {}
    step = start
    while step < cfg["steps"]:
        snaps[step] = snapshot(model)
        snaps.pop(step - 2, None)
        dies = rank == cfg.get("victim") and step == cfg.get("kill_step") and group is None
        failed = None
        try:
            loss = one_step(ddp, opt, step, group, victim_dies=dies)
        except RuntimeError as e:  # the dead rank, reported by tpu_dist
            failed = (time.time(), step, str(e).splitlines()[0][:300])
        if dies:
            out["killed"] = {"rank": rank, "step": step, "t": time.time()}
            os.kill(os.getpid(), signal.SIGKILL)
        if failed is None:
            rec["losses"][step] = loss
            step += 1
            continue
        # Survivors: a new group of the live ranks, without a new rendezvous.
        t_err, at, msg = failed
        del ddp, opt
        t0 = time.monotonic()
        old = group
        group = tpu_dist.shrink_group(old, abort=True)
        shrink_s = time.monotonic() - t0
        # The old group's communicator is no more use: free it now (never waits for the dead
        # rank; a late survivor's agreement then finds this rank's old listener closed at once).
        # The group itself stays registered until destroy_process_group.
        tpu_dist.backend_of(old).shutdown()
        resume = torch.tensor([at], dtype=torch.int64)
        dist.all_reduce(resume, op=dist.ReduceOp.MIN, group=group)
        step = int(resume.item())
        model = restored(snaps[step])
        ddp = DDP(model, process_group=group)
        opt = torch.optim.SGD(ddp.parameters(), lr=LR)
        rec["losses"] = {s: v for s, v in rec["losses"].items() if s < step}
        rec["shrinks"].append({"t_err": t_err, "failed_step": at, "error": msg,
                               "shrink_s": shrink_s, "resume": step,
                               "rank": dist.get_rank(group), "size": dist.get_world_size(group)})
    if cfg.get("save") and dist.get_rank(group) == 0:
        torch.save({"step": step, "params": snapshot(model)}, cfg["save"])
    rec["params"] = [p.detach().reshape(-1).tolist() for p in model.parameters()]
    out[rank] = rec
    dist.destroy_process_group()


def launch(world, cfg, limit_s):
    """Runs worker on world ranks (spawned, meeting through a file); returns {rank: record} and,
    if a rank died, out['killed']. Ranks still running after limit_s are killed: no hang."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as d, ctx.Manager() as m:
        out = m.dict()
        procs = [ctx.Process(target=worker, args=(r, world, os.path.join(d, "init"), cfg, out))
                 for r in range(world)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + limit_s
        for p in procs:
            p.join(max(0.1, deadline - time.monotonic()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        res = dict(out)
        res["exitcodes"] = [p.exitcode for p in procs]
        res["hung"] = hung
        return res


def elastic(steps, kill_step, victim, timeout_s=30, limit_s=120):
    return launch(4, {"steps": steps, "kill_step": kill_step, "victim": victim,
                      "timeout_s": timeout_s}, limit_s)


def reference(steps, resume, timeout_s=30, limit_s=120):
    """4 ranks train steps 0..resume-1 and save; 3 ranks load that and train resume..steps-1."""
    with tempfile.TemporaryDirectory() as d:
        ckpt = os.path.join(d, "ckpt.pt")
        a = launch(4, {"steps": resume, "save": ckpt, "timeout_s": timeout_s}, limit_s)
        b = launch(3, {"steps": steps, "load": ckpt, "timeout_s": timeout_s}, limit_s)
    return a, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--kill-step", type=int, default=5)
    ap.add_argument("--victim", type=int, default=1)
    a = ap.parse_args()
    e = elastic(a.steps, a.kill_step, a.victim)
    survivors = [r for r in range(4) if r != a.victim]
    for r in survivors:
        for s in e[r]["shrinks"]:
            print("rank %d: error %.3f s after the kill; shrink %.3f s; now rank %d of %d, "
                  "resuming at step %d" % (r, s["t_err"] - e["killed"]["t"], s["shrink_s"],
                                           s["rank"], s["size"], s["resume"]))
    resume = e[survivors[0]]["shrinks"][0]["resume"]
    ra, rb = reference(a.steps, resume)
    ref = dict(ra[0]["losses"])
    ref.update(rb[0]["losses"])
    ours = e[survivors[0]]["losses"]
    for s in range(a.steps):
        print("step %3d  elastic %.9f  reference %.9f  %s" %
              (s, ours[s], ref[s], "equal" if ours[s] == ref[s] else "DIFFERENT"))
    same = ours == ref and e[survivors[0]]["params"] == rb[0]["params"]
    print("final loss and parameters %s" % ("bit-equal" if same else "DIFFER"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

"""Elastic training (examples/elastic): of 4 ranks training with DDP on tpu_dist, one is
SIGKILLed mid-step; the survivors get an error promptly (well within the group's 30 s timeout),
shrink the group with tpu_dist.shrink_group (no store, no rendezvous), and finish the epoch on 3
ranks. Their losses and final parameters must equal, bit for bit, those of a 3-rank job resumed
from the same step with the same parameters (same slices of the same global batches, same
3-member communicator order, same algorithms: the same arithmetic). The victim is rank 0 (the
bootstrap root: the survivors' agreement must not need it) and rank 2. Every job is killed if it
outlives its limit: a hang fails the test instead of blocking it."""
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples"))
from elastic import train  # noqa: E402  (not "train": test_ddp imports examples/ddp as that)
from harness import run_procs  # noqa: E402

STEPS, KILL_STEP, TIMEOUT_S = 8, 4, 30
# promptness contracts, with margins for a loaded machine: detection was measured at 0.03-0.16 s,
# far below the 30 s timeout (so it is detection, not the timeout); the shrink at 0.01-0.1 s
DETECT_S = 5.0
SHRINK_S = 5.0


def _check_elastic(e, victim):
    assert e["hung"] == [], "ranks %s still running at the limit (a hang): %s" % (e["hung"], e)
    want_exit = [-signal.SIGKILL if r == victim else 0 for r in range(4)]
    assert e["exitcodes"] == want_exit, e["exitcodes"]
    assert e["killed"]["rank"] == victim and e["killed"]["step"] == KILL_STEP, e["killed"]
    survivors = [r for r in range(4) if r != victim]
    assert sorted(k for k in e if isinstance(k, int)) == survivors, sorted(e)
    resumes = set()
    for new_rank, r in enumerate(survivors):
        (s,) = e[r]["shrinks"]  # exactly one failure, one shrink
        assert "tpu_dist" in s["error"], s
        detect = s["t_err"] - e["killed"]["t"]
        assert detect < DETECT_S, "rank %d saw the failure %.2f s after the kill" % (r, detect)
        assert s["shrink_s"] < SHRINK_S, s
        assert (s["rank"], s["size"]) == (new_rank, 3), s  # renumbered in old-rank order
        # the failure reaches the ranks in step KILL_STEP (or, if one finished the step before
        # another, one step apart: the survivors then agree on the earlier one)
        assert s["resume"] in (KILL_STEP - 1, KILL_STEP), s
        resumes.add(s["resume"])
    assert len(resumes) == 1, resumes  # the agreed step
    first = e[survivors[0]]
    for r in survivors[1:]:
        assert e[r]["losses"] == first["losses"] and e[r]["params"] == first["params"], r
    assert sorted(first["losses"]) == list(range(STEPS)), first["losses"]
    return resumes.pop(), first


def test_survivors_shrink_and_match_a_resumed_run():
    refs = {}
    for victim in (0, 2):
        e = train.elastic(STEPS, KILL_STEP, victim, timeout_s=TIMEOUT_S, limit_s=90)
        resume, ours = _check_elastic(e, victim)
        if resume not in refs:
            a, b = train.reference(STEPS, resume, timeout_s=TIMEOUT_S, limit_s=90)
            for job, n in ((a, 4), (b, 3)):
                assert job["hung"] == [] and job["exitcodes"] == [0] * n, job
            losses = dict(a[0]["losses"])
            losses.update(b[0]["losses"])
            refs[resume] = (losses, b[0]["params"])
        ref_losses, ref_params = refs[resume]
        for s in range(STEPS):
            assert ours["losses"][s] == ref_losses[s], \
                "victim %d step %d: elastic %r, resumed 3-rank run %r" % (
                    victim, s, ours["losses"][s], ref_losses[s])
        assert ours["params"] == ref_params, "victim %d: final parameters differ" % victim
        assert ours["losses"][STEPS - 1] < ours["losses"][0], ours["losses"]


def _explicit(rank, init_file, out):
    import datetime
    import time

    import torch
    import torch.distributed as dist
    import tpu_dist

    dist.init_process_group("tpu_dist", init_method="file://" + init_file, rank=rank,
                            world_size=3, timeout=datetime.timedelta(seconds=TIMEOUT_S))
    rec = {}
    try:
        tpu_dist.shrink_group(exclude_ranks=[rank])  # only survivors call it: refused locally
    except ValueError as e:
        rec["self_excluded"] = "exclude_ranks" in str(e)
    dist.barrier()
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1 << 14))
    except RuntimeError as e:
        rec["error"] = "tpu_dist" in str(e)
    rec["detect_s"] = time.monotonic() - t0
    g = tpu_dist.shrink_group(exclude_ranks=[1])  # an explicit list: no agreement needed
    rec["group"] = (dist.get_rank(g), dist.get_world_size(g), dist.get_rank())
    t = torch.full((1 << 14,), float(rank + 1))
    dist.all_reduce(t, group=g)
    parts = [torch.empty(2, dtype=torch.int64) for _ in range(2)]
    dist.all_gather(parts, torch.tensor([rank, 10 * rank]), group=g)
    rec["results"] = (bool((t == 4.0).all()), [p.tolist() for p in parts])
    out[rank] = rec
    dist.destroy_process_group()


def test_shrink_with_an_explicit_list():
    """Rank 1 of 3 dies; ranks 0 and 2 shrink with exclude_ranks=[1] and become ranks 0 and 1 of a
    group with exact all_reduce and all_gather results; a rank that lists itself gets ValueError."""
    codes, hung, res = run_procs(_explicit, lambda r, d, out: (r, os.path.join(d, "init"), out),
                                 3, 60)
    assert not hung, "ranks %s still running after 60 s (a hang)" % hung
    assert codes == [0, -signal.SIGKILL, 0], codes
    for r, new in ((0, 0), (2, 1)):
        rec = res[r]
        assert rec["self_excluded"] and rec["error"], rec
        assert rec["detect_s"] < DETECT_S, rec
        assert rec["group"] == (new, 2, r), rec
        assert rec["results"] == (True, [[0, 0], [2, 20]]), rec

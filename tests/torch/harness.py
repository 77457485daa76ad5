"""Spawns one job of N ranks that runs a list of cases and reports every failure.

Each case is a function(rank, world, group_ranks) run on every rank; it raises on a wrong result.
Results are collected per rank into a shared dict so the test prints exactly which cases failed.
"""
import os
import sys
import tempfile
import time
import traceback

import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "python"))


def _worker(rank, world, init_file, module_name, entry, results):
    os.environ.setdefault("TPU_DIST_TIMEOUT_MS", "60000")
    sys.path.insert(0, HERE)
    import torch.distributed as dist
    import tpu_dist  # noqa: F401  registers the backend

    dist.init_process_group("tpu_dist", init_method="file://" + init_file, rank=rank,
                            world_size=world)
    mod = __import__(module_name)
    failures = []
    for name, fn in getattr(mod, entry)(world):
        try:
            fn(rank, world)
        except Exception:  # noqa: BLE001  report every failing case, keep going
            failures.append((name, traceback.format_exc(limit=4)))
            sys.stderr.write("rank %d case %s FAILED:\n%s" % (rank, name, failures[-1][1]))
    dist.barrier()
    results[rank] = failures
    dist.destroy_process_group()


def run_job(world, module_name, entry="cases", timeout_s=None):
    """Runs every case of module_name.entry(world) on `world` ranks; returns failures by rank.
    A job still running after timeout_s (TD_TORCH_JOB_TIMEOUT_S, default 600) is killed and
    fails: nothing hangs forever. A rank that exits non-zero (teardown included) fails the job
    (torch's spawn context raises, naming the rank and its exit code or signal)."""
    if timeout_s is None:
        timeout_s = float(os.environ.get("TD_TORCH_JOB_TIMEOUT_S", "600"))
    with tempfile.TemporaryDirectory() as d:
        init_file = os.path.join(d, "init")
        manager = mp.Manager()
        results = manager.dict()
        ctx = mp.spawn(_worker, args=(world, init_file, module_name, entry, results),
                       nprocs=world, join=False)
        deadline = time.monotonic() + timeout_s
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                for p in ctx.processes:
                    p.kill()
                raise TimeoutError("%s on %d ranks still running after %.0f s: killed" %
                                   (module_name, world, timeout_s))
        codes = [p.exitcode for p in ctx.processes]
        assert codes == [0] * world, "%s: exit codes %s" % (module_name, codes)
        return dict(results)


def run_procs(target, args_of, world, limit_s):
    """Runs target(*args_of(rank, dir, out)) in `world` spawned processes (dir: a fresh temporary
    folder, out: a shared dict) and waits at most limit_s for all; any still running then is killed
    (nothing hangs forever). Returns (exit codes, ranks that were still running, dict(out))."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as d, ctx.Manager() as m:
        out = m.dict()
        procs = [ctx.Process(target=target, args=args_of(r, d, out)) for r in range(world)]
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
        return [p.exitcode for p in procs], hung, dict(out)

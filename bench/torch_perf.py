"""Times torch.distributed collectives on a backend (gloo, or tpu_dist through the plugin).

    /usr/bin/python3 bench/torch_perf.py --backend gloo --np 2 --colls allreduce,alltoall \
        --min 4096 --max 67108864 --iters 20 --csv out.csv

Rows: coll,impl,nranks,bytes,time_us,algbw,busbw,wrong,algo — the same CSV as the C *_perf tools
(-C). Times are medians over iterations, maximum over ranks. Results are checked (exact small
integers) once per size.

    /usr/bin/python3 bench/torch_perf.py --np 2 --async-k 200 --min 1K --max 16K \
        --modes strict,defer,debug

Across hosts, one torchrun per host (each worker runs `--torchrun`; rank 0 writes the rows):

    torchrun --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint HOST0:29400 \
        bench/torch_perf.py --torchrun --backend gloo --colls allreduce --csv out.csv

Execution modes side by side (the twin of bench/fuse_perf): one tpu_dist process group per mode
(Options.mode), K async all_reduce calls whose sizes cycle through min, 2 min, ... max, then a wait
for all; the modes take turns in every iteration. Prints per mode the median time per call and the
ratio to the first mode (its time over the mode's: above 1 is faster). Checked exactly once.
With --phases, also the median per call of each phase: issuing the K calls, the first wait, the
other waits.

The plugin's cost per call, side by side (tpu_dist only): each round runs the C API
(bench/all_reduce_perf, in place, back to back) at --np ranks, then torch's blocking all_reduce
back to back at --np ranks, loops on the whole group and on each rank's own 1-rank group taking
turns; per size the medians over rounds and the quantity to keep small, (torch at np ranks -
torch at 1 rank) / C API in place: the collective through torch against the same collective
through the C API, torch's own per-call cost taken out. Also the CPU time per call and rank (every thread of the
process, the group's worker included) at 1 and --np ranks: less swayed by other tasks on the
cores than the times, so it resolves a change in the plugin's own cost per call.

    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
        /usr/bin/python3 bench/torch_perf.py --percall --rounds 5 --sizes 8,1K,8K,64K
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(TOP, "python"))
# --percall's C figures: bench/all_reduce_perf, or the one in TD_BENCH_BIN (bench/host16/run.sh's
# PACK folder)
BENCH_BIN = os.environ.get("TD_BENCH_BIN") or os.path.join(TOP, "bench")

FACTORS = {"allreduce": lambda n: 2.0 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
           "reducescatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n,
           "alltoallv": lambda n: (n - 1) / n}



def parse_size(s):
    """A byte count with an optional K, M or G suffix (powers of 1024)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)

def skew_splits(n, rows_per_peer, skew):
    """Rows each rank sends each peer: a fraction `skew` of everything goes to the last rank."""
    m = []
    for s in range(n):
        row = []
        for r in range(n):
            v = (1.0 - skew) * rows_per_peer + (skew * rows_per_peer * n if r == n - 1 else 0)
            row.append(int(v))
        m.append(row)
    return m


def make_op(coll, nbytes, rank, n, skew, counts=None):
    elems = max(nbytes // 4, n)
    if coll == "allreduce":
        t = torch.full((elems,), float(rank + 1))
        want = float(n * (n + 1) // 2)
        return (lambda: dist.all_reduce(t)), (lambda: bool((t == want).all()) or None), nbytes
    if coll == "allgather":
        per = elems // n
        src = torch.full((per,), float(rank))
        outs = [torch.empty(per) for _ in range(n)]
        return ((lambda: dist.all_gather(outs, src)),
                (lambda: all(bool((outs[r] == r).all()) for r in range(n))), per * 4 * n)
    if coll == "reducescatter":
        per = elems // n
        ins = [torch.full((per,), float(rank + 1)) for _ in range(n)]
        out = torch.empty(per)
        if hasattr(dist, "reduce_scatter") and dist.get_backend() != "gloo":
            fn = lambda: dist.reduce_scatter(out, ins)  # noqa: E731
        else:  # gloo on torch 1.13 has no reduce_scatter: all_reduce + slice, as users do
            full = torch.cat(ins)
            def fn():
                full.fill_(float(rank + 1))
                dist.all_reduce(full)
                out.copy_(full[rank * per:(rank + 1) * per])
        return fn, (lambda: bool((out == n * (n + 1) // 2).all())), per * 4 * n
    if coll == "alltoall":
        per = elems // n
        src = torch.cat([torch.full((per,), float(rank * n + p)) for p in range(n)])
        out = torch.empty(per * n)
        return ((lambda: dist.all_to_all_single(out, src)),
                (lambda: all(bool((out[p * per:(p + 1) * per] == p * n + rank).all())
                             for p in range(n))), per * 4 * n)
    if coll == "alltoallv":
        width = 8
        if counts:  # MoE traffic from alltoallv_perf -M: elements per (sender, receiver)
            width = counts[1]
            m = [[c // width for c in row] for row in counts[0]]
        else:
            m = skew_splits(n, max(elems // n // 8, 1), skew)
        src = torch.cat([torch.full((m[rank][p], width), float(rank * n + p)) for p in range(n)])
        osz = [m[p][rank] for p in range(n)]
        out = torch.empty(sum(osz), width)
        def check():
            off = 0
            for p in range(n):
                if not bool((out[off:off + osz[p]] == p * n + rank).all()):
                    return False
                off += osz[p]
            return True
        sent = sum(sum(r) for r in m) * width * 4 // n
        return (lambda: dist.all_to_all_single(out, src, osz, m[rank])), check, sent
    raise ValueError(coll)


def load_counts(a):
    """(matrix, width) from --counts FILE --width H, or None."""
    if not a.counts:
        return None
    with open(a.counts) as f:
        return [[int(x) for x in line.split(",")] for line in f if line.strip()], a.width


def worker(rank, n, a, init_file, rows):
    if a.backend == "tpu_dist":
        import tpu_dist  # noqa: F401
    if init_file:
        dist.init_process_group(a.backend, init_method="file://" + init_file, rank=rank,
                                world_size=n)
    else:  # under torchrun: its rendezvous, rank and size from the environment
        dist.init_process_group(a.backend, init_method="env://")
    for coll in a.colls.split(","):
        size = a.min
        while size <= a.max:
            fn, check, algbytes = make_op(coll, size, rank, n, a.skew, load_counts(a))
            wrong = 0
            fn()
            ok = check()
            wrong = 0 if ok else 1
            for _ in range(a.warmup):
                fn()
            times = []
            for _ in range(a.iters):
                dist.barrier()
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            times.sort()
            med = torch.tensor([times[len(times) // 2], float(wrong)])
            dist.all_reduce(med, op=dist.ReduceOp.MAX)
            if rank == 0:
                t = med[0].item()
                algbw = algbytes / t / 1e9
                rows.append("%s,%s,%d,%d,%.3f,%.4f,%.4f,%d,%s" % (
                    coll, a.backend, n, algbytes, t * 1e6, algbw, algbw * FACTORS[coll](n),
                    int(med[1].item()), a.backend))
            size *= a.factor
    dist.destroy_process_group()


def modes_worker(rank, n, a, init_file, rows):
    import datetime
    import tpu_dist
    dist.init_process_group("tpu_dist", init_method="file://" + init_file, rank=rank, world_size=n)
    store = dist.distributed_c10d._get_default_store()
    modes = a.modes.split(",")
    pgs = {}
    for m in modes:
        opts = tpu_dist._C.Options(datetime.timedelta(seconds=300))
        opts.mode = m
        pgs[m] = tpu_dist._C.create_process_group(dist.PrefixStore("mode_" + m, store), rank, n,
                                                   opts)
    sizes, s = [], a.min
    while s <= a.max:
        sizes.append(s)
        s *= 2
    ts = {m: [torch.full((max(sizes[j % len(sizes)] // 4, 1),), float(rank + 1))
              for j in range(a.async_k)] for m in modes}
    times = {m: [] for m in modes}
    phases = {m: [] for m in modes}
    wrong = 0
    for it in range(a.warmup + a.iters):
        for m in modes:
            dist.barrier()
            t0 = time.perf_counter()
            works = [pgs[m].allreduce([t]) for t in ts[m]]
            t1 = time.perf_counter()
            works[0].wait()
            t2 = time.perf_counter()
            for w in works[1:]:
                w.wait()
            t3 = time.perf_counter()
            if it >= a.warmup:
                times[m].append(t3 - t0)
                phases[m].append((t1 - t0, t2 - t1, t3 - t2))
            if it == 0:
                want = float(n * (n + 1) // 2)
                wrong += sum(0 if bool((t == want).all()) else 1 for t in ts[m])
                for t in ts[m]:
                    t.zero_()  # sums of zeros from here on: values stay finite
    meds = []
    for m in modes:
        times[m].sort()
        med = torch.tensor([times[m][len(times[m]) // 2]])
        dist.all_reduce(med, op=dist.ReduceOp.MAX)
        meds.append(med.item())
    bad = torch.tensor([float(wrong)])
    dist.all_reduce(bad)
    if rank == 0:
        rows.append("# K=%d async all_reduce of %s bytes (cycling), %d ranks, %d iterations"
                    % (a.async_k, ",".join(str(x) for x in sizes), n, a.iters))
        for m, med in zip(modes, meds):
            rows.append("%-7s %10.2f us/call  %6.2fx%s" % (m, med / a.async_k * 1e6, meds[0] / med,
                                                          "  WRONG" if bad.item() else ""))
            if a.phases:  # rank 0's medians
                p = [sorted(x[i] for x in phases[m])[len(phases[m]) // 2] / a.async_k * 1e6
                     for i in range(3)]
                rows.append("%-7s   issue %.2f  first wait %.2f  other waits %.2f us/call"
                            % (m, p[0], p[1], p[2]))
    for pg in pgs.values():
        del pg
    dist.destroy_process_group()


def percall_worker(rank, n, a, init_file, rows):
    """Per size: torch's blocking all_reduce back to back on the whole group and on this rank's
    own 1-rank group, loops of --calls calls taking turns; the median over --iters loops of the
    time per call, averaged over ranks (as bench/perf.c's -a 1). Both groups are made by
    new_group and passed explicitly, so the two loops run the same Python (the default group,
    group=None, costs torch a lookup per call that the 1-rank loop would not pay)."""
    import tpu_dist  # noqa: F401
    dist.init_process_group("tpu_dist", init_method="file://" + init_file, rank=rank, world_size=n)
    whole = dist.new_group(list(range(n)))
    alone = [dist.new_group([r]) for r in range(n)][rank]
    t = torch.zeros(max(min(a.sizes) // 4, 1))
    for _ in range(5 * a.calls):  # the first size would pay for the processes' warm-up
        for g in (whole, alone):
            dist.all_reduce(t, group=g)
    for size in a.sizes:
        t = torch.full((max(size // 4, 1),), float(rank + 1))
        dist.all_reduce(t, group=whole)
        wrong = 0 if bool((t == float(n * (n + 1) // 2)).all()) else 1
        dist.all_reduce(t, group=alone)
        wrong += 0 if bool((t == float(n * (n + 1) // 2)).all()) else 1
        t.zero_()  # sums of zeros from here on
        loops = {whole: [], alone: []}
        cpu = {whole: [], alone: []}
        for it in range(a.warmup + a.iters):
            for g in loops:
                dist.barrier()
                t0, c0 = time.perf_counter(), time.process_time()
                for _ in range(a.calls):
                    dist.all_reduce(t, group=g)
                if it >= a.warmup:
                    loops[g].append((time.perf_counter() - t0) / a.calls)
                    cpu[g].append((time.process_time() - c0) / a.calls)
        med = torch.tensor([sorted(x[g])[a.iters // 2] / n for x in (loops, cpu)
                            for g in (whole, alone)] + [float(wrong)], dtype=torch.float64)
        dist.all_reduce(med)
        if rank == 0:
            rows.append((size, med[1].item() * 1e6, med[0].item() * 1e6, int(med[4].item()),
                         med[3].item() * 1e6, med[2].item() * 1e6))
    dist.destroy_process_group()


def capi_inplace(a):
    """{bytes: us}: the median of three runs of bench/all_reduce_perf's in-place column (float32
    sum, back to back)."""
    runs = [capi_run(a) for _ in range(3)]
    return {s: sorted(r[s] for r in runs)[1] for s in runs[0]}


def capi_run(a):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "-np", str(a.np), "--bind-to", "none", "--oversubscribe", "--mca",
           "mpi_yield_when_idle", "1", os.path.join(BENCH_BIN, "all_reduce_perf"), "-b",
           str(min(a.sizes)), "-e", str(max(a.sizes)), "-f", "2", "-n", str(a.calls), "-w",
           str(a.calls // 10), "-c", "1"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        if f and f[0].isdigit():
            if f[8] != "0" or f[12] != "0":
                raise SystemExit("torch_perf: all_reduce_perf found wrong results:\n" + out)
            res[int(f[0])] = float(f[9])
    return res


def percall(a):
    """Rounds of: the C API in place, torch at 1 rank, torch at --np ranks; the table."""
    runs = []
    for r in range(a.rounds):
        c = capi_inplace(a)
        with tempfile.TemporaryDirectory() as d:
            rows = mp.Manager().list()
            mp.spawn(percall_worker, args=(a.np, a, os.path.join(d, "init"), rows), nprocs=a.np)
        if any(x[3] for x in rows):
            raise SystemExit("torch_perf: wrong all_reduce results")
        runs.append({x[0]: (c[x[0]], x[1], x[2], x[4], x[5]) for x in rows})
        sys.stdout.write("# round %d: %s\n" % (r + 1, "  ".join(
            "%d B %.2f/%.2f/%.2f" % ((s,) + runs[-1][s][:3]) for s in a.sizes)))
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    text = ("# blocking all_reduce float32 sum, %d ranks, %d rounds of %d loops of %d calls; "
            "us per call, medians over rounds; cpu: CPU time per call and rank (every thread "
            "of the process)\n" % (a.np, a.rounds, a.iters, a.calls) +
            "%8s %10s %12s %12s %10s %8s %15s %10s %10s\n" % (
                "bytes", "C in place", "torch 1 rank", "torch %d rnk" % a.np, "excess", "ratio",
                "ratio per round", "cpu 1 rank", "cpu %d rnk" % a.np))
    for s in a.sizes:
        c, one, many, cpu1, cpun = (med([x[s][i] for x in runs]) for i in range(5))
        per = [(x[s][2] - x[s][1]) / x[s][0] for x in runs]
        text += "%8d %10.2f %12.2f %12.2f %10.2f %7.2fx %14.2fx %10.2f %10.2f\n" % (
            s, c, one, many, many - one, (many - one) / c, med(per), cpu1, cpun)
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="gloo")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--colls", default="allreduce")
    ap.add_argument("--min", type=parse_size, default=4096, help="bytes; K, M, G suffixes allowed")
    ap.add_argument("--max", type=parse_size, default=1 << 20)
    ap.add_argument("--factor", type=int, default=2, help="size step: min, min*factor, ...")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--skew", type=float, default=0.5)
    ap.add_argument("--counts", help="all-to-all-v count matrix (elements), from alltoallv_perf -M")
    ap.add_argument("--width", type=int, default=1, help="elements per row with --counts (hidden)")
    ap.add_argument("--csv")
    ap.add_argument("--async-k", type=int, default=0,
                    help="K async all_reduce then wait all, per --modes (tpu_dist only)")
    ap.add_argument("--modes", default="strict,defer,debug")
    ap.add_argument("--phases", action="store_true",
                    help="with --async-k: also the time per call of issue, first wait, other waits")
    ap.add_argument("--torchrun", action="store_true",
                    help="run as one torchrun worker (RANK, WORLD_SIZE, MASTER_ADDR from torchrun; "
                         "--np ignored): rank 0 prints the rows and appends them to --csv")
    ap.add_argument("--percall", action="store_true",
                    help="the plugin's cost per call against the C API (tpu_dist only)")
    ap.add_argument("--sizes", default="8,1K,8K,64K", help="with --percall: bytes per call")
    ap.add_argument("--rounds", type=int, default=5, help="with --percall")
    ap.add_argument("--calls", type=int, default=1000, help="with --percall: calls per loop")
    a = ap.parse_args()
    a.sizes = [parse_size(x) for x in a.sizes.split(",")]
    if a.percall:
        text = percall(a)
        if a.csv:
            with open(a.csv, "a") as f:
                f.write(text)
        sys.stdout.write(text)
        return
    if a.torchrun:
        rows = []
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), a, None, rows)
        if rows:
            text = "\n".join(rows) + "\n"
            if a.csv:
                with open(a.csv, "a") as f:
                    f.write(text)
            sys.stdout.write(text)
        return
    with tempfile.TemporaryDirectory() as d:
        rows = mp.Manager().list()
        mp.spawn(modes_worker if a.async_k else worker,
                 args=(a.np, a, os.path.join(d, "init"), rows), nprocs=a.np)
        text = "\n".join(rows) + "\n"
    if a.csv:
        with open(a.csv, "a") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()

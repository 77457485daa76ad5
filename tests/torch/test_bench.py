"""bench/torch_perf.py runs end to end on this torch, as the docs' commands run it: --percall (the
C API in place under mpirun, then torch's blocking all_reduce on the whole group and on each
rank's 1-rank group, both checked exactly by the tool) and the plain timing mode against
tpu_dist. Tiny sizes and loop counts; no time is asserted, only that every row is there and its
figures are positive. Runs on every torch the project supports (1.13 here, 2.6 and 2.14 in the
torch2 roots)."""
import os
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _run(args):
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="4294967296",
               MALLOC_TRIM_THRESHOLD_="4294967296")
    r = subprocess.run([sys.executable, os.path.join(TOP, "bench", "torch_perf.py")] + args,
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return r.stdout


def _rows(out):
    """{bytes: [figures]} of the table lines that start with a size."""
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) > 1 and f[0].isdigit():
            rows[int(f[0])] = [float(x.rstrip("x")) for x in f[1:]]
    return rows


def test_percall():
    out = _run(["--percall", "--np", "2", "--rounds", "1", "--sizes", "8,1K", "--calls", "20",
                "--iters", "2", "--warmup", "1"])
    rows = _rows(out)
    assert sorted(rows) == [8, 1024], out
    for size, f in rows.items():
        c, one, two = f[:3]  # C in place, torch at 1 rank, torch at 2 ranks (us per call)
        assert c > 0 and one > 0 and two > 0, (size, f)


def test_timing_mode():
    out = _run(["--backend", "tpu_dist", "--np", "2", "--min", "1K", "--max", "4K", "--factor",
                "4", "--iters", "3", "--warmup", "1"])
    # rows: coll,impl,nranks,bytes,time_us,algbw,busbw,wrong,algo
    rows = {int(f[3]): f for f in (line.split(",") for line in out.splitlines()) if len(f) == 9}
    assert sorted(rows) == [1024, 4096], out
    for size, f in rows.items():
        assert f[:3] == ["allreduce", "tpu_dist", "2"] and float(f[4]) > 0 and f[7] == "0", f

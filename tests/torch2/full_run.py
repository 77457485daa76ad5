"""The whole of torch's DistributedTest for one backend, or one shard of it, with a per-test hang
limit: the long run whose counts docs/results/torch.md records (tests/torch2/test_conformance.py
runs the CI subset and compares).

    python3 tests/torch2/full_run.py --backend tpu_dist --out DIR [--start fork|spawn]
        [--shard K/N] [--limit S] [-k NAME...]

Runs tests/torch2/dist_conformance.py under pytest -v and records each test's outcome as it
finishes, one JSON line per test in DIR/BACKEND-K.jsonl ({"name", "outcome", "seconds"}), so a
killed or unfinished run keeps every result it reached. The raw pytest output goes to
DIR/BACKEND-K.log, and each pytest run's junit xml (skip reasons, failure messages) to
DIR/BACKEND-K.N.xml. torch fails a test that runs past --limit seconds (its
DISTRIBUTED_TESTS_DEFAULT_TIMEOUT, default 300); one that finishes nothing for 150 s more is killed
with its process group and recorded as "hang", and the run resumes with the next test. Shard K of
N takes every Nth test of the sorted list. --start: how each test starts its ranks
(dist_conformance.py's TD_DIST_START; default spawn, as torch runs them).
"""
import argparse
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "dist_conformance.py")
CLASS = "TestDistributed"
LINE = re.compile(r"::%s::(test\w*) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)" % CLASS)


def all_tests(backend):
    """The test names of DistributedTest._DistTestBase, sorted (what pytest collects)."""
    # distributed_test reads these when imported.
    os.environ.update(BACKEND=backend, WORLD_SIZE="2")
    os.environ.setdefault("TEMP_DIR", tempfile.gettempdir())
    from torch.testing._internal.distributed.distributed_test import DistributedTest
    return sorted(n for n in dir(DistributedTest._DistTestBase) if n.startswith("test"))


def run(backend, names, out, tag, limit=300.0, start="spawn"):
    """Runs names in order, resuming after a hang; appends results to OUT/TAG.jsonl. limit:
    torch's own per-test limit in seconds (it fails the test; test_ddp_uneven_inputs has 400);
    a test that finishes nothing for 150 s more is killed as hung. start: fork or spawn."""
    hang = max(limit, 400) + 150
    done_path = os.path.join(out, tag + ".jsonl")
    done = set()
    if os.path.exists(done_path):
        with open(done_path) as f:
            done = {json.loads(l)["name"] for l in f if l.strip()}
    left = [n for n in names if n not in done]
    log = open(os.path.join(out, tag + ".log"), "a")
    res = open(done_path, "a")
    runs = len(glob.glob(os.path.join(out, tag + ".*.xml")))
    while left:
        runs += 1
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, BACKEND=backend, WORLD_SIZE="2", TEMP_DIR=tmp, USE_LIBUV="0",
                       OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                       DISTRIBUTED_TESTS_DEFAULT_TIMEOUT=str(int(limit)), TD_DIST_START=start)
            cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--tb=short",
                   "-rsfE", "--junitxml=" + os.path.join(out, "%s.%d.xml" % (tag, runs))]
            cmd += ["%s::%s::%s" % (PATH, CLASS, n) for n in left]
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, start_new_session=True)
            last = [time.monotonic()]
            hung = [False]

            def watch():
                while p.poll() is None:
                    if time.monotonic() - last[0] > hang:
                        hung[0] = True
                        os.killpg(p.pid, signal.SIGKILL)
                        return
                    time.sleep(2)

            threading.Thread(target=watch, daemon=True).start()
            for line in p.stdout:
                log.write(line)
                log.flush()
                m = LINE.search(line)
                if m and m.group(1) in left:
                    now = time.monotonic()
                    res.write(json.dumps({"name": m.group(1), "outcome": m.group(2).lower(),
                                          "seconds": round(now - last[0], 1)}) + "\n")
                    res.flush()
                    left.remove(m.group(1))
                    last[0] = now
            p.wait()
            if left and (hung[0] or p.returncode not in (0, 1)):
                # The first test not finished is the one that hung (or killed pytest).
                name = left.pop(0)
                why = "hang" if hung[0] else "crash"
                res.write(json.dumps({"name": name, "outcome": why,
                                      "seconds": round(time.monotonic() - last[0], 1)}) + "\n")
                res.flush()
                log.write("\n== %s: %s (pytest rc %s)\n" % (name, why, p.returncode))
            elif left:
                log.write("\n== pytest ended (rc %s) with %d tests not reported: %s\n" %
                          (p.returncode, len(left), " ".join(left)))
                for name in left:
                    res.write(json.dumps({"name": name, "outcome": "unreported",
                                          "seconds": 0}) + "\n")
                left = []
    log.close()
    res.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", required=True, choices=("gloo", "tpu_dist"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--shard", default="1/1", help="K/N: every Nth test from the Kth (1-based)")
    ap.add_argument("--limit", type=float, default=300.0,
                    help="torch's per-test limit (DISTRIBUTED_TESTS_DEFAULT_TIMEOUT), seconds")
    ap.add_argument("--start", default="spawn", choices=("fork", "spawn"))
    ap.add_argument("-k", nargs="+", help="only these test names")
    a = ap.parse_args()
    k, n = (int(x) for x in a.shard.split("/"))
    if not 1 <= k <= n:
        ap.error("--shard K/N needs 1 <= K <= N, got %s" % a.shard)
    names = all_tests(a.backend)
    if a.k:
        unknown = sorted(set(a.k) - set(names))
        if unknown:
            ap.error("not DistributedTest tests: %s" % " ".join(unknown))
        names = [x for x in names if x in a.k]
    os.makedirs(a.out, exist_ok=True)
    run(a.backend, names[k - 1::n], a.out, "%s-%d" % (a.backend, k), a.limit,
        a.start)


if __name__ == "__main__":
    main()

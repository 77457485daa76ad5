"""torch's DistributedTest as a conformance bar: the same tests on gloo and on tpu_dist (a plugin
backend with the subgroup and ddp features) at WORLD_SIZE 2. Every test gloo passes that runs
(is not skipped) for tpu_dist passes on tpu_dist; nothing fails on tpu_dist that passes on gloo.

CI runs a fixed subset (SUBSET: collectives, groups, DDP, logging); TD_FULL=1 runs every test
and prints the counts recorded in docs/torch.md.

    python3 tests/torch2/test_conformance.py [--wide | --all]   # prints the per-backend counts
"""
import collections
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# CI's subset: DDP logging (the backend's name), groups, point to point (any source),
# collectives and DDP on CPU. The docs record a wider run (WIDE) and TD_FULL=1 runs everything.
SUBSET = ["test_ddp_logging_data_cpu", "test_get_backend", "test_new_subgroups",
          "test_send_recv_any_source", "test_all_reduce_sum", "test_all_reduce_coalesced_max",
          "test_all_gather_coalesced_simple", "test_DistributedDataParallelCPU"]
WIDE = SUBSET + ["test_destroy_group", "test_irecv", "test_broadcast", "test_reduce_sum",
                 "test_scatter", "test_gather", "test_all_to_all_single_equal_split",
                 "test_barrier"]


def run_backend(backend, names, timeout):
    """{test name: 'passed' | 'skipped' | 'failed'} for one backend: the named tests of
    DistributedTest, or all of them (names None)."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, BACKEND=backend, WORLD_SIZE="2", TEMP_DIR=d, USE_LIBUV="0",
                   OMP_NUM_THREADS="1")
        xml = os.path.join(d, "out.xml")
        path = os.path.join(HERE, "dist_conformance.py")
        ids = [path] if names is None else [
            "%s::TestDistributed::%s" % (path, n) for n in names]
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short",
               "--junitxml=" + xml] + ids
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if not os.path.exists(xml):
            raise AssertionError("%s: no results\n%s\n%s" % (backend, p.stdout[-3000:],
                                                               p.stderr[-3000:]))
        out = {}
        for tc in ET.parse(xml).getroot().iter("testcase"):
            tags = {c.tag for c in tc}
            out[tc.get("name")] = ("failed" if tags & {"failure", "error"} else
                                   "skipped" if "skipped" in tags else "passed")
        return out, p.stdout


def compare(gloo, ours):
    """Tests that break the bar, and the counts per backend."""
    bad = []
    for name, g in sorted(gloo.items()):
        o = ours.get(name, "missing")
        if o == "failed" and g != "failed":
            bad.append("%s: gloo %s, tpu_dist failed" % (name, g))
        elif g == "passed" and o not in ("passed", "skipped"):
            bad.append("%s: gloo passed, tpu_dist %s" % (name, o))
    counts = {b: collections.Counter(r.values()) for b, r in (("gloo", gloo), ("tpu_dist", ours))}
    both = [n for n in gloo if gloo[n] != "skipped" and ours.get(n) != "skipped"]
    counts["both_run"] = collections.Counter(
        {"gloo_passed": sum(gloo[n] == "passed" for n in both),
         "tpu_dist_passed": sum(ours.get(n) == "passed" for n in both), "tests": len(both)})
    return bad, counts


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2, reason="torch 2.x")
def test_distributed_test_conformance():
    full = os.environ.get("TD_FULL", "0") == "1"
    names = None if full else SUBSET
    timeout = 14400 if full else 600
    gloo, _ = run_backend("gloo", names, timeout)
    ours, log = run_backend("tpu_dist", names, timeout)
    bad, counts = compare(gloo, ours)
    print("DistributedTest WORLD_SIZE=2 %s: %s" % ("all" if full else "subset", dict(counts)))
    assert len(gloo) == len(ours) and gloo, (len(gloo), len(ours))
    assert counts["both_run"]["tpu_dist_passed"] >= counts["both_run"]["gloo_passed"], counts
    assert not bad, "\n".join(bad) + "\n" + log[-4000:]


if __name__ == "__main__":
    sel = None if "--all" in sys.argv else WIDE if "--wide" in sys.argv else SUBSET
    g, _ = run_backend("gloo", sel, 14400)
    o, _ = run_backend("tpu_dist", sel, 14400)
    b, c = compare(g, o)
    for backend in ("gloo", "tpu_dist"):
        print(backend, dict(c[backend]))
    print("run on both:", dict(c["both_run"]))
    for n in sorted(g):
        print("  %-50s gloo %-8s tpu_dist %s" % (n, g[n], o.get(n)))
    print("\n".join(b) or "bar met")

"""torch's DistributedTest as a conformance bar: the same tests on gloo and on tpu_dist (a plugin
backend with the subgroup and ddp features) at WORLD_SIZE 2. Every test gloo passes that runs
(is not skipped) for tpu_dist passes on tpu_dist; nothing fails on tpu_dist that passes on gloo;
among the tests run for both, tpu_dist passes at least as many as gloo.

CI runs the whole class with forked ranks (about 2 minutes a backend; what does not pass or skip
on either backend is run again with spawned ranks) and 3 tests (SUBSET) with spawned ranks, as
torch runs them (about a minute each on the loaded machine).

    python3 tests/torch2/test_conformance.py [--wide | --all] [--start fork|spawn]
    python3 tests/torch2/test_conformance.py --results DIR   # a full_run.py output folder

print the per-backend counts, the comparison, and each test whose outcome differs (with the
reasons from the junit xml).
"""
import argparse
import collections
import glob
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import full_run  # noqa: E402

# CI's spawned subset (the whole class runs forked): the backend registered in fresh
# interpreters, through DDP logging (its name), a collective and point to point (any source).
SUBSET = ["test_ddp_logging_data_cpu", "test_send_recv_any_source", "test_all_reduce_sum"]
WIDE = SUBSET + ["test_get_backend", "test_new_subgroups", "test_all_reduce_coalesced_max",
                 "test_all_gather_coalesced_simple", "test_DistributedDataParallelCPU",
                 "test_destroy_group", "test_irecv", "test_broadcast", "test_reduce_sum",
                 "test_scatter", "test_gather", "test_all_to_all_single_equal_split",
                 "test_barrier"]
BAD = ("failed", "error", "hang", "crash", "unreported")


def load(out, backend):
    """({test: outcome}, {test: reason}) from a full_run.py output folder, all shards."""
    res, why = {}, {}
    for path in sorted(glob.glob(os.path.join(out, backend + "-*.jsonl"))):
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    res[r["name"]] = r["outcome"]
    for path in sorted(glob.glob(os.path.join(out, backend + "-*.xml"))):
        for tc in ET.parse(path).getroot().iter("testcase"):
            for c in tc:
                if c.tag in ("skipped", "failure", "error"):
                    msg = (c.get("message") or c.text or "").strip().splitlines()
                    why[tc.get("name")] = msg[0][:200] if msg else c.tag
    return res, why


def run_backend(backend, names, start):
    """({test: outcome}, {test: reason}) for one backend: the named tests of DistributedTest, or
    all of them (names None), ranks started by start (fork or spawn). A forked test takes 1-4 s
    here (load 30), so torch's limit is 60 s there, not 300: a rank deadlocked by the fork costs
    a minute before the spawned rerun."""
    with tempfile.TemporaryDirectory() as d:
        full_run.run(backend, names or full_run.all_tests(backend), d, backend + "-1",
                     limit=60.0 if start == "fork" else 300.0, start=start)
        return load(d, backend)


def compare(gloo, ours):
    """Tests that break the bar, and the counts per backend."""
    bad = []
    for name, g in sorted(gloo.items()):
        o = ours.get(name, "missing")
        if o in BAD + ("missing",) and g not in BAD:
            bad.append("%s: gloo %s, tpu_dist %s" % (name, g, o))
        elif g == "passed" and o not in ("passed", "skipped"):
            bad.append("%s: gloo passed, tpu_dist %s" % (name, o))
    counts = {b: collections.Counter(r.values()) for b, r in (("gloo", gloo), ("tpu_dist", ours))}
    both = [n for n in gloo if gloo[n] != "skipped" and ours.get(n) != "skipped"]
    counts["both_run"] = collections.Counter(
        {"gloo_passed": sum(gloo[n] == "passed" for n in both),
         "tpu_dist_passed": sum(ours.get(n) == "passed" for n in both), "tests": len(both)})
    return bad, counts


def run_both(names, start):
    """Both backends' results ({test: outcome}, {test: reason}) x 2. With start fork, every test
    that does not pass or skip on either backend is run again with spawned ranks on both, and
    that outcome counts (forking a process with threads can deadlock a rank; spawn is how torch
    runs these tests)."""
    (gloo, gwhy), (ours, owhy) = (run_backend(b, names, start) for b in ("gloo", "tpu_dist"))
    again = sorted(n for n in gloo if gloo[n] in BAD or ours.get(n) in BAD)
    if start == "fork" and again:
        (g2, gw2), (o2, ow2) = (run_backend(b, again, "spawn") for b in ("gloo", "tpu_dist"))
        for res, why, res2, why2 in ((gloo, gwhy, g2, gw2), (ours, owhy, o2, ow2)):
            for n in again:
                res[n] = res2.get(n, "missing")
                why[n] = why2.get(n, "") + " (spawned)"
    return gloo, gwhy, ours, owhy


def check(names, start, capsys):
    gloo, gwhy, ours, owhy = run_both(names, start)
    bad, counts = compare(gloo, ours)
    with capsys.disabled():  # the counts belong in the suite's log, passed or not
        print("\nDistributedTest WORLD_SIZE=2 %s (%s): %s" % (
            "all" if names is None else "%d tests" % len(names), start, dict(counts)))
    assert sorted(gloo) == sorted(ours) and gloo, (len(gloo), len(ours))
    assert counts["both_run"]["tpu_dist_passed"] >= counts["both_run"]["gloo_passed"], counts
    assert not bad, "\n".join("%s (%s)" % (b, owhy.get(b.split(":")[0], "")) for b in bad)


pytestmark = pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2, reason="torch 2.x")


def test_whole_class_forked(capsys):
    check(None, "fork", capsys)


def test_subset_spawned(capsys):
    check(SUBSET, "spawn", capsys)


def report(gloo, gwhy, ours, owhy):
    bad, c = compare(gloo, ours)
    for backend in ("gloo", "tpu_dist"):
        print(backend, dict(c[backend]))
    print("run on both:", dict(c["both_run"]))
    for n in sorted(gloo):
        if gloo[n] != ours.get(n):
            print("  %-58s gloo %-8s tpu_dist %-8s %s" % (
                n, gloo[n], ours.get(n), owhy.get(n) or gwhy.get(n, "")))
    print("\n".join(bad) or "bar met")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wide", action="store_true", help="the subset and 8 more tests")
    ap.add_argument("--all", action="store_true", help="the whole class")
    ap.add_argument("--start", default="spawn", choices=("fork", "spawn"))
    ap.add_argument("--results", help="compare a full_run.py output folder instead of running")
    a = ap.parse_args()
    if a.results:
        report(*load(a.results, "gloo"), *load(a.results, "tpu_dist"))
        return
    names = None if a.all else WIDE if a.wide else SUBSET
    report(*run_both(names, a.start))


if __name__ == "__main__":
    main()

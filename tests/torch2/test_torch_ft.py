"""torch's own reconfigure tests (test_c10d_fault_tolerance.py of torch's source) on gloo and on
tpu_dist, compared: every test that passes on gloo passes on tpu_dist.

The file comes from Debian's source package of the running torch (tests/torch2/root.sh SUITE
torch-tests; tests/torch2/run.sh passes its folder as TD_TORCH_TEST_DIR), or from a torch source
tree of the same release (TD_TORCH_SRC for run.sh). Without it the test is skipped with the
reason run.sh found (TD_TORCH_TEST_MISSING). tests/torch2/torch_ft.py holds the two classes:
torch's gloo class and the same factory's class for tpu_dist.

    python3 tests/torch2/test_torch_ft.py     # prints the per-test table and the counts
"""
import collections
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "torch_ft.py")
CLASSES = {"gloo": "GlooFaultToleranceTest", "tpu_dist": "TpuDistFaultToleranceTest"}


def run_class(backend, timeout_s=1200):
    """{test: (outcome, reason)} for one backend's class, from pytest's junit xml."""
    with tempfile.TemporaryDirectory() as d:
        xml = os.path.join(d, "out.xml")
        env = dict(os.environ, USE_LIBUV="0", OMP_NUM_THREADS="1", TEMP_DIR=d)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rsfE",
               "--junitxml=" + xml, "%s::%s" % (RUNNER, CLASSES[backend])]
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout_s)
        if not os.path.exists(xml):
            raise AssertionError("%s: pytest wrote no results:\n%s" % (backend, p.stdout[-3000:]))
        res = {}
        for tc in ET.parse(xml).getroot().iter("testcase"):
            outcome, why = "passed", ""
            for c in tc:
                if c.tag in ("skipped", "failure", "error"):
                    outcome = {"failure": "failed"}.get(c.tag, c.tag)
                    why = (c.get("message") or c.text or c.tag).strip().splitlines()[0][:160]
            res[tc.get("name")] = (outcome, why)
        if p.returncode not in (0, 1):
            raise AssertionError("%s: pytest exit %d:\n%s" % (backend, p.returncode,
                                                              p.stdout[-3000:]))
        return res


def compare(gloo, ours):
    """The tests gloo passes and tpu_dist does not, and the counts per backend."""
    bad = ["%s: gloo passed, tpu_dist %s (%s)" % (n, ours.get(n, ("missing", ""))[0],
                                                  ours.get(n, ("", ""))[1])
           for n, (g, _) in sorted(gloo.items()) if g == "passed" and
           ours.get(n, ("missing",))[0] != "passed"]
    counts = {b: collections.Counter(o for o, _ in r.values())
              for b, r in (("gloo", gloo), ("tpu_dist", ours))}
    return bad, counts


def report(gloo, ours):
    print("%-40s %-8s %-8s" % ("test_c10d_fault_tolerance", "gloo", "tpu_dist"))
    for n in sorted(set(gloo) | set(ours)):
        g, o = gloo.get(n, ("missing", "")), ours.get(n, ("missing", ""))
        print("%-40s %-8s %-8s %s" % (n, g[0], o[0], o[1] or g[1]))
    bad, counts = compare(gloo, ours)
    for b in ("gloo", "tpu_dist"):
        c = counts[b]
        print("%-8s %d tests: %d passed, %d failed, %d skipped" % (
            b, sum(c.values()), c["passed"], c["failed"] + c["error"], c["skipped"]))
    return bad, counts


def test_torch_fault_tolerance_gloo_vs_tpu_dist(capsys):
    if not os.environ.get("TD_TORCH_TEST_DIR"):
        pytest.skip("torch's test_c10d_fault_tolerance.py is not at hand: %s" %
                    os.environ.get("TD_TORCH_TEST_MISSING", "TD_TORCH_TEST_DIR is not set"))
    gloo, ours = run_class("gloo"), run_class("tpu_dist")
    with capsys.disabled():  # the table belongs in the suite's log, passed or not
        print()
        bad, counts = report(gloo, ours)
    assert counts["gloo"]["passed"] > 0, gloo
    assert sorted(gloo) == sorted(ours), (sorted(gloo), sorted(ours))
    assert not bad, "\n".join(bad)


if __name__ == "__main__":
    report(run_class("gloo"), run_class("tpu_dist"))

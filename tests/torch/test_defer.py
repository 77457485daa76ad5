"""TPU_DIST_MODE=defer through the plugin: every plugin case, the defer cases (async all_reduce
bit-identical to blocking), and DDP (bucketed async all-reduces) matching gloo exactly."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_ddp  # noqa: E402


def _check(results, world):
    assert sorted(results) == list(range(world)), "ranks did not all report: %s" % sorted(results)
    failures = ["rank %d %s:\n%s" % (r, name, tb) for r in sorted(results)
                for name, tb in results[r]]
    assert not failures, "\n".join(failures[:20]) + "\n(%d failures)" % len(failures)


@pytest.mark.parametrize("world", [2, 3])
def test_defer_cases(world, monkeypatch):
    monkeypatch.setenv("TPU_DIST_MODE", "defer")
    _check(harness.run_job(world, "defer_cases"), world)


def test_defer_complete_at_flush(monkeypatch):
    monkeypatch.setenv("TPU_DIST_MODE", "defer")
    monkeypatch.setenv("TPU_DIST_DEFER_US", "60000000")  # no timer flushes within the case
    _check(harness.run_job(2, "defer_cases", "flush_cases"), 2)


def test_plugin_cases_deferred(monkeypatch):
    monkeypatch.setenv("TPU_DIST_MODE", "defer")
    _check(harness.run_job(2, "plugin_cases"), 2)


def test_ddp_deferred(monkeypatch):
    monkeypatch.setenv("TPU_DIST_MODE", "defer")
    test_ddp.test_ddp_matches_gloo(2, 0.0)

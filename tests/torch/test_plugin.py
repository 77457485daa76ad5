"""torch.distributed backend tests: one spawned job per world size runs every case of
plugin_cases.py (every operation, dtype, subgroups, async, timeouts) and reports each failure."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


@pytest.mark.parametrize("world", [2, 4])
def test_all_cases(world):
    results = harness.run_job(world, "plugin_cases")
    assert sorted(results) == list(range(world)), "ranks did not all report: %s" % sorted(results)
    failures = ["rank %d %s:\n%s" % (r, name, tb) for r in sorted(results)
                for name, tb in results[r]]
    assert not failures, "\n".join(failures[:20]) + "\n(%d failures)" % len(failures)


def test_register_twice_is_harmless():
    import tpu_dist
    tpu_dist._register()  # a second registration is a no-op, not an error


def test_foreign_registration_is_reported():
    import torch.distributed as dist
    import tpu_dist
    saved = dist.Backend._plugins.pop("TPU_DIST")
    try:
        def other(*args):
            return None
        dist.Backend._plugins["TPU_DIST"] = other
        tpu_dist._REGISTERED = False
        with pytest.raises(RuntimeError, match="already registered by another package"):
            tpu_dist._register()
    finally:
        dist.Backend._plugins["TPU_DIST"] = saved
        tpu_dist._REGISTERED = True

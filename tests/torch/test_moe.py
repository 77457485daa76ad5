"""tests/torch/test_moe.py - the expert-parallel MoE example against its single-process reference
at 2 and 4 ranks (outputs and gradients to float tolerance; training reduces the loss)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


@pytest.mark.parametrize("world", [2, 4])
def test_moe(world):
    results = harness.run_job(world, "moe_cases")
    assert sorted(results) == list(range(world))
    failures = ["rank %d %s:\n%s" % (r, n, tb) for r in sorted(results) for n, tb in results[r]]
    assert not failures, "\n".join(failures[:10])

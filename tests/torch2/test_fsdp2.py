"""FSDP2, DTensor and tensor parallel on CPU over tpu_dist at 4 ranks (tests/torch2/fsdp2_cases.py):
the reductions FSDP2 issues bit-exact, training equal to a one-process reference, every DTensor
placement. torch 2.6 and later (fully_shard, torch.distributed.tensor)."""
import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
sys.path.insert(0, HERE)
import harness  # noqa: E402

_V = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
pytestmark = pytest.mark.skipif(_V < (2, 6), reason="FSDP2 and torch.distributed.tensor: 2.6+")


def test_fsdp2_dtensor_tp():
    world = 4
    results = harness.run_job(world, "fsdp2_cases", timeout_s=400)
    assert sorted(results) == list(range(world)), "ranks did not all report: %s" % sorted(results)
    failures = ["rank %d %s:\n%s" % (r, name, tb) for r in sorted(results)
                for name, tb in results[r]]
    assert not failures, "\n".join(failures[:12]) + "\n(%d failures)" % len(failures)

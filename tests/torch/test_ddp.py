"""DDP on tpu_dist gives the same losses as on gloo: exactly at 2 ranks, within 1e-6 at 4."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "ddp"))
import train  # noqa: E402


@pytest.mark.parametrize("world,rel", [(2, 0.0), (4, 1e-6)])
def test_ddp_matches_gloo(world, rel):
    ours = train.train("tpu_dist", world, 12)
    ref = train.train("gloo", world, 12)
    assert len(ours) == len(ref) == 12
    assert ours[-1] < ours[0], "training did not reduce the loss: %s" % ours
    for i, (a, b) in enumerate(zip(ours, ref)):
        if rel == 0.0:
            assert a == b, "step %d: tpu_dist %r gloo %r" % (i, a, b)
        else:
            assert abs(a - b) <= rel * abs(b), "step %d: tpu_dist %r gloo %r" % (i, a, b)

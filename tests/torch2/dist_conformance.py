"""torch's own DistributedTest (torch.testing._internal.distributed.distributed_test) on a
backend named by BACKEND (gloo, or tpu_dist declared as a plugin backend with the subgroup and
ddp features), at WORLD_SIZE ranks, as torch's test_distributed_spawn.py runs it (TD_DIST_START=fork:
forked ranks instead).

    BACKEND=tpu_dist WORLD_SIZE=2 TEMP_DIR=$(mktemp -d) USE_LIBUV=0 \
        python3 -m pytest -q tests/torch2/dist_conformance.py [-k EXPR]

tests/torch2/test_conformance.py runs it for both backends and compares the outcomes.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if os.environ.get("BACKEND") == "tpu_dist":
    import tpu_dist  # noqa: F401  registers the backend in this process and every spawned rank

    # The features tpu_dist is declared with (TD_DIST_FEATURES, comma-separated): by default
    # plugin, subgroup and ddp. Adding "gpu" also runs the tests torch gates on that set although
    # they use CPU tensors for every backend but nccl (all_gather_object, gather_object, ...).
    features = os.environ.get("TD_DIST_FEATURES", "plugin,subgroup,ddp").split(",")
    for feature in features:
        if feature not in DistTestCases.backend_feature:
            raise ValueError("TD_DIST_FEATURES: %r is not one of torch's features %s" %
                             (feature, sorted(DistTestCases.backend_feature)))
        DistTestCases.backend_feature[feature].add("tpu_dist")

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest, TestDistBackend)


# How each test's ranks start: "spawn" (fresh interpreters, as torch's test_distributed_spawn.py)
# or "fork" (copies of this process: no per-rank import of torch, several times faster).
START = os.environ.get("TD_DIST_START", "spawn")
if START not in ("spawn", "fork"):
    raise ValueError("TD_DIST_START must be spawn or fork, not %r" % START)


class TestDistributed(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if START == "fork":  # torch 2.6 dropped _fork_processes; its _start_processes remains
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()

"""torch's own DistributedTest (torch.testing._internal.distributed.distributed_test) on a
backend named by BACKEND (gloo, or tpu_dist declared as a plugin backend with the subgroup and
ddp features), at WORLD_SIZE ranks, as torch's test_distributed_spawn.py runs it.

    BACKEND=tpu_dist WORLD_SIZE=2 TEMP_DIR=$(mktemp -d) USE_LIBUV=0 \
        python3 -m pytest -q tests/torch2/dist_conformance.py [-k EXPR]

tests/torch2/test_conformance.py runs it for both backends and compares the outcomes.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if os.environ.get("BACKEND") == "tpu_dist":
    import tpu_dist  # noqa: F401  registers the backend in this process and every spawned rank

    for feature in ("plugin", "subgroup", "ddp"):
        DistTestCases.backend_feature[feature].add("tpu_dist")

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest, TestDistBackend)


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

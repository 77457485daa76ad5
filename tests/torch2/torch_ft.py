"""torch's own reconfigure tests (test/distributed/test_c10d_fault_tolerance.py from torch's
source, which the binary package does not ship) on gloo and on tpu_dist.

torch's file makes one test class per (backend, device) pair of its FAULT_TOLERANCE_BACKENDS
through _make_fault_tolerance_test_class. This module imports that file from TD_TORCH_TEST_DIR
(the test/distributed folder of torch's source of the running release), registers tpu_dist and
asks the same factory for a tpu_dist class on CPU; gloo's class is torch's own. Nothing of torch's
tests is changed or copied: both classes run torch's test methods as they are.

    TD_TORCH_TEST_DIR=.../test/distributed python3 -m pytest tests/torch2/torch_ft.py

tests/torch2/test_torch_ft.py runs it for both backends and compares them. The module is
imported again in every spawned rank (torch's MultiProcessTestCase pickles the class by name), so
the tpu_dist class is defined here, at module level, under its own name.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

DIR = os.environ.get("TD_TORCH_TEST_DIR", "")
if not os.path.isfile(os.path.join(DIR, "test_c10d_fault_tolerance.py")):
    raise RuntimeError("TD_TORCH_TEST_DIR=%r has no test_c10d_fault_tolerance.py" % DIR)
sys.path.insert(0, DIR)

import tpu_dist  # noqa: E402,F401  registers the backend here and in every spawned rank
import test_c10d_fault_tolerance as torch_ft  # noqa: E402

GlooFaultToleranceTest = torch_ft.GlooFaultToleranceTest
TpuDistFaultToleranceTest = torch_ft._make_fault_tolerance_test_class("tpu_dist", "cpu")
TpuDistFaultToleranceTest.__module__ = __name__
TpuDistFaultToleranceTest.__name__ = TpuDistFaultToleranceTest.__qualname__ = \
    "TpuDistFaultToleranceTest"

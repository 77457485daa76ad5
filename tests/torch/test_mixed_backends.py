"""A device-typed backend string names one backend per device: "cpu:gloo,cuda:tpu_dist" and
"cpu:tpu_dist,cuda:gloo". On torch 2.x the group keeps both backends: each device's is the named
one, CPU collectives reach the CPU backend only (tpu_dist's sequence number counts its own
operations), and each backend computes exact sums when called directly. torch 1.13 has no
per-device backends: it rejects such a string itself (ValueError, "Invalid backend")."""
import os
import sys
import traceback

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import run_procs  # noqa: E402

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
SPECS = ["cpu:gloo,cuda:tpu_dist", "cpu:tpu_dist,cuda:gloo"]


def _sum_via(backend, rank, world):
    """An all-reduce of rank+1 run by backend itself; its exact sum or a message."""
    t = torch.full((1000,), float(rank + 1))
    backend.allreduce([t]).wait()
    want = float(world * (world + 1) // 2)
    return True if bool((t == want).all()) else "sum %s, want %s" % (t[:3].tolist(), want)


def _mixed_rank(rank, world, spec, init_file, out):
    import torch.distributed as dist
    import tpu_dist

    res = {}
    try:
        dist.init_process_group(spec, init_method="file://" + init_file, rank=rank,
                                world_size=world)
        pg = dist.distributed_c10d._get_default_group()
        cpu_name, cuda_name = [p.split(":")[1] for p in spec.split(",")]
        by_dev = {d: pg._get_backend(torch.device(d)) for d in ("cpu", "cuda")}
        res["types"] = {d: type(b).__name__ for d, b in by_dev.items()}
        ours = by_dev["cpu" if cpu_name == "tpu_dist" else "cuda"]
        res["backend_of"] = tpu_dist.backend_of(pg) is ours
        seq0 = ours._get_sequence_number_for_group()
        t = torch.full((1000,), float(rank + 1))
        dist.all_reduce(t)  # a CPU tensor: the CPU backend's
        res["cpu_sum"] = bool((t == world * (world + 1) // 2).all())
        res["tpu_seq_delta"] = ours._get_sequence_number_for_group() - seq0
        res["direct"] = {d: _sum_via(b, rank, world) for d, b in by_dev.items()}
        res["names"] = (cpu_name, cuda_name)
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001  reported to the test
        res["error"] = traceback.format_exc(limit=6)
    out[rank] = res


@pytest.mark.skipif(not TORCH2, reason="torch 1.13 has no per-device backends")
@pytest.mark.parametrize("spec", SPECS)
def test_both_backends_serve_their_devices(spec):
    world = 2
    codes, hung, out = run_procs(
        _mixed_rank, lambda r, d, o: (r, world, spec, os.path.join(d, "init"), o), world, 120)
    assert hung == [] and codes == [0] * world, (codes, hung, out)
    cpu_name = spec.split(",")[0].split(":")[1]
    want_types = {"gloo": "ProcessGroupGloo", "tpu_dist": "ProcessGroupTpuDist"}
    for r in range(world):
        res = out[r]
        assert "error" not in res, "rank %d: %s" % (r, res["error"])
        cpu_t, cuda_t = (want_types[n] for n in res["names"])
        assert res["types"] == {"cpu": cpu_t, "cuda": cuda_t}, res["types"]
        assert res["backend_of"], "tpu_dist.backend_of did not find the tpu_dist backend"
        assert res["cpu_sum"], "CPU all_reduce gave a wrong sum"
        # the CPU all_reduce went to the CPU backend: tpu_dist counted it only if it is that one
        assert res["tpu_seq_delta"] == (1 if cpu_name == "tpu_dist" else 0), res
        assert res["direct"] == {"cpu": True, "cuda": True}, res["direct"]


@pytest.mark.skipif(TORCH2, reason="torch 2.x accepts per-device backends")
@pytest.mark.parametrize("spec", SPECS)
def test_torch1_rejects_device_strings(spec, tmp_path):
    import torch.distributed as dist
    import tpu_dist  # noqa: F401  registered: the string still names an unknown backend

    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group(spec, init_method="file://%s" % (tmp_path / "init"), rank=0,
                                world_size=1)
    assert not dist.is_initialized()

"""Every difference between the torch releases tpu_dist supports, in one place: what the running
torch has (probes) and the few torch functions tpu_dist wraps so that they also serve tpu_dist
groups (patches). The C++ side has the same role in csrc/torch_compat.hpp.

Probes: TORCH2 (c10d.Backend: torch 2.0), TORCH_2_14 (torch's shrink_group, Backend.shutdown from
destroy_process_group), RECONFIGURE (torch's fault-tolerance contract: 2.13 and later).

Patches (torch 2.x, installed once when the backend registers; each keeps torch's own function
for every group that is not tpu_dist's):
- c10d._shutdown_backend / c10d._abort_process_group: torch shuts down and aborts only its own
  backends there; tpu_dist groups are routed to their backend.
- c10d.split_group (torch's is NCCL-only): tpu_dist parents split with tpudistCommSplit.
- c10d._new_process_group_helper: a group whose devices map to tpu_dist and to other backends
  ("cpu:gloo,cuda:tpu_dist") keeps them all (see making_mixed_group).
"""
import inspect
import threading

from . import _C

BACKEND_NAME = "tpu_dist"
TORCH2 = bool(_C.TORCH_2_0)
TORCH_2_14 = bool(_C.TORCH_2_14)
RECONFIGURE = bool(getattr(_C, "TORCH_RECONFIGURE", False))

# Set while torch makes a group whose devices map to tpu_dist and to other backends (torch 2.x).
_MIXED = threading.local()


def making_mixed_group():
    """True while torch makes a group that maps some devices to tpu_dist and others to other
    backends: the creator then returns the plain backend, which torch registers for its devices
    next to the others (a ProcessGroup returned would replace the group and lose them)."""
    return getattr(_MIXED, "on", False)


def _mixed_backends(backend):
    """True if a backend string maps some devices to tpu_dist and others to other backends."""
    from torch.distributed import distributed_c10d as c10d
    try:
        names = set(str(b) for b in c10d.BackendConfig(backend).get_device_backend_map().values())
    except (ValueError, AssertionError, TypeError):
        return False  # torch's own call reports a malformed string
    return BACKEND_NAME in names and len(names) > 1


def _wrap(module, name, make):
    """Replaces module.name by make(original) once (a marked wrapper is not wrapped again)."""
    orig = getattr(module, name, None)
    if orig is None or getattr(orig, "_tpu_dist", False):
        return None
    wrapper = make(orig)
    wrapper._tpu_dist = True
    setattr(module, name, wrapper)
    return wrapper


def install_torch2_hooks(backend_of, abort_process_group, split_group):
    """Installs the patches above; backend_of(group) finds a group's tpu_dist backend (or None),
    the other two are tpu_dist's own abort and split."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    def mixed(helper):
        sig = inspect.signature(helper)

        def _new_process_group_helper(*args, **kwargs):
            try:
                backend = sig.bind(*args, **kwargs).arguments.get("backend")
            except TypeError:
                backend = None  # torch's own call reports the bad arguments
            prev = getattr(_MIXED, "on", False)
            _MIXED.on = backend is not None and _mixed_backends(backend)
            try:
                return helper(*args, **kwargs)
            finally:
                _MIXED.on = prev
        return _new_process_group_helper

    def shutdown(orig):
        def _shutdown_backend(pg):
            b = backend_of(pg)
            if b is not None:
                b.shutdown()
            else:
                orig(pg)
        return _shutdown_backend

    def abort(orig):
        def _abort_process_group(group=None):
            if backend_of(group) is not None:
                abort_process_group(group)
            else:
                orig(group)
        return _abort_process_group

    def split(orig):
        def _split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None,
                         group_desc=None):
            if c10d.is_initialized() and backend_of(parent_pg) is not None:
                return split_group(parent_pg, split_ranks, timeout, pg_options, group_desc)
            return orig(parent_pg, split_ranks, timeout, pg_options, group_desc)
        return _split_group

    _wrap(c10d, "_new_process_group_helper", mixed)
    _wrap(c10d, "_shutdown_backend", shutdown)
    _wrap(c10d, "_abort_process_group", abort)
    torch_split = getattr(c10d, "split_group", None)
    wrapper = _wrap(c10d, "split_group", split)
    if wrapper is not None and getattr(dist, "split_group", None) is torch_split:
        dist.split_group = wrapper

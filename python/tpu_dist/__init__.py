"""tpu_dist: torch.distributed backend over the tpu_dist C library.

    import tpu_dist
    torch.distributed.init_process_group("tpu_dist", rank=r, world_size=n, init_method=...)

Importing this package registers the backend "tpu_dist" once. If another package already
registered that name (e.g. TorchTPU's own backend), the import fails with a clear error rather
than silently replacing it.
"""
import torch.distributed as dist

from . import _C  # noqa: E402  (needs torch.distributed imported first)

BACKEND_NAME = "tpu_dist"
_REGISTERED = False


def _create(store, rank, size, timeout):
    return _C.create_process_group(store, rank, size, timeout)


def _register():
    global _REGISTERED
    if _REGISTERED:
        return
    plugins = getattr(dist.Backend, "_plugins", {})
    key = BACKEND_NAME.upper()
    if key in plugins or hasattr(dist.Backend, key):
        existing = plugins.get(key)
        func = getattr(existing, "creator_fn", existing)
        if func is _create:
            _REGISTERED = True
            return
        raise RuntimeError(
            "tpu_dist: a torch.distributed backend named 'tpu_dist' is already registered by "
            "another package (%r); uninstall it or import only one of them" % (func,))
    try:  # torch 2.x: declare CPU support (a list: a string would be split into characters)
        dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu"])
    except TypeError:  # torch 1.13 has no devices argument
        dist.Backend.register_backend(BACKEND_NAME, _create)
    _REGISTERED = True


_register()

__all__ = ["BACKEND_NAME"]

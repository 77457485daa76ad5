"""tpu_dist: torch.distributed backend over the tpu_dist C library.

    import tpu_dist
    torch.distributed.init_process_group("tpu_dist", rank=r, world_size=n, init_method=...)

Importing this package registers the backend "tpu_dist" once. If another package already
registered that name (e.g. TorchTPU's own backend), the import fails with a clear error rather
than silently replacing it.

On torch 2.x the backend is registered with the extended API (its options carry the group's
timeout, name and global ranks) and also provides:

- split_group(parent_pg, split_ranks): new groups split from a tpu_dist parent with
  tpudistCommSplit (no store traffic, no new rendezvous); dist.split_group uses it for tpu_dist
  parents (torch's own is NCCL-only);
- shrink_group(group, exclude_ranks, abort): the survivors of a failure form a new group with
  tpudistCommShrink (no store, no rendezvous; also on torch 1.13);
- torch's reconfigure contract (torch 2.13+): init_process_group(..., enable_reconfigure=True),
  dist._get_reconfigure_handle(), dist._reconfigure(uuid, handles) (docs/torch.md, "Reconfigure");
- abort_process_group(group): fails every pending operation at once and destroys the group(s);
  dist.destroy_process_group shuts tpu_dist groups down (pending operations fail, never hang);
- device-typed backend strings ("cpu:gloo,cuda:tpu_dist" or the reverse): the group keeps every
  backend named, each serving its device (torch 1.13 rejects such strings itself).
"""
import torch
import torch.distributed as dist

from . import _C  # noqa: E402  (needs torch.distributed imported first)
from . import _compat

BACKEND_NAME = _compat.BACKEND_NAME
# The group options: timeout, group_name, global_ranks_in_group, mode (strict, debug, defer;
# empty: TPU_DIST_MODE). On torch 2.x, pass one as pg_options to set a new group's mode.
Options = _C.Options
TORCH2 = _compat.TORCH2
_REGISTERED = False


def _create(store, rank, size, timeout):  # torch 1.13: (store, rank, size, timeout)
    return _C.create_process_group(store, rank, size, Options(timeout))


def _create_ext(dist_opts, pg_options):  # torch 2.x, extended_api=True
    """pg_options (new_group's, init_process_group's): None or an Options whose mode the group
    takes; the timeout, name and ranks are always torch's for the group being made."""
    opts = Options(dist_opts.timeout)
    if pg_options is not None:
        if not isinstance(pg_options, Options):
            raise TypeError("tpu_dist: pg_options must be a tpu_dist.Options, not %s" %
                            type(pg_options).__name__)
        opts.mode = pg_options.mode
    opts.group_name = dist_opts.group_id
    opts.global_ranks_in_group = list(dist_opts.global_ranks_in_group)
    if _compat.RECONFIGURE:  # no communicator until dist._reconfigure
        opts.enable_reconfigure = bool(getattr(dist_opts, "enable_reconfigure", False))
    backend = _C.create_process_group(dist_opts.store, dist_opts.group_rank,
                                      dist_opts.group_size, opts)
    if _compat.making_mixed_group():
        # The group maps other devices to other backends ("cpu:gloo,cuda:tpu_dist"): torch's own
        # ProcessGroup holds them all; a ProcessGroup returned here would replace it and lose them.
        return backend
    # A ProcessGroup, which torch uses as the group itself: it is named "tpu_dist" (torch's own
    # would say "custom") and answers sequence numbers from the backend.
    return _C.GroupTpuDist(dist_opts.store, backend)


_CREATOR = _create_ext if TORCH2 else _create


def _register():
    global _REGISTERED
    if _REGISTERED:
        return
    plugins = getattr(dist.Backend, "_plugins", {})
    key = BACKEND_NAME.upper()
    if key in plugins or hasattr(dist.Backend, key):
        existing = plugins.get(key)
        func = getattr(existing, "creator_fn", existing)
        if func is _CREATOR:
            _REGISTERED = True
            return
        raise RuntimeError(
            "tpu_dist: a torch.distributed backend named 'tpu_dist' is already registered by "
            "another package (%r); uninstall it or import only one of them" % (func,))
    if TORCH2:  # declare CPU support (a list: a string would be split into characters)
        dist.Backend.register_backend(BACKEND_NAME, _CREATOR, extended_api=True, devices=["cpu"])
        _compat.install_torch2_hooks(backend_of, abort_process_group, split_group)
    else:  # torch 1.13 has no devices argument
        dist.Backend.register_backend(BACKEND_NAME, _CREATOR)
    _REGISTERED = True


def backend_of(group=None):
    """The ProcessGroupTpuDist behind a process group (the default one if None), or None."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if pg is None or pg == dist.GroupMember.NON_GROUP_MEMBER:
        return None
    if not TORCH2:
        return pg if isinstance(pg, _C.ProcessGroupTpuDist) else None
    # CPU first; a group of several backends ("cpu:gloo,cuda:tpu_dist") has it on another device
    devices = ["cpu"] + [str(d) for d in getattr(pg, "_device_types", []) if str(d) != "cpu"]
    for device in devices:
        try:
            b = pg._get_backend(torch.device(device))
        except RuntimeError:
            continue
        if isinstance(b, _C.ProcessGroupTpuDist):
            return b
    return None


def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None, group_desc=None):
    """torch's split_group for a tpu_dist parent: every rank of the parent calls it with the same
    split_ranks (lists of parent group ranks); returns this rank's new group, or None. The new
    communicators come from tpudistCommSplit on the parent: no store operations, no rendezvous."""
    from torch.distributed import distributed_c10d as c10d
    if split_ranks is None:
        raise ValueError("split_ranks cannot be None")
    parent_pg = parent_pg or c10d._get_default_group()
    parent = backend_of(parent_pg)
    if parent is None:
        raise RuntimeError("tpu_dist.split_group: the parent group has no tpu_dist backend")
    world = c10d._world
    g2p = world.pg_group_ranks[parent_pg]  # global rank -> parent group rank
    p2g = {p: g for g, p in g2p.items()}
    me = parent_pg.rank()
    seen = set()
    color, mine = _TPU_NOCOLOR, None
    for i, ranks in enumerate(split_ranks):
        if not ranks or len(ranks) != len(set(ranks)) or seen & set(ranks):
            raise ValueError("tpu_dist.split_group: splits must be non-empty and disjoint")
        if any(r < 0 or r >= parent_pg.size() for r in ranks):
            raise ValueError("tpu_dist.split_group: ranks must be ranks of the parent group")
        seen |= set(ranks)
        if me in ranks:
            color, mine = i, sorted(ranks)
    timeout = timeout or parent.options.timeout
    # Named on every rank, members or not, so later groups get the same names everywhere.
    name = c10d._process_group_name(mine or [], use_hashed_name=False)
    if mine is None:
        parent.perform_nocolor_split()
        return None
    opts = Options(timeout)
    global_ranks = [p2g[r] for r in mine]
    opts.group_name = name
    opts.global_ranks_in_group = global_ranks
    backend = parent.split(color, mine.index(me), opts)
    return _adopt(parent_pg, backend, name, global_ranks,
                  group_desc or "%s:split" % parent_pg.group_desc)


def _adopt(parent_pg, backend, name, global_ranks, desc):
    """Registers a backend made from parent_pg's communicator (split, shrink) with torch as a
    process group named name whose members are global_ranks (in group-rank order); returns it."""
    from torch.distributed import distributed_c10d as c10d
    if not TORCH2:  # torch 1.13: the backend is the ProcessGroup; module-level maps
        c10d._pg_map[backend] = (dist.Backend(BACKEND_NAME), c10d._pg_map[parent_pg][1])
        c10d._pg_names[backend] = name
        c10d._pg_group_ranks[backend] = {g: i for i, g in enumerate(global_ranks)}
        return backend
    world = c10d._world
    _, store = world.pg_map[parent_pg]
    pg = _C.GroupTpuDist(c10d.PrefixStore(name + "/", store), backend)
    pg._set_group_name(name)
    pg._set_group_desc(desc)
    world.pg_map[pg] = (dist.Backend(BACKEND_NAME), store)
    world.pg_names[pg] = name
    c10d._register_process_group(name, pg)
    world.pg_backend_config[pg] = str(c10d.BackendConfig(dist.Backend(BACKEND_NAME)))
    world.tags_to_pg.setdefault("ptd:" + name, []).append(pg)
    world.pg_to_tag[pg] = "ptd:" + name
    world.pg_group_ranks[pg] = {g: i for i, g in enumerate(global_ranks)}
    return pg


def _group_ranks(pg):
    """global rank -> group rank of a registered group (torch 2.x and 1.13)."""
    from torch.distributed import distributed_c10d as c10d
    return (c10d._world.pg_group_ranks if TORCH2 else c10d._pg_group_ranks)[pg]


def _next_group_name(ranks):
    """The name torch would give the next new group (the same on every rank that makes it)."""
    from torch.distributed import distributed_c10d as c10d
    if TORCH2:
        return c10d._process_group_name(ranks, use_hashed_name=False)
    name = str(c10d._group_count)  # as torch 1.13's _new_process_group_helper names groups
    c10d._group_count += 1
    return name


def shrink_group(group=None, exclude_ranks=None, abort=True, timeout=None, group_desc=None):
    """The survivors of a tpu_dist group (the default one if None) form a new group, without a new
    rendezvous and without the store (tpudistCommShrink on the group's communicator).

    exclude_ranks: ranks of `group` to leave out, the same list on every survivor; None: the
    failed set the library detected, agreed among the survivors (every survivor ends with the
    same members, also when they saw different failures). abort=True (TPUDIST_SHRINK_ABORT)
    first fails the group's running and queued operations (after a failure: nothing waits for
    the dead ranks); abort=False lets them complete first (a healthy group).

    Every survivor calls it; returns the new group, whose ranks are the survivors renumbered in
    their old order; pass it as group= to torch.distributed calls (DDP: process_group=). A caller
    in exclude_ranks gets a ValueError; one the others counted as failed gets an error. `group`
    is left for destroying only (after abort every operation on it fails at once); its
    destruction never waits for the failed ranks."""
    group = group if group is not None else dist.distributed_c10d._get_default_group()
    old = backend_of(group)
    if old is None:
        raise RuntimeError("tpu_dist.shrink_group: the group has no tpu_dist backend")
    exclude = sorted(set(int(r) for r in (exclude_ranks or [])))
    if any(r < 0 or r >= group.size() for r in exclude):
        raise ValueError("tpu_dist.shrink_group: exclude_ranks must be ranks of the group")
    if group.rank() in exclude:
        raise ValueError("tpu_dist.shrink_group: rank %d is in exclude_ranks: only survivors "
                         "call shrink_group" % group.rank())
    opts = None
    if timeout is not None:
        opts = Options(timeout)
    backend, members = old.shrink(exclude, abort, opts)
    g2p = _group_ranks(group)
    p2g = {p: g for g, p in g2p.items()}
    global_ranks = [p2g[r] for r in members]
    name = _next_group_name(global_ranks)
    if opts is None:
        opts = backend.options
    opts.group_name = name
    opts.global_ranks_in_group = global_ranks
    desc = group_desc or "%s:shrink" % getattr(group, "group_desc", "group")
    return _adopt(group, backend, name, global_ranks, desc)


_TPU_NOCOLOR = _C.SPLIT_NOCOLOR


def abort_process_group(group=None):
    """Aborts a tpu_dist group (every group if None): its running and pending operations fail at
    once with an error, without waiting for any peer; then the group is destroyed."""
    from torch.distributed import distributed_c10d as c10d
    names = c10d._world.pg_names if hasattr(c10d, "_world") else c10d._pg_names  # 2.x, 1.13
    groups = list(names) if group in (None, dist.GroupMember.WORLD) else [group]
    for pg in groups:
        b = backend_of(pg)
        if b is not None:
            b.abort()
    dist.destroy_process_group(group)


_register()

__all__ = ["BACKEND_NAME", "Options", "abort_process_group", "backend_of", "shrink_group",
           "split_group"]

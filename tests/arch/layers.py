#!/usr/bin/python3
"""tests/arch/layers.py - the layers depend one way (docs/architecture.md).

Reads every #include "..." of the library's sources and fails, naming the file and line, when one
runs the wrong way: a folder may include headers of its own folder and of the layers below it
only. Below means reachable through USES (what each layer builds on directly, as its include path
in Makefile.am does), lowest first:

    base < kernels, topology; topology < collectives/ir
    collectives/ir < collectives/validate, collectives/algos/common, collectives/cost
    collectives/algos/common < collectives/algos/<coll> (one per collective, none including
        another) < collectives/algos (the table)
    collectives/validate, collectives/algos, collectives/cost < collectives/drive (by name)
        < collectives/select
    collectives/select, kernels < sim, src/rt < src/bootstrap < src/transport < src/exec < src/core

So the validator and the cost model know no generator, and the runtime never includes sim/.
src/transport includes its transports' folders. It also fails on a header name that two folders
define (the include would be ambiguous), on an include it cannot resolve and on a source file of
collectives/ outside every layer (a new folder must take its place), and prints the folder graph.
It also reports every file circle (circles.py: files that include or call each other round a
cycle) and fails on one that ALLOWED_CIRCLES does not list, or on a listed one that is gone.
Exit status 0 when the house is in order.

    tests/arch/layers.py [ROOT]     checks the tree at ROOT (default: this checkout)
"""
import os
import re
import sys

import circles

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
COLLS = "collectives/algos/*"  # one folder per collective, found in the tree (not common/)
USES = {
    "base": [],
    "kernels": ["base"],
    "topology": ["base"],
    "collectives/ir": ["topology"],
    "collectives/validate": ["collectives/ir"],
    "collectives/algos/common": ["collectives/ir"],
    COLLS: ["collectives/algos/common"],
    "collectives/algos": [COLLS],
    "collectives/cost": ["collectives/ir"],
    "collectives/drive": ["collectives/validate", "collectives/algos", "collectives/cost"],
    "collectives/select": ["collectives/drive"],
    "sim": ["collectives/select", "kernels"],
    "src/rt": ["collectives/select", "kernels"],
    "src/bootstrap": ["src/rt"],
    "src/transport": ["src/bootstrap"],
    "src/exec": ["src/transport"],
    "src/core": ["src/exec"],
}
PLACED = ("collectives",)  # every source below these folders must lie in a layer
# The file circles that remain (circles.py), each (kind, its files sorted): a new circle fails, and
# so does an entry here whose circle is gone. src/core and src/exec have none left.
ALLOWED_CIRCLES = {
    # the socket transport's connection setup, send and receive paths
    ("call", ("src/transport/socket/sock_auth.c", "src/transport/socket/sock_recv.c",
              "src/transport/socket/sock_send.c", "src/transport/socket/socket.c")),
    # the torus model and its slices
    ("call", ("topology/topo_slices.c", "topology/torus.c")),
}
PUBLIC = {"tpu_dist.h"}  # include/: the public header, visible to every layer
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layers():
    """The layers (lowest first, the collectives' folders of the tree at TOP in place of COLLS)
    and what each may include besides itself: every layer reachable through USES."""
    algos = os.path.join(TOP, "collectives", "algos")
    colls = sorted("collectives/algos/" + d for d in os.listdir(algos)
                   if d != "common" and os.path.isdir(os.path.join(algos, d))) \
        if os.path.isdir(algos) else []

    def expand(names):
        return [c for n in names for c in (colls if n == COLLS else [n])]

    names, below = expand(USES), {}
    for name in USES:
        for layer in expand([name]):
            below[layer] = set()
            todo = expand(USES[name])
            while todo:
                dep = todo.pop()
                if dep not in below[layer]:
                    below[layer].add(dep)
                    todo += [d for key in USES if dep in expand([key]) for d in expand(USES[key])]
    return names, below


def layer_of(path, names):
    rel = os.path.relpath(path, TOP)
    for name in sorted(names, key=len, reverse=True):
        if rel == name or rel.startswith(name + "/"):
            return name
    return None


def sources(roots):
    for name in roots:
        for root, _, files in os.walk(os.path.join(TOP, name)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(root, f)


def roots(names):
    """The folders to walk: the layers no other layer contains, and PLACED."""
    folders = list(names) + list(PLACED)
    return sorted({n for n in folders if not any(n.startswith(o + "/") for o in folders)})


def include_errors(path, src, names, below, headers, edges, includes):
    errors = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m or m.group(1) in PUBLIC:
                continue
            inc, where = m.group(1), "%s:%d" % (os.path.relpath(path, TOP), lineno)
            local = os.path.normpath(os.path.join(os.path.dirname(path), inc))
            targets = [local] if os.path.exists(local) else headers.get(os.path.basename(inc))
            if not targets:
                errors.append("%s: #include \"%s\" names no header of the tree" % (where, inc))
                continue
            includes.setdefault(path, set()).add(targets[0])
            dst = layer_of(targets[0], names)
            if dst == src:
                continue
            edges[(src, dst)] = edges.get((src, dst), 0) + 1
            if dst not in below[src]:
                errors.append("%s: #include \"%s\" runs from %s to %s, not below it" %
                              (where, inc, src, dst))
    return errors


def circle_errors(files, includes, names):
    """Prints every file circle; the errors: circles not in ALLOWED_CIRCLES, and allowed ones
    that are gone."""
    rel = lambda p: os.path.relpath(p, TOP)
    errors, seen = [], set()
    for kind, members in circles.circles(files, includes, rel):
        key = (kind, tuple(members))
        seen.add(key)
        layer = layer_of(os.path.join(TOP, members[0]), names)
        print("circle (%s, %s): %s" % (kind, layer, " ".join(members)))
        if key not in ALLOWED_CIRCLES:
            errors.append("%s circle in %s not in the allow-list: %s" %
                          (kind, layer, " ".join(members)))
    for kind, members in sorted(set(ALLOWED_CIRCLES) - seen):
        errors.append("allowed %s circle is gone (take it off the list): %s" %
                      (kind, " ".join(members)))
    return errors


def main():
    global TOP
    if len(sys.argv) > 1:
        TOP = os.path.abspath(sys.argv[1])
    names, below = layers()
    files, headers, errors = [], {}, []
    for path in sources(roots(names)):
        if layer_of(path, names) is None:
            errors.append("%s lies in no layer" % os.path.relpath(path, TOP))
            continue
        files.append(path)
        if path.endswith(".h"):
            headers.setdefault(os.path.basename(path), []).append(path)
    for name, paths in headers.items():
        if len({layer_of(p, names) for p in paths}) > 1:
            errors.append("header %s is defined in several layers: %s" %
                          (name, ", ".join(os.path.relpath(p, TOP) for p in paths)))
    edges, includes = {}, {}
    for path in files:
        errors += include_errors(path, layer_of(path, names), names, below, headers, edges,
                                 includes)
    for (src, dst), n in sorted(edges.items(), key=lambda e: (names.index(e[0][0]), e[0][1])):
        print("%-31s -> %-31s %3d includes" % (src, dst, n))
    errors += circle_errors(files, includes, names)
    for e in errors:
        print("LAYERS: " + e)
    print("%d errors (wrong-way or unresolved includes, unlisted or gone circles)" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

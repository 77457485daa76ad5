#!/usr/bin/python3
"""tests/arch/layers.py - the layers depend one way (docs/architecture.md).

Reads every #include "..." of the library's sources and fails, naming the file and line, when one
runs the wrong way: a folder may include headers of its own folder and of the layers below it
only. The order, lowest first:

    base < topology < collectives < src/rt < src/bootstrap < src/transport < src/exec < src/core

(src/transport includes its transports' folders; sim/ sits on collectives like src/rt and is
never included by the runtime). It also fails on a header name that two folders define (the
include would be ambiguous) and on an include it cannot resolve, and prints the folder graph.
Exit status 0 when the house is in order.

    tests/arch/layers.py [ROOT]     checks the tree at ROOT (default: this checkout)
"""
import os
import re
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LAYERS = ["base", "topology", "collectives", "sim", "src/rt", "src/bootstrap", "src/transport",
          "src/exec", "src/core"]
# what each layer may include besides itself (everything below it, except sim for the runtime)
BELOW = {name: set(LAYERS[:i]) for i, name in enumerate(LAYERS)}
for name in ("src/rt", "src/bootstrap", "src/transport", "src/exec", "src/core"):
    BELOW[name].discard("sim")
PUBLIC = {"tpu_dist.h"}  # include/: the public header, visible to every layer
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    rel = os.path.relpath(path, TOP)
    for name in sorted(LAYERS, key=len, reverse=True):
        if rel == name or rel.startswith(name + "/"):
            return name
    return None


def sources():
    for name in LAYERS:
        for root, _, files in os.walk(os.path.join(TOP, name)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(root, f)


def main():
    global TOP
    if len(sys.argv) > 1:
        TOP = os.path.abspath(sys.argv[1])
    headers, errors = {}, []
    for path in sources():
        if path.endswith(".h"):
            headers.setdefault(os.path.basename(path), []).append(path)
    for name, paths in headers.items():
        if len({layer_of(p) for p in paths}) > 1:
            errors.append("header %s is defined in several layers: %s" %
                          (name, ", ".join(os.path.relpath(p, TOP) for p in paths)))
    edges = {}
    for path in sources():
        src = layer_of(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                if inc in PUBLIC:
                    continue
                local = os.path.normpath(os.path.join(os.path.dirname(path), inc))
                targets = [local] if os.path.exists(local) else headers.get(os.path.basename(inc))
                if not targets:
                    errors.append("%s:%d: #include \"%s\" names no header of the tree" %
                                  (os.path.relpath(path, TOP), lineno, inc))
                    continue
                dst = layer_of(targets[0])
                if dst != src:
                    edges.setdefault((src, dst), 0)
                    edges[(src, dst)] += 1
                if dst != src and dst not in BELOW[src]:
                    errors.append("%s:%d: #include \"%s\" runs from %s up to %s" %
                                  (os.path.relpath(path, TOP), lineno, inc, src, dst))
    for (src, dst), n in sorted(edges.items(), key=lambda e: (LAYERS.index(e[0][0]), e[0][1])):
        print("%-14s -> %-14s %3d includes" % (src, dst, n))
    for e in errors:
        print("LAYERS: " + e)
    print("%d wrong-way or unresolved includes" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

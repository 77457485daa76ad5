#!/usr/bin/python3
"""tests/arch/doclinks.py - no document names a file that is not in the repository.

    tests/arch/doclinks.py [ROOT]

Reads README.md and every Markdown file under docs/ and finds the paths they name: Markdown links
and images (relative to the document), paths from the top of the tree (src/exec/exec.c,
docs/results/, tests/run) and bare Markdown file names (reliability.md: next to the document, at the
top or in docs/). Each must be a file or folder git knows (committed or added), a program the build
makes (a *_PROGRAMS, *_SCRIPTS or *_LTLIBRARIES entry of Makefile.am or a Makefile.inc), or the
prefix of such a file's name (bench/compare's --out docs/results/perf/np2 writes np2.csv). Names
with a placeholder ($VAR, <name>, *, DIR/) are skipped, and so are the folders the tree writes
when it runs (tests/out, bench/results). Prints each dangling reference as
FILE:LINE: PATH and exits 1 if there is one; then shows that a planted dangling reference is found.
"""
import os
import re
import subprocess
import sys

TOP_DIRS = ("base", "bench", "collectives", "docs", "examples", "include", "m4", "python",
            "scripts", "sim", "src", "tests", "tools", "topology")
ROOT_FILES = ("README.md", "configure.ac", "Makefile.am", ".clang-format")
PATH_RE = re.compile(r"(?<![\w./$<{-])((?:%s)/[\w./+-]*[\w+/-]|(?:%s)(?![\w.-]))" %
                     ("|".join(TOP_DIRS), "|".join(re.escape(f) for f in ROOT_FILES)))
MD_NAME_RE = re.compile(r"(?<![\w./$<{-])([A-Za-z][\w-]*\.md)(?![\w-])")
LINK_RE = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
PLACEHOLDER = re.compile(r"[$*<>{}]|(?:^|/)[A-Z][A-Z_]+(?:/|$)")
# made when the tree runs, never committed: tests/run's logs, bench/compare's default output
RUNTIME = ("tests/out", "bench/results")


def known_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                          "--exclude-standard"], stdout=subprocess.PIPE, text=True, check=True)
    files = set(out.stdout.split())
    files = {f for f in files if os.path.exists(os.path.join(root, f))}
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    return files | build_products(root, files), dirs


def build_products(root, files):
    """Every entry of a *_PROGRAMS / *_SCRIPTS / *_LTLIBRARIES variable of the automake files."""
    text = ""
    for f in sorted(files):
        if f == "Makefile.am" or f.endswith("/Makefile.inc"):
            with open(os.path.join(root, f)) as fh:
                text += fh.read().replace("\\\n", " ") + "\n"
    assigned = {}
    for m in re.finditer(r"^([A-Za-z_][\w]*)\s*\+?=(.*)$", text, re.M):
        assigned.setdefault(m.group(1), []).append(m.group(2))

    def expand(value, depth=0):
        if depth > 8:
            return value
        return re.sub(r"\$\((\w+)\)",
                      lambda m: expand(" ".join(assigned.get(m.group(1), [])), depth + 1), value)

    products = set()
    for var, values in assigned.items():
        if var.endswith(("_PROGRAMS", "_SCRIPTS", "_LTLIBRARIES")):
            for v in values:
                products.update(t for t in expand(v).split() if "/" in t)
    return products


def resolve(ref, doc, root, files, dirs):
    """True when ref, named in doc (a path from the top), is in the repository."""
    ref = ref.rstrip("/.,")
    if ref.startswith(RUNTIME):
        return True
    cands = [ref]
    if ref.split("/")[0] not in TOP_DIRS + ROOT_FILES:
        base = os.path.dirname(doc)
        cands = [os.path.normpath(os.path.join(base, ref)), ref, os.path.join("docs", ref)]
    for c in cands:
        if c in files or c in dirs or any(f.startswith(c + ".") for f in files):
            return True
    return False


def references(text):
    """(line number, path) of every path text names."""
    for n, line in enumerate(text.split("\n"), 1):
        seen = set()
        for m in LINK_RE.finditer(line):
            ref = m.group(1)
            if re.match(r"[a-z]+:", ref):
                continue
            seen.add(ref)
            yield n, ref
        for rx in (PATH_RE, MD_NAME_RE):
            for m in rx.finditer(line):
                ref = m.group(1)
                if ref in seen or PLACEHOLDER.search(ref):
                    continue
                seen.add(ref)
                yield n, ref


def check(root, docs, files, dirs):
    bad = []
    for doc in docs:
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            text = f.read()
        for n, ref in references(text):
            if not resolve(ref, doc, root, files, dirs):
                bad.append("%s:%d: %s" % (doc, n, ref))
    return bad


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    files, dirs = known_files(root)
    docs = sorted(f for f in files if f == "README.md" or
                  (f.startswith("docs/") and f.endswith(".md")))
    bad = check(root, docs, files, dirs)
    for b in bad:
        print("dangling reference: " + b)
    print("doclinks: %d documents, %d dangling references" % (len(docs), len(bad)))
    # the check must be able to fail: a planted reference to a missing file and a missing page
    planted = [r for _, r in references("see src/exec/no_such_file.c and [x](gone.md), DESIGN.md")
               if not resolve(r, "docs/x.md", root, files, dirs)]
    if planted != ["gone.md", "src/exec/no_such_file.c", "DESIGN.md"]:
        print("FAIL: planted dangling references found as %s" % planted)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

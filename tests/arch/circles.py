"""tests/arch/circles.py - file circles: sets of files that depend on each other round a cycle.

Two graphs over the library's sources, each read from the text (comments and strings left out):
  include: header -> the headers it includes (a .c file is never included, so a circle of
           includes is a circle of headers);
  call:    .c file -> the .c files defining a function it names (called, or taken as a pointer
           into a table); a static function is private to its file and names nothing.
A circle is a strongly connected component of two files or more. layers.py reports each one with
the layer it lies in and fails on a circle that is not in its allow-list, and on an allow-listed
circle that no longer exists (the list only shrinks).
"""
import os
import re

TOKEN = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|'
                   r'^[ \t]*#[^\n]*(?:\\\n[^\n]*)*|[A-Za-z_]\w*|[{}();]|\S', re.S | re.M)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case", "goto",
            "static", "inline", "extern", "const", "struct", "union", "enum", "typedef"}


def tokens(text):
    """The code tokens of text: identifiers and punctuation, with comments, strings and
    preprocessor lines (#include ...) left out; a #define's body is left out too."""
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t.startswith(("/*", "//", '"', "'")) or t.lstrip().startswith("#"):
            continue
        yield t


def scan(text):
    """(global functions defined, identifiers named inside braces) of one .c file."""
    defined, named = set(), set()
    depth, paren, decl, last_ident, cand = 0, 0, [], None, None
    for t in tokens(text):
        if depth == 0:
            if t == "(":
                if paren == 0 and last_ident and last_ident not in KEYWORDS | {"__attribute__"}:
                    cand = last_ident  # the last name before a parameter list at the top
                paren += 1
            elif t == ")":
                paren -= 1
            elif t == ";":
                decl, cand = [], None
            elif t == "{":
                if cand and paren == 0 and "static" not in decl and "=" not in decl:
                    defined.add(cand)
                decl, cand = [], None
                depth += 1
                continue
            decl.append(t)
        else:
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
            elif re.match(r"[A-Za-z_]", t):
                named.add(t)
        last_ident = t if re.match(r"[A-Za-z_]\w*$", t) else None
    return defined, named


DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)((?:[^\n]*\\\n)*[^\n]*)", re.M)


def macros(texts):
    """{macro name: identifiers of its body} over the texts of all files."""
    out = {}
    for text in texts:
        for m in DEFINE.finditer(text):
            out.setdefault(m.group(1), set()).update(re.findall(r"[A-Za-z_]\w*", m.group(2)))
    return out


def expand(named, defs):
    """named with the identifiers of the macros it names, and of theirs, added."""
    out, todo = set(named), [n for n in named if n in defs]
    while todo:
        for ident in defs[todo.pop()]:
            if ident not in out:
                out.add(ident)
                if ident in defs:
                    todo.append(ident)
    return out


def sccs(graph):
    """Strongly connected components (of two nodes or more) of {node: set(successors)}."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(comp)
            elif nxt not in index:
                index[nxt] = low[nxt] = counter[0]
                counter[0] += 1
                stack.append(nxt)
                on.add(nxt)
                work.append((nxt, iter(sorted(graph.get(nxt, ())))))
            elif nxt in on:
                low[node] = min(low[node], index[nxt])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def circles(files, includes, rel):
    """The include and call circles among files (paths); includes maps a file to the paths of
    the headers it includes. Returns a list of (kind, sorted relative paths)."""
    texts = {}
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts[path] = f.read()
    defs = macros(texts.values())
    defined_in, named = {}, {}
    for path in files:
        if path.endswith(".c"):
            d, n = scan(texts[path])
            for fn in d:
                defined_in.setdefault(fn, set()).add(path)
            named[path] = expand(n, defs)
    calls = {p: {q for fn in n for q in defined_in.get(fn, ()) if q != p}
             for p, n in named.items()}
    inc = {p: {q for q in includes.get(p, ()) if q != p} for p in files if p.endswith(".h")}
    found = [("include", sorted(rel(p) for p in c)) for c in sccs(inc)]
    found += [("call", sorted(rel(p) for p in c)) for c in sccs(calls)]
    return sorted(found)

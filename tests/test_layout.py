"""The source tree keeps its shape: no import circle among the modules of src/ (module A uses
module B when A's object file needs a symbol B's defines: `nm` of the objects `make` built),
and no function over 100 lines in src/, cuda/ or include/."""

import glob
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 100


def module_graph(objects):
    defs, uses = {}, {}
    for o in objects:
        m = os.path.relpath(o, os.path.join(ROOT, "build"))[:-2]
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        uses[m] = set()
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRC":
                defs[p[2]] = m
            elif len(p) == 2 and p[0] == "U":
                uses[m].add(p[1])
    return {m: {defs[s] for s in u if s in defs and defs[s] != m} for m, u in uses.items()}


def circles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_in_src():
    # the objects of today's sources (build/ may keep those of files since moved or removed)
    objects = [o for o in glob.glob(os.path.join(ROOT, "build", "**", "*.o"), recursive=True)
               if os.path.exists(os.path.join(ROOT, "src", os.path.relpath(o, os.path.join(ROOT, "build"))[:-2] + ".c"))]
    if len(objects) < 20:
        pytest.skip("build/ has no objects (run make first)")
    graph = module_graph(objects)
    assert circles(graph) == [], "modules that use each other"


def test_circle_finder_finds_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def long_functions(path):
    """Functions whose body runs over MAX_LINES lines (signature at column 0, closing brace at
    column 0: the tree's clang-format style)."""
    out, start, cand, name = [], None, None, ""
    for i, line in enumerate(open(path, errors="replace"), 1):
        if re.match(r"^[A-Za-z_].*\(", line) and not line.rstrip().endswith(";"):
            cand, sig = i, line.strip()
        if line.startswith("{") or re.match(r"^[A-Za-z_].*\) *\{$", line.rstrip()):
            start, name = (cand, sig) if line.startswith("{") else (i, line.strip())
        if line.startswith("}"):
            if start and i - start > MAX_LINES:
                out.append(f"{os.path.relpath(path, ROOT)}:{start} {name[:60]} ({i - start} lines)")
            start = None
    return out


def test_no_function_over_100_lines():
    files = [f for pat in ("src/**/*.c", "src/**/*.h", "cuda/*.cu", "cuda/*.h", "include/*.h")
             for f in glob.glob(os.path.join(ROOT, pat), recursive=True)]
    assert files
    assert [x for f in sorted(files) for x in long_functions(f)] == []

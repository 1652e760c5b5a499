#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the library as a graph of calls between files, read from the object files'
symbol tables (nm): every call of an internal function (kiln__*; the public API, kiln_*,
is anyone's to call) goes from a layer to itself or to a layer that src/LAYERS lets it use (so the runtime and the frontend reach no concrete backend, and the CPU
backend's lib/ calls nothing of eval/ or engine/), the registry's call of its builtins
(backend/registry.c -> backends/builtin.c) excepted, and no circle of files runs through
src/backends/, src/runtime/ or src/frontend/. Other circles (mutual
recursion such as the autodiff transforms and the control-flow rules that differentiate
their bodies with them) are listed, not failed.

usage: check_link_graph.py SOURCE_DIR BUILD_DIR"""
import collections
import glob
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDRB":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


# The one call up, on purpose: the registry asks the builtins' table for its backends.
ALLOWED_UP = {("backend/registry.c", "backends/builtin.c")}


def read_layers(src):
    """src/LAYERS as {layer: set of the layers it may use, itself included}."""
    uses = {}
    with open(os.path.join(src, "src", "LAYERS")) as f:
        for line in f:
            if line.startswith("#") or ":" not in line:
                continue
            name, rest = line.split(":", 1)
            uses[name.strip()] = {name.strip(), *rest.split()}
    return uses


def layer_of(path, uses):
    """The layer of a file under src/: the longest of its folders that src/LAYERS lists."""
    d = os.path.dirname(path)
    while d and d not in uses:
        d = os.path.dirname(d)
    return d


def main():
    src, build = sys.argv[1], sys.argv[2]
    uses = read_layers(src)
    files = {}
    for obj in glob.glob(os.path.join(build, "CMakeFiles", "kiln_*.dir", "src", "**", "*.c.o"),
                         recursive=True):
        name = obj.split(os.sep + "src" + os.sep, 1)[1][: -len(".o")]
        if os.path.exists(os.path.join(src, "src", name)):  # not a stale object
            files[name] = symbols(obj)
    if len(files) < 50:
        print(f"link graph: only {len(files)} object files under {build}", file=sys.stderr)
        return 1
    owner = {s: f for f, (d, _) in files.items() for s in d}
    graph = collections.defaultdict(set)
    internal = collections.defaultdict(set)  # calls of kiln__ functions only
    for f, (_, used) in files.items():
        graph[f] |= {owner[s] for s in used if s in owner and owner[s] != f}
        internal[f] |= {owner[s] for s in used
                        if s in owner and owner[s] != f and s.startswith("kiln__")}
    status = 0
    for f in sorted(graph):
        lf = layer_of(f, uses)
        for t in sorted(internal[f]):
            lt = layer_of(t, uses)
            if lt not in uses.get(lf, ()) and (f, t) not in ALLOWED_UP:
                print(f"link graph: src/{f} ({lf}) calls into src/{t} ({lt}), a layer it may not use",
                      file=sys.stderr)
                status = 1
    # Strongly connected components (Tarjan), iteratively.
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in sorted(files):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    for comp in comps:
        guarded = any(c.split("/")[0] in ("backends", "runtime", "frontend") for c in comp)
        print(f"link graph: {'circle' if guarded else 'note: circle'} {' <-> '.join(comp)}",
              file=sys.stderr if guarded else sys.stdout)
        status |= guarded
    if status == 0:
        print(f"link graph: ok ({len(files)} files)")
    return status


if __name__ == "__main__":
    sys.exit(main())

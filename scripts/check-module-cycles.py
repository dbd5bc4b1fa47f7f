#!/usr/bin/env python3
"""Finds import cycles between the source files of each crate.

A file "imports" another when it names a path into that file's module
(`crate::a::b`, `super::x`, `self::y`, or a `use` of them). A module and its
own submodules may name each other (`session.rs` and `session/streams.rs`);
any other cycle (a → b → … → a) is reported. Test code (`#[cfg(test)]`
modules and `tests/`) is not looked at.

Usage: scripts/check-module-cycles.py [CRATE_DIR ...]   (default: crates/* and loadtest)
Exit status 1 when a crate has a cycle.
"""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)::\{([^;]*)\};", re.S)


def modules(src):
    """Module path (tuple) → file, for every .rs file under src."""
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                rel = []
            elif rel[-1] == "mod":
                rel = rel[:-1]
            mods[tuple(rel)] = os.path.join(dirpath, f)
    return mods


def strip_tests(text):
    """The text without `#[cfg(test)]` items (a module or a function)."""
    out, i = [], 0
    while True:
        j = text.find("#[cfg(test)]", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.find("{", j)
        semi = text.find(";", j)
        if k < 0 or (0 <= semi < k):
            i = semi + 1
            continue
        depth = 0
        for n in range(k, len(text)):
            if text[n] == "{":
                depth += 1
            elif text[n] == "}":
                depth -= 1
                if depth == 0:
                    i = n + 1
                    break
        else:
            return "".join(out)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def resolve(base, names, mods):
    """The longest module path of `base + names` that is a file."""
    path = list(base)
    best = tuple(path)
    for n in names:
        path.append(n)
        if tuple(path) in mods:
            best = tuple(path)
        else:
            break
    return best


def edges(mods):
    graph = {m: set() for m in mods}
    for mod, file in mods.items():
        with open(file, encoding="utf-8") as fh:
            text = strip_comments(strip_tests(fh.read()))
        # this file's own module path for `self`/`super` (a file foo.rs is module foo)
        refs = []
        for root, rest in PATH.findall(text):
            refs.append((root, [n for n in rest.split("::") if n]))
        for root, group in USE_GROUP.findall(text):
            for item in group.split(","):
                item = item.strip().split(" as ")[0]
                head = item.split("::")[0].strip("{} \n")
                if head:
                    refs.append((root, [head]))
        for root, names in refs:
            if root == "crate":
                base = ()
            elif root == "self":
                base = mod
            else:
                supers = 1
                while names and names[0] == "super":
                    supers += 1
                    names = names[1:]
                base = mod[: max(0, len(mod) - supers)]
            target = resolve(base, names, mods)
            if target != mod:
                graph[mod].add(target)
    return graph


def related(a, b):
    """A module and its own submodule (at any depth)."""
    return a[: len(b)] == b or b[: len(a)] == a


def cycles(graph):
    """Strongly connected components (Tarjan) of the graph without the
    edges between a module and its own submodules, larger than one."""
    g = {m: {t for t in ts if not related(m, t)} for m, ts in graph.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    crates = argv or sorted(
        [os.path.join(root, "crates", c) for c in os.listdir(os.path.join(root, "crates"))]
        + [os.path.join(root, "loadtest")]
    )
    bad = 0
    for crate in crates:
        src = os.path.join(crate, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        found = cycles(edges(mods))
        name = os.path.basename(crate.rstrip("/"))
        for comp in found:
            bad += 1
            files = ", ".join(os.path.relpath(mods[m], crate) for m in comp)
            print(f"cycle in {name}: {files}")
        if not found:
            print(f"no cycle in {name} ({len(mods)} files)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

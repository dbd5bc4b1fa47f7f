#!/usr/bin/env python3
"""Finds import cycles between the source files of each crate.

Per crate, a graph of files: an edge A -> B when file A names an item that
file B defines, by a `use` (trees with braces, `self`, `super`, `crate`,
`as`, globs) or by a path in code (`crate::a::B`, `super::x`, `self::y`,
`child_module::Z`, `Imported::Variant`). Names are followed through
imports and `pub use` re-exports to the file that defines them
(`use crate::Bar` where lib.rs has `pub use foo::Bar` is an edge to
foo.rs); a name that cannot be followed (made by a macro, say) stops at
the module that was reached. A module and its own submodules are no
exception: `session.rs` naming `requests::X` is an edge session.rs ->
session/requests.rs, and `super::SessionActor` there is the edge back.
`mod x;` itself is not an edge. Test code is not looked at: `#[cfg(test)]`
items, files named tests.rs and tests/ directories. Paths into other crates
are not edges.

Every strongly connected component of more than one file is a cycle: it is
printed with a few shortest cycles that pass through all of its files, each
edge with the line (file:line) that makes it.

Usage: scripts/check-module-cycles.py [--edges] [--no-reexports] [CRATE_DIR ...]
           (default: crates/* and loadtest)
       scripts/check-module-cycles.py --sizes [--limit N] [CRATE_DIR ...]
           (default: crates/*)
  --edges         also print every edge with the line that makes it
  --no-reexports  a `pub use` makes no edge (it is still followed to the
                  file defining what it names): what is left once facades
                  (`mod x; pub use x::X;`) are not counted as depending on x
  --sizes         instead: line counts of the non-test source files, the
                  ones over N lines (500) and the median (see sizes())
Exit status 1 when a crate has a cycle; the last line is `module cycles: N`
(N = components of more than one file, over all crates).
"""
import os
import re
import statistics
import sys
from collections import deque

# --- lexing -------------------------------------------------------------------

IDENT = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")
RAW_STR = re.compile(r'(?:b|c)?r(#*)"')
NUMBER = re.compile(r"[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9_]*(?:[eE][+-]?[0-9_]+)?)?")
CHAR = re.compile(r"b?'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]+\}|.)|[^\\'\n])'")
PUNCT2 = ("::", "->", "=>")


class Tok:
    __slots__ = ("kind", "val", "line")

    def __init__(self, kind, val, line):
        self.kind, self.val, self.line = kind, val, line

    def __repr__(self):
        return f"{self.val}@{self.line}"


def lex(text):
    """Tokens (kind ident/punct/lit/life), without comments; strings and
    chars become one `lit` token."""
    toks, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            line += text.count("\n", i, j)
            i = j
            continue
        m = RAW_STR.match(text, i)
        if m:
            end = text.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            toks.append(Tok("lit", '""', line))
            line += text.count("\n", i, j)
            i = j
            continue
        if c == '"' or (c in "bc" and text.startswith('"', i + 1)):
            j = i + (1 if c == '"' else 2)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            toks.append(Tok("lit", '""', line))
            line += text.count("\n", i, j)
            i = j
            continue
        if c == "'" or (c == "b" and text.startswith("'", i + 1)):
            m = CHAR.match(text, i)
            if m:
                toks.append(Tok("lit", "''", line))
                i = m.end()
                continue
            m = IDENT.match(text, i + 1)
            if c == "'" and m:  # a lifetime or a label
                toks.append(Tok("life", "'" + m.group(), line))
                i = m.end()
                continue
        m = IDENT.match(text, i)
        if m:
            v = m.group()
            toks.append(Tok("ident", v[2:] if v.startswith("r#") else v, line))
            i = m.end()
            continue
        m = NUMBER.match(text, i)
        if m:
            toks.append(Tok("lit", "0", line))
            i = m.end()
            continue
        if text.startswith(PUNCT2, i):
            toks.append(Tok("punct", text[i : i + 2], line))
            i += 2
            continue
        toks.append(Tok("punct", c, line))
        i += 1
    return toks


# --- #[cfg(test)] ---------------------------------------------------------------

ITEM_KW = {
    "fn", "mod", "impl", "struct", "enum", "union", "trait", "type", "const",
    "static", "use", "macro_rules", "extern", "unsafe", "async", "pub", "crate",
}
OPEN, CLOSE = {"(": ")", "[": "]", "{": "}"}, {")", "]", "}"}


def match_close(toks, i):
    """Index of the bracket closing the one at i (or len(toks))."""
    depth = 0
    for j in range(i, len(toks)):
        v = toks[j].val
        if toks[j].kind != "punct":
            continue
        if v in OPEN:
            depth += 1
        elif v in CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


def is_test_cfg(attr):
    """attr: the tokens between `#[` and `]`."""
    v = [t.val for t in attr]
    if v[:2] != ["cfg", "("]:
        return False
    inner = v[2:-1]
    if inner == ["test"]:
        return True
    if inner[:2] == ["all", "("]:  # all(test, ...): test at the top level of all(...)
        depth = 0
        for x in inner[2:-1]:
            if x in OPEN:
                depth += 1
            elif x in CLOSE:
                depth -= 1
            elif x == "test" and depth == 0:
                return True
    return False


def strip_tests(toks):
    """(tokens without `#[cfg(test)]` items, [(first line, last line)] of
    what was removed, whether the whole file is `#![cfg(test)]`)."""
    out, removed, i, n = [], [], 0, len(toks)
    while i < n:
        t = toks[i]
        if t.val == "#" and i + 1 < n and toks[i + 1].val in ("[", "!"):
            inner = toks[i + 1].val == "!"
            b = i + 2 if inner else i + 1
            if b < n and toks[b].val == "[":
                e = match_close(toks, b)
                if is_test_cfg(toks[b + 1 : e]):
                    if inner:
                        return [], [(toks[0].line, toks[-1].line)], True
                    j = skip_item(toks, e + 1)
                    removed.append((t.line, toks[min(j, n) - 1].line))
                    i = j
                    continue
        out.append(t)
        i += 1
    return out, removed, False


def skip_item(toks, i):
    """Index just after the item (or field, statement) that starts at i."""
    n = len(toks)
    while i + 1 < n and toks[i].val == "#" and toks[i + 1].val == "[":  # more attributes
        i = match_close(toks, i + 1) + 1
    if i >= n:
        return n
    item = toks[i].val in ITEM_KW
    if toks[i].val == "{":
        return match_close(toks, i) + 1
    depth = 0
    for j in range(i, n):
        v = toks[j].val
        if toks[j].kind != "punct":
            continue
        if v in OPEN:
            depth += 1
        elif v in CLOSE:
            depth -= 1
            if depth < 0:  # the end of what holds it (a struct's last field)
                return j
            if depth == 0 and v == "}" and item:
                return j + 1
        elif depth == 0 and (v == ";" or (v == "," and not item)):
            return j + 1
    return n


# --- parsing one file -------------------------------------------------------------

DEF_KW = {"struct", "enum", "union", "trait", "type", "fn", "const", "static"}


class FileInfo:
    def __init__(self):
        self.mod_decls = []  # (scope, name, line): `mod name;`
        self.inline = []  # (scope, name): `mod name { ... }`
        self.defs = {}  # scope -> names defined at its top level
        self.uses = []  # (scope, segs, alias, glob, line, module_level, is_pub)
        self.paths = []  # (scope, segs, line)


def parse_use_tree(toks, i, prefix, out):
    """Leaves of the use tree at i as (segs, alias, glob, line); index after it."""
    segs = list(prefix)
    n = len(toks)
    while i < n:
        t = toks[i]
        if t.val == "::":
            if not segs:
                segs.append("::")  # a leading `::`: another crate
            i += 1
            continue
        if t.val == "*":
            out.append((segs, None, True, t.line))
            return i + 1
        if t.val == "{":
            i += 1
            while i < n and toks[i].val != "}":
                i = parse_use_tree(toks, i, segs, out)
                if i < n and toks[i].val == ",":
                    i += 1
            return i + 1
        if t.kind == "ident":
            segs.append(t.val)
            line = t.line
            i += 1
            if i < n and toks[i].val == "::":
                continue
            alias = None
            if i + 1 < n and toks[i].val == "as":
                alias = toks[i + 1].val
                i += 2
            if segs[-1] == "self" and len(segs) > 1:
                segs = segs[:-1]
            name = alias or segs[-1]
            out.append((segs, None if name == "_" else name, False, line))
            return i
        return i + 1  # something unexpected: skip it
    return i


def parse_file(toks):
    info = FileInfo()
    scopes = [((), 0)]  # (inline module path, brace depth of its top level)
    depth, i, n = 0, 0, len(toks)
    while i < n:
        t = toks[i]
        scope, top = scopes[-1]
        if t.kind == "punct":
            if t.val == "{":
                depth += 1
            elif t.val == "}":
                depth -= 1
                if len(scopes) > 1 and depth < top:
                    scopes.pop()
            i += 1
            continue
        if t.kind != "ident":
            i += 1
            continue
        v = t.val
        prev = toks[i - 1].val if i else ""
        if v == "mod" and i + 2 < n and toks[i + 1].kind == "ident":
            name = toks[i + 1].val
            if toks[i + 2].val == ";":
                info.mod_decls.append((scope, name, t.line))
                i += 3
                continue
            if toks[i + 2].val == "{":
                info.inline.append((scope, name))
                info.defs.setdefault(scope, set())
                depth += 1
                scopes.append((scope + (name,), depth))
                i += 3
                continue
        if v == "use" and prev != "::":
            k = i - 1  # `pub use`, `pub(crate) use`: a re-export
            if k >= 0 and toks[k].val == ")":
                while k > 0 and toks[k].val != "(":
                    k -= 1
                k -= 1
            is_pub = k >= 0 and toks[k].val == "pub"
            j = i + 1
            leaves = []
            while j < n and toks[j].val != ";":
                j = parse_use_tree(toks, j, [], leaves)
            for segs, alias, glob, line in leaves:
                info.uses.append((scope, segs, alias, glob, line, depth == top, is_pub))
            i = j + 1
            continue
        if v in DEF_KW and depth == top and i + 1 < n and toks[i + 1].kind == "ident":
            name = toks[i + 1].val
            if name not in ("fn", "unsafe", "async", "extern", "_"):
                info.defs.setdefault(scope, set()).add(name)
        if v == "macro_rules" and i + 2 < n and toks[i + 1].val == "!":
            info.defs.setdefault(scope, set()).add(toks[i + 2].val)
        # a path in code: IDENT (:: IDENT)+, not itself the tail of a path
        if i + 2 < n and toks[i + 1].val == "::" and toks[i + 2].kind == "ident" and prev != "::":
            segs, j = [v], i + 1
            if prev == "$" and v == "crate":
                segs = ["crate"]
            while j + 1 < n and toks[j].val == "::" and toks[j + 1].kind == "ident":
                segs.append(toks[j + 1].val)
                j += 2
            info.paths.append((scope, segs, t.line))
            i = j
            continue
        i += 1
    return info


# --- the module tree of a crate ----------------------------------------------------


class Module:
    def __init__(self, key, file, parent):
        self.key, self.file, self.parent = key, file, parent
        self.children = {}  # name -> key
        self.defs = set()
        self.imports = {}  # name -> [segs] (a name may be in two namespaces)
        self.globs = []  # [segs]


def is_test_file(path):
    parts = path.split(os.sep)
    return parts[-1] == "tests.rs" or "tests" in parts[:-1]


class Crate:
    def __init__(self, crate_dir):
        self.dir = crate_dir
        self.src = os.path.join(crate_dir, "src")
        self.mods = {}  # key (root, path tuple) -> Module
        self.files = {}  # file -> FileInfo
        self.file_mod = {}  # file -> key of its module
        self.lines = {}  # file -> its lines (for quoting)
        roots = [os.path.join(self.src, f) for f in ("lib.rs", "main.rs")]
        bindir = os.path.join(self.src, "bin")
        if os.path.isdir(bindir):
            roots += sorted(os.path.join(bindir, f) for f in os.listdir(bindir) if f.endswith(".rs"))
        self.roots = {r for r in roots if os.path.isfile(r)}
        for r in sorted(self.roots):
            self.load(r, (r, ()), None)
        self._memo = {}

    def rel(self, file):
        return os.path.relpath(file, self.dir)

    def load(self, file, key, parent):
        """Parses file as module key and the files of its `mod x;`; False
        when it is test code."""
        if file in self.files:
            return True
        if is_test_file(os.path.relpath(file, self.src)):
            return False
        with open(file, encoding="utf-8") as fh:
            text = fh.read()
        self.lines[file] = text.split("\n")
        toks, _, all_test = strip_tests(lex(text))
        if all_test:
            return False
        info = parse_file(toks)
        self.files[file] = info
        self.file_mod[file] = key
        root, path = key
        self.mods[key] = Module(key, file, parent)
        for scope, name in info.inline:  # outer scopes come first
            k = (root, path + scope + (name,))
            self.mods[k] = Module(k, file, (root, path + scope))
            self.mods[(root, path + scope)].children[name] = k
        for scope, names in info.defs.items():
            self.mods[(root, path + scope)].defs |= names
        for scope, segs, alias, glob, _, module_level, _ in info.uses:
            if not module_level:
                continue
            m = self.mods[(root, path + scope)]
            if glob:
                m.globs.append(segs)
            elif alias:
                m.imports.setdefault(alias, []).append(segs)
        base = os.path.dirname(file)
        if file not in self.roots and os.path.basename(file) != "mod.rs":
            base = os.path.join(base, os.path.basename(file)[:-3])
        for scope, name, _ in info.mod_decls:
            d = os.path.join(base, *scope)
            for cand in (os.path.join(d, name + ".rs"), os.path.join(d, name, "mod.rs")):
                if os.path.isfile(cand):
                    k = (root, path + scope + (name,))
                    if self.load(cand, k, (root, path + scope)):
                        self.mods[(root, path + scope)].children[name] = k
                    break
        return True

    # Resolution: ("mod", key) for a module, ("item", file) for an item
    # defined in file, ("stop", file) when the name could not be followed
    # past the module in file, None for another crate.

    def start(self, key, segs):
        """The module a path begins in and the rest of the path; None when
        it begins in another crate (or is not a path into this one)."""
        first = segs[0]
        if first == "crate":
            return (key[0], ()), segs[1:]
        if first == "self":
            return key, segs[1:]
        if first == "super":
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    if self.mods[key].parent is None:
                        return None
                    key = self.mods[key].parent
                segs = segs[1:]
            return key, segs
        m = self.mods[key]
        if first in m.children or first in m.imports or first in m.defs:
            return key, segs
        return None

    def walk(self, key, segs, seen=frozenset()):
        while True:
            m = self.mods[key]
            if not segs:
                return ("mod", key)
            s, rest = segs[0], segs[1:]
            if s == "self":
                segs = rest
                continue
            if s == "super":
                if m.parent is None:
                    return ("stop", m.file)
                key, segs = m.parent, rest
                continue
            if s in m.children and (rest or s not in m.defs):
                key, segs = m.children[s], rest
                continue
            if s in m.imports and (key, s) not in seen:
                r = self.import_target(key, s, seen | {(key, s)})
                if r is not None:
                    if r[0] == "mod":
                        key, segs = r[1], rest
                        continue
                    return r
            if s in m.defs:
                return ("item", m.file)
            for g in m.globs:
                st = self.start(key, g)
                if st is None or (key, "*" + "::".join(g)) in seen:
                    continue
                r = self.walk(st[0], st[1], seen | {(key, "*" + "::".join(g))})
                if r and r[0] == "mod":
                    r2 = self.walk(r[1], segs, seen | {(key, "*" + "::".join(g))})
                    if r2 and r2[0] != "stop":
                        return r2
            return ("stop", m.file)

    def import_target(self, key, name, seen):
        """What `name`, imported by a `use` in module key, is."""
        memo = (key, name)
        if memo in self._memo:
            return self._memo[memo]
        best = None
        for segs in self.mods[key].imports[name]:
            st = self.start(key, segs)
            if st is None:
                continue
            r = self.walk(st[0], st[1], seen)
            if best is None or (best[0] == "stop" and r[0] != "stop"):
                best = r
        if len(seen) == 1:  # only memoise answers that no cycle guard cut short
            self._memo[memo] = best
        return best

    def target_file(self, r):
        if r is None:
            return None
        return self.mods[r[1]].file if r[0] == "mod" else r[1]

    def edges(self, reexports=True):
        """{file: {file: (line, what)}}: the first line making each edge (a
        `use` when there is one) and what it names there. Without reexports,
        `pub use` lines make no edge (they are still followed)."""
        graph = {f: {} for f in self.files}
        for file, info in self.files.items():
            root, path = self.file_mod[file]
            refs = []
            for scope, segs, alias, glob, line, _, is_pub in info.uses:
                if is_pub and not reexports:
                    continue
                what = ("pub use " if is_pub else "use ") + "::".join(segs) + ("::*" if glob else "")
                if alias and alias != segs[-1]:
                    what += " as " + alias
                refs.append((scope, segs, line, "use", what))
            refs += [(scope, segs, line, "path", None) for scope, segs, line in info.paths]
            local_imports = {}  # imports inside fn bodies, for this file's own paths
            for scope, segs, alias, glob, _, ml, _ in info.uses:
                if alias and not ml:
                    local_imports.setdefault((scope, alias), segs)
            for scope, segs, line, kind, what in refs:
                if not segs or segs[0] in ("::", "Self"):
                    continue
                key = (root, path + scope)
                st = self.start(key, segs)
                if st is None and (scope, segs[0]) in local_imports:
                    st = self.start(key, local_imports[(scope, segs[0])] + segs[1:])
                if st is None:
                    continue
                target = self.target_file(self.walk(*st))
                if target is None or target == file:
                    continue
                have = graph[file].get(target)
                if have is None or (have[2] == "path" and kind == "use") or (
                    have[2] == kind and line < have[0]
                ):
                    graph[file][target] = (line, what or self.quote(file, line), kind)
        return graph

    def quote(self, file, line):
        return self.lines[file][line - 1].strip()


# --- cycles ---------------------------------------------------------------------------


def sccs(graph):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for v0 in sorted(graph):
        if v0 in index:
            continue
        work = [(v0, iter(sorted(graph[v0])))]
        index[v0] = low[v0] = counter
        counter += 1
        stack.append(v0)
        on.add(v0)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
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
                    out.append(sorted(comp))
    return out


def shortest_cycle(graph, comp, v):
    """The shortest cycle v -> ... -> v inside comp, as a list of nodes."""
    inside = set(comp)
    prev = {}
    q = deque([v])
    seen = {v}
    while q:
        u = q.popleft()
        for w in sorted(graph[u]):
            if w not in inside:
                continue
            if w == v:
                path = [u]
                while path[-1] != v:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [v]
            if w not in seen:
                seen.add(w)
                prev[w] = u
                q.append(w)
    return [v]


def check(crate_dirs, show_edges, reexports):
    total = 0
    for crate_dir in crate_dirs:
        if not os.path.isdir(os.path.join(crate_dir, "src")):
            continue
        c = Crate(crate_dir)
        name = os.path.basename(crate_dir.rstrip("/"))
        graph = c.edges(reexports)
        if show_edges:
            for a in sorted(graph):
                for b, (line, what, _) in sorted(graph[a].items()):
                    print(f"edge {name}: {c.rel(a)} -> {c.rel(b)}  ({c.rel(a)}:{line}: {what})")
        found = sccs(graph)
        if not found:
            print(f"no cycle in {name} ({len(c.files)} files)")
        for comp in found:
            total += 1
            print(f"cycle {total} in {name}: {len(comp)} files: " + ", ".join(c.rel(f) for f in comp))
            covered = set()
            for v in comp:
                if v in covered:
                    continue
                cyc = shortest_cycle(graph, comp, v)
                covered |= set(cyc)
                print("  " + " -> ".join(c.rel(f) for f in cyc))
                for a, b in zip(cyc, cyc[1:]):
                    line, what, _ = graph[a][b]
                    print(f"    {c.rel(a)}:{line} -> {c.rel(b)}: {what}")
    print(f"module cycles: {total}")
    return 1 if total else 0


# --- sizes ------------------------------------------------------------------------------


def sizes(crate_dirs, limit):
    """Lines of every .rs file under CRATE/src but tests.rs files and tests/
    directories, less the lines of its `#[cfg(test)]` items (from the
    attribute to the item's last line). Blank and comment lines count."""
    counts = []
    for crate_dir in crate_dirs:
        src = os.path.join(crate_dir, "src")
        for dirpath, dirs, files in os.walk(src):
            dirs[:] = sorted(d for d in dirs if d != "tests")
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                if not f.endswith(".rs") or is_test_file(os.path.relpath(path, src)):
                    continue
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
                _, removed, all_test = strip_tests(lex(text))
                if all_test:
                    continue
                test_lines = sum(b - a + 1 for a, b in removed)
                counts.append((total - test_lines, total, path))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    big = sorted((c for c in counts if c[0] > limit), reverse=True)
    print(f"non-test source files over {limit} lines (lines less #[cfg(test)] items; all lines):")
    for n, total, path in big:
        print(f"  {n:6d} {total:6d}  {os.path.relpath(path, root)}")
    if counts:
        med = statistics.median(c[0] for c in counts)
        print(f"files: {len(counts)}, over {limit}: {len(big)}, median: {med:g} lines, "
              f"total: {sum(c[0] for c in counts)} lines")
        if med > MAX_MEDIAN:
            print(f"median over {MAX_MEDIAN} lines")
            return 1
    return 1 if big else 0


# The shape the code keeps (#32): no file over 500 lines, median at most 160.
MAX_MEDIAN = 160


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    show_edges = "--edges" in argv
    reexports = "--no-reexports" not in argv
    want_sizes = "--sizes" in argv
    limit = 500
    args = []
    it = iter(argv)
    for a in it:
        if a == "--limit":
            limit = int(next(it))
        elif a not in ("--edges", "--sizes", "--no-reexports"):
            args.append(a)
    crates = sorted(os.path.join(root, "crates", c) for c in os.listdir(os.path.join(root, "crates")))
    if want_sizes:
        return sizes(args or crates, limit)
    return check(args or crates + [os.path.join(root, "loadtest")], show_edges, reexports)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

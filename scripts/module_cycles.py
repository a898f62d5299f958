#!/usr/bin/env python3
"""Module graph of a crate's production code, and its cycles.

Usage: scripts/module_cycles.py [SRC_DIR...]   (default: binary-sv2/src)

One node per module file. An edge A -> B when A's code names B through a path
(`crate::…`, `$crate::…`, `super::…`, `self::…`), outside `#[cfg(test)]` items and
comments. A path that ends in an item re-exported elsewhere (`crate::Wire`) counts
towards the module that defines the item, so re-exports in a facade (lib.rs, mod.rs)
add no edge of their own: `pub use x::Y` in a parent is an edge parent -> x only.
Exits with status 1 if the graph has a cycle. Given several directories, checks each in
turn (each one's output under a `== DIR` line) and exits with status 1 if any has a cycle.
"""
import os
import re
import subprocess
import sys

if len(sys.argv) > 2:
    failed = False
    for src in sys.argv[1:]:
        print(f"== {src}", flush=True)
        failed |= subprocess.run([sys.executable, __file__, src]).returncode != 0
    sys.exit(1 if failed else 0)
SRC = sys.argv[1] if len(sys.argv) > 1 else "binary-sv2/src"


def module_of(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("lib", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def strip(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        j = m.end()
        # Skip the item: up to its `;` or its balanced `{…}`.
        while j < len(text) and text[j] not in "{;":
            j += 1
        if j < len(text) and text[j] == "{":
            depth = 0
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
        else:
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


files = {}
for root, _, names in os.walk(SRC):
    for fname in names:
        if fname.endswith(".rs"):
            rel = os.path.relpath(os.path.join(root, fname), SRC)
            with open(os.path.join(root, fname)) as f:
                files[module_of(rel)] = strip(f.read())
if not files:
    sys.exit(f"no .rs file under {SRC}")
modules = set(files)

ITEM = re.compile(
    r"\b(?:struct|enum|trait|type|union|fn|const|static|mod)\s+([A-Za-z_]\w*)|macro_rules!\s*([A-Za-z_]\w*)"
)
defs = {}
for mod, text in files.items():
    for m in ITEM.finditer(text):
        name = m.group(1) or m.group(2)
        if (mod + (name,)) in modules:
            continue  # `mod name;`: the module itself
        defs.setdefault(name, set()).add(mod)


def show(m):
    return "::".join(m) if m else "crate"


def expand_use(mod, text):
    """Every path of every `use` tree, plus every other path through `crate::`,
    `super::`, `self::` or a module brought in by `use` (which itself counts for
    nothing: `use super::common;` then `common::SetupConnection` is an edge to the
    module that defines `SetupConnection`)."""
    paths, aliases = [], set()
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        for path in flatten(m.group(1).replace("\n", " ")):
            if path[0] in ("crate", "$crate", "super", "self") and resolve_module(mod, path):
                aliases.add(path[-1])
            else:
                paths.append(path)
    rest = re.sub(r"\buse\s+[^;]+;", "", text)
    heads = "|".join([r"\$crate", r"\bcrate", r"\bsuper", r"\bself"] + [rf"\b{a}" for a in aliases])
    for m in re.finditer(rf"(?<![\w:])(?:{heads})(?:\s*::\s*\w+)+", rest):
        path = [p.strip() for p in m.group(0).split("::")]
        if path[0] in aliases:
            path = ["self"] + path if mod + (path[0],) in modules else ["super"] + path
        paths.append(path)
    return paths


def resolve_module(mod, path):
    """Whether `path` names a module itself (not an item in one)."""
    target = resolve(mod, path)
    if target is None:
        return False
    base = {"crate": (), "$crate": ()}.get(path[0], mod)
    return target in modules and target[-1:] == (path[-1],) and target != base


def flatten(tree):
    tree = tree.strip()
    m = re.match(r"^(.*?)::\s*\{(.*)\}$", tree, flags=re.S)
    if not m:
        return [[p.strip() for p in re.sub(r"\s+as\s+\w+$", "", tree).split("::")]]
    prefix = [p.strip() for p in m.group(1).split("::")]
    out, depth, cur = [], 0, ""
    for ch in m.group(2) + ",":
        if ch == "," and depth == 0:
            if cur.strip():
                out.extend(prefix + p for p in flatten(cur))
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    return out


def resolve(mod, path):
    head = path[0]
    if head in ("crate", "$crate"):
        base, rest = (), path[1:]
    elif head == "super":
        base, rest = mod, path
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    elif head == "self":
        base, rest = mod, path[1:]
    elif mod + (head,) in modules:
        base, rest = mod, path
    else:
        return None
    while rest and base + (rest[0],) in modules:
        base, rest = base + (rest[0],), rest[1:]
    if rest and rest[0] not in ("*", "self"):
        return defining(base, rest[0], 0)
    return base


def defining(mod, item, depth):
    """The module that defines `item`, named in `mod`: followed through `pub use`."""
    if item not in defs and item.endswith("Ref") and item[:-3] in defs:
        item = item[:-3]  # `#[derive(Wire)]` defines `NameRef` beside `Name`
    if depth > 8 or mod in defs.get(item, ()) or (mod, item) in searching:
        return mod
    # A glob re-export can name the module's own items again (sv2c's `pub use
    # crate::messages::*;` inside its inline `prelude`, where `messages` comes from
    # another glob): a search already under way for this name here ends at `mod`.
    searching.add((mod, item))
    try:
        return follow_reexports(mod, item, depth)
    finally:
        searching.discard((mod, item))


searching = set()


def follow_reexports(mod, item, depth):
    for path in reexports.get(mod, []):
        if path[-1] == item:
            return resolve(mod, path) or mod
    for path in reexports.get(mod, []):
        if path[-1] == "*":
            inner = resolve(mod, path[:-1])
            if inner is not None and inner != mod:
                found = defining(inner, item, depth + 1)
                if found != inner or item in defs_or_macro(inner):
                    return found
    return mod


def defs_or_macro(mod):
    """Names `mod` defines, also through an item-level macro call (`bytes_type!(U256, 32)`)."""
    names = {n for n, ms in defs.items() if mod in ms}
    names |= set(re.findall(r"\b([A-Z]\w*)\b", files[mod]))
    return names


reexports = {
    mod: [p for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text)
          for p in flatten(m.group(1).replace("\n", " "))]
    for mod, text in files.items()
}


graph = {m: set() for m in modules}
for mod, text in files.items():
    for path in expand_use(mod, text):
        target = resolve(mod, path)
        if target is not None and target != mod and target in modules:
            graph[mod].add(target)


# Tarjan's strongly connected components.
index, low, stack, on, sccs = {}, {}, [], set(), []


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in sorted(graph[v]):
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
        sccs.append(comp)


sys.setrecursionlimit(10000)
for v in sorted(modules):
    if v not in index:
        visit(v)

for m in sorted(modules):
    deps = ", ".join(sorted(show(d) for d in graph[m])) or "-"
    print(f"{show(m):32} -> {deps}")
cycles = [sorted(c) for c in sccs if len(c) > 1]
if cycles:
    for c in cycles:
        print("CYCLE:", " <-> ".join(show(m) for m in c))
    sys.exit(1)
print("no cycle")

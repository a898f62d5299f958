#!/usr/bin/env python3
"""Size of the servers' code: lines per file, files over 700 lines, functions over 80.

Usage: scripts/server_lines.py [SRC_DIR]   (default: roles/src)

Counts the `.rs` files under SRC_DIR without the test kit (`demo.rs`, `mock_pool.rs`,
`miner.rs`, the `test-kit` feature's modules) and without a file's `#[cfg(test)]` module:
a file is counted up to the line `#[cfg(test)]` followed by a `mod` line (the tests come
last in every file). Prints each file's count (smallest first), the total, the files over
700 lines and the functions over 80 lines.

A function's length is found by a scan of braces, not by a parser: from the line of its
`fn NAME` to the line where the braces opened after it close again (a `;` before any brace
is a declaration without a body and is skipped). Braces inside string and character
literals and comments are ignored; raw strings are not recognised (the servers have none
that hold a brace). A function is named with the `impl` it is in (`Type::name`) when the
`impl` line is found at a lower depth.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "roles/src"
KIT = {"demo.rs", "mock_pool.rs", "miner.rs"}
MAX_FILE = 700
MAX_FN = 80

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
IMPL = re.compile(r"^\s*(?:unsafe\s+)?impl\b(?:<[^{]*?>)?\s+(?:[^{]*?\bfor\s+)?([A-Za-z_][A-Za-z0-9_]*)")
CHAR = re.compile(r"'(?:\\.|[^'\\])'")


def production_lines(path):
    """The lines of `path` before its `#[cfg(test)]` module."""
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines):
            if lines[i + 1].lstrip().startswith(("mod ", "pub mod ", "pub(crate) mod ")):
                return lines[:i]
    return lines


def code_of(line, in_comment):
    """`line` without comments and the insides of literals; whether a block comment is
    still open at its end."""
    out = []
    i, n = 0, len(line)
    in_string = False
    while i < n:
        c = line[i]
        if in_comment:
            if line.startswith("*/", i):
                in_comment = False
                i += 2
            else:
                i += 1
            continue
        if in_string:
            if c == "\\":
                i += 2
            elif c == '"':
                in_string = False
                i += 1
            else:
                i += 1
            continue
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_comment = True
            i += 2
            continue
        if c == '"':
            in_string = True
            i += 1
            continue
        m = CHAR.match(line, i)
        if m:
            i = m.end()
            continue
        out.append(c)
        i += 1
    return "".join(out), in_comment


def long_functions(lines):
    """`(length, name, first line)` of every function of more than MAX_FN lines."""
    found = []
    depth = 0
    impls = []  # (depth inside the impl, type name)
    pending_impl = None
    pending_fn = None  # (name, line index, bracket depth at `fn`)
    nest = 0  # open ( and [
    open_fns = []  # (depth inside the body, name, line index)
    in_comment = False
    for i, raw in enumerate(lines):
        code, in_comment = code_of(raw, in_comment)
        m = IMPL.match(code)
        if m:
            pending_impl = m.group(1)
        m = FN.search(code)
        if m:
            pending_fn = (m.group(1), i, nest)
        for c in code:
            if c in "([":
                nest += 1
            elif c in ")]":
                nest -= 1
            elif c == ";" and pending_fn is not None and nest == pending_fn[2]:
                pending_fn = None
            elif c == "{":
                depth += 1
                if pending_fn is not None:
                    name, start, _ = pending_fn
                    owner = impls[-1][1] if impls else None
                    open_fns.append((depth, f"{owner}::{name}" if owner else name, start))
                    pending_fn = None
                elif pending_impl is not None:
                    impls.append((depth, pending_impl))
                    pending_impl = None
            elif c == "}":
                if open_fns and open_fns[-1][0] == depth:
                    _, name, start = open_fns.pop()
                    length = i - start + 1
                    if length > MAX_FN:
                        found.append((length, name, start + 1))
                if impls and impls[-1][0] == depth:
                    impls.pop()
                depth -= 1
    return found


def main():
    total = 0
    rows = []
    long_fns = []
    for directory, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs") or f in KIT:
                continue
            path = os.path.join(directory, f)
            lines = production_lines(path)
            total += len(lines)
            rows.append((len(lines), path))
            long_fns += [(n, name, path, line) for n, name, line in long_functions(lines)]
    for n, path in sorted(rows):
        print(n, path)
    print("total", total)
    big = [(n, p) for n, p in sorted(rows, reverse=True) if n > MAX_FILE]
    print(f"files over {MAX_FILE} lines: {len(big)}")
    for n, path in big:
        print(f"  {n} {path}")
    print(f"functions over {MAX_FN} lines: {len(long_fns)}")
    for n, name, path, line in sorted(long_fns, reverse=True):
        print(f"  {n} {name} ({path}:{line})")


if __name__ == "__main__":
    main()

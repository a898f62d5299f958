#!/usr/bin/env python3
"""Two builds' servers side by side: every figure of the `loadgen` tables that
`scripts/servers_bench.sh` left in two directories, as the median over each
configuration's runs, with the change from the first to the second.

    SERVERS=/old/target/release/examples NO_BUILD=1 scripts/servers_bench.sh target/sb-old
    scripts/servers_bench.sh target/sb-new
    scripts/servers_compare.py target/sb-old target/sb-new [--over 10]

A row's figure is the first number of its value (`server CPU per share`: the µs, not the
floor beside it); a row that holds a floor measured in the same run also gets the ratio
of the two, compared the same way (the host's speed moves between runs: a ratio to the
floor of its own run moves less). Rows whose median moved by more than `--over` percent
(default 10) are marked `*`; whether that is better or worse depends on the row (more
shares per second is better, more CPU is worse).
"""

import argparse
import re
import statistics
from pathlib import Path

NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[-+]?\d[\d,]*(?:\.\d+)?")
RUN = re.compile(r"^(.*)-(\d+)$")


def numbers(text):
    return [float(n.replace(",", "")) for n in NUMBER.findall(text)]


def rows(path):
    """A loadgen table's rows, in order: (key, numbers)."""
    out = []
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) == 2 and line.startswith("|") and not parts[0].startswith("---"):
            out.append((parts[0], numbers(parts[1]), parts[1]))
    return out


def configurations(directory):
    """Configuration name -> the tables of its runs (NAME-1.txt... or NAME.txt)."""
    found = {}
    for path in sorted(Path(directory).glob("*.txt")):
        m = RUN.match(path.stem)
        name = m.group(1) if m else path.stem
        table = rows(path)
        if table:
            found.setdefault(name, []).append(table)
    return found


def figures(tables):
    """Row key -> (median of its first number, median ratio to the floor in its text)."""
    keys = [k for k, _, _ in tables[0]]
    out = {}
    for key in keys:
        firsts, ratios = [], []
        for table in tables:
            for k, nums, text in table:
                if k != key or not nums:
                    continue
                firsts.append(nums[0])
                floor = floor_of(text)
                if floor:
                    ratios.append(nums[0] / floor)
        if firsts:
            out[key] = (
                statistics.median(firsts),
                statistics.median(ratios) if ratios else None,
            )
    return out


def floor_of(text):
    """The floor a value's text gives beside it: the number after "floor" ("1.89 µs
    (AEAD floor 0.42 µs: ...)"), or the sum after its "=" ("254 µs (floor: keygen 56.3
    + 2 ECDH 65.2 = 186.8 µs)"); `None` if it gives none."""
    tail = text.split("floor", 1)
    if len(tail) < 2:
        return None
    tail = tail[1].split("=")[-1] if "=" in tail[1] else tail[1]
    found = numbers(tail)
    return found[0] if found and found[0] else None


def change(a, b):
    return (b - a) / a * 100 if a else None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--over", type=float, default=10.0)
    args = p.parse_args()
    before, after = configurations(args.before), configurations(args.after)
    marked = 0
    print("| configuration | row | runs | before | after | change |")
    print("|---|---|--:|--:|--:|--:|")
    for name in sorted(before.keys() & after.keys()):
        fb, fa = figures(before[name]), figures(after[name])
        runs = f"{len(before[name])}/{len(after[name])}"
        for key in (k for k in fb if k in fa):
            (vb, rb), (va, ra) = fb[key], fa[key]
            c = change(vb, va)
            if c is None or (vb == 0 and va == 0):
                continue
            flag = "*" if abs(c) > args.over else ""
            marked += bool(flag)
            cells = [name, key, runs, f"{vb:,.2f}", f"{va:,.2f}", f"{c:+.1f} %{flag}"]
            print("| " + " | ".join(cells) + " |")
            if rb and ra:
                c = change(rb, ra)
                flag = "*" if abs(c) > args.over else ""
                marked += bool(flag)
                cells = [name, key + " ÷ its floor", runs, f"{rb:.2f}×", f"{ra:.2f}×", f"{c:+.1f} %{flag}"]
                print("| " + " | ".join(cells) + " |")
    missing = sorted(before.keys() ^ after.keys())
    if missing:
        print(f"\nin one directory only: {', '.join(missing)}")
    print(f"\nrows that moved by more than {args.over:g} %: {marked}")


if __name__ == "__main__":
    main()

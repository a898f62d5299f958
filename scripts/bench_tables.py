#!/usr/bin/env python3
"""Markdown tables from criterion's results: what criterion does not print itself.

Criterion stores one median per benchmark; it does not put two benchmarks side by side,
take the lower median of several saved runs, or read the allocation counts that the sv2c
suites write. This script does those three things and nothing else: it prints tables to
stdout, and the prose around them is written by hand.

    scripts/bench_tables.py [--target-dir DIR] [--runs A,B] COMMAND [FILTER]

Commands (FILTER keeps benchmark ids that contain it):
  medians   every benchmark: id, median, and per message when the benchmark sets
            `Throughput::Elements` (`--csv`: group,function,parameter,median_ns)
  vs-sri    every benchmark that has an SRI twin, with the ratio SRI / sv2c and the
            geometric mean. The twin of an id is found by its `sri` path segment
            (`…/sri` pairs with `…/sv2c`) or an `sri_` prefix (`sri_x` pairs with `x`,
            `ours_x` or `sv2c_x`)
  allocs    every allocation report (`sv2c-bench-reports/*.csv`) as a table

Without --runs the latest results (criterion's `new/`) are read; with --runs, the lowest
median among those saved baselines (`-- --save-baseline NAME`). Inputs live in the cargo
target directory: --target-dir, else $CARGO_TARGET_DIR, else ./target. Standard library
only.
"""

import argparse
import csv
import json
import math
import os
import re
import sys
from pathlib import Path


def target_dir(arg):
    if arg:
        return Path(arg)
    env = os.environ.get("CARGO_TARGET_DIR")
    return Path(env) if env else Path("target")


def load_medians(criterion, runs):
    """{(group, function, parameter): (median ns, elements per iteration)}."""
    out = {}
    for run in runs:
        for bench in criterion.glob(f"**/{run}/benchmark.json"):
            estimates = bench.with_name("estimates.json")
            if not estimates.exists():
                continue
            b = json.loads(bench.read_text())
            median = json.loads(estimates.read_text())["median"]["point_estimate"]
            key = (b["group_id"], b.get("function_id") or "", b.get("value_str") or "")
            elements = (b.get("throughput") or {}).get("Elements") or 1
            if key not in out or median < out[key][0]:
                out[key] = (median, elements)
    return out


def bench_id(key):
    return "/".join(part for part in key if part)


def natural(text):
    """Sort key that puts `x/9` before `x/10`."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text)]


def fmt_ns(ns):
    for unit, scale in (("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|---" + "|--:" * (len(headers) - 1) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def twin(segments):
    """The ids that an id with an SRI segment is compared with, and the shared label."""
    for i, seg in enumerate(segments):
        if seg == "sri":
            label = segments[:i] + segments[i + 1 :]
            return ["/".join(segments[:i] + [ours] + segments[i + 1 :]) for ours in ("sv2c", "ours")], label
        if seg.startswith("sri_"):
            rest = seg[len("sri_") :]
            label = segments[:i] + [rest] + segments[i + 1 :]
            return [
                "/".join(segments[:i] + [ours] + segments[i + 1 :])
                for ours in (rest, f"ours_{rest}", f"sv2c_{rest}")
            ], label
    return [], None


def medians(data, args):
    keys = sorted((k for k in data if args.filter in bench_id(k)), key=lambda k: natural(bench_id(k)))
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["group", "function", "parameter", "median_ns"])
        writer.writerows([*k, f"{data[k][0]:.3f}"] for k in keys)
        return
    rows = []
    for k in keys:
        median, elements = data[k]
        per = fmt_ns(median / elements) if elements > 1 else ""
        rows.append((bench_id(k), fmt_ns(median), per))
    print(table(["benchmark", "median", "per message"], rows))


def vs_sri(data, args):
    by_id = {bench_id(k): v[0] for k, v in data.items()}
    rows, ratios = [], []
    for sri_id in sorted(by_id, key=natural):
        if args.filter not in sri_id:
            continue
        candidates, label = twin(sri_id.split("/"))
        ours_id = next((c for c in candidates if c in by_id), None)
        if ours_id is None:
            continue
        ours, sri = by_id[ours_id], by_id[sri_id]
        ratios.append(sri / ours)
        rows.append(("/".join(label), fmt_ns(ours), fmt_ns(sri), f"{sri / ours:.3g}×"))
    print(table(["benchmark", "sv2c", "SRI", "SRI / sv2c"], rows))
    if ratios:
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\n{len(ratios)} pairs, geometric mean of SRI / sv2c: {mean:.3g}×")


def allocs(reports, args):
    for path in sorted(reports.glob("*.csv")):
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
        rows = [rows[0]] + [r for r in rows[1:] if args.filter in ",".join(r)] if rows else []
        if len(rows) > 1:
            print(f"{path.name}\n\n{table(rows[0], rows[1:])}\n")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--target-dir", help="cargo target directory (default: ./target)")
    parser.add_argument("--runs", help="saved criterion baselines, comma-separated")
    parser.add_argument("--csv", action="store_true", help="medians: CSV instead of markdown")
    parser.add_argument("command", choices=["medians", "vs-sri", "allocs"])
    parser.add_argument("filter", nargs="?", default="", help="keep ids containing this")
    args = parser.parse_args()

    target = target_dir(args.target_dir)
    if args.command == "allocs":
        allocs(target / "sv2c-bench-reports", args)
        return 0
    runs = args.runs.split(",") if args.runs else ["new"]
    data = load_medians(target / "criterion", runs)
    if not data:
        print(f"no criterion results for {runs} under {target / 'criterion'}", file=sys.stderr)
        return 1
    (medians if args.command == "medians" else vs_sri)(data, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

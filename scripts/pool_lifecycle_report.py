#!/usr/bin/env python3
"""The `pool_lifecycle` results: two plots, a markdown report, a CSV of the medians.

Reads criterion's results of the `exhaustion_boundary` and `throughput` groups of
`cargo bench -p sv2c-benches --bench pool_lifecycle` (or a CSV this script wrote before)
and writes:

  docs/bench/exhaustion_boundary.png   time of the n-th decode while n - 1 are kept
  docs/bench/crossover.png             ns per message against messages kept together
  docs/bench/pool_lifecycle.csv        the medians the plots and tables are made from

and prints, in markdown, the tables and the findings computed from them (the exhaustion
step, where owned decoding overtakes borrowed views). With --write it puts that report
into BENCHMARKS.md and a short summary into README.md, between the
`<!-- pool_lifecycle:… -->` markers, so that no figure in either is copied by hand.

    scripts/pool_lifecycle_report.py [--target-dir DIR | --csv FILE] [--write]

Inputs live in the cargo target directory (criterion's `new/` results): --target-dir,
else $CARGO_TARGET_DIR, else ./target. The pool's capacity is read from
benches/src/strategy.rs. Plots need matplotlib (`pip install matplotlib`).
"""

import argparse
import csv
import json
import os
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "bench"
GROUPS = ("exhaustion_boundary", "throughput")
# Legend order and labels; SRI's lines dashed.
STRATEGIES = {
    "zc_hold": "zc_hold: borrowed view, frame kept (slot pinned)",
    "owned_release": "owned_release: owned message, pooled frame dropped",
    "owned_direct": "owned_direct: owned message, no pool (Sv2Codec)",
    "sri_zc_hold": "SRI zero-copy, pool slice kept",
    "sri_owned_release": "SRI into_owned, slice dropped",
}
OWNED = ("owned_release", "owned_direct")
MESSAGES = {
    "seed": "Seed message (64 B coinbase suffix)",
    "SubmitSharesExtended": "SubmitSharesExtended",
    "NewExtendedMiningJob": "NewExtendedMiningJob",
}


def pool_capacity():
    text = (ROOT / "benches" / "src" / "strategy.rs").read_text()
    return int(re.search(r"pub const POOL_CAPACITY: usize = (\d+);", text).group(1))


def target_dir(arg):
    if arg:
        return Path(arg)
    env = os.environ.get("CARGO_TARGET_DIR")
    return Path(env) if env else ROOT / "target"


def machine():
    """This machine's CPU model and core count (Linux), for the report."""
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = re.search(r"^model name\s*:\s*(.+)$", text, re.M).group(1).strip()
    except (OSError, AttributeError):
        model = "unknown CPU"
    return f"{model}, {os.cpu_count()} cores"


def from_criterion(crit):
    """Rows (group, message, strategy, n, ns per message) from criterion's latest results."""
    rows = []
    for bj in sorted(crit.glob("pool_lifecycle_*/**/new/benchmark.json")):
        b = json.loads(bj.read_text())
        group = b["group_id"].removeprefix("pool_lifecycle/")
        if group not in GROUPS:
            continue
        median = json.loads(bj.with_name("estimates.json").read_text())["median"]
        per = (b.get("throughput") or {}).get("Elements") or 1
        message, _, strategy = b["function_id"].rpartition("/")
        rows.append((group, message, strategy, int(b["value_str"]), median["point_estimate"] / per))
    return sorted(rows)


def from_csv(path):
    """The rows and the machine of a CSV written by `write_csv`."""
    with open(path, newline="") as f:
        records = list(csv.DictReader(f))
    rows = [
        (r["group"], r["message"], r["strategy"], int(r["n"]), float(r["ns_per_message"]))
        for r in records
    ]
    return rows, records[0]["machine"] if records else "unknown"


def write_csv(rows, where, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["group", "message", "strategy", "n", "ns_per_message", "machine"])
        for g, m, s, n, ns in rows:
            w.writerow([g, m, s, n, repr(ns), where])


def series(rows, group, message):
    """{strategy: {n: ns}} of one group and message, strategies in legend order."""
    out = {}
    for g, m, s, n, ns in rows:
        if g == group and m == message:
            out.setdefault(s, {})[n] = ns
    return {s: out[s] for s in STRATEGIES if s in out}


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["--:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def mean(xs):
    return sum(xs) / len(xs)


def exhaustion(rows, cap):
    """The table, and per strategy the mean of the n-th decode while the pool has a free
    slot (n <= cap) and once it has none (n > cap)."""
    s = series(rows, "exhaustion_boundary", "")
    ns = sorted({n for v in s.values() for n in v})
    table = md_table(
        ["n"] + list(s),
        [[f"{n}" + (" (pool exhausted)" if n > cap else "")] + [f"{v[n]:.1f}" for v in s.values()] for n in ns],
    )
    step = {k: (mean([x for n, x in v.items() if n <= cap]), mean([x for n, x in v.items() if n > cap])) for k, v in s.items()}
    return table, step


def crossover(per):
    """The smallest N from which an owned strategy is cheaper per message than zc_hold at
    every larger N measured (None if there is none), and the N before it."""
    ns = sorted(per["zc_hold"])
    cheaper = [min(per[o][n] for o in OWNED if o in per) < per["zc_hold"][n] for n in ns]
    for i in range(len(ns)):
        if all(cheaper[i:]):
            return ns[i], (ns[i - 1] if i else None)
    return None, None


def throughput(rows, cap):
    parts, found = [], {}
    for message, title in MESSAGES.items():
        per = series(rows, "throughput", message)
        if "zc_hold" not in per:
            continue
        ns = sorted(per["zc_hold"])
        table = md_table(["N kept"] + list(per), [[f"{n}"] + [f"{v[n]:.1f}" for v in per.values()] for n in ns])
        at, before = crossover(per)
        found[message] = (at, before, ns[-1])
        if at is None:
            line = f"Borrowed views stay cheaper per message up to N = {ns[-1]}."
        elif before is None:
            line = "Owned decoding is cheaper per message at every N measured."
        else:
            line = f"Owned decoding is cheaper per message from N = {at} on (borrowed views cheaper up to N = {before})."
        parts.append(f"**{title}**, ns per message. {line}\n\n{table}")
    return "\n\n".join(parts), found


def plots(rows, cap):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is missing: no plots (pip install matplotlib)", file=sys.stderr)
        return
    style = {
        "zc_hold": dict(color="#d62728", marker="o"),
        "owned_release": dict(color="#1f77b4", marker="s"),
        "owned_direct": dict(color="#2ca02c", marker="^"),
        "sri_zc_hold": dict(color="#7f7f7f", marker="x", linestyle="--"),
        "sri_owned_release": dict(color="#bcbd22", marker="+", linestyle="--"),
    }
    OUT.mkdir(parents=True, exist_ok=True)

    fig, ax = plt.subplots(figsize=(8, 4.8))
    s = series(rows, "exhaustion_boundary", "")
    for k, v in s.items():
        xs = sorted(v)
        ax.plot(xs, [v[x] for x in xs], label=STRATEGIES[k], **style[k])
    xs = sorted({n for v in s.values() for n in v})
    ax.axvspan(cap + 0.5, xs[-1] + 0.5, color="#eeeeee", zorder=0)
    ax.axvline(cap + 0.5, color="black", linewidth=0.8, linestyle=":")
    ax.set_xticks(xs)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"n: the n-th decode, n - 1 kept (shaded: all {cap} pool slots taken)")
    ax.set_ylabel("ns (median)")
    ax.set_title(f"Exhaustion boundary: {cap}-slot pool, seed message")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "exhaustion_boundary.png", dpi=110)
    plt.close(fig)

    present = [m for m in MESSAGES if series(rows, "throughput", m)]
    fig, axes = plt.subplots(1, len(present), figsize=(5 * len(present), 4.6), squeeze=False)
    handles = {}
    for ax, m in zip(axes[0], present):
        for k, v in series(rows, "throughput", m).items():
            xs = sorted(v)
            (h,) = ax.plot(xs, [v[x] for x in xs], label=STRATEGIES[k], **style[k])
            handles.setdefault(k, h)
        ax.axvline(cap + 0.5, color="black", linewidth=0.8, linestyle=":")
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("N messages decoded and kept together")
        ax.set_ylabel("ns per message (median)")
        ax.set_title(MESSAGES[m], fontsize=10)
        ax.grid(alpha=0.3, which="both")
    fig.legend(list(handles.values()), [STRATEGIES[k] for k in handles], loc="lower center", ncol=3, fontsize=8)
    fig.suptitle(f"Crossover: cost per message against messages kept ({cap}-slot pool, dotted)")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(OUT / "crossover.png", dpi=100)
    plt.close(fig)


def pct(a, b):
    return f"{(b / a - 1) * 100:+.0f} %"


def report(rows, cap, where):
    table, step = exhaustion(rows, cap)
    steps = md_table(
        ["strategy", f"n ≤ {cap}, ns", f"n > {cap}, ns", "step"],
        [[k, f"{a:.1f}", f"{b:.1f}", pct(a, b)] for k, (a, b) in step.items()],
    )
    tp, found = throughput(rows, cap)
    body = "\n\n".join(
        [
            f"Measured on {where}; thread CPU time, criterion's median.",
            "The n-th decode while n − 1 are kept, ns, seed message:",
            table,
            "Mean of the n-th decode while a slot is free and once none is:",
            steps,
            "![exhaustion boundary](docs/bench/exhaustion_boundary.png)",
            "Decoding N messages and keeping them all, then releasing them:",
            tp,
            "![crossover](docs/bench/crossover.png)",
        ]
    )
    zc_a, zc_b = step["zc_hold"]
    name = {m: "the seed message" if m == "seed" else m for m in found}
    over = [f"{name[m]} from N = {at} kept" for m, (at, _, _) in found.items() if at is not None]
    stays = [name[m] for m, (at, _, _) in found.items() if at is None]
    last = max(n for _, _, n in found.values())
    summary = (
        f"`pool_lifecycle` ({cap}-slot pool): a borrowed view whose frame is kept decodes in "
        f"{zc_a:.1f} ns while a slot is free and {zc_b:.1f} ns ({pct(zc_a, zc_b)}) once the pool "
        f"is exhausted; owned decoding overtakes it for " + (", ".join(over) or "no message measured")
        + (f", while for {' and '.join(stays)} borrowed views stay cheaper up to N = {last}" if stays else "")
        + " ([tables and plots](BENCHMARKS.md#borrowed-views-and-the-buffer-pool))."
    )
    summary = "\n".join(textwrap.wrap(summary, 90, break_on_hyphens=False, break_long_words=False))
    return body, summary


def replace_between(path, name, text):
    begin, end = f"<!-- pool_lifecycle:{name} begin -->", f"<!-- pool_lifecycle:{name} end -->"
    doc = path.read_text()
    i, j = doc.find(begin), doc.find(end)
    if i < 0 or j < i:
        sys.exit(f"{path}: no {begin} … {end} markers")
    path.write_text(doc[: i + len(begin)] + "\n" + text + "\n" + doc[j:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--target-dir")
    src.add_argument("--csv", help="a CSV this script wrote, instead of criterion's results")
    ap.add_argument("--write", action="store_true", help="update BENCHMARKS.md and README.md")
    args = ap.parse_args()
    if args.csv:
        rows, where = from_csv(args.csv)
    else:
        rows, where = from_criterion(target_dir(args.target_dir) / "criterion"), machine()
    if not rows:
        sys.exit("no pool_lifecycle results: cargo bench -p sv2c-benches --bench pool_lifecycle")
    cap = pool_capacity()
    if not args.csv:
        write_csv(rows, where, OUT / "pool_lifecycle.csv")
    plots(rows, cap)
    body, summary = report(rows, cap, where)
    print(body + "\n\n" + summary)
    if args.write:
        replace_between(ROOT / "BENCHMARKS.md", "report", body)
        replace_between(ROOT / "README.md", "summary", summary)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Prints the enum_path table (markdown) from criterion's results, and draws it.

Usage: scripts/enum_report.py [--svg FILE] [CRITERION_DIR ...]

For each message type: medians (ns) of ours and SRI's owned decode, borrowed decode
(the frame copy both start from subtracted), encode, and our owned decode over the
floor (one allocation + copy of the frame, then its drop); ratios are SRI / ours and
ours / floor. With several criterion directories (copies of target/criterion from
separate runs), each median is the lower of the runs'. A cell that misses issue 13's
target is marked with a trailing `*`; the types below target are listed at the end. A
second table gives `ours_keep` (copy, borrowed decode, `MessageRef::to_owned`) against
SRI's owned path, which is the same steps.
`--svg FILE` also writes a bar chart of the three ratios per type (log scale).
"""
import glob
import json
import math
import os
import sys

args = sys.argv[1:]
svg = None
if "--svg" in args:
    i = args.index("--svg")
    svg = args[i + 1]
    del args[i : i + 2]
roots = args or ["target/criterion"]

rows = {}
for root in roots:
    for path in glob.glob(os.path.join(root, "enum_path_*", "*", "new", "estimates.json")):
        parts = path.split(os.sep)
        group, op = parts[-4], parts[-3]
        name = group[len("enum_path_"):]
        with open(path) as f:
            median = json.load(f)["median"]["point_estimate"]
        cell = rows.setdefault(name, {})
        cell[op] = min(cell.get(op, median), median)

# Frame sizes (the last vector of each type, as the suite uses).
here = os.path.dirname(os.path.abspath(__file__))
sizes = {}
names = {}
with open(os.path.join(here, "..", "tests-data", "sv2-vectors.jsonl")) as f:
    for line in f:
        v = json.loads(line)
        names.setdefault(v["name"], set()).add(v["protocol"])
        sizes[(v["name"], v["protocol"])] = len(v["frame_hex"]) // 2
frame_len = {}
for (name, proto), n in sizes.items():
    label = f"{name}-{proto}" if len(names[name]) > 1 else name
    frame_len[label] = n


def g(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


OWNED, REF, ENC, FLOOR, BIG_FLOOR = 10.0, 15.0, 8.0, 2.0, 1.5
print("| type | frame B | owned ours | owned SRI | SRI/ours | Ref ours−copy | Ref SRI−copy | SRI/ours | encode ours | encode SRI | SRI/ours | owned/floor |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
owned, ref, enc, floor, below, plot = [], [], [], [], [], []
met = {"owned": 0, "ref": 0, "encode": 0, "floor": 0}
need = ["ours_owned", "sri_owned", "ours_ref", "sri_ref", "copy", "ours_encode", "sri_encode", "floor"]
for name in sorted(rows):
    r = rows[name]
    if any(k not in r for k in need):
        continue
    size = frame_len.get(name, 0)
    o = r["sri_owned"] / r["ours_owned"]
    ours_ref = max(r["ours_ref"] - r["copy"], 0.1)
    sri_ref = max(r["sri_ref"] - r["copy"], 0.1)
    rr = sri_ref / ours_ref
    e = r["sri_encode"] / r["ours_encode"]
    fl = r["ours_owned"] / r["floor"]
    owned.append(o); ref.append(rr); enc.append(e); floor.append(fl)
    # Over 1 KiB both sides are bound by copying: the owned target is then ≤ 1.5× the floor.
    ok_owned = o >= OWNED or (size > 1024 and fl <= BIG_FLOOR)
    ok = {"owned": ok_owned, "ref": rr >= REF, "encode": e >= ENC, "floor": fl <= FLOOR}
    for k, v in ok.items():
        met[k] += v
    if not all(ok.values()):
        below.append((name, [k for k, v in ok.items() if not v]))
    m = lambda k: "" if ok[k] else " *"
    print(f"| {name} | {size} | {r['ours_owned']:.1f} | {r['sri_owned']:.1f} | {o:.1f}×{m('owned')} | {ours_ref:.1f} | {sri_ref:.1f} | {rr:.1f}×{m('ref')} | {r['ours_encode']:.1f} | {r['sri_encode']:.1f} | {e:.1f}×{m('encode')} | {fl:.2f}{m('floor')} |")
    plot.append((name, o, rr, e))
print()
print(f"{len(owned)} types; medians: lower of {len(roots)} run(s). Geometric means: owned {g(owned):.1f}×, Ref {g(ref):.1f}×, encode {g(enc):.1f}×, owned/floor {g(floor):.2f}.")
print(f"Meeting targets: owned ≥10× (or ≤1.5× floor over 1 KiB) {met['owned']}, Ref ≥15× {met['ref']}, encode ≥8× {met['encode']}, owned/floor ≤2 {met['floor']}.")
print()
print("Below target (`*`): " + "; ".join(f"{n} ({', '.join(k)})" for n, k in below) + ".")

# The borrowed read loop keeping a message: copy + borrowed decode + `to_owned`, the steps
# of SRI's owned path (no target of its own in issue 13).
keep = [(n, rows[n]) for n in sorted(rows) if "ours_keep" in rows[n] and "sri_owned" in rows[n]]
if keep:
    print()
    print("| type | keep ours (copy + Ref + to_owned) | owned ours | keep/owned | owned SRI | SRI/keep |")
    print("|---|--:|--:|--:|--:|--:|")
    ks = []
    for name, r in keep:
        k = r["sri_owned"] / r["ours_keep"]
        ks.append(k)
        print(f"| {name} | {r['ours_keep']:.1f} | {r['ours_owned']:.1f} | {r['ours_keep'] / r['ours_owned']:.2f} | {r['sri_owned']:.1f} | {k:.1f}× |")
    print()
    print(f"{len(ks)} types; geometric mean SRI/keep {g(ks):.1f}×, lowest {min(ks):.1f}×.")

if svg:
    # Horizontal bars, one group per type, log-scale x from 1× to 100×.
    row_h, bar_h, left, width = 30, 8, 250, 600
    top = 40
    height = top + row_h * len(plot) + 40
    lo, hi = math.log10(1), math.log10(100)
    x = lambda v: left + width * (min(max(math.log10(max(v, 1)), lo), hi) - lo) / (hi - lo)
    colors = [("owned", "#1f77b4", OWNED), ("Ref", "#2ca02c", REF), ("encode", "#ff7f0e", ENC)]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="16" font-size="13">enum path: SRI time / sv2c time per type (log scale); ticks = targets</text>']
    for i, (label, color, _) in enumerate(colors):
        out.append(f'<rect x="{left + 420 + i * 70}" y="24" width="10" height="8" fill="{color}"/><text x="{left + 434 + i * 70}" y="32">{label}</text>')
    for t in [1, 2, 5, 10, 20, 50, 100]:
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 4}" x2="{x(t):.1f}" y2="{height - 30}" stroke="#ddd"/>')
        out.append(f'<text x="{x(t):.1f}" y="{height - 16}" text-anchor="middle">{t}×</text>')
    for j, (name, *vals) in enumerate(plot):
        y0 = top + j * row_h
        out.append(f'<text x="{left - 6}" y="{y0 + 16}" text-anchor="end">{name}</text>')
        for i, ((_, color, target), v) in enumerate(zip(colors, vals)):
            y = y0 + 2 + i * (bar_h + 1)
            out.append(f'<rect x="{left}" y="{y}" width="{x(v) - left:.1f}" height="{bar_h}" fill="{color}"><title>{name} {v:.1f}×</title></rect>')
            out.append(f'<line x1="{x(target):.1f}" y1="{y}" x2="{x(target):.1f}" y2="{y + bar_h}" stroke="black" stroke-width="1.5"/>')
    out.append("</svg>")
    with open(svg, "w") as f:
        f.write("\n".join(out) + "\n")

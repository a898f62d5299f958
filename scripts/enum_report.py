#!/usr/bin/env python3
"""Prints the enum_path table (markdown) from criterion's results.

Usage: scripts/enum_report.py [target/criterion]

For each message type: medians (ns) of ours and SRI's owned decode, borrowed decode
(the frame copy both start from subtracted), encode, and our owned decode over the
floor (one allocation + copy of the frame, then its drop); ratios are SRI / ours and
ours / floor. Geometric means and the count of types meeting the issue-13 targets are
printed at the end.
"""
import glob
import json
import math
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "target/criterion"
rows = {}
for path in glob.glob(os.path.join(root, "enum_path_*", "*", "new", "estimates.json")):
    parts = path.split(os.sep)
    group, op = parts[-4], parts[-3]
    name = group[len("enum_path_"):]
    with open(path) as f:
        rows.setdefault(name, {})[op] = json.load(f)["median"]["point_estimate"]

def g(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

print("| type | owned ours | owned SRI | SRI/ours | Ref ours−copy | Ref SRI−copy | SRI/ours | encode ours | encode SRI | SRI/ours | owned/floor |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
owned, ref, enc, floor = [], [], [], []
for name in sorted(rows):
    r = rows[name]
    need = ["ours_owned", "sri_owned", "ours_ref", "sri_ref", "copy", "ours_encode", "sri_encode", "floor"]
    if any(k not in r for k in need):
        continue
    o = r["sri_owned"] / r["ours_owned"]
    ours_ref = max(r["ours_ref"] - r["copy"], 0.1)
    sri_ref = max(r["sri_ref"] - r["copy"], 0.1)
    rr = sri_ref / ours_ref
    e = r["sri_encode"] / r["ours_encode"]
    fl = r["ours_owned"] / r["floor"]
    owned.append(o); ref.append(rr); enc.append(e); floor.append(fl)
    print(f"| {name} | {r['ours_owned']:.1f} | {r['sri_owned']:.1f} | {o:.1f}× | {ours_ref:.1f} | {sri_ref:.1f} | {rr:.1f}× | {r['ours_encode']:.1f} | {r['sri_encode']:.1f} | {e:.1f}× | {fl:.2f} |")
print()
print(f"{len(owned)} types. Geometric means: owned {g(owned):.1f}×, Ref {g(ref):.1f}×, encode {g(enc):.1f}×, owned/floor {g(floor):.2f}.")
print(f"Meeting targets: owned ≥10× {sum(x >= 10 for x in owned)}, Ref ≥15× {sum(x >= 15 for x in ref)}, encode ≥8× {sum(x >= 8 for x in enc)}, owned/floor ≤2 {sum(x <= 2 for x in floor)}.")

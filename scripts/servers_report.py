#!/usr/bin/env python3
"""The tables of BENCHMARKS.md's "Servers under load", from the runs
`scripts/servers_bench.sh` leaves in a directory (one loadgen table per file).

    scripts/servers_report.py target/servers-bench

A cell gives the range over the runs of its configuration (`a–b`), or its one value; the
ratios are each run's against the floors loadgen measured in that run. A configuration
without runs leaves its cells empty.
"""

import re
import statistics
import sys
from pathlib import Path

# A number not inside a word ("ChaCha20", "SHA-256d" are not).
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[-+]?\d[\d,]*(?:\.\d+)?")


def numbers(text):
    return [float(n.replace(",", "")) for n in NUMBER.findall(text)]


def parse(path):
    """The rows of a loadgen table: key -> value."""
    rows = {}
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) == 2 and line.startswith("|") and not parts[0].startswith("---"):
            rows[parts[0]] = parts[1]
    return rows


class Runs:
    """The runs of one configuration: files NAME-1.txt, NAME-2.txt... or NAME.txt."""

    def __init__(self, directory, name):
        files = sorted(directory.glob(f"{name}-[0-9]*.txt")) or sorted(
            directory.glob(f"{name}.txt")
        )
        self.tables = [t for t in map(parse, files) if t]

    def values(self, key, index=0, exact=False):
        """The `index`-th number of the row starting with `key` (or named `key`), in
        every run."""
        out = []
        for t in self.tables:
            for k, v in t.items():
                if k == key if exact else k.startswith(key):
                    found = numbers(v)
                    if index < len(found):
                        out.append(found[index])
                    break
        return out

    def ratios(self, key, index, floor_key, floor_index):
        """Per run: the row's number over the floor's number."""
        a = self.values(key, index)
        b = self.values(floor_key, floor_index)
        return [x / y for x, y in zip(a, b) if y]


def fmt(values, digits, unit="", median=False, sign=""):
    if not values:
        return ""
    spec = f"{sign},.{digits}f"
    lo, hi = f"{min(values):{spec}}", f"{max(values):{spec}}"
    text = lo if lo == hi else f"{lo} to {hi}" if sign else f"{lo}–{hi}"
    text += unit
    if median and len(values) > 2:
        text += f", median {statistics.median(values):{spec}}"
    return text


def ratio(values):
    return f" ({fmt(values, 2)}×)" if values else ""


CPU_HS = "server CPU per handshake + setup + channel"
CPU_SHARE = "server CPU per share"
POOL_FLOOR = "a checking pool's floor per share"
PROXY_FLOOR = "a forwarding proxy's floor per share"
TRANSPORT = "the transport alone per share"
SWITCHES = "server context switches per share"


def handshake(r):
    # "X µs (floor: keygen a + 2 ECDH b = c µs)": the floor is the fifth number.
    return fmt(r.values(CPU_HS), 0, " µs"), fmt(r.values(CPU_HS, 4), 1, " µs") + ratio(
        r.ratios(CPU_HS, 0, CPU_HS, 4)
    )


def share_floor(r, proxy):
    key = PROXY_FLOOR if proxy else POOL_FLOOR
    return fmt(r.values(key), 2, " µs") + ratio(r.ratios(CPU_SHARE, 0, key, 0))


def floor_and_transport(r, proxy):
    if proxy:
        # "X µs; with the miners' hop's transport Y µs, ..."
        with_hop = r.values(PROXY_FLOOR, 1)
        return fmt(with_hop, 2, " µs") + ratio(r.ratios(CPU_SHARE, 0, PROXY_FLOOR, 1))
    key = "a checking pool's floor with the transport"
    return fmt(r.values(key), 2, " µs") + ratio(r.ratios(CPU_SHARE, 0, key, 0))


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|---|" + "--:|" * (len(header) - 1))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def main():
    d = Path(sys.argv[1] if len(sys.argv) > 1 else "target/servers-bench")
    R = lambda name: Runs(d, name)  # noqa: E731

    print("### 1,000 Noise miners\n")
    cols = [
        ("sv2c `pool`", R("pool-1000"), False),
        ("sv2c `mining_proxy`", R("proxy-1000"), True),
        ("sv2c `mining_proxy --workers 1`", R("proxy-workers1-1000"), True),
        ("SRI `pool_sv2`", R("sri-1000"), False),
    ]
    rows = [
        ["server RSS per idle miner"] + [fmt(r.values("server RSS per idle miner"), 2, " KiB") for _, r, _ in cols],
        ["time until all 1,000 are open"] + [fmt(r.values("time until all open"), 2, " s") for _, r, _ in cols],
        ["handshakes/s during the storm"] + [fmt(r.values("handshakes/s"), 0) for _, r, _ in cols],
        ["server CPU per handshake + setup + channel"] + [handshake(r)[0] for _, r, _ in cols],
        ["its secp256k1 floor (same run)"] + [handshake(r)[1] for _, r, _ in cols],
        ["shares/s, 32 in flight per miner"] + [fmt(r.values("shares/s"), 0) for _, r, _ in cols],
        ["server CPU per share"] + [fmt(r.values(CPU_SHARE), 2, " µs") for _, r, _ in cols],
        ["its floor (same run)"] + [share_floor(r, p) for _, r, p in cols],
        ["the transport alone (same run; a proxy: its miners' hop)"]
        + [fmt(r.values(TRANSPORT), 2, " µs") if not n.startswith("SRI") else "" for n, r, _ in cols],
        ["floor + transport (same run)"]
        + [floor_and_transport(r, p) if not n.startswith("SRI") else "" for n, r, p in cols],
        ["context switches per share"] + [fmt(r.values(SWITCHES), 3) for _, r, _ in cols],
    ]
    table([""] + [n for n, _, _ in cols], rows)

    print("### 15,000 Noise miners\n")
    cols = [
        ("sv2c `pool`", "pool", R("pool-15000-waves")),
        ("sv2c `mining_proxy`", "proxy", R("proxy-15000-waves")),
        ("sv2c `mining_proxy --workers 1`", "proxy-workers1", R("proxy-workers1-15000-waves")),
        ("SRI `pool_sv2`", "sri", R("sri-15000")),
    ]
    nochan = {k: R(f"{k}-15000-nochannel") for _, k, _ in cols}
    jobs16 = {k: R(f"{k}-15000-jobs16") for _, k, _ in cols}
    rows = [
        ["miners open / failed"]
        + [" / ".join(fmt(r.values("miners open / failed", i), 0) for i in (0, 1)) if r.tables else "" for _, _, r in cols],
        ["time until all are open"] + [fmt(r.values("time until all open"), 2, " s") for _, _, r in cols],
        ["handshakes/s during the storm"] + [fmt(r.values("handshakes/s"), 0) for _, _, r in cols],
        ["server CPU per handshake + setup + channel"] + [handshake(r)[0] for _, _, r in cols],
        ["its secp256k1 floor (same run)"] + [handshake(r)[1] for _, _, r in cols],
        ["the same without a channel (`--no-channel`)"] + [handshake(nochan[k])[0] for _, k, _ in cols],
        ["its floor"] + [handshake(nochan[k])[1] for _, k, _ in cols],
        ["server RSS per idle miner"] + [fmt(r.values("server RSS per idle miner"), 2, " KiB") for _, _, r in cols],
        ["of which the connection alone (`--no-channel`)"]
        + [fmt(nochan[k].values("server RSS per idle miner"), 2, " KiB") for _, k, _ in cols],
        ["with 16 jobs held, after their block"]
        + [fmt(jobs16[k].values("server RSS per miner after the blocks"), 2, " KiB") for _, k, _ in cols],
        ["kernel TCP memory per idle miner (both ends)"]
        + [fmt(r.values("kernel TCP memory"), 2, " KiB") for _, _, r in cols],
        ["RSS with the second wave idle, against the first"]
        + [fmt(r.values("wave 2:", 3), 1, " %", sign="+") for _, _, r in cols],
        ["RSS after every miner left"]
        + [fmt([v / 1024 for v in r.values("server RSS after every miner left")], 1, " MiB") for _, _, r in cols],
    ]
    table([""] + [n for n, _, _ in cols], rows)

    print("### Keys made ahead, 15,000 miners (default against `--key-stock 0`)\n")
    rows = []
    for name, k in [("`pool`", "pool"), ("`mining_proxy`", "proxy"), ("`mining_proxy --workers 1`", "proxy-workers1")]:
        stock, none = R(f"{k}-15000-waves"), R(f"{k}-15000-nostock")
        for label, key, digits, unit in [
            ("CPU per handshake + setup + channel", CPU_HS, 0, " µs"),
            ("the same, counting the 2 s after the storm", "the same with the server's CPU", 0, " µs"),
            ("time until all are open", "time until all open", 2, " s"),
        ]:
            cells = []
            for r in (stock, none):
                cell = fmt(r.values(key), digits, unit)
                if key == CPU_HS:
                    cell += ratio(r.ratios(CPU_HS, 0, CPU_HS, 4))
                cells.append(cell)
            rows.append([f"{name}: {label}"] + cells)
    table(["", "keys made ahead (default)", "`--key-stock 0`"], rows)

    print("### Job fan-out (three blocks)\n")
    rows = []
    for miners, name, key in [
        ("1,000", "sv2c `pool`", "pool-1000-fanout"),
        ("1,000", "SRI `pool_sv2`", "sri-1000-fanout"),
        ("15,000", "sv2c `pool`", "pool-15000-fanout"),
        ("15,000", "sv2c `mining_proxy`", "proxy-15000-fanout"),
        ("15,000", "sv2c `mining_proxy --workers 1`", "proxy-workers1-15000-fanout"),
        ("15,000", "sv2c `mining_proxy --workers 1 --aggregate`", "proxy-aggregate-15000-fanout"),
    ]:
        r = R(key)
        blocks = [[numbers(v) for k, v in t.items() if k.startswith("job fan-out")] for t in r.tables]
        flat = [b for run in blocks for b in run]
        # "R of O; p50 / p99 / last ms"
        cells = [fmt([b[i] for b in flat], 1, " ms") for i in (2, 3, 4)]
        rows.append([miners, name] + cells)
    table(["miners", "", "p50", "p99", "last"], rows)

    print("### A steady share rate: 15,000 miners, a share every 5 s each, threads pinned\n")
    cols = [
        ("sv2c `pool`", R("pool-pinned-15000-rate0.2")),
        ("sv2c `mining_proxy`", R("proxy-pinned-15000-rate0.2")),
        ("sv2c `mining_proxy --workers 1`", R("proxy-workers1-pinned-15000-rate0.2")),
    ]
    rows = [
        ["server CPU"] + [fmt(r.values("server CPU", exact=True), 1, " % of one core") for _, r in cols],
        ["server CPU per share (jobs included)"] + [fmt(r.values(CPU_SHARE), 2, " µs", median=True) for _, r in cols],
        ["context switches per share"] + [fmt(r.values(SWITCHES), 2) for _, r in cols],
        ["share → answer, p50"] + [fmt(r.values("share → answer", 0), 2, " ms") for _, r in cols],
        ["share → answer, p99"] + [fmt(r.values("share → answer", 1), 1, " ms", median=True) for _, r in cols],
        ["server RSS per miner at the end of the shares"]
        + [fmt(r.values("server RSS per miner at the end"), 2, " KiB") for _, r in cols],
    ]
    table([""] + [n for n, _ in cols], rows)

    print("### Threads and workers, 1,000 miners\n")
    rows = []
    for name, key in [
        ("`pool` (one thread per core: two)", "pool-1000"),
        ("`pool --threads 1`", "pool-threads1-1000"),
        ("`mining_proxy` (one worker per core: two)", "proxy-1000"),
        ("`mining_proxy --workers 1`", "proxy-workers1-1000"),
        ("`mining_proxy --threads 2` (one worker, two threads)", "proxy-threads2-1000"),
        ("`mining_proxy --workers 1 --aggregate`", "proxy-aggregate-1000"),
    ]:
        r = R(key)
        rows.append(
            [name + ", 32 in flight", fmt(r.values("shares/s"), 0), fmt(r.values(CPU_SHARE), 2, " µs"), fmt(r.values(SWITCHES), 3)]
        )
    for name, key in [
        ("`pool`, two threads pinned", "pool-pinned-rate20"),
        ("`pool --threads 1`, pinned", "pool-threads1-pinned-rate20"),
        ("`mining_proxy`, two workers pinned", "proxy-pinned-rate20"),
        ("`mining_proxy --workers 1`, pinned", "proxy-workers1-pinned-rate20"),
    ]:
        r = R(key)
        rows.append(
            [name + ", 20 shares/s per miner", fmt(r.values("shares/s"), 0), fmt(r.values(CPU_SHARE), 2, " µs", median=True), fmt(r.values(SWITCHES), 2)]
        )
    table(["", "shares/s", "CPU per share", "context switches per share"], rows)

    r = R("pool-2000-rate10")
    print(
        "`pool`, 2,000 miners at 10 shares/s each for 12 s: RSS per miner at the end of the shares "
        + fmt(r.values("server RSS per miner at the end"), 2, " KiB")
        + "; idle before them "
        + fmt(r.values("server RSS per idle miner"), 2, " KiB")
    )
    floors = [R(n) for n in ("pool-1000", "proxy-1000", "proxy-workers1-1000")]
    print(
        "\nFloors over the 1,000-miner share runs: ChaCha20-Poly1305 open of 24 bytes "
        + fmt([v for r in floors for v in r.values("floors", 3)], 0, " ns")
        + ", SHA-256d of a header "
        + fmt([v for v in floors[0].values(POOL_FLOOR, 2)], 0, " ns")
        + ", ElligatorSwift keygen "
        + fmt([v for r in floors for v in r.values("floors", 4)], 1, " µs")
        + ", ECDH "
        + fmt([v for r in floors for v in r.values("floors", 5)], 1, " µs")
    )


if __name__ == "__main__":
    main()

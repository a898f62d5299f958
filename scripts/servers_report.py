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
    """The server's CPU per handshake, its floor, and the ratio of the two, per run.
    "X µs (floor: keygen a + 2 ECDH b = c µs)": the floor is the fifth number."""
    return (
        fmt(r.values(CPU_HS), 0, " µs"),
        fmt(r.values(CPU_HS, 4), 1, " µs"),
        ratio(r.ratios(CPU_HS, 0, CPU_HS, 4)),
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


def grid(title, columns, rows):
    """A table with a column per (header, column) and a row per (label, cell function of a
    column); a column is a dict of `Runs` ("runs": its main configuration) and flags."""
    print(f"### {title}\n")
    body = [[label] + [cell(column) for _, column in columns] for label, cell in rows]
    table([""] + [header for header, _ in columns], body)


def value(key, digits, unit="", index=0, of="runs", **options):
    """A cell function: the range of the `index`-th number of the row `key` in the column's
    configuration `of`."""
    exact = options.pop("exact", False)
    return lambda c: fmt(c[of].values(key, index, exact), digits, unit, **options)


def fanout_cells(r):
    """p50, p99 and last over every block of every run ("R of O; p50 / p99 / last ms")."""
    blocks = [numbers(v) for t in r.tables for k, v in t.items() if k.startswith("job fan-out")]
    return [fmt([b[i] for b in blocks], 1, " ms") for i in (2, 3, 4)]


def main():
    d = Path(sys.argv[1] if len(sys.argv) > 1 else "target/servers-bench")

    def R(name):
        return Runs(d, name)

    def ours(c, cell):
        return cell(c["runs"], c["proxy"]) if "proxy" in c else ""

    pool = R("pool-1000")
    grid(
        "1,000 Noise miners",
        [
            ("sv2c `pool`", {"runs": pool, "proxy": False}),
            ("sv2c `mining_proxy`", {"runs": R("proxy-1000"), "proxy": True}),
            ("sv2c `mining_proxy --workers 1`", {"runs": R("proxy-workers1-1000"), "proxy": True}),
            ("SRI `pool_sv2`", {"runs": R("sri-1000")}),
        ],
        [
            ("server RSS per idle miner", value("server RSS per idle miner", 2, " KiB")),
            ("time until all 1,000 are open", value("time until all open", 2, " s")),
            ("handshakes/s during the storm", value("handshakes/s", 0)),
            ("server CPU per handshake + setup + channel", lambda c: handshake(c["runs"])[0]),
            ("its secp256k1 floor (same run)", lambda c: "".join(handshake(c["runs"])[1:])),
            ("shares/s, 32 in flight per miner", value("shares/s", 0)),
            ("server CPU per share", value(CPU_SHARE, 2, " µs")),
            ("its floor (same run)", lambda c: share_floor(c["runs"], c.get("proxy", False))),
            (
                "the transport alone (same run; a proxy: its miners' hop)",
                lambda c: ours(c, lambda r, _: fmt(r.values(TRANSPORT), 2, " µs")),
            ),
            ("floor + transport (same run)", lambda c: ours(c, floor_and_transport)),
            ("context switches per share", value(SWITCHES, 3)),
        ],
    )

    servers = [
        ("sv2c `pool`", "pool"),
        ("sv2c `mining_proxy`", "proxy"),
        ("sv2c `mining_proxy --workers 1`", "proxy-workers1"),
        ("SRI `pool_sv2`", "sri"),
    ]

    def storms(k):
        return {
            "runs": R(f"{k}-15000-waves" if k != "sri" else "sri-15000"),
            "nochannel": R(f"{k}-15000-nochannel"),
            "jobs16": R(f"{k}-15000-jobs16"),
        }

    def open_failed(c):
        cells = [fmt(c["runs"].values("miners open / failed", i), 0) for i in (0, 1)]
        return " / ".join(cells) if c["runs"].tables else ""

    def mib_left(c):
        kib = c["runs"].values("server RSS after every miner left")
        return fmt([v / 1024 for v in kib], 1, " MiB")

    grid(
        "15,000 Noise miners",
        [(h, storms(k)) for h, k in servers],
        [
            ("miners open / failed", open_failed),
            ("time until all are open", value("time until all open", 2, " s")),
            ("handshakes/s during the storm", value("handshakes/s", 0)),
            ("server CPU per handshake + setup + channel", lambda c: handshake(c["runs"])[0]),
            ("its secp256k1 floor (same run)", lambda c: "".join(handshake(c["runs"])[1:])),
            (
                "the same without a channel (`--no-channel`)",
                lambda c: handshake(c["nochannel"])[0],
            ),
            ("its floor", lambda c: "".join(handshake(c["nochannel"])[1:])),
            ("server RSS per idle miner", value("server RSS per idle miner", 2, " KiB")),
            (
                "of which the connection alone (`--no-channel`)",
                value("server RSS per idle miner", 2, " KiB", of="nochannel"),
            ),
            (
                "with 16 jobs held, after their block",
                value("server RSS per miner after the blocks", 2, " KiB", of="jobs16"),
            ),
            (
                "kernel TCP memory per idle miner (both ends)",
                value("kernel TCP memory", 2, " KiB"),
            ),
            (
                "RSS with the second wave idle, against the first",
                value("wave 2:", 1, " %", index=3, sign="+"),
            ),
            ("RSS after every miner left", mib_left),
        ],
    )

    print("### Keys made ahead, 15,000 miners (default against `--key-stock 0`)\n")
    rows = []
    for name, k in servers[:3]:
        for label, cell in [
            ("CPU per handshake + setup + channel", lambda r: "".join(handshake(r)[0::2])),
            (
                "the same, counting the 2 s after the storm",
                lambda r: fmt(r.values("the same with the server's CPU"), 0, " µs"),
            ),
            ("time until all are open", lambda r: fmt(r.values("time until all open"), 2, " s")),
        ]:
            runs = (R(f"{k}-15000-waves"), R(f"{k}-15000-nostock"))
            rows.append([f"{name.replace('sv2c ', '')}: {label}"] + [cell(r) for r in runs])
    table(["", "keys made ahead (default)", "`--key-stock 0`"], rows)

    print("### Job fan-out (three blocks)\n")
    rows = [
        [miners, name] + fanout_cells(R(key))
        for miners, name, key in [
            ("1,000", "sv2c `pool`", "pool-1000-fanout"),
            ("1,000", "SRI `pool_sv2`", "sri-1000-fanout"),
            ("15,000", "sv2c `pool`", "pool-15000-fanout"),
            ("15,000", "sv2c `mining_proxy`", "proxy-15000-fanout"),
            ("15,000", "sv2c `mining_proxy --workers 1`", "proxy-workers1-15000-fanout"),
            (
                "15,000",
                "sv2c `mining_proxy --workers 1 --aggregate`",
                "proxy-aggregate-15000-fanout",
            ),
        ]
    ]
    table(["miners", "", "p50", "p99", "last"], rows)

    grid(
        "A steady share rate: 15,000 miners, a share every 5 s each, threads pinned",
        [(h, {"runs": R(f"{k}-pinned-15000-rate0.2")}) for h, k in servers[:3]],
        [
            ("server CPU", value("server CPU", 1, " % of one core", exact=True)),
            ("server CPU per share (jobs included)", value(CPU_SHARE, 2, " µs", median=True)),
            ("context switches per share", value(SWITCHES, 2)),
            ("share → answer, p50", value("share → answer", 2, " ms")),
            ("share → answer, p99", value("share → answer", 1, " ms", index=1, median=True)),
            (
                "server RSS per miner at the end of the shares",
                value("server RSS per miner at the end", 2, " KiB"),
            ),
        ],
    )

    print("### Threads and workers, 1,000 miners\n")
    loaded = [
        ("`pool` (one thread per core: two)", "pool-1000"),
        ("`pool --threads 1`", "pool-threads1-1000"),
        ("`mining_proxy` (one worker per core: two)", "proxy-1000"),
        ("`mining_proxy --workers 1`", "proxy-workers1-1000"),
        ("`mining_proxy --threads 2` (one worker, two threads)", "proxy-threads2-1000"),
        ("`mining_proxy --workers 1 --aggregate`", "proxy-aggregate-1000"),
    ]
    pinned = [
        ("`pool`, two threads pinned", "pool-pinned-rate20"),
        ("`pool --threads 1`, pinned", "pool-threads1-pinned-rate20"),
        ("`mining_proxy`, two workers pinned", "proxy-pinned-rate20"),
        ("`mining_proxy --workers 1`, pinned", "proxy-workers1-pinned-rate20"),
    ]
    rows = []
    for configurations, pace, fixed_rate in [
        (loaded, "32 in flight", False),
        (pinned, "20 shares/s per miner", True),
    ]:
        for name, key in configurations:
            r = R(key)
            rows.append(
                [
                    f"{name}, {pace}",
                    fmt(r.values("shares/s"), 0),
                    fmt(r.values(CPU_SHARE), 2, " µs", median=fixed_rate),
                    fmt(r.values(SWITCHES), 2 if fixed_rate else 3),
                ]
            )
    table(["", "shares/s", "CPU per share", "context switches per share"], rows)

    r = R("pool-2000-rate10")
    print(
        "`pool`, 2,000 miners at 10 shares/s each for 12 s: RSS per miner at the end of the"
        " shares " + fmt(r.values("server RSS per miner at the end"), 2, " KiB")
        + "; idle before them " + fmt(r.values("server RSS per idle miner"), 2, " KiB")
    )
    floors = [pool, R("proxy-1000"), R("proxy-workers1-1000")]

    def over(key, index):
        return [v for r in floors for v in r.values(key, index)]

    print(
        "\nFloors over the 1,000-miner share runs: ChaCha20-Poly1305 open of 24 bytes "
        + fmt(over("floors", 3), 0, " ns")
        + ", SHA-256d of a header " + fmt(pool.values(POOL_FLOOR, 2), 0, " ns")
        + ", ElligatorSwift keygen " + fmt(over("floors", 4), 1, " µs")
        + ", ECDH " + fmt(over("floors", 5), 1, " µs")
    )


if __name__ == "__main__":
    main()

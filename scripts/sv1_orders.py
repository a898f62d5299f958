#!/usr/bin/env python3
# The SV1 message orders of docs/sv1-miners.md ("Message order beside translator_sv2"):
# each order sent in one write to our proxy (--sv1-listen, port 25333) and to
# translator_sv2 (port 25334), both started as scripts/sv1_bench.sh starts them; prints
# what each answered in 3 s (mining.notify lines, and the subscribe answer that names
# it, as one line).
import socket, json, time

def run(port, lines):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(0.5)
    s.sendall("".join(json.dumps(l) + "\n" for l in lines).encode())
    out = b""
    t0 = time.time()
    while time.time() - t0 < 3:
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        if not d:
            out += b"\n<closed by the server>"
            break
        out += d
    got = [l[:120] for l in out.decode(errors="replace").split("\n") if l and "mining.notify" not in l]
    if b"mining.notify" in out:
        got.append("(mining.notify received)")
    return got

def req(i, m, p):
    return {"id": i, "method": m, "params": p}

sub = req(1, "mining.subscribe", ["t/1"])
auth = req(2, "mining.authorize", ["w", "x"])
orders = {
    "suggest_difficulty (id 3), subscribe, authorize": [req(3, "mining.suggest_difficulty", [512]), sub, auth],
    "suggest_difficulty (id null), subscribe, authorize": [req(None, "mining.suggest_difficulty", [512]), sub, auth],
    "configure, subscribe, authorize": [req(3, "mining.configure", [["version-rolling"], {"version-rolling.mask": "ffffffff", "version-rolling.min-bit-count": 2}]), sub, auth],
    "authorize, subscribe": [auth, sub],
    "subscribe, authorize, suggest_difficulty (id 3)": [sub, auth, req(3, "mining.suggest_difficulty", [512])],
    "subscribe, authorize, extranonce.subscribe (id 3)": [sub, auth, req(3, "mining.extranonce.subscribe", [])],
}
for name, lines in orders.items():
    for label, port in (("ours", 25333), ("translator_sv2", 25334)):
        print(f"== {name} / {label}:")
        for l in run(port, lines):
            print("   ", l)

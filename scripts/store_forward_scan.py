#!/usr/bin/env python3
"""Finds loads from the stack that must wait for earlier stores (store-forwarding hazards)
in the instructions one `sv2c-icount` case executes.

    scripts/store_forward_scan.py BIN CASE [FUNCTION]

BIN is a release build of `sv2c-icount` (`cargo build --release -p sv2c-benches --bin
sv2c-icount`), CASE one of its cases or any `owned/<Type>`, `ref/<Type>`, `encode/<Type>`
of a golden vector, FUNCTION a substring of the function to look into (default
`decode_variant_with`, the enum's per-message owned decoder). Needs valgrind and objdump.

The case runs under callgrind with per-instruction counts. The instructions executed about
once per operation are disassembled in address order. A load from `%rsp` that overlaps
stores made earlier (by address) to the stack, none of which covers the whole load, is
reported with those stores. A CPU cannot hand such a load the bytes of more than one
pending store: it waits until they reach the cache (ADRs 0006, 0017, 0019). Address order
stands in for execution order, so read each report against the disassembly; a report is
a lead, not a proof.
"""

import collections
import re
import subprocess
import sys
import tempfile

ITERATIONS = 3000

R64 = "rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15".split()
R32 = "eax ebx ecx edx esi edi ebp esp".split() + [f"r{i}d" for i in range(8, 16)]
R16 = "ax bx cx dx si di bp sp".split() + [f"r{i}w" for i in range(8, 16)]
R8 = "al bl cl dl sil dil bpl spl ah bh ch dh".split() + [f"r{i}b" for i in range(8, 16)]
# Access width of a move by its mnemonic, where the mnemonic fixes it.
WIDTH = {
    "movss": 4, "movd": 4, "movsd": 8, "movq": 8, "movlps": 8, "movhps": 8, "movlpd": 8,
    "movhpd": 8, "movaps": 16, "movups": 16, "movdqa": 16, "movdqu": 16, "movapd": 16,
    "movupd": 16, "movzbl": 1, "movzbw": 1, "movzbq": 1, "movsbl": 1, "movsbq": 1,
    "movzwl": 2, "movzwq": 2, "movswl": 2, "movswq": 2, "movslq": 4, "pinsrb": 1,
    "pinsrw": 2, "pinsrd": 4, "pinsrq": 8, "movb": 1, "movw": 2, "movl": 4,
}
STACK = re.compile(r"(-?0x[0-9a-f]+|-?\d+)?\(%rsp\)$")


def reg_width(op):
    r = op.lstrip("%")
    for regs, w in ((R64, 8), (R32, 4), (R16, 2), (R8, 1)):
        if r in regs:
            return w
    return None


def stack_offset(op):
    m = STACK.match(op)
    return int(m.group(1) or "0", 0) if m else None


def executed(binary, case, function):
    """Addresses of `function`'s instructions run about once per operation."""
    with tempfile.NamedTemporaryFile(suffix=".cg") as out:
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--dump-instr=yes",
             f"--callgrind-out-file={out.name}", binary, "run", case, str(ITERATIONS)],
            check=True, capture_output=True)
        counts = collections.Counter()
        names, fn, addr, after_calls = {}, None, 0, False
        for line in open(out.name):
            line = line.rstrip("\n")
            if line.startswith("fn="):
                m = re.match(r"\((\d+)\)(?: (.*))?", line[3:])
                if m and m.group(2):
                    names[m.group(1)] = m.group(2)
                fn = names.get(m.group(1)) if m else line[3:]
                continue
            if line.startswith("cfn="):
                m = re.match(r"\((\d+)\)(?: (.*))?", line[4:])
                if m and m.group(2):
                    names[m.group(1)] = m.group(2)
                continue
            if line.startswith(("cfi=", "cfl=")):
                continue
            if line.startswith("calls="):
                after_calls = True
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            parts = line.split()
            a = parts[0]
            if a.startswith("0x"):
                addr = int(a, 16)
            elif a[0] in "+-":
                step = int(a[1:], 16) if a[1:].startswith("0x") else int(a[1:])
                addr += step if a[0] == "+" else -step
            elif a != "*":
                continue
            if after_calls:
                # The line after `calls=` is the call's inclusive cost, not an instruction.
                after_calls = False
                continue
            if fn and function in fn and len(parts) >= 3:
                counts[addr] += int(parts[2])
    return sorted(a for a, c in counts.items() if c / ITERATIONS >= 0.9)


def disassemble(binary, addrs):
    if not addrs:
        return []
    text = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "-C", binary,
         f"--start-address={addrs[0]:#x}", f"--stop-address={addrs[-1] + 16:#x}"],
        check=True, capture_output=True, text=True).stdout
    wanted = set(addrs)
    lines = []
    for line in text.splitlines():
        head, _, ins = line.strip().partition(":")
        try:
            if int(head, 16) in wanted:
                lines.append(ins.strip())
        except ValueError:
            pass
    return lines


def hazards(instructions):
    stores, found = [], []
    for ins in instructions:
        m = re.match(r"(\S+)\s+(.*)", ins)
        if not m or not m.group(1).startswith(("mov", "pinsr")):
            continue
        mnemonic = m.group(1)
        ops = [o.strip() for o in re.split(r",(?![^(]*\))", m.group(2).split("#")[0].strip())]
        if len(ops) < 2:
            continue
        src, dst = ops[-2], ops[-1]
        width = WIDTH.get(mnemonic)
        if stack_offset(dst) is not None and not mnemonic.startswith("pinsr"):
            width = width or reg_width(src)
            if width:
                stores.append((stack_offset(dst), width, ins))
        elif stack_offset(src) is not None:
            width = width or reg_width(dst)
            if not width:
                continue
            lo = stack_offset(src)
            hi = lo + width
            overlapping = [s for s in stores if s[0] < hi and s[0] + s[1] > lo]
            if overlapping and not (overlapping[-1][0] <= lo and overlapping[-1][0] + overlapping[-1][1] >= hi):
                found.append((ins, [s[2] for s in overlapping[-4:]]))
    return found


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    binary, case = sys.argv[1], sys.argv[2]
    function = sys.argv[3] if len(sys.argv) == 4 else "decode_variant_with"
    found = hazards(disassemble(binary, executed(binary, case, function)))
    for load, stores in found:
        print(f"load  {load}\n  after {' | '.join(stores)}")
    print(f"{case}: {len(found)} load(s) spanning earlier stores in {function}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The deepest call chain of each BPF program in an object, in bytes of stack.

Where the kernel gives a program no private stack (tracepoint programs on
some builds, every program before Linux 6.13), the verifier adds the frames
of the program and of every function it calls, bpf_loop and bpf_find_vma
callbacks included, each rounded up to 16 bytes, and refuses the program
past 512. On a kernel that does give private stacks nothing checks it, so
this reads the object the way the verifier would: each function's frame
from clang's code (the deepest r10 offset it uses: at least what the
verifier counts), its calls (pseudo calls, and functions whose address it
loads: callbacks), and the deepest path from each program.

    bpf_stack.py OBJECT [LIMIT]     prints "bytes program > fn:frame > ..."
                                    deepest first; exit 1 when one is over
                                    LIMIT (default 512)
"""
import functools
import re
import subprocess
import sys


def read(obj):
    """Functions' frames, their callees, and the programs' names."""
    syms = {}
    out = subprocess.run(["llvm-objdump", "-t", obj], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        g = re.match(r"^([0-9a-f]+)\s.*\sF\s\.text\s+[0-9a-f]+\s+(\S+)$", line)
        if g:
            syms[int(g.group(1), 16)] = g.group(2)
    dis = subprocess.run(["llvm-objdump", "-dr", obj], capture_output=True, text=True, check=True).stdout
    frame, calls, progs = {}, {}, []
    fn = sec = last = None
    fp = set()  # registers holding r10 (a stack address being formed)
    for line in dis.splitlines():
        g = re.match(r"^Disassembly of section (\S+):", line)
        if g:
            sec = g.group(1)
            continue
        g = re.match(r"^[0-9a-f]+ <([^>]+)>:", line)
        if g:
            if not g.group(1).startswith("LBB"):
                fn = g.group(1)
                frame.setdefault(fn, 0)
                calls.setdefault(fn, set())
                if sec != ".text":
                    progs.append(fn)
                fp = set()
            continue
        if fn is None:
            continue
        s = line.strip()
        for x in re.findall(r"r10 - (\d+)", s):
            frame[fn] = max(frame[fn], int(x))
        g = re.search(r"(r\d+) = r10$", s)
        if g:
            fp.add(g.group(1))
            continue
        g = re.search(r"(r\d+) \+= -(\d+)$", s)
        if g and g.group(1) in fp:
            frame[fn] = max(frame[fn], int(g.group(2)))
            fp.discard(g.group(1))
            continue
        # a pseudo call inside .text: opcode 0x85, src_reg 1, pc-relative
        g = re.match(r"^(\d+):\s+85 10 00 00 ((?:[0-9a-f]{2}\s){4})\s*call", s)
        if g and sec == ".text":
            imm = int.from_bytes(bytes.fromhex("".join(g.group(2).split())), "little", signed=True)
            target = (int(g.group(1)) + imm + 1) * 8
            if target in syms:
                calls[fn].add(syms[target])
        # a call or a function's address by relocation: by name, or .text + offset
        g = re.search(r"R_BPF_64_(?:32|64)\s+(\S+)", s)
        if g:
            if g.group(1) == ".text" and last:
                h = re.search(r"= (\d+) ll$", last)
                if h and int(h.group(1)) in syms:
                    calls[fn].add(syms[int(h.group(1))])
            else:
                calls[fn].add(g.group(1))
        last = s
    for f in calls:
        calls[f] = {c for c in calls[f] if c in frame and c != f}
    return frame, calls, progs


def main():
    obj = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    frame, calls, progs = read(obj)
    if not progs:
        print(f"{obj}: no BPF programs found", file=sys.stderr)
        return 1

    @functools.lru_cache(None)
    def deepest(f):
        below = max((deepest(c) for c in calls[f]), default=(0, ()))
        return ((frame[f] + 15) // 16 * 16 + below[0], (f"{f}:{frame[f]}",) + below[1])

    rc = 0
    for p in sorted(progs, key=lambda p: -deepest(p)[0]):
        n, path = deepest(p)
        print(n, " > ".join(path))
        if n > limit:
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())

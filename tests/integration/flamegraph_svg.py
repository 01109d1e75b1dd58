#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Structure of `offcpu flamegraph` SVGs of a waitmix recording.

    flamegraph_svg.py DIR WAITMIX.json

DIR holds the graphs test_flamegraph.sh made (all, off, cpu, thread, comm,
pid, tid, time-all .svg); each is read with Python's XML parser.
Checked:
  * all.svg: frames in pre-order under "all", each comm with [on-cpu] /
    [off-cpu] below it; the root's on-CPU and off-CPU totals (its tooltip)
    are the --cpu-only and --off-cpu-only graphs' totals;
  * --off-cpu-only / --cpu-only: every frame of one kind, no split frames,
    the waiting functions only in the first, wl_spin in the second;
  * --per-thread: one comm-pid/tid frame per thread, the workload's
    threads among them, each wl_* function under its own thread's tid;
  * --comm, --pid, --tid: only the chosen comms / process / thread (whose
    comm is waitmix's until it names itself);
  * --time: a window around the whole run keeps every nanosecond (a
    window after it, nothing to draw, is an error: test_flamegraph.sh).
Prints '# ' figures and 'FAIL: ' lines; exit status 1 on failure.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import check, failures  # noqa: E402  (shared with the other checks)

NS = "{http://www.w3.org/2000/svg}"
UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def ns(text):
    v, u = text.split()
    return float(v) * UNITS[u]


def frames(path):
    """[(name, depth, {'on-CPU': ns, 'off-CPU': ns}, detail, path)] in document order."""
    root = ET.parse(path).getroot()
    g = root.find(".//%sg[@id='frames']" % NS)
    out, stack, rooty = [], [], None
    frameh = float(root.get("data-frameh"))
    for f in g.findall(NS + "g"):
        lines = f.find(NS + "title").text.split("\n")
        y = float(f.find(NS + "rect").get("y"))
        rooty = y if rooty is None else rooty
        depth = round(abs(y - rooty) / frameh)
        vals = {}
        for kind, t in re.findall(r"(on-CPU|off-CPU) (\d+(?:\.\d+)? (?:s|ms|us|ns))", lines[1]):
            vals[kind] = ns(t)
        del stack[depth:]
        stack.append(lines[0])
        out.append((lines[0], depth, vals, lines[2] if len(lines) > 2 else "", list(stack)))
    return out, root


def names_at(fr, depth):
    return {f[0] for f in fr if f[1] == depth}


def main(d, json_path):
    wl = json.load(open(json_path))
    threads = wl["threads"]
    allf, _ = frames(d + "/all.svg")
    off, _ = frames(d + "/off.svg")
    cpu, _ = frames(d + "/cpu.svg")
    check(allf and allf[0][0] == "all" and allf[0][1] == 0, "all.svg: first frame is not the root")
    depths_ok = all(b[1] <= a[1] + 1 for a, b in zip(allf, allf[1:]))
    check(depths_ok, "all.svg: frames not in pre-order (a frame deeper than its predecessor's child)")
    root = allf[0][2]
    print("# all.svg: %d frames, on-CPU %.3f ms, off-CPU %.3f ms; --off-cpu-only %d frames, "
          "--cpu-only %d frames" % (len(allf), root.get("on-CPU", 0) / 1e6, root.get("off-CPU", 0) / 1e6,
                                    len(off), len(cpu)))
    for name, depth, _, _, p in allf:
        if depth == 2:
            check(name in ("[on-cpu]", "[off-cpu]"), "all.svg: %s directly under comm %s" % (name, p[1]))
    # totals agree (titles print 2 decimals: 0.5 % of the value at worst)
    for f, kind in ((off, "off-CPU"), (cpu, "on-CPU")):
        check(abs(f[0][2].get(kind, 0) - root.get(kind, 0)) <= 0.005 * root.get(kind, 1),
              "%s total %s vs %s in all.svg" % (kind, f[0][2], root))
    check(all(set(v) <= {"off-CPU"} for _, _, v, _, _ in off), "--off-cpu-only: an on-CPU value")
    check(all(set(v) <= {"on-CPU"} for _, _, v, _, _ in cpu), "--cpu-only: an off-CPU value")
    for f, label in ((off, "--off-cpu-only"), (cpu, "--cpu-only")):
        check(not ({"[on-cpu]", "[off-cpu]"} & {x[0] for x in f}), "%s: split frames drawn" % label)
    check("wl_spin" in {x[0] for x in cpu} and "wl_spin" not in {x[0] for x in off},
          "wl_spin: not in --cpu-only, or in --off-cpu-only")
    check({t["func"] for t in threads if t["func"] != "wl_spin"} <= {x[0] for x in off},
          "--off-cpu-only: a waiting function is missing")

    thr, _ = frames(d + "/thread.svg")
    groups = {}
    for name in names_at(thr, 1):
        m = re.match(r"^(.*)-(\d+)/(\d+)$", name)
        if check(m, "--per-thread: frame %r is not comm-pid/tid" % name):
            groups[int(m.group(3))] = (m.group(1), int(m.group(2)))
    print("# --per-thread: %d threads: %s" % (len(groups), ", ".join(
        "%s-%d/%d" % (c, p, t) for t, (c, p) in sorted(groups.items()))))
    for t in threads:
        check(t["tid"] in groups and groups[t["tid"]][1] == t["pid"],
              "--per-thread: no frame for %s's thread %d/%d" % (t["func"], t["pid"], t["tid"]))
        under = {int(re.match(r".*/(\d+)$", p[1]).group(1)) for n, _, _, _, p in thr if n == t["func"]}
        check(t["tid"] in under, "--per-thread: %s not under its thread %d (under %s)" % (t["func"], t["tid"], under))

    comm, _ = frames(d + "/comm.svg")
    check(names_at(comm, 1) == {"wm-spin", "wm-child"}, "--comm wm-spin,wm-child: comms %s" % names_at(comm, 1))
    # a thread's first samples may come before it names itself (prctl): its
    # comm is then still the parent's, waitmix
    pid, _ = frames(d + "/pid.svg")
    check("wm-child" in names_at(pid, 1) and names_at(pid, 1) <= {"wm-child", "waitmix"},
          "--pid (the forked child): comms %s" % names_at(pid, 1))
    tid, _ = frames(d + "/tid.svg")
    check("wm-nanosleep" in names_at(tid, 1) and names_at(tid, 1) <= {"wm-nanosleep", "waitmix"},
          "--tid (the nanosleep thread): comms %s" % names_at(tid, 1))
    tall, _ = frames(d + "/time-all.svg")
    check(tall[0][2] == root, "--time around the run: totals %s, unfiltered %s" % (tall[0][2], root))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: flamegraph_svg.py DIR WAITMIX.json")
    main(*sys.argv[1:])

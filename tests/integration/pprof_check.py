#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""`offcpu report --pprof` read back by go tool pprof (Debian's golang-go).

    pprof_check.py FILE.data PROFILE.pb.gz SPIN.pb.gz WAITMIX.json

  * -top -sample_index=off_cpu: each waiting wl_* function's cumulative
    off-CPU time equals what waitmix measured around its calls within 5 %
    (of the record check's band: asleep .. asleep + wake-up run-queue
    wait, perfcheck.func_band) and, to the ns, the offcpu-time of Linux
    perf script's samples through it; the total equals perf script's;
  * -top -sample_index=cpu: wl_spin has the most flat CPU time, its
    cumulative time within 10 % of its measured CPU time (999 Hz sampling),
    the total equals perf script's cpu-clock total;
  * -tags: comm labels of the workload's threads, tid labels of its threads;
  * -raw: the mappings' build ids are those perf buildid-list reads;
  * SPIN.pb.gz (--comm wm-spin): only that comm's samples.
Prints '# ' figures and 'FAIL: ' lines; exit status 1 on failure.
"""
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perfcheck  # noqa: E402
from perfcheck import check, failures, run  # noqa: E402  (shared with the other checks)

OFF_FUNCS = ["wl_nanosleep_loop", "wl_pipe_read", "wl_pipe_write", "wl_mutex_hold",
             "wl_mutex_wait", "wl_fsync", "wl_vfork_wait", "wl_child_sleep"]
OFF_TOL, SPIN_TOL = 0.05, 0.10


ROW = re.compile(r"^\s*(\d+)(?:ns)?\s+[\d.]+%\s+[\d.]+%\s+(\d+)(?:ns)?\s+[\d.]+%\s+(.+?)\s*$")


def top(pb, index):
    """{function: (flat, cum)} in ns and the profile's total, from -top."""
    out = run(["go", "tool", "pprof", "-top", "-sample_index=" + index, "-unit=ns",
               "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", pb])
    rows, total = {}, None
    for line in out.splitlines():
        m = re.search(r"Total samples = (\d+)(?:ns)? ", line)
        if m:
            total = int(m.group(1))
        m = ROW.match(line)
        if m:
            rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    check(total is not None, "-top -sample_index=%s: no 'Total samples' line" % index)
    return rows, total or 0, out


def tags(pb):
    """{label: set of values} from -tags (values as printed)."""
    out = run(["go", "tool", "pprof", "-tags", pb])
    res, key = {}, None
    for line in out.splitlines():
        m = re.match(r"^\s*(\w+): Total", line)
        if m:
            key = m.group(1)
            res[key] = set()
            continue
        m = re.match(r"^\s+\S+ \(\s*[\d.]+%\): (.+)$", line)
        if m and key:
            res[key].add(m.group(1).strip())
    return res


def main(data, pb, spin_pb, json_path):
    wl = {t["func"]: t for t in json.load(open(json_path))["threads"]}
    samples, _ = perfcheck.script_samples(data)
    ptot, pfunc = {}, {}
    for s in samples:
        ptot[s.event] = ptot.get(s.event, 0) + s.period
        if s.event == "offcpu-time":
            for f in {perfcheck.fname(fr) for fr in s.frames} & set(OFF_FUNCS):
                pfunc[f] = pfunc.get(f, 0) + s.period

    off, off_total, _ = top(pb, "off_cpu")
    print("# off_cpu total %d ns, perf script offcpu-time %d ns" % (off_total, ptot.get("offcpu-time", 0)))
    check(off_total == ptot.get("offcpu-time"), "off_cpu total %d ns != perf script %s ns"
          % (off_total, ptot.get("offcpu-time")))
    for f in OFF_FUNCS:
        t = wl[f]
        ref = t["func_offcpu_ns"]
        lo, hi = perfcheck.func_band(t, OFF_TOL)
        cum = off.get(f, (0, 0))[1]
        print("# %-18s pprof off_cpu cum %9.3f ms; workload asleep %9.3f ms (%+.2f %%), band [%.3f, %.3f] ms"
              % (f, cum / 1e6, ref / 1e6, 100 * (cum - ref) / ref, lo / 1e6, hi / 1e6))
        check(lo <= cum <= hi, "%s: off_cpu %d ns outside [%d, %d] (asleep %d ns, %+.2f %%)"
              % (f, cum, lo, hi, ref, 100 * (cum - ref) / ref))
        check(cum == pfunc.get(f), "%s: off_cpu %d ns, perf script's samples through it %s ns"
              % (f, cum, pfunc.get(f)))

    cpu, cpu_total, cpu_out = top(pb, "cpu")
    ref = wl["wl_spin"]["func_oncpu_ns"]
    flat, cum = cpu.get("wl_spin", (0, 0))
    heaviest = max(cpu.items(), key=lambda kv: kv[1][0])[0] if cpu else None
    print("# wl_spin            pprof cpu flat %9.3f ms, cum %9.3f ms; workload on-CPU %9.3f ms (%+.2f %%); "
          "cpu total %d ns, perf script cpu-clock %d ns" % (flat / 1e6, cum / 1e6, ref / 1e6,
                                                            100 * (cum - ref) / ref, cpu_total,
                                                            ptot.get("cpu-clock", 0)))
    # the arithmetic is in wl_spin's leaf, wl_spin_step (waitmix.c)
    check(heaviest == "wl_spin_step", "-sample_index=cpu: heaviest flat is %s, not wl_spin_step:\n%s"
          % (heaviest, "\n".join(cpu_out.splitlines()[:12])))
    check(abs(cum - ref) <= SPIN_TOL * ref, "wl_spin: cpu %d ns vs measured %d ns, not within %d %%"
          % (cum, ref, 100 * SPIN_TOL))
    check(cpu_total == ptot.get("cpu-clock"), "cpu total %d ns != perf script %s ns"
          % (cpu_total, ptot.get("cpu-clock")))

    tg = tags(pb)
    comms = {c for c in tg.get("comm", ()) if c.startswith("wm-")}
    tids = {int(t) for t in tg.get("tid", ()) if t.isdigit()}
    print("# -tags: comm %s; %d tids" % (sorted(comms), len(tids)))
    check({"wm-spin", "wm-nanosleep", "wm-child", "wm-fsync"} <= comms, "-tags comm: %s" % comms)
    check({t["tid"] for t in wl.values()} <= tids, "-tags tid: %s lacks a workload thread" % tids)
    check(set(tg.get("state", ())) <= {"S", "D"} and "D" in tg.get("state", ()), "-tags state: %s"
          % tg.get("state"))

    raw = run(["go", "tool", "pprof", "-raw", pb])
    maps = dict(re.findall(r"^\d+: 0x\w+/0x\w+/0x\w+ (\S+) ([0-9a-f]{2,}) ", raw, re.M))
    perf_ids = {}
    for line in run(["perf", "buildid-list", "-i", data]).splitlines():
        bid, _, name = line.partition(" ")
        perf_ids[name] = bid
    print("# -raw: %d mappings with build ids; perf buildid-list: %d" % (len(maps), len(perf_ids)))
    check(maps and all(perf_ids.get(n) == b for n, b in maps.items()),
          "mapping build ids %s differ from perf buildid-list %s" % (maps, perf_ids))
    check(any(n.endswith("/waitmix") for n in maps), "no mapping of waitmix with its build id")

    st = tags(spin_pb)
    check(st.get("comm") == {"wm-spin"}, "--comm wm-spin: comm labels %s" % st.get("comm"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: pprof_check.py FILE.data PROFILE.pb.gz SPIN.pb.gz WAITMIX.json")
    main(*sys.argv[1:])

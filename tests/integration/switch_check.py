#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Off-CPU time offcpu derives from `perf record -e sched:sched_switch -g`
recordings, against offcpu's own recording of the same run and against the
workload's own measurement.

    switch_check.py exact OFFCPU SWITCHES.data OWN.data WAITMIX.json
        SWITCHES.data: perf record -a -e sched:sched_switch -g (filtered to
        waitmix's switches) around `offcpu record -o OWN.data --sched-delay
        -- waitmix`: the switch-ins of waitmix's threads the kernel traces
        are in the file, and those waits end where they ended (on this VM
        switches from an idle CPU are almost never traced: there a wait
        ends at the thread's next event). The reference of a thread is offcpu's
        own S + D plus its run-queue delay after its wake-ups (sched-delay
        samples in state S or D: offcpu ends an interval at the wake-up and
        counts the wait for a CPU apart; a switch event only says when the
        thread ran again). Over the waitmix threads with 20 ms or more
        off-CPU, the derived total (report --threads, S + D) within 5 % of
        the references' total; per thread, the derived time at least its
        reference - 5 % (S and D each too, + 1 ms), and at most its
        reference + 5 % plus its time on CPU and its other run-queue delay:
        a wait whose switch-in is not in the file (from an idle CPU, or
        after a thread of the hypervisor's agent, which no tracer sees)
        ends at the thread's next event, after it ran (the fsync thread,
        which runs 20 ms between its waits: +75 % in 1 of 6 suite runs).

    switch_check.py bound OFFCPU SWITCHES.data WAITMIX.json
        SWITCHES.data: perf record -e sched:sched_switch -g -- waitmix (its
        own switch-outs, and the switch-ins only from another of its
        threads): a wait whose end is not in the file ends at the thread's
        next event, an upper bound. Per thread: the derived time at least
        what the thread measured asleep (- 1 %), at most its wall time
        (+ 1 %); the total within 5 % of the threads' asleep time plus
        their run-queue wait after wake-ups.

Both: --folded and flamegraph sum to the report's event count, and the
report says where the time came from.
Prints '# ' figure lines; 'FAIL: ' lines and a non-zero exit on failure.
"""
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import UNITS, check, failures, measure, run, threads_rows  # noqa: E402

MIN_NS = 20e6
TOL = 0.05


def wm_threads(path):
    """The workload's threads from its JSON: {tid: thread}."""
    return {t["tid"]: t for t in json.load(open(path))["threads"]}


def derived_common(offcpu, path):
    """The report's own word on the derivation, and its outputs agree."""
    p = subprocess.run([offcpu, "report", "-i", path, "--no-children", "-g", "none"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    check(p.returncode == 0, "report exited %d: %s" % (p.returncode, p.stderr[-300:]))
    check("of event 'offcpu-time'" in p.stdout, "report: no offcpu-time section")
    m = re.search(r"^# Derived from sched:sched_switch: .*$", p.stdout, re.M)
    check(m is not None, "report: no '# Derived from sched:sched_switch' line")
    check("sched:sched_switch samples, as hotspot takes it" in p.stderr,
          "report: no note on where the time came from: %s" % p.stderr[-300:])
    count = re.search(r"^# Event count \(approx\.\): (\d+)", p.stdout, re.M)
    count = int(count.group(1)) if count else 0
    folded = run([offcpu, "report", "-i", path, "--folded"])
    fsum = sum(int(l.rpartition(" ")[2]) for l in folded.splitlines() if l.strip())
    check(fsum == count, "--folded sums to %d, the report's event count is %d" % (fsum, count))
    svg = path + ".svg"
    fg = subprocess.run([offcpu, "flamegraph", "-i", path, "-o", svg], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, universal_newlines=True)
    check(fg.returncode == 0 and os.path.exists(svg), "flamegraph exited %d: %s" % (fg.returncode, fg.stderr))
    tot = re.search(r'data-total="(\d+)"', open(svg).read()) if os.path.exists(svg) else None
    check(tot is not None and int(tot.group(1)) == count,
          "flamegraph total %s, the report's %d" % (tot.group(1) if tot else None, count))
    measure("%s: %s; --folded and flamegraph %d ns = the report's" % (
        os.path.basename(path), m.group(0)[2:] if m else "?", count))


def rq_after_wake(offcpu, path):
    """{tid: ns} of sched-delay after a sleep (state S or D) in offcpu's own file."""
    out = run([offcpu, "report", "-i", path, "-e", "sched-delay", "--no-children", "-g", "none",
               "--sort", "tid,state", "-q"])
    res = {}
    for line in out.splitlines():
        m = re.match(r"^\s+[\d.]+%\s+([\d.]+) (s|ms|us|ns)\s+(-?\d+)/(\d+)\s+(\S)\s*$", line)
        if m and m.group(5) in "SD":
            tid = int(m.group(4))
            res[tid] = res.get(tid, 0) + float(m.group(1)) * UNITS[m.group(2)]
    return res


def cmd_exact(offcpu, switches, own, json_path):
    derived_common(offcpu, switches)
    wm = wm_threads(json_path)
    mine, theirs, rq = threads_rows(offcpu, switches), threads_rows(offcpu, own), rq_after_wake(offcpu, own)
    compared = got_sum = ref_sum = 0
    for tid, t in sorted(wm.items()):
        o = theirs.get(tid)
        if o is None or (o["s"] + o["d"]) < MIN_NS:
            continue
        d = mine.get(tid)
        check(d is not None, "%s (tid %d): no row in the derived --threads" % (t["role"], tid))
        if d is None:
            continue
        wake = rq.get(tid, 0)
        ref = o["s"] + o["d"] + wake
        # What an end after it ran may add: its time on CPU and its other
        # run-queue waits. The thread's own clock and schedstat, where they
        # say more than the recording: cpu-clock samples place a burst
        # shorter than their period whole or not at all, so the sampled time
        # of the fsync thread's bursts is off by a period or two (a suite
        # run: derived 67.49 ms against a bound of 66.64 ms from samples).
        on = max(o["on"] or 0, t.get("oncpu_ns", 0))
        ran = on + max(max(o["rq"] or 0, t.get("rq_ns", 0)) - wake, 0)
        got = d["s"] + d["d"]
        compared += 1
        got_sum += got
        ref_sum += ref
        measure("%-12s tid %d: derived S %.3f D %.3f ms; offcpu's S %.3f D %.3f + run-queue after wake-ups %.3f ms (%+.2f %%; on CPU and preempted %.3f ms)"
                % (t["role"], tid, d["s"] / 1e6, d["d"] / 1e6, o["s"] / 1e6, o["d"] / 1e6,
                   wake / 1e6, 100.0 * (got - ref) / ref, ran / 1e6))
        check(got >= ref - TOL * ref, "%s: derived %.3f ms, below offcpu's %.3f ms - 5 %%"
              % (t["role"], got / 1e6, ref / 1e6))
        check(got <= ref + TOL * ref + ran, "%s: derived %.3f ms, above offcpu's %.3f ms + 5 %% + its %.3f ms on CPU"
              % (t["role"], got / 1e6, ref / 1e6, ran / 1e6))
        for k in ("s", "d"):
            check(d[k] >= o[k] - TOL * (o[k] + wake) - 1e6,
                  "%s: derived %s %.3f ms, offcpu's %.3f ms" % (t["role"], k.upper(), d[k] / 1e6, o[k] / 1e6))
    check(compared >= 6, "only %d threads compared" % compared)
    check(ref_sum and abs(got_sum - ref_sum) <= TOL * ref_sum,
          "total derived %.3f ms, offcpu's %.3f ms (beyond 5 %%)" % (got_sum / 1e6, ref_sum / 1e6))
    if ref_sum:
        measure("total: derived %.3f ms, offcpu's %.3f ms (%+.2f %%)"
                % (got_sum / 1e6, ref_sum / 1e6, 100.0 * (got_sum - ref_sum) / ref_sum))


def cmd_bound(offcpu, switches, json_path):
    derived_common(offcpu, switches)
    wm = wm_threads(json_path)
    mine = threads_rows(offcpu, switches)
    got_sum = ref_sum = 0
    for tid, t in sorted(wm.items()):
        asleep = t["offcpu_ns"]
        d = mine.get(tid)
        if asleep < MIN_NS:
            continue
        check(d is not None, "%s (tid %d): no row in the derived --threads" % (t["role"], tid))
        if d is None:
            continue
        got = d["s"] + d["d"]
        got_sum += got
        ref_sum += asleep + t["func_rq_wake_ns"]
        measure("%-12s tid %d: derived %.3f ms; asleep %.3f ms (%+.2f %%), wall %.3f ms"
                % (t["role"], tid, got / 1e6, asleep / 1e6, 100.0 * (got - asleep) / asleep, t["wall_ns"] / 1e6))
        check(got >= asleep * 0.99, "%s: derived %.3f ms below the thread's asleep %.3f ms"
              % (t["role"], got / 1e6, asleep / 1e6))
        # A wait whose switch-in was not recorded ends at the thread's next
        # event, which for its last wait is its exit: after the span the
        # thread timed itself (the sanitized pass once saw pipe-read's last
        # wait end 4.3 ms past it, a thread woken and then kept off the CPU
        # on its way out). The bound is that span, or the thread's life in
        # the recording (--threads' wall) where that is longer.
        life = max(t["wall_ns"] * 1.01, d["wall"] or 0)
        check(got <= life, "%s: derived %.3f ms above the thread's wall %.3f ms (its life in the recording %.3f ms)"
              % (t["role"], got / 1e6, t["wall_ns"] / 1e6, (d["wall"] or 0) / 1e6))
    check(ref_sum > 0 and abs(got_sum - ref_sum) <= TOL * ref_sum,
          "total derived %.3f ms, asleep + run-queue after wake-ups %.3f ms (beyond 5 %%)"
          % (got_sum / 1e6, ref_sum / 1e6))
    if ref_sum:
        measure("total: derived %.3f ms, asleep + run-queue after wake-ups %.3f ms (%+.2f %%)"
                % (got_sum / 1e6, ref_sum / 1e6, 100.0 * (got_sum - ref_sum) / ref_sum))


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("exact", "bound"):
        sys.exit(__doc__)
    if sys.argv[1] == "exact":
        cmd_exact(*sys.argv[2:6])
    else:
        cmd_bound(*sys.argv[2:5])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

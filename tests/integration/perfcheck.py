#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks of recorded perf.data files, read back with Linux perf itself.

The record tests call this with a subcommand; it runs `perf report` /
`perf script`, compares what they print with the reference measured by the
workload or the test, prints each figure as a '# ' line and exits non-zero
with a 'FAIL: ' line when a check does not hold.

Only perf's own output is parsed here: if perf cannot read a file, that is
a failure of the file, not of this script.
"""
import json
import os
import re
import struct
import subprocess
import sys

# the perf that reads the files: Debian's, or another one (PERFCHECK_PERF=path)
PERF = os.environ.get("PERFCHECK_PERF") or "perf"
OFF_EVENTS = ("offcpu-time", "offcpu-wakeup", "sched-delay")
failures = []


def measure(msg):
    print("# " + msg, flush=True)


def check(ok, msg):
    """Records a failed check (all checks run, the exit status sums them)."""
    if not ok:
        failures.append(msg)
        print("FAIL: " + msg, flush=True)
    return ok


def finish():
    sys.exit(1 if failures else 0)


def run(cmd):
    """cmd's standard output; a failure of cmd ends the check (exit 1)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, errors="replace")
    if p.returncode != 0:
        print("FAIL: %s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr[-3000:]))
        sys.exit(1)
    return p.stdout


def run_perf(args):
    p = subprocess.run([PERF] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, errors="replace")
    if p.returncode != 0:
        print("perf %s failed (exit %d):\n%s" % (" ".join(args), p.returncode, p.stderr[-3000:]))
        sys.exit(1)
    return p.stdout, p.stderr


# ---------------------------------------------------------------- perf script

# the header line; perf adds [cpu] when bpf-output is asked for
HEADER = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+(?:\[\d+\]\s+)?(?P<time>\d+\.\d+):\s+"
                    r"(?:(?P<period>\d+)\s+)?(?P<event>[^\s:]+)(?::[^\s:]*)?:\s*(?P<rest>.*)$")
FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)\s*$")
# a line of a BPF-output event's raw payload, after its callchain and a blank line
DUMP = re.compile(r"^\s+(?:BPF output: )?[0-9a-f]{4}: ((?:[0-9a-f]{2} )+)")


class Sample:
    __slots__ = ("comm", "pid", "tid", "time", "period", "event", "frames", "ips", "raw")

    def funcs(self):
        return {fname(f) for f in self.frames}

    def __str__(self):
        return "%s %d/%d %.9f %s %s [%s]" % (self.comm, self.pid, self.tid, self.time / 1e9,
                                            self.period, self.event, " <- ".join(self.frames[:8]))


def fname(frame):
    """A frame's function name, without +offset or @symbol-version."""
    return frame.split("+")[0].split("@")[0]


def to_ns(text):
    sec, frac = text.split(".")
    return int(sec) * 1000000000 + int((frac + "000000000")[:9])


def script_samples(path, extra=(), raw=False):
    """Every sample of `perf script`, with its callchain (innermost first),
    in the order perf prints them; with raw, the payload of BPF-output events
    too (Sample.raw, bytes). Returns (samples, perf's stderr)."""
    fields = "comm,pid,tid,time,event,period,ip,sym" + (",bpf-output" if raw else "")
    out, err = run_perf(["script", "-i", path, "--ns", "-F", fields] + list(extra))
    samples, cur = [], None
    for line in out.splitlines():
        if not line.strip():
            if not raw:  # the payload follows a blank line
                cur = None
            continue
        m = DUMP.match(line) if raw else None
        if m and cur is not None:
            cur.raw += bytes(int(x, 16) for x in m.group(1).split())
            continue
        if line[0] in " \t" and cur is not None:
            m = FRAME.match(line)
            if m:
                cur.frames.append(m.group("sym"))
                cur.ips.append(int(m.group("ip"), 16))
            continue
        m = HEADER.match(line)
        if not m:
            continue
        cur = Sample()
        cur.comm = m.group("comm").strip()
        cur.pid, cur.tid = int(m.group("pid")), int(m.group("tid"))
        cur.time = to_ns(m.group("time"))
        cur.period = int(m.group("period") or 0)
        cur.event = m.group("event")
        cur.frames, cur.ips, cur.raw = [], [], b""
        rest = m.group("rest").split()
        if len(rest) >= 2:  # no callchain: "ip sym" on the header line
            cur.frames.append(" ".join(rest[1:]))
            cur.ips.append(int(rest[0], 16))
        samples.append(cur)
    return samples, err


def stolen_ns():
    """IRQ + softirq + steal time of all CPUs during the last recording, at
    most (OFFCPU_TEST_STOLEN_NS, set by record_lib.sh's record: /proc/stat's
    ticks, and the tick each of its three fields may leave out): a bound on
    what a workload's wall - on-CPU - run-queue counts as asleep while its
    thread was current."""
    return int(os.environ.get("OFFCPU_TEST_STOLEN_NS", "0") or 0)


def steal_bound(t, prefix):
    """What waitmix's "asleep" (wall - CPU time - run-queue wait) of thread t
    may hold that the thread spent current, over its life (prefix "") or in
    its calls ("func_"): the run's IRQ + steal time (stolen_ns(), or
    OFFCPU_TEST_STEAL_NS where a test measured more), up to the thread's own
    time on a CPU there. The CPU time leaves the steal out, the task-clock
    keeps it (but not the context switches, which the CPU time keeps): the
    larger of the two. In a burst of steal the hypervisor took 53 % of the
    fsync thread's time on a CPU, more than its CPU time."""
    stolen = max(int(os.environ.get("OFFCPU_TEST_STEAL_NS", "0") or 0), stolen_ns())
    return min(stolen, max(t[prefix + "oncpu_ns"], t.get(prefix + "task_clock_ns", -1)))


def func_band(t, tol):
    """(lo, hi): where a recorder's off-CPU time in one of waitmix's named
    functions (t, a thread of its JSON) must lie. An interval ends at the
    wake-up (the kernel's accounting: "asleep", wall - on-CPU - run-queue
    wait) or at the switch-in (perf --off-cpu: + the run-queue wait after
    wake-ups), so the band runs from asleep - tol to asleep + that wait +
    tol. The bottom also gives up what waitmix counts asleep although the
    thread was current (steal_bound)."""
    sleep = t["func_offcpu_ns"]
    lo = sleep * (1 - tol) - steal_bound(t, "func_")
    hi = (sleep + t["func_rq_wake_ns"] + t["func_rq_mixed_ns"]) * (1 + tol)
    return lo, hi


def offcpu_raw(raw):
    """(state, flags, count) of an offcpu-time sample's RAW data (Sample.raw):
    perf's embedded sample (pid, tid, period, callchain, cgroup), then
    offcpu's own fields (src/perfdata/offcpu_payload.h); a bare offcpu_raw in
    older recordings. None when there is none."""
    off = 0
    if len(raw) >= 32:
        nr, = struct.unpack_from("<Q", raw, 16)
        if 32 + 8 * nr + 16 <= len(raw):
            off = 32 + 8 * nr
    if off + 16 > len(raw):
        return None
    state, flags, count = struct.unpack_from("<IIQ", raw, off)
    return chr(state & 0xff), flags, count


def task_events(path):
    """({tid: fork time ns}, {tid: exit time ns}) from the PERF_RECORD_FORK
    and PERF_RECORD_EXIT side-band records."""
    out, _ = run_perf(["script", "-i", path, "--ns", "--show-task-events", "-F", "comm,pid,tid,time"])
    forks, exits = {}, {}
    for line in out.splitlines():
        m = re.search(r"(\d+\.\d+): PERF_RECORD_(EXIT|FORK)\((\d+):(\d+)\)", line)
        if m:
            (exits if m.group(2) == "EXIT" else forks)[int(m.group(4))] = to_ns(m.group(1))
    return forks, exits


# ---------------------------------------------------------------- perf report

def report_periods(path):
    """{event: {comm: total period}} from `perf report --sort comm`."""
    out, _ = run_perf(["report", "-i", path, "--stdio", "--no-children", "--sort", "comm",
                       "-F", "period,comm", "-g", "none"])
    res, ev = {}, None
    for line in out.splitlines():
        m = re.match(r"# Samples: \S+\s+of event '([^']*)'", line)
        if m:
            ev = m.group(1).split(":")[0]
            res[ev] = {}
            continue
        m = re.match(r"^\s+(\d+)\s+(.*?)\s*$", line)
        if m and ev is not None:
            res[ev][m.group(2)] = res[ev].get(m.group(2), 0) + int(m.group(1))
    return res


# ---------------------------------------------------------------- offcpu report --threads

UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def threads_rows(binary, path, extra=("--idle",)):
    """`offcpu report --threads` rows: {tid: {comm, wall, on, s, d, rq, rest}} in
    ns; a column the file has nothing for ('-') is None. Every thread (--idle:
    those asleep the whole window in one wait too) unless extra says otherwise."""
    rows = {}
    for line in run([binary, "report", "-i", path, "--threads", "--limit", "0"] + list(extra)).splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(-?[\d.]+) (s|ms|us|ns)\s+(.*)$", line)
        if not m:
            continue
        # "*": on-CPU cut to what wall leaves (sampling error)
        vals = re.findall(r"(?:\*?(-?[\d.]+) (s|ms|us|ns)|(-))\s+(?:-?[\d.]+%|-)", m.group(6))
        if len(vals) != 5:
            continue
        cols = [float(v) * UNITS[u] if not dash else None for v, u, dash in vals]
        rows[int(m.group(2))] = dict(zip(("on", "s", "d", "rq", "rest"), cols),
                                     comm=m.group(3), wall=float(m.group(4)) * UNITS[m.group(5)])
    return rows


# ---------------------------------------------------------------- subcommands

def cmd_sleep(path, expect_ns):
    """`sleep N` recorded: offcpu-time for comm sleep totals N s +- 2 %,
    and perf script shows the sample with a libc symbol."""
    expect_ns = int(expect_ns)
    per = report_periods(path)
    measure("perf report events: %s" % ", ".join("%s (%d comms)" % (e, len(c)) for e, c in per.items()))
    got = per.get("offcpu-time", {}).get("sleep", 0)
    measure("offcpu-time for comm sleep: %.1f ms (sleep of %.1f ms, %+.2f %%)"
            % (got / 1e6, expect_ns / 1e6, 100.0 * (got - expect_ns) / expect_ns))
    check(abs(got - expect_ns) <= 0.02 * expect_ns,
          "offcpu-time of comm sleep is %d ns, not %d ns +- 2 %%" % (got, expect_ns))
    samples, _ = script_samples(path)
    off = [s for s in samples if s.event == "offcpu-time" and s.comm == "sleep"]
    check(off, "perf script prints no offcpu-time sample for comm sleep")
    libc_syms = libc_symbols()
    with_libc = [s for s in off if any(fname(f) in libc_syms for f in s.frames)]
    if off:
        longest = max(off, key=lambda s: s.period)
        measure("longest sleep sample: %s" % longest)
    check(with_libc, "no offcpu-time sample of sleep has a libc symbol in its callchain")
    finish()


def libc_symbols():
    """Names defined in the libc that sleep uses (perf prints the symbol
    without the DSO with -F sym, so the name is looked up in libc)."""
    import glob
    names = set()
    for lib in glob.glob("/lib/*-linux-gnu/libc.so.6") + glob.glob("/usr/lib/*-linux-gnu/libc.so.6"):
        p = subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE,
                           universal_newlines=True)
        for line in p.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3:
                names.add(parts[2].split("@")[0])
    return names


def pct(got, ref):
    return 100.0 * (got - ref) / ref if ref else 0.0


def innermost_wl(frames):
    """The innermost workload function of a callchain: the first wl_* frame,
    the wl_call_* wrappers around libc excluded."""
    for f in frames:
        name = fname(f)
        if name.startswith("wl_") and not name.startswith("wl_call_"):
            return name
    return None


def cmd_waitmix(path, json_path, thresh_ms, spin="spin"):
    """The waitmix workload recorded: per function, per thread, spin (its
    CPU samples; "nospin" leaves that out, for a recording whose CPUs were
    held with interrupts off on purpose, where cpu-clock cannot sample)."""
    wl = json.load(open(json_path))
    thresh = float(thresh_ms) * 1e6
    samples, err = script_samples(path)
    forks, exits = task_events(path)
    off = [s for s in samples if s.event == "offcpu-time"]
    cpu = [s for s in samples if s.event not in OFF_EVENTS]
    measure("thresh %s ms: %d offcpu-time samples, %d cpu samples (%s)"
            % (thresh_ms, len(off), len(cpu), ",".join(sorted({s.event for s in cpu}))))
    check(off, "no offcpu-time samples")
    by_func = {}
    for s in off:
        by_func.setdefault(innermost_wl(s.frames), []).append(s)
    threads = wl["threads"]

    # Each function: its time on its own thread. An off-CPU interval starts
    # when the task leaves the CPU to wait and ends either at its wake-up
    # (the kernel's own accounting: schedstat's wall - on-CPU - run-queue
    # wait, "asleep") or at its switch-in (perf --off-cpu), which adds the
    # wait for a CPU after the wake-up; schedstat counts that as run-queue
    # wait, as it does the wait after a preemption (off-CPU by neither
    # definition). waitmix classes each call's run-queue wait by its context
    # switches (wake / preempt / mixed), so the recorded time must lie in
    # [asleep - 3 %, asleep + wake + mixed + 3 %]: either definition passes,
    # counting preemptions or missing sleep does not.
    for t in threads:
        if t["role"] == "spin":
            continue
        got = by_func.get(t["func"], [])
        total = sum(s.period for s in got)
        sleep, rq = t["func_offcpu_ns"], t["func_rq_ns"]
        wake, mixed = t["func_rq_wake_ns"], t["func_rq_mixed_ns"]
        # Time the hypervisor steals from the thread while it is current is
        # neither its on-CPU time (the CPU clock leaves steal out) nor
        # run-queue wait, so waitmix counts it "asleep"; it was on a CPU for
        # the kernel and the recorder. It matters where a call's on-CPU time
        # is long: with OFFCPU_TEST_STALL every stalled switch-in books its
        # 20 ms to the task switched in (fsync: 0.7-1.1 s "on CPU" in its
        # calls against 20-300 ms asleep), and a vCPU spinning that long is
        # the one the host preempts. The tests that stall pass the run's
        # steal (OFFCPU_TEST_STEAL_NS, an upper bound from /proc/stat's
        # ticks); func_band's bottom allows for it.
        lo, hi = func_band(t, 0.03)
        steal = steal_bound(t, "func_")
        tids = sorted({s.tid for s in got})
        measure("%-11s %-18s tid %-6d recorded %8.2f ms in %3d samples; asleep %8.2f ms (%+.2f %%), "
                "+ wake-up wait %.2f ms (%+.2f %%), mixed %.2f ms; designed %.1f ms"
                % (t["role"], t["func"], t["tid"], total / 1e6, len(got), sleep / 1e6,
                   pct(total, sleep), wake / 1e6, pct(total, sleep + wake), mixed / 1e6,
                   t["design_ns"] / 1e6))
        check(got, "%s: no offcpu-time sample with %s in its stack" % (t["role"], t["func"]))
        check(tids == [t["tid"]], "%s: samples of %s on tids %s, expected only tid %d (pid %d)"
              % (t["role"], t["func"], tids, t["tid"], t["pid"]))
        pids = sorted({s.pid for s in got})
        check(not got or pids == [t["pid"]], "%s: samples of %s in pids %s, expected %d"
              % (t["role"], t["func"], pids, t["pid"]))
        check(lo <= total <= hi, "%s: %s recorded %d ns, outside [%d, %d] (asleep %d, rq %d, on CPU %d, "
              "steal allowed %d)" % (t["role"], t["func"], total, lo, hi, sleep, rq, t["func_oncpu_ns"], steal))
        # Direct path: every call longer than the threshold is one sample.
        per_call = t["func_offcpu_ns"] / max(t["calls"], 1)
        if per_call >= 1.5 * thresh:
            direct = [s for s in got if s.period >= thresh]
            check(len(direct) == t["calls"], "%s: %d samples >= threshold, expected one per call (%d)"
                  % (t["role"], len(direct), t["calls"]))

    # Every thread: all of its off-CPU time, whatever the stack, against
    # schedstat over the thread's life: asleep, up to asleep + its run-queue
    # wait except what waitmix saw as preemption. 2 %, with a floor of
    # 0.2 ms for threads that hardly sleep (spin). schedstat's on-CPU time
    # leaves out IRQ and steal time, which then counts as "asleep": the
    # bottom of the band allows for the run's IRQ + steal time of all CPUs
    # (steal_bound: a bound from /proc/stat's 10 ms ticks), up to the
    # thread's time on a CPU. The steal comes in bursts: in one, 120 runs of
    # waitmix saw 0.1-0.3 s of it per run and the fsync thread's "asleep"
    # 10-53 % above its recorded off-CPU time, by up to 112 % of its CPU
    # time in the calls; outside, 0-1 % (0.2-0.3 ms of its 20 ms on CPU, in
    # ticks that showed no steal).
    stolen = stolen_ns()
    measure("IRQ + steal time during the run, all CPUs, at most: %.1f ms" % (stolen / 1e6))
    for t in threads:
        got = [s for s in off if s.tid == t["tid"]]
        total = sum(s.period for s in got)
        sleep, rq = t["offcpu_ns"], t["rq_ns"]
        preempt = t["func_rq_preempt_ns"]
        lo = min(sleep * 0.98, sleep - 200000) - steal_bound(t, "")
        hi = max((sleep + rq - preempt) * 1.02, sleep + rq - preempt + 200000)
        measure("thread %-6d %-11s recorded S+D %8.2f ms; schedstat wall-oncpu-rq %8.2f ms (%+.2f %%); "
                "rq %.2f ms, of which preemption %.2f ms"
                % (t["tid"], t["role"], total / 1e6, sleep / 1e6, pct(total, sleep), rq / 1e6,
                   preempt / 1e6))
        check(lo <= total <= hi, "thread %d (%s): recorded %d ns, outside [%d, %d]"
              % (t["tid"], t["role"], total, lo, hi))
        # Real timestamps inside the thread's life: not before it started (its
        # FORK record: a wait before the thread's first measurement, e.g. its
        # first malloc's mmap, is its own, summed and timed before it), not
        # after its exit (EXIT record); the thread's own measured start and
        # end where the records are missing.
        start = forks.get(t["tid"], t["start_ns"])
        end = exits.get(t["tid"])
        check(end is not None, "thread %d (%s): no PERF_RECORD_EXIT" % (t["tid"], t["role"]))
        end = end if end is not None else t["end_ns"]
        bad = [s for s in got if not (start <= s.time <= end)]
        check(not bad, "thread %d (%s): %d samples outside its life [%d, %d], e.g. %s"
              % (t["tid"], t["role"], len(bad), start, end, bad[0] if bad else ""))

    # Spin: cpu-clock samples with wl_spin in the stack, on the spin thread.
    for t in threads:
        if t["role"] != "spin" or spin == "nospin":
            continue
        got = [s for s in cpu if any(fname(f) == "wl_spin" for f in s.frames)]
        total = sum(s.period for s in got)
        ref = t["func_oncpu_ns"]
        measure("spin        wl_spin            tid %-6d cpu samples %8.2f ms in %3d samples; "
                "thread CPU time in wl_spin %8.2f ms (%+.2f %%)"
                % (t["tid"], total / 1e6, len(got), ref / 1e6, 100.0 * (total - ref) / ref))
        check(abs(total - ref) <= 0.10 * ref, "spin: cpu samples %d ns, not %d ns +- 10 %%" % (total, ref))
        tids = sorted({s.tid for s in got})
        check(tids == [t["tid"]], "spin: wl_spin samples on tids %s, expected %d" % (tids, t["tid"]))
    finish()


def cmd_order(path, t_before, t_after):
    """Samples in time order, inside the recording window, off-CPU samples
    interleaved with cpu-clock ones."""
    lo, hi = int(t_before), int(t_after)
    samples, err = script_samples(path)
    times = [s.time for s in samples]
    back = [(i, a, b) for i, (a, b) in enumerate(zip(times, times[1:])) if b < a]
    outside = [s for s in samples if not lo <= s.time <= hi]
    off = [i for i, s in enumerate(samples) if s.event == "offcpu-time"]
    cpu = [i for i, s in enumerate(samples) if s.event != "offcpu-time"]
    between = [i for i in off if cpu and cpu[0] < i < cpu[-1]]
    measure("%d samples (%d offcpu-time, %d cpu), %d between cpu samples, %d out of order, "
            "%d outside the window of %.3f s" % (len(samples), len(off), len(cpu), len(between),
                                                 len(back), len(outside), (hi - lo) / 1e9))
    ooo = [l for l in err.splitlines() if "out of order" in l.lower()]
    for l in ooo:
        measure("perf: " + l.strip())
    check(off and cpu, "need both offcpu-time and cpu samples")
    check(between, "no offcpu-time sample between two cpu samples")
    check(not back, "timestamps decrease, first at sample %s: %s -> %s"
          % (back[0][0] if back else "", samples[back[0][0]] if back else "",
             samples[back[0][0] + 1] if back else ""))
    check(not outside, "%d samples outside the recording window [%d, %d], e.g. %s"
          % (len(outside), lo, hi, outside[0] if outside else ""))
    check(not ooo, "perf reports out-of-order events")
    finish()


def cmd_comm(path, comm):
    """Samples of one comm, per event (system-wide recordings)."""
    samples, _ = script_samples(path)
    counts = {}
    for s in samples:
        if s.comm == comm:
            counts.setdefault(s.event, [0, 0])
            counts[s.event][0] += 1
            counts[s.event][1] += s.period
    allc = {}
    for s in samples:
        allc[s.event] = allc.get(s.event, 0) + 1
    measure("all samples: %s" % ", ".join("%s %d" % kv for kv in sorted(allc.items())))
    measure("comm %s: %s" % (comm, ", ".join("%s %d samples, %.1f ms" % (e, c, p / 1e6)
                                             for e, (c, p) in sorted(counts.items())) or "none"))
    check("offcpu-time" in counts, "no offcpu-time sample for comm %s" % comm)
    check(any(e != "offcpu-time" for e in counts), "no cpu sample for comm %s" % comm)
    finish()


def cmd_readable(path):
    """perf report and perf script read the file; prints what it holds."""
    per = report_periods(path)
    samples, _ = script_samples(path)
    measure("%d samples; %s" % (len(samples), ", ".join(
        "%s %.1f ms" % (e, sum(c.values()) / 1e6) for e, c in sorted(per.items()))))
    check(samples, "perf script prints no sample")
    finish()


def is_kernel(ip):
    return ip >= 0xffff800000000000


def cmd_select(path, *conds):
    """Asserts conditions on every sample of a file, for the filter tests:
      tids=A,B / pids=A,B / comms=A,B   every sample is of these
      some-tids=FILE          some sample of a tid listed in FILE
      off-not-tids=FILE / off-some-tids=FILE   the same, offcpu-time samples only
      no-event=E / has-event=E
      no-func=F,G / has-func=F,G   innermost workload function (offcpu-time)
      no-kernel-frames / no-user-frames   (offcpu-time callchains)
      callchains              some offcpu-time sample has user and kernel frames
      not-tids=FILE           no sample (of any event) of a tid listed in FILE
      off-period-min=NS / off-period-max=NS   every offcpu-time period in range
    """
    samples, _ = script_samples(path)
    off = [s for s in samples if s.event == "offcpu-time"]
    evs = {}
    for s in samples:
        evs[s.event] = evs.get(s.event, 0) + 1
    funcs = {}
    for s in off:
        f = innermost_wl(s.frames)
        funcs[f] = funcs.get(f, 0) + s.period
    measure("%d samples: %s; off-CPU by function: %s" % (
        len(samples), ", ".join("%s %d" % kv for kv in sorted(evs.items())),
        ", ".join("%s %.1f ms" % (k, v / 1e6) for k, v in sorted(funcs.items(), key=lambda kv: -kv[1]) if k)
        or "none"))
    check(samples, "no samples")

    def ids(v):
        return {int(x) for x in v.split(",") if x}

    def file_ids(v):
        return {int(x) for x in open(v).read().split()}
    for c in conds:
        k, _, v = c.partition("=")
        if k == "tids":
            other = sorted({s.tid for s in samples} - ids(v))
            check(not other, "samples of tids %s, only %s wanted" % (other[:10], v))
        elif k == "pids":
            other = sorted({s.pid for s in samples} - ids(v))
            check(not other, "samples of pids %s, only %s wanted" % (other[:10], v))
        elif k == "callchains":
            both = [s for s in off if any(is_kernel(ip) for ip in s.ips) and
                    any(not is_kernel(ip) for ip in s.ips)]
            check(both, "no offcpu-time sample with both user and kernel frames")
        elif k == "not-tids":
            bad = [s for s in samples if s.tid in file_ids(v)]
            check(not bad, "%d samples of excluded tids, e.g. %s" % (len(bad), bad[0] if bad else ""))
        elif k in ("off-period-min", "off-period-max"):
            periods = [s.period for s in off]
            measure("offcpu-time periods: %d samples, %.3f to %.3f ms" % (
                len(periods), min(periods, default=0) / 1e6, max(periods, default=0) / 1e6))
            bad = [s for s in off if (s.period < int(v) if k == "off-period-min" else s.period > int(v))]
            check(off, "no offcpu-time sample")
            check(not bad, "%d offcpu-time samples outside %s=%s, e.g. %s" % (
                len(bad), k, v, bad[0] if bad else ""))
        elif k == "off-not-tids":
            bad = [s for s in off if s.tid in file_ids(v)]
            check(not bad, "%d offcpu-time samples of excluded tids, e.g. %s" % (len(bad), bad[0] if bad else ""))
        elif k in ("some-tids", "off-some-tids"):
            good = [s for s in (off if k == "off-some-tids" else samples) if s.tid in file_ids(v)]
            measure("%d samples of the tids in %s (%s)" % (len(good), v, ",".join(
                sorted({s.comm for s in good})[:8])))
            check(good, "no sample of the tids in %s" % v)
        elif k == "comms":
            other = sorted({s.comm for s in samples} - set(v.split(",")))
            check(not other, "samples of comms %s, only %s wanted" % (other[:10], v))
        elif k == "no-event":
            check(v not in evs, "%d samples of event %s" % (evs.get(v, 0), v))
        elif k == "has-event":
            check(v in evs, "no sample of event %s" % v)
        elif k == "no-func":
            for f in v.split(","):
                check(f not in funcs, "offcpu-time in %s: %d ns" % (f, funcs.get(f, 0)))
        elif k == "has-func":
            for f in v.split(","):
                check(funcs.get(f, 0) > 0, "no offcpu-time in %s" % f)
        elif k == "no-kernel-frames":
            bad = [s for s in off if any(is_kernel(ip) for ip in s.ips)]
            check(not bad, "%d offcpu-time samples with kernel frames, e.g. %s" % (len(bad), bad[0] if bad else ""))
            check(any(s.ips for s in off), "no offcpu-time sample has frames")
        elif k == "no-user-frames":
            bad = [s for s in off if any(not is_kernel(ip) for ip in s.ips)]
            check(not bad, "%d offcpu-time samples with user frames, e.g. %s" % (len(bad), bad[0] if bad else ""))
            check(any(s.ips for s in off), "no offcpu-time sample has frames")
        else:
            sys.exit("select: unknown condition " + c)
    finish()


def cmd_perfs(path, other):
    """The off-CPU samples as PERF and another perf (path `other`, 6.14 or
    newer: it reads offcpu-time's payload as perf's embedded sample) show
    them: both read the file without an error, and every sample of
    offcpu-time, offcpu-wakeup and sched-delay has the same pid, tid, time,
    period and frames (the newer perf adds inlined frames: left out). comm is
    shown, not compared: for a sample at its thread's exit the two perfs name
    the thread differently (perf 7.3 ":TID"), whatever the file says. A PLT
    stub is a PLT stub in both, but not always the same name: perf 6.1 names
    the stubs of a library with IRELATIVE relocations (libc's) by relocation
    order, wrongly ("@plt" for __strchrnul_ifunc@plt; test_symbolizer checks
    offcpu's names of libc's stubs against objdump)."""
    global PERF
    got = {}
    for perf in (PERF, other):
        PERF = perf
        samples, err = script_samples(path)
        # (perf warns of LOST records too: losses the file reports, not errors)
        bad = [line for line in err.splitlines()
               if re.search(r"error|can't parse|failed|invalid", line, re.I)]
        check(not bad, "%s script: %s" % (perf, " / ".join(bad[:3])))
        got[perf] = [(s.pid, s.tid, s.time, s.period, s.event, frames_of(s), s.comm)
                     for s in samples if s.event in OFF_EVENTS]
    PERF = list(got)[0]
    a, b = got.values()
    for ev in OFF_EVENTS:
        na, nb = [x for x in a if x[4] == ev], [x for x in b if x[4] == ev]
        measure("%-13s %4d samples, %.3f s with perf %s; %4d samples, %.3f s with %s"
                % (ev, len(na), sum(x[3] for x in na) / 1e9, version("perf"), len(nb),
                   sum(x[3] for x in nb) / 1e9, version(other)))
    def same(x, y):
        return x[:5] == y[:5] and len(x[5]) == len(y[5]) and all(
            f == g or (f.endswith("@plt") and g.endswith("@plt")) for f, g in zip(x[5], y[5]))
    diff = [(x, y) for x, y in zip(a, b) if not same(x, y)]
    plt = sum(f != g for x, y in zip(a, b) for f, g in zip(x[5], y[5]))
    check(a and len(a) == len(b) and not diff, "%d of %d off-CPU samples differ between the perfs%s" % (
        len(diff) + abs(len(a) - len(b)), len(a),
        "".join("\n  %s\n  %s" % xy for xy in diff[:2])))
    comms = [(x[-1], y[-1]) for x, y in zip(a, b) if x[-1] != y[-1]]
    measure("%d samples identical in pid, tid, time, period and frames (%d PLT stubs named otherwise); %d named otherwise (%s)"
            % (len(a) - len(diff), plt, len(comms), ", ".join("%s/%s" % c for c in comms[:3]) or "-"))
    check(any(x[4] == "offcpu-time" for x in a), "no offcpu-time sample")
    finish()


def frames_of(s):
    """The function of each frame. An inlined frame shares its ip with the
    frame that holds it, and only the newer perf shows it: left out. (The
    ips themselves are not compared: perf 6.1 prints user ones relative to
    their DSO, newer perf absolute.)"""
    out, ips = [], []
    for ip, f in zip(s.ips, s.frames):
        name = fname(f) + ("@plt" if "@plt" in f else "")
        if ips and ips[-1] == ip:
            out[-1] = name
        else:
            out.append(name)
            ips.append(ip)
    return tuple(out)


def version(perf):
    p = subprocess.run([perf, "--version"], stdout=subprocess.PIPE, universal_newlines=True)
    return p.stdout.split()[-1] if p.stdout.split() else "?"


def cmd_tree(path, listfile, mode):
    """The process tree of `spawner tree` (LIST: "PID ROLE" lines), recorded
    with -p of its parent (mode "inherit") or -t of it (mode "thread").
    inherit: each child's and the grandchild's 300 ms sleep is there, in its
    own process and function (wl_tree_child, wl_tree_grandchild), 300 to
    320 ms (the timer's slack and its wakeup on a busy vCPU); nothing of
    another process. thread: only the parent's thread, and no child's
    sample. The interval is timed on the run queues' clock, as schedstat
    times it: its two ends may be read on two vCPUs, whose clocks some
    hosts keep up to about 0.1 ms apart (a 300 ms sleep was timed
    299.965 ms in CI), so 0.5 ms less is allowed."""
    roles = {}
    for line in open(listfile):
        pid, role = line.split()
        roles[int(pid)] = role
    samples, _ = script_samples(path)
    off = [s for s in samples if s.event == "offcpu-time"]
    per = {}
    for s in off:
        k = (s.pid, innermost_wl(s.frames) or "-")
        per[k] = per.get(k, 0) + s.period
    measure("%s: %d samples (%d offcpu-time); off-CPU by process and function: %s" % (
        mode, len(samples), len(off), ", ".join(
            "%s %d %s %.1f ms" % (roles.get(p, "?"), p, f, v / 1e6) for (p, f), v in sorted(per.items()))))
    parent = [p for p, r in roles.items() if r == "parent"][0]
    others = sorted({s.pid for s in samples} - set(roles))
    check(not others, "samples of processes outside the tree: %s" % others[:10])
    if mode == "thread":
        bad = [s for s in samples if s.tid != parent]
        check(not bad, "%d samples of other threads than %d, e.g. %s" % (len(bad), parent, bad[0] if bad else ""))
        check(off, "no offcpu-time sample of the parent")
        finish()
    for pid, role in sorted(roles.items()):
        if role == "parent":
            continue
        func = "wl_tree_" + role
        got = per.get((pid, func), 0)
        check(299500000 <= got <= 320000000, "%s %d: %.3f ms off-CPU in %s, expected 300 ms" % (
            role, pid, got / 1e6, func))
    finish()


def cmd_eventsum(path, event):
    """Prints the sum of the periods of one event as `perf script` shows it."""
    samples, _ = script_samples(path)
    print(sum(s.period for s in samples if s.event == event))


def cmd_once(path, json_path):
    """Every off-CPU interval of the waitmix workload counted exactly once:
    per thread, the intervals in its blocking calls (samples with the call's
    inner function in their stack; a sum counts several, its RAW count) are
    the voluntary context switches the thread counted around those calls
    (getrusage), neither fewer (lost) nor more (counted twice); and no two
    samples of a thread overlap in time: a direct sample covers at most
    [time - period, time] (its wait ended at the wakeup, at most that long
    before its switch-in at `time`), which must not reach back before the
    switch-in of the thread's previous one (1 us allowed for the two clocks
    of the samples' times)."""
    wl = json.load(open(json_path))
    samples, _ = script_samples(path, raw=True)
    off = [s for s in samples if s.event == "offcpu-time"]
    # glibc's clone() gives no way up from its syscall to its caller: the
    # vfork wait is told by its kernel frame (wait_for_vfork_done is inlined
    # there), under the named function (its waitpid after is in do_wait)
    kernel_call = {"vfork-wait": "kernel_clone"}
    for t in wl["threads"]:
        if t["role"] == "spin":
            continue
        kc = kernel_call.get(t["role"])
        mine = [s for s in off if s.tid == t["tid"] and
                (t["inner"] in s.funcs() or (kc and kc in s.funcs() and t["func"] in s.funcs()))]
        counts = [offcpu_raw(s.raw) for s in mine]
        got = sum(c[2] if c else 1 for c in counts)
        summed = sum(1 for c in counts if c and c[1] & 2)
        measure("%-11s %-20s tid %-6d %4d intervals recorded in %3d samples (%d sums); "
                "%4d voluntary switches counted by the thread"
                % (t["role"], t["inner"], t["tid"], got, len(mine), summed, t["func_nvcsw"]))
        check(got == t["func_nvcsw"], "%s: %d intervals recorded in %s, the thread counted %d"
              % (t["role"], got, t["inner"], t["func_nvcsw"]))
    overlaps = 0
    by_tid = {}
    for s in off:
        c = offcpu_raw(s.raw)
        if c and not c[1] & 2:  # direct samples only: a sum has no one interval
            by_tid.setdefault(s.tid, []).append(s)
    for tid, ss in sorted(by_tid.items()):
        ss.sort(key=lambda s: s.time)
        for a, b in zip(ss, ss[1:]):
            if b.time - b.period < a.time - 1000:
                overlaps += 1
                if overlaps <= 3:
                    measure("overlap on tid %d: %s | %s" % (tid, a, b))
    measure("%d direct samples on %d threads, %d overlapping the one before"
            % (sum(len(v) for v in by_tid.values()), len(by_tid), overlaps))
    check(not overlaps, "%d samples overlap a sample of the same thread: counted twice" % overlaps)
    finish()


def cmd_stopdup(path):
    """No wait counted twice at the stop: a recording with every interval a
    direct sample (--off-cpu-thresh 0) of threads whose waits each last
    0.5-3 ms (napper), stopped while waits end all the time. The waits
    still open at the stop are written by the stop iterator, flagged in
    progress at the stop (OFFCPU_RAW_IN_PROGRESS_STOP) and timed where they
    end (the stop, or a wakeup before it). A wait the programs also ended
    would be there twice: two samples of one thread whose intervals (from
    time - period to time) overlap. Equal periods alone prove nothing:
    measured waits of one thread repeat to the nanosecond now and then
    (the timer's and the clocks' granularity), as napper's 8 pairs in one
    recording did."""
    samples, _ = script_samples(path, raw=True)
    off = [s for s in samples if s.event == "offcpu-time"]
    check(off, "no offcpu-time samples")
    if not off:
        finish()
    at_stop = [s for s in off if stop_written(s)]
    before = {}
    for s in off:
        if not stop_written(s):
            before.setdefault(s.tid, []).append(s)
    dups = []
    for s in at_stop:
        for b in before.get(s.tid, []):
            # the samples' time is the interval's end; 1 us for the two clocks
            if min(s.time, b.time) - max(s.time - s.period, b.time - b.period) > 1000:
                dups.append((s, b))
                break
    per_tid = {}
    for s in at_stop:
        per_tid[s.tid] = per_tid.get(s.tid, 0) + 1
    measure("%d offcpu-time samples on %d threads; %d written at the stop; %d of them overlap a "
            "wait ended before it" % (len(off), len({s.tid for s in off}), len(at_stop), len(dups)))
    for a, b in dups[:3]:
        measure("twice: %s | %s" % (a, b))
    check(not dups, "%d waits counted twice, at the stop and before it" % len(dups))
    many = {t: n for t, n in per_tid.items() if n > 1}
    check(not many, "threads with more than one wait open at the stop: %s" % many)
    finish()


def stop_written(s):
    """An offcpu-time sample the stop wrote: a wait still open at the stop
    (its payload's OFFCPU_RAW_IN_PROGRESS_STOP, src/perfdata/offcpu_payload.h)."""
    r = offcpu_raw(s.raw)
    return r is not None and bool(r[1] & 0x10)


def cmd_stopwaits(offcpu, path, min_threads, max_ms):
    """The waits the stop wrote, in a recording of napper (each wait 0.5-3
    ms) whose stop was late (OFFCPU_TEST_STOP_DELAY). The stop writes every
    wait of a thread not running at the stop, as a direct sample timed at
    the stop (the file's record.stop_ns; stop_emit in offcpu.bpf.c):
     - a thread asleep at the stop: its wait ended at the stop, flagged in
       progress at the stop (OFFCPU_RAW_IN_PROGRESS_STOP);
     - a thread woken before the stop and on a run queue at it (waiting for
       a CPU, not off-CPU): its wait ended at its wakeup, not in progress
       (unflagged), written by the stop all the same: its time is the stop.
    So every thread but those on a CPU at the stop (or preempted there,
    which napper's threads, on a CPU for microseconds at a time, hardly
    are) has one of the two: at least min_threads (THREADS - CPUs) have
    one, counted by kind. Each lasts at most max_ms: ended at the stop or
    at its wakeup before it, never at the late iterator's time; no flagged
    one is timed other than at the stop. The main thread, which joins the
    others from the start, is left out."""
    stop = None
    for line in run([offcpu, "report", "-i", path, "--stdio", "--header"]).splitlines():
        m = re.match(r"^# offcpu record\.stop_ns: (\d+)", line)
        if m:
            stop = int(m.group(1))
    check(stop, "no record.stop_ns in the file's header")
    samples, _ = script_samples(path, raw=True)
    # napper's threads, not its main thread (joining them since the start)
    off = [s for s in samples if s.event == "offcpu-time" and s.tid != s.pid]
    asleep = [s for s in off if stop_written(s)]
    runnable = [s for s in off if stop and s.time == stop and not stop_written(s)]
    t_asleep = {s.tid for s in asleep}
    t_runnable = {s.tid for s in runnable} - t_asleep
    tids = t_asleep | t_runnable
    longest = max(s.period for s in asleep + runnable) if asleep or runnable else 0
    misplaced = [s for s in asleep if s.time != stop]
    measure("stop-written waits on %d threads (at least %s expected): %d asleep at the stop (%d waits "
            "in progress there), %d woken before it and on a run queue at it (their waits ended "
            "at the wakeup); the longest %.3f ms (at most %s)"
            % (len(tids), min_threads, len(t_asleep), len(asleep), len(t_runnable), longest / 1e6,
               max_ms))
    check(len(tids) >= int(min_threads), "stop-written waits on %d threads (%d asleep at the stop, "
          "%d on a run queue), expected at least %s" % (len(tids), len(t_asleep), len(t_runnable),
                                                        min_threads))
    check(not misplaced, "%d waits in progress at the stop are not timed at it (record.stop_ns %s): %s"
          % (len(misplaced), stop, [(s.tid, s.time) for s in misplaced[:2]]))
    check(longest <= float(max_ms) * 1e6, "a wait the stop wrote lasted %.3f ms, more than %s ms: "
          "timed at the late iterator, not at the stop" % (longest / 1e6, max_ms))
    finish()


# The scheduler's entry points (src/profile/trim.c): the frame below them is
# where a thread blocked.
SCHED = re.compile(r"^(__schedule|__schedule_loop|schedule|schedule_idle|schedule_user|"
                   r"schedule_preempt_disabled|schedule_timeout[a-z_]*|schedule_hrtimeout[a-z_]*|"
                   r"io_schedule[a-z_]*|rt_mutex_schedule|schedule_rtlock|preempt_schedule[a-z_]*|"
                   r"_?_cond_resched[a-z_]*)(\.[a-z]+\.[0-9]+)?$")
# Frames every system call passes through: no answer to "where did it wait".
PASS_THROUGH = {"entry_SYSCALL_64_after_hwframe", "entry_SYSCALL_64", "do_syscall_64", "x64_sys_call"}


def cmd_firstscreen(offcpu, path):
    """The first 30 lines of the default `offcpu report` of a whole-machine
    recording name a blocking function: their first entry, and every entry
    among them, is a function perf script shows threads blocked in (the
    frame below the scheduler's in an offcpu-time callchain), and none is a
    frame every system call passes through."""
    samples, _ = script_samples(path)
    blocked = {}
    for s in samples:
        if s.event != "offcpu-time":
            continue
        names = [fname(f) for f in s.frames]
        i = 0
        while i + 1 < len(names) and SCHED.match(names[i]):
            i += 1
        if names:
            blocked[names[i]] = blocked.get(names[i], 0) + s.period
    head = run([offcpu, "report", "-i", path]).splitlines()[:30]
    entries = [l.split()[-1] for l in head if re.match(r"^\s+[\d.]+%\s", l)]
    measure("first 30 lines of the default report: entries %s; perf script's top blocking functions: %s"
            % (", ".join(entries) or "none", ", ".join(
                "%s %.1f ms" % (k, v / 1e6) for k, v in sorted(blocked.items(), key=lambda kv: -kv[1])[:4])))
    check(entries and entries[0] in blocked, "the first entry (%s) is no function perf script shows a "
          "thread blocked in" % (entries[0] if entries else None))
    check(all(e in blocked for e in entries), "entries in the first 30 lines where no thread blocked: %s"
          % [e for e in entries if e not in blocked])
    check(not PASS_THROUGH & set(entries), "the first 30 lines lead with frames every system call has: %s"
          % sorted(PASS_THROUGH & set(entries)))
    finish()


if __name__ == "__main__":
    cmds = {"sleep": cmd_sleep, "waitmix": cmd_waitmix, "order": cmd_order, "comm": cmd_comm,
            "readable": cmd_readable, "select": cmd_select, "perfs": cmd_perfs,
            "eventsum": cmd_eventsum, "tree": cmd_tree, "once": cmd_once, "stopdup": cmd_stopdup,
            "firstscreen": cmd_firstscreen, "stopwaits": cmd_stopwaits}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit("usage: perfcheck.py {%s} ARGS" % "|".join(cmds))
    cmds[sys.argv[1]](*sys.argv[2:])

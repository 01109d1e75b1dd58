#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks of waits in progress on recordings of tests/workloads/stuck.c.

    inprogress_check.py OFFCPU FILE TIDFILE SECS ROLE[,ROLE...]

For each ROLE (pipe-block, long-sleep, wake-once, mutex-wait; their tids in TIDFILE,
"ROLE TID" lines), in Debian's `perf script` (the flags read from the raw
payload) and in `offcpu report --threads`:
  - the thread's offcpu-time totals SECS +- 5 %, all of it in its own
    function (wl_pipe_block, wl_long_sleep, wl_wake_once, wl_mutex_wait)
    and on its tid;
    no sample of that function on another tid;
  - pipe-block and long-sleep: one sample, in progress at the start and at
    the stop; wake-once (woken once in the middle): one sample in progress
    at the start only, one at the stop only, together no more than the
    recording's window (nothing counted twice);
  - --threads: the row's wall time and off-CPU S both SECS +- 5 %, and the
    row (run-queue delay included, when recorded) adds up to its wall time
    within 1 %; without --idle, pipe-block and long-sleep (asleep the whole
    window in one wait) are no rows but counted in the line that sets such
    threads aside, and wake-once (woken in the middle) is a row;
  - offcpu script prints the flags ("[in progress at start and stop]");
  - the report's "Sample duration" is the window (within 1 %).
Prints '# ' figure lines; 'FAIL: ' lines and a non-zero exit on failure.
"""
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import check, failures, fname, measure, offcpu_raw, script_samples, threads_rows  # noqa: E402

FUNCS = {"pipe-block": "wl_pipe_block", "long-sleep": "wl_long_sleep", "wake-once": "wl_wake_once",
         "mutex-wait": "wl_mutex_wait"}
START, STOP = 0x8, 0x10  # OFFCPU_RAW_IN_PROGRESS_START / _STOP


def offcpu(binary, args):
    p = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, errors="replace")
    if p.returncode != 0:
        print("FAIL: offcpu %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr[-500:]))
        sys.exit(1)
    return p.stdout


def window(binary, path):
    """The recording's window (ns) from the offcpu section in the report's header."""
    vals = {}
    for line in offcpu(binary, ["report", "-i", path, "--stdio", "--header"]).splitlines():
        m = re.match(r"^# offcpu (record\.st\w+_ns): (\d+)", line)
        if m:
            vals[m.group(1)] = int(m.group(2))
    check("record.start_ns" in vals and "record.stop_ns" in vals, "no recording window in the file")
    return vals.get("record.stop_ns", 0) - vals.get("record.start_ns", 0)


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    binary, path, tidfile, secs, roles = sys.argv[1:6]
    want = float(secs) * 1e9
    tids = {}
    for line in open(tidfile):
        role, tid = line.split()
        tids[role] = int(tid)
    roles = roles.split(",")
    win = window(binary, path)
    measure("recording window %.3f s" % (win / 1e9))
    # the report's header says the window, not the span of the samples (0 ns
    # when every sample is a wait in progress, written at the stop)
    m = re.search(r"^# Sample duration: ([\d.]+) (s|ms|us|ns)$", offcpu(binary, ["report", "-i", path]), re.M)
    dur = float(m.group(1)) * {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}[m.group(2)] if m else 0
    check(abs(dur - win) <= 0.01 * win, "report: 'Sample duration: %s', the window is %.3f s"
          % (m.group(0)[19:] if m else None, win / 1e9))
    samples, _ = script_samples(path, raw=True)
    off = [s for s in samples if s.event == "offcpu-time"]
    for role in roles:
        tid, func = tids[role], FUNCS[role]
        mine = [s for s in off if s.tid == tid]
        total = sum(s.period for s in mine)
        flags = [(offcpu_raw(s.raw) or (0, 0, 0))[1] for s in mine]
        marks = ["%s%s" % ("start" if f & START else "", "+stop" if f & STOP else "") for f in flags]
        measure("perf script: %-10s tid %d: %d offcpu-time samples (%s), %.3f s (%+.2f %% of %s s)"
                % (role, tid, len(mine), ", ".join(marks), total / 1e9, 100.0 * (total - want) / want, secs))
        check(abs(total - want) <= 0.05 * want, "%s: %.3f s off-CPU, not %s s +- 5 %%" % (role, total / 1e9, secs))
        check(total <= win + 1e6, "%s: %.6f s off-CPU in a window of %.6f s: counted twice"
              % (role, total / 1e9, win / 1e9))
        check(mine and all(func in {fname(f) for f in s.frames} for s in mine),
              "%s: offcpu-time samples without %s: %s" % (role, func, [str(s) for s in mine][:2]))
        elsewhere = [s for s in off if s.tid != tid and func in {fname(f) for f in s.frames}]
        check(not elsewhere, "%s: %s on other tids: %s" % (role, func, [str(s) for s in elsewhere][:2]))
        if role == "wake-once":
            check(sorted(f & (START | STOP) for f in flags) == [START, STOP],
                  "%s: expected one sample in progress at the start only and one at the stop only, "
                  "got flags %s" % (role, flags))
        else:
            check([f & (START | STOP) for f in flags] == [START | STOP],
                  "%s: expected one sample in progress at the start and the stop, got flags %s" % (role, flags))
    others = sorted({s.tid for s in off} - {tids[r] for r in roles})
    measure("offcpu-time samples of other tids: %s" % (others or "none"))

    rows = threads_rows(binary, path)
    for role in roles:
        r = rows.get(tids[role])
        check(r is not None, "report --threads: no row for %s (tid %d)" % (role, tids[role]))
        if r is None:
            continue
        parts = [r[k] or 0 for k in ("on", "s", "d", "rq")]
        measure("report --threads: %-10s wall %.3f s, on-CPU %s, off-CPU S %.3f s, D %.3f s, run-queue %s, rest %.6f s"
                % (role, r["wall"] / 1e9, "-" if r["on"] is None else "%.4f s" % (r["on"] / 1e9),
                   r["s"] / 1e9, r["d"] / 1e9, "-" if r["rq"] is None else "%.6f s" % (r["rq"] / 1e9),
                   r["rest"] / 1e9))
        check(abs(r["wall"] - want) <= 0.05 * want, "%s: --threads wall %.3f s, not %s s +- 5 %%"
              % (role, r["wall"] / 1e9, secs))
        check(abs(r["s"] - want) <= 0.05 * want, "%s: --threads off-CPU S %.3f s, not %s s +- 5 %%"
              % (role, r["s"] / 1e9, secs))
        check(abs(sum(parts) - r["wall"]) <= 0.01 * r["wall"], "%s: --threads row adds up to %.6f s, wall %.6f s"
              % (role, sum(parts) / 1e9, r["wall"] / 1e9))

    plain = threads_rows(binary, path, extra=())
    idle = [r for r in roles if r != "wake-once"]
    for role in roles:
        check((tids[role] in plain) == (role == "wake-once"),
              "report --threads without --idle: %s (tid %d) %s" % (
                  role, tids[role], "set aside" if role == "wake-once" else "listed"))
    text = offcpu(binary, ["report", "-i", path, "--threads"])
    m = re.search(r"^# (\d+) thread\(s\) asleep the whole window in one wait .*$", text, re.M)
    check(m is not None and int(m.group(1)) >= len(idle),
          "report --threads: no line setting aside %d or more threads asleep the whole window: %s"
          % (len(idle), m.group(0) if m else None))
    if m:
        measure("report --threads without --idle: %s" % m.group(0)[2:])

    text = offcpu(binary, ["script", "-i", path])
    check("[in progress at start and stop]" in text, "offcpu script does not show '[in progress at start and stop]'")
    if "wake-once" in roles:
        check("[in progress at start]" in text and "[in progress at stop]" in text,
              "offcpu script does not show '[in progress at start]' and '[in progress at stop]'")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks of the fault tests on recordings of tests/workloads/spawner.c.

    fault_check.py shortlived OFFCPU FILE LIST BINARY
        every child of LIST ("PID INDEX SLEPT" lines) that blocked in its
        wait has an offcpu-time sample with comm slINDEX and a frame sl_wait
        in BINARY, in `offcpu script` and in `perf script`; no sample of a
        child carries another child's name or resolves sl_wait elsewhere
    fault_check.py pidreuse OFFCPU FILE PID BIN_A BIN_B
        PID was process A (reuse-a, wl_reuse_a in BIN_A) then process B
        (reuse-b, wl_reuse_b in BIN_B): both have samples under PID, and no
        sample mixes one's name with the other's functions or binary
    fault_check.py exec OFFCPU FILE PID BINARY
        PID (spawner exec: ex-before, 10 waits of 3 ms in ex_before in
        BINARY, then an exec of another program) has offcpu-time samples
        named ex-before in ex_before in BINARY totalling 30-40 ms, and no
        sample with a user frame in BINARY under another name (but for the
        exec's own waits, in execve, when it loads the new image from disk)

Prints '# ' figure lines; 'FAIL: ' lines and a non-zero exit on failure.
"""
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import check, failures, measure  # noqa: E402  (one set of checks)


HEAD = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+(?P<event>[^\s:]+):\s*$")
OWN_HEAD = re.compile(r"^(?P<comm>.*?)\s+(?P<tid>\d+)\s+\[\d+\]\s+[\d.]+:\s+\d+\s+(?P<event>[^\s:]+):")
# either reader with the period: perf script -F comm,tid,time,period,... or offcpu script
PERIOD_HEAD = re.compile(r"^(?P<comm>.*?)\s+(?P<tid>\d+)\s+(?:\[\d+\]\s+)?(?:[\d.]+:\s+)?(?P<period>\d+)\s+"
                         r"(?P<event>[^\s:]+):")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(?P<sym>\S+?)(?:\+0x[0-9a-f]+)?\s+\((?P<dso>.*)\)\s*$")


def samples(lines, head):
    """[(comm, tid, event, period, [(sym, dso)...])] from perf-script-like
    text; period 0 when head has no period group."""
    out, cur = [], None
    for line in lines:
        m = head.match(line)
        if m:
            period = int(m.group("period")) if "period" in head.groupindex else 0
            cur = (m.group("comm"), int(m.group("tid")), m.group("event"), period, [])
            out.append(cur)
            continue
        m = FRAME.match(line)
        if m and cur is not None:
            cur[4].append((m.group("sym").split("@")[0], m.group("dso")))
    return out


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, errors="replace")
    if p.returncode != 0:
        check(False, "%s exited %d: %s" % (" ".join(args[:2]), p.returncode, p.stderr[-500:]))
    return p.stdout.splitlines()


def both(offcpu, path):
    return {
        "offcpu script": samples(run([offcpu, "script", "-i", path]), OWN_HEAD),
        "perf script": samples(run(["perf", "script", "-i", path, "-F",
                                    "comm,pid,tid,event,ip,sym,dso"]), HEAD),
    }


def cmd_shortlived(offcpu, path, listfile, binary):
    kids, no_wait = {}, 0
    for line in open(listfile):
        pid, idx, slept = (int(x) for x in line.split())
        if slept:
            kids[pid] = idx
        else:
            no_wait += 1  # its timer expired before it could block: no interval to record
    measure("%d children listed; %d of them blocked in their 2 ms wait (the others were owed "
            "no off-CPU sample: the wait was over before they could block)" % (len(kids) + no_wait, len(kids)))
    for tool, ss in both(offcpu, path).items():
        good, seen_bad = set(), []
        for comm, tid, event, _, frames in ss:
            if tid not in kids:
                continue
            want = "sl%05d" % kids[tid]
            syms = [f for f, _ in frames]
            # a name of another child, or sl_wait resolved outside the binary
            if (comm.startswith("sl") and comm != want) or ("sl_wait" in syms and ("sl_wait", binary) not in frames):
                seen_bad.append("%s %d %s: %s" % (comm, tid, event, frames[-4:]))
            elif event == "offcpu-time" and comm == want and ("sl_wait", binary) in frames:
                good.add(tid)
        missing = sorted(set(kids) - good)
        measure("%s: %d of %d children have an offcpu-time sample named sl<index> in sl_wait (%s); "
                "%d samples misnamed or misresolved" % (tool, len(good), len(kids), binary.split("/")[-1],
                                                        len(seen_bad)))
        check(not missing, "%s: %d children without a resolved sample, e.g. %s" %
              (tool, len(missing), ", ".join("%d (sl%05d)" % (p, kids[p]) for p in missing[:5])))
        check(not seen_bad, "%s: samples with a wrong name or stack: %s" % (tool, seen_bad[:3]))


def cmd_pidreuse(offcpu, path, pid, bin_a, bin_b):
    pid = int(pid)
    me = {"a": ("reuse-a", "wl_reuse_a", bin_a), "b": ("reuse-b", "wl_reuse_b", bin_b)}
    for tool, ss in both(offcpu, path).items():
        count = {"a": 0, "b": 0}
        for comm, tid, event, _, frames in ss:
            syms = {f for f, _ in frames}
            dsos = {d for _, d in frames}
            for k, (name, fn, binary) in me.items():
                other = me["b" if k == "a" else "a"]
                if fn in syms:
                    check(comm == name, "%s: %s %d %s in %s carries the name %s" % (tool, comm, tid, event, fn, comm))
                    check(tid == pid or comm == name, "%s: %s in tid %d" % (tool, fn, tid))
                if comm == name:
                    check(other[1] not in syms and other[2] not in dsos,
                          "%s: %s %d %s has a frame of the other process: %s" % (tool, comm, tid, event, frames))
                    if tid == pid and fn in syms and (fn, binary) in frames:
                        count[k] += 1
        measure("%s: pid %d: %d samples of A (reuse-a in wl_reuse_a), %d of B (reuse-b in wl_reuse_b)"
                % (tool, pid, count["a"], count["b"]))
        check(count["a"] > 0 and count["b"] > 0, "%s: pid %d lacks samples of A or of B" % (tool, pid))


def cmd_exec(offcpu, path, pid, binary, wall_ns=None):
    pid = int(pid)
    # its waits lie inside ex_before's wall time, which a busy host stretches
    # past 10 times 3 ms (timer wakeups late): the spawner measured it
    hi = max(40e6, int(wall_ns) + 0.1e6) if wall_ns else 40e6
    tools = {
        "offcpu script": samples(run([offcpu, "script", "-i", path]), PERIOD_HEAD),
        "perf script": samples(run(["perf", "script", "-i", path, "-F",
                                    "comm,tid,time,period,event,ip,sym,dso"]), PERIOD_HEAD),
    }
    startup = binary.split("/")[-1][:15]  # the name until prctl(PR_SET_NAME)
    for tool, ss in tools.items():
        before, inexec, bad = 0, 0, []
        for comm, tid, event, period, frames in ss:
            if tid != pid or event != "offcpu-time":
                continue
            if ("ex_before", binary) in frames and comm == "ex-before":
                before += period
            elif any("execve" in f for f, _ in frames):
                inexec += period  # the exec's own waits (loading the new image), named either way
            elif comm == startup and not any(f == "ex_before" for f, _ in frames):
                pass  # a wait before the rename (a page fault in _start): its name is the program's own
            elif any(d == binary for _, d in frames) or comm == "ex-before":
                bad.append("%s %d %s: %s" % (comm, tid, event, frames[-4:]))
        measure("%s: pid %d: %.2f ms off-CPU as ex-before in ex_before (10 waits of 3 ms before "
                "its exec), %.2f ms inside the exec; %d samples of it misnamed or misresolved"
                % (tool, pid, before / 1e6, inexec / 1e6, len(bad)))
        check(30e6 <= before <= hi, "%s: %.2f ms in ex_before, not 30-%.2f ms (its wall time, 40 at least)"
              % (tool, before / 1e6, hi / 1e6))
        check(not bad, "%s: samples with a wrong name or stack: %s" % (tool, bad[:3]))


def main():
    cmds = {"shortlived": cmd_shortlived, "pidreuse": cmd_pidreuse, "exec": cmd_exec}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks of `offcpu record --chains` recordings against what the
workloads measured themselves:

    chains_check.py known OFFCPU FILE.data CHAINMIX.json
    chains_check.py tiles OFFCPU FILE.data MIN_WAITS [COMM...]
    chains_check.py bounded OFFCPU FILE.data MAX_SECONDS MAX_MB

known: the waits of tests/workloads/chainmix.c (modes cond, tcp, unix,
relay), read with `offcpu report --chains --folded --by tid` (one line per
path: the sleeper's stack, then per hop `[woken by COMM PID/TID]` and that
thread's stack, ending in the on-CPU leaf or a tag such as [timer] or
[io]) and `offcpu report --wakeups --folded --by tid`:
  cond   cm-a's wait: on CPU in cm-c's cm_spin (cm-c's time on a CPU over
         its spin: spun()) and asleep in cm-c's cm_nap [timer] (its sleep's
         wall time), each through cm-b's pipe read, within 8 %;
  tcp    every recv of cm-client woken by cm-server in cm_tcp_send, not
         [irq] (--wakeups), and its waits on CPU in cm-server's cm_spin;
  unix   the client's wait, in another process than the worker's: on CPU
         in cm-worker's cm_spin within 8 %, and asleep in its cm_fsync
         ending [io] (through whatever kernel thread the disk's
         completion went);
  relay  cm-main's wait through cm-r1 (condition variable), cm-r2 (pipe),
         cm-r3 (unix socket), cm-r4 (TCP), cm-r5 (eventfd), cm-r6
         (waitpid) to cm-child's cm_spin within 8 %, and to cm-r6's fsync
         [io].
tiles: `offcpu script --chains --chain-min 0`: every wait's segments tile
it: each ends where the one before it (later in time) starts, the first
at the wait's end, the last at its start, their sum equal to the wait
within 1 us; at least MIN_WAITS intervals off CPU in them, some of each
COMM.
bounded: `offcpu report --chains --chain-min 0` ends within MAX_SECONDS
and MAX_MB of peak memory (getrusage of the child), every wait tiled.

Each figure is printed as a '# ' line; a failed check prints 'FAIL: ' and
the exit status is 1.
"""
import json
import os
import resource
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import check, finish, measure, run  # noqa: E402

TOL = 0.08


def marks(path):
    """The workload's steps by name: a list of marks each."""
    out = {}
    with open(path) as f:
        for m in json.load(f)["marks"]:
            out.setdefault(m["name"], []).append(m)
    return out


def seconds(ns):
    return "%d.%09d" % (ns // 1000000000, ns % 1000000000)


def folded(offcpu, data, *args):
    """[(frames, ns)] of `report --chains --folded --by tid` with args."""
    text = run([offcpu, "report", "-i", data, "--chains", "--folded", "--by", "tid"] + list(args))
    paths = []
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        if stack:
            paths.append((stack.split(";"), int(value)))
    return paths


def hops(frames):
    """A path split at its [woken by ...] frames: [(who, frames)], who None for the sleeper."""
    out, who, cur = [], None, []
    for f in frames[1:]:  # frames[0] is the sleeper's comm
        if f.startswith("[woken by "):
            out.append((who, cur))
            who, cur = f[len("[woken by "):-1], []
        else:
            cur.append(f)
    out.append((who, cur))
    return out


def tag(frames):
    last = frames[-1] if frames else ""
    return last if last.startswith("[") and not last.startswith("[woken by") else None


def who(m, comm):
    return "%s %d/%d" % (comm, m["pid"], m["tid"])


def spun(m):
    """A step's time on a CPU: its task-clock (chainmix's oncpu_ns), which
    keeps what the hypervisor stole while the thread was current, as a
    recording does; its CPU time, which leaves that out (up to half of a
    spin's time in a burst of host steal), where the task-clock was not
    allowed."""
    return m.get("oncpu_ns", m["cpu_ns"])


def within(name, got, ref, tol=TOL, slack=0):
    err = abs(got - ref) / ref if ref else 1
    measure("%s: %.2f ms, measured %.2f ms (%+.1f %%)" % (name, got / 1e6, ref / 1e6,
                                                        100.0 * (got - ref) / ref if ref else 0))
    return check(err <= tol or abs(got - ref) <= slack,
                 "%s: %.2f ms, %.2f ms measured: off by more than %d %%" %
                 (name, got / 1e6, ref / 1e6, tol * 100))


def wait_paths(offcpu, data, m, pad=2000000):
    """The paths of the one wait of thread m's step (its time window)."""
    return folded(offcpu, data, "--tid", str(m["tid"]), "--time",
                  "%s,%s" % (seconds(m["start_ns"] - pad), seconds(m["end_ns"] + pad)))


def on_cpu(paths, chain, fn, via=()):
    """ns of paths whose hops are exactly chain (wakers, in order) and that
    end on CPU (no tag) in a stack holding fn, each hop before the last
    asleep in a stack holding its function of via (when given)."""
    total = 0
    for frames, ns in paths:
        h = hops(frames)
        if [w for w, _ in h[1:]] != chain or tag(frames) or fn not in h[-1][1]:
            continue
        if all(v in stack for v, (_, stack) in zip(via, h[1:-1])):
            total += ns
    return total


def asleep(paths, prefix, fn, end):
    """ns of paths whose wakers start with prefix, whose last hop of prefix
    waited in a stack holding fn, and that end with the tag end."""
    total = 0
    for frames, ns in paths:
        h = hops(frames)
        if [w for w, _ in h[1:len(prefix) + 1]] != prefix or tag(frames) != end:
            continue
        if fn in h[len(prefix)][1]:
            total += ns
    return total


def unseen_tids(offcpu, data):
    """The threads with a sleep whose wakeup the kernel hid (script marks
    their switch records wake-unseen)."""
    out = set()
    for line in run([offcpu, "script", "-i", data]).splitlines():
        f = line.split()
        if " offcpu-switch: " in line and line.rstrip().endswith("wake-unseen") and len(f) > 1:
            out.add(int(f[1]))
    return out


def check_cond(offcpu, data, mk):
    a, b = mk["cond.a.wait"][0], mk["cond.b.read"][0]
    spin, nap = mk["cond.c.spin"][0], mk["cond.c.nap"][0]
    paths = wait_paths(offcpu, data, a)
    total = sum(ns for _, ns in paths)
    check(total > 0, "cond: no chain of cm-a's wait")
    measure("cond: cm-a's wait %.2f ms in %d paths" % (total / 1e6, len(paths)))
    chain = [who(b, "cm-b"), who(spin, "cm-c")]
    within("cond: on CPU in cm-c's cm_spin, through cm-b's pipe read",
           on_cpu(paths, chain, "cm_spin", ["anon_pipe_read_[k]"]), spun(spin))
    # [wakeup unseen]: the kernel hid the timer's wakeup (its interrupt came
    # while the VM agent's thread was current): the sleep is there, its
    # waker not known; said so, and counted with [timer] where the
    # recording marks such a sleep of cm-c's
    timer = asleep(paths, chain, "cm_nap", "[timer]")
    unseen = asleep(paths, chain, "cm_nap", "[wakeup unseen]")
    check(not unseen or nap["tid"] in unseen_tids(offcpu, data),
          "cond: cm_nap [wakeup unseen] without a wake-unseen record of cm-c")
    if unseen:
        measure("cond: cm-c's cm_nap [wakeup unseen] %.2f ms (its timer's wakeup not traced)" % (unseen / 1e6))
    within("cond: asleep in cm-c's cm_nap [timer], through cm-b",
           timer + unseen, nap["end_ns"] - nap["start_ns"])


def check_tcp(offcpu, data, mk):
    recvs, spins = mk["tcp.client.recv"], mk["tcp.server.spin"]
    client, server = recvs[0], spins[0]
    # --wakeups: the recv's wakers, one hop
    text = run([offcpu, "report", "-i", data, "--wakeups", "--folded", "--by", "tid",
                "--tid", str(client["tid"])])
    named = irq = total = 0
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        frames = stack.split(";")
        if "cm_tcp_recv" not in frames or "--" not in frames:
            continue
        ns = int(value)
        total += ns
        waker = frames[frames.index("--") + 1:]
        if waker[-1] == "[irq]":
            irq += ns
        elif waker[-1] == who(server, "cm-server") and "cm_tcp_send" in waker:
            named += ns
    measure("tcp: cm-client's recv %.2f ms off CPU; woken by cm-server in cm_tcp_send %.2f ms, "
            "by [irq] %.2f ms" % (total / 1e6, named / 1e6, irq / 1e6))
    check(total > 0, "tcp: no recv wait of cm-client with a waker")
    check(named >= 0.9 * total, "tcp: cm-client's recv not woken by cm-server's cm_tcp_send "
          "(%.1f %%)" % (100.0 * named / total if total else 0))
    check(irq <= 0.05 * total, "tcp: %.1f %% of cm-client's recv booked to [irq]" %
          (100.0 * irq / total if total else 0))
    # --chains: the server's spin, in every round (one window over them all)
    window = dict(client, start_ns=min(r["start_ns"] for r in recvs),
                  end_ns=max(r["end_ns"] for r in recvs))
    got = on_cpu(wait_paths(offcpu, data, window, 0), [who(server, "cm-server")], "cm_spin")
    within("tcp: cm-client's waits on CPU in cm-server's cm_spin", got,
           sum(spun(s) for s in spins))


def check_unix(offcpu, data, mk):
    client, spin, fs = mk["unix.client.recv"][0], mk["unix.worker.spin"][0], mk["unix.worker.fsync"][0]
    check(client["pid"] != spin["pid"], "unix: the client and the worker are one process")
    paths = wait_paths(offcpu, data, client)
    worker = who(spin, "cm-worker")
    within("unix: the client's wait on CPU in cm-worker's (another process) cm_spin",
           on_cpu(paths, [worker], "cm_spin"), spun(spin))
    io = asleep(paths, [worker], "cm_fsync", "[io]")
    # [wakeup unseen] under the same hop: a wait whose waker the kernel hid
    # (no sched_waking traced, e.g. while the VM agent's thread was
    # current: the block kworker's D wait then has no waker and its
    # switch-in as its wakeup) cannot be followed to the disk, and the walk
    # says so. It happened in 2 of 10 runs (6.0 and 6.5 ms of the fsync,
    # then [unknown], through the kworker, no drop). Such time still lies
    # under the worker's cm_fsync hop; what must not happen is the fsync
    # booked elsewhere (on a CPU, to a timer): so [io] must be there, and
    # [io] with [wakeup unseen] (or [unknown]) must hold half of the
    # fsync's sleep.
    hidden = asleep(paths, [worker], "cm_fsync", "[wakeup unseen]") + \
        asleep(paths, [worker], "cm_fsync", "[unknown]")
    wall, cpu = fs["end_ns"] - fs["start_ns"], spun(fs)
    whole = mk["unix.worker.fsync.all"][0]
    measure("unix: asleep in cm-worker's cm_fsync, ended [io] (through any thread): %.2f ms, "
            "[wakeup unseen] or [unknown] (a waker not traced) %.2f ms; its fsync %.2f ms (%.2f ms on CPU), "
            "write and fsync %.2f ms" % (io / 1e6, hidden / 1e6, wall / 1e6, cpu / 1e6,
                                         (whole["end_ns"] - whole["start_ns"]) / 1e6))
    check(io > 0, "unix: no part of cm-worker's fsync ends [io]")
    check(io + hidden >= 0.5 * (wall - cpu),
          "unix: less than half of cm-worker's fsync asleep ends [io], [wakeup unseen] or [unknown] "
          "under its cm_fsync")
    check(io <= whole["end_ns"] - whole["start_ns"],
          "unix: more [io] in cm_fsync than cm-worker spent there")


def check_relay(offcpu, data, mk):
    m = mk["relay.main.wait"][0]
    spin, fs = mk["relay.child.spin"][0], mk["relay.r6.fsync"][0]
    paths = wait_paths(offcpu, data, m)
    tids = {}
    for frames, _ in paths:
        for w, _ in hops(frames)[1:]:
            tids[w.split(" ")[0]] = w
    need = ["cm-r%d" % i for i in range(1, 7)] + ["cm-child"]
    missing = [n for n in need if n not in tids]
    check(not missing, "relay: no hop of %s in cm-main's chain" % ", ".join(missing))
    if missing:
        # where the chain went instead: the hops of each path and how it ends
        for frames, ns in paths:
            measure("relay path %.2f ms: %s -> %s" % (ns / 1e6, " <- ".join(
                w or frames[0] for w, _ in hops(frames)), tag(frames) or "on CPU"))
        # and what the recorder lost or saw happen out of order
        for line in run([offcpu, "report", "--header", "-i", data]).splitlines():
            if any(x in line for x in ("lost", "drop.chain", "chain.", "_lost:", "unseen")):
                measure("relay header: " + line.lstrip("# "))
        return
    chain = [tids[n] for n in need]
    # each hop asleep in its kind of wait (the kernel's frames tell): futex (a
    # condition variable), pipe, unix socket, TCP socket, eventfd, waitpid
    via = ["futex_wait_[k]", "anon_pipe_read_[k]", "unix_stream_read_generic_[k]",
           "tcp_recvmsg_[k]", "eventfd_read_[k]", "kernel_wait4_[k]"]
    within("relay: cm-main's wait, 8 hops away, on CPU in cm-child's cm_spin",
           on_cpu(paths, chain, "cm_spin", via), spun(spin))
    io = asleep(paths, chain[:6], "cm_fsync", "[io]")
    measure("relay: asleep in cm-r6's cm_fsync, ended [io]: %.2f ms (the fsync: %.2f ms)" %
            (io / 1e6, (fs["end_ns"] - fs["start_ns"]) / 1e6))
    check(io > 0, "relay: no part of cm-main's wait ends in cm-r6's fsync [io] (D state)")


def cmd_known(offcpu, data, json_path):
    mk = marks(json_path)
    check_cond(offcpu, data, mk)
    check_tcp(offcpu, data, mk)
    check_unix(offcpu, data, mk)
    check_relay(offcpu, data, mk)


def walks(text):
    """[(wait fields, [segment fields])] of `script --chains`."""
    out = []
    for line in text.splitlines():
        f = line.split("\t")
        if f[0] == "wait":
            out.append((f, []))
        elif f[0] == "seg" and out:
            out[-1][1].append(f)
    return out


def tiled(w):
    """Why wait w is not tiled by its segments, or None."""
    start, end, ns = int(w[0][3]), int(w[0][4]), int(w[0][5])
    if end - start != ns:
        return "length %d is not end - start" % ns
    at, total = end, 0
    for s in w[1]:
        a, b, n = int(s[1]), int(s[2]), int(s[3])
        if b != at:
            return "a segment ends at %d, not at %d where the next one starts" % (b, at)
        if a >= b or b - a != n:
            return "segment [%d, %d) of length %d" % (a, b, n)
        at, total = a, total + n
    if at != start:
        return "the last segment starts at %d, the wait at %d" % (at, start)
    if abs(total - ns) > 1000:
        return "segments sum to %d ns, the wait is %d" % (total, ns)
    return None


def cmd_tiles(offcpu, data, min_waits, *comms):
    text = run([offcpu, "script", "-i", data, "--chains", "--chain-min", "0"])
    ws = walks(text)
    bad = [(w[0], why) for w in ws for why in [tiled(w)] if why]
    segs = sum(len(w[1]) for w in ws)
    total = sum(int(w[0][5]) for w in ws)
    # a thread asleep again on the same stack within 50 us on CPU: one wait of several
    intervals = sum(int(w[0][6]) for w in ws)
    measure("tiles: %d waits (%d intervals, %.3f s), %d segments: %d do not tile" %
            (len(ws), intervals, total / 1e9, segs, len(bad)))
    for w, why in bad[:5]:
        check(False, "tiles: wait of %s at %s: %s" % (w[1], w[3], why))
    check(intervals >= int(min_waits), "tiles: %d intervals analysed, expected %s or more" %
          (intervals, min_waits))
    for comm in comms:
        n = sum(1 for w in ws if w[0][1].startswith(comm))
        check(n > 0, "tiles: no wait of %s" % comm)


def cmd_bounded(offcpu, data, max_s, max_mb):
    t0 = time.monotonic()
    p = subprocess.run([offcpu, "report", "-i", data, "--chains", "--chain-min", "0"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       errors="replace")
    took = time.monotonic() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    check(p.returncode == 0, "bounded: report --chains exited %d: %s" % (p.returncode, p.stderr[-500:]))
    head = [l for l in p.stdout.splitlines() if l.startswith("# ")]
    measure("bounded: report --chains --chain-min 0 in %.2f s, %.1f MB peak: %s" %
            (took, peak, " / ".join(h[2:] for h in head[1:4])))
    check(took <= float(max_s), "bounded: report --chains took %.1f s (over %s s)" % (took, max_s))
    check(peak <= float(max_mb), "bounded: report --chains took %.1f MB (over %s MB)" % (peak, max_mb))
    check(any("tile it exactly" in h for h in head), "bounded: not every wait tiled")


def main():
    cmds = {"known": cmd_known, "tiles": cmd_tiles, "bounded": cmd_bounded}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__)
        sys.exit(2)
    cmds[sys.argv[1]](*sys.argv[2:])
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks of user stacks unwound from .eh_frame (record --call-graph dwarf),
read back with Debian's `perf script` and with `offcpu report`:

    unwindcheck.py nofp   OFFCPU FILE.data WAITMIX.json [FP.data]
    unwindcheck.py python OFFCPU FILE.data PID
    unwindcheck.py dlopen OFFCPU FILE.data TID N MS
    unwindcheck.py signal OFFCPU FILE.data TID MS
    unwindcheck.py nocfi  OFFCPU FILE.data TID N MS
    unwindcheck.py attach OFFCPU FILE.data TIDFILE SECS
    unwindcheck.py deferred OFFCPU FILE.data TID MS
    unwindcheck.py pywait OFFCPU FILE.data PYWAIT.json FLAMEGRAPH.svg
    unwindcheck.py node   OFFCPU FILE.data PID MS

Each figure is printed as a '# ' line; a failed check prints 'FAIL: ' and
the exit status is 1.
"""
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import check, finish, fname, is_kernel, measure, pct, run, script_samples, func_band  # noqa: E402

BAND = 0.05   # off-CPU time of a named function against the workload's own measurement
SPIN = 0.15   # CPU time of the spinning functions against the thread's CPU time in them


def user_frames(s):
    """The function names of a perf script sample's user frames, innermost first."""
    return [fname(f) for ip, f in zip(s.ips, s.frames) if not is_kernel(ip)]


def folded_name(frame):
    for mark in ("_[k]", "_[i]"):
        if frame.endswith(mark):
            return None if mark == "_[k]" else frame[:-len(mark)]
    return frame.split("@")[0]


def folded(offcpu, path, event, tid=None):
    """`offcpu report --folded` lines as (user frames innermost first, value)."""
    args = [offcpu, "report", "-i", path, "--folded", "--event", event]
    if tid is not None:
        args += ["--tid", str(tid)]
    res = []
    for line in run(args).splitlines():
        stack, _, value = line.rpartition(" ")
        if not stack or not value.isdigit():
            continue
        frames = [folded_name(f) for f in stack.split(";")[1:]]  # [0]: the comm
        res.append(([f for f in frames if f is not None][::-1], int(value)))
    return res


def counters(offcpu, path):
    """The `offcpu` section's counters, as offcpu report's header shows them."""
    res = {}
    for line in run([offcpu, "report", "-i", path, "--stdio", "--header"]).splitlines():
        m = re.match(r"# offcpu (\S+): (\d+)", line)
        if m:
            res[m.group(1)] = int(m.group(2))
    return res


def in_order(frames, want):
    """Do the names in want appear in frames in that order (others between)?"""
    it = iter(frames)
    return all(any(f == w for f in it) for w in want)


# ---------------------------------------------------------------- check 1

def cmd_nofp(offcpu, path, json_path, fp_path=None):
    """waitmix-nofp (-O2 -fomit-frame-pointer): each thread's outer and inner
    named functions have their off-CPU time within 5 % (the record check's
    band: from asleep to asleep + the wake-up's wait for a CPU), on that
    thread only for the outer one; the spinning functions their CPU time
    within 15 %. Both with perf script and with offcpu report --folded. A
    recording of the same workload with --call-graph fp (fp_path) must lose
    most of them: the workload is one that frame pointers cannot unwind."""
    wl = json.load(open(json_path))
    samples, _ = script_samples(path)
    threads = wl["threads"]
    readers = {"perf script": lambda tid, ev, f: sum(
        s.period for s in samples if s.tid == tid and (s.event == "offcpu-time") == (ev == "offcpu-time")
        and f in user_frames(s))}
    cache = {}

    def own(tid, ev, f):
        if (tid, ev) not in cache:
            cache[(tid, ev)] = folded(offcpu, path, ev, tid)
        return sum(v for frames, v in cache[(tid, ev)] if f in frames)
    readers["offcpu report"] = own
    c = counters(offcpu, path)
    for t in threads:
        if t["role"] == "vfork-wait":
            # glibc's clone ends its FDE before its syscall (on purpose: the
            # child's unwind information would be wrong there), so the
            # parent's wait has no CFI at its pc: frame pointers from there,
            # which an -fomit-frame-pointer caller has none of. Counted
            # (unwind.fp_steps), never made up.
            ws = [s for s in samples if s.tid == t["tid"] and s.event == "offcpu-time"
                  and s.period >= 0.5 * t["func_offcpu_ns"]]
            for s in ws:
                measure("%-11s the clone wait (%.2f ms): %s" % (t["role"], s.period / 1e6,
                                                                " <- ".join(user_frames(s))))
            check(len(ws) == 1 and user_frames(ws[0])[:1] == ["__clone"],
                  "vfork-wait: not one wait of %d ns in __clone" % t["func_offcpu_ns"])
            check(c.get("unwind.fp_steps", 0) >= 1, "vfork-wait: its frame-pointer step is not counted")
            continue
        for f in (t["func"], t["inner"]):
            for reader, total in readers.items():
                if t["role"] == "spin":
                    got, ref = total(t["tid"], "cpu-clock", f), t["func_oncpu_ns"]
                    measure("%-11s %-19s tid %-6d %-13s CPU %8.2f ms; thread CPU time in wl_spin %8.2f ms (%+.2f %%)"
                            % (t["role"], f, t["tid"], reader, got / 1e6, ref / 1e6, pct(got, ref)))
                    check(abs(got - ref) <= SPIN * ref, "%s: %s: %s CPU time %d ns, not %d ns +- 15 %%"
                          % (reader, t["role"], f, got, ref))
                    continue
                sleep = t["func_offcpu_ns"]
                hi = sleep + t["func_rq_wake_ns"] + t["func_rq_mixed_ns"]
                got = total(t["tid"], "offcpu-time", f)
                measure("%-11s %-19s tid %-6d %-13s off-CPU %8.2f ms; asleep %8.2f ms (%+.2f %%), + wake-up wait %.2f ms"
                        % (t["role"], f, t["tid"], reader, got / 1e6, sleep / 1e6, pct(got, sleep),
                           (hi - sleep) / 1e6))
                lo, top = func_band(t, BAND)
                check(lo <= got <= top, "%s: %s: %s off-CPU %d ns outside [%d, %d]"
                      % (reader, t["role"], f, got, lo, top))
    # the outer functions on their own threads only
    for t in threads:
        other = sorted({s.tid for s in samples if t["func"] in user_frames(s) and s.tid != t["tid"]})
        check(not other, "%s: samples with %s on tids %s, not only %d" % (t["role"], t["func"], other, t["tid"]))
    if fp_path:
        fps, _ = script_samples(fp_path)
        wlfp = json.load(open(fp_path.replace(".data", ".json")))
        lost = 0
        for t in wlfp["threads"]:
            if t["role"] == "spin":
                continue
            got = sum(s.period for s in fps if s.tid == t["tid"] and s.event == "offcpu-time"
                      and t["func"] in user_frames(s))
            lost += got < 0.5 * t["func_offcpu_ns"]
            measure("--call-graph fp: %-11s %-19s %8.2f ms of %8.2f ms" % (t["role"], t["func"], got / 1e6,
                                                                         t["func_offcpu_ns"] / 1e6))
        n = len([t for t in wlfp["threads"] if t["role"] != "spin"])
        measure("--call-graph fp loses %d of %d outer functions (less than half their time)" % (lost, n))
        check(lost >= n - 2, "--call-graph fp finds most named functions: the workload does not need .eh_frame")
    finish()


# ---------------------------------------------------------------- check 3

def cmd_python(offcpu, path, pid):
    """python3 sleeping 300 ms: the sample's user stack runs from
    clock_nanosleep through the interpreter to _start (or
    __libc_start_main), at least 6 frames, in perf script and in offcpu
    report --folded."""
    pid = int(pid)
    samples, _ = script_samples(path)
    long = [s for s in samples if s.event == "offcpu-time" and s.pid == pid and s.period >= 250000000]
    check(len(long) == 1, "%d offcpu-time samples of 250 ms or more for python3 (pid %d), expected 1"
          % (len(long), pid))
    interp = {"Py_RunMain", "Py_BytesMain", "PyEval_EvalCode", "_PyEval_EvalFrameDefault",
              "PyRun_SimpleStringFlags", "PyObject_Vectorcall"}

    def judge(reader, frames):
        measure("%s: %d user frames: %s" % (reader, len(frames), " <- ".join(frames)))
        check(len(frames) >= 6, "%s: %d user frames, expected 6 or more" % (reader, len(frames)))
        check(frames and frames[0] == "clock_nanosleep", "%s: innermost user frame %s, not clock_nanosleep"
              % (reader, frames[0] if frames else None))
        check(frames and frames[-1] in ("_start", "__libc_start_main"),
              "%s: outermost user frame %s, not _start or __libc_start_main" % (reader, frames[-1] if frames else None))
        check(interp & set(frames), "%s: no interpreter frame (%s)" % (reader, ", ".join(sorted(interp))))
    for s in long:
        judge("perf script", user_frames(s))
    lines = [(f, v) for f, v in folded(offcpu, path, "offcpu-time", pid) if v >= 250000000]
    check(len(lines) == 1, "offcpu report --folded: %d stacks of 250 ms or more for python3" % len(lines))
    for f, _ in lines:
        judge("offcpu report", f)
    finish()


# ---------------------------------------------------------------- checks 4-6

def waits(samples, tid, ms):
    """The offcpu-time samples of tid that are one wait of about ms ms."""
    return [s for s in samples if s.event == "offcpu-time" and s.tid == tid
            and 0.8 * ms * 1e6 <= s.period <= 1.5 * ms * 1e6]


def cmd_dlopen(offcpu, path, tid, n, ms):
    """A library dlopened once recording runs, waiting n times ms ms: the
    waits after its table is loaded carry the library's frames and its
    caller's (ul_block_inner, ul_block_outer, um_call_lib, main); any before
    are counted (unwind.no_mapping: a frame in a file whose table was not
    loaded yet). At most two without: the first wait asks for the table."""
    tid, n, ms = int(tid), int(n), int(ms)
    want = ["ul_block_inner", "ul_block_outer", "um_call_lib", "main"]
    samples, _ = script_samples(path)
    ws = waits(samples, tid, ms)
    full = [s for s in ws if in_order(user_frames(s), want)]
    c = counters(offcpu, path)
    measure("%d waits of %d ms in the library: %d with %s; unwind.no_mapping %d, no_table %d"
            % (len(ws), ms, len(full), " <- ".join(want), c.get("unwind.no_mapping", -1),
               c.get("unwind.no_table", -1)))
    for s in ws:
        if s not in full:
            measure("without: %s" % " <- ".join(user_frames(s)))
    check(len(ws) == n, "%d waits of about %d ms on tid %d, expected %d" % (len(ws), ms, tid, n))
    check(len(full) >= n - 2, "%d of %d waits with the library's frames and its caller's" % (len(full), n))
    check(len(ws) - len(full) <= c.get("unwind.no_mapping", 0) + c.get("unwind.no_table", 0),
          "%d waits without the library's frames, but only %d counted"
          % (len(ws) - len(full), c.get("unwind.no_mapping", 0) + c.get("unwind.no_table", 0)))
    own = [(f, v) for f, v in folded(offcpu, path, "offcpu-time", tid) if in_order(f, want)]
    total = sum(v for _, v in own)
    measure("offcpu report --folded: %.1f ms in %s" % (total / 1e6, " <- ".join(want)))
    check(total >= (len(full) - 0.5) * ms * 1e6 * 0.8, "offcpu report: %.1f ms with the library's frames"
          % (total / 1e6))
    finish()


def cmd_signal(offcpu, path, tid, ms):
    """A signal handler that waits (pause in a SIGUSR1 handler, ms ms): the
    stack goes on through the signal frame (__restore_rt) into the function
    the signal interrupted (um_spin_interrupted) and on to main."""
    tid, ms = int(tid), int(ms)
    want = ["um_handler_block", "um_on_usr1", "__restore_rt", "um_spin_interrupted", "main"]
    samples, _ = script_samples(path)
    ws = [s for s in samples if s.event == "offcpu-time" and s.tid == tid and s.period >= 0.7 * ms * 1e6]
    check(len(ws) == 1, "%d waits of %d ms or more on tid %d, expected 1" % (len(ws), 0.7 * ms, tid))
    for s in ws:
        f = user_frames(s)
        measure("perf script: %.1f ms: %s" % (s.period / 1e6, " <- ".join(f)))
        check(in_order(f, want), "perf script: not %s" % " <- ".join(want))
        check(f and f[-1] in ("_start", "__libc_start_main"), "perf script: does not end at _start")
    own = [(f, v) for f, v in folded(offcpu, path, "offcpu-time", tid) if v >= 0.7 * ms * 1e6]
    for f, v in own:
        measure("offcpu report: %.1f ms: %s" % (v / 1e6, " <- ".join(f)))
    check(len(own) == 1 and in_order(own[0][0], want), "offcpu report --folded: not %s" % " <- ".join(want))
    finish()


def cmd_nocfi(offcpu, path, tid, n, ms):
    """A binary without .eh_frame (but with frame pointers): its frames come
    from frame-pointer steps, counted (unwind.fp_steps) and the file too
    (unwind.files_no_cfi)."""
    tid, n, ms = int(tid), int(n), int(ms)
    want = ["um_plain_inner", "um_plain_outer", "main"]
    samples, _ = script_samples(path)
    ws = waits(samples, tid, ms)
    full = [s for s in ws if in_order(user_frames(s), want)]
    c = counters(offcpu, path)
    measure("%d waits: %d with %s; unwind.fp_steps %d, unwind.files_no_cfi %d"
            % (len(ws), len(full), " <- ".join(want), c.get("unwind.fp_steps", -1),
               c.get("unwind.files_no_cfi", -1)))
    for s in ws[:1]:
        measure("perf script: %s" % " <- ".join(user_frames(s)))
    check(len(ws) == n and len(full) == n, "%d of %d waits with %s" % (len(full), n, " <- ".join(want)))
    check(c.get("unwind.fp_steps", 0) >= len(full), "unwind.fp_steps %d, fewer than the %d stacks stepped"
          % (c.get("unwind.fp_steps", 0), len(full)))
    check(c.get("unwind.files_no_cfi", 0) >= 1, "unwind.files_no_cfi is 0")
    finish()


# ---------------------------------------------------------------- issue 22

def perf_total(samples, tid, event, want):
    """perf script: the period of tid's samples of event whose frames have want in order."""
    return sum(s.period for s in samples if s.tid == tid and s.event == event
               and in_order(user_frames(s), want))


def folded_total(offcpu, path, tid, event, want):
    """offcpu report --folded: the same."""
    return sum(v for f, v in folded(offcpu, path, event, tid) if in_order(f, want))


def cmd_attach(offcpu, path, tidfile, secs):
    """stuck-nofp, attached to while its threads wait (pipe read, nanosleep,
    FIFO read, mutex): each thread's function with its callers up to
    start_thread, its whole off-CPU time of the window (secs +- 5 %; the
    woken thread's two parts together), in perf script and offcpu report;
    the stacks were unwound in user space (unwind.deferred_unwound)."""
    want_ns = float(secs) * 1e9
    funcs = {"pipe-block": "wl_pipe_block", "long-sleep": "wl_long_sleep",
             "wake-once": "wl_wake_once", "mutex-wait": "wl_mutex_wait"}
    tids = dict((r, int(t)) for r, t in (line.split() for line in open(tidfile)))
    samples, _ = script_samples(path)
    c = counters(offcpu, path)
    measure("unwind.deferred_unwound %d, unwind.deferred_failed %d"
            % (c.get("unwind.deferred_unwound", -1), c.get("unwind.deferred_failed", -1)))
    check(c.get("unwind.deferred_unwound", 0) >= len(funcs), "fewer stacks unwound in user space than threads")
    for role, func in funcs.items():
        want = [func, "thread_main", "start_thread"]
        for reader, got in (("perf script", perf_total(samples, tids[role], "offcpu-time", want)),
                            ("offcpu report", folded_total(offcpu, path, tids[role], "offcpu-time", want))):
            measure("%-10s %-13s %-13s %.3f s in %s (%+.2f %% of %s s)" % (role, func, reader, got / 1e9,
                    " <- ".join(want), pct(got, want_ns), secs))
            check(abs(got - want_ns) <= BAND * want_ns, "%s: %s: %.3f s in %s, not %s s +- 5 %%"
                  % (reader, role, got / 1e9, " <- ".join(want), secs))
    finish()


def cmd_deferred(offcpu, path, tid, ms):
    """A library dlopened and entered at once, its table not built yet (the
    unwinder's thread held back): the one wait of ms ms has the library's
    frames and its caller's in the main binary, its whole time, in perf
    script and offcpu report; the stack was deferred and unwound in user
    space (unwind.deferred, unwind.deferred_unwound)."""
    tid, want_ns = int(tid), int(ms) * 1e6
    want = ["ul_block_inner", "ul_block_outer", "um_call_lib", "main"]
    samples, _ = script_samples(path)
    c = counters(offcpu, path)
    measure("unwind.deferred %d, unwind.deferred_unwound %d, unwind.no_mapping %d"
            % (c.get("unwind.deferred", -1), c.get("unwind.deferred_unwound", -1), c.get("unwind.no_mapping", -1)))
    check(c.get("unwind.deferred", 0) >= 1 and c.get("unwind.deferred_unwound", 0) >= 1,
          "no stack deferred and unwound in user space")
    for s in waits(samples, tid, int(ms)):
        measure("perf script: %.1f ms: %s" % (s.period / 1e6, " <- ".join(user_frames(s))))
    for reader, got in (("perf script", perf_total(samples, tid, "offcpu-time", want)),
                        ("offcpu report", folded_total(offcpu, path, tid, "offcpu-time", want))):
        measure("%-13s %.1f ms in %s (%+.2f %% of %s ms)" % (reader, got / 1e6, " <- ".join(want),
                                                             pct(got, want_ns), ms))
        check(abs(got - want_ns) <= BAND * want_ns, "%s: %.1f ms in %s, not %s ms +- 5 %%"
              % (reader, got / 1e6, " <- ".join(want), ms))
    finish()


PY_UNKNOWN = "[unknown Python function]"  # pyframes.c's name for a frame it could not read


def is_py(frame, name):
    """Is frame the Python function name ("name (file.py:line)")?"""
    return frame.startswith(name + " (")


def in_order_py(frames, want):
    """in_order, a Python function matching its "name (file:line)" frames."""
    it = iter(frames)
    return all(any(f == w or is_py(f, w) for f in it) for w in want)


def cmd_pywait(offcpu, path, json_path, svg_path):
    """tests/workloads/pywait.py run by a CPython: each waiting function's
    off-CPU time and its waits for a CPU (its "name (pywait.py:line)" frame;
    the script's clock around the call counts both: a thread preempted
    between reading it and blocking waits 40 ms on a loaded machine) within
    5 % of what the script measured around its own calls, py_spin's CPU
    time within 15 %,
    in perf script and offcpu report; the Python frames in call order, native
    frames anywhere among and above them (C functions the interpreter
    called), start_thread below them but in a few samples cut above the
    interpreter; the waker of the lock, the queue and the socket in
    py_release (report --wakeups); sched-delay samples with the Python
    frames; every function in the flame graph."""
    wl = json.load(open(json_path))
    samples, _ = script_samples(path)
    svg = open(svg_path).read()
    for name, f in sorted(wl["funcs"].items()):
        tid, ref = f["tid"], f["ns"]
        evs, band = (("cpu-clock",), SPIN) if name == "py_spin" else (("offcpu-time", "sched-delay"), BAND)
        mine = [s for s in samples if s.tid == tid and s.event in evs]
        got_perf = sum(s.period for s in mine if any(is_py(x, name) for x in user_frames(s)))
        got_own = sum(v for ev in evs for fr, v in folded(offcpu, path, ev, tid) if any(is_py(x, name) for x in fr))
        for reader, got in (("perf script", got_perf), ("offcpu report", got_own)):
            measure("%-13s tid %-7d %-13s %s %8.1f ms; measured by the script %8.1f ms (%+.2f %%)"
                    % (name, tid, reader, "CPU" if name == "py_spin" else "off-CPU + run queue",
                       got / 1e6, ref / 1e6, pct(got, ref)))
            check(abs(got - ref) <= band * ref, "%s: %s: %s %d ns, not %d ns +- %d %%"
                  % (reader, name, " + ".join(evs), got, ref, band * 100))
        # The Python frames in call order, native frames anywhere among them:
        # above the innermost one (the C functions it called, the dynamic
        # linker's lazy binding of one) and between them (the interpreter).
        # Every sample has them all, in this order.
        pyorder = [name, "worker", "Thread.run", "Thread._bootstrap"]
        whole = [s for s in mine if any(is_py(x, name) for x in user_frames(s))]
        bad = [s for s in whole if not in_order_py(user_frames(s), pyorder)]
        check(whole and not bad, "%s: %d of %d samples without the Python frames %s in this order: %s"
              % (name, len(bad), len(whole), " <- ".join(pyorder),
                 " <- ".join(user_frames(bad[0])) if bad else "-"))
        # Below them the thread's native start: a stack the BPF unwinder stopped
        # above the interpreter (a rule it does not follow, as in the lazy
        # binding's _dl_runtime_resolve) keeps its Python frames outermost, its
        # native callers lost. Counted; a few samples at most.
        cut = [s for s in whole if s not in bad and not in_order_py(user_frames(s), pyorder + ["start_thread"])]
        measure("%s: %d of %d samples without start_thread below the Python frames%s"
                % (name, len(cut), len(whole), ": " + " <- ".join(user_frames(cut[0])) if cut else ""))
        check(len(cut) <= max(2, len(whole) // 50), "%s: %d of %d samples without start_thread below %s"
              % (name, len(cut), len(whole), " <- ".join(pyorder)))
        if whole:
            measure("%s: %s" % (name, " <- ".join(user_frames(max(whole, key=lambda s: s.period)))))
        check(("%s (pywait.py:" % name) in svg, "flamegraph: no %s frame" % name)
    # wakers: the main thread's py_release wakes the lock, the queue and the socket
    wakes = run([offcpu, "report", "-i", path, "--wakeups", "--folded"]).splitlines()
    for name in ("py_lock_wait", "py_queue_get", "py_recv"):
        hits = [ln for ln in wakes if (";%s (" % name) in ln.split(";--;")[0] and len(ln.split(";--;")) == 2
                and (";py_release (" in ln.split(";--;")[1])]
        measure("report --wakeups: %s woken in py_release: %d stacks" % (name, len(hits)))
        check(hits, "report --wakeups: %s is never woken by py_release" % name)
    # run-queue delay after the waits and the spinner's preemptions: the
    # same stacks, Python frames and all. Which waits are followed by one
    # is the kernel's to say: a wakeup that preempts the running task skips
    # its run queue's next clock update (wakeup_preempt), so the wait for a
    # CPU after it lasts 0 ns by that clock, as schedstat's run_delay has
    # it, and is no sample. 1 to 5 of the 5 or 6 waiting functions have
    # one in a recording here.
    delays = [s for s in samples if s.event == "sched-delay" and any(is_py(x, "worker") for x in user_frames(s))]
    named = {n for n in wl["funcs"] for s in delays if any(is_py(x, n) for x in user_frames(s))}
    measure("sched-delay: %d samples with Python frames, of the functions %s" % (len(delays), sorted(named)))
    check("py_spin" in named, "sched-delay: no preemption of py_spin")
    check(named - {"py_spin"}, "sched-delay: no wait for a CPU after a wait with its Python frames")
    c = counters(offcpu, path)
    measure("python.stacks %d, python.frames %d, python.no_thread_state %d, python.read_failed %d, "
            "python.functions %d, python.unresolved_frames %d"
            % tuple(c.get(k, -1) for k in ("python.stacks", "python.frames", "python.no_thread_state",
                                           "python.read_failed", "python.functions", "python.unresolved_frames")))
    # A code object freed before its name is read (a module's or a class body's, run once
    # during an import) leaves its frames unnamed, one per instruction seen: a few samples
    # of the startup, never one the checks above need. How many that makes grows with how
    # far the recorder's reading lags (ASan, a loaded machine: 27 of 1 123 samples with
    # Python frames in one run, 12 of 218 frames in another), so such frames, the ones
    # PyEval_EvalCode (a module) or __build_class__ (a class body) runs, are counted, not
    # bounded. Any other unnamed frame is the recorder's failure, bounded tightly.
    pysamples = [s for s in samples if any(" (" in f and f.endswith(")") and ".py:" in f for f in user_frames(s))]
    unnamed = [s for s in samples if PY_UNKNOWN in user_frames(s)]
    run_once = ("PyEval_EvalCode", "builtin___build_class__")

    def body_only(frames):
        return all(i + 1 < len(frames) and frames[i + 1] in run_once
                   for i, f in enumerate(frames) if f == PY_UNKNOWN)
    bodies = [s for s in unnamed if body_only(user_frames(s))]
    others = [s for s in unnamed if not body_only(user_frames(s))]
    measure("samples with an unnamed Python frame: %d of %d with Python frames, %d of them in a module's "
            "or class's body" % (len(unnamed), len(pysamples), len(bodies)))
    for s in others[:3]:
        measure("unnamed elsewhere: %s" % " <- ".join(user_frames(s)))
    check(len(others) <= max(2, len(pysamples) // 200),
          "%d samples of %d with a Python frame without a name outside module and class bodies "
          "(%d unnamed frames in all)" % (len(others), len(pysamples), c.get("python.unresolved_frames", 0)))
    finish()


def cmd_node(offcpu, path, pid, ms):
    """node --perf-basic-prof waiting in jsTimerWait and jsChildWait (ms ms
    each): the off-CPU stacks of the main thread have each function's name
    from perf-PID.map (V8 names them "JS:~name file:line:col", "~" while
    interpreted), with at least 90 % of ms, in perf script and in offcpu
    report."""
    pid, want_ns = int(pid), int(ms) * 1e6
    samples, _ = script_samples(path)

    def has(frames, name):
        return any(re.match(r"^(JS|LazyCompile|Function|InterpretedFunction):[~*^]?%s\b" % name, f)
                   for f in frames)
    for name in ("jsTimerWait", "jsChildWait"):
        mine = [s for s in samples if s.tid == pid and s.event == "offcpu-time" and has(user_frames(s), name)]
        got = sum(s.period for s in mine)
        own = sum(v for f, v in folded(offcpu, path, "offcpu-time", pid) if has(f, name))
        if mine:
            measure("%s: %s" % (name, " <- ".join(user_frames(max(mine, key=lambda s: s.period))[:12])))
        for reader, v in (("perf script", got), ("offcpu report", own)):
            measure("%-11s %-13s %.1f ms off-CPU (%s ms asked)" % (name, reader, v / 1e6, ms))
            check(0.9 * want_ns <= v <= 1.5 * want_ns, "%s: %s: %.1f ms off-CPU under its name, not ~%s ms"
                  % (reader, name, v / 1e6, ms))
    finish()


if __name__ == "__main__":
    cmds = {"nofp": cmd_nofp, "python": cmd_python, "dlopen": cmd_dlopen, "signal": cmd_signal,
            "nocfi": cmd_nocfi, "attach": cmd_attach, "deferred": cmd_deferred, "pywait": cmd_pywait,
            "node": cmd_node}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit("usage: unwindcheck.py {%s} ARGS" % "|".join(cmds))
    cmds[sys.argv[1]](*sys.argv[2:])

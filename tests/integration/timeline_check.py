#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks an `offcpu timeline` Perfetto trace, as protoc decoded it with
Perfetto's own schema (protoc --decode=perfetto.protos.Trace), against what
tests/workloads/tlorder.c measured of itself.

  timeline_check.py exact   TRACE.txt TLORDER.json
      a recording with --off-cpu-thresh 0 --sched-delay --wakeups: every
      wait timed. The sleeper's track holds, in this order: its naps
      (S slices in tl_naps), on CPU, the pipe wait (S, its stack naming
      tl_wait_pipe), waiting for a CPU (woken), on CPU; each duration
      within 2 % of what the thread measured around it; a flow from an
      instant on tl-writer's track (its stack in tl_write_pipe) to the
      run-queue slice at the wakeup; the spinner on CPU through its hold;
      CPU samples of the sleeper in tl_run_after.
  timeline_check.py partial TRACE.txt TLORDER.json
      a recording with --off-cpu-thresh 100 and no --sched-delay: the pipe
      wait (over the threshold) placed to end at the switch-in and said
      so; the naps summed: instants on the sleeper's 'summed short waits'
      track, five waits in tl_naps; the stretches between waits named for
      what they may hold.
  timeline_check.py narrow  TRACE.txt TLORDER.json START_NS END_NS
      `--tid SLEEPER --time START,END` of the first: the sleeper's track
      alone, nothing outside the window, the pipe wait cut at its end
      with its whole length said.

Both also check the trace as a whole: no field unknown to the schema,
every interned id defined before (or in) the packet that uses it, every
slice begun and ended on its track without overlapping the one before,
packets in time order. Prints '# ' lines with the figures, 'FAIL: ' lines,
exits 1 on any failure.
"""
import json
import re
import sys

failures = 0
TOL = 0.02


def measure(s):
    print("# " + s)


def check(ok, msg):
    global failures
    if not ok:
        failures += 1
        print("FAIL: " + msg)
    return ok


# ---- protobuf text format (protoc --decode's output) ----

TOKEN = re.compile(r'\s*(?:([A-Za-z_][A-Za-z0-9_]*|\d+)\s*(:)?\s*|(\{)|(\}))')
VALUE = re.compile(r'"((?:[^"\\]|\\.)*)"|([^\s{}]+)')


def unescape(s):
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != '\\':
            out += c.encode()
            i += 1
            continue
        n = s[i + 1]
        if n in '01234567':
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in '01234567':
                j += 1
            out.append(int(s[i + 1:j], 8))
            i = j
            continue
        out += {'n': b'\n', 't': b'\t', 'r': b'\r', '"': b'"', "'": b"'", '\\': b'\\'}.get(n, n.encode())
        i += 2
    return out.decode('utf-8', 'replace')


def parse(text):
    """The message as nested dicts of field -> list of values; fields named by number are unknown."""
    root = {}
    stack = [root]
    pos = 0
    unknown = []
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        if text[pos] == '}':
            stack.pop()
            pos += 1
            continue
        m = TOKEN.match(text, pos)
        if not m or not m.group(1):
            raise ValueError("cannot parse at %d: %r" % (pos, text[pos:pos + 40]))
        name = m.group(1)
        pos = m.end()
        if name.isdigit():
            unknown.append(name)
        if m.group(2):  # name: value
            v = VALUE.match(text, pos)
            pos = v.end()
            val = unescape(v.group(1)) if v.group(1) is not None else v.group(2)
            if v.group(2) is not None and re.fullmatch(r'-?\d+', val):
                val = int(val)
            elif val == 'true':
                val = True
            elif val == 'false':
                val = False
            stack[-1].setdefault(name, []).append(val)
        else:  # name {
            while text[pos].isspace():
                pos += 1
            if text[pos] != '{':
                raise ValueError("expected { after %s at %d" % (name, pos))
            pos += 1
            child = {}
            stack[-1].setdefault(name, []).append(child)
            stack.append(child)
    return root, unknown


def one(msg, field, default=None):
    v = msg.get(field)
    return v[0] if v else default


# ---- the trace as a model ----

class Trace:
    def __init__(self, text):
        root, unknown = parse(text)
        check(not unknown, "fields unknown to the schema: %s" % sorted(set(unknown))[:10])
        self.packets = root.get('packet', [])
        self.names, self.fnames, self.frames, self.stacks = {}, {}, {}, {}
        self.da_names, self.da_strs = {}, {}
        self.tracks = {}
        self.events = []   # (ts, order, track, event dict)
        self.samples = []  # (ts, perf_sample)
        self.primary_clock = None
        self.default_clock = None
        last_ts = 0
        for i, p in enumerate(self.packets):
            cs = one(p, 'clock_snapshot')
            if cs:
                self.primary_clock = one(cs, 'primary_trace_clock')
            d = one(p, 'trace_packet_defaults')
            if d:
                self.default_clock = one(d, 'timestamp_clock_id')
            idata = one(p, 'interned_data')
            if idata:
                for f, table in (('event_names', self.names), ('debug_annotation_names', self.da_names)):
                    for e in idata.get(f, []):
                        table[one(e, 'iid')] = one(e, 'name')
                for f, table in (('function_names', self.fnames),
                                 ('debug_annotation_string_values', self.da_strs)):
                    for e in idata.get(f, []):
                        table[one(e, 'iid')] = one(e, 'str')
                for e in idata.get('frames', []):
                    self.frames[one(e, 'iid')] = e
                for e in idata.get('callstacks', []):
                    self.stacks[one(e, 'iid')] = e.get('frame_ids', [])
            td = one(p, 'track_descriptor')
            if td:
                self.tracks[one(td, 'uuid')] = td
            ts = one(p, 'timestamp')
            te = one(p, 'track_event')
            ps = one(p, 'perf_sample')
            if (te or ps) and ts is not None:
                check(ts >= last_ts, "packet %d at %d before the one before it (%d)" % (i, ts, last_ts))
                last_ts = ts
            if te:
                self.check_interned(te, i)
                self.events.append((ts, i, one(te, 'track_uuid'), te))
            if ps:
                cid = one(ps, 'callstack_iid')
                check(cid is None or cid in self.stacks, "packet %d: callstack %s not interned" % (i, cid))
                self.samples.append((ts, ps))
        for sid, fr in self.stacks.items():
            for f in fr:
                check(f in self.frames, "callstack %d: frame %d not interned" % (sid, f))
        for fid, f in self.frames.items():
            check(one(f, 'function_name_id') in self.fnames, "frame %d: its name is not interned" % fid)
        self.slices = self.make_slices()

    def check_interned(self, te, i):
        n = one(te, 'name_iid')
        check(n is None or n in self.names, "packet %d: name %s not interned" % (i, n))
        c = one(te, 'callstack_iid')
        check(c is None or c in self.stacks, "packet %d: callstack %s not interned" % (i, c))
        for a in te.get('debug_annotations', []):
            check(one(a, 'name_iid') in self.da_names, "packet %d: annotation name not interned" % i)
            s = one(a, 'string_value_iid')
            check(s is None or s in self.da_strs, "packet %d: annotation value not interned" % i)

    def make_slices(self):
        """Per track, slices (begin, end, event, depth) in order of their begin; instants as
        slices of no duration. A slice begun inside another is its child (depth + 1)."""
        open_, out = {}, {}
        for ts, i, track, te in self.events:
            t = one(te, 'type')
            stack = open_.setdefault(track, [])
            if t == 'TYPE_SLICE_BEGIN':
                s = {'begin': ts, 'end': None, 'ev': te, 'depth': len(stack)}
                out.setdefault(track, []).append(s)
                stack.append(s)
            elif t == 'TYPE_SLICE_END':
                if check(stack, "track %s: a slice ends at %d without a begin" % (track, ts)):
                    stack.pop()['end'] = ts
            elif t == 'TYPE_INSTANT':
                out.setdefault(track, []).append({'begin': ts, 'end': ts, 'ev': te, 'instant': True,
                                                  'depth': len(stack)})
        check(not any(open_.values()), "slices never ended on tracks %s" % sorted(k for k, v in open_.items() if v))
        for track, sl in out.items():
            prev = {}
            for s in sl:
                if s.get('instant') or s['end'] is None:
                    continue
                p = prev.get(s['depth'])
                check(p is None or s['begin'] >= p['end'],
                      "track %s: slice at %d overlaps the one before" % (track, s['begin']))
                prev[s['depth']] = s
        return out

    def name(self, ev):
        return self.names.get(one(ev, 'name_iid'))

    def stack_names(self, ev):
        cid = one(ev, 'callstack_iid')
        return [self.fnames[one(self.frames[f], 'function_name_id')] for f in self.stacks.get(cid, [])]

    def args(self, ev):
        out = {}
        for a in ev.get('debug_annotations', []):
            k = self.da_names.get(one(a, 'name_iid'))
            v = one(a, 'string_value_iid')
            out[k] = self.da_strs.get(v) if v is not None else one(a, 'uint_value')
        return out

    def thread_track(self, tid):
        for uuid, td in self.tracks.items():
            th = one(td, 'thread')
            if th and one(th, 'tid') == tid:
                return uuid, td
        return None, None


def on_cpu(tr, slices, start, end):
    """Time of the 'on CPU' slices among these inside [start, end]."""
    return sum(max(0, min(s['end'], end) - max(s['begin'], start))
               for s in slices if tr.name(s['ev']) == 'on CPU')


def near(got, want, what, tol=TOL, base=None):
    """got within tol of want (tol of base when given: a time point against a duration)."""
    room = tol * (base if base is not None else want)
    ok = abs(got - want) <= room
    check(ok, "%s: %.3f ms, want %.3f ms +- %.3f" % (what, got / 1e6, want / 1e6, room / 1e6))
    return ok


def near_cpu(got, cpu, held, what):
    """On-CPU time (wall time current) against the thread's CPU time there.
    The CPU time leaves out what the host stole from the vCPU meanwhile
    (paravirt steal accounting), the timeline cannot: got may exceed it by
    as much as the thread's burn saw its wall time exceed its CPU time
    (held), and no more."""
    room = TOL * cpu
    ok = cpu - room <= got <= cpu + max(held, 0) + room
    check(ok, "%s: %.3f ms, want %.3f ms (+ up to %.3f ms held from it) +- %.3f"
          % (what, got / 1e6, cpu / 1e6, max(held, 0) / 1e6, room / 1e6))
    return ok


def threads_named(tr, w):
    for role in ('sleeper', 'writer', 'spinner'):
        uuid, td = tr.thread_track(w[role])
        if not check(uuid is not None, "no track for tl-%s %d" % (role, w[role])):
            continue
        th = one(td, 'thread')
        check(one(th, 'thread_name') == 'tl-' + role and one(th, 'pid') == w['pid'],
              "tl-%s's track: thread %s" % (role, th))
        check(one(td, 'name') == 'tl-%s %d' % (role, w[role]), "tl-%s's track is named %r" % (role, one(td, 'name')))
        parent = tr.tracks.get(one(td, 'parent_uuid'))
        proc = one(parent, 'process') if parent else None
        check(proc and one(proc, 'pid') == w['pid'], "tl-%s's track is not under its process" % role)
    measure("tracks: tl-sleeper, tl-writer, tl-spinner named 'comm tid' under process %d" % w['pid'])


def exact(tr, w):
    threads_named(tr, w)
    check(tr.primary_clock == 'BUILTIN_CLOCK_MONOTONIC' and tr.default_clock == 3,
          "clock: primary %s, packets' %s (want MONOTONIC, 3)" % (tr.primary_clock, tr.default_clock))
    uuid, _ = tr.thread_track(w['sleeper'])
    sl = [s for s in tr.slices.get(uuid, []) if not s.get('instant')]
    names = [tr.name(s['ev']) for s in sl]
    pipe = [i for i, s in enumerate(sl) if names[i].startswith('S ') and 'tl_wait_pipe' in tr.stack_names(s['ev'])]
    if not check(len(pipe) == 1, "sleeper: %d off-CPU slices in tl_wait_pipe (want 1): %s" % (len(pipe), names)):
        return
    i = pipe[0]
    wait, rq = sl[i], sl[i + 1] if i + 1 < len(sl) else None
    # the order: naps, on CPU, the pipe wait, woken and waiting for CPU c, on CPU
    naps = [s for s in sl[:i] if tr.name(s['ev']).startswith('S ') and 'tl_naps' in tr.stack_names(s['ev'])]
    check(len(naps) == 5, "sleeper: %d naps before the pipe wait, want 5" % len(naps))
    naps_ns = sum(s['end'] - s['begin'] for s in naps)
    # each at least its 2 ms less the few microseconds from arming the timer to leaving the CPU
    check(naps_ns <= w['naps_ns'] and naps_ns >= 5 * 1900000,
          "naps: %.3f ms asleep, the thread measured %.3f ms around them" % (naps_ns / 1e6, w['naps_ns'] / 1e6))
    before = [s for s in sl[:i] if tr.name(s['ev']) == 'on CPU']
    # before it: its start, pinning itself to CPU c (a D wait when it has to move), its naps,
    # its run, preemptions by whatever else runs on CPU c
    check(all(tr.name(s['ev']) in ('on CPU', 'runnable (new)', 'runnable (preempted)', 'runnable (woken)')
              or tr.name(s['ev'])[:2] in ('S ', 'D ') for s in sl[:i]), "sleeper before its wait: %s" % names[:i])
    oncpu_before = on_cpu(tr, before, 0, w['block'])
    near_cpu(oncpu_before, w['cpu_block'], w['held_before'],
             "sleeper on CPU before its wait (against its CPU time there)")
    # the wait
    dur = wait['end'] - wait['begin']
    near(dur, w['write'] - w['block'], "pipe wait (read called .. write called)")
    near(wait['begin'], w['block'], "pipe wait's start", base=w['write'] - w['block'])
    measure("sleeper's pipe wait: %.3f ms, '%s', the thread measured %.3f ms (read called .. write called)"
            % (dur / 1e6, tr.name(wait['ev']), (w['write'] - w['block']) / 1e6))
    stack = tr.stack_names(wait['ev'])
    check(stack.index('tl_wait_pipe') < stack.index('tl_call_read') if 'tl_call_read' in stack else False,
          "pipe wait's stack, outermost first: %s" % stack)
    measure("its stack: %s" % ' > '.join(stack[-8:]))
    check(tr.args(wait['ev']).get('woken by') == 'tl-writer %d/%d' % (w['pid'], w['writer']),
          "pipe wait: woken by %r" % tr.args(wait['ev']).get('woken by'))
    # waiting for CPU c, held by the spinner
    if not check(rq and tr.name(rq['ev']) == 'runnable (woken)' and rq['begin'] == wait['end'],
                 "after the pipe wait: %s" % (names[i + 1] if rq else None)):
        return
    rdur = rq['end'] - rq['begin']
    near(rdur, w['run'] - w['write'], "run-queue wait (write called .. read returned)")
    near(rq['end'], w['spin_end'], "run-queue wait's end against the spinner's", base=rdur)
    measure("then waiting for a CPU: %.3f ms, the thread measured %.3f ms (write .. read returned); "
            "the spinner let go %.3f ms after the wakeup"
            % (rdur / 1e6, (w['run'] - w['write']) / 1e6, (w['spin_end'] - wait['end']) / 1e6))
    after = sl[i + 2:]
    check(after and all(tr.name(s['ev']) in ('on CPU', 'runnable (preempted)') for s in after),
          "after the run-queue wait: %s" % names[i + 2:])
    oncpu_after = on_cpu(tr, after, w['run'], w['end'])
    near_cpu(oncpu_after, w['cpu_end'] - w['cpu_run'], w['held_after'],
             "sleeper on CPU after its wait (against its CPU time there)")
    measure("on CPU before the wait %.3f ms, after %.3f ms (CPU time measured: %.3f, %.3f ms; "
            "wall minus CPU time of its burns: %.3f, %.3f ms)"
            % (oncpu_before / 1e6, oncpu_after / 1e6, w['cpu_block'] / 1e6, (w['cpu_end'] - w['cpu_run']) / 1e6,
               w['held_before'] / 1e6, w['held_after'] / 1e6))
    # the wake flow, from the writer
    flow = one(rq['ev'], 'terminating_flow_ids')
    wuuid, _ = tr.thread_track(w['writer'])
    src = [s for s in tr.slices.get(wuuid, []) if s.get('instant') and one(s['ev'], 'flow_ids') == flow]
    if check(flow is not None and len(src) == 1, "no flow from tl-writer's track into the run-queue wait (%s)" % flow):
        wk = src[0]
        check(wk['begin'] == wait['end'], "the wakeup instant at %d, the wait ended at %d" % (wk['begin'], wait['end']))
        check(tr.name(wk['ev']) == 'wakes tl-sleeper %d' % w['sleeper'], "wakeup instant named %r" % tr.name(wk['ev']))
        wst = tr.stack_names(wk['ev'])
        check('tl_write_pipe' in wst, "the waker's stack: %s" % wst)
        near(wk['begin'], w['write'], "the wakeup against the write", base=w['run'] - w['write'])
        measure("flow %d: tl-writer's 'wakes tl-sleeper' (its stack in tl_write_pipe) -> the run-queue wait, "
                "%.3f ms after the writer's write call" % (flow, (wk['begin'] - w['write']) / 1e6))
    # the spinner held CPU c through the wait (a stop task may take it for microseconds)
    suuid, _ = tr.thread_track(w['spinner'])
    held = on_cpu(tr, [s for s in tr.slices.get(suuid, []) if not s.get('instant')], w['spin_start'], w['spin_end'])
    near(held, w['spin_end'] - w['spin_start'], "spinner on CPU during its hold")
    # CPU samples
    mine = [ps for ts, ps in tr.samples if one(ps, 'tid') == w['sleeper']]
    after_run = [ps for ts, ps in tr.samples if one(ps, 'tid') == w['sleeper'] and w['run'] <= ts <= w['end']]
    in_fn = [ps for ps in after_run if 'tl_run_after' in tr.stack_names(ps)]
    check(len(in_fn) >= 20 and len(in_fn) >= 0.8 * len(after_run),
          "sleeper's CPU samples after the wait: %d, %d in tl_run_after" % (len(after_run), len(in_fn)))
    measure("CPU samples: %d of the sleeper, %d in tl_run_after" % (len(mine), len(in_fn)))


def partial(tr, w):
    threads_named(tr, w)
    uuid, _ = tr.thread_track(w['sleeper'])
    sl = [s for s in tr.slices.get(uuid, []) if not s.get('instant')]
    names = [tr.name(s['ev']) for s in sl]
    pipe = [s for s in sl if tr.name(s['ev']).startswith('S ') and 'tl_wait_pipe' in tr.stack_names(s['ev'])]
    if check(len(pipe) == 1, "sleeper: %d off-CPU slices in tl_wait_pipe (want 1): %s" % (len(pipe), names)):
        p = pipe[0]
        near(p['end'] - p['begin'], w['write'] - w['block'], "pipe wait (read called .. write called)")
        near(p['end'], w['run'], "pipe wait placed to end at the switch-in", base=w['write'] - w['block'])
        check('switch-in' in (tr.args(p['ev']).get('ends') or ''), "pipe wait: ends %r" % tr.args(p['ev']).get('ends'))
        measure("without --sched-delay: the pipe wait %.3f ms, placed at the switch-in (%.3f ms after the write), "
                "said so" % ((p['end'] - p['begin']) / 1e6, (p['end'] - w['write']) / 1e6))
    gaps = set(n for n in names if not n.startswith('S ') and not n.startswith('D '))
    check(gaps == {'on CPU or short waits'}, "sleeper's stretches between waits named %s" % gaps)
    st = [u for u, td in tr.tracks.items() if one(td, 'parent_uuid') == uuid and 'summed short waits' in (one(td, 'name') or '')]
    if check(len(st) == 1, "no 'summed short waits' track beside the sleeper's"):
        inst = [s for s in tr.slices.get(st[0], []) if s.get('instant')]
        naps = [s for s in inst if 'tl_naps' in tr.stack_names(s['ev'])]
        n = sum(tr.args(s['ev']).get('waits') or 0 for s in naps)
        total = sum(tr.args(s['ev']).get('total ns') or 0 for s in naps)
        check(n == 5, "summed naps: %d waits in tl_naps, want 5 (%s)" % (n, [tr.args(s['ev']) for s in naps]))
        check(5 * 1900000 <= total <= w['naps_ns'], "summed naps: %.3f ms, the thread measured %.3f ms"
              % (total / 1e6, w['naps_ns'] / 1e6))
        check(all(s['begin'] <= w['block'] for s in naps), "summed naps timed after the pipe wait began")
        measure("summed: %d instants on 'summed short waits', the naps %d waits %.3f ms (measured %.3f ms)"
                % (len(inst), n, total / 1e6, w['naps_ns'] / 1e6))


def narrow(tr, w, start, end):
    used = set(track for ts, i, track, te in tr.events if track != 1)
    uuid, _ = tr.thread_track(w['sleeper'])
    check(used == {uuid}, "--tid %d: events on tracks %s, want the sleeper's (%s) alone" % (w['sleeper'], used, uuid))
    threads = [one(td, 'thread') for td in tr.tracks.values() if one(td, 'thread')]
    check([one(t, 'tid') for t in threads] == [w['sleeper']], "--tid: thread tracks %s" % threads)
    out = [ts for ts, i, track, te in tr.events if track != 1 and not start <= ts <= end]
    out += [ts for ts, ps in tr.samples if not start <= ts <= end]
    check(not out, "--time: %d events outside the window, the first at %s" % (len(out), out[:1]))
    sl = [s for s in tr.slices.get(uuid, []) if not s.get('instant')]
    pipe = [s for s in sl if 'tl_wait_pipe' in tr.stack_names(s['ev']) and tr.name(s['ev']).startswith('S ')]
    if check(len(pipe) == 1, "--time: %d pipe waits" % len(pipe)):
        p = pipe[0]
        whole = tr.args(p['ev']).get('whole ns')
        check(p['end'] == end and whole is not None, "--time: the pipe wait not cut at the window's end (%d, %d)" % (p['end'], end))
        if whole is not None:
            near(whole, w['write'] - w['block'], "--time: the cut pipe wait's whole length")
        measure("--tid %d --time: %d slices, the pipe wait cut at the window's end (%.3f of %.3f ms)"
                % (w['sleeper'], len(sl), (p['end'] - p['begin']) / 1e6, (whole or 0) / 1e6))


def chains(tr, w, unseen_tids=()):
    """The critical path of the sleeper's pipe wait (a recording with --chains).
    unseen_tids: the threads with a sleep whose wakeup the kernel hid
    (switch records marked wake-unseen): theirs may end [wakeup unseen]."""
    uuid, _ = tr.thread_track(w['sleeper'])
    crit = [u for u, td in tr.tracks.items()
            if one(td, 'parent_uuid') == uuid and one(td, 'name') == 'tl-sleeper %d: critical path' % w['sleeper']]
    if not check(len(crit) == 1, "no 'critical path' track beside the sleeper's"):
        return
    sl = tr.slices.get(crit[0], [])
    waits = [s for s in sl if s['depth'] == 0 and 'tl_wait_pipe' in tr.stack_names(s['ev'])]
    if not check(len(waits) == 1 and tr.name(waits[0]['ev']).startswith('critical path of S '),
                 "critical path: %d waits in tl_wait_pipe (%s)" % (len(waits), [tr.name(s['ev']) for s in waits])):
        return
    wt = waits[0]
    near(wt['end'] - wt['begin'], w['write'] - w['block'], "critical path: the pipe wait")
    pieces = [s for s in sl if s['depth'] == 1 and wt['begin'] <= s['begin'] and s['end'] <= wt['end']]
    tiled = bool(pieces) and pieces[0]['begin'] == wt['begin'] and pieces[-1]['end'] == wt['end'] and \
        all(a['end'] == b['begin'] for a, b in zip(pieces, pieces[1:]))
    check(tiled, "critical path: the pieces do not tile the wait")

    unseen = []

    def piece(role, depth, want, fn):
        # [wakeup unseen]: the kernel hid the timer's wakeup (its interrupt
        # came while the VM agent's thread was current, as it often is on
        # one of these VMs' CPUs): the sleep is there, with its stack and
        # length, its waker unknown, where the recording says so
        name = 'tl-%s %d: [timer]' % (role, w[role])
        got = [s for s in pieces if tr.name(s['ev']) == name]
        hidden = [s for s in pieces if tr.name(s['ev']) == 'tl-%s %d: [wakeup unseen]' % (role, w[role])]
        if not got and len(hidden) == 1 and w[role] in unseen_tids:
            unseen.append(role)
            name, got = tr.name(hidden[0]['ev']), hidden
        if not check(len(got) == 1, "critical path: %d pieces '%s' (%s)" % (len(got), name, [tr.name(s['ev']) for s in pieces])):
            return None
        g = got[0]
        near(g['end'] - g['begin'], want, "critical path: %s" % name)
        check(tr.args(g['ev']).get('hops from the sleeper') == depth,
              "critical path: %s %s hops from the sleeper, want %d" % (name, tr.args(g['ev']).get('hops from the sleeper'), depth))
        check(fn in tr.stack_names(g['ev']) and 'tl_call_nanosleep' in tr.stack_names(g['ev']),
              "critical path: %s's stack %s" % (name, tr.stack_names(g['ev'])))
        return g
    sp = piece('spinner', 2, w['spin_start'] - w['block'], 'spinner')
    wr = piece('writer', 1, w['write'] - w['spin_start'], 'writer')
    if unseen:
        measure("critical path: the timer wakeup of %s hidden from tracing: [wakeup unseen]" % " and ".join(unseen))
    if sp and wr:
        check(sp['end'] <= wr['begin'], "critical path: the spinner's sleep after the writer's")
        measure("critical path of the pipe wait (%.3f ms): %d pieces tiling it; the spinner's sleep %.3f ms "
                "(2 hops: writer, spinner), then the writer's %.3f ms (1 hop), each until a timer"
                % ((wt['end'] - wt['begin']) / 1e6, len(pieces), (sp['end'] - sp['begin']) / 1e6,
                   (wr['end'] - wr['begin']) / 1e6))


def main():
    mode, path, wpath = sys.argv[1:4]
    tr = Trace(open(path, encoding='utf-8').read())
    w = json.load(open(wpath))
    measure("%s: %d packets, %d tracks, %d interned callstacks, %d CPU samples"
            % (mode, len(tr.packets), len(tr.tracks), len(tr.stacks), len(tr.samples)))
    if mode == 'narrow':
        narrow(tr, w, int(sys.argv[4]), int(sys.argv[5]))
    else:
        if mode == 'chains':
            chains(tr, w, [int(t) for t in open(sys.argv[4]).read().split()] if len(sys.argv) > 4 else ())
        else:
            {'exact': exact, 'partial': partial}[mode](tr, w)
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()

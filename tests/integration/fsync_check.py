#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The kernel paths of sqlite's fsync waits: offcpu against perf's sched_switch.

    fsync_check.py OFFCPU_FILE PERF_FILE RECORD_STDERR

OFFCPU_FILE: `offcpu record --off-cpu-thresh 0 -- sqlite3 ...`; PERF_FILE:
`perf record -a -e sched:sched_switch -g` around that recording (the same
run of the workload).
Counts, for comm sqlite3, the off-CPU intervals (offcpu-time samples, each
one interval: all must be direct; perf: switch-outs in state S or D) whose
kernel stack goes through each of FUNCS, and checks each within 1 % of
perf's (2 intervals at least). RECORD_STDERR is offcpu record's summary: of
the kernel stacks taken from the cache and checked by a walk, at most 1 %
may have differed. Prints '# ' figure lines; 'FAIL: ' lines and a non-zero
exit on failure; exit 77 when the file system's fsync did not block in any
of FUNCS (another file system or journal mode: nothing to compare).
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import check, failures, fname, measure, offcpu_raw, run_perf, script_samples  # noqa: E402

FUNCS = ("folio_wait_writeback", "fsync_buffers_list", "sync_inode_metadata", "blkdev_issue_flush")
DIRECT = 0x1  # OFFCPU_RAW_DIRECT


def count(stacks):
    return {f: sum(1 for s in stacks if f in s) for f in FUNCS}


def perf_intervals(path):
    """Function sets of sqlite3's switch-outs in S or D, from perf's sched_switch callchains."""
    out, _ = run_perf(["script", "-i", path, "-F", "comm,tid,event,trace,ip,sym"])
    stacks, cur = [], None
    for line in out.splitlines():
        if not line.strip():
            cur = None
            continue
        if line[0] in " \t":
            parts = line.split()
            if cur is not None and len(parts) >= 2:
                cur.add(fname(parts[1]))
            continue
        m = re.search(r"prev_comm=(\S+) .*prev_state=(\S+)", line)
        cur = None
        if m and m.group(1) == "sqlite3" and m.group(2)[0] in "SD":
            cur = set()
            stacks.append(cur)
    return stacks


def main():
    off_path, perf_path, err_path = sys.argv[1:4]
    samples, _ = script_samples(off_path, raw=True)
    mine = [s for s in samples if s.event == "offcpu-time" and s.comm == "sqlite3"]
    summed = [s for s in mine if not (offcpu_raw(s.raw) or (0, 0, 0))[1] & DIRECT]
    ours = count([{fname(f) for f in s.frames} for s in mine])
    ref_stacks = perf_intervals(perf_path)
    ref = count(ref_stacks)
    measure("intervals of sqlite3: offcpu %d (%d summed), perf sched_switch %d"
            % (len(mine), len(summed), len(ref_stacks)))
    check(not summed, "%d offcpu-time samples of sqlite3 are sums, not single intervals" % len(summed))
    if max(ref.values()) < 100:
        print("skipped: fsync on this file system does not wait in %s (perf: %s)" % (", ".join(FUNCS), ref))
        sys.exit(77)
    for f in FUNCS:
        diff = ours[f] - ref[f]
        measure("%-22s offcpu %5d  perf %5d  (%+.1f %%)" % (f, ours[f], ref[f], 100.0 * diff / ref[f] if ref[f] else 0))
        check(abs(diff) <= max(0.01 * ref[f], 2), "%s: %d intervals, perf %d: more than 1 %% apart" % (f, ours[f], ref[f]))
    text = open(err_path).read()
    m = re.search(r"kernel stacks: (\d+) walked, (\d+) from the cache.* of (\d+) checked by a walk, (\d+) differed", text)
    check(m is not None, "no 'kernel stacks:' line in offcpu record's summary")
    if m:
        walked, cached, checked, stale = (int(x) for x in m.groups())
        measure("kernel stacks: %d walked, %d from the cache (%.1f %% hits), %d checked, %d differed"
                % (walked, cached, 100.0 * cached / max(walked + cached, 1), checked, stale))
        check(checked > 0, "no cache hit was checked by a walk")
        check(stale <= 0.01 * checked, "%d of %d checked cache hits differed (more than 1 %%)" % (stale, checked))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

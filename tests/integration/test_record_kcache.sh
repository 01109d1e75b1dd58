#!/bin/bash
# The kernel stack cache (src/bpf/offcpu.bpf.c, kstack_take): on `perf bench
# sched pipe` (two processes blocking in read() on pipes, 40 000 times) most
# kernel stacks come from the cache, the hits that were checked by a fresh
# walk all agreed, and every off-CPU sample that blocked in read() carries
# the kernel path of a pipe read, from __schedule to the syscall entry,
# whether its stack was walked or cached. Read back with Linux perf.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
# Summed (default threshold) and one sample per wait (--off-cpu-thresh 0,
# each sample's own copy of a cached stack).
for run in "20000" "5000 --off-cpu-thresh 0"; do
	set -- $run
	loops=$1; shift
	measure "--- record $* -- perf bench sched pipe -l $loops"
	record -v -o k.data "$@" -- taskset -c 0 perf bench sched pipe -l "$loops" >/dev/null ||
		fail "offcpu record -- perf bench sched pipe exited $?"
	line=$(grep 'kernel stacks:' "$TESTDIR/record.err") || fail "no 'kernel stacks:' line in offcpu record's summary"
	read -r walked cached checked stale < <(echo "$line" |
		sed -E 's/.*kernel stacks: ([0-9]+) walked, ([0-9]+) from the cache.* of ([0-9]+) checked by a walk, ([0-9]+) differed.*/\1 \2 \3 \4/')
	measure "kernel stacks: $walked walked, $cached cached, $checked checked, $stale stale"
	[ "$cached" -gt $((2 * walked)) ] || fail "only $cached of $((walked + cached)) kernel stacks from the cache"
	[ "$checked" -gt 0 ] || fail "no cache hit was checked by a walk"
	[ "$stale" -eq 0 ] || fail "$stale of $checked checked cache hits differed from a fresh walk"

	"$PY" - k.data "$HERE" <<'PY' || exit 1
import sys
sys.path.insert(0, sys.argv[2])
import perfcheck
samples, _ = perfcheck.script_samples(sys.argv[1])
reads = [s for s in samples if s.event == "offcpu-time" and s.comm == "sched-pipe"
         and any(perfcheck.fname(f) in ("read", "__libc_read") for f in s.frames)]
want = ("__schedule", "schedule", "vfs_read", "ksys_read", "do_syscall_64")
bad = [s for s in reads if not all(any(perfcheck.fname(f) == w for f in s.frames) for w in want)
       or not any("pipe_read" in perfcheck.fname(f) for f in s.frames)]
total = sum(s.period for s in reads)
print("# %d off-CPU samples of sched-pipe blocked in read(), %.1f ms; %d without the pipe read's kernel path"
      % (len(reads), total / 1e6, len(bad)))
if not reads:
    print("FAIL: no off-CPU sample of sched-pipe blocked in read()")
    sys.exit(1)
if bad:
    print("FAIL: kernel stack without %s / *pipe_read: %s" % (", ".join(want), bad[0].frames))
    sys.exit(1)
PY
done

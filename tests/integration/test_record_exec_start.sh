#!/bin/bash
# Recording a command starts at its exec, as perf's enable_on_exec (issue
# 12, check 3): `offcpu record -- sleep 0.3` (default threshold, every
# interval a direct sample with --off-cpu-thresh 0, and with --sched-delay
# and CPU samples every 20 us, which catch the forked child between its
# release and its exec when it is recorded), read back with Debian's perf
# script: no sample of the command's process before its exec (the COMM
# exec record), none with a ':PID' comm (perf's name for a thread it has no
# COMM for), and sleep's 0.3 s are there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
rc=0
for opts in "" "--off-cpu-thresh 0" "-F 49999 --off-cpu-thresh 0 --sched-delay"; do
	measure "--- record $opts -- sleep 0.3"
	# shellcheck disable=SC2086
	record -o e.data $opts -- sleep 0.3 || fail "offcpu record -- sleep 0.3 exited $?"
	"$PY" - e.data "$HERE" <<'PY' || rc=1
import re, sys
sys.path.insert(0, sys.argv[2])
import perfcheck
from perfcheck import check, measure
out, _ = perfcheck.run_perf(["script", "-i", sys.argv[1], "--ns", "--show-task-events",
                             "-F", "comm,pid,tid,time"])
execs = {}
for line in out.splitlines():
    m = re.search(r"(\d+\.\d+): PERF_RECORD_COMM exec: (\S+):(\d+)/(\d+)", line)
    if m and m.group(2) == "sleep":
        execs[int(m.group(3))] = perfcheck.to_ns(m.group(1))
check(len(execs) == 1, "expected one exec of sleep, got %s" % execs)
pid, t_exec = next(iter(execs.items())) if execs else (0, 0)
samples, _ = perfcheck.script_samples(sys.argv[1])
mine = [s for s in samples if s.pid == pid]
before = [s for s in mine if s.time < t_exec]
unnamed = [s for s in samples if re.match(r"^:\d+$", s.comm)]
off = sum(s.period for s in mine if s.event == "offcpu-time" and s.comm == "sleep")
measure("pid %d: %d samples (%s), first %.6f s after the exec; %d before it, %d with a ':PID' comm; "
        "sleep off-CPU %.1f ms" % (pid, len(mine), ", ".join(sorted({s.event for s in mine})),
                                   (min(s.time for s in mine) - t_exec) / 1e9 if mine else 0,
                                   len(before), len(unnamed), off / 1e6))
check(not before, "samples of the command before its exec: %s" % [str(s) for s in before[:3]])
check(not unnamed, "samples with a ':PID' comm: %s" % [str(s) for s in unnamed[:3]])
check(abs(off - 300e6) <= 0.02 * 300e6, "sleep's off-CPU time %.1f ms, not 300 ms +- 2 %%" % (off / 1e6))
perfcheck.finish()
PY
done
exit $rc

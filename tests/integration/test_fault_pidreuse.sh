#!/bin/bash
# issue 6: a pid reused while recording never mixes two processes' stacks or
# names. Under `offcpu record -- reuse.py`, process A (a copy of
# tests/workloads/spawner at a/spawner, named reuse-a, waiting and spinning in
# wl_reuse_a) runs and is reaped; then /proc/sys/kernel/ns_last_pid is set
# to A's pid - 1 and B (b/spawner, reuse-b, wl_reuse_b) is started until it
# gets A's pid (other processes may take it first: retried). Both run without
# address randomization, at the same addresses: a map of A kept for B would
# resolve B's frames in a/spawner. In
# `offcpu script` and `perf script`: that pid has samples of A and of B, and
# no sample carries one process's name with the other's function or binary.
# `offcpu report --threads` keys a thread by its tid and its start: the
# reused tid is two rows, reuse-a's and reuse-b's, each with a wall time
# within the recording.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload spawner
[ -w /proc/sys/kernel/ns_last_pid ] || skip "cannot write /proc/sys/kernel/ns_last_pid"

cd "$TESTDIR"
mkdir a b
cp "$WORKLOADS/spawner" a/spawner
cp "$WORKLOADS/spawner" b/spawner
cat >reuse.py <<'PY'
import subprocess, sys
a_bin, b_bin, out = sys.argv[1:4]
# no address randomization: A and B map their code at the same addresses, so
# a stale map of A would resolve B's addresses (to a/spawner)
norand = ["setarch", "-R"]
a = subprocess.Popen(norand + [a_bin, "reuse", "a"])
a.wait()
pid = a.pid
for tries in range(1, 501):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    b = subprocess.Popen(norand + [b_bin, "reuse", "b"])
    if b.pid == pid:
        b.wait()
        break
    b.kill()
    b.wait()
else:
    tries = 0
open(out, "w").write("%d %d\n" % (pid, tries))
PY
record -o reuse.data -- "$PY" reuse.py "$TESTDIR/a/spawner" "$TESTDIR/b/spawner" "$TESTDIR/pid.txt" ||
	fail "record -- reuse.py exited $?"
read -r pid tries <pid.txt
[ "$tries" -gt 0 ] || skip "pid $pid was not reused in 500 tries (a busy machine)"
measure "pid $pid: A then B after $tries tries"
"$PY" "$HERE/fault_check.py" pidreuse "$OFFCPU" reuse.data "$pid" "$TESTDIR/a/spawner" "$TESTDIR/b/spawner" || exit 1
"$OFFCPU" report -i reuse.data --threads --limit 0 --tid "$pid" >threads.txt 2>threads.err ||
	fail "report --threads failed: $(cat threads.err)"
awk -v t="$pid" '$1 == t && $2 == t { print $3 }' threads.txt | sort >rows.txt
[ "$(tr '\n' ' ' <rows.txt)" = "reuse-a reuse-b " ] ||
	{ cat threads.txt; fail "report --threads: tid $pid is not two rows reuse-a and reuse-b: $(tr '\n' ' ' <rows.txt)"; }
measure "report --threads: tid $pid is two rows: $(awk -v t="$pid" '$1 == t && $2 == t { printf "%s wall %s %s; ", $3, $4, $5 }' threads.txt)"

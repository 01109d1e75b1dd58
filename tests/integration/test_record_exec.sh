#!/bin/bash
# Short waits summed in the kernel before an exec are written with the
# image they were taken in: `spawner exec sleep 0.3` waits 10 times 3 ms in
# ex_before (named ex-before), then execs sleep. Before the fix those sums
# were timed at the process's exit, after the exec's COMM and MMAP records,
# and their user frames resolved in sleep's maps ([unknown]). In
# `offcpu script` and `perf script`: 30-40 ms (or up to ex_before's wall
# time, as the spawner measured it, on a host that wakes timers late) as
# ex-before in ex_before of
# the spawner binary, and no sample of the process in that binary under
# another name. Both with the default threshold and with --wakeups (its own
# sum map) and --sched-delay; and with a program out of the page cache,
# whose exec waits to load it after the exec's COMM record (the sums of the
# old image were then timed after that record, under the new name).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload spawner

disk_dir # a program on disk, out of the page cache
cp "$(command -v sleep)" "$DISK/sleep-cold" || fail "cannot copy sleep"
cd "$TESTDIR"
rc=0
for run in "sleep" "--wakeups --sched-delay:sleep" "$DISK/sleep-cold"; do
	opts=${run%:*}
	prog=${run##*:}
	[ "$opts" = "$run" ] && opts=
	# the cold program's pages dropped: the exec waits to load it, after the
	# exec's COMM record, before its tracepoint
	[ "$prog" = sleep ] || "$PY" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$prog"
	measure "--- record $opts -- spawner exec $prog 0.3"
	# shellcheck disable=SC2086
	SPAWNER_EX_NS=$TESTDIR/ex_ns.txt record -o ex.data $opts -- sh -c 'echo $$ >pid.txt; exec "$0" exec "$1" 0.3' "$WORKLOADS/spawner" "$prog" ||
		fail "offcpu record -- spawner exec exited $?"
	"$PY" "$HERE/fault_check.py" exec "$OFFCPU" ex.data "$(cat pid.txt)" "$WORKLOADS/spawner" "$(cat ex_ns.txt)" || rc=1
done
exit $rc

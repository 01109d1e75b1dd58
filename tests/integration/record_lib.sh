# Helpers of the record tests (test_record_*.sh), sourced after lib.sh.
# The checks on recorded files are in perfcheck.py; this file starts things.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
CHECK() { "$PY" "$HERE/perfcheck.py" "$@"; }

require_offcpu() {
	[ -x "$OFFCPU" ] || skip "offcpu not built ($OFFCPU)"
}
require_workload() { # name
	[ -x "$WORKLOADS/$1" ] || skip "workload $1 not built ($WORKLOADS/$1)"
}

# CLOCK_MONOTONIC in ns, the clock of every record in the file.
mono_ns() { "$PY" -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))'; }

# Sets DISK to a directory on a real disk (fsync does nothing on tmpfs),
# removed at exit. Not in a subshell: it may set the EXIT trap.
disk_dir() {
	DISK=$TESTDIR
	if [ "$(stat -f -c %T "$TESTDIR")" = tmpfs ]; then
		DISK=$(mktemp -d /var/tmp/offcpu-test.XXXXXX)
		trap 'rm -rf "$TESTDIR" "$DISK"' EXIT
	fi
}

# Runs offcpu record with the given arguments; its stderr is kept in
# $TESTDIR/record.err and shown on failure. Returns record's exit status.
# The recording's IRQ + softirq + steal time, all CPUs (/proc/stat ticks, a
# bound): OFFCPU_TEST_STOLEN_NS for the checkers. schedstat's on-CPU time and
# the thread's CPU clock leave it out, so a workload that takes its sleep as
# wall - on-CPU - run-queue counts as asleep what the hypervisor or an IRQ
# took while its thread was current (a recorder rightly counts it on a CPU):
# the checkers let a thread's figure fall short by that much, up to its own
# on-CPU time.
irq_steal_ticks() { awk '$1 == "cpu" { print $7 + $8 + $9; exit }' /proc/stat; }

record() {
	local t0 rc
	t0=$(irq_steal_ticks)
	"$OFFCPU" record "$@" 2>"$TESTDIR/record.err"
	rc=$?
	OFFCPU_TEST_STOLEN_NS=$(( ($(irq_steal_ticks) - t0) * 1000000000 / $(getconf CLK_TCK) ))
	export OFFCPU_TEST_STOLEN_NS
	[ -s "$TESTDIR/record.err" ] && sed 's/^/  record: /' "$TESTDIR/record.err" >&2
	return $rc
}

# Waits until a background recorder is attached: one of its fds is a BPF
# link (fdinfo "link_type:"), then a little more for the perf events.
wait_recording() { # pid
	local i
	for i in $(seq 200); do
		kill -0 "$1" 2>/dev/null || return 1
		grep -qs '^link_type:' /proc/"$1"/fdinfo/* && { sleep 0.3; return 0; }
		sleep 0.05
	done
	return 1
}

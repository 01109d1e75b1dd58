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

# What /proc/stat's IRQ, softirq and steal fields (all CPUs) add since its
# first line was $1, in ns, at most: each field is in whole ticks (10 ms), so
# their difference may leave out a tick each. schedstat's on-CPU time and a
# thread's CPU clock leave that time out, so a workload that takes its sleep
# as wall - on-CPU - run-queue counts as asleep what the hypervisor or an IRQ
# took while its thread was current (a recorder rightly counts it on a CPU):
# the checkers (OFFCPU_TEST_STOLEN_NS) let a thread's figure fall short by
# that much, up to its own time on a CPU (perfcheck.py's steal_bound). On a
# busy host the steal is most of it: 0.1-0.3 s in a 2 s run, and up to half
# of the fsync thread's time on a CPU.
stolen_since() {
	printf '%s\n%s\n' "$1" "$(head -1 /proc/stat)" | awk -v hz="$(getconf CLK_TCK)" '
		{ v[NR] = $7 + $8 + $9 } END { print int((v[2] - v[1] + 3) * 1e9 / hz) }'
}

# Runs offcpu record with the given arguments; its stderr is kept in
# $TESTDIR/record.err and shown on failure. Returns record's exit status.
# Exports OFFCPU_TEST_STOLEN_NS for the checkers (stolen_since).
record() {
	local t0 rc
	t0=$(head -1 /proc/stat)
	"$OFFCPU" record "$@" 2>"$TESTDIR/record.err"
	rc=$?
	OFFCPU_TEST_STOLEN_NS=$(stolen_since "$t0")
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

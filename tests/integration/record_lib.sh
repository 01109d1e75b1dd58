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
record() {
	"$OFFCPU" record "$@" 2>"$TESTDIR/record.err"
	local rc=$?
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

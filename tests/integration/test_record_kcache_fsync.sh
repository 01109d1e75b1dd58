#!/bin/bash
# The kernel stack cache on fsync (issue 12, check 2): Debian's sqlite3 runs
# 300 autocommit INSERTs with synchronous=FULL on a disk file system, each
# waiting in fdatasync at several points of one syscall (pages, buffers,
# the inode, the disk's flush). Each run is recorded at once by `offcpu
# record --off-cpu-thresh 0` (every interval a direct sample) and, around
# it, by `perf record -a -e sched:sched_switch -g` filtered on sqlite3's
# switch-outs (the kernel's own callchain at each), so both see the same
# intervals (two runs, one per recorder, blocked in different places:
# fsync_buffers_list 4 times in one, 159 in the next, on a shared disk),
# three runs in a row: in each, the intervals through
# folio_wait_writeback, fsync_buffers_list, sync_inode_metadata and
# blkdev_issue_flush within 1 % of perf's (the same in 9 runs of 9), and at most 1 % of the checked
# cache hits differing from a walk (fsync_check.py).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
command -v sqlite3 >/dev/null || skip "sqlite3 not installed (scripts/deps.sh installs it)"

# perf's sched_switch tracepoint needs tracefs
tracing=/sys/kernel/tracing
mounted=
if [ ! -d $tracing/events/sched ]; then
	mount -t tracefs nodev $tracing 2>/dev/null && mounted=1
	[ -d $tracing/events/sched ] || skip "tracefs is not mounted and cannot be ($tracing): perf cannot record sched:sched_switch"
fi
disk_dir # fsync does nothing on tmpfs
fs=$(stat -f -c %T "$DISK")
trap '[ -n "$mounted" ] && umount $tracing; rm -rf "$TESTDIR" "$DISK"' EXIT

{
	echo "PRAGMA journal_mode=DELETE;"
	echo "PRAGMA synchronous=FULL;"
	echo "CREATE TABLE t(a INTEGER, b TEXT);"
	for i in $(seq 300); do echo "INSERT INTO t VALUES($i, 'row $i');"; done
} >"$TESTDIR/ins.sql"

cd "$DISK"
measure "sqlite3 database in $DISK ($fs)"
rc=0
for run in 1 2 3; do
	measure "--- run $run"
	rm -f t.db t.db-journal
	perf record -q -a -g -e sched:sched_switch --filter 'prev_comm == "sqlite3"' -o "$TESTDIR/ref.data" -- \
		"$OFFCPU" record -v -o "$TESTDIR/off.data" --off-cpu-thresh 0 -- sqlite3 t.db ".read $TESTDIR/ins.sql" \
		>/dev/null 2>"$TESTDIR/record.err" ||
		{ cat "$TESTDIR/record.err"; fail "perf record -a -e sched:sched_switch around offcpu record -- sqlite3 exited $?"; }
	sed 's/^/  record: /' "$TESTDIR/record.err" >&2
	"$PY" "$HERE/fsync_check.py" "$TESTDIR/off.data" "$TESTDIR/ref.data" "$TESTDIR/record.err"
	case $? in
	0) ;;
	77) exit 77 ;;
	*) rc=1 ;;
	esac
done
exit $rc

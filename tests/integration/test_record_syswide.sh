#!/bin/bash
# issue 2, check 4: `offcpu record -a` while `perf bench sched messaging`
# runs (400 processes passing messages over pipes): the file holds off-CPU
# and CPU samples of comm sched-messaging, and record prints its drop
# counters at the end (each stated; non-zero ones are reported here). The
# default report's first 30 lines name blocking functions (those perf
# script shows below the scheduler's frames), none of the frames every
# system call has.
# Record is stopped with SIGINT, as a user would with Ctrl-C.
# Then a fork storm recorded with -a: every sample's thread has a name.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
"$OFFCPU" record -a -o sys.data 2>record.err &
rpid=$!
wait_recording "$rpid" || { cat record.err; fail "record -a did not start"; }
perf bench sched messaging -l 200 >bench.out 2>&1 || fail "perf bench sched messaging failed"
measure "perf bench sched messaging -l 200: $(grep -i 'total time' bench.out | sed 's/^ *//')"
kill -INT "$rpid"
wait "$rpid"
rc=$?
sed 's/^/  record: /' record.err
[ "$rc" = 0 ] || fail "record -a ended by SIGINT exited $rc (expected 0)"

# Drop counters: every line of record's summary that names drops or losses.
drops=$(grep -iE 'drop|lost' record.err)
[ -n "$drops" ] || fail "record printed no drop counters on stderr"
while IFS= read -r l; do measure "record: $l"; done <<<"$drops"
lost=$(perf report -i sys.data --stdio 2>/dev/null | grep -m1 'Total Lost Samples')
measure "perf report: ${lost#\# }"
CHECK comm sys.data sched-messaging || exit 1
# the default report's first screen names where threads blocked
CHECK firstscreen "$OFFCPU" sys.data

# A fork storm (two loops of /bin/true: about a thousand processes a
# second, each living a millisecond or two), recorded system-wide three
# times: every sample's thread has a name in perf script (none ':PID',
# perf's name for a thread with no COMM or FORK), and the file says none
# was left unnamed (threads.unnamed); threads.named_late counts those the
# recorder named from /proc or its start's pass, having no record.
for j in 1 2; do (while :; do /bin/true; done) & done
storm=$(jobs -p | tr '\n' ' ')
trap 'kill $storm 2>/dev/null; [ -n "${KEEP_TESTDIR:-}" ] || rm -rf "$TESTDIR"' EXIT
for i in 1 2 3; do
	"$OFFCPU" record -a -q -o storm$i.data -d 1 2>storm.err || { cat storm.err; fail "record -a (fork storm) exited $?"; }
	perf script -i storm$i.data -F comm,pid,tid,event 2>/dev/null >storm.txt
	n=$(wc -l <storm.txt)
	bad=$(awk '$1 ~ /^:[0-9]+$/' storm.txt | head -3)
	named=$("$OFFCPU" report --header -i storm$i.data 2>/dev/null | awk '/threads.named_late:/ { print $NF }')
	unnamed=$("$OFFCPU" report --header -i storm$i.data 2>/dev/null | awk '/threads.unnamed:/ { print $NF }')
	measure "fork storm $i: $n samples, threads named late $named, unnamed $unnamed"
	[ "$n" -gt 0 ] || fail "fork storm $i: no samples"
	[ -z "$bad" ] || fail "fork storm $i: samples of unnamed threads: $bad"
	[ "$unnamed" = 0 ] || fail "fork storm $i: threads.unnamed $unnamed"
done
kill $storm 2>/dev/null

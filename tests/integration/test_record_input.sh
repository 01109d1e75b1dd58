#!/bin/bash
# What `offcpu record` makes of perf record's habits and of bad input, each
# checked by its effect:
#  - habits it does not take (--switch-output, -e TRACEPOINT, --call-graph
#    lbr): one line with what to do instead, exit 2, no file;
#  - -d and a trailing duration refuse nan, inf and huge values; -c 0 and
#    -c with -F are usage errors;
#  - habits it takes: --call-graph dwarf,16384 (the size said unused),
#    -F max (the kernel's maximum rate, lowered to 4000 Hz for the run, in
#    the file's attr), --off-cpu, and
#    -c N (every CPU sample's period is N ns: perf script shows it);
#  - the unwinder's loader failing (OFFCPU_TEST_UNWIND_FAIL): said, exit 1,
#    the file whole and readable, its header naming the error;
#  - FILE.old never moves or replaces another user's file: the output, or
#    the FILE.old it would become, owned by uid 65534 is refused, both left
#    as they were.
#  - --nice N: the recorder's nice value (/proc/PID/stat) from the
#    command's fork on, -20 by default, the command's the caller's; --nice 0
#    leaves the recorder as started (under nice -n 3); 20 is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }

# refused NAME RC PATTERN LINES -- record args: exit RC, LINES lines on
# stderr, the first "offcpu record: ..." matching PATTERN, no u.data
refused() {
	local name=$1 want=$2 pat=$3 nl=$4 rc lines first; shift 5
	"$OFFCPU" record -o u.data "$@" >stdout.txt 2>stderr.txt
	rc=$?
	lines=$(wc -l <stderr.txt)
	first=$(head -1 stderr.txt)
	measure "$name: exit $rc, $lines line(s): \"$first\""
	[ "$rc" = "$want" ] || bad "$name: exit $rc, expected $want"
	[ "$lines" = "$nl" ] || bad "$name: $lines lines on stderr, expected $nl"
	case $first in "offcpu record: "*) ;; *) bad "$name: the message does not start with 'offcpu record: '" ;; esac
	grep -qE -- "$pat" stderr.txt || bad "$name: the message does not match /$pat/"
	[ ! -e u.data ] || bad "$name: u.data written"
	rm -f u.data
}

# habits offcpu does not take: one line, exit 2
refused "--switch-output" 2 'one recording is one file' 1 -- --switch-output -- true
refused "--switch-output=signal" 2 'one recording is one file' 1 -- --switch-output=signal -- true
refused "-e sched:sched_switch" 2 'records every switch itself.*offcpu-time' 1 -- -e sched:sched_switch -a -d 1
refused "-e sched:sched_wakeup" 2 'use --wakeups' 1 -- -e sched:sched_wakeup -- true
refused "-e syscalls:sys_enter_read" 2 'use perf record' 1 -- -e syscalls:sys_enter_read -- true
refused "--call-graph lbr" 2 'dwarf.*fp' 1 -- --call-graph lbr -- true
# bad values: the error and two lines of usage, exit 2
for d in nan inf -inf 1e300 1e10 0 -1; do
	refused "-d $d" 2 "invalid value '$d' for -d" 3 -- -d "$d" -- true
done
refused "-a 1e300" 2 "invalid value '1e300' for the duration" 3 -- -a 1e300
refused "-c 0" 2 "invalid value '0' for -c" 3 -- -c 0 -- true
refused "-c 1000000 -F 99" 2 '-c and -F' 3 -- -c 1000000 -F 99 -- true

# the CPU-sampling event's attr as perf reads it: "PERIOD_OR_FREQ FREQ_FLAG"
cpu_attr() {
	perf evlist -v -i "$1" 2>/dev/null | grep '^cpu-clock' | awk '{
		p = $0; sub(/.*sample_freq }: /, "", p); sub(/,.*/, "", p)
		printf "%s %d", p, / freq: 1,/ }'
}

# --call-graph dwarf,16384 -F max --off-cpu: accepted, each said once. The
# kernel's maximum is lowered to 4000 Hz for the run and put back: at this
# VM's 100000 Hz a recording of `sleep 0.2` took 24 s to 78 s (each sample
# costs the sampled task some 10 us of its CPU clock, so sleep's exec alone
# was sampled 30 000 to 97 000 times), and -F max only has to read the limit.
was_max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
echo 4000 >/proc/sys/kernel/perf_event_max_sample_rate
record -o h.data --call-graph dwarf,16384 -F max --off-cpu -- sleep 0.2 ||
	bad "record --call-graph dwarf,16384 -F max --off-cpu exited $?"
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
echo "$was_max" >/proc/sys/kernel/perf_event_max_sample_rate
grep -q 'dwarf,16384: the size is unused' record.err || bad "--call-graph dwarf,16384: the size not said unused"
said=$(sed -n 's/.*-F max: \([0-9]*\) Hz.*/\1/p' record.err)
attr=$(cpu_attr h.data)
measure "-F max: the kernel's maximum $max Hz, said ${said:-nothing}; the file's cpu-clock: sample_freq and freq flag '$attr'"
[ "$said" = "$max" ] && [ "$attr" = "$max 1" ] || bad "-F max: said ${said:-nothing}, attr '$attr', expected $max Hz"
CHECK select h.data has-event=offcpu-time comms=sleep || bad "--call-graph dwarf,16384: its samples"

# -c 2000000: a CPU sample every 2 ms of CPU time, each of period 2000000
BUSY=(sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done')
record -o c.data -c 2000000 -- "${BUSY[@]}" || bad "record -c 2000000 exited $?"
attr=$(cpu_attr c.data)
measure "-c 2000000: the file's cpu-clock: sample_period and freq flag '$attr'"
[ "$attr" = "2000000 0" ] || bad "-c 2000000: attr '$attr', expected a period of 2000000"
periods=$(perf script -i c.data -F period,event 2>/dev/null | awk '/cpu-clock/ {print $1}' | sort | uniq -c)
measure "-c 2000000: cpu-clock periods (count period): $(echo $periods)"
[ -n "$periods" ] && [ "$(echo "$periods" | wc -l)" = 1 ] && [ "$(echo $periods | awk '{print $2}')" = 2000000 ] ||
	bad "-c 2000000: cpu-clock periods are not all 2000000"

# the unwinder's loader fails: said at once and at the end, exit 1, the file whole
OFFCPU_TEST_UNWIND_FAIL=1 "$OFFCPU" record -o f.data -- sleep 0.3 2>f.err
rc=$?
measure "failing loader: exit $rc; $(grep -c "unwinder's loader failed" f.err) lines say so: \"$(grep -m1 "loader failed" f.err)\""
[ "$rc" = 1 ] || bad "failing loader: exit $rc, expected 1"
[ "$(grep -c "unwinder's loader failed" f.err)" = 2 ] || bad "failing loader: not said twice (at the failure, at the end)"
grep -q 'recording is incomplete' f.err || bad "failing loader: the end does not say the recording is incomplete"
err=$("$OFFCPU" report -i f.data --header 2>/dev/null | sed -n 's/^# offcpu unwind.loader_error: \([0-9]*\).*/\1/p')
[ "$err" = 5 ] || bad "failing loader: the header's unwind.loader_error is '${err:-missing}', expected 5 (EIO)"
CHECK select f.data has-event=offcpu-time comms=sleep || bad "failing loader: the file"

# FILE.old: another user's file is neither moved nor replaced
echo theirs >o.data
chown 65534 o.data
"$OFFCPU" record -o o.data -- true 2>o.err
rc=$?
measure "-o o.data owned by uid 65534: exit $rc, \"$(head -1 o.err)\""
[ "$rc" = 1 ] && grep -q 'belongs to uid 65534' o.err || bad "-o another user's file: exit $rc"
[ "$(cat o.data)" = theirs ] && [ ! -e o.data.old ] || bad "-o another user's file: it was moved or changed"
echo mine >p.data
echo theirs >p.data.old
chown 65534 p.data.old
"$OFFCPU" record -o p.data -- true 2>p.err
rc=$?
measure "-o p.data, p.data.old owned by uid 65534: exit $rc, \"$(head -1 p.err)\""
[ "$rc" = 1 ] && grep -q 'would replace p.data.old, which belongs to uid 65534' p.err || bad "-o over another user's FILE.old: exit $rc"
[ "$(cat p.data)" = mine ] && [ "$(cat p.data.old)" = theirs ] || bad "-o over another user's FILE.old: a file was moved or changed"

# --nice: the recorder's own priority; the command keeps the caller's
refused "--nice 20" 2 'expected a nice value, -20 to 19' 3 -- --nice 20 -- true
mine=$(cut -d' ' -f19 /proc/$$/stat)
# nice_of [ARGS]: the recorder's nice value and its command's, as the command reads them
nice_of() {
	# shellcheck disable=SC2016
	"$@" -q --call-graph fp --no-cpu -o n.data -- \
		sh -c 'sleep 0.3; cut -d" " -f19 /proc/$PPID/stat; cut -d" " -f19 /proc/$$/stat' 2>n.err |
		tr '\n' ' ' | sed 's/ $//'
}
for c in "default:-20 $mine" "--nice -7:-7 $mine" "nice -n 3, --nice 0:$((mine + 3)) $((mine + 3))"; do
	name=${c%%:*} want=${c#*:}
	case $name in
	default) got=$(nice_of "$OFFCPU" record) ;;
	--nice*) got=$(nice_of "$OFFCPU" record --nice -7) ;;
	*) got=$(nice_of nice -n 3 "$OFFCPU" record --nice 0) ;;
	esac
	measure "$name: recorder and command at nice '$got' (the test's own: $mine)"
	[ "$got" = "$want" ] || { bad "$name: recorder and command at nice '$got', expected '$want'"; cat n.err >&2; }
done

[ "$nfail" = 0 ] || fail "$nfail checks failed"

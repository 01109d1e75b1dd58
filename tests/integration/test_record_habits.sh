#!/bin/bash
# issue 15: BCC offcputime's and perf record's habits, each checked on real
# recordings with a known answer (samples read by Debian's perf script):
#  - -m 200000 on waitmix: only its waits of 300 and 600 ms remain (no 4 ms
#    nanosleep, no 80 ms pipe wait), every offcpu-time period >= 200 ms; the
#    summary and the file count the waits left out (>= the 105 certain ones);
#  - -M 50000 --off-cpu-thresh 0 (one sample per wait): every period <= 50 ms,
#    the 4 ms sleeps kept, the 80/300/600 ms waits left out (>= 9 certain);
#  - -k / -u with -a: samples of kernel threads only / of user threads only
#    (threads told apart by PF_KTHREAD in /proc/TID/stat);
#  - -U / -K: off-CPU callchains without kernel / user frames;
#  - a trailing duration: `record -p PID 2` records 2 s (of PID and of the
#    sleeps it forks: -p follows children, as perf's); `record -- CMD` and
#    `record CMD` still run CMD; `-p PID -- 5` is a usage error;
#  - -g is accepted; the summary is at most three lines, -v prints more.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix

cd "$TESTDIR"
disk_dir
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }
sel() { # what, file, conditions...
	local what=$1; shift
	measure "--- $what"
	CHECK select "$@" || bad "$what"
}
# The number in the summary's "N off-CPU waits left out" line, and the
# offcpu.filtered counter of the file (offcpu report's header).
left_out() { sed -n 's/.*: \([0-9]*\) off-CPU waits left out.*/\1/p' record.err; }
file_filtered() { "$OFFCPU" report -i "$1" --header 2>/dev/null | sed -n 's/^# offcpu offcpu.filtered: \([0-9]*\).*/\1/p'; }
summary_lines() { tr '\r' '\n' <record.err | grep -c '^\[ offcpu record'; }
WM=("$WORKLOADS/waitmix" -q -d "$DISK")

# -m: minimum block time
record -o m.data -m 200000 -- "${WM[@]}" || bad "record -m exited $?"
sel "-m 200000" m.data off-period-min=200000000 \
	no-func=wl_nanosleep_loop,wl_pipe_read,wl_pipe_write has-func=wl_mutex_wait,wl_mutex_hold,wl_vfork_wait
n=$(left_out) f=$(file_filtered m.data)
measure "-m 200000: summary says ${n:-nothing} waits left out, the file ${f:-nothing}; $(summary_lines) summary lines"
[ -n "$n" ] && [ "$n" -ge 105 ] || bad "-m: ${n:-no} waits left out, expected >= 105 (100 nanosleeps, 5 pipe-write sleeps)"
[ "$n" = "$f" ] || bad "-m: the summary says $n left out, the file's offcpu.filtered $f"
[ "$(summary_lines)" -le 3 ] || bad "-m: $(summary_lines) summary lines, expected 3 at most"

# -M: maximum block time, one sample per wait. (Not wl_vfork_wait: the
# vfork child runs on its parent's stack, and its short waits in the exec
# unwind through wl_vfork_wait's frame; the parent's 300 ms is bounded by
# off-period-max.)
record -o mm.data -v -M 50000 --off-cpu-thresh 0 -- "${WM[@]}" || bad "record -M exited $?"
sel "-M 50000 --off-cpu-thresh 0" mm.data off-period-max=50000000 has-func=wl_nanosleep_loop \
	no-func=wl_mutex_wait,wl_mutex_hold,wl_pipe_write
n=$(left_out) f=$(file_filtered mm.data)
measure "-M 50000: summary says ${n:-nothing} waits left out, the file ${f:-nothing}; -v: $(summary_lines) summary lines"
[ -n "$n" ] && [ "$n" -ge 9 ] || bad "-M: ${n:-no} waits left out, expected >= 9 (5 pipe-write sleeps, mutex hold and wait, vfork parent and child)"
[ "$n" = "$f" ] || bad "-M: the summary says $n left out, the file's offcpu.filtered $f"
grep -q 'kernel stacks:' record.err || bad "-v: no 'kernel stacks:' line in the summary"
[ "$(summary_lines)" -gt 3 ] || bad "-v: only $(summary_lines) summary lines"

# -U / -K: one kind of stack
record -o su.data -U -- "${WM[@]}" || bad "record -U exited $?"
sel "-U" su.data no-kernel-frames has-func=wl_mutex_wait
record -o sk.data -K -- "${WM[@]}" || bad "record -K exited $?"
sel "-K" sk.data no-user-frames

# -k / -u: kernel threads only, user threads only (-a with a trailing duration)
kinds() { # appends kernel threads' tids to $1, user threads' to $2
	"$PY" - "$1" "$2" <<'EOF'
import glob, sys
k, u = open(sys.argv[1], "a"), open(sys.argv[2], "a")
for p in glob.glob("/proc/[0-9]*/task/[0-9]*/stat"):
    try:
        text = open(p).read()
    except OSError:
        continue
    flags = int(text[text.rindex(")") + 2:].split()[6])  # field 9
    (k if flags & 0x00200000 else u).write(text.split(" ", 1)[0] + "\n")
EOF
}
bash -c 'while :; do sleep 0.05; done' &
loop=$!
trap 'kill $loop 2>/dev/null; rm -rf "$TESTDIR" "$DISK"' EXIT
kinds kthreads users
record -o k.data -a -k 1 || bad "record -a -k exited $?"
record -o u.data -a -u 1 || bad "record -a -u exited $?"
kinds kthreads users # and those started meanwhile
sel "-a -k" k.data not-tids=users off-some-tids=kthreads
sel "-a -u" u.data not-tids=kthreads off-some-tids=users

# a trailing duration
t0=$(mono_ns)
record -o d.data -p "$loop" 2 || bad "record -p PID 2 exited $?"
t1=$(mono_ns)
win=$("$OFFCPU" report -i d.data --header 2>/dev/null | awk '/^# offcpu record.start_ns:/ {a = $4} /^# offcpu record.stop_ns:/ {b = $4} END {if (a && b) printf "%d", (b - a) / 1000000}')
measure "record -p PID 2: ran $(((t1 - t0) / 1000000)) ms, the file's window ${win:-?} ms"
[ -n "$win" ] && [ "$win" -ge 1950 ] && [ "$win" -le 2300 ] || bad "record -p PID 2: window ${win:-unknown} ms, expected 2000"
# the loop and the sleeps it forks (followed, as perf record -p follows them)
echo "$loop" >loop.tid
sel "-p PID 2" d.data comms=bash,sleep some-tids=loop.tid has-event=offcpu-time
kill $loop
"$OFFCPU" record -o x.data -p 1 -- 5 2>x.err
rc=$?
measure "record -p 1 -- 5: exit $rc, \"$(head -1 x.err)\""
[ "$rc" = 2 ] || bad "record -p 1 -- 5: exit $rc, expected 2 (a COMMAND with -p)"
for form in "--" ""; do
	# shellcheck disable=SC2086
	record -o c.data $form sleep 0.3 || bad "record $form sleep 0.3 exited $?"
	sel "record ${form:+-- }sleep 0.3" c.data comms=sleep has-event=offcpu-time
done

# -g: accepted, call graphs as always
record -o g.data -g -- sleep 0.3 || bad "record -g exited $?"
grep -q usage record.err && bad "record -g printed the usage"
sel "-g" g.data has-event=offcpu-time callchains

[ "$nfail" = 0 ] || fail "$nfail checks failed"

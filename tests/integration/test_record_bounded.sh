#!/bin/bash
# issue 2, check 5: a 60 s system-wide recording while two threads ping-pong
# over pipes (perf bench sched pipe, about 10^5 context switches per second
# here): offcpu's resident memory and its BPF maps stay bounded. RSS (its
# anonymous part: the BPF maps mapped into offcpu, the ring buffer and the
# unwinder's row array, fill as used and are the maps' memory) is read at
# 10 s and just before the end, peak RSS (VmHWM) at the end; the BPF
# maps are those whose fds offcpu holds (/proc/PID/fdinfo: memlock, and the
# entries of hash maps counted with bpftool). The bound: RSS grows by at
# most $RSS_GROWTH_MB between 10 s and 60 s; map memory (the sum maps
# allocate entries as used, and are drained every second) grows by at most
# $MAP_GROWTH_KB between 10 s and 60 s, whatever the switch rate; the DWARF
# unwinder's (unw_*: a table per followed process) by at most 16 KiB a
# process alive at the end.
# User stacks by frame pointers (--call-graph fp): with the DWARF default a
# whole-machine recorder builds an unwind table for every program anyone
# starts on the machine, whenever it starts, and its loader's heap follows
# them, not the switch rate (a 22 s -a recording while g++, python3 and gdb
# started: 1.5 to 8 MB in use, up to 20 MB more kept free in the loader's
# arena; in 2 of 2 suite runs on a shared machine that grew RSS by 17 MB
# after the 10 s mark). bench/soak.sh measures the DWARF default's memory
# on a quiet machine.
# sanitizers: skip (it measures offcpu's resident memory, which ASan's shadow inflates)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
DURATION=${DURATION:-60}
RSS_GROWTH_MB=${RSS_GROWTH_MB:-8}
MAP_GROWTH_KB=${MAP_GROWTH_KB:-1024}

cd "$TESTDIR"
# The load (threads, so that one kill stops it all) runs for the whole
# recording and is stopped after it.
perf bench sched pipe -T -l 2000000000 >/dev/null 2>&1 &
load=$!
trap 'kill $load 2>/dev/null; rm -rf "$TESTDIR"' EXIT
ctx0=$(awk '/^ctxt/ {print $2}' /proc/stat)
"$OFFCPU" record -a --call-graph fp -d "$DURATION" -o long.data 2>record.err &
rpid=$!
wait_recording "$rpid" || { cat record.err; fail "record did not start"; }
start=$(mono_ns)

# Memory of record's BPF maps: "total_memlock entries(hash maps) nmaps
# unwinder_memlock". The DWARF unwinder's maps (unw_*) apart: their
# per-process tables follow the number of processes, not the switch rate.
maps() {
	local f id mem total=0 n=0 entries=0 unw=0
	for f in /proc/"$rpid"/fdinfo/*; do
		grep -qs '^map_type:' "$f" || continue
		id=$(awk '/^map_id:/ {print $2}' "$f")
		mem=$(awk '/^memlock:/ {print $2}' "$f")
		n=$((n + 1))
		if bpftool map show id "$id" 2>/dev/null | grep -q ' name unw_'; then
			unw=$((unw + mem))
			continue
		fi
		total=$((total + mem))
		if grep -qE '^map_type:\s+(1|5|9|10)$' "$f"; then # (percpu/lru) hash
			entries=$((entries + $(bpftool map dump id "$id" -j 2>/dev/null |
				"$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0)))
		fi
	done
	echo "$total $entries $n $unw"
}
# RSS without the BPF maps' own mappings (the ring buffer, the unwinder's
# row array: their memory is the maps', bounded by their size and counted
# below): the anonymous part, the heap that could leak. "anon file shmem".
rss() { awk '/^RssAnon:/ {a = $2} /^RssFile:/ {f = $2} /^RssShmem:/ {s = $2} END {print a, f, s}' /proc/"$rpid"/status; }
at() { # sleeps until $1 seconds after start
	"$PY" -c 'import sys, time
left = int(sys.argv[2]) + int(sys.argv[1]) * 10**9 - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
time.sleep(max(left, 0) / 1e9)' "$1" "$start"
}

at 10
read -r rss10 file10 shm10 <<<"$(rss)"; read -r mem10 ent10 n10 unw10 <<<"$(maps)"
at $((DURATION - 3))
# peak RSS first: the maps' reading (bpftool) can outlast the recording
read -r rssend fileend shmend <<<"$(rss)"; hwm=$(awk '/^VmHWM:/ {print $2}' /proc/"$rpid"/status)
read -r memend entend nend unwend <<<"$(maps)"
nproc_end=$(ls -d /proc/[0-9]* | wc -l)
wait "$rpid"
rc=$?
ctx1=$(awk '/^ctxt/ {print $2}' /proc/stat)
kill "$load" 2>/dev/null
sed 's/^/  record: /' record.err
[ "$rc" = 0 ] || fail "record -a -d $DURATION exited $rc"
[ -n "$rss10" ] && [ -n "$rssend" ] || fail "could not read record's RSS"

measure "context switches: $(( (ctx1 - ctx0) / DURATION )) per second over ${DURATION} s"
measure "offcpu RSS: anonymous ${rss10} kB at 10 s, ${rssend} kB at $((DURATION - 3)) s; mapped files and BPF maps ${file10} + ${shm10} kB, ${fileend} + ${shmend} kB; peak RSS ${hwm} kB"
measure "BPF maps: $n10 maps, ${mem10} B memlock, ${ent10} hash entries at 10 s; ${memend} B, ${entend} entries at $((DURATION - 3)) s"
measure "DWARF unwinder's maps: ${unw10} B at 10 s, ${unwend} B at $((DURATION - 3)) s ($nproc_end processes on the machine)"
measure "file: $(stat -c %s long.data) bytes"
while IFS= read -r l; do measure "record: $l"; done < <(grep -iE 'drop|lost|captured' record.err)

[ "$n10" -gt 0 ] || fail "no BPF map fds found in /proc/$rpid/fdinfo"
[ $((rssend - rss10)) -le $((RSS_GROWTH_MB * 1024)) ] ||
	fail "anonymous RSS grew by $((rssend - rss10)) kB between 10 s and the end (bound ${RSS_GROWTH_MB} MB)"
[ "$memend" -le $((mem10 + MAP_GROWTH_KB * 1024)) ] ||
	fail "BPF map memory grew from $mem10 to $memend bytes (bound ${MAP_GROWTH_KB} kB)"
# a followed process's table is at most 8 KiB (+ its hash entry and exec count)
[ "$unwend" -le $((unw10 + nproc_end * 16384)) ] ||
	fail "the unwinder's maps grew from $unw10 to $unwend bytes (bound 16 KiB a process, $nproc_end processes)"
perf report -i long.data --stdio --sort comm >report.out 2>report.err ||
	{ cat report.err; fail "perf report cannot read the 60 s file"; }
measure "perf report: $(grep -m1 'Total Lost' report.out | sed 's/^# //')"
exit 0

#!/bin/bash
# offcpu report as a first reader sees it, on one recording of waitmix
# (tests/workloads/waitmix.c: threads blocked in known functions) with
# --sched-delay:
#  - the default report opens on the off-CPU section, after a header whose
#    counters are one line ("nothing lost"); its entries are self (no
#    Children column: --children gives perf's), the top ones the blocking
#    functions (do_nanosleep, anon_pipe_read, futex_*), never a scheduler
#    frame; --keep-sched-frames gives them back (self __schedule);
#  - the scheduler's frames are left out of folded, flamegraph and pprof
#    stacks alike (off-CPU and sched-delay), kept by script (raw callchains);
#  - --folded without --event folds offcpu-time; --max-stack N;
#  - perf's -n (the Samples column equals perf report -n's), -q, -v,
#    --header, --header-only;
#  - --threads (-T alike) sorted by off-CPU time, --limit, --by comm, no
#    share above 100 %; --sort S, D, on, runq and wall rank by that column;
#    report's keys with -T, -T's without it, are one-line errors;
#  - perf's habits on the read side: -g folded is a one-line error that says
#    --folded; --no-demangle shows a C++ name as the binary has it (a small
#    C++ program recorded by perf).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix

disk_dir
f=$TESTDIR/wm.data
record -o "$f" --sched-delay -- "$WORKLOADS/waitmix" -q -d "$DISK" -j "$TESTDIR/wm.json" ||
	fail "offcpu record -- waitmix exited $?"
R() { "$OFFCPU" report -i "$f" "$@" 2>"$TESTDIR/rep.err" || fail "offcpu report $* exited $?: $(cat "$TESTDIR/rep.err")"; }
SCHED='^(__schedule|__schedule_loop|schedule|schedule_timeout|io_schedule|io_schedule_timeout|schedule_hrtimeout_range|schedule_hrtimeout_range_clock|schedule_preempt_disabled|preempt_schedule[a-z_]*|__cond_resched)(\.[a-z]+\.[0-9]+)?$'

# 1. the default report's first lines
R >"$TESTDIR/default.txt"
measure "default report, first lines:"
head -12 "$TESTDIR/default.txt" | sed 's/^/#   | /'
sed -n 1p "$TESTDIR/default.txt" | grep -q '^# offcpu report of ' || fail "line 1 is not the report's title"
grep -c '^# offcpu ' "$TESTDIR/default.txt" | grep -qx 1 || fail "the header still lists counters by default"
# one line says what was lost: "nothing lost", or each loss (a sum-map
# insert can fail under ASan's slowness: then the line names it)
head -6 "$TESTDIR/default.txt" | grep -Eqx '# (nothing lost|lost: .*[0-9].*)' ||
	fail "no '# nothing lost' or '# lost: ...' line in the header"
first=$(grep -m1 '^# Samples:' "$TESTDIR/default.txt")
[[ $first == *"of event 'offcpu-time'" ]] || fail "the first section is not off-CPU: $first"
n=$(grep -n -m1 '^# Samples:' "$TESTDIR/default.txt" | cut -d: -f1)
[ "$n" -le 8 ] || fail "the off-CPU section starts at line $n"
grep '^# Samples:' "$TESTDIR/default.txt" | sed 's/^/#   sections: /'
grep -m1 '^# Overhead ' "$TESTDIR/default.txt" | grep -q Children &&
	fail "the default report has a Children column"
grep -q '^# Overhead ' "$TESTDIR/default.txt" || fail "the default report has no Overhead (self) column"
R --children -g none >"$TESTDIR/children.txt"
grep -q '^# Children      Self' "$TESTDIR/children.txt" || fail "--children: no Children and Self columns"
# its top self entries: rows of the off-CPU section, most first
awk '/^# Samples:/ { s++ } s == 1 && /^ +[0-9.]+%/ && $1 != "0.00%" { print $1, $NF }' \
	"$TESTDIR/default.txt" | sort -t% -k1 -g -r | head -6 >"$TESTDIR/self"
measure "top self entries of off-CPU: $(awk '{ printf "%s %s; ", $1, $2 }' "$TESTDIR/self")"
[ -s "$TESTDIR/self" ] || fail "no self entry in the off-CPU section"
awk '{ print $2 }' "$TESTDIR/self" | grep -Eq "$SCHED" && fail "a scheduler frame is a top self entry"
for want in do_nanosleep anon_pipe_read 'futex_'; do
	grep -q " $want" "$TESTDIR/self" || fail "no top self entry $want"
done

# 2. every aggregated output, with and without the scheduler's frames
self_syms() { # report args: the self symbols of the off-CPU and sched-delay sections
	R --no-children --sort sym -g none "$@" |
		awk '/^# Samples:/ { on = /offcpu-time|sched-delay/ } on && /^ +[0-9.]+%/ { print $(NF - 1), $NF }' | sort -u
}
# (a stack without kernel frames, a new thread's first wait for a CPU, has a user self)
self_syms >"$TESTDIR/self_all"
grep '^\[k\]' "$TESTDIR/self_all" | cut -c5- | grep -Eq "$SCHED" &&
	fail "scheduler frames as self: $(grep -E " ${SCHED#^}" "$TESTDIR/self_all" | head -3)"
self_syms --keep-sched-frames >"$TESTDIR/self_kept"
[ "$(grep '^\[k\]' "$TESTDIR/self_kept")" = "[k] __schedule" ] ||
	fail "--keep-sched-frames: kernel self is $(grep '^\[k\]' "$TESTDIR/self_kept" | head -3 | tr '\n' ' '), not __schedule alone"
measure "self of off-CPU and sched-delay: $(grep -c '^\[k\]' "$TESTDIR/self_all") kernel functions ($(grep '^\[k\]' "$TESTDIR/self_all" | cut -c5- | tr '\n' ' ')); with --keep-sched-frames: __schedule"
for ev in offcpu-time sched-delay; do
	R --folded -e $ev >"$TESTDIR/$ev.folded"
	R --folded -e $ev --keep-sched-frames >"$TESTDIR/$ev.kept"
	[ -s "$TESTDIR/$ev.folded" ] || fail "no $ev stack"
	leaf=$(awk '{ n = split($1, a, ";"); sub(/_\[k\]$/, "", a[n]); print a[n] }' "$TESTDIR/$ev.folded" | grep -Ec "$SCHED")
	[ "$leaf" = 0 ] || fail "$ev: $leaf folded stacks end in a scheduler frame"
	kept=$(awk '{ n = split($1, a, ";"); print a[n] }' "$TESTDIR/$ev.kept" | grep -vc '^__schedule_\[k\]$')
	sum() { awk '{ s += $NF } END { print s }' "$1"; }
	[ "$(sum "$TESTDIR/$ev.folded")" = "$(sum "$TESTDIR/$ev.kept")" ] || fail "$ev: the sums differ with --keep-sched-frames"
	measure "$ev folded: $(wc -l <"$TESTDIR/$ev.folded") stacks without the scheduler's frames, $(wc -l <"$TESTDIR/$ev.kept") with ($kept not ending in __schedule); $(sum "$TESTDIR/$ev.folded") ns both"
done
"$OFFCPU" flamegraph -i "$f" -o "$TESTDIR/fg.svg" 2>/dev/null || fail "flamegraph failed"
"$OFFCPU" flamegraph -i "$f" -o "$TESTDIR/fgk.svg" --keep-sched-frames 2>/dev/null || fail "flamegraph --keep-sched-frames failed"
grep -q '>__schedule<\|<title>__schedule ' "$TESTDIR/fg.svg" && fail "flamegraph: __schedule drawn by default"
grep -q '__schedule' "$TESTDIR/fgk.svg" || fail "flamegraph --keep-sched-frames: no __schedule"
grep -q 'do_nanosleep' "$TESTDIR/fg.svg" || fail "flamegraph: no do_nanosleep"
"$OFFCPU" report -i "$f" --pprof "$TESTDIR/p.pb.gz" 2>/dev/null || fail "report --pprof failed"
"$OFFCPU" report -i "$f" --pprof "$TESTDIR/pk.pb.gz" --keep-sched-frames 2>/dev/null || fail "report --pprof --keep-sched-frames failed"
if command -v go >/dev/null; then
	# go tool pprof's flat column of off-CPU time: the blocking points, or __schedule when kept
	flat() { go tool pprof -sample_index=off_cpu -top "$1" 2>/dev/null | awk 'p && $1 != "0" { print $NF } /flat%/ { p = 1 }'; }
	flat "$TESTDIR/p.pb.gz" >"$TESTDIR/p.flat"
	[ -s "$TESTDIR/p.flat" ] || fail "go tool pprof read nothing"
	grep -Eq "$SCHED" "$TESTDIR/p.flat" && fail "pprof: a scheduler frame has flat off-CPU time"
	[ "$(flat "$TESTDIR/pk.pb.gz" | sort -u)" = __schedule ] || fail "pprof --keep-sched-frames: flat is not __schedule alone"
	measure "go tool pprof -top -sample_index=off_cpu: flat $(head -4 "$TESTDIR/p.flat" | tr '\n' ' ')"
else
	measure "go not installed: pprof not read back"
fi
"$OFFCPU" script -i "$f" >"$TESTDIR/script.txt" 2>/dev/null || fail "script failed"
grep -q ' __schedule+0x' "$TESTDIR/script.txt" || fail "script leaves __schedule out: it prints callchains as recorded"
measure "flamegraph and pprof without __schedule (with it under --keep-sched-frames); script keeps it"

# 3. --folded folds off-CPU time; --max-stack
R --folded >"$TESTDIR/default.folded"
cmp -s "$TESTDIR/default.folded" "$TESTDIR/offcpu-time.folded" || fail "--folded without --event is not offcpu-time's"
R --folded --max-stack 3 >"$TESTDIR/max3.folded"
awk -F';' 'NF > 4 { exit 1 }' "$TESTDIR/max3.folded" || fail "--max-stack 3: a stack with more than 3 frames"
awk '{ n = split($1, a, ";"); print a[n] }' "$TESTDIR/max3.folded" | sort -u >"$TESTDIR/leaf3"
awk '{ n = split($1, a, ";"); print a[n] }' "$TESTDIR/offcpu-time.folded" | sort -u >"$TESTDIR/leaf"
cmp -s "$TESTDIR/leaf3" "$TESTDIR/leaf" || fail "--max-stack 3 changed the innermost frames"
"$OFFCPU" script -i "$f" --max-stack 2 2>/dev/null | awk '/^\t/ { n++; if (n > 2) exit 1; next } { n = 0 }' ||
	fail "script --max-stack 2: more than 2 frames"
measure "--folded = --folded -e offcpu-time; --max-stack 3: $(wc -l <"$TESTDIR/max3.folded") stacks of 3 frames at most, same innermost frames"

# 4. perf's options
R -n --no-children --sort comm -g none -e cpu-clock |
	awk '/^ +[0-9.]+%/ { print $3, $2 }' | sort >"$TESTDIR/n.ours"
perf report -i "$f" --stdio -n --no-children --sort comm -g none 2>/dev/null |
	awk '/^#/ { ev = ($0 ~ /of event .cpu-clock/) ? 1 : (/of event/ ? 0 : ev) } ev && /^ +[0-9.]+%/ { print $3, $2 }' |
	sort >"$TESTDIR/n.perf"
[ -s "$TESTDIR/n.ours" ] && cmp -s "$TESTDIR/n.ours" "$TESTDIR/n.perf" ||
	fail "-n: Samples per comm differ from perf report -n: $(diff "$TESTDIR/n.ours" "$TESTDIR/n.perf" | head -4)"
measure "-n: cpu-clock samples per comm as perf report -n: $(tr '\n' ' ' <"$TESTDIR/n.ours")"
R -q --no-children -g none >"$TESTDIR/q.txt"
grep -q '^#' "$TESTDIR/q.txt" && fail "-q: a # line"
[ "$(grep -v '^#' "$TESTDIR/default.txt" | grep -c '%')" -ge "$(grep -c '%' "$TESTDIR/q.txt")" ] && [ -s "$TESTDIR/q.txt" ] ||
	fail "-q: no rows"
diff <(R --no-children -g none | grep -v '^#' | grep .) <(grep . "$TESTDIR/q.txt") >/dev/null ||
	fail "-q: rows differ from the report's"
R --header >"$TESTDIR/h.txt"
grep -q '^# offcpu drop.ringbuf_full: 0$' "$TESTDIR/h.txt" || fail "--header: no drop counters"
grep -q '^# Total Lost Samples: 0$' "$TESTDIR/h.txt" || fail "--header: no Total Lost Samples"
R --header-only >"$TESTDIR/ho.txt"
grep -q '^# Samples' "$TESTDIR/ho.txt" && fail "--header-only: a section"
grep -q '^# offcpu kstack.walked' "$TESTDIR/ho.txt" || fail "--header-only: no counters"
grep -vq '^#' "$TESTDIR/ho.txt" && fail "--header-only: a line that is no header"
R -v --no-children --sort dso -g none -e cpu-clock >"$TESTDIR/v.txt"
grep -q '^# offcpu kstack.walked' "$TESTDIR/v.txt" || fail "-v: not the whole header"
grep -Eq "  $WORKLOADS/waitmix\$" "$TESTDIR/v.txt" || fail "-v: the workload's DSO not by its path"
measure "-q: $(wc -l <"$TESTDIR/q.txt") lines, none with #; --header: $(grep -c '^# offcpu ' "$TESTDIR/h.txt") counters; --header-only: $(wc -l <"$TESTDIR/ho.txt") lines"

# 5. --threads
R --threads --limit 0 >"$TESTDIR/t.txt"
R -T --limit 0 >"$TESTDIR/T.txt"
cmp -s "$TESTDIR/t.txt" "$TESTDIR/T.txt" || fail "-T differs from --threads"
rows() { grep -v '^#' "$1" | grep .; }
# off-CPU S + D in ns, row by row: most first
off_ns() { awk '{ for (i = 1; i <= NF; i++) if ($i ~ /%$/) { p[++k] = i } }
	{ print to($(p[2] - 2), $(p[2] - 1)) + to($(p[3] - 2), $(p[3] - 1)); k = 0 }
	function to(v, u) { sub(/^\*/, "", v); return v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) }'; }
rows "$TESTDIR/t.txt" | off_ns >"$TESTDIR/off"
sort -g -r "$TESTDIR/off" | cmp -s - "$TESTDIR/off" || fail "--threads: rows not by off-CPU time"
rows "$TESTDIR/t.txt" | grep -Eq -- '-[0-9.]+ (s|ms|us|ns)' && fail "--threads: a negative time"
rows "$TESTDIR/t.txt" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /%$/ && $i + 0 > 100) exit 1 }' ||
	fail "--threads: a share above 100 %"
nt=$(rows "$TESTDIR/t.txt" | wc -l)
R --threads --limit 3 >"$TESTDIR/t3.txt"
[ "$(rows "$TESTDIR/t3.txt" | wc -l)" = 3 ] || fail "--limit 3: not 3 rows"
grep -q "^# $((nt - 3)) more rows with less off-CPU time (S + D) left out" "$TESTDIR/t3.txt" || fail "--limit 3: the rows left out not said"
R --threads --by comm >"$TESTDIR/tc.txt"
vf=$(rows "$TESTDIR/tc.txt" | awk '$3 == "wm-vfork"')
[ "$(echo "$vf" | awk '{ print $1 }')" = 2 ] || fail "--by comm: wm-vfork is not one row of 2 threads: $vf"
want=$(rows "$TESTDIR/t.txt" | awk '$3 == "wm-vfork"' | off_ns | awk '{ s += $1 } END { printf "%.0f", s }')
got=$(echo "$vf" | off_ns | awk '{ printf "%.0f", $1 }')
awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(d < 0.01 * b + 2e4 && d > -0.01 * b - 2e4) }' ||
	fail "--by comm: wm-vfork off-CPU $got ns, its threads' rows sum to $want ns"
measure "--threads: $nt rows by off-CPU time; --by comm: wm-vfork 2 threads, off-CPU $got ns (rows: $want ns)"
# --sort KEY: that column (ns), row by row, most first; the first row named
col_ns() { # the Nth time column of the rows (1 on-CPU, 2 S, 3 D, 4 run-queue, 5 rest; 0 wall)
	awk -v c="$1" '{ k = 0; for (i = 1; i <= NF; i++) if ($i ~ /%$/) p[++k] = i
		print c == 0 ? to($4, $5) : to($(p[c] - 2), $(p[c] - 1)) }
	function to(v, u) { sub(/^\*/, "", v); return v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) }'
}
sorted=""
for kc in S:2 D:3 on:1 runq:4 wall:0; do
	R --threads --limit 0 --sort "${kc%:*}" >"$TESTDIR/ts.txt"
	rows "$TESTDIR/ts.txt" | col_ns "${kc#*:}" >"$TESTDIR/col"
	sort -g -r "$TESTDIR/col" | cmp -s - "$TESTDIR/col" ||
		fail "--threads --sort ${kc%:*}: rows not by that column: $(head -3 "$TESTDIR/col" | tr '\n' ' ')"
	[ "$(rows "$TESTDIR/ts.txt" | wc -l)" = "$nt" ] || fail "--threads --sort ${kc%:*}: not $nt rows"
	sorted="$sorted${kc%:*}: $(rows "$TESTDIR/ts.txt" | head -1 | awk '{ print $3 }'); "
done
rows "$TESTDIR/t.txt" >"$TESTDIR/t.rows"
R --threads --limit 0 --sort off | rows /dev/stdin | cmp -s - "$TESTDIR/t.rows" || fail "--sort off is not the default order"
for bad in "--threads --sort sym" "--sort wall" "--idle"; do
	# shellcheck disable=SC2086
	out=$("$OFFCPU" report -i "$f" $bad 2>&1 >/dev/null) && fail "report $bad: exit 0"
	[ "$(echo "$out" | wc -l)" = 1 ] || fail "report $bad: not one line: $out"
done
measure "--threads --sort: first rows $sorted"

# 6. perf's habits: -g folded, --no-demangle
out=$("$OFFCPU" report -i "$f" -g folded 2>&1 >/dev/null) && fail "report -g folded: exit 0"
[ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q -- '--folded' || fail "report -g folded said: $out"
if command -v g++ >/dev/null; then
	# (libc has no frame pointers: the frame that calls it is skipped, ns::one; ns::nap stays)
	printf '#include <unistd.h>\nnamespace ns {\n__attribute__((noinline)) void one() { usleep(1000); asm volatile(""); }\n__attribute__((noinline)) void nap(int n) { for (int i = 0; i < n; i++) one(); }\n}\nint main() { ns::nap(100); }\n' >"$TESTDIR/nap.cc"
	g++ -O1 -fno-omit-frame-pointer -o "$TESTDIR/nap" "$TESTDIR/nap.cc" || fail "g++ failed"
	perf record -q -g -e sched:sched_switch -o "$TESTDIR/nap.data" "$TESTDIR/nap" >/dev/null 2>&1 || fail "perf record of nap failed"
	R -i "$TESTDIR/nap.data" --folded >"$TESTDIR/nap.folded"
	R -i "$TESTDIR/nap.data" --folded --no-demangle >"$TESTDIR/nap.raw"
	grep -q 'ns::nap(int)' "$TESTDIR/nap.folded" || fail "report: ns::nap(int) not demangled: $(head -2 "$TESTDIR/nap.folded")"
	grep -q '_ZN2ns3napEi' "$TESTDIR/nap.raw" || fail "--no-demangle: no _ZN2ns3napEi: $(head -2 "$TESTDIR/nap.raw")"
	measure "-g folded: '$out'; --no-demangle: _ZN2ns3napEi, by default ns::nap(int)"
else
	measure "-g folded: '$out'; g++ not installed: --no-demangle not checked"
fi
exit 0

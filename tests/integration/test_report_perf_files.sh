#!/bin/bash
# Every read command on perf's own whole-machine recordings, as a perf user
# brings them: perf 7.3's `record --off-cpu -a -g` (off-CPU samples, some
# direct, the short waits summed and written "at the end" with the time
# ~0 << 32) and Debian's perf 6.1 `record -a -g` (CPU samples). Each of
# report, report -T, --folded, --pprof, flamegraph and --wakeups:
#  - report: exit 0; the recording's window is perf's (under 10 s, not the
#    18446744069 s perf's own header says); the lost line says what perf's
#    file can say ("unknown for off-CPU samples" for perf 7.3's: it has no
#    loss counters);
#  - -T: every row's wall time within the window, every time column
#    non-negative and no share above 100 % (threads that existed before the
#    recording had a wall of 18446740306.872 s);
#  - --folded: its values sum to the report's event count of the event it
#    folds;
#  - --pprof: written, said, and read back by go tool pprof with the same
#    total;
#  - flamegraph: written, well-formed (xmllint), its total the report's;
#  - --wakeups: the one-line error that says to record with --wakeups.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_perf_new
require_offcpu

cd "$TESTDIR"
"$PERF_NEW" record -q --off-cpu -a -g -o p73.data -- sleep 0.5 >p73.log 2>&1 ||
	{ cat p73.log; fail "$PERF_NEW record --off-cpu -a -g failed"; }
perf record -q -a -g -o p61.data -- sleep 0.5 >p61.log 2>&1 ||
	{ cat p61.log; fail "perf record -a -g failed"; }

to_ns() { awk -v v="$1" -v u="$2" 'BEGIN { printf "%.0f", v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) }'; }
rc=0
bad() { echo "FAIL: $*"; rc=1; }
for f in p73 p61; do
	R() { "$OFFCPU" report -i $f.data "$@"; }
	# report
	R >$f.rep 2>$f.err || { bad "$f: report exit $?: $(head -2 $f.err)"; continue; }
	read -r v u < <(sed -n 's/^# Sample duration: \([0-9.]*\) \([a-z]*\)$/\1 \2/p' $f.rep)
	win=$(to_ns "${v:-0}" "${u:-s}")
	[ "$win" -gt 0 ] && [ "$win" -lt 10000000000 ] || bad "$f: window '$v $u'"
	lost=$(grep -E '^# (nothing lost|lost: )' $f.rep)
	case $f in
	p73) [[ $lost == "# lost: unknown for off-CPU samples"* ]] || bad "$f: the header says '$lost'" ;;
	p61) [[ $lost == "# nothing lost" || $lost == "# lost: "*"perf's LOST records"* ]] || bad "$f: the header says '$lost'" ;;
	esac
	ev=$(grep -m1 "^# Samples: .* of event" $f.rep | sed "s/.*of event '\(.*\)'/\1/")
	# -T
	R -T --limit 0 --idle >$f.T 2>>$f.err || bad "$f: report -T exit $?: $(tail -2 $f.err)"
	rows=$(grep -vc '^#' $f.T)
	grep -v '^#' $f.T | awk -v w="$win" '
		function to(v, u) { sub(/^\*/, "", v); return v * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) }
		{ if (to($4, $5) > w * 1.01 + 1e6) { print "wall " $4 " " $5 " of " $3 " beyond the window"; exit 1 }
		  for (i = 6; i <= NF; i++) {
			if ($i ~ /^-[0-9]/) { print "negative " $i " in " $3; exit 1 }
			if ($i ~ /%$/ && $i + 0 > 100) { print "share " $i " in " $3; exit 1 } } }' >$f.bad ||
		bad "$f: report -T: $(cat $f.bad)"
	# --folded against the report's event count
	R --folded -e "$ev" >$f.folded 2>>$f.err || bad "$f: --folded exit $?"
	sum=$(awk '{ s += $NF } END { printf "%.0f", s }' $f.folded)
	count=$(R --no-children -g none -e "$ev" 2>/dev/null | sed -n 's/^# Event count (approx.): \([0-9]*\).*/\1/p')
	[ -n "$count" ] && [ "$sum" = "$count" ] || bad "$f: --folded sums $ev to $sum, report says $count"
	# --pprof, read back
	R --pprof $f.pb.gz 2>$f.perr || bad "$f: --pprof exit $?: $(head -2 $f.perr)"
	grep -q "wrote $f.pb.gz" $f.perr || bad "$f: --pprof does not say what it wrote: $(cat $f.perr)"
	if command -v go >/dev/null; then
		idx=$([ $f = p73 ] && echo off_cpu || echo cpu)
		total=$(go tool pprof -sample_index=$idx -top -unit=ns $f.pb.gz 2>/dev/null |
			sed -n 's/.* of \([0-9.]*\)ns total.*/\1/p')
		want=$(R --no-children -g none -e "$([ $f = p73 ] && echo offcpu-time || echo "$ev")" 2>/dev/null |
			sed -n 's/^# Event count (approx.): \([0-9]*\).*/\1/p')
		[ -n "$total" ] && awk -v a="$total" -v b="$want" 'BEGIN { exit !(a - b < 1 && b - a < 1) }' ||
			bad "$f: go tool pprof total ${total}ns ($idx), report ${want}ns"
	fi
	# flamegraph
	"$OFFCPU" flamegraph -i $f.data -o $f.svg 2>$f.ferr || bad "$f: flamegraph exit $?: $(head -2 $f.ferr)"
	xmllint --noout $f.svg 2>/dev/null || bad "$f: flamegraph: not well-formed"
	# --wakeups: not in perf's files
	out=$(R --wakeups 2>&1 >/dev/null) && bad "$f: --wakeups exit 0"
	[ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q 'record with --wakeups' || bad "$f: --wakeups said: $out"
	measure "$f: window $v $u; '${lost#\# }'; -T $rows rows within it; --folded $ev $sum = report; $(grep -o 'wrote .*' $f.perr | cut -d'(' -f1); flamegraph: $(grep -o 'wrote .*' $f.ferr | tr -d ']')"
done
exit $rc

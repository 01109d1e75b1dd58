#!/bin/bash
# offcpu script against perf script, and --folded against both, on the
# committed fixtures (Debian perf 6.1 recordings). script: every header
# line (comm, tid, [cpu], time, period, event) and every frame's address
# and DSO must be identical to perf's; a frame both name must have perf's
# name (aliases of one address included); frames only perf names (labels,
# PLT entries, DSOs rebuilt since the recording) are counted and shown.
# folded: values add up to the report's event count, time in ns.
. "$(dirname "$0")/lib.sh"
require_perf
[ -x "$OFFCPU" ] || fail "$OFFCPU not built"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

strip_syms() { # frame lines -> "address (dso)"; headers kept
	sed -E 's/^\t( *[0-9a-f]+) .* \((.*)\)$/\t\1 (\2)/'
}

for f in fp two-events system; do
	cp "$ROOT/tests/data/$f.data" "$TESTDIR/"
	perf script -i "$TESTDIR/$f.data" > "$TESTDIR/perf.txt" 2>/dev/null || fail "perf script failed on $f"
	"$OFFCPU" script -i "$TESTDIR/$f.data" > "$TESTDIR/ours.txt" || fail "offcpu script failed on $f"
	diff <(strip_syms < "$TESTDIR/perf.txt") <(strip_syms < "$TESTDIR/ours.txt") > "$TESTDIR/d" ||
		{ head -20 "$TESTDIR/d"; fail "$f: script layout, addresses or DSOs differ from perf script"; }
	lines=$(wc -l < "$TESTDIR/perf.txt")
	# Same layout, so line N of one is line N of the other.
	paste -d '\n' "$TESTDIR/perf.txt" "$TESTDIR/ours.txt" |
		awk 'NR % 2 { p = $0; next } p != $0 && $0 !~ /^\t *[0-9a-f]+ \[unknown\] / { print "perf: " p; print "ours: " $0 }' \
		> "$TESTDIR/named"
	[ -s "$TESTDIR/named" ] && { head -20 "$TESTDIR/named"; fail "$f: frames named otherwise than by perf script"; }
	symdiff=$(diff "$TESTDIR/perf.txt" "$TESTDIR/ours.txt" | grep -c '^<')
	measure "$f: script identical to perf script over $lines lines, but for $symdiff frame lines only perf names"

	# folded: the sum of values is the event count of the (first) event
	"$OFFCPU" report -i "$TESTDIR/$f.data" --folded > "$TESTDIR/folded" 2>/dev/null || fail "folded failed"
	sum=$(awk '{ s += $NF } END { print s }' "$TESTDIR/folded")
	count=$("$OFFCPU" report -i "$TESTDIR/$f.data" --no-children -g none | sed -n 's/^# Event count (approx.): \([0-9]*\).*/\1/p' | head -1)
	[ "$sum" = "$count" ] || fail "$f: folded values sum to $sum, report says $count"
	grep -q '_\[k\]' "$TESTDIR/folded" || fail "$f: no kernel frame marked _[k]"
	awk '$1 !~ /;/ { exit 1 }' "$TESTDIR/folded" || fail "$f: folded line without frames"
	measure "$f: folded $(wc -l < "$TESTDIR/folded") stacks, sum $sum ns = event count"
done

# the folded stacks read back to the same per-function self totals as the report
f=$TESTDIR/fp.data
"$OFFCPU" report -i "$f" --folded | awk '{ n = split($1, a, ";"); s[a[n]] += $NF } END { for (k in s) print k, s[k] }' |
	sort > "$TESTDIR/self_folded"
grep -q '^work_heavy ' "$TESTDIR/self_folded" || fail "work_heavy missing from folded"
heavy=$(awk '$1 == "work_heavy" { print $2 }' "$TESTDIR/self_folded")
total=$(awk '{ s += $2 } END { print s }' "$TESTDIR/self_folded")
pct=$("$OFFCPU" report -i "$f" --no-children --sort sym -g none | awk '$NF == "work_heavy" { sub("%", "", $1); print $1 }')
awk -v h="$heavy" -v t="$total" -v p="$pct" 'BEGIN { d = 100 * h / t - p; exit !(d < 0.01 && d > -0.01) }' ||
	fail "work_heavy: folded gives $heavy/$total, report says $pct%"
measure "fp: work_heavy self $pct% in report = $heavy of $total ns in folded"

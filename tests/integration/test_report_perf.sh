#!/bin/bash
# offcpu report against Linux perf's own report, on files recorded by
# Debian's perf: the committed fixtures of tests/data and a fresh
# `perf record -g` of the fixture workload. For every event, sample and
# event counts must be equal, and `--no-children --sort KEY -g none`
# percentages must agree to 0.01 for every entry above 0.5%.
. "$(dirname "$0")/lib.sh"
require_perf
command -v python3 >/dev/null || skip "python3 not installed"
[ -x "$OFFCPU" ] || fail "$OFFCPU not built"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CMP="python3 $ROOT/tests/integration/perf_compare.py"
PERF=$(command -v perf)

# perf refuses files it does not own; work on copies.
for f in "$ROOT"/tests/data/*.data; do
	cp "$f" "$TESTDIR/"
done

rc=0
# Symbol-independent keys on every fixture.
for f in "$TESTDIR"/*.data; do
	for key in comm dso; do
		$CMP "$PERF" "$OFFCPU" "$f" "$key" || rc=1
	done
done

# Symbols: a fresh recording (the binary and kernel are the ones here).
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -pthread \
	-o "$TESTDIR/fixture_work" "$ROOT/tests/data/src/fixture_work.c" || fail "cannot build workload"
if [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 1 ]; then
	"$PERF" record -q -g -o "$TESTDIR/fresh.data" "$TESTDIR/fixture_work" 0.3 >/dev/null 2>&1 ||
		fail "perf record failed"
	"$PERF" record -q -g -e cpu-clock,task-clock -o "$TESTDIR/fresh2.data" \
		"$TESTDIR/fixture_work" 0.2 >/dev/null 2>&1 || fail "perf record failed"
	for f in fresh fresh2; do
		for key in sym comm,dso,sym dso; do
			out=$($CMP "$PERF" "$OFFCPU" "$TESTDIR/$f.data" "$key") || { echo "$out"; rc=1; }
			echo "$out" | sed -n 's/^.*--sort/# fresh --sort/p'
		done
	done
else
	echo "fresh recording skipped: perf_event_paranoid too high"
fi

# Symbols on the committed fixtures when they were recorded on this kernel
# (perf resolves kernel addresses only then). Names must match, aliases
# included: the symbolizer names an address shared by several symbols as
# perf does. Only entries of a DSO rebuilt since the recording are left out
# (--stale-ok): perf finds those in its build-id cache, offcpu does not.
for f in fp fp-nobuildid two-events system; do
	rel=$("$PERF" report -i "$TESTDIR/$f.data" --header-only 2>/dev/null | sed -n 's/^# os release : //p')
	[ "$rel" = "$(uname -r)" ] || { echo "$f: recorded on $rel, sym check skipped"; continue; }
	if out=$($CMP --stale-ok "$PERF" "$OFFCPU" "$TESTDIR/$f.data" sym); then
		echo "$out" | sed 's/^/# /'
	else
		echo "$out"; rc=1
	fi
done
[ $rc = 0 ] || fail "offcpu report differs from perf report"

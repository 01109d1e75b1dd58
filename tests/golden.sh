#!/bin/bash
# The read side of two builds, byte for byte: for a change that must not
# change what offcpu prints (a refactoring), run
#
#   OFFCPU_LOCK=/work/.locks/kernel tests/golden.sh [BASE_REV]   (default main)
#
# from a built tree. It builds BASE_REV (git archive, in a temporary
# directory), records a few workloads with this tree's recorder (root and
# BPF needed; each recording holds the lock file OFFCPU_LOCK names, when
# set, so that others' benchmarks are not disturbed), makes mutated copies of them
# (integration/mutate.py), then runs report, script and flamegraph with
# about 70 sets of options, bad ones included, through both builds on each
# file, and prints every difference in stdout, stderr or exit status.
# Exit 0 when there is none. Not part of `make test`: it compares two
# builds, it does not test one.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE_REV=${1:-main}
NEW=$ROOT/build/offcpu
WL=$ROOT/build/workloads
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
[ -x "$NEW" ] || { echo "golden: build this tree first (make)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "golden: needs root to record" >&2; exit 2; }

T=$(mktemp -d /tmp/offcpu-golden.XXXXXX)
trap 'rm -rf "$T"' EXIT
export PERF_BUILDID_DIR=$T/buildid-cache # neither build reads ~/.debug

echo "golden: building $BASE_REV"
mkdir -p "$T/base" "$T/rec" "$T/mut" "$T/run"
git -C "$ROOT" archive "$BASE_REV" | tar -x -C "$T/base" || exit 2
make -C "$T/base" -j"$(nproc)" build/offcpu >"$T/base.log" 2>&1 ||
	{ tail -20 "$T/base.log"; echo "golden: $BASE_REV does not build" >&2; exit 2; }
BASE=$T/base/build/offcpu

echo "golden: recording"
LOCK=()
[ -n "${OFFCPU_LOCK:-}" ] && LOCK=(flock "$OFFCPU_LOCK")
"${LOCK[@]}" "$NEW" record -q -o "$T/rec/all.data" --wakeups --sched-delay -- \
	"$WL/waitmix" -q -c -d "$T" || exit 2
"${LOCK[@]}" "$NEW" record -q -o "$T/rec/plain.data" -- "$WL/waitmix" -q -d "$T" || exit 2
"${LOCK[@]}" "$NEW" record -q -o "$T/rec/stubs.data" -- "$WL/stubs" 0.3 || exit 2
if command -v perf >/dev/null; then
	"${LOCK[@]}" perf record -q -g -o "$T/rec/perf-fp.data" -- "$WL/waitmix" -q -d "$T" \
		2>/dev/null || rm -f "$T/rec/perf-fp.data"
fi
cp "$ROOT"/tests/data/*.data "$T/rec/"
"$PY" "$ROOT/tests/integration/mutate.py" "$T/rec/all.data" "$T/mut" 40 1 >/dev/null || exit 2

nrun=0
ndiff=0
# run FILE ARGS...: both builds, every difference said.
run() {
	local f=$1 b n x
	shift
	for b in base new; do
		[ $b = base ] && x=$BASE || x=$NEW
		(cd "$T/run" && timeout 60 "$x" "$@" -i "$f" >$b.out 2>$b.err; echo $? >$b.rc)
	done
	nrun=$((nrun + 1))
	# a gzipped output (--pprof -) by its content: the compression may differ
	for b in base new; do
		[ "$(head -c 2 "$T/run/$b.out" | od -An -tx1 | tr -d ' ')" = 1f8b ] &&
			gzip -dc "$T/run/$b.out" >"$T/run/$b.gunzip" 2>/dev/null &&
			mv "$T/run/$b.gunzip" "$T/run/$b.out"
	done
	for n in out err rc; do
		cmp -s "$T/run/base.$n" "$T/run/new.$n" && continue
		ndiff=$((ndiff + 1))
		echo "DIFF $n: $(basename "$f") $*"
		diff <(head -c 100000 "$T/run/base.$n" | cat -v) <(head -c 100000 "$T/run/new.$n" | cat -v) |
			head -6
	done
}

full=(
	"report" "report --no-children" "report -g caller" "report -g callee,0" "report -g none"
	"report --children -g caller,2" "report -g" "report --call-graph=callee"
	"report -s pid,tid,comm,dso,sym,state,cgroup --no-children" "report --sort=tid"
	"report --percent-limit 5" "report --folded" "report --folded -e offcpu-time"
	"report --folded -e cpu-clock" "report --threads" "report --wakeups" "report --wakeups --folded"
	"report --pprof -" "report --srcline" "report --inline" "report --stdio -e offcpu-time"
	"report --event=sched-delay" "report --comm waitmix" "report --cpu 0-1" "report -C 1"
	"report --time 0,9999999" "report --tid 1" "report --pid=1,2" "report --threads --time 1,"
	"report --threads --comm waitmix" "script" "script --comm waitmix" "script --tid 1"
	"script -e offcpu-wakeup" "flamegraph -o -" "flamegraph --wakeups -o -"
	"flamegraph --per-thread -o -" "flamegraph --cpu-only -o -"
	"flamegraph --off-cpu-only --inverted -o -" "flamegraph --title T --width 800 --min-width 2 -o -"
	"flamegraph --wakeups --per-thread -o -" "flamegraph --comm nosuch -o -"
)
bad=(
	"report --bogus" "report -i" "report --time bad" "report --pid x" "report --sort foo"
	"report --call-graph bad" "report --pprof a --folded" "report --wakeups --threads"
	"report --threads --folded" "report --pprof x -e cpu-clock" "report --percent-limit x"
	"report --sort=" "report extra" "report -" "report --" "report -x" "report --cpu 3-1"
	"script --pprof x" "script --threads" "script --bogus" "flamegraph --width 5"
	"flamegraph --cpu-only --off-cpu-only" "flamegraph --bogus" "flamegraph --width" "flamegraph -o"
	"flamegraph --time" "report --help" "script --help" "flamegraph --help" "report -h"
	"report --pid" "report --comm" "report --comm=" "report --time=,"
)
quick=("report" "report --folded" "report --threads" "report --wakeups" "script"
       "report --pprof -" "flamegraph -o -")

echo "golden: comparing $BASE_REV with this tree"
for f in "$T"/rec/*.data; do
	for c in "${full[@]}"; do run "$f" $c; done
done
for c in "${bad[@]}"; do run "$T/rec/all.data" $c; done
for f in "$T"/mut/*.data; do
	for c in "${quick[@]}"; do run "$f" $c; done
done
run /nonexistent report
run "$T" report
run "$T/rec/all.data" script --no-symbols
echo "golden: $nrun runs, $ndiff differences"
[ $ndiff = 0 ]

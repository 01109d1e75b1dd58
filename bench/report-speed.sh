#!/bin/bash
# The readers side by side: each offcpu read command against the nearest
# perf 6.1 command, on the same system-wide recordings of 100 MB, 300 MB
# and 1 GB, in one run, alternating; prints a table with the median wall
# time (and the fastest-slowest runs) and the median peak RSS of each, and
# the ratios.
#
#   bench/report-speed.sh [RUNS]                     (default 3)
#   env: SIZES="100 300 1000"  recordings' sizes in MB
#        KINDS="perf offcpu"   which recordings (below)
#        BENCH_DIR             where recordings are kept (default
#                              /var/tmp/offcpu-bench: not /tmp, which CI
#                              mounts as tmpfs; a few GB)
#        OFFCPU                the binary (default build/offcpu)
#        OFFCPU_LOCK           a lock file (flock) held by each recording and
#                              by each run of the commands on one recording,
#                              e.g. /work/.locks/kernel
#        FREQ                  sampling frequency of the recordings (20000)
#        RECORD_ONLY=1         make the recordings and stop
#
# Recordings, made once and reused (delete them to make new ones):
#   perf-SIZE.data    perf record -a -g -F FREQ --max-size=SIZE M, while
#                     `perf bench sched messaging -g 8` runs (as many
#                     loops as it takes; it is stopped after), plus
#                     whatever else runs on the machine
#   offcpu-SIZE.data  offcpu record -a --wakeups -F FREQ during the same
#                     workload, stopped (SIGINT) when the file reaches SIZE
#                     MB (a second's data more at most: it writes rounds
#                     a second apart)
# No seed to fix: the workload is deterministic, the machine's other
# activity is not (it shows in the recordings' DSOs and stacks).
#
# Commands and their perf equivalents, each on the same file:
#   offcpu report --stdio --no-children     perf report --stdio --no-children
#   offcpu report --stdio --children        perf report --stdio (children)
#   offcpu script                           perf script
#   offcpu report --folded / --pprof F / --threads / --wakeups (offcpu
#   recordings only), offcpu flamegraph     perf report --stdio --no-children
# Output goes to /dev/null (--pprof and flamegraph to a file in BENCH_DIR).
# Time is wall clock to the ms, from the command's fork to its exit; peak
# RSS from wait4() (bench/runone.c, built here, runs each command).
# Needs root (system-wide recording), Debian's perf and a C compiler.
set -eu
RUNS=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OFFCPU=${OFFCPU:-$ROOT/build/offcpu}
DIR=${BENCH_DIR:-/var/tmp/offcpu-bench}
SIZES=${SIZES:-100 300 1000}
KINDS=${KINDS:-perf offcpu}
FREQ=${FREQ:-20000}
LOCK=()
[ -n "${OFFCPU_LOCK:-}" ] && LOCK=(flock "$OFFCPU_LOCK")
lock() { [ -z "${OFFCPU_LOCK:-}" ] || { exec 9>>"$OFFCPU_LOCK" && flock 9; }; }
unlock() { [ -z "${OFFCPU_LOCK:-}" ] || { flock -u 9 && exec 9>&-; }; }
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 1; }
[ -x "$OFFCPU" ] || { echo "build offcpu first ($OFFCPU)" >&2; exit 1; }
mkdir -p "$DIR"
RUNONE=$DIR/runone
${CC:-cc} -O2 -Wall -Wextra -Werror -o "$RUNONE" "$ROOT/bench/runone.c"

# The workload, in a session of its own (its group is killed after).
workload_start() {
	setsid perf bench sched messaging -g 8 -l 100000000 >/dev/null 2>&1 &
	WL=$!
	sleep 0.5
}
workload_stop() {
	kill -TERM -- -"$WL" 2>/dev/null || true
	wait "$WL" 2>/dev/null || true
}

record_perf() { # size file
	echo "recording $2: perf record -a -g -F $FREQ --max-size=$1M during perf bench sched messaging -g 8" >&2
	"${LOCK[@]}" bash -c "$(declare -f workload_start workload_stop); workload_start
		perf record -q -a -g -F $FREQ --max-size=${1}M -o '$2.tmp' -- sleep 3600 >/dev/null 2>&1 || true
		workload_stop"
	mv "$2.tmp" "$2"
}

record_offcpu() { # size file
	echo "recording $2: offcpu record -a --wakeups -F $FREQ during perf bench sched messaging -g 8, stopped (SIGINT) at $1 MB" >&2
	"${LOCK[@]}" bash -c "$(declare -f workload_start workload_stop); workload_start
		'$OFFCPU' record -q -a --wakeups -F $FREQ -o '$2.tmp' >/dev/null 2>&1 &
		rec=\$!
		while kill -0 \$rec 2>/dev/null && [ \$(stat -c %s '$2.tmp' 2>/dev/null || echo 0) -lt $(($1 << 20)) ]; do
			sleep 0.2
		done
		kill -INT \$rec 2>/dev/null; wait \$rec
		workload_stop"
	mv "$2.tmp" "$2"
}

for kind in $KINDS; do
	for size in $SIZES; do
		f=$DIR/$kind-$size.data
		[ -s "$f" ] || "record_$kind" "$size" "$f"
	done
done
[ -n "${RECORD_ONLY:-}" ] && { ls -l "$DIR"/*.data; exit 0; }

# run LABEL CMD...: appends "wall_s rss_kb" to $DIR/m.LABEL (bench/runone.c)
run() {
	local label=$1
	shift
	"$RUNONE" "$DIR/m.$label" "$@" 9>&- || true
}
# warm FILE: its pages into the page cache, untimed, before each run. A
# file once read does not stay there: this VM pages out what was not
# touched for a minute (DAMON's pageout scheme), and the first command on
# each file then read part of it from the disk inside its time.
warm() { cat "$1" >/dev/null; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { cut -d' ' -f1 "$1" | sort -n | sed -n '1p;$p' | paste -sd- ; }

# the offcpu commands: name|arguments
commands() { # kind
	echo "report|report --stdio --no-children"
	echo "report-children|report --stdio --children"
	echo "script|script"
	echo "folded|report --folded"
	echo "pprof|report --pprof $DIR/out.pb.gz"
	echo "flamegraph|flamegraph -o $DIR/out.svg"
	echo "threads|report --threads"
	[ "$1" = offcpu ] && echo "wakeups|report --wakeups"
	return 0
}

rm -f "$DIR"/m.*
for kind in $KINDS; do
	for size in $SIZES; do
		f=$DIR/$kind-$size.data
		# warm the page cache and perf's and offcpu's caches once
		"$OFFCPU" report -i "$f" >/dev/null 2>&1 || true
		perf report -i "$f" --stdio --no-children >/dev/null 2>&1 || true
	done
done
for i in $(seq "$RUNS"); do
	for kind in $KINDS; do
		for size in $SIZES; do
			f=$DIR/$kind-$size.data
			lock
			warm "$f"
			run "$kind-$size-perf-report" perf report -i "$f" --stdio --no-children
			warm "$f"
			run "$kind-$size-perf-report-children" perf report -i "$f" --stdio
			warm "$f"
			run "$kind-$size-perf-script" perf script -i "$f"
			while IFS='|' read -r name args; do
				warm "$f"
				# shellcheck disable=SC2086
				run "$kind-$size-offcpu-$name" "$OFFCPU" $args -i "$f"
			done < <(commands "$kind")
			unlock
		done
	done
done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $RUNS runs of each, alternating"
echo
echo "| recording | offcpu command | perf 6.1 | time perf | time offcpu | faster | peak RSS perf | peak RSS offcpu | memory |"
echo "|---|---|---|---|---|---|---|---|---|"
for kind in $KINDS; do
	for size in $SIZES; do
		f=$DIR/$kind-$size.data
		mb=$(( $(stat -c %s "$f") / 1048576 ))
		while IFS='|' read -r name args; do
			ref=report
			[ "$name" = script ] && ref=script
			[ "$name" = report-children ] && ref=report-children
			p=$DIR/m.$kind-$size-perf-$ref o=$DIR/m.$kind-$size-offcpu-$name
			pt=$(cut -d' ' -f1 "$p" | median) ot=$(cut -d' ' -f1 "$o" | median)
			pm=$(cut -d' ' -f2 "$p" | median) om=$(cut -d' ' -f2 "$o" | median)
			pref="perf report --stdio --no-children"
			[ "$ref" = script ] && pref="perf script"
			[ "$ref" = report-children ] && pref="perf report --stdio"
			awk -v k="$kind" -v mb="$mb" -v n="$name" -v a="${args%% -o*}" -v ref="$pref" \
			    -v pt="$pt" -v ot="$ot" -v pm="$pm" -v om="$om" -v ps="$(spread "$p")" -v os="$(spread "$o")" \
			    'BEGIN { sub(/ \/.*/, " F", a);
				 printf "| %s %d MB | %s | %s | %.3f s (%s) | %.3f s (%s) | %.1fx | %d MB | %d MB | %.2fx |\n",
				        k, mb, a, ref, pt, ps, ot, os, pt / ot, pm / 1024, om / 1024, om / pm }'
		done < <(commands "$kind")
	done
done
rm -f "$RUNONE" "$DIR/out.pb.gz" "$DIR/out.svg"

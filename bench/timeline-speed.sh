#!/bin/bash
# offcpu timeline on large recordings: wall time, peak RSS and output size
# of `offcpu timeline` (Perfetto, and speedscope unless SPEEDSCOPE=0), with
# `offcpu report --stdio --no-children` on the same file for scale; the
# median of RUNS runs each (fastest-slowest beside it). The machine's load
# is printed first: other jobs on the cores show in the spread.
#
#   bench/timeline-speed.sh [RUNS] [FILE...]
#
# Without FILE, the recordings are made once and kept in BENCH_DIR:
#   msg.data    report-speed.sh's recording, larger: perf record -a -g -F 16000
#               -- perf bench sched messaging -l LOOPS (7500: some 300 MB)
#   whole.data  offcpu record -a -d SECS (60) with the defaults, while perf
#               bench sched messaging -t runs (and whatever else the machine runs)
#   every.data  offcpu record -a -d EVERY_SECS (20) --off-cpu-thresh 0
#               --sched-delay --wakeups, the same load: every wait timed
# Needs root (recording), Debian's perf, GNU time (package `time`).
#   env: OFFCPU, BENCH_DIR (/tmp/offcpu-bench), LOOPS, SECS, EVERY_SECS, SPEEDSCOPE
set -eu
RUNS=${1:-3}
shift || true
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OFFCPU=${OFFCPU:-$ROOT/build/offcpu}
DIR=${BENCH_DIR:-/tmp/offcpu-bench}
LOOPS=${LOOPS:-7500}
SECS=${SECS:-60}
EVERY_SECS=${EVERY_SECS:-20}
SPEEDSCOPE=${SPEEDSCOPE:-1}
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install time" >&2; exit 1; }
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 1; }
[ -x "$OFFCPU" ] || { echo "build offcpu first ($OFFCPU)" >&2; exit 1; }
mkdir -p "$DIR"

# A recording of the whole machine under perf bench sched messaging: offcpu record OPTIONS.
whole() { # file, seconds, options...
	local out=$1 secs=$2 load
	shift 2
	[ -s "$out" ] && return 0
	echo "recording: offcpu record -a -d $secs $* (load: perf bench sched messaging)" >&2
	perf bench sched messaging -t -l 100000000 >/dev/null 2>&1 &
	load=$!
	"$OFFCPU" record -q -a -d "$secs" "$@" -o "$out" >/dev/null 2>"$DIR/record.err" || cat "$DIR/record.err" >&2
	kill "$load" 2>/dev/null || true
	wait "$load" 2>/dev/null || true
}

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	if [ ! -s "$DIR/msg.data" ]; then
		echo "recording: perf record -a -g -F 16000 -- perf bench sched messaging -l $LOOPS" >&2
		perf record -q -a -g -F 16000 -o "$DIR/msg.data" -- perf bench sched messaging -l "$LOOPS" >/dev/null 2>&1
	fi
	whole "$DIR/whole.data" "$SECS"
	whole "$DIR/every.data" "$EVERY_SECS" --off-cpu-thresh 0 --sched-delay --wakeups
	files=("$DIR/msg.data" "$DIR/whole.data" "$DIR/every.data")
fi

run() { # label, command...: appends "wall_s rss_kb" to $DIR/$label
	local label=$1 t0 t1; shift
	t0=$(date +%s%N)
	/usr/bin/time -o "$DIR/time.$$" -f "%M" "$@" >/dev/null 2>"$DIR/err.$$" || { cat "$DIR/err.$$" >&2; exit 1; }
	t1=$(date +%s%N)
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(tail -1 "$DIR/time.$$")" >> "$DIR/$label"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { cut -d' ' -f1 "$1" | sort -n | sed -n '1p;$p' | paste -sd- ; }
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
row() { # label, what, output file or ""
	local t m
	t=$(cut -d' ' -f1 "$DIR/$1" | median)
	m=$(cut -d' ' -f2 "$DIR/$1" | median)
	printf '| | %s | %.3f s | %s s | %d MB | %s |\n' "$2" "$t" "$(spread "$DIR/$1")" $((${m%.*} / 1024)) \
		"${3:+$(mb "$3")}"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| recording | command | wall (median of $RUNS) | fastest-slowest | peak RSS | output |"
echo "|---|---|---|---|---|---|"
for f in "${files[@]}"; do
	rm -f "$DIR/report" "$DIR/perfetto" "$DIR/speedscope"
	"$OFFCPU" report -i "$f" --stdio --no-children >/dev/null 2>&1 || true # warm the caches
	for i in $(seq "$RUNS"); do
		run report "$OFFCPU" report -i "$f" --stdio --no-children
		run perfetto "$OFFCPU" timeline -i "$f" -o "$DIR/out.pftrace"
		[ "$SPEEDSCOPE" = 0 ] || run speedscope "$OFFCPU" timeline -i "$f" --format speedscope -o "$DIR/out.json"
	done
	n=$("$OFFCPU" timeline -i "$f" -o "$DIR/out.pftrace" 2>&1 | sed -n 's/.*: \([0-9]* threads.*\) \]$/\1/p')
	echo "| $(basename "$f"): $(mb "$f"), $n | | | | | |"
	row report "offcpu report --stdio --no-children" ""
	row perfetto "offcpu timeline (Perfetto)" "$DIR/out.pftrace"
	[ "$SPEEDSCOPE" = 0 ] || row speedscope "offcpu timeline --format speedscope" "$DIR/out.json"
done
rm -f "$DIR/time.$$" "$DIR/err.$$" "$DIR/out.pftrace" "$DIR/out.json"

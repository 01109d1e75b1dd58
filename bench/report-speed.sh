#!/bin/bash
# offcpu report vs perf report on one large recording: a system-wide
# `perf record -a -g` of `perf bench sched messaging` (about 100 MB), then
# `offcpu report --stdio --no-children` and `perf report --stdio
# --no-children`, alternating, RUNS times each; prints the median wall time
# (with the fastest and slowest run) and median peak RSS of each, and the
# ratios. Needs root (or a permissive perf_event_paranoid), Debian's perf
# and GNU time (package `time`). The machine's load is printed first: other
# jobs on the cores show in the spread.
#   bench/report-speed.sh [RUNS]     env: OFFCPU, BENCH_DIR, LOOPS, FREQ
set -eu
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OFFCPU=${OFFCPU:-$ROOT/build/offcpu}
DIR=${BENCH_DIR:-/tmp/offcpu-bench}
LOOPS=${LOOPS:-2500}
FREQ=${FREQ:-16000}
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install time" >&2; exit 1; }
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 1; }
[ -x "$OFFCPU" ] || { echo "build offcpu first ($OFFCPU)" >&2; exit 1; }
mkdir -p "$DIR"
DATA=$DIR/bench.data
if [ ! -s "$DATA" ]; then
	echo "recording: perf record -a -g -F $FREQ -- perf bench sched messaging -l $LOOPS" >&2
	perf record -q -a -g -F "$FREQ" -o "$DATA" -- perf bench sched messaging -l "$LOOPS" >/dev/null 2>&1
fi
size=$(du -m "$DATA" | cut -f1)

run() { # label, command...: appends "wall_s rss_kb" to $DIR/$label (wall to the ms: GNU time's %e has 10 ms steps)
	local label=$1 t0 t1; shift
	t0=$(date +%s%N)
	/usr/bin/time -o "$DIR/time.$$" -f "%M" "$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(tail -1 "$DIR/time.$$")" >> "$DIR/$label"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

rm -f "$DIR/offcpu" "$DIR/perf"
# warm the page cache and the symbol caches once
"$OFFCPU" report -i "$DATA" --stdio --no-children >/dev/null 2>&1 || true
perf report -i "$DATA" --stdio --no-children >/dev/null 2>&1 || true
for i in $(seq "$RUNS"); do
	run offcpu "$OFFCPU" report -i "$DATA" --stdio --no-children
	run perf perf report -i "$DATA" --stdio --no-children
done
ot=$(cut -d' ' -f1 "$DIR/offcpu" | median); om=$(cut -d' ' -f2 "$DIR/offcpu" | median)
pt=$(cut -d' ' -f1 "$DIR/perf" | median); pm=$(cut -d' ' -f2 "$DIR/perf" | median)
spread() { cut -d' ' -f1 "$1" | sort -n | sed -n '1p;$p' | paste -sd- ; }
samples=$("$OFFCPU" report -i "$DATA" --stdio --no-children -g none 2>/dev/null | sed -n 's/^# Samples: \([0-9]*\).*/\1/p' | head -1)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| tool | wall (median of $RUNS) | fastest-slowest | peak RSS (median) |"
echo "|---|---|---|---|"
printf '| perf report --stdio --no-children | %.3f s | %s s | %d MB |\n' "$pt" "$(spread "$DIR/perf")" $((${pm%.*} / 1024))
printf '| offcpu report --stdio --no-children | %.3f s | %s s | %d MB |\n' "$ot" "$(spread "$DIR/offcpu")" $((${om%.*} / 1024))
awk -v pt="$pt" -v ot="$ot" -v pm="$pm" -v om="$om" -v sz="$size" -v n="$samples" \
	'BEGIN { printf "file %d MB, %s samples: offcpu %.1fx faster, %.2fx the memory of perf report\n", sz, n, pt / ot, om / pm }'
rm -f "$DIR/time.$$"

#!/bin/bash
# What wait chains cost (`offcpu record --chains`, `offcpu report --chains`),
# in four parts; each prints a markdown table. Parts: sizes overhead pg
# analysis (default: all).
#
#   sizes     bytes per context switch and file size per second at 100 000
#             switches/s: `taskset -c 0 perf bench sched pipe -l LOOPS`
#             (every message two switches) recorded with the defaults and
#             with --chains; the offcpu-switch records counted (offcpu
#             script), the difference of the two files per switch.
#   overhead  the pinned pipe benchmark under the defaults, --chains and
#             perf 7.3 `--off-cpu -g`, in one run (bench/overhead.sh).
#   pg        a realistic workload: PostgreSQL 15 (a temporary cluster on
#             the disk, fsync at every commit) under pgbench (CLIENTS
#             clients, one server process each, TPC-B-like transactions for
#             SECS s): transactions per second alone and under `offcpu
#             record --chains -- pgbench` (the clients the targets; the
#             server's processes, its WAL writer and the disk's kernel
#             threads in the chain records only), and under the defaults,
#             alternating, PAIRS pairs. Needs PostgreSQL 15 (apt-get install
#             postgresql; not in deps.sh: only this benchmark uses it).
#   analysis  `offcpu record -a --chains -d DURATION` of the machine as it
#             is (other work running), then `offcpu report --chains` (and
#             --chain-min 0, every wait of every target) on it: wall time
#             and peak RSS (/usr/bin/time).
#
#   env: OFFCPU (build/offcpu), LOOPS (100000), PAIRS (5), CLIENTS (4),
#        SECS (10), DURATION (60), PERF_NEW (/work/shared/tools/perf-7.3/perf)
set -u
cd "$(dirname "$0")/.."
OFFCPU=${OFFCPU:-$PWD/build/offcpu}
LOOPS=${LOOPS:-100000}
PAIRS=${PAIRS:-5}
CLIENTS=${CLIENTS:-4}
SECS=${SECS:-10}
DURATION=${DURATION:-60}
OUT=$(mktemp -d /var/tmp/offcpu-chains-bench.XXXXXX) # on the disk: PostgreSQL fsyncs
PG=/usr/lib/postgresql/15/bin
cleanup() {
	[ -n "${PGDATA:-}" ] && runuser -u postgres -- "$PG/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1
	rm -rf "$OUT"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "chains.sh: needs root (offcpu record loads BPF)" >&2; exit 1; }
[ -x "$OFFCPU" ] || { echo "chains.sh: $OFFCPU not built" >&2; exit 1; }

mb() { stat -c %s "$1" | awk '{printf "%.1f", $1 / 1e6}'; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

sizes() {
	local bench=(taskset -c 0 perf bench sched pipe -l "$LOOPS") d c n sw
	"$OFFCPU" record -q -o "$OUT/d.data" -- "${bench[@]}" >/dev/null || return 1
	"$OFFCPU" record -q --chains -o "$OUT/c.data" -- "${bench[@]}" >/dev/null || return 1
	d=$(stat -c %s "$OUT/d.data")
	c=$(stat -c %s "$OUT/c.data")
	n=$("$OFFCPU" script -i "$OUT/c.data" -e offcpu-switch 2>/dev/null | grep -c offcpu-switch)
	sw=$((2 * LOOPS))
	echo "\`${bench[*]}\` ($sw switches of the benchmark), $(uname -r)"
	echo
	echo "| recording | file | offcpu-switch records | bytes per benchmark switch | at 100 000 switches/s |"
	echo "|---|---|---|---|---|"
	awk -v d="$d" -v c="$c" -v n="$n" -v sw="$sw" 'BEGIN {
		printf "| defaults | %.2f MB | | %.1f | %.2f MB/s |\n", d / 1e6, d / sw, d / sw * 1e5 / 1e6
		printf "| --chains | %.2f MB | %d (80 bytes each) | %.1f | %.2f MB/s |\n", c / 1e6, n, c / sw, c / sw * 1e5 / 1e6
		printf "| --chains, its own part | %.2f MB | | %.1f | %.2f MB/s |\n", (c - d) / 1e6, (c - d) / sw, (c - d) / sw * 1e5 / 1e6
	}'
	echo
}

overhead() {
	PAIRS=$PAIRS bench/overhead.sh default chains perf-new
	echo
}

pg_start() {
	PGDATA=$OUT/pg
	mkdir -p "$PGDATA" && chown postgres: "$OUT" "$PGDATA" || return 1
	runuser -u postgres -- "$PG/initdb" -D "$PGDATA" -A trust >/dev/null || return 1
	runuser -u postgres -- "$PG/pg_ctl" -D "$PGDATA" -l "$OUT/pg.log" -w \
		-o "-k $OUT -c listen_addresses='' -c fsync=on -c synchronous_commit=on" start >/dev/null || return 1
	runuser -u postgres -- "$PG/pgbench" -h "$OUT" -i -s 4 postgres >/dev/null 2>&1
}

# One pgbench run, optionally under a recorder (its argv before pgbench's): its tps.
pg_run() {
	local out
	out=$("$@" runuser -u postgres -- "$PG/pgbench" -h "$OUT" -c "$CLIENTS" -j 2 -T "$SECS" postgres 2>"$OUT/err") ||
		{ cat "$OUT/err" >&2; return 1; }
	echo "$out" | awk '/^tps = / {print $3; found=1} END {exit !found}'
}

pg() {
	local i a c dflt ratios=() dratios=() alone=() chains=() defs=()
	[ -x "$PG/postgres" ] || { echo "chains.sh pg: PostgreSQL 15 not installed (apt-get install postgresql)" >&2; return 1; }
	pg_start || { echo "chains.sh pg: cannot start PostgreSQL" >&2; return 1; }
	pg_run env >/dev/null || return 1 # warm-up
	for i in $(seq "$PAIRS"); do
		a=$(pg_run env) || return 1
		c=$(pg_run "$OFFCPU" record -q --chains -o "$OUT/pg.data" --) || return 1
		dflt=$(pg_run "$OFFCPU" record -q -o "$OUT/pgd.data" --) || return 1
		alone+=("$a"); chains+=("$c"); defs+=("$dflt")
		ratios+=("$(awk -v a="$a" -v r="$c" 'BEGIN {printf "%.4f", a / r}')")
		dratios+=("$(awk -v a="$a" -v r="$dflt" 'BEGIN {printf "%.4f", a / r}')")
	done
	echo "PostgreSQL 15, pgbench -c $CLIENTS -j 2 -T $SECS (scale 4, fsync on), $PAIRS alternating runs, $(nproc) CPUs"
	echo
	echo "| recorder | tps alone (median) | tps recorded (median) | slowdown (median of pairs) | file |"
	echo "|---|---|---|---|---|"
	printf '| offcpu record (defaults) | %.0f | %.0f | %.2f× | %.1f MB |\n' \
		"$(printf '%s\n' "${alone[@]}" | median)" "$(printf '%s\n' "${defs[@]}" | median)" \
		"$(printf '%s\n' "${dratios[@]}" | median)" "$(mb "$OUT/pgd.data")"
	printf '| offcpu record --chains | %.0f | %.0f | %.2f× | %.1f MB |\n' \
		"$(printf '%s\n' "${alone[@]}" | median)" "$(printf '%s\n' "${chains[@]}" | median)" \
		"$(printf '%s\n' "${ratios[@]}" | median)" "$(mb "$OUT/pg.data")"
	echo
}

# report --chains on f with args: "wall s, peak MB"
analyse() {
	local f=$1
	shift
	/usr/bin/time -f "%e %M" -o "$OUT/time" "$OFFCPU" report -i "$f" --chains "$@" >"$OUT/rep" 2>/dev/null ||
		return 1
	awk '{printf "%.2f s, %.0f MB", $1, $2 / 1024}' "$OUT/time"
}

analysis() {
	local f=$OUT/a.data n
	"$OFFCPU" record -q -a --chains -d "$DURATION" -o "$f" || return 1
	n=$("$OFFCPU" script -i "$f" -e offcpu-switch 2>/dev/null | grep -c offcpu-switch)
	echo "\`offcpu record -a --chains -d $DURATION\` of this machine: $(mb "$f") MB, $n waits ($((n / DURATION))/s)"
	echo
	echo "| analysis | wall, peak RSS |"
	echo "|---|---|"
	echo "| \`offcpu report --chains\` (waits of 1 ms or more) | $(analyse "$f") |"
	echo "| \`offcpu report --chains --chain-min 0\` (every wait) | $(analyse "$f" --chain-min 0) |"
	echo "| \`offcpu report --chains --folded --chain-min 0\` | $(analyse "$f" --folded --chain-min 0) |"
	echo
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(sizes overhead pg analysis)
for p in "${parts[@]}"; do
	case $p in
	sizes | overhead | pg | analysis) "$p" || exit 1 ;;
	*) echo "chains.sh: unknown part $p (sizes overhead pg analysis)" >&2; exit 2 ;;
	esac
done

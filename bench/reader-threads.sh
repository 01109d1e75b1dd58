#!/bin/bash
# Does the reader's second thread pay, with the other core free and with
# it busy? `offcpu report --stdio --no-children` on one recording, with
# its scan-and-sort thread (default) and without (OFFCPU_READER_THREADS=0),
# alternating, RUNS times each; then the same while a busy loop runs
# pinned to CPU 0 (the reader may use either core). Prints the median and
# fastest-slowest wall time of each, and the medians' ratio.
#   bench/reader-threads.sh FILE [RUNS]     env: OFFCPU, OFFCPU_LOCK
set -eu
FILE=$1
RUNS=${2:-7}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OFFCPU=${OFFCPU:-$ROOT/build/offcpu}
[ -r "$FILE" ] || { echo "no recording $FILE" >&2; exit 1; }
[ -x "$OFFCPU" ] || { echo "build offcpu first ($OFFCPU)" >&2; exit 1; }
T=$(mktemp -d)
hog=
cleanup() {
	[ -n "$hog" ] && kill "$hog" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
if [ -n "${OFFCPU_LOCK:-}" ]; then
	exec 9>>"$OFFCPU_LOCK"
	flock 9
fi

wall() { # label, env assignment, command...
	local label=$1 t0 t1
	shift
	t0=$(date +%s%N)
	env "$@" >/dev/null 2>&1 9>&-
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >>"$T/$label"
}
stats() { # label: "median ms (fastest-slowest)"
	sort -n "$T/$1" | awk '{ v[NR] = $1 } END { printf "%d ms (%d-%d)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
median() { sort -n "$T/$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

"$OFFCPU" report -i "$FILE" --stdio --no-children >/dev/null 2>&1 || true # warm the caches
for busy in 0 1; do
	if [ $busy = 1 ]; then
		taskset -c 0 sh -c 'while :; do :; done' 9>&- &
		hog=$!
	fi
	for i in $(seq "$RUNS"); do
		wall "two.$busy" OFFCPU_READER_THREADS=1 "$OFFCPU" report -i "$FILE" --stdio --no-children
		wall "one.$busy" OFFCPU_READER_THREADS=0 "$OFFCPU" report -i "$FILE" --stdio --no-children
	done
	if [ $busy = 1 ]; then
		kill "$hog"
		hog=
	fi
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(du -m "$FILE" | cut -f1) MB; $RUNS runs each, alternating"
echo "| other core | reader in two threads | in one | one / two |"
echo "|---|---|---|---|"
for busy in 0 1; do
	printf '| %s | %s | %s | %.2fx |\n' "$([ $busy = 1 ] && echo 'busy (a loop pinned to CPU 0)' || echo free)" \
		"$(stats two.$busy)" "$(stats one.$busy)" \
		"$(awk -v a="$(median one.$busy)" -v b="$(median two.$busy)" 'BEGIN { print a / b }')"
done

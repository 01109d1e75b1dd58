#!/bin/bash
# A recording past 4 GiB, and recordings cut off midway.
#  - bigfile.py (tests/integration) makes big.data of a small recording
#    (recorded here: waitmix with --wakeups; tests/data/fp.data, made by
#    perf, without BPF): its data section, 24 copies of the small one's,
#    starts past 4.5 GiB after a hole (sparse: the file is 4.5 GiB, a few
#    MB of it written), so every record lies past 32 bits of offset.
#  - offcpu report and script read it under `ulimit -v` of 1 GiB (a reader
#    that mapped the file whole could not open it): the samples of each
#    event are 24 times the small recording's, the report by symbol
#    (-s dso,sym, -g none) has the small one's percentages, and script
#    prints 24 times its samples; peak RSS (GNU time) is at most 32 MB
#    above that of the small recording's report, though the data is 24
#    times as large.
#  - copies cut off: midway through the data (inside a record), exactly
#    after a record, after the data (in the feature sections), inside the
#    hole, inside the header. Each reports what it holds (exit 0, a
#    warning, as many samples as bigfile.py --count finds whole in it) or
#    fails with a message (exit 1, no output): never a signal, never past
#    20 s. The sanitized pass runs the same files without the ulimit and
#    the RSS check (ASan maps terabytes of shadow and inflates RSS).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_offcpu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIG="$HERE/bigfile.py"
COPIES=24
OFFSET=$((4608 << 20)) # 4.5 GiB
cd "$TESTDIR"
san=0
case "$OFFCPU" in *build-san*) san=1 ;; esac
# commands on big files run under ulimit -v 1 GiB, but for the sanitized build
LIMIT=(bash -c 'ulimit -v 1048576 && exec "$@"' limit)
[ $san = 1 ] && LIMIT=()
outcome=

src=
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && [ -x "$WORKLOADS/waitmix" ]; then
	record -q -o small.data --wakeups -- "$WORKLOADS/waitmix" -q -d "$TESTDIR" && src=small.data
fi
if [ -z "$src" ]; then
	cp "$ROOT/tests/data/fp.data" small.data
	src=small.data
	measure "no BPF here: the small recording is tests/data/fp.data (perf's)"
fi

# samples of each event, "name count" lines
samples() { sed -n "s/^# Samples: \([0-9]*\) of event '\([^']*\)'.*/\2 \1/p" "$1" | sort; }
# run OUT ERR CMD...: CMD's exit status, 124+ when it ran past 20 s or died of a signal
run() {
	local out=$1 err=$2
	shift 2
	timeout -s KILL 20 "$@" >"$out" 2>"$err"
}
# the report by symbol without its header (which names the file) and the
# off-CPU events' Time column (the copies' times add up): percentages and names
bysym() { grep -v '^#' "$1" | grep -v '^$' | sed -E 's/^( *[0-9.]+%) +[0-9.]+ (s|ms|us|ns) /\1 /'; }
rss_of() { # CMD...: peak RSS in KB, or empty without GNU time
	[ -x /usr/bin/time ] || return 0
	/usr/bin/time -f %M -o rss.txt "$@" >/dev/null 2>&1 && tail -1 rss.txt
}

run s.rep s.err "$OFFCPU" report -i "$src" -s dso,sym --no-children -g none ||
	fail "report of the small recording: $(cat s.err)"
run s.script s.serr "$OFFCPU" script -i "$src" || fail "script of the small recording: $(cat s.serr)"
small_script=$(grep -c '^[^ 	]' s.script)
read -r small_samples _ < <("$PY" "$BIG" --count "$src")
[ "$small_samples" -gt 0 ] || fail "no samples in the small recording"

"$PY" "$BIG" "$src" big.data --copies $COPIES --offset $OFFSET || fail "bigfile.py failed"
size=$(stat -c %s big.data)
used=$(du -k big.data | cut -f1)
[ "$size" -gt $((4 << 30)) ] || fail "big.data is $size bytes, not past 4 GiB"
read -r big_samples _ < <("$PY" "$BIG" --count big.data)
[ "$big_samples" = $((COPIES * small_samples)) ] || fail "bigfile.py --count: $big_samples samples, not $COPIES x $small_samples"

t0=$(mono_ns)
run b.rep b.err "${LIMIT[@]}" "$OFFCPU" report -i big.data -s dso,sym --no-children -g none ||
	fail "report of big.data (exit $?): $(head -3 b.err)"
t1=$(mono_ns)
diff <(samples s.rep | awk -v k=$COPIES '{ print $1, $2 * k }') <(samples b.rep) >/dev/null ||
	fail "samples of big.data are not $COPIES times the small recording's: $(samples b.rep | tr '\n' ' ') against $(samples s.rep | tr '\n' ' ')"
diff <(bysym s.rep) <(bysym b.rep) >bysym.diff ||
	fail "the report by symbol of big.data differs from the small recording's: $(head -6 bysym.diff)"
run b.script b.serr "${LIMIT[@]}" "$OFFCPU" script -i big.data || fail "script of big.data: $(head -3 b.serr)"
n=$(grep -c '^[^ 	]' b.script)
[ "$n" = $((COPIES * small_script)) ] || fail "script of big.data: $n samples, not $COPIES x $small_script"
run b.thr b.terr "${LIMIT[@]}" "$OFFCPU" report -i big.data --threads || fail "report --threads of big.data: $(head -3 b.terr)"
measure "big.data: $((size >> 20)) MiB ($((used >> 10)) MiB written), data from $((OFFSET >> 20)) MiB, $big_samples samples: report in $(( (t1 - t0) / 1000000 )) ms$([ $san = 0 ] && echo ' under ulimit -v 1 GiB')"
rm -f b.script s.script

if [ $san = 0 ]; then
	rs=$(rss_of "$OFFCPU" report -i "$src" -s dso,sym --no-children -g none)
	rb=$(rss_of "$OFFCPU" report -i big.data -s dso,sym --no-children -g none)
	if [ -n "$rs" ] && [ -n "$rb" ]; then
		[ "$rb" -le $((rs + 32768)) ] ||
			fail "peak RSS of big.data's report is $((rb >> 10)) MB, against $((rs >> 10)) MB for the small recording (bound: +32 MB)"
		measure "peak RSS: $((rs >> 10)) MB for the small recording, $((rb >> 10)) MB for big.data ($COPIES times its data)"
	fi
fi

# Cut-off copies: "name cut" lines; the data section is [OFFSET, OFFSET + data).
data_size=$(( $("$PY" -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(56), 48)[0])' big.data) ))
data_end=$((OFFSET + data_size))
cuts="mid-record $((OFFSET + data_size / 2 + 5))
after-record -
in-features $((data_end + 20))
in-hole $((OFFSET / 2))
in-header 60"
# a cut right after a record: the end of the first copy
cuts=${cuts/after-record -/after-record $((OFFSET + data_size / COPIES))}
while read -r name cut; do
	rm -f cut.data
	"$PY" "$BIG" "$src" cut.data --copies $COPIES --offset $OFFSET --cut "$cut" || fail "bigfile.py --cut $cut failed"
	read -r expect _ < <("$PY" "$BIG" --count cut.data)
	for cmd in "report" "report --threads" "script"; do
		# shellcheck disable=SC2086
		run c.out c.err "${LIMIT[@]}" "$OFFCPU" $cmd -i cut.data
		rc=$?
		[ $rc -lt 124 ] || fail "$cmd of a copy cut $name (at $cut): exit $rc ($(head -3 c.err))"
		if [ $rc = 0 ]; then
			[ -s c.out ] || fail "$cmd of a copy cut $name: exit 0 without output"
			grep -q 'warning' c.err || fail "$cmd of a copy cut $name: no warning that it is cut off"
			if [ "$cmd" = report ]; then
				got=$(samples c.out | awk '{ s += $2 } END { print s + 0 }')
				[ "$got" = "$expect" ] ||
					fail "report of a copy cut $name: $got samples, bigfile.py --count finds $expect whole in it"
			fi
		else
			[ -s c.err ] || fail "$cmd of a copy cut $name: exit $rc without a message"
		fi
		[ "$cmd" = report ] && outcome="$outcome $name: $([ $rc = 0 ] && echo "$got samples" || echo "error '$(head -1 c.err | cut -c1-70)'");"
	done
done <<<"$cuts"
measure "cut off:$outcome"

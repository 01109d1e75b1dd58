#!/bin/bash
# Bad input to `offcpu flamegraph` and `offcpu report --pprof`, run under
# ASan+UBSan when the sanitized build exists: damaged perf.data files (from
# tests/data/fp-nobuildid.data, recorded by Debian's perf), a missing file,
# bad options and an unwritable output each give a clear message naming the
# command and exit 1 or 2, never a crash or a sanitizer report, and leave
# neither the output nor its .tmp behind. Needs no BPF.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${OFFCPU_SAN:-}
[ -n "$BIN" ] && [ -x "$BIN" ] || BIN=$OFFCPU
[ -x "$BIN" ] || fail "$BIN not built"
SRC=$ROOT/tests/data/fp-nobuildid.data
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

python3 - "$SRC" "$TESTDIR" <<'PY'
import struct, sys
src, d = sys.argv[1:3]
b = bytes(open(src, 'rb').read())
data_off, data_size = struct.unpack_from('<QQ', b, 40)
first = data_off
while struct.unpack_from('<I', b, first)[0] != 9:  # first SAMPLE
    first += struct.unpack_from('<H', b, first + 6)[0]
def out(name, x):
    open('%s/%s.data' % (d, name), 'wb').write(bytes(x))
out('magic', b'NOTPERF!' + b[8:])
x = bytearray(b); struct.pack_into('<H', x, first + 6, 0); out('size0', x)
out('header', b[:50])
open('%s/empty.data' % d, 'wb').close()
PY

n=0
expect() { # rc regex output-file -- command...
	local want=$1 re=$2 o=$3 out rc
	shift 4
	out=$("$@" 2>&1 >/dev/null); rc=$?
	case $want in
	fail) [ $rc = 1 ] || [ $rc = 2 ] || fail "$*: exit $rc, expected 1 or 2: $out" ;;
	*) [ $rc = "$want" ] || fail "$*: exit $rc, expected $want: $out" ;;
	esac
	echo "$out" | grep -Eq -e "$re" || fail "$*: said '$out', expected /$re/"
	if echo "$out" | grep -Eq 'Sanitizer|runtime error|Segmentation'; then fail "$*: $out"; fi
	[ "$o" = - ] || [ ! -e "$o" ] || fail "$*: left $o behind"
	[ "$o" = - ] || [ ! -e "$o.tmp" ] || fail "$*: left $o.tmp behind"
	n=$((n + 1))
}
O=$TESTDIR/out.svg P=$TESTDIR/out.pb.gz
for k in magic size0 header empty; do
	expect fail "offcpu flamegraph: .*$k.data" "$O" -- "$BIN" flamegraph -i "$TESTDIR/$k.data" -o "$O"
	expect fail "offcpu report: .*$k.data" "$P" -- "$BIN" report -i "$TESTDIR/$k.data" --pprof "$P"
done
expect fail 'No such file' "$O" -- "$BIN" flamegraph -i "$TESTDIR/missing.data" -o "$O"
expect fail 'No such file' "$P" -- "$BIN" report -i "$TESTDIR/missing.data" --pprof "$P"
expect 2 "unknown option '--bogus'" "$O" -- "$BIN" flamegraph -i "$SRC" --bogus -o "$O"
expect 2 "bad --width 'wide'" "$O" -- "$BIN" flamegraph -i "$SRC" --width wide -o "$O"
expect 2 "bad --width '99'" "$O" -- "$BIN" flamegraph -i "$SRC" --width 99 -o "$O"
expect 2 "bad --min-width '-1'" "$O" -- "$BIN" flamegraph -i "$SRC" --min-width -1 -o "$O"
expect 2 'exclude each other' "$O" -- "$BIN" flamegraph -i "$SRC" --cpu-only --off-cpu-only -o "$O"
expect 2 "bad list 'x'" "$O" -- "$BIN" flamegraph -i "$SRC" --pid x -o "$O"
expect 2 "bad --time" "$O" -- "$BIN" flamegraph -i "$SRC" --time 5 -o "$O"
# not numbers a time can be: nan, inf, past 64 bits of ns, an end before the start
for t in nan, 1,inf -inf, 1e300, ,18446744074 5,1; do
	expect 2 "bad --time '$t'" "$O" -- "$BIN" flamegraph -i "$SRC" --time "$t" -o "$O"
	expect 2 "bad --time '$t'" - -- "$BIN" report -i "$SRC" --time "$t"
done
expect 2 '-o needs an argument' - -- "$BIN" flamegraph -i "$SRC" -o
expect 2 '--pprof needs an argument' - -- "$BIN" report -i "$SRC" --pprof
expect 2 'exclude each other' "$P" -- "$BIN" report -i "$SRC" --folded --pprof "$P"
expect 1 "flamegraph: cannot write $TESTDIR/no/dir.svg" "$TESTDIR/no/dir.svg" -- \
	"$BIN" flamegraph -i "$SRC" -o "$TESTDIR/no/dir.svg"
expect 1 "report: cannot write $TESTDIR/no/p.pb.gz" "$TESTDIR/no/p.pb.gz" -- \
	"$BIN" report -i "$SRC" --pprof "$TESTDIR/no/p.pb.gz"
# a filter that leaves nothing: nothing drawn is an error, and nothing written
expect 1 'no on-CPU or off-CPU samples that pass the filters: nothing drawn' "$O" -- \
	"$BIN" flamegraph -i "$SRC" --comm nosuch -o "$O"
expect 1 'no on-CPU or off-CPU samples that pass the filters: .* not written' "$P" -- \
	"$BIN" report -i "$SRC" --comm nosuch --pprof "$P"
expect 1 'no samples that pass the filters to fold' - -- "$BIN" report -i "$SRC" --comm nosuch --folded
expect 1 'no samples that pass the filters' - -- "$BIN" report -i "$SRC" --comm nosuch
expect 1 'no thread has samples .* that pass the filters' - -- "$BIN" report -i "$SRC" --comm nosuch -T
measure "$n bad inputs: clear message, exit 1/2, nothing left behind ($(basename "$BIN") $( [ "$BIN" = "$OFFCPU" ] || echo 'under ASan+UBSan'))"

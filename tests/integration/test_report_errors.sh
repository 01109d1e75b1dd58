#!/bin/bash
# Reader error paths and damaged files. Each corruption of a real perf.data
# (tests/data/fp-nobuildid.data, recorded by Debian's perf) must give one
# clear message and a non-zero exit; an interrupted recording (data size 0
# in the header, or a last record cut off) must be reported up to the last
# whole record, with a warning, and its header must say that what was lost
# is unknown; a file whose data is whole but whose feature sections are cut
# (its last 100 bytes missing, or its feature table pointing past its end)
# is read whole, with a warning.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
[ -x "$OFFCPU" ] || fail "$OFFCPU not built"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$ROOT/tests/data/fp-nobuildid.data

# mangle.py KIND IN OUT: write a damaged copy; prints the number of whole
# SAMPLE records the damaged file still holds (for the recoverable kinds).
cat > "$TESTDIR/mangle.py" <<'PY'
import struct, sys
kind, src, dst = sys.argv[1:4]
b = bytearray(open(src, 'rb').read())
attr_size, = struct.unpack_from('<Q', b, 16)
attrs_off, = struct.unpack_from('<Q', b, 24)
data_off, data_size = struct.unpack_from('<QQ', b, 40)
sample_type, = struct.unpack_from('<Q', b, attrs_off + 24)
recs = []  # (offset, type, size)
pos = data_off
while pos < data_off + data_size:
    t, misc, size = struct.unpack_from('<IHH', b, pos)
    recs.append((pos, t, size))
    pos += size
def whole_samples(end):
    return sum(1 for o, t, s in recs if t == 9 and o + s <= end)
def cc_pos():  # offset of the callchain nr inside a sample
    n = 8
    for bit in (1 << 16, 1, 2, 4, 8, 1 << 6, 1 << 9, 1 << 7, 1 << 8):  # IDENTIFIER IP TID TIME ADDR ID STREAM_ID CPU PERIOD
        if sample_type & bit:
            n += 8
    return n
first_sample = next(r for r in recs if r[1] == 9)
if kind == 'magic':
    b[0:8] = b'NOTPERF!'
elif kind == 'attr_size':
    struct.pack_into('<Q', b, 16, 7)
elif kind == 'attr_section':
    struct.pack_into('<Q', b, 24, len(b) + 4096)
elif kind == 'feature_section':
    struct.pack_into('<Q', b, data_off + data_size, len(b) * 2)
    print(whole_samples(data_off + data_size))
elif kind == 'cut100':
    b = b[:len(b) - 100]
    print(whole_samples(data_off + data_size))
elif kind == 'record_size0':
    struct.pack_into('<H', b, first_sample[0] + 6, 0)
elif kind == 'record_past_end':
    o, t, s = recs[-1]
    struct.pack_into('<H', b, o + 6, 0xfff8)
elif kind == 'callchain':
    struct.pack_into('<Q', b, first_sample[0] + cc_pos(), 100000)
elif kind in ('datasize0', 'cut'):
    # an interrupted recording: no features, header says data size 0
    struct.pack_into('<Q', b, 48, 0)
    for i in range(4):
        struct.pack_into('<Q', b, 72 + 8 * i, 0)
    end = data_off + data_size
    if kind == 'cut':
        o, t, s = [r for r in recs if r[1] == 9][-1]
        end = o + s // 2   # cut the last sample in half
    b = b[:end]
    print(whole_samples(end))
open(dst, 'wb').write(bytes(b))
PY

expect_error() { # kind, message regex
	python3 "$TESTDIR/mangle.py" "$1" "$SRC" "$TESTDIR/$1.data" >/dev/null
	for cmd in report script; do
		out=$("$OFFCPU" $cmd -i "$TESTDIR/$1.data" 2>&1 >/dev/null); rc=$?
		[ $rc != 0 ] || fail "$1: offcpu $cmd exited 0"
		echo "$out" | grep -Eq "$2" || fail "$1: offcpu $cmd said '$out', expected /$2/"
		[ "$(echo "$out" | wc -l)" -le 2 ] || fail "$1: more than one message: $out"
	done
	echo "$1: $out"
}

expect_error magic 'not a perf.data file \(bad magic'
expect_error attr_size 'attr size 7 .*out of range'
expect_error attr_section 'attr section .* out of range'
expect_error record_size0 'has size 0'
expect_error record_past_end 'runs past the end of the data section'
expect_error callchain 'callchain of 100000 entries is longer than its record'

: > "$TESTDIR/empty.data"
out=$("$OFFCPU" report -i "$TESTDIR/empty.data" 2>&1) && fail "empty file accepted"
echo "$out" | grep -q 'too small' || fail "empty file: '$out'"
out=$("$OFFCPU" report -i "$TESTDIR/missing.data" 2>&1) && fail "missing file accepted"
echo "$out" | grep -q 'cannot open' || fail "missing file: '$out'"

for kind in datasize0 cut feature_section cut100; do
	want=$(python3 "$TESTDIR/mangle.py" $kind "$SRC" "$TESTDIR/$kind.data")
	out=$("$OFFCPU" report -i "$TESTDIR/$kind.data" --no-children -g none 2>"$TESTDIR/err") ||
		fail "$kind: report failed: $(cat "$TESTDIR/err")"
	grep -q 'warning' "$TESTDIR/err" || fail "$kind: no warning on stderr"
	lost=$(echo "$out" | grep -E '^# (nothing lost|lost: )')
	case $kind in
	# records cut: what was lost is not known
	datasize0|cut) [[ $lost == "# lost: unknown: "* ]] || fail "$kind: the header says '$lost'" ;;
	# only features cut: perf's LOST records (in the data) still count
	*) [ "$lost" = "# nothing lost" ] || fail "$kind: the header says '$lost'" ;;
	esac
	got=$(echo "$out" | sed -n "s/^# Samples: \([0-9]*\) of event.*/\1/p")
	[ "$got" = "$want" ] || fail "$kind: $got samples reported, the file holds $want whole ones"
	n=$("$OFFCPU" script -i "$TESTDIR/$kind.data" 2>/dev/null | grep -c 'cpu-clock')
	[ "$n" = "$want" ] || fail "$kind: script printed $n samples, want $want"
	measure "$kind: $got whole samples reported; '${lost#\# }'; $(head -1 "$TESTDIR/err")"
done

#!/bin/bash
# Python functions in the stacks (CPython 3.11, Debian 12's /usr/bin/python3;
# 3.12 and 3.13 too when one is found: OFFCPU_TEST_PYTHONS, or pyenv's).
# tests/workloads/pywait.py has threads wait in named functions (a sleep,
# a threading.Lock the main thread holds, queue.Queue.get, a socket recv,
# a subprocess's wait) while one spins, and measures its own calls.
# `offcpu record --wakeups --sched-delay`: each function's off-CPU time and
# run-queue waits within 5 % of the script's figure, the spinner's CPU time
# within 15 %, in
# Debian's perf script and offcpu report; the Python frames among the native
# ones in call order; the wakers (report --wakeups), the run-queue delays
# and the flame graph show them (unwindcheck.py pywait). Last, a Python the
# recorder does not know (a copy of /usr/bin/python3.11 whose Py_Version
# says 3.99): counted, said, and its stacks keep their native frames.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"

pythons=/usr/bin/python3
for v in 3.12 3.13; do
	p=$(ls -d ${OFFCPU_TEST_PYTHONS:-} /usr/bin/python$v /usr/local/bin/python$v \
		"$HOME"/.pyenv/versions/$v*/bin/python$v 2>/dev/null | grep "python$v\$" | head -1)
	if [ -n "$p" ]; then
		pythons="$pythons $p"
	else
		measure "no python$v found (OFFCPU_TEST_PYTHONS, /usr/bin, /usr/local/bin, pyenv): not checked"
	fi
done

cd "$TESTDIR"
rc=0
for py in $pythons; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || fail "$py does not run"
	rounds=3
	[ "$py" = /usr/bin/python3 ] || rounds=2
	measure "--- $py (Python $v): $rounds rounds of 400 ms"
	record -o "py$v.data" --wakeups --sched-delay -- "$py" "$HERE/../workloads/pywait.py" \
		"$rounds" 400 "py$v.json" || fail "offcpu record -- $py pywait.py exited $?"
	"$OFFCPU" flamegraph -i "py$v.data" -o "py$v.svg" 2>/dev/null || fail "offcpu flamegraph failed"
	"$PY" "$HERE/unwindcheck.py" pywait "$OFFCPU" "py$v.data" "py$v.json" "py$v.svg" || rc=1
done

measure "--- an unknown Python: /usr/bin/python3.11 with Py_Version 3.99"
[ -x /usr/bin/python3.11 ] || skip "no /usr/bin/python3.11"
cp /usr/bin/python3.11 python3.99 || fail "cp"
"$PY" - python3.99 <<'PATCH' || fail "cannot patch python3.99's Py_Version"
import subprocess, sys
path = sys.argv[1]
nm = subprocess.run(["nm", "-D", path], capture_output=True, text=True, check=True).stdout
addr = int([l.split()[0] for l in nm.splitlines() if l.endswith(" Py_Version")][0], 16)
off = None
for line in subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout.splitlines():
    f = line.replace("[ ", "[").split()
    if len(f) > 6 and f[0].startswith("[") and f[2] == "PROGBITS":
        a, o, size = int(f[3], 16), int(f[4], 16), int(f[5], 16)
        if a <= addr < a + size:
            off = o + addr - a
with open(path, "r+b") as fh:
    fh.seek(off)
    v = int.from_bytes(fh.read(4), "little")
    fh.seek(off)
    fh.write(((v & 0xffff) | 0x03630000).to_bytes(4, "little"))
PATCH
record -o unknown.data -- ./python3.99 -c 'import time; time.sleep(0.3)' ||
	fail "offcpu record -- python3.99 exited $?"
grep -q "Python whose layout offcpu does not know (3.99)" record.err ||
	{ echo "FAIL: the summary does not say python3.99 is unknown" >&2; rc=1; }
n=$("$OFFCPU" report -i unknown.data --stdio --header | sed -n 's/^# offcpu python.unknown_processes: //p')
measure "python.unknown_processes: $n"
[ "$n" = 1 ] || { echo "FAIL: python.unknown_processes is '$n', not 1" >&2; rc=1; }
stack=$("$OFFCPU" report -i unknown.data --folded --event offcpu-time | awk '$NF >= 250000000' | head -1)
measure "its sleep: ${stack:0:300}"
case $stack in
*"_start;"*"clock_nanosleep"*) ;;
*) echo "FAIL: python3.99's sleep lost its native stack" >&2; rc=1 ;;
esac
case $stack in
*" ("*":"*")"*) echo "FAIL: python3.99's stack has Python frames" >&2; rc=1 ;;
esac
exit $rc

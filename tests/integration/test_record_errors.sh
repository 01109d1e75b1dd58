#!/bin/bash
# issue 2, check 6: every error of `offcpu record`, with its exit status and
# message. Runtime errors print one line on stderr starting
# "offcpu record: " and exit non-zero, leaving no output file behind (and,
# for a bad output path, without running the command); usage errors (an
# unknown option, a bad value) print the usage on stderr and exit 2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_offcpu

cd "$TESTDIR"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }

# expect_error NAME WANT_RC PATTERN OUTFILE -- record args...
# WANT_RC "nz" means any non-zero status.
expect_error() {
	local name=$1 want=$2 pat=$3 out=$4; shift 5
	"$OFFCPU" record "$@" >stdout.txt 2>stderr.txt
	local rc=$? lines first
	lines=$(wc -l <stderr.txt)
	first=$(head -1 stderr.txt)
	measure "$name: exit $rc, \"$first\"$([ "$lines" -gt 1 ] && echo " (+$((lines - 1)) lines)")"
	if [ "$want" = nz ]; then
		[ "$rc" -ne 0 ] || bad "$name: exit status 0"
	else
		[ "$rc" = "$want" ] || bad "$name: exit status $rc, expected $want"
	fi
	[ "$lines" = 1 ] || bad "$name: $lines lines on stderr, expected one"
	case $first in "offcpu record: "*) ;; *) bad "$name: message does not start with 'offcpu record: '" ;; esac
	grep -qiE "$pat" stderr.txt || bad "$name: message does not match /$pat/"
	[ ! -e "$out" ] || bad "$name: output $out left behind"
	rm -f "$out"
}

# Not root, without capabilities: run as nobody (uid 65534), writing in a
# directory nobody can write.
mkdir -m 1777 "$TESTDIR/pub"
chmod 755 "$TESTDIR"
if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$OFFCPU"; then
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$OFFCPU" record -o "$TESTDIR/pub/n.data" -- true >stdout.txt 2>stderr.txt
	rc=$?
	measure "not root: exit $rc, \"$(head -1 stderr.txt)\""
	[ "$rc" -ne 0 ] || bad "not root: exit status 0"
	[ "$(wc -l <stderr.txt)" = 1 ] || bad "not root: $(wc -l <stderr.txt) lines on stderr"
	grep -q '^offcpu record: ' stderr.txt || bad "not root: message does not start with 'offcpu record: '"
	grep -qE 'root|CAP_BPF' stderr.txt || bad "not root: message mentions neither root nor CAP_BPF"
	[ ! -e "$TESTDIR/pub/n.data" ] || bad "not root: output left behind"
else
	measure "not root: not checked ($OFFCPU not executable by uid 65534)"
fi

OFFCPU_BTF=/nonexistent expect_error "no BTF" nz 'BTF' b.data -- -o b.data -- true

# A pid that does not exist: the highest free one below pid_max.
max=$(cat /proc/sys/kernel/pid_max)
nopid=$((max - 1))
while [ -e /proc/$nopid ]; do nopid=$((nopid - 1)); done
expect_error "-p $nopid" nz 'no such process' p.data -- -o p.data -p "$nopid"
expect_error "-p 1,$nopid" nz 'no such process' p.data -- -o p.data -p "1,$nopid"
expect_error "-t $nopid" nz 'no such (process|thread)' p.data -- -o p.data -t "$nopid"

# A command that cannot be executed: missing, and not executable.
printf '#!/bin/sh\nexit 0\n' >noexec.sh
chmod 644 noexec.sh
expect_error "missing command" 127 'cannot execute' c.data -- -o c.data -- "$TESTDIR/nonexistent-cmd"
expect_error "non-executable command" 127 'cannot execute' c.data -- -o c.data -- "$TESTDIR/noexec.sh"

# An output that cannot be written: checked before anything runs.
touch afile
expect_error "-o in a missing directory" nz 'cannot write' "$TESTDIR/nodir/o.data" -- \
	-o "$TESTDIR/nodir/o.data" -- touch "$TESTDIR/ran"
[ ! -e "$TESTDIR/ran" ] || bad "-o in a missing directory: the command ran"
expect_error "-o under a file" nz 'cannot write' "$TESTDIR/afile/o.data" -- \
	-o "$TESTDIR/afile/o.data" -- touch "$TESTDIR/ran"
[ ! -e "$TESTDIR/ran" ] || bad "-o under a file: the command ran"

# A cgroup that does not exist.
expect_error "-G missing cgroup" nz '.' g.data -- -o g.data -G /offcpu-no-such-cgroup -d 1

# cycles where the machine has no hardware PMU.
if [ ! -e /sys/bus/event_source/devices/cpu/type ] && [ ! -e /sys/bus/event_source/devices/cpu_core/type ]; then
	expect_error "-e cycles without PMU" nz 'cycles' e.data -- -o e.data -e cycles -- true
else
	measure "-e cycles: this machine has a PMU, not checked"
fi

# Usage errors: usage text on stderr, exit 2, nothing written.
usage_error() { # name, record args...
	local name=$1; shift
	"$OFFCPU" record "$@" >stdout.txt 2>stderr.txt
	local rc=$?
	measure "$name: exit $rc, \"$(head -1 stderr.txt)\""
	[ "$rc" = 2 ] || bad "$name: exit status $rc, expected 2"
	grep -qi 'usage' stderr.txt || bad "$name: no usage on stderr"
	[ ! -e u.data ] || bad "$name: u.data written"
	rm -f u.data
}
usage_error "unknown option" -o u.data --no-such-option -- true
usage_error "-F abc" -o u.data -F abc -- true
usage_error "-F 0" -o u.data -F 0 -- true
usage_error "-d abc" -o u.data -d abc -- true
usage_error "-d -1" -o u.data -d -1 -- true
usage_error "-e no-such-event" -o u.data -e no-such-event -- true
usage_error "--off-cpu-thresh abc" -o u.data --off-cpu-thresh abc -- true
usage_error "--off-cpu-states X" -o u.data --off-cpu-states X -- true
usage_error "--flush-interval abc" -o u.data --flush-interval abc -- true
usage_error "--stacks frames" -o u.data --stacks frames -- true
usage_error "-C x" -o u.data -C x -- true
usage_error "-p abc" -o u.data -p abc
usage_error "-t 12x" -o u.data -t 12x
usage_error "-o without value" -o

[ "$nfail" = 0 ] || fail "$nfail error-case checks failed"
exit 0

#!/bin/bash
# The BPF programs stay well inside the verifier's limit of 1 000 000
# processed instructions, with every option that adds code to them (--chains
# adds its switch, waking and fork sides): half
# of it at most, so that what is built on them (more stacks, more records
# per switch) has room. Each option set is loaded with OFFCPU_DEBUG=1,
# whose libbpf log carries the verifier's statistics per program; every
# program must stay under 50 % of the limit. (The switch program once sat
# at 75 % with --wakeups --sched-delay, where a harmless-looking
# refactoring pushed it past the limit and no --sched-delay recording
# could load; the steps that take stacks are global functions now,
# verified once each.) Python frames (--python, on by default with
# DWARF stacks) are in every set but the last.
#
# And every program's deepest call chain fits in 512 bytes of stack
# (bpf_stack.py, from the object's code): the verifier's limit where the
# kernel gives a program no private stack (tracepoint programs on some
# builds, every program before 6.13), which a kernel that gives one does
# not check. The switch program once needed 896 bytes there and loaded
# only where it had a private stack.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_offcpu

LIMIT=1000000
MAX_PCT=50
rc=0
OBJ=$(dirname "$OFFCPU")/offcpu.bpf.o
[ -r "$OBJ" ] || fail "no BPF object beside $OFFCPU ($OBJ)"
command -v llvm-objdump >/dev/null || fail "llvm-objdump not installed (package llvm; scripts/deps.sh test installs it)"
python3 "$(dirname "$0")/bpf_stack.py" "$OBJ" >"$TESTDIR/stack" || {
	head -3 "$TESTDIR/stack" >&2
	fail "a BPF program's call chain needs more than 512 bytes of stack"
}
measure "deepest call chain: $(head -1 "$TESTDIR/stack")"
for opts in "" "--wakeups --sched-delay" "--call-graph fp --wakeups --sched-delay" \
	"--no-kstack-cache --wakeups --sched-delay" "--stacks user --wakeups" "--stacks kernel --sched-delay" \
	"-a -k --wakeups --sched-delay" "-m 1 -M 1000 --wakeups --sched-delay" "--no-cpu --wakeups" \
	"--python no --wakeups --sched-delay" "--chains --sched-delay" "--chains --python no"; do
	log=$TESTDIR/load.log
	# a whole-machine recording (-a) takes no command: a tenth of a second
	target="-- true"
	case " $opts " in *" -a "*) target="-d 0.1" ;; esac
	# shellcheck disable=SC2086
	OFFCPU_DEBUG=1 "$OFFCPU" record -q $opts -o "$TESTDIR/v.data" $target >/dev/null 2>"$log" ||
		{ grep -v '^libbpf' "$log" | head -5 >&2; fail "offcpu record $opts $target failed"; }
	# "libbpf: prog 'NAME': -- BEGIN PROG LOAD LOG --" then "processed N insns ..."
	stats=$(awk '/BEGIN PROG LOAD LOG/ { match($0, /prog .[a-z_0-9]+./); p = substr($0, RSTART + 6, RLENGTH - 7) }
		/^processed [0-9]+ insns/ && p { print p, $2; p = "" }' "$log")
	[ -n "$stats" ] || fail "record ${opts:-(defaults)}: no verifier statistics in OFFCPU_DEBUG's log"
	top=$(echo "$stats" | sort -k2 -n | tail -1)
	measure "${opts:-defaults}: $(echo "$stats" | wc -l) programs; the largest: ${top% *} $(printf "%'d" "${top#* }") of $(printf "%'d" $LIMIT) instructions"
	while read -r prog n; do
		if [ "$n" -gt $((LIMIT * MAX_PCT / 100)) ]; then
			echo "FAIL: ${opts:-defaults}: $prog verified $n instructions, over $MAX_PCT % of the verifier's $LIMIT" >&2
			rc=1
		fi
	done <<<"$stats"
done
exit $rc

#!/bin/bash
# issue 2: what record selects, checked on the samples perf script prints.
#  - --off-cpu-states D: only the D waits of waitmix (fsync, vfork parent);
#  - --no-cpu: no cpu-clock samples; --stacks user / kernel: callchains
#    without kernel / user frames;
#  - -p PID: only that process; -t TID: only that thread;
#  - -G CGROUP with -a: only the processes in that cgroup v2 group;
#  - -a without --kernel-threads: no off-CPU sample of a kernel thread; with
#    it, some (cpu-clock samples of kernel threads are kept either way, as
#    perf record -a does).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
require_workload waitmix

cd "$TESTDIR"
disk_dir
nfail=0
sel() { # what, file, conditions...
	local what=$1; shift
	measure "--- $what"
	CHECK select "$@" || { nfail=$((nfail + 1)); echo "FAIL: $what" >&2; }
}
WM=("$WORKLOADS/waitmix" -q -d "$DISK")

record -o st.data --off-cpu-states D -- "${WM[@]}" || fail "record --off-cpu-states D exited $?"
sel "--off-cpu-states D" st.data has-func=wl_vfork_wait,wl_fsync \
	no-func=wl_nanosleep_loop,wl_pipe_read,wl_pipe_write,wl_mutex_wait,wl_mutex_hold

record -o nc.data --no-cpu -- "${WM[@]}" || fail "record --no-cpu exited $?"
sel "--no-cpu" nc.data no-event=cpu-clock has-event=offcpu-time

record -o su.data --stacks user -- "${WM[@]}" || fail "record --stacks user exited $?"
sel "--stacks user" su.data no-kernel-frames has-func=wl_mutex_wait
record -o sk.data --stacks kernel -- "${WM[@]}" || fail "record --stacks kernel exited $?"
sel "--stacks kernel" sk.data no-user-frames

# A running waitmix (scaled x16, about 10 s: each recorder takes up to 2 s
# to start, most of it the verifier's on the DWARF unwinder): -p its
# process, -t one thread (wm-nanosleep, about 6.4 s of sleeps).
"${WM[@]}" -s 16 &
wpid=$!
trap 'kill $wpid 2>/dev/null; rm -rf "$TESTDIR" "$DISK"' EXIT
sleep 0.3
tid=$(grep -l '^wm-nanosleep$' /proc/$wpid/task/*/comm | cut -d/ -f5)
[ -n "$tid" ] || fail "no wm-nanosleep thread in waitmix $wpid"
record -o p.data -p "$wpid" -d 1 || fail "record -p exited $?"
sel "-p $wpid" p.data pids="$wpid" has-func=wl_nanosleep_loop has-event=offcpu-time
record -o t.data -t "$tid" -d 1 || fail "record -t exited $?"
sel "-t $tid (wm-nanosleep)" t.data tids="$tid" has-func=wl_nanosleep_loop
wait $wpid

# -G: a loop in its own cgroup v2 group, recorded system-wide.
CG=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
if [ -n "$CG" ] && mkdir "$CG/offcpu-test-$$" 2>/dev/null; then
	bash -c 'while :; do sleep 0.05; done' &
	lpid=$!
	echo "$lpid" >"$CG/offcpu-test-$$/cgroup.procs"
	trap 'kill $lpid 2>/dev/null; sleep 0.1; rmdir "$CG/offcpu-test-$$"; rm -rf "$TESTDIR" "$DISK"' EXIT
	sleep 0.2
	cat "$CG/offcpu-test-$$/cgroup.procs" >cg.tids 2>/dev/null
	record -o g.data -a -G "offcpu-test-$$" -d 1 || fail "record -G exited $?"
	# the loop and the sleeps it forks are the only processes in the group
	sel "-G offcpu-test-$$ (relative to $CG)" g.data has-event=offcpu-time some-tids=cg.tids comms=bash,sleep
	record -o g2.data -a -G "$CG/offcpu-test-$$" -d 1 || fail "record -G (absolute) exited $?"
	sel "-G $CG/offcpu-test-$$ (absolute)" g2.data has-event=offcpu-time some-tids=cg.tids comms=bash,sleep
else
	measure "-G: no cgroup v2 mount to create a group in, not checked"
fi

# Kernel threads: children of kthreadd (pid 2) and kthreadd itself.
kthreads() { awk '$4 == 2 || $1 == 2 {print $1}' /proc/[0-9]*/task/[0-9]*/stat 2>/dev/null; }
kthreads >kthreads
record -o k0.data -a -d 1 || fail "record -a exited $?"
kthreads >>kthreads # and those started meanwhile
sel "-a: no kernel thread off-CPU" k0.data off-not-tids=kthreads
record -o k1.data -a -d 1 --kernel-threads || fail "record -a --kernel-threads exited $?"
sel "-a --kernel-threads" k1.data off-some-tids=kthreads

[ "$nfail" = 0 ] || fail "$nfail filter checks failed"
exit 0

#!/bin/bash
# Run COMMAND while libbpf-tools' offcputime (BCC's tool, as Debian's
# libbpf-tools package builds it) traces the whole machine, user and kernel
# stacks at every switch: the `bcc` row of overhead.sh. The command starts
# once offcputime has attached (it holds a BPF link: it prints nothing
# before its report); its report is thrown away.
#
#   bench/with-offcputime.sh COMMAND [ARGS...]
#   env: OFFCPUTIME (default /usr/sbin/offcputime; apt-get install libbpf-tools)
set -u
TOOL=${OFFCPUTIME:-/usr/sbin/offcputime}
[ -x "$TOOL" ] || { echo "with-offcputime.sh: $TOOL not found (apt-get install libbpf-tools)" >&2; exit 1; }
log=$(mktemp /tmp/offcputime.XXXXXX)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
"$TOOL" >"$log" 2>&1 &
pid=$!
attached() { ls -l "/proc/$pid/fd" 2>/dev/null | grep -q 'anon_inode:bpf_link'; }
for _ in $(seq 200); do
	attached && break
	kill -0 "$pid" 2>/dev/null || { echo "with-offcputime.sh: offcputime failed: $(cat "$log")" >&2; exit 1; }
	sleep 0.05
done
attached || { echo "with-offcputime.sh: offcputime did not attach in 10 s" >&2; exit 1; }
"$@"

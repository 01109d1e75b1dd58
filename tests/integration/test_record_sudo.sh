#!/bin/bash
# issue 15: run under sudo (SUDO_UID/SUDO_GID set, root), the output file
# belongs to the user who ran sudo, still mode 0600, and that user reads it
# without privileges: `offcpu report` and Linux perf's (which refuses files
# of other users) as uid 65534 (nobody) with setpriv. With --user (the
# command's user) the file still goes to the sudo user; without SUDO_UID it
# stays root's. A SUDO_UID that is not a number leaves it root's, with a
# warning.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu
command -v setpriv >/dev/null || skip "setpriv (util-linux) not installed"
U=65534 G=65534
AS_USER=(setpriv --reuid=$U --regid=$G --clear-groups --inh-caps=-all)
"${AS_USER[@]}" test -x "$OFFCPU" || skip "$OFFCPU is not executable by uid $U (a parent directory is closed)"

# uid 65534 may pass through the test directory and read what it owns in out/
chmod 711 "$TESTDIR"
mkdir -m 755 "$TESTDIR/out"
cd "$TESTDIR/out"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }
owner() { stat -c '%u:%g %a' "$1"; }

SUDO_UID=$U SUDO_GID=$G SUDO_USER=nobody record -o s.data -- sleep 0.3 ||
	bad "record under SUDO_UID=$U exited $?"
measure "SUDO_UID=$U SUDO_GID=$G: s.data is $(owner s.data) (uid:gid mode)"
[ "$(owner s.data)" = "$U:$G 600" ] || bad "s.data is $(owner s.data), expected $U:$G 600"

"${AS_USER[@]}" "$OFFCPU" report -i s.data >report.txt 2>report.err
rc=$?
measure "as uid $U: offcpu report exit $rc, $(grep -c . report.txt) lines, $(grep -c 'offcpu-time' report.txt) mention offcpu-time"
[ "$rc" = 0 ] || bad "offcpu report as uid $U exited $rc: $(head -3 report.err)"
grep -q 'offcpu-time' report.txt || bad "offcpu report as uid $U shows no offcpu-time"
"${AS_USER[@]}" env HOME=/nonexistent perf script -i s.data -F comm,event >script.txt 2>script.err
rc=$?
measure "as uid $U: perf script exit $rc, $(grep -c 'offcpu-time' script.txt) offcpu-time samples"
[ "$rc" = 0 ] || bad "perf script as uid $U exited $rc: $(head -3 script.err)"
grep -q 'offcpu-time' script.txt || bad "perf script as uid $U shows no offcpu-time sample"

# --user runs the command as another user (daemon, uid 1): the file is still
# the sudo user's, who reads it
SUDO_UID=$U SUDO_GID=$G record -o w.data --user daemon -- sleep 0.3 ||
	bad "record --user daemon under SUDO_UID=$U exited $?"
measure "SUDO_UID=$U with --user daemon: w.data is $(owner w.data)"
[ "$(owner w.data)" = "$U:$G 600" ] || bad "w.data is $(owner w.data), expected $U:$G 600"

# without sudo, as before: root's
env -u SUDO_UID -u SUDO_GID "$OFFCPU" record -o r.data -- sleep 0.1 2>record.err ||
	bad "record without SUDO_UID exited $?"
measure "no SUDO_UID: r.data is $(owner r.data)"
[ "$(owner r.data)" = "0:0 600" ] || bad "r.data is $(owner r.data), expected 0:0 600"

# a SUDO_UID that is not a number: root's, and said so
SUDO_UID=nobody SUDO_GID=$G "$OFFCPU" record -o b.data -- sleep 0.1 2>record.err ||
	bad "record with SUDO_UID=nobody exited $?"
measure "SUDO_UID=nobody: b.data is $(owner b.data); \"$(grep SUDO_UID record.err)\""
[ "$(owner b.data)" = "0:0 600" ] || bad "b.data is $(owner b.data), expected 0:0 600"
grep -q 'SUDO_UID' record.err || bad "no warning about SUDO_UID=nobody"

[ "$nfail" = 0 ] || fail "$nfail checks failed"

#!/bin/bash
# issue 6: security of record's output and of --user.
#  - a symlink planted at the output path (to a file the attacker wants
#    overwritten) is moved aside to FILE.old like any file, never followed:
#    the target keeps its content, the new FILE is a regular file of mode
#    0600; the same with a symlink planted at FILE.old (the rename replaces
#    the link, not its target), and with a dangling link; a link planted at
#    the OUT.tmp that `offcpu flamegraph -o OUT` and `report --pprof OUT`
#    write before renaming is not followed either;
#  - --user NAME -- CMD runs CMD as that user: real, effective and saved
#    uid and gid are the user's, its supplementary groups are the user's
#    (a group made for the test), it has no capabilities and none of
#    offcpu's descriptors (BPF, perf events, the output file); offcpu
#    itself still records it (off-CPU samples of the command's sleep).
#    The user offcpu-test (and group offcpu-test-g) is created if missing.
#  - --user with an unknown user: one line, exit 1, no file; without a
#    command: usage, exit 2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/record_lib.sh"
require_bpf
require_perf
require_offcpu

cd "$TESTDIR"
chmod 755 "$TESTDIR"
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }

# 1. Planted symlinks.
echo precious >victim
chmod 644 victim
ln -s "$TESTDIR/victim" out.data
record -o out.data -- sleep 0.1 || bad "-o over a symlink: record exit $?"
[ "$(cat victim)" = precious ] || bad "-o over a symlink: the link's target was written"
[ -L out.data.old ] && [ "$(readlink out.data.old)" = "$TESTDIR/victim" ] || bad "-o over a symlink: the link was not moved to out.data.old"
[ -f out.data ] && [ ! -L out.data ] || bad "-o over a symlink: out.data is not a regular file"
measure "symlink at -o: $(stat -c '%F, mode %a' out.data); out.data.old -> $(readlink out.data.old); victim: $(cat victim)"
[ "$(stat -c %a out.data)" = 600 ] || bad "-o over a symlink: mode $(stat -c %a out.data)"
CHECK readable out.data || bad "-o over a symlink: perf cannot read out.data"

rm -f out.data out.data.old
echo old >out.data
ln -s "$TESTDIR/victim" out.data.old
record -o out.data -- sleep 0.1 || bad "symlink at FILE.old: record exit $?"
[ "$(cat victim)" = precious ] || bad "symlink at FILE.old: the link's target was written"
[ ! -L out.data.old ] && [ "$(cat out.data.old)" = old ] || bad "symlink at FILE.old: out.data.old is not the old out.data"
measure "symlink at FILE.old: out.data.old is $(stat -c %F out.data.old) holding '$(cat out.data.old)'; victim: $(cat victim)"

rm -f out.data out.data.old
ln -s "$TESTDIR/nowhere/x" out.data
record -o out.data -- sleep 0.1 || bad "dangling symlink at -o: record exit $?"
[ ! -e nowhere ] || bad "dangling symlink at -o: its target was created"
[ -f out.data ] && [ ! -L out.data ] || bad "dangling symlink at -o: out.data is not a regular file"

# The exports write OUT.tmp, then rename it: a link planted there is not followed.
echo precious >victim
ln -s "$TESTDIR/victim" fg.svg.tmp
ln -s "$TESTDIR/victim" p.pb.gz.tmp
"$OFFCPU" flamegraph -i out.data -o fg.svg 2>/dev/null || bad "flamegraph with a link at fg.svg.tmp: exit $?"
"$OFFCPU" report -i out.data --pprof p.pb.gz 2>/dev/null || bad "report --pprof with a link at p.pb.gz.tmp: exit $?"
measure "links planted at flamegraph's and pprof's OUT.tmp: victim holds '$(head -c 20 victim)'; fg.svg $(stat -c %F fg.svg), p.pb.gz $(stat -c %F p.pb.gz)"
[ "$(cat victim)" = precious ] || bad "an export wrote through a link planted at its OUT.tmp"
[ -f fg.svg ] && [ ! -L fg.svg ] && [ -f p.pb.gz ] && [ ! -L p.pb.gz ] || bad "an export's output is not a regular file"

# 2. --user.
if ! id offcpu-test >/dev/null 2>&1; then
	groupadd -f offcpu-test-g && useradd --system --no-create-home --shell /usr/sbin/nologin \
		--groups offcpu-test-g offcpu-test || skip "cannot create the user offcpu-test"
fi
getent group offcpu-test-g >/dev/null || { groupadd -f offcpu-test-g && usermod -aG offcpu-test-g offcpu-test; }
want_uid=$(id -u offcpu-test) want_gid=$(id -g offcpu-test)
want_groups=$(id -G offcpu-test | tr ' ' '\n' | sort -n | tr '\n' ' ')
mkdir -m 1777 pub
# the command reports its identity and descriptors, then sleeps 0.3 s in `sleep`
record -o user.data --user offcpu-test -- sh -c "
	grep -E '^(Uid|Gid|Groups|CapPrm|CapEff|CapAmb):' /proc/self/status >$TESTDIR/pub/status
	ls -l /proc/self/fd/ >$TESTDIR/pub/fds
	touch /root/offcpu-test-was-here 2>/dev/null && echo wrote-root >$TESTDIR/pub/root
	sleep 0.3"
rc=$?
[ "$rc" = 0 ] || bad "--user: record exit $rc"
st=pub/status
uids=$(awk '/^Uid:/{print $2,$3,$4}' $st) gids=$(awk '/^Gid:/{print $2,$3,$4}' $st)
groups=$(sed -n 's/^Groups:\s*//p' $st | tr ' \t' '\n\n' | grep . | sort -n | tr '\n' ' ')
measure "--user offcpu-test: uid (real, effective, saved) $uids, gid $gids, groups $groups; $(grep CapEff $st | tr -s '\t ' ' ')"
[ "$uids" = "$want_uid $want_uid $want_uid" ] || bad "--user: uids $uids, want $want_uid"
[ "$gids" = "$want_gid $want_gid $want_gid" ] || bad "--user: gids $gids, want $want_gid"
[ "$groups" = "$want_groups" ] || bad "--user: groups '$groups', want '$want_groups'"
for c in CapPrm CapEff CapAmb; do
	grep -q "^$c:\s*0*$" $st || bad "--user: $(grep "^$c" $st)"
done
[ ! -e pub/root ] || { rm -f /root/offcpu-test-was-here; bad "--user: the command wrote in /root"; }
grep -E 'anon_inode|perf_event|user\.data' pub/fds && bad "--user: the command holds offcpu's descriptors"
n=$("$OFFCPU" report -i user.data --no-children -g none -s comm --comm sleep 2>/dev/null |
	sed -n "s/^# Samples: \([0-9]*\) of event 'offcpu-time'/\1/p")
t=$("$OFFCPU" report -i user.data --no-children -g none -s comm --comm sleep 2>/dev/null |
	awk '/offcpu-time/{o=1} o && / sleep$/{print $2, $3; exit}')
measure "--user: offcpu-time of the command's sleep: ${n:-0} samples, ${t:-none}"
[ "${n:-0}" -gt 0 ] || bad "--user: no offcpu-time sample of the command's sleep"

"$OFFCPU" record -o nouser.data --user offcpu-no-such-user -- true >out.txt 2>err.txt
rc=$?
measure "--user offcpu-no-such-user: exit $rc, \"$(head -1 err.txt)\""
[ "$rc" = 1 ] || bad "--user unknown: exit $rc, expected 1"
[ "$(wc -l <err.txt)" = 1 ] && grep -q '^offcpu record: .*no such user' err.txt || bad "--user unknown: message '$(cat err.txt)'"
[ ! -e nouser.data ] || bad "--user unknown: output left behind"
"$OFFCPU" record -o nouser.data --user offcpu-test -d 1 >out.txt 2>err.txt
rc=$?
[ "$rc" = 2 ] && grep -q usage err.txt || bad "--user without a command: exit $rc, $(head -1 err.txt)"

[ "$nfail" = 0 ] || fail "$nfail security checks failed"
exit 0

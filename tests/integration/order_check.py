#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A thread's recorded intervals follow one another in time, read from the
perf.data file itself (its header, attrs, EVENT_DESC and SAMPLE records;
src/perfdata/offcpu_payload.h has the layouts).

    order_check.py chains FILE [COMM_PREFIX...]
        record --chains: each thread's offcpu-switch records, one per wait
        (out, wake, switch-in), in the order of its switch count (seq): out <= wake <= in
        within each, and each wait's out at or after the switch-in of the
        one before (the on-CPU run between them is not negative). Both
        ends are switches timed by the switch program: no tolerance.
    order_check.py samples FILE TOL_NS [COMM_PREFIX...]
        --off-cpu-thresh 0 --sched-delay: each thread's direct offcpu-time
        and sched-delay samples laid out as the readers lay them (a
        run-queue wait ends at its sample's time; the sleep its wakeup
        ended, the next offcpu-time sample within 50 us, ends where it
        starts): no interval starts more than TOL_NS before the one
        before it ends (a sample's time is read as it is written, a few us
        after its switch-in).

With prefixes, only the threads whose comm (in the samples' COMM records,
last seen) starts with one of them are checked. Prints '# ' figure lines,
'FAIL: ' lines, exits 1 on a failure.
"""
import struct
import sys

SAMPLE, COMM = 9, 3
FEAT_EVENT_DESC = 12
SPREAD = 50000
RAW_AGGREGATED, RAW_START, RAW_STOP = 0x2, 0x8, 0x10
SW_FROM_START, SW_TO_STOP = 0x2, 0x4


def read_file(path):
    """(events {id: name}, samples [(name, tid, time, fields...)], comms {tid: comm})."""
    b = open(path, "rb").read()
    if b[:8] != b"PERFILE2":
        sys.exit("FAIL: %s: not a perf.data file" % path)
    attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from("<QQQQQ", b, 16)
    feats, = struct.unpack_from("<Q", b, 72)
    # attrs: (attr, ids section) each; names from EVENT_DESC, in the same order
    attrs = []
    for a in range(attrs_off, attrs_off + attrs_size, attr_size):
        sample_type, = struct.unpack_from("<Q", b, a + 24)
        ids_off, ids_size = struct.unpack_from("<QQ", b, a + attr_size - 16)
        ids = struct.unpack_from("<%dQ" % (ids_size // 8), b, ids_off)
        attrs.append([sample_type, ids, ""])
    sec = data_off + data_size
    for bit in range(FEAT_EVENT_DESC):
        if feats >> bit & 1:
            sec += 16
    if feats >> FEAT_EVENT_DESC & 1:
        off, _ = struct.unpack_from("<QQ", b, sec)
        nr, asz = struct.unpack_from("<II", b, off)
        p = off + 8
        for i in range(nr):
            p += asz
            nids, slen = struct.unpack_from("<II", b, p)
            name = b[p + 8:p + 8 + slen].split(b"\0")[0].decode()
            p += 8 + slen + 8 * nids
            if i < len(attrs):
                attrs[i][2] = name
    byid = {}
    for st, ids, name in attrs:
        for i in ids:
            byid[i] = (name, st)
    out, comms = [], {}
    pos, end = data_off, data_off + data_size
    while pos + 8 <= end:
        typ, _, size = struct.unpack_from("<IHH", b, pos)
        if size < 8:
            break
        if typ == COMM:
            _, tid = struct.unpack_from("<II", b, pos + 8)
            comms[tid] = b[pos + 16:pos + size].split(b"\0")[0].decode("utf-8", "replace")
        elif typ == SAMPLE:
            sid, = struct.unpack_from("<Q", b, pos + 8)
            name = byid.get(sid, ("", 0))[0]
            if name == "offcpu-switch":
                _, tid, time, _ = struct.unpack_from("<IIQI", b, pos + 16)
                out_, wake, _, _, _, seq, state, _, flags = struct.unpack_from(
                    "<QQIIIIBBH", b, pos + 8 + 32 + 4)
                out.append(("switch", tid, time, out_, wake, seq, chr(state), flags))
            elif name in ("offcpu-time", "sched-delay"):
                q = pos + 8 + 16
                _, tid, time, _, _, period, nr = struct.unpack_from("<IIQIIQQ", b, q)
                q += 40 + 8 * nr
                rsize, = struct.unpack_from("<I", b, q)
                raw = b[q + 4:q + 4 + rsize]
                roff = 0
                if name == "offcpu-time" and len(raw) >= 32:
                    n, = struct.unpack_from("<Q", raw, 16)
                    roff = 32 + 8 * n
                state, flags = struct.unpack_from("<II", raw, roff) if roff + 8 <= len(raw) else (0, 0)
                out.append((name, tid, time, period, chr(state & 0xff), flags))
        pos += size
    return out, comms


def wanted(comms, prefixes):
    return lambda tid: not prefixes or comms.get(tid, "").startswith(tuple(prefixes))


def cmd_chains(path, prefixes):
    recs, comms = read_file(path)
    keep = wanted(comms, prefixes)
    by = {}
    for r in recs:
        if r[0] == "switch" and keep(r[1]):
            by.setdefault(r[1], []).append(r)
    bad_in, bad_run, n, worst = 0, 0, 0, 0
    for tid, rs in by.items():
        rs.sort(key=lambda r: (r[5], r[2]))
        prev = None
        for r in rs:
            _, _, time, out, wake, seq, state, flags = r
            n += 1
            if not flags & SW_FROM_START and not out <= wake <= time:
                bad_in += 1
                if bad_in <= 5:
                    print("FAIL: tid %d (%s) seq %d %s: out %d wake %d in %d not in order" %
                          (tid, comms.get(tid, "?"), seq, state, out, wake, time))
            if prev is not None and not flags & SW_FROM_START and out < prev[2]:
                bad_run += 1
                worst = max(worst, prev[2] - out)
                if bad_run <= 5:
                    print("FAIL: tid %d (%s): its %s wait (seq %d) left the CPU %.1f us before the "
                          "%s wait before it (seq %d) ended" % (tid, comms.get(tid, "?"), state, seq,
                                                               (prev[2] - out) / 1e3, prev[6], prev[5]))
            prev = r
    print("# chains: %d threads, %d waits; %d out of order inside, %d starting before the one before "
          "ended (worst %.1f us)" % (len(by), n, bad_in, bad_run, worst / 1e3))
    return 1 if bad_in or bad_run or not n else 0


def cmd_samples(path, tol, prefixes):
    recs, comms = read_file(path)
    keep = wanted(comms, prefixes)
    by = {}
    for i, r in enumerate(recs):
        if r[0] != "switch" and keep(r[1]) and not r[5] & (RAW_AGGREGATED | RAW_START | RAW_STOP):
            # at equal times a run-queue wait first, as the timeline has them
            by.setdefault(r[1], []).append((r[2], r[0] != "sched-delay", i, r))
    bad, n, worst, near = 0, 0, 0, 0
    for tid, evs in by.items():
        evs.sort()
        iv = []  # (start, end, what)
        k = 0
        while k < len(evs):
            time, _, _, (name, _, _, period, state, _) = evs[k]
            k += 1
            start = time - period
            iv.append((start, time, name + " " + state))
            if name != "sched-delay" or state in "RN":
                continue
            for j in range(k, len(evs)):  # the sleep its wakeup ended
                t2, _, _, r2 = evs[j]
                if t2 - time > SPREAD or r2[0] == "sched-delay":
                    break
                if r2[0] == "offcpu-time":
                    iv.append((start - r2[3], start, "offcpu-time " + r2[4]))
                    del evs[j]
                    break
        iv.sort()
        n += len(iv)
        for a, b in zip(iv, iv[1:]):
            over = a[1] - b[0]
            if over > 0:
                near += 1
                worst = max(worst, over)
            if over > tol:
                bad += 1
                if bad <= 5:
                    print("FAIL: tid %d (%s): %s [%d, %d] starts %.1f us before the end of %s [%d, %d]" %
                          (tid, comms.get(tid, "?"), b[2], b[0], b[1], over / 1e3, a[2], a[0], a[1]))
    print("# samples: %d threads, %d intervals; %d overlap the one before (worst %.1f us), %d by more "
          "than %.1f us" % (len(by), n, near, worst / 1e3, bad, tol / 1e3))
    return 1 if bad or not n else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "chains":
        sys.exit(cmd_chains(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) >= 4 and sys.argv[1] == "samples":
        sys.exit(cmd_samples(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
    sys.exit(__doc__)


if __name__ == "__main__":
    main()

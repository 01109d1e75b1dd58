#!/usr/bin/env python3
# Compare `perf report --stdio --no-children -g none` with offcpu's on one
# file and sort key: per event, equal event counts, and every entry above
# 0.5% in either output present in the other with a percentage equal to
# 0.01. Sample counts come from `perf report --stats` (perf abbreviates
# them in the report header). Prints one line per event; exit 1 on mismatch.
#
# With --stale-ok, entries of DSOs offcpu warns about ("build id mismatch":
# the file on disk was rebuilt since the recording) are left out, and
# listed: perf names them from its build-id cache (~/.debug), which offcpu
# does not read, so they say nothing about symbolization. Every other
# entry, alias names included, must still match.
import os, re, subprocess, sys
from collections import defaultdict

def sections(text):
    """event name -> {'count': int, 'samples': str, 'entries': {key: pct}}"""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"# Samples: (\S+)\s+of event '(.*)'", line)
        if m:
            cur = out.setdefault(m.group(2), {'samples': m.group(1), 'count': None,
                                              'entries': defaultdict(float)})
            continue
        m = re.match(r"# Event count \(approx\.\): (\d+)", line)
        if m and cur is not None:
            cur['count'] = int(m.group(1))
            continue
        if cur is None or line.startswith('#') or not line.strip():
            continue
        m = re.match(r"\s+([\d.]+)%\s+(.*\S)\s*$", line)
        if m:
            cur['entries'][re.sub(r"\s+", " ", m.group(2))] += float(m.group(1))
    return out

def perf_stats(perf, path):
    text = subprocess.run([perf, 'report', '-i', path, '--stats'], capture_output=True,
                          text=True).stdout
    res, ev = {}, None
    for line in text.splitlines():
        m = re.match(r"(\S.*) stats:$", line)
        if m:
            ev = m.group(1)
        m = re.match(r"\s+SAMPLE events:\s+(\d+)", line)
        if m and ev:
            res[ev] = int(m.group(1))
    return res

def reports(perf, offcpu, path, key):
    args = ['--stdio', '--no-children', '--sort', key, '-g', 'none']
    p = subprocess.run([perf, 'report', '-i', path] + args, capture_output=True, text=True)
    o = subprocess.run([offcpu, 'report', '-i', path] + args[1:], capture_output=True, text=True)
    # offcpu names a user frame without a symbol by its DSO ("[dso]+0x11e5"),
    # perf by its address alone ("0x00000000000011e5")
    o.stdout = re.sub(r"(\[\.\] )\[.*\]\+0x([0-9a-f]+)[ \t]*$",
                      lambda m: "%s0x%016x" % (m.group(1), int(m.group(2), 16)), o.stdout, flags=re.M)
    return p, o

def stale_dsos(stderr):
    """Short names of the DSOs offcpu found rebuilt since the recording."""
    return {os.path.basename(m.group(1)) for m in
            re.finditer(r"^offcpu: warning: (.*): build id mismatch", stderr, re.M)}

def stale_keys(perf, offcpu, path, key, stale):
    """Entry keys (of the key sort) that belong to a stale DSO in either report:
    read from a `dso,KEY` report, whose entries start with the DSO's short name."""
    fields = key.split(',')
    if fields[0] == 'dso':
        return None  # the key itself starts with the DSO: filter per entry
    if 'dso' in fields:
        sys.exit("--stale-ok: the sort key must have dso first or not at all")
    p, o = reports(perf, offcpu, path, 'dso,' + key)
    keys = set()
    for text in (p.stdout, o.stdout):
        for sec in sections(text).values():
            for k in sec['entries']:
                dso, _, rest = k.partition(' ')
                if dso in stale:
                    keys.add(rest)
    return keys

def main():
    argv = sys.argv[1:]
    stale_ok = '--stale-ok' in argv
    argv = [a for a in argv if a != '--stale-ok']
    perf, offcpu, path, key = argv[:4]
    p, o = reports(perf, offcpu, path, key)
    if o.returncode:
        print(f"offcpu report failed: {o.stderr}")
        return 1
    ps, os_ = sections(p.stdout), sections(o.stdout)
    stale = stale_dsos(o.stderr) if stale_ok else set()
    skip = stale_keys(perf, offcpu, path, key, stale) if stale else set()
    stats = perf_stats(perf, path)
    bad = 0
    if set(ps) != set(os_):
        print(f"events differ: perf {sorted(ps)} offcpu {sorted(os_)}")
        return 1
    for ev in ps:
        pe, oe = ps[ev], os_[ev]
        n = stats.get(ev)
        if pe['count'] != oe['count'] or (n is not None and str(n) != oe['samples']):
            print(f"{ev}: counts differ: perf {n} samples / {pe['count']}, offcpu {oe['samples']} / {oe['count']}")
            bad += 1
        checked = 0
        for k in set(pe['entries']) | set(oe['entries']):
            a, b = pe['entries'].get(k, 0.0), oe['entries'].get(k, 0.0)
            if max(a, b) <= 0.5:
                continue
            if (k.partition(' ')[0] in stale) if skip is None else (k in skip):
                print(f"{ev}: '{k}' not compared: its DSO was rebuilt since the recording "
                      f"(perf {a:.2f}% offcpu {b:.2f}%)")
                continue
            checked += 1
            if abs(a - b) > 0.01 + 1e-9:
                print(f"{ev}: '{k}': perf {a:.2f}% offcpu {b:.2f}%")
                bad += 1
        print(f"{path} --sort {key} '{ev}': {oe['samples']} samples, count {oe['count']}, {checked} entries >0.5% compared")
    return 1 if bad else 0

sys.exit(main())

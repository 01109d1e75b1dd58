#!/usr/bin/env python3
# Compare `perf report --stdio --no-children -g none` with offcpu's on one
# file and sort key: per event, equal event counts, and every entry above
# 0.5% in either output present in the other with a percentage equal to
# 0.01. Sample counts come from `perf report --stats` (perf abbreviates
# them in the report header). Prints one line per event; exit 1 on mismatch.
import re, subprocess, sys
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

def main():
    perf, offcpu, path, key = sys.argv[1:5]
    args = ['--stdio', '--no-children', '--sort', key, '-g', 'none']
    p = subprocess.run([perf, 'report', '-i', path] + args, capture_output=True, text=True)
    o = subprocess.run([offcpu, 'report', '-i', path] + args[1:], capture_output=True, text=True)
    if o.returncode:
        print(f"offcpu report failed: {o.stderr}")
        return 1
    ps, os_ = sections(p.stdout), sections(o.stdout)
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
            checked += 1
            if abs(a - b) > 0.01 + 1e-9:
                print(f"{ev}: '{k}': perf {a:.2f}% offcpu {b:.2f}%")
                bad += 1
        print(f"{path} --sort {key} '{ev}': {oe['samples']} samples, count {oe['count']}, {checked} entries >0.5% compared")
    return 1 if bad else 0

sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Byte-mutated copies of a perf.data file, for test_report_hostile.sh.

    mutate.py SRC OUTDIR N SEED

Writes OUTDIR/m000.data ... with one line per copy on stdout ("NAME KIND
DETAIL"). The kinds, in turn:
  bitflip   1 to 16 random bits flipped anywhere
  truncate  cut at a random length (the header kept or not)
  field     an extreme value (0, 1, -1, INT_MAX, 2^63, file size and
            neighbours) in a field the reader trusts: header sizes and
            offsets, attr size/sample_type/read_format/flags, an ids
            section, a feature table entry, a record's type/misc/size, a
            sample's callchain length or raw size
  mixed     a field and a few bit flips
Deterministic for a given SEED.
"""
import random
import struct
import sys


def layout(b):
    """Offsets of the fields worth breaking: [(offset, width)]."""
    fields = [(o, 8) for o in (8, 16, 24, 32, 40, 48, 56, 64, 72, 80)]
    attr_size, = struct.unpack_from("<Q", b, 16)
    attrs_off, attrs_size = struct.unpack_from("<QQ", b, 24)
    data_off, data_size = struct.unpack_from("<QQ", b, 40)
    if 0 < attr_size < 4096 and attrs_off + attrs_size <= len(b):
        for a in range(attrs_off, attrs_off + attrs_size, attr_size):
            fields += [(a + 4, 4), (a + 24, 8), (a + 32, 8), (a + 40, 8),
                       (a + attr_size - 16, 8), (a + attr_size - 8, 8)]
    feat = data_off + data_size
    nfeat = sum(bin(x).count("1") for x in struct.unpack_from("<4Q", b, 72))
    for i in range(min(nfeat, 64)):
        if feat + 16 * i + 16 <= len(b):
            fields += [(feat + 16 * i, 8), (feat + 16 * i + 8, 8)]
    pos, end = data_off, min(data_off + data_size, len(b))
    while pos + 8 <= end:
        t, misc, size = struct.unpack_from("<IHH", b, pos)
        if size < 8:
            break
        fields += [(pos, 4), (pos + 4, 2), (pos + 6, 2)]
        if t == 9:  # a sample: its first words (ip, tid, time...) and deeper ones
            fields += [(pos + 8 + 8 * k, 8) for k in range(min(8, (size - 8) // 8))]
        pos += size
    return fields


def extreme(width, size):
    top = (1 << (8 * width)) - 1
    return random.choice([0, 1, top, top >> 1, 1 << (8 * width - 1), size & top,
                          (size + 1) & top, (size - 1) & top, 0x10000 & top, 7])


def main():
    src, outdir, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    random.seed(seed)
    orig = open(src, "rb").read()
    fields = layout(orig)
    kinds = ["bitflip", "truncate", "field", "mixed"]
    for i in range(n):
        b = bytearray(orig)
        kind = kinds[i % len(kinds)]
        detail = ""
        if kind in ("field", "mixed"):
            off, width = random.choice(fields)
            v = extreme(width, len(b))
            b[off:off + width] = v.to_bytes(width, "little")
            detail = "@%d/%d=%#x" % (off, width, v)
        if kind in ("bitflip", "mixed"):
            flips = random.randint(1, 16 if kind == "bitflip" else 4)
            for _ in range(flips):
                p = random.randrange(len(b))
                b[p] ^= 1 << random.randrange(8)
            detail += " %d bits" % flips
        if kind == "truncate":
            cut = random.choice([random.randrange(0, 104), random.randrange(104, len(b))])
            b = b[:cut]
            detail = "at %d of %d" % (cut, len(orig))
        name = "m%03d.data" % i
        open("%s/%s" % (outdir, name), "wb").write(bytes(b))
        print(name, kind, detail.strip())


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A recording made large from a small one, for test_report_big.sh.

    bigfile.py SRC DST [--copies K] [--offset BYTES] [--cut BYTES]
    bigfile.py --count FILE [--cut BYTES]

Writes DST: SRC's header, attrs and ids where they were, then a hole up
to --offset (a sparse file: the hole takes no space, on tmpfs either),
then SRC's data section K times over (its rounds, side-band records and
samples repeated as they are), then SRC's feature sections with their
offsets moved. The header's data section says where the data went and
how long it is. Every record of DST sits past --offset: with an offset
past 4 GiB the reader must take offsets past 32 bits, and a reader that
maps the whole file cannot open it under a `ulimit -v` below its size.

--cut BYTES stops writing at that length of DST (a recording cut off).

--count prints "SAMPLES RECORDS" of FILE's data section: the samples
and records that lie whole in the file (--cut: in its first BYTES), as
a reader that reads up to a cut-off last record finds them.
"""
import os
import struct
import sys

# magic, size, attr_size, attrs (offset, size), data (5, 6), event_types; features (9-12)
HDR = struct.Struct("<9Q4Q")
SAMPLE = 9


def args(argv):
    opts = {"copies": 1, "offset": 0, "cut": None, "count": False}
    pos = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--count":
            opts["count"] = True
        elif a in ("--copies", "--offset", "--cut"):
            i += 1
            opts[a[2:]] = int(argv[i], 0)
        else:
            pos.append(a)
        i += 1
    return pos, opts


def count(path, cut):
    with open(path, "rb") as f:
        head = f.read(HDR.size)
        if len(head) < HDR.size:
            print(0, 0)
            return
        h = HDR.unpack(head)
        data_off, data_size = h[5], h[6]
        end = data_off + data_size
        size = os.fstat(f.fileno()).st_size
        if cut is not None:
            size = min(size, cut)
        end = min(end, size)
        f.seek(data_off)
        samples = records = 0
        buf = f.read(max(0, end - data_off))
    at = 0
    while at + 8 <= len(buf):
        t, _misc, sz = struct.unpack_from("<IHH", buf, at)
        if sz < 8 or at + sz > len(buf):
            break
        records += 1
        samples += t == SAMPLE
        at += sz
    print(samples, records)


def main():
    pos, o = args(sys.argv[1:])
    if o["count"]:
        count(pos[0], o["cut"])
        return
    src, dst = pos
    b = open(src, "rb").read()
    h = list(HDR.unpack_from(b, 0))
    data_off, data_size = h[5], h[6]
    if not data_size:
        sys.exit("bigfile.py: %s has no data size in its header" % src)
    data = b[data_off:data_off + data_size]
    feat_off = data_off + data_size
    nfeat = sum(bin(x).count("1") for x in h[9:13])
    new_off = max(o["offset"], data_off)
    new_off = (new_off + 4095) // 4096 * 4096
    new_size = data_size * o["copies"]
    delta = new_off + new_size - feat_off
    tail = bytearray(b[feat_off:])
    for i in range(nfeat):  # the feature table: each section's offset moves with it
        off, size = struct.unpack_from("<QQ", tail, 16 * i)
        struct.pack_into("<QQ", tail, 16 * i, off + delta, size)
    h[5], h[6] = new_off, new_size
    cut = o["cut"]
    with open(dst, "wb") as f:
        def put(at, chunk):
            if cut is not None:
                if at >= cut:
                    return
                chunk = chunk[:cut - at]
            f.seek(at)
            f.write(chunk)
        head = bytearray(b[:data_off])
        HDR.pack_into(head, 0, *h)
        put(0, bytes(head))
        for k in range(o["copies"]):
            put(new_off + k * data_size, data)
        put(new_off + new_size, bytes(tail))
        f.truncate(min(new_off + new_size + len(tail), cut) if cut is not None else
                   new_off + new_size + len(tail))


if __name__ == "__main__":
    main()

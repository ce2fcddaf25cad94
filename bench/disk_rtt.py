#!/usr/bin/env python3
# What a small O_DIRECT read costs on this machine's disk, as a cold start from disk meets it:
# the first read after idle against one right after another, the cost by size, and two reads in
# turn, at once, or as one. Usage: python3 bench/disk_rtt.py [FOLDER] [ROUNDS]
# (FOLDER on the disk measured, default /tmp; it writes 1 MiB there and removes it).
import mmap
import os
import statistics
import sys
import threading
import time

folder = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 60
path = os.path.join(folder, "disk_rtt.%d" % os.getpid())
IDLE = 0.02  # seconds between samples: each sample's first read comes after idle


def read(size, off):
    """one O_DIRECT read of size bytes at off; its time in us"""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT wants
    t = time.perf_counter()
    os.preadv(fd, [buf], off)
    us = (time.perf_counter() - t) * 1e6
    os.close(fd)
    return us


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e6


def report(title, samples):
    print(title)
    for name, v in samples.items():
        print("  %-34s p50 %5.0f us  min %5.0f us" % (name, statistics.median(v), min(v)))


with open(path, "wb") as f:
    f.write(os.urandom(1 << 20))
    f.flush()
    os.fsync(f.fileno())
try:
    first = {"4 KiB, first after idle": [], "4 KiB, right after another": []}
    sizes = {"%d KiB, after a read" % (n >> 10): [] for n in (4096, 32768, 98304, 229376)}
    two = {"24 + 96 KiB in turn": [], "24 + 96 KiB at once (a thread)": [],
           "120 KiB as one read": []}
    for i in range(rounds):
        off = (i % 3) << 18  # a place the last sample did not read (O_DIRECT: no cache anyway)
        time.sleep(IDLE)
        first["4 KiB, first after idle"].append(read(4096, off))
        first["4 KiB, right after another"].append(read(4096, off + 4096))
        for n in (4096, 32768, 98304, 229376):
            sizes["%d KiB, after a read" % (n >> 10)].append(read(n, off))
        time.sleep(IDLE)
        read(4096, off)  # awake, as after a load's first read
        k = i % 3
        if k == 0:
            v = timed(lambda: (read(24576, off), read(98304, off + 131072)))
        elif k == 1:
            th = threading.Thread(target=read, args=(98304, off + 131072))
            v = timed(lambda: (th.start(), read(24576, off), th.join()))
        else:
            v = timed(lambda: read(24576 + 98304, off))
        two[list(two)[k]].append(v)
    report("the first read after %.0f ms idle:" % (IDLE * 1000), first)
    report("by size:", sizes)
    report("two reads (a state file, a working set):", two)
finally:
    os.unlink(path)

#!/usr/bin/env python3
"""Where a run's requests went: a slowdisk --trace file, classed by the
ext4 image's layout.

    bench/slowdisk/trace_kinds.py IMAGE TRACE

IMAGE is read, never written: the run's own, or any made by the same
mkfs command on a file of the same size (bench/slowdisk/bench.py removes
its images when a cell ends; the layout depends on mkfs's options
alone).  `dumpe2fs` gives its inode tables and bitmaps, `debugfs -R
'stat <8>'` the journal's blocks, and the rest is counted as directory
blocks ("dirs": a deletion writes no file data).  Only the requests after the trace's last "reset" line count
(the run itself, as bench.py resets the counters before it).

For each kind and direction: the requests, their mean length, and the
time the model charged them, at the hdd model's defaults with the
rotation at its mean (bench/slowdisk/README.md); then how many times
each block was written, as a histogram.  docs/BENCHMARKS.md, "A million
files and more in a tree", and the lab notes of 2026-12-06 have the
runs it explained.
"""
import bisect
import collections
import os
import re
import subprocess
import sys

SEEK_MIN, SEEK_MAX, ROTATION, RATE = 0.8e-3, 15.0e-3, 60 / 7200, 150e6


def layout(image):
    """(sorted inode-table extents, bitmap blocks, journal extents,
    block size) of an ext4 image."""
    text = subprocess.run(['dumpe2fs', image], capture_output=True, text=True,
                          check=True).stdout
    bsize = int(re.search(r'Block size:\s+(\d+)', text)[1])
    tables = sorted((int(a), int(b)) for a, b in re.findall(r'Inode table at (\d+)-(\d+)', text))
    bitmaps = {int(b) for b in re.findall(r'(?:Block|Inode) bitmap at (\d+)', text)}
    stat = subprocess.run(['debugfs', '-R', 'stat <8>', image], capture_output=True,
                          text=True, check=True).stdout
    journal = [(int(a), int(b)) for a, b in re.findall(r'\(\d+(?:-\d+)?\):(\d+)-(\d+)', stat)]
    return tables, bitmaps, journal, bsize


SHORT = {'journal': 'J', 'inode tables': 'I', 'bitmaps': 'B', 'dirs': 'D'}


def classifier(image, short=False):
    """(kind, block size): kind(block) is 'journal', 'inode tables',
    'bitmaps' or 'dirs' for a block of image (short: J, I, B or D)."""
    tables, bitmaps, journal, bsize = layout(image)
    starts = [a for a, _ in tables]

    def kind(block):
        if any(a <= block <= b for a, b in journal):
            return 'journal'
        i = bisect.bisect_right(starts, block) - 1
        if i >= 0 and tables[i][0] <= block <= tables[i][1]:
            return 'inode tables'
        return 'bitmaps' if block in bitmaps else 'dirs'
    if short:
        return (lambda block: SHORT[kind(block)]), bsize
    return kind, bsize


def run_lines(trace):
    """The lines of a trace file after its last "reset" (the run's)."""
    with open(trace) as fh:
        lines = fh.read().split('\n')
    if 'reset' in lines:
        lines = lines[len(lines) - lines[::-1].index('reset'):]
    return lines


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split('\n\n')[1])
    image, trace = sys.argv[1], sys.argv[2]
    kind, bsize = classifier(image)
    capacity = os.path.getsize(image)
    lines = run_lines(trace)
    reqs, nbytes, secs = (collections.Counter() for _ in range(3))
    written = collections.defaultdict(collections.Counter)
    head = None
    for line in lines:
        w = line.split()
        if len(w) != 4:
            continue
        off, n = int(w[2]), int(w[3])
        k = (kind(off // bsize), 'write' if w[1] == 'W' else 'read')
        t = n / RATE
        if off != head:
            d = abs(off - (head or 0))
            t += SEEK_MIN + (SEEK_MAX - SEEK_MIN) * (d / capacity) ** 0.5 + ROTATION / 2
        head = off + n
        reqs[k] += 1
        nbytes[k] += n
        secs[k] += t
        if k[1] == 'write':
            for b in range(off // bsize, (off + max(n, 1) - 1) // bsize + 1):
                written[k[0]][b] += 1
    print(f'{"kind":14} {"dir":5} {"requests":>9} {"KiB each":>9} {"model s":>8}')
    for k in sorted(reqs):
        print(f'{k[0]:14} {k[1]:5} {reqs[k]:9,} {nbytes[k] / reqs[k] / 1024:9.1f} {secs[k]:8.1f}')
    print(f'{"":14} {"":5} {sum(reqs.values()):9,} {"":9} {sum(secs.values()):8.1f}')
    for name, blocks in sorted(written.items()):
        hist = collections.Counter(blocks.values())
        print(f'{name}: {len(blocks):,} blocks written, times each: '
              + ', '.join(f'{t}x {n:,}' for t, n in sorted(hist.items())[:10]))


if __name__ == '__main__':
    main()

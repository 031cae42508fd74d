#!/usr/bin/env python3
"""The inode-table writes of a slowdisk trace: what request came before
each, how many were contiguous with it, and their lengths in blocks,
cumulative (lab notes of 2026-12-06, "Filling where the window has
room").  itable-writes.py IMAGE TRACE"""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'slowdisk'))
import trace_kinds as tk
kind, bsize = tk.classifier(sys.argv[1], short=True)
lines = tk.run_lines(sys.argv[2])
# sequences: what precedes each itable write; size hist
prevk = None; pre = collections.Counter(); sizes = collections.Counter(); seq = 0; contig = 0
lastend = None
for l in lines:
    w = l.split()
    if len(w) != 4: continue
    off, ln = int(w[2]), int(w[3])
    k = kind(off // bsize) + w[1]
    if k == 'IW':
        pre[prevk] += 1
        sizes[min(ln // 4096, 128)] += 1
        if lastend == off: contig += 1
    prevk = k; lastend = off + ln
print('before an itable write:', pre.most_common(8))
print('itable writes contiguous with the request before:', contig)
tot = sum(sizes.values())
acc = 0
for s in sorted(sizes):
    acc += sizes[s]
    if s in (1,2,4,8,16,32,64,128): print(f'<= {s} blocks: {acc/tot:.2f}')

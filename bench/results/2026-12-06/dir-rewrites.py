#!/usr/bin/env python3
"""How long after its previous write each directory block of a slowdisk
trace was written again, in 5-second bins (lab notes of 2026-12-06,
"Filling where the window has room").  dir-rewrites.py IMAGE TRACE"""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'slowdisk'))
import trace_kinds as tk
kind, bsize = tk.classifier(sys.argv[1], short=True)
lines = tk.run_lines(sys.argv[2])
last = {}; gaps = collections.Counter(); first = {}; lastw = {}
t0=None
reads = {}
for l in lines:
    w = l.split()
    if len(w) != 4: continue
    t = float(w[0]); t0 = t if t0 is None else t0
    off, ln = int(w[2]), int(w[3])
    for b in range(off // bsize, (off + ln) // bsize):
        if kind(b) != 'D': continue
        if w[1] == 'R':
            reads.setdefault(b, []).append(t - t0); continue
        if b in last:
            g = t - last[b]
            gaps[min(int(g // 5) * 5, 120)] += 1
        else:
            first[b] = t - t0
        last[b] = t
        lastw.setdefault(b, []).append(t - t0)
print('gap since previous write of the block (s): count')
for g in sorted(gaps): print(f'{g:4}-{g+5:4}: {gaps[g]}')
# lifetime: first read to last write
life = [ (max(v) - min(reads.get(b,[min(v)]))) for b, v in lastw.items()]
life.sort()
print('blocks', len(lastw), 'lifetime first-read..last-write median', life[len(life)//2], 'p10', life[len(life)//10], 'p90', life[9*len(life)//10])

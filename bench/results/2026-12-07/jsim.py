#!/usr/bin/env python3
"""jsim.py - a model of jbd2's checkpoint under one huge directory's
deletion, to try orders in seconds before a run on the disk model
(lab notes of 2026-12-07, session 58).

    jsim.py [--runblk B] [--pull G] [--unit U] [--spread S] [--no-fill]

One directory of 1,000,000 files, PERBLK (175) entries to a leaf block
in hash order (--spread S: each leaf holds 175 +- S), inodes shuffled
over 1,100,000 (16 to an inode-table block).  The order: runs of B
leaves of the listing, each by inode, the holes of 2 to 8 inode-table
blocks filled from the next run (as unlink.c does; 92% of holes have a
filler there).  --pull G: whenever a unit of U entries of the listing
(the engine's guess of a leaf: it cannot see where leaves end) has gone
G unlinks without one, its next file is unlinked at once.

The journal: a transaction closes at 1,365 distinct blocks (a 16 MiB
journal's), and when the third closes, the one two before is
checkpointed: each of its blocks that neither later one logged is
written home (inode-table blocks merged where adjacent, at most 64 a
request, as JBD2_NR_BATCH).  Calibrated on the hdd model's run of
rsync 1fbeedc in batch V (runs of half a transaction): 635 transactions
and 25,815 directory writes there, 675 and 28,357 here; its inode-table
requests (8,100) are about half the model's (17,234).  est is 8 ms a directory write, 5.3 ms an inode-table request
and 0.08 s a transaction, the hdd model's (2026-12-07/NOTES.md).
"""
import argparse
import heapq
import random
from collections import deque

PERBLK, TX, ITI, R, INODES = 175, 1365, 16, 1_000_000, 1_100_000


def order(a, rng):
    inos = rng.sample(range(1, INODES + 1), R)
    leaf, b = [], 0
    while len(leaf) < R:
        leaf += [b] * (rng.randint(PERBLK - a.spread, PERBLK + a.spread)
                       if a.spread else PERBLK)
        b += 1
    out = []                    # (leaf, ino, pulled)
    for s in range(0, R, a.runblk * PERBLK):
        js = sorted(range(s, min(R, s + a.runblk * PERBLK)),
                    key=lambda j: inos[j])
        if not a.pull:
            out += [(leaf[j], inos[j], 0) for j in js]
            continue
        unit = [j // a.unit for j in js]
        todo = {}
        for p, u in enumerate(unit):
            todo.setdefault(u, deque()).append(p)
        done, last, t = bytearray(len(js)), dict.fromkeys(todo, 0), 0
        heap = [(0, u) for u in todo]
        for p in range(len(js)):
            while heap and heap[0][0] <= t - a.pull:
                lt, u = heapq.heappop(heap)
                q = todo[u]
                while q and done[q[0]]:
                    q.popleft()
                if last[u] != lt or not q:
                    continue
                done[q[0]] = 1
                out.append((leaf[js[q[0]]], inos[js[q[0]]], 1))
                t += 1
                last[u] = t
                heapq.heappush(heap, (t, u))
            if not done[p]:
                done[p] = 1
                out.append((leaf[js[p]], inos[js[p]], 0))
                t += 1
                last[unit[p]] = t
                heapq.heappush(heap, (t, unit[p]))
    return out


def journal(a, seq, rng):
    txs, cur, logged = [], set(), {}
    n = {'dirw': 0, 'itw': 0}

    def checkpoint(k):
        its = []
        for blk in txs[k]:
            if logged[blk] == k:
                if blk[0] == 'd':
                    n['dirw'] += 1
                else:
                    its.append(blk[1])
        prev, batch = None, 0
        for x in sorted(its):
            if prev is None or x != prev + 1 or batch >= 64:
                n['itw'] += 1
                batch = 0
            batch += 1
            prev = x

    def close():
        txs.append(cur.copy())
        for blk in cur:
            logged[blk] = len(txs) - 1
        cur.clear()

    prevb = None
    for d, ino, pulled in seq:
        ib = (ino - 1) // ITI
        blks = [('d', d), ('i', ib)]
        if a.fill and not pulled and prevb is not None and prevb + 1 < ib <= prevb + 8:
            blks += [('i', x) for x in range(prevb + 1, ib) if rng.random() < 0.92]
        if not pulled:
            prevb = ib
        cur.update(blks)
        if len(cur) >= TX:
            close()
            if len(txs) >= 3:
                checkpoint(len(txs) - 3)
    close()
    for k in range(max(0, len(txs) - 3), len(txs)):
        checkpoint(k)
    est = n['dirw'] * 0.008 + n['itw'] * 0.0053 + len(txs) * 0.08
    return len(txs), n['dirw'], n['itw'], est


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--runblk', type=int, default=1000)
    ap.add_argument('--pull', type=float, default=0)
    ap.add_argument('--unit', type=int, default=PERBLK)
    ap.add_argument('--spread', type=int, default=0)
    ap.add_argument('--no-fill', dest='fill', action='store_false')
    a = ap.parse_args()
    tx, dirw, itw, est = journal(a, order(a, random.Random(1)), random.Random(2))
    print(f'runs of {a.runblk} leaves, pull {a.pull:g} (unit {a.unit}), '
          f'spread {a.spread}: {tx} transactions, {dirw} directory writes, '
          f'{itw} inode-table requests, est {est:.0f} s')


if __name__ == '__main__':
    main()

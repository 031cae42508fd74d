#!/usr/bin/env python3
"""The network file system model (bench/netfs) takes the time it says,
serves what it passes through, and caches as its --cache says.

  * one client at a time waits one round trip (--latency + --service) a
    request: the time per request counted by the model is at least that
    and at most 30% more (FUSE's and this test's own time);
  * N clients at once get min(N, --slots) times one client's requests a
    second: never more (the slots are the limit), and at least 70% of it
    (on a loaded machine the clients are late to ask);
  * files made, written, read, renamed and removed through it are so in
    the source; its counters are read from MNT/.netfs, which no listing
    shows, and count each kind;
  * --cache=none: every stat is a request; --cache=nfs: the first page
    of a listing carries its entries' attributes (READDIRPLUS), so the
    stats after it ask for fewer than all the names, and a second round
    of stats asks for none (3 s of cache).
"""

import os
import sys
import threading
import time

from rsyncfns import SCRATCHDIR, test_fail, test_skipped
from forkfns import TOP

if os.geteuid() != 0:
    test_skipped('FUSE mounts: root only here')
sys.path.insert(0, str(TOP / 'bench' / 'netfs'))
from netfs import NetFS  # noqa: E402

LAT_MS, SVC_MS, SLOTS = 5.0, 0.1, 4
RTT = (LAT_MS + SVC_MS) / 1e3
FILES = 64

src = SCRATCHDIR / 'export'
src.mkdir()
for i in range(FILES):
    (src / f'f{i}').write_bytes(b'x' * i)
(src / 'd').mkdir()


def clients(mnt, n: int, secs: float) -> float:
    """n threads stat files on mnt for secs; returns requests a second
    as the model counted them."""
    stop = time.monotonic() + secs

    def worker(k):
        i = k
        while time.monotonic() < stop:
            os.stat(mnt / f'f{i % FILES}')
            i += n
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return elapsed_rate(t0)


def elapsed_rate(t0: float) -> float:
    return fs.stats()['total'] / (time.monotonic() - t0)


def within(label: str, got: float, want: float, lo: float, hi: float) -> None:
    print(f'{label}: {got:.1f} against {want:.1f} ({got / want:.2f})')
    if not lo * want <= got <= hi * want:
        test_fail(f'{label}: {got:.1f} is not within [{lo}, {hi}] x {want:.1f}')


with NetFS(src, latency_ms=LAT_MS, service_ms=SVC_MS, slots=SLOTS, cache='none') as fs:
    mnt = fs.mnt
    # ---- What passes through ------------------------------------------
    names = sorted(os.listdir(mnt))
    if names != sorted([f'f{i}' for i in range(FILES)] + ['d']):
        test_fail(f'the mount lists {names[:8]}..., not the source')
    fs.reset()
    (mnt / 'd' / 'new').write_bytes(b'hello')
    os.rename(mnt / 'd' / 'new', mnt / 'd' / 'moved')
    if (src / 'd' / 'moved').read_bytes() != b'hello' or \
            (mnt / 'd' / 'moved').read_bytes() != b'hello':
        test_fail('a file written through the model is not in the source')
    os.unlink(mnt / 'd' / 'moved')
    os.mkdir(mnt / 'e')
    os.rmdir(mnt / 'e')
    st = fs.stats()
    print('requests:', st)
    for kind, n in (('create', 1), ('rename', 1), ('unlink', 1), ('mkdir', 1), ('rmdir', 1)):
        if st[kind] != n:
            test_fail(f'{kind}: {st[kind]} requests counted, want {n}: {st}')
    if not st['write'] or not st['getattr'] or st['total'] != sum(
            v for k, v in st.items() if k != 'total'):
        test_fail(f'the counters do not add up: {st}')
    if (src / 'd' / 'moved').exists() or (src / 'e').exists():
        test_fail('a name removed through the model is still in the source')

    # ---- One client: a round trip a request ---------------------------
    fs.reset()
    t0 = time.monotonic()
    for i in range(FILES):
        os.stat(mnt / f'f{i}')
    took = time.monotonic() - t0
    st = fs.stats()
    if st['getattr'] < FILES:
        test_fail(f'--cache=none: {FILES} stats made {st["getattr"]} requests')
    within('one client, ms a request', took / st['total'] * 1e3, RTT * 1e3, 1.0, 1.3)

    # ---- N clients: min(N, slots) times the throughput ----------------
    for n in (2, SLOTS * 3):
        fs.reset()
        rate = clients(mnt, n, 1.0)
        within(f'{n} clients, requests a second', rate, min(n, SLOTS) / RTT, 0.7, 1.02)

# A directory larger than a listing's first page, at 1 ms a request.
BIG = 1000
(src / 'big').mkdir()
for i in range(BIG):
    (src / 'big' / f'g{i}').touch()
with NetFS(src, latency_ms=1.0, service_ms=SVC_MS, slots=SLOTS, cache='nfs') as fs:
    big = fs.mnt / 'big'
    # ---- The caches of a default NFS mount ----------------------------
    fs.reset()
    os.listdir(big)
    listed = fs.stats()
    for i in range(BIG):
        os.stat(big / f'g{i}')
    first = fs.stats()
    for i in range(BIG):
        os.stat(big / f'g{i}')
    again = fs.stats()
    print('listing:', listed['total'], 'requests; then', first['getattr'] - listed['getattr'],
          'getattr for', BIG, 'stats, then', again['total'] - first['total'], 'requests')
    if listed['readdir'] < 1 or not 0 < first['getattr'] - listed['getattr'] < BIG:
        test_fail(f'--cache=nfs: the listing did not make some, and only some, names known: '
                  f'{listed} then {first}')
    if again['total'] != first['total']:
        test_fail(f'--cache=nfs: stats of names known made requests: {first} then {again}')

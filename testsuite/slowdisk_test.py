#!/usr/bin/env python3
"""The disk model (bench/slowdisk) takes the time its equations say, and
keeps the data.

Through a loop device with direct I/O on the model, as the benchmarks use
it (root):
  * hdd: random 4 KiB reads over the whole device come at the rate the
    model implies (within 15%): 1 / (seek_min + (seek_max - seek_min) *
    8/15 + rotation/2 + transfer), 8/15 being the mean of the square root
    of the distance between two uniform points; every one is counted as
    a seek;
  * hdd: 1 MiB reads in a row are charged no seek after the first, and
    run at most at the transfer rate and at least at 60% of it (the rest
    is FUSE's and the loop device's own time);
  * cloud: random reads and writes, mixed, share one budget of --iops
    (within 15%), and a 1 MiB request counts as four 256 KiB ops;
  * --trace lists each request the model served after the counters'
    reset, in order, with its offset and length;
  * ext4 made on the image, mounted through the model, written and
    unmounted, is clean (e2fsck -fn) and has what was written, read from
    the image without the model.
"""

import mmap
import os
import random
import subprocess
import sys
import threading
import time

from rsyncfns import SCRATCHDIR, test_fail, test_skipped
from forkfns import TOP, run

if os.geteuid() != 0:
    test_skipped('the model is a loop device: root only')
sys.path.insert(0, str(TOP / 'bench' / 'slowdisk'))
from slowdisk import SlowDisk  # noqa: E402

SIZE = 1 << 30
image = SCRATCHDIR / 'image'
with open(image, 'wb') as fh:
    fh.truncate(SIZE)
buf = mmap.mmap(-1, 1 << 20)	# aligned, for O_DIRECT
rng = random.Random(1)


def timed(dev: str, n: int, op, threads: int = 1) -> float:
    """Run op(fd) n times on dev (O_DIRECT), from THREADS threads at once;
    returns requests a second.  Two in flight keep the model busy, so
    that the time between one answer and the next request (FUSE's, the
    loop device's, a busy CPU's) is not counted against the model."""
    fds = [os.open(dev, os.O_RDWR | os.O_DIRECT) for _ in range(threads)]

    def worker(fd, k):
        for _ in range(k):
            op(fd)
    try:
        t0 = time.monotonic()
        ts = [threading.Thread(target=worker, args=(fd, n // threads)) for fd in fds]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return n // threads * threads / (time.monotonic() - t0)
    finally:
        for fd in fds:
            os.close(fd)


def rand4k(fd, write=False) -> None:
    off = rng.randrange(SIZE // 4096) * 4096
    view = memoryview(mmap.mmap(-1, 4096))
    if write:
        os.pwritev(fd, [view], off)
    else:
        os.preadv(fd, [view], off)


def within(label: str, got: float, want: float, lo: float, hi: float) -> None:
    print(f'{label}: {got:.1f} against {want:.1f} ({got / want:.2f})')
    if not lo * want <= got <= hi * want:
        test_fail(f'{label}: {got:.1f} is not within [{lo}, {hi}] x {want:.1f}')


# ---- hdd -------------------------------------------------------------------
SEEK_MIN, SEEK_MAX, RPM, MBPS = 0.8e-3, 15.0e-3, 7200, 150
# No scheduler: it would sort the two requests in flight and shorten the
# seeks the formula assumes random.
with SlowDisk(image, 'hdd', scheduler='none') as disk:
    N = 240
    rate = timed(disk.dev, N, rand4k, threads=2)
    want = 1 / (SEEK_MIN + (SEEK_MAX - SEEK_MIN) * 8 / 15 + 60 / RPM / 2 + 4096 / (MBPS * 1e6))
    within('hdd, random 4 KiB reads a second', rate, want, 0.85, 1.15)
    st = disk.stats()
    if st['reads'] != N or st['seeks'] != N or st['read_bytes'] != N * 4096:
        test_fail(f'hdd: {N} random reads counted as {st}')

    disk.reset()
    pos = [0]

    def seq(fd) -> None:
        os.preadv(fd, [buf], pos[0])
        pos[0] += len(buf)
    N = 200
    rate = timed(disk.dev, N, seq) * len(buf) / 1e6
    within('hdd, sequential MB a second', rate, MBPS, 0.60, 1.02)
    st = disk.stats()
    if st['seeks'] > 1 or st['read_bytes'] != N * len(buf):
        test_fail(f'hdd: sequential reads charged seeks: {st}')

# ---- cloud -----------------------------------------------------------------
IOPS = 300
with SlowDisk(image, 'cloud', [f'--iops={IOPS}'], scheduler='none') as disk:
    N = 300
    rate = timed(disk.dev, N, lambda fd: rand4k(fd, rng.random() < 0.5), threads=2)
    within('cloud, mixed random 4 KiB ops a second', rate, IOPS, 0.85, 1.15)
    st = disk.stats()
    if st['ops'] != N or st['reads'] + st['writes'] != N or not st['reads'] or not st['writes']:
        test_fail(f'cloud: {N} mixed requests counted as {st}')
    disk.reset()
    timed(disk.dev, 10, lambda fd: os.preadv(fd, [buf], 0))
    st = disk.stats()	# the kernel may split each read: ceil() per piece
    if not 40 <= st['ops'] <= 40 + st['reads'] - 1 or st['read_bytes'] != 10 << 20:
        test_fail(f'cloud: ten 1 MiB reads are not 40 256 KiB ops: {st}')

# ---- --trace: each request, in order ---------------------------------------
trace = SCRATCHDIR / 'trace.txt'
with SlowDisk(image, 'hdd', [f'--trace={trace}'], scheduler='none') as disk:
    disk.reset()
    want = [('W' if i % 3 == 0 else 'R', rng.randrange(SIZE >> 12) << 12) for i in range(12)]
    fd = os.open(disk.dev, os.O_RDWR | os.O_DIRECT)
    try:
        for rw, off in want:
            (os.pwritev if rw == 'W' else os.preadv)(fd, [memoryview(buf)[:4096]], off)
    finally:
        os.close(fd)
    st = disk.stats()
lines = trace.read_text().split('\n')
got = [(w[1], int(w[2])) for w in (line.split() for line in lines[lines.index('reset') + 1:])
       if len(w) == 4 and w[3] == '4096']
if got != want or st['reads'] + st['writes'] != len(want):
    test_fail(f'--trace: {len(got)} lines for {len(want)} requests, or not in order: {got[:4]}')
print(f'--trace: the {len(want)} requests, in order')

# ---- A file system on it keeps its data ------------------------------------
p = run(['mkfs.ext4', '-q', '-F', image])
if p.returncode:
    test_fail(f'mkfs.ext4: {p.stderr}')
mnt = SCRATCHDIR / 'mnt'
mnt.mkdir()
files = {f'd{i % 7}/f{i}': os.urandom(rng.randrange(1, 20000)) for i in range(60)}
with SlowDisk(image, 'cloud', ['--iops=2000']) as disk:
    subprocess.run(['mount', disk.dev, mnt], check=True)
    try:
        for name, data in files.items():
            (mnt / name).parent.mkdir(exist_ok=True)
            (mnt / name).write_bytes(data)
        os.unlink(mnt / 'd3' / 'f3')
        del files['d3/f3']
    finally:
        subprocess.run(['umount', mnt], check=True)
    if not disk.stats()['writes']:
        test_fail('ext4 wrote nothing through the model')
p = run(['e2fsck', '-fn', image])
if p.returncode:
    test_fail(f'e2fsck after the model:\n{p.stdout}{p.stderr}')
subprocess.run(['mount', '-o', 'loop,ro', image, mnt], check=True)
try:
    got = {str(f.relative_to(mnt)): f.read_bytes() for f in mnt.glob('d*/f*')}
finally:
    subprocess.run(['umount', mnt], check=True)
if got != files:
    test_fail(f'the image does not hold what was written: {sorted(set(got) ^ set(files))}')
print(f'ext4 through the model: {len(files)} files kept, e2fsck clean')

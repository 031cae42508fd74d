#!/usr/bin/env python3
"""One engine context per process, whatever the delete options.

rsync-de keeps one delete_engine context (one thread pool) for the whole
run and passes what differs per call (order, --max-delete, dry run) as
de_remove()'s options.  Before, --max-delete made a context, and so a
new pool, for every directory batch.  Pins, for a transfer whose 200
destination directories each hold files the source lacks, under strace:
with --delete-threads=2, however the deletions are asked for (plain,
--max-delete, --delete-delay, --delete-after, filters, --backup,
--dry-run), rsync starts at most 2 threads in all, and each run deletes
what it should.
"""

import os
import shutil
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped

if not shutil.which('strace'):
    test_skipped('strace is not installed')
THREADS = 2
DIRS = 200
src = SCRATCHDIR / 'from'
dst = SCRATCHDIR / 'to'
log = SCRATCHDIR / 'strace.log'


def make_trees():
    for t in (src, dst, SCRATCHDIR / 'bak'):
        if t.exists():
            shutil.rmtree(t)
    for d in range(DIRS):
        (src / f'd{d:03d}').mkdir(parents=True)
        (dst / f'd{d:03d}' / 'gone').mkdir(parents=True)
        for f in range(3):
            os.close(os.open(dst / f'd{d:03d}' / f'f{f}', os.O_CREAT | os.O_WRONLY))
        os.close(os.open(dst / f'd{d:03d}' / 'gone' / 'x', os.O_CREAT | os.O_WRONLY))


def left():
    return sum(len(files) for _, _, files in os.walk(dst))


cases = [
    ([], 0),
    (['--max-delete=100000'], 0),
    (['--max-delete=300'], None),
    (['--delete-delay'], 0),
    (['--delete-after'], 0),
    (['--exclude=f2'], DIRS),
    (['--backup', '--backup-dir=../bak'], 0),
    (['--dry-run'], DIRS * 4),
]
for opts, want_left in cases:
    make_trees()
    cmd = RSYNC.split() + ['-r', '--delete', f'--delete-threads={THREADS}'] + opts \
        + [f'{src}/', f'{dst}/']
    p = subprocess.run(['strace', '-f', '--seccomp-bpf', '-qq', '-e', 'trace=clone,clone3', '-o', str(log)]
                       + cmd, capture_output=True, text=True)
    threads = sum(1 for line in open(log) if 'CLONE_THREAD' in line)
    n = left()
    print(f'{" ".join(opts) or "(plain)"}: exit {p.returncode}, {threads} threads, {n} files left')
    if p.returncode not in (0, 25):
        test_fail(f'{opts}: exit {p.returncode}: {p.stderr[-2000:]}')
    if threads > THREADS:
        test_fail(f'{opts}: {threads} threads started, more than one pool of {THREADS}')
    if threads == 0 and '--dry-run' not in opts:
        test_fail(f'{opts}: no thread started: the engine did not run, nothing is pinned')
    if want_left is not None and n != want_left:
        test_fail(f'{opts}: {n} files left, want {want_left}')

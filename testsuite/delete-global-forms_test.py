#!/usr/bin/env python3
"""Every form of a deletion takes the global schedule, with stock's output.

The forms that print, log, send or count deletions ask the engine for
rsync's order, and --max-delete for an exact limit; they used to go
directory by directory whatever the schedule (issue 48).  Here each runs
with --delete-schedule=global (what AUTO picks on a slow disk) on a tree
of 12 extraneous directories whose 180 files were created in a shuffled
order, so that the directories' inodes interleave, and a directory the
source keeps.  Pins, for each form:
  * strace sees the 180 files unlinked in one ascending inode order;
  * the tree left, the exit code, the deletion lines in their order,
    every other line and the --log-file lines are stock's on the same
    tree.
The forms: -av --delete (and --delete-after, --delete-delay), -ai,
--delete-only -v, --log-file, --out-format, --stats, --max-delete above
the tree's size, and a stock client pushing through a remote shell to
rsync-de, which sends it the deletion lines (its receiver is given
--delete-schedule=global by a wrapper).  --max-delete below the tree's
size stops at stock's first N entries, exit 25; that batch goes entry by
entry, so only the output is compared there.  --backup-dir (and --backup
with its suffix, a protect rule, a failing backup directory) renames the
180 files in one ascending inode order, and the backup is stock's too;
with -vv, whose "backed up" lines would show that order, the backups go
directory by directory.

A sync whose source lacks every other file of 12 directories, scattered,
and adds one to each: with --delete (during), --delete-before, -after and
-delay, quiet and -v, and from a stock client, the 84 files go in one
ascending inode order across the directories, gathered, and the output is
stock's (deletion lines in stock's order; other lines as a set, as the
generator's and the receiver's lines interleave as they come).  The one
order that changes is pinned: with --delete-during and --log-file, the
destination's own line (its new time, .d..t......) comes before its
gathered deletions, where stock logs it after them.  With
--max-delete the directories go one by one (many runs), exact.
"""

import os
import random
import re
import shlex
import shutil
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, SRCDIR, test_fail, test_skipped
from forkfns import (
    STOCK_EQUIVALENT, age_tree, compare_same, diff, normalise, require_stock, run,
)

stock = require_stock()
fork = RSYNC.split()
if not shutil.which('strace'):
    test_skipped('strace is not installed')
LSH = str(SRCDIR / 'support' / 'lsh.sh')


def seed(base):
    """base/src (keep/k) and base/dst: keep/ with k and an extra file,
    and 12 extraneous directories of 15 files each, created in one
    shuffled order.  Returns {file name: inode} of those 180 files."""
    src, dst = base / 'src', base / 'dst'
    for d in (src / 'keep', dst / 'keep'):
        d.mkdir(parents=True)
        (d / 'k').write_text('k\n')
    (dst / 'keep' / 'extra').write_text('x\n')
    names = [(d, f) for d in range(12) for f in range(15)]
    random.Random(7).shuffle(names)
    inos = {}
    for d, f in names:
        (dst / f'gone{d}').mkdir(exist_ok=True)
        p = dst / f'gone{d}' / f'x{d}_{f}'
        p.write_text('x\n')
        inos[p.name] = os.lstat(p).st_ino
    # Times of their own, as the trees of delete-differential have:
    # whether rsync names a directory whose time it sets (-v, -i, a log)
    # must not hang on the clock's second.
    age_tree(src)
    age_tree(dst, 1_500_000_000)
    return src, dst, inos


def seed_sync(base):
    """A sync's tree: base/dst, 12 directories of 15 files created in one
    shuffled order, and base/src, a copy (cp -a) lacking every other file
    of each directory, scattered through the tree, with one new file in
    each directory to transfer.  Returns {file name: inode} of the 84
    files the sync deletes."""
    src, dst = base / 'src', base / 'dst'
    names = [(d, f) for d in range(12) for f in range(15)]
    random.Random(9).shuffle(names)
    inos = {}
    for d, f in names:
        (dst / f'd{d}').mkdir(parents=True, exist_ok=True)
        p = dst / f'd{d}' / f'x{d}_{f}'
        p.write_text('x\n')
        if f % 2:
            inos[p.name] = os.lstat(p).st_ino
    if run(['cp', '-a', str(dst), str(src)]).returncode:
        test_fail('cp -a failed')
    for d, f in names:
        if f % 2:
            (src / f'd{d}' / f'x{d}_{f}').unlink()
    for d in range(12):
        (src / f'd{d}' / 'new').write_text('n\n')
    # Times of their own, as in seed().
    age_tree(src)
    age_tree(dst, 1_500_000_000)
    return src, dst, inos


def log_lines(path, dst):
    """A --log-file's lines without their date and pid."""
    if not path.exists():
        return []
    text = re.sub(r'^\S+ \S+ \[\d+\] ', '', path.read_text(), flags=re.M)
    return [line for line in normalise(text, str(dst))
            if not line.startswith(('building file list', 'sent ', 'total size'))]


def one(label, opts, push=False, stock_opts=None, ordered_unlinks=True, shape=seed,
        gathered_log=None):
    base = SCRATCHDIR / 'forms'
    shutil.rmtree(base, ignore_errors=True)
    results = {}
    for who in ('stock', 'fork'):
        work = base / who
        src, dst, inos = shape(work)
        logf = work / 'log'
        o = [a.replace('LOG', str(logf)) for a in
             (stock_opts if who == 'stock' and stock_opts is not None else opts)]
        if push:
            # A stock client in both runs; the receiver is stock's or
            # rsync-de's, forced to the global schedule.
            server = stock
            if who == 'fork':
                server = work / 'server'
                server.write_text('#!/bin/sh\nexec %s --delete-schedule=global "$@"\n'
                                  % ' '.join(shlex.quote(a) for a in fork))
                server.chmod(0o755)
            argv = [stock] + o + ['-e', LSH, f'--rsync-path={server}',
                                  f'{src}/', f'lh:{dst}/']
        elif who == 'stock':
            argv = [stock] + o + [f'{src}/', f'{dst}/']
        else:
            argv = fork + o + ['--delete-schedule=global', f'{src}/', f'{dst}/']
        trace = work / 'strace'
        if who == 'fork':
            argv = ['strace', '-f', '-qq', '-e', 'trace=unlinkat,renameat,renameat2',
                    '-o', str(trace)] + argv
        p = run([str(a) for a in argv])
        results[who] = (dst, p, log_lines(logf, dst), trace, inos)
    (sdst, sp, slog, _, _), (fdst, fp, flog, trace, inos) = results['stock'], results['fork']
    compare_same(label, (sdst, sp), (fdst, fp))
    # --backup-dir=../bk: beside the destination.
    sbk, fbk = (sorted(str(q.relative_to(base / who / 'bk')) for q in (base / who / 'bk').rglob('*'))
                for who in ('stock', 'fork'))
    if sbk != fbk:
        test_fail(f'{label}: the backup directories differ:\n' + diff(sbk, fbk))
    # A log holds the generator's lines alone: the deletion lines in
    # stock's order, and every line stock logs.  Gathered deletions come
    # later than stock's: with --delete-during after the line of the
    # directory's own new time (rsync.1, --delete-schedule).
    sdel, fdel = ([x for x in log if x.startswith('*deleting')] for log in (slog, flog))
    if sdel != fdel or sorted(slog) != sorted(flog):
        test_fail(f'{label}: --log-file lines differ:\n' + diff(slog, flog))
    if gathered_log and not (fdel and flog.index(gathered_log) < flog.index(fdel[0])
                             and slog.index(gathered_log) > slog.index(sdel[0])):
        test_fail(f'{label}: the log does not show the deletions gathered '
                  f'after {gathered_log!r}:\n' + diff(slog, flog))
    seq = [inos[m.group(1)] for m in
           re.finditer(r'(?:unlinkat|renameat2?)\([^,]*, "(x\d+_\d+)"', trace.read_text())
           if m.group(1) in inos]
    runs = 1 + sum(1 for a, b in zip(seq, seq[1:]) if b < a)
    left = {f for _, _, fs in os.walk(fdst) for f in fs}
    want = sum(1 for n in inos if n not in left)
    if ordered_unlinks and (len(seq) != want or runs != 1):
        test_fail(f'{label}: {len(seq)} of {want} files removed or moved, in {runs} '
                  'ascending inode runs: not the global schedule')
    print(f'{label}: ok, {len(seq)} unlinks or moves in {runs} run(s)')


one('-av --delete', ['-av', '--delete'])
one('-av --delete-after', ['-av', '--delete-after'])
one('-av --delete-delay', ['-av', '--delete-delay'])
one('-ai --delete', ['-ai', '--delete'])
one('--delete-only -v', ['--delete-only', '-v'], stock_opts=STOCK_EQUIVALENT + ['-v'])
one('--log-file', ['-a', '--delete', '--log-file=LOG'], gathered_log='.d..t...... ./')
one('--out-format', ['-a', '--delete', '--out-format=%o %n'])
one('--stats', ['-a', '--delete', '--stats'])
one('--max-delete above', ['-av', '--delete', '--max-delete=1000'])
one('--max-delete below', ['-av', '--delete', '--max-delete=50'], ordered_unlinks=False)
one('stock client push -av', ['-av', '--delete'], push=True)
one('--backup-dir -av', ['-av', '--delete', '--backup', '--backup-dir=../bk'])
one('--backup-dir, a protect rule', ['-a', '--delete', '--backup', '--backup-dir=../bk',
                                     '--filter=P x3_*'])
one('--backup -v, its suffix', ['-av', '--delete', '--backup'])
one('--backup-dir that fails', ['-av', '--delete', '--backup', '--backup-dir=/dev/null/bk'],
    ordered_unlinks=False)
one('--backup-dir, a stock client pushing', ['-av', '--delete', '--backup', '--backup-dir=../bk'],
    push=True)
one('--backup-dir -vv: directory by directory', ['-avv', '--delete', '--backup',
                                                 '--backup-dir=../bk'], ordered_unlinks=False)
one('stock client push, quiet', ['-a', '--delete'], push=True)

# A sync: the entries of many directories, deleted together.
for mode in ('--delete', '--delete-before', '--delete-after', '--delete-delay'):
    one(f'sync -a {mode}', ['-a', mode], shape=seed_sync)
    one(f'sync -av {mode}', ['-av', mode], shape=seed_sync)
one('sync -ai --delete, a stock client pushing', ['-ai', '--delete'], push=True, shape=seed_sync)
one('sync --max-delete: directory by directory', ['-av', '--delete', '--max-delete=1000'],
    shape=seed_sync, ordered_unlinks=False)

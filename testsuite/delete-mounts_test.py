#!/usr/bin/env python3
"""Mount points inside a deleted tree are kept, and nothing behind them
changes.

T holds a tmpfs mount and a bind mount of a sentinel directory outside T
(same device: only a mount-root check can tell), both two levels down,
next to ordinary files.  Pins, for --delete-only, -a --delete,
--delete-delay, --delete-only -x and --backup --backup-dir:
  * the sentinel and the tmpfs contents are unchanged;
  * everything else in T is deleted; the mount points' parents stay
    ("cannot delete non-empty directory");
  * each mount point kept is reported, "cannot delete mount point: NAME"
    on stderr, and the exit is 23: the deletion asked for did not
    happen (it exited 0 without a word).  With -x the tmpfs, another
    file system, is kept quietly, as stock keeps it; the bind mount,
    which -x cannot tell from a directory (stock empties it and exits
    23), is still reported.

A btrfs subvolume inside T has a device number of its own but is no
mount point: stock rsync and rm -rf delete it, and so must rsync-de (it
kept it, "cannot delete mount point", exit 23).  On a loop-mounted
btrfs, with nested subvolumes, for -a --delete, --delete-only and -x,
the trees left, the lines printed and the exit codes are stock's.

Before --backup went through the engine, its stock recursion emptied
both mounts, moving the sentinel outside T into the backup directory
(stock rsync does the same without -x).  All mounts are undone on every
exit.
"""

import os
import shutil
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from chaoslib import crash_marks, digest_diff, entries, make_sentinel, tree_digest
from forkfns import STOCK_EQUIVALENT, Mounts, age_tree, compare_same, require_stock, run

fork = RSYNC.split()

if os.geteuid() != 0:
    test_skipped('needs root to mount')

empty = SCRATCHDIR / 'empty'
empty.mkdir()
sentinel = SCRATCHDIR / 'sentinel'
sentinel_digest = make_sentinel(sentinel)
mounts = Mounts()

MODES = [['--delete-only'], ['-a', '--delete'], ['-r', '--delete-delay'],
         ['--delete-only', '-x'],
         ['-r', '--delete', '--backup', f'--backup-dir={SCRATCHDIR}/bak']]

for mode in MODES:
    label = ' '.join(mode)
    target = SCRATCHDIR / 'T'
    for d in ('a/tmp', 'a/bind', 'b/c', 'z'):
        (target / d).mkdir(parents=True)
    for f in ('a/f', 'b/c/g', 'b/h', 'z/i', 'top'):
        (target / f).write_text(f'{f}\n')
    mounts.mount(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs'], target / 'a' / 'tmp')
    (target / 'a' / 'tmp' / 'inside').write_text('on tmpfs\n')
    tmpfs_digest = tree_digest(target / 'a' / 'tmp')
    mounts.mount(['mount', '--bind', str(sentinel)], target / 'a' / 'bind')
    try:
        # A hang raises well before runtests.py's SIGKILL, so the mounts
        # are undone.
        p = subprocess.run(fork + mode + ['-v', f'{empty}/', f'{target}/'],
                           capture_output=True, text=True, timeout=60)
        print(f'{label}: exit {p.returncode}')
        if crash_marks(p.stderr):
            test_fail(f'{label}: {p.stderr}')
        changed = digest_diff(sentinel_digest, tree_digest(sentinel))
        if changed:
            test_fail(f'{label}: the bind-mounted sentinel changed: {changed[:5]}')
        changed = digest_diff(tmpfs_digest, tree_digest(target / 'a' / 'tmp'))
        if changed:
            test_fail(f'{label}: the tmpfs inside T changed: {changed[:5]}')
        left = sorted(os.path.relpath(e, target) for e in entries(target)
                      if not e.startswith((str(target / 'a' / 'tmp') + '/',
                                           str(target / 'a' / 'bind') + '/')))
        if left != ['a', 'a/bind', 'a/tmp']:
            test_fail(f'{label}: want only the mount points and their parent '
                      f'left, got {left}')
        if p.returncode != 23:
            test_fail(f'{label}: exit {p.returncode}, want 23: {p.stderr}')
        want = ['a/bind'] if '-x' in mode else ['a/bind', 'a/tmp']
        said = sorted(line[len('cannot delete mount point: '):]
                      for line in p.stderr.splitlines()
                      if line.startswith('cannot delete mount point: '))
        if said != want:
            test_fail(f'{label}: mount points reported {said}, want {want}')
        if 'cannot delete non-empty directory: a' not in p.stdout.splitlines():
            test_fail(f'{label}: no "cannot delete non-empty directory: a" in {p.stdout}')
    finally:
        mounts.undo()
    shutil.rmtree(target)
    shutil.rmtree(SCRATCHDIR / 'bak', ignore_errors=True)


# ---- btrfs subvolumes, against stock ---------------------------------------
stock = require_stock()
btrfs = mounts.loop(['mkfs.btrfs', '-q', '-f'], SCRATCHDIR / 'btrfs.img',
                    SCRATCHDIR / 'btrfs', 256)
src = btrfs / 'src'
(src / 'keep').mkdir(parents=True)
age_tree(src)
for opts, stock_opts in ((['-a', '--delete', '-v'],) * 2,
                         (['-a', '--delete', '-x', '-v'],) * 2,
                         (['--delete-only', '-v'], STOCK_EQUIVALENT + ['-v'])):
    label = 'btrfs subvolumes: ' + ' '.join(opts)
    res = []
    for who, argv in (('stock', [stock] + stock_opts), ('fork', fork + opts)):
        dst = btrfs / who
        for d in ('keep', 'x/plain'):
            (dst / d).mkdir(parents=True)
        (dst / 'x' / 'f').write_text('f\n')
        for sv in ('x/sv', 'x/sv/d/nested'):
            (dst / sv).parent.mkdir(parents=True, exist_ok=True)
            p = run(['btrfs', 'subvolume', 'create', dst / sv])
            if p.returncode:
                test_skipped(f'btrfs subvolume create: {p.stderr.strip()}')
            (dst / sv / 'g').write_text('g\n')
        os.utime(dst, (1_500_000_000, 1_500_000_000))
        res.append((dst, run(argv + [f'{src}/', f'{dst}/'], timeout=60)))
    print(f'{label}: exit {res[1][1].returncode}, stock {res[0][1].returncode}')
    compare_same(label, res[0], res[1])
    for dst, _ in res:
        run(['btrfs', 'subvolume', 'delete', dst / 'x/sv/d/nested', dst / 'x/sv'])
        shutil.rmtree(dst, ignore_errors=True)
mounts.undo()

#!/usr/bin/env python3
"""rsync-de deletes a tree that other processes are changing under it, and
never reaches outside it.

While `--delete-only empty/ T/` and `-a --delete empty/ T/` delete a
tree of 8,000 files, two worker processes create files and directories
in it, rename directories within it, and swap directories (top-level and
nested) and files for symlinks to a sentinel tree outside T.  Pins, per
run:
  * the sentinel tree is unchanged (content, mode, owner, mtime of every
    entry, and of its root);
  * rsync neither crashes nor hangs (a timeout), prints no sanitizer
    report, and exits with a code from rsync's documented set;
  * the workers really did swap while rsync ran (otherwise the run
    proves nothing and the test fails);
  * a rerun with nothing changing exits 0 and leaves T empty (with
    --backup: nothing but the backups, *~ files, and directories that
    hold them).

Iterations: 2 per mode in `make check`; RSYNC_DE_CHAOS=N runs N per mode.
The seed of a failing run is printed.

The third mode, `-r --delete --backup`, renamed files inside the
sentinel before --backup went through the engine: the stock recursion
follows a directory swapped for a symlink after it listed it (stock rsync
3.5.1 does the same).  The engine renames each file into its backup name
through the fd of the directory it read.
"""

import os
import random
import shutil
import subprocess
import time

from rsyncfns import RSYNC, SCRATCHDIR, test_fail
from chaoslib import (
    Chaos, RSYNC_EXIT_CODES, crash_marks, digest_diff, entries, make_sentinel,
    make_tree, tree_digest,
)

fork = RSYNC.split()
TIMEOUT = 120
empty = SCRATCHDIR / 'empty'
empty.mkdir()
sentinel = SCRATCHDIR / 'sentinel'
sentinel_digest = make_sentinel(sentinel)

MODES = [['--delete-only'], ['-a', '--delete'], ['-r', '--delete', '--backup']]
runs = int(os.environ.get('RSYNC_DE_CHAOS', '2'))
base_seed = int(os.environ.get('RSYNC_DE_CHAOS_SEED', random.randrange(1 << 20)))


def rsync(argv, label):
    try:
        p = subprocess.run(argv, capture_output=True, text=True,
                           errors='surrogateescape', timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        test_fail(f'{label}: rsync hung (no exit after {TIMEOUT}s)')
    marks = crash_marks(p.stderr)
    if marks or p.returncode not in RSYNC_EXIT_CODES:
        test_fail(f'{label}: exit {p.returncode}, {marks}:\n{p.stderr[-3000:]}')
    return p


for it in range(runs):
    for mode in MODES:
        seed = base_seed + it
        label = f'seed {seed} {" ".join(mode)}'
        print(label)
        target = SCRATCHDIR / 'T'
        shutil.rmtree(target, ignore_errors=True)
        make_tree(target, 40, 20, 10)
        chaos = Chaos(target, sentinel, seed, 2, SCRATCHDIR)
        t0 = t1 = 0
        try:
            # Let the workers get going, so swaps exist before the walk
            # starts as well as during it.
            time.sleep(0.1)
            t0 = time.monotonic()
            p = rsync(fork + mode + [f'{empty}/', f'{target}/'], label)
            t1 = time.monotonic()
        finally:
            counts = chaos.stop(t0, t1)
        print(f'  exit {p.returncode} after {t1 - t0:.2f}s; worker ops meanwhile: {counts}')
        changed = digest_diff(sentinel_digest, tree_digest(sentinel))
        if changed:
            test_fail(f'{label}: the sentinel outside T changed: {changed[:5]}')
        swaps = counts.get('swap-dir', 0) + counts.get('swap-top', 0)
        if swaps == 0:
            test_fail(f'{label}: no directory was swapped for a symlink while '
                      f'rsync ran ({counts}); the run proves nothing')
        p = rsync(fork + mode + [f'{empty}/', f'{target}/'], f'{label} rerun')
        if p.returncode != 0:
            test_fail(f'{label}: the rerun exited {p.returncode}:\n{p.stderr[-3000:]}')
        left = entries(target)
        if '--backup' in mode:
            # The backups stay (rsync protects *~ when it makes them), and
            # so do the directories that hold them; nothing else may.
            held = {os.path.dirname(e) for e in left if e.endswith('~')}
            for e in list(held):
                while e.startswith(str(target) + '/'):
                    e = os.path.dirname(e)
                    held.add(e)
            left = [e for e in left if not e.endswith('~') and e not in held]
        if left:
            test_fail(f'{label}: the rerun left {len(left)} entries: {left[:5]}')
        changed = digest_diff(sentinel_digest, tree_digest(sentinel))
        if changed:
            test_fail(f'{label}: the rerun changed the sentinel: {changed[:5]}')

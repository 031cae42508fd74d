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
  * a rerun with nothing changing exits 0 and leaves T empty.

Iterations: 2 per mode in `make check`; RSYNC_DE_CHAOS=N runs N per mode.
The seed of a failing run is printed.

RSYNC_DE_STRICT=1 (or =backup-race) adds `-r --delete --backup`, which
fails today: --backup does not go through the engine, and the stock
recursion it keeps renames files inside the sentinel when a directory it
listed is swapped for a symlink before it gets there (stock rsync 3.5.1
does the same).
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

MODES = [['--delete-only'], ['-a', '--delete']]
STRICT = os.environ.get('RSYNC_DE_STRICT', '')
if STRICT == '1' or 'backup-race' in STRICT.split(','):
    MODES.append(['-r', '--delete', '--backup'])
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
        if left:
            test_fail(f'{label}: the rerun left {len(left)} entries: {left[:5]}')
        changed = digest_diff(sentinel_digest, tree_digest(sentinel))
        if changed:
            test_fail(f'{label}: the rerun changed the sentinel: {changed[:5]}')

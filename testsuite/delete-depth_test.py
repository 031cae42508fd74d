#!/usr/bin/env python3
"""A tree deeper than PATH_MAX is deleted completely, within a small fd limit.

A chain of 5,000 directories (paths of 10,000 bytes, beyond PATH_MAX),
each holding a file and a symlink to a sentinel directory outside, goes
with --delete-only and with -a --delete, the second under RLIMIT_NOFILE
32.  Pins: exit 0, nothing left, the sentinel unchanged.  (Stock rsync
stops with "cannot delete non-empty directory" and exit 23 on this tree.)
"""

import os
import shutil
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail
from chaoslib import crash_marks, digest_diff, make_sentinel, tree_digest

fork = RSYNC.split()
DEPTH = 5000
empty = SCRATCHDIR / 'empty'
empty.mkdir()
sentinel = SCRATCHDIR / 'sentinel'
sentinel_digest = make_sentinel(sentinel)


def deep_chain(root):
    """root/d/d/.../d, each level with a file and a symlink outside; built
    with directory fds because the paths exceed PATH_MAX."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(DEPTH):
            os.mkdir('d', dir_fd=fd)
            os.close(os.open('f', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
            os.symlink(str(sentinel), 'out', dir_fd=fd)
            nfd = os.open('d', os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)


for prefix, mode in (([], ['--delete-only']),
                     (['prlimit', '--nofile=32'], ['-a', '--delete'])):
    label = ' '.join(prefix + mode)
    target = SCRATCHDIR / 'T'
    deep_chain(target)
    p = subprocess.run(prefix + fork + mode + [f'{empty}/', f'{target}/'],
                       capture_output=True, text=True, timeout=120)
    print(f'{label}: exit {p.returncode}')
    if p.returncode != 0 or crash_marks(p.stderr):
        test_fail(f'{label}: exit {p.returncode}: {p.stderr[-2000:]}')
    if os.listdir(target):
        test_fail(f'{label}: left {os.listdir(target)}')
    changed = digest_diff(sentinel_digest, tree_digest(sentinel))
    if changed:
        test_fail(f'{label}: the sentinel changed: {changed[:5]}')
    shutil.rmtree(target)

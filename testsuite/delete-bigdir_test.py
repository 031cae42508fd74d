#!/usr/bin/env python3
"""A directory bigger than rsync reads at once loses only what the source lacks.

Without reports in stock's order (no -v, no filters, no limit), rsync
holds at most 524,288 of a directory's targets (delengine.c, DEL_READ_MAX),
gives them to the engine in inode order, 65,536 per call (DEL_RUN_MAX),
then reads on.  That relies on readdir() returning every remaining entry
once while earlier ones are unlinked.  T holds 600,000 files and two
subdirectories; the source has every 997th file and one subdirectory.
After --delete-only, T holds exactly the source's names, on a loop-mounted
ext4 (its readdir goes by hash) and on a tmpfs (by offset).  Root only.
"""

import os
import shutil
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from chaoslib import crash_marks
from forkfns import Mounts

fork = RSYNC.split()
NFILES = 600_000
KEEP_EVERY = 997


def make_tree(target, src):
    """target gets NFILES files and keep/, src every KEEP_EVERY-th of them
    and keep/ too; returns src's listing, relative to it."""
    for d in (target / 'keep', target / 'gone', src / 'keep'):
        d.mkdir(parents=True)
    for d in (target / 'keep', src / 'keep', target / 'gone'):
        (d / 'x').write_bytes(b'')
    fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(NFILES):
            name = f'f{i:06d}'
            os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
            if i % KEEP_EVERY == 0:
                (src / name).write_bytes(b'')
    finally:
        os.close(fd)
    return listing(src)


def listing(root):
    out = set()
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for n in dirs + files:
            out.add(os.path.normpath(os.path.join(rel, n)))
    return out


def check(where):
    label = f'{where.name}: --delete-only'
    target, src = where / 'T', where / 'src'
    want = make_tree(target, src)
    p = subprocess.run(fork + ['--delete-only', f'{src}/', f'{target}/'],
                       capture_output=True, text=True, timeout=240)
    print(f'{label}: exit {p.returncode}')
    if p.returncode != 0 or crash_marks(p.stderr):
        test_fail(f'{label}: exit {p.returncode}: {p.stderr[-2000:]}')
    got = listing(target)
    if got != want:
        test_fail(f'{label}: kept {len(got)} names, the source has '
                  f'{len(want)}; lost {sorted(want - got)[:5]}, '
                  f'left {sorted(got - want)[:5]}')
    shutil.rmtree(target)
    shutil.rmtree(src)


if os.geteuid() != 0:
    test_skipped('needs root for its mounts (a big directory on this '
                 'machine\'s own disk takes minutes to make)')
mounts = Mounts()
check(mounts.loop(['mkfs.ext4', '-q', '-F', '-N', '700000'],
                  SCRATCHDIR / 'ext4.img', SCRATCHDIR / 'ext4', 1024))
check(mounts.mount(['mount', '-t', 'tmpfs', '-o', 'size=1g', 'tmpfs'],
                   SCRATCHDIR / 'tmpfs'))

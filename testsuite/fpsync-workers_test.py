#!/usr/bin/env python3
"""rsync-de as the rsync of fpsync: two workers prune one tree together.

fpsync (Debian package fpart) splits a tree into partitions and runs one
rsync per partition, several at a time.  With -E each job is `rsync -d
--relative --delete --delete-after --files-from=PART`, so every directory
the source has is pruned by exactly one job.  Pins, with rsync-de as the
rsync (-T) and --existing --ignore-existing added to its options (fpsync
refuses any option containing "--delete", so --delete-only itself cannot
be passed; these two make the jobs delete-only all the same):
  * fpsync -n 2 runs more than one job and leaves exactly what the source
    has: extraneous files and whole subtrees gone, kept files with their
    content and mtime, nothing created;
  * the same with the destination on a host reached over ssh (a loopback
    sshd; the jobs push to it), when root can start one.
"""

import os
import shutil

from rsyncfns import RSYNC, SCRATCHDIR, makepath, test_fail, test_skipped
from forkfns import chown_tree, loopback_sshd, run

FPSYNC = shutil.which('fpsync')
if not FPSYNC:
    test_skipped('fpsync (Debian package fpart) is not installed')
rsync_bin = RSYNC.split()[0]
OPTS = '-lptgoD --numeric-ids --existing --ignore-existing'


def seed(work):
    src, dst = work / 'src', work / 'dst'
    for d in range(6):
        makepath(src / f'd{d}', dst / f'd{d}' / 'sub' / 'deeper')
        (src / f'd{d}' / 'k.txt').write_text('source\n')
        (dst / f'd{d}' / 'k.txt').write_text('kept\n')
        os.utime(dst / f'd{d}' / 'k.txt', (1_000_000_000, 1_000_000_000))
        (src / f'd{d}' / 'new.txt').write_text('not to be created\n')
        for f in range(10):
            (dst / f'd{d}' / f'x{f}').write_text('x\n')
            (dst / f'd{d}' / 'sub' / 'deeper' / f'y{f}').write_text('y\n')
    for g in range(3):
        makepath(dst / f'gone{g}' / 'a' / 'b')
        (dst / f'gone{g}' / 'a' / 'b' / 'f').write_text('f\n')
    return src, dst


def check(work, dst, label):
    want = sorted(['d%d' % d for d in range(6)] + ['d%d/k.txt' % d for d in range(6)])
    got = sorted(str(p.relative_to(dst)) for p in dst.rglob('*'))
    if got != want:
        test_fail(f'{label}: left {got}')
    for d in range(6):
        k = dst / f'd{d}' / 'k.txt'
        if k.read_text() != 'kept\n' or int(k.stat().st_mtime) != 1_000_000_000:
            test_fail(f'{label}: {k} was changed')
    parts = list((work / 'tmp').rglob('part.*'))
    if len(parts) < 2:
        test_fail(f'{label}: fpsync made {len(parts)} partition(s), wanted several jobs')


def fpsync(work, src, dst_url, opts=OPTS, env=None):
    (work / 'tmp').mkdir()
    proc = run([FPSYNC, '-n', '2', '-f', '4', '-E', '-t', work / 'tmp', '-T', rsync_bin,
                '-o', opts, f'{src}/', f'{dst_url}/'], env=env)
    if proc.returncode != 0:
        logs = ''.join(p.read_text() for p in (work / 'tmp').rglob('*.stderr'))
        test_fail(f'fpsync exited {proc.returncode}: {proc.stdout}{proc.stderr}{logs}')


# ---- Two local workers ---------------------------------------------------------------------
work = SCRATCHDIR / 'local'
src, dst = seed(work)
fpsync(work, src, dst)
check(work, dst, 'local')

# ---- Two workers pushing to a host over ssh ------------------------------------------------
if os.geteuid() == 0:
    with loopback_sshd(SCRATCHDIR / 'sshd') as (ssh, pw):
        work = SCRATCHDIR / 'remote'
        src, dst = seed(work)
        os.chmod(work, 0o755)
        chown_tree(dst, (pw.pw_uid, pw.pw_gid))
        fpsync(work, src, f'127.0.0.1:{dst}', opts=f'{OPTS} --rsync-path={rsync_bin}',
               env=dict(os.environ, RSYNC_RSH=ssh))
        check(work, dst, 'over ssh')

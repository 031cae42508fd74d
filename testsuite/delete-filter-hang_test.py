#!/usr/bin/env python3
"""A filtered delete finishes when a deleted subtree holds a directory that
cannot be entered.

With any filter rule, rsync-de asks its filter about each directory the
engine empties (the engine's enter_dir hook).  A directory the engine
could not enter there -- a mount point, an unreadable directory -- was
never finished, and rsync waited for it forever, keep-alives flowing,
so --timeout did not end it either (issue 22).  Pins:
  * a tmpfs mount point two levels down, with --exclude, -C, --filter,
    an --include rule, --delete-delay, and the everyday
    `-a --delete --exclude='*.tmp'` with a file to transfer: rsync
    returns, everything else in T goes, the mount and its contents stay,
    its parent says "cannot delete non-empty directory: a" (the exit code
    for a kept mount point is not pinned here: 0, or 23 where it is
    reported as an error);
  * a root-owned mode-000 directory inside a tree that `nobody` deletes
    with --exclude: rsync returns with stock's lines, stock's tree and
    stock's exit code (23).
Each run has a 60 s timeout; a hang kills its process group and fails.
Needs root (mount, setpriv); all mounts are undone on every exit.
"""

import os
import shutil
import signal
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from chaoslib import crash_marks, entries
from forkfns import RSYNC_STOCK, Mounts, assert_same_tree

fork = RSYNC.split()
TIMEOUT = 60
NOBODY = 65534

if os.geteuid() != 0:
    test_skipped('needs root to mount and to run as nobody')


def bounded(argv, label):
    """Run argv in a process group of its own; on a hang kill the group
    (rsync's forked children too: a hung one ignored SIGTERM) and fail."""
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         errors='surrogateescape', start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        test_fail(f'{label}: no exit after {TIMEOUT} s (hang)')
    if crash_marks(err):
        test_fail(f'{label}: {err}')
    return p.returncode, out, err


empty = SCRATCHDIR / 'empty'
empty.mkdir()
src = SCRATCHDIR / 'S'
src.mkdir()
(src / 'new').write_text('transferred\n')
mounts = Mounts()

# ---- A mount point inside a deleted subtree, under every kind of filter ----
CASES = [
    (['--delete-only', '--exclude=zzz'], empty, []),
    (['--delete-only', '-C'], empty, []),
    (['--delete-only', '--filter=- zzz'], empty, []),
    (['--delete-only', '--include=*'], empty, []),
    (['-r', '--delete-delay', '--exclude=zzz'], empty, []),
    (['-a', '--delete', '--exclude=*.tmp'], src, ['new']),
]
for opts, source, transferred in CASES:
    label = ' '.join(opts)
    target = SCRATCHDIR / 'T'
    for d in ('a/mnt', 'b/c'):
        (target / d).mkdir(parents=True)
    for f in ('a/f', 'b/c/g', 'b/h', 'top'):
        (target / f).write_text(f'{f}\n')
    mounts.mount(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs'], target / 'a' / 'mnt')
    (target / 'a' / 'mnt' / 'inmount').write_text('on tmpfs\n')
    try:
        rc, out, err = bounded(fork + opts + [f'{source}/', f'{target}/'], label)
        print(f'{label}: exit {rc}')
        if rc not in (0, 23):
            test_fail(f'{label}: exit {rc}: {err}')
        if not (target / 'a' / 'mnt' / 'inmount').exists():
            test_fail(f'{label}: the mount point was emptied')
        left = sorted(os.path.relpath(e, target) for e in entries(target))
        want = sorted(['a', 'a/mnt', 'a/mnt/inmount'] + transferred)
        if left != want:
            test_fail(f'{label}: want {want} left, got {left}')
        if 'cannot delete non-empty directory: a' not in out.splitlines():
            test_fail(f'{label}: no "cannot delete non-empty directory: a" in {out}')
    finally:
        mounts.undo()
    shutil.rmtree(target)

# ---- An unreadable directory, deleted by an unprivileged user --------------
if not shutil.which('setpriv'):
    test_skipped('setpriv (util-linux) is not installed')
if not os.access(RSYNC_STOCK, os.X_OK):
    test_skipped(f'no stock rsync at {RSYNC_STOCK} (make stock)')
as_nobody = ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}', '--clear-groups']
os.chmod(SCRATCHDIR, 0o755)
os.chmod(empty, 0o755)


def unreadable_tree(root):
    """root (nobody's) holds files and a/b/sealed: root's, mode 000."""
    (root / 'a' / 'b' / 'sealed').mkdir(parents=True)
    (root / 'a' / 'b' / 'sealed' / 'x').write_text('x\n')
    (root / 'a' / 'f').write_text('f\n')
    (root / 'z').mkdir()
    (root / 'z' / 'g').write_text('g\n')
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames + ['.']:
            if 'sealed' not in os.path.join(dirpath, n):
                os.lchown(os.path.join(dirpath, n), NOBODY, NOBODY)
    os.chmod(root / 'a' / 'b' / 'sealed', 0)


results = {}
for name, argv in (('stock', [RSYNC_STOCK, '-r', '--delete', '--existing',
                              '--ignore-existing']),
                   ('fork', fork + ['--delete-only'])):
    root = SCRATCHDIR / f'u-{name}'
    unreadable_tree(root)
    results[name] = (root, bounded(as_nobody + argv + ['--exclude=zzz', f'{empty}/', f'{root}/'],
                                   f'unreadable, {name}'))
(sroot, (src_rc, sout, serr)), (froot, (frc, fout, ferr)) = results['stock'], results['fork']
print(f'unreadable: exit {frc}, stock {src_rc}')


def lines(text, root):
    return [line.replace(str(root), 'ROOT') for line in text.splitlines()
            if not line.startswith('rsync error:')]


if frc != src_rc:
    test_fail(f'unreadable: exit {frc}, stock {src_rc}\n{ferr}')
if lines(ferr, froot) != lines(serr, sroot):
    test_fail(f'unreadable: stderr differs:\nfork:  {ferr}\nstock: {serr}')
if lines(fout, froot) != lines(sout, sroot):
    test_fail(f'unreadable: stdout differs:\nfork:  {fout}\nstock: {sout}')
assert_same_tree(sroot, froot, 'unreadable')
subprocess.run(['rm', '-rf', str(sroot), str(froot)], check=True)

#!/usr/bin/env python3
"""Deleting through the engine is safe and fails the way stock rsync fails.

Pins:
  * a symlink inside the deleted tree that points at a directory outside
    it is removed as a link; nothing outside the tree is touched;
  * an unlink that fails (EACCES, as an unprivileged user) prints stock's
    "delete_file: unlink(NAME) failed: ..." line, keeps the entry's
    ancestors ("cannot delete non-empty directory"), everything else
    still goes, and the exit code is 23 -- the same lines and the same
    tree as ./rsync-stock given the same inputs;
  * --delete-only leaves the destination directory itself in place.
"""

import os
import shutil
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from forkfns import assert_same_tree, require_stock, run

stock = require_stock()
fork = RSYNC.split()
empty = SCRATCHDIR / 'empty'
empty.mkdir(exist_ok=True)

# ---- A symlink to an outside directory is not followed ---------------------
outside = SCRATCHDIR / 'outside'
outside.mkdir()
(outside / 'precious').write_text('keep me\n')
target = SCRATCHDIR / 'target'
(target / 'a' / 'b').mkdir(parents=True)
(target / 'a' / 'b' / 'f').write_text('x\n')
os.symlink(outside, target / 'a' / 'link-to-outside')
os.symlink(outside, target / 'top-link')
p = run(fork + ['--delete-only', f'{empty}/', f'{target}/'])
if p.returncode != 0:
    test_fail(f'--delete-only exited {p.returncode}: {p.stderr}')
if not (outside / 'precious').exists():
    test_fail('a file outside the tree was deleted through a symlink')
if os.listdir(target):
    test_fail(f'left behind: {os.listdir(target)}')
if not target.is_dir():
    test_fail('--delete-only removed the destination directory itself')

# ---- A failed unlink: stock's message, the rest still goes, exit 23 --------
if os.geteuid() != 0:
    test_skipped('needs root to build a tree an unprivileged user cannot fully delete')
NOBODY = 65534


def failing_tree(root):
    """root (owned by nobody) holds deletable entries and one locked dir."""
    (root / 'free' / 'sub').mkdir(parents=True)
    (root / 'free' / 'sub' / 'f1').write_text('1\n')
    (root / 'free' / 'f2').write_text('2\n')
    (root / 'locked').mkdir()
    (root / 'locked' / 'stuck').write_text('3\n')
    (root / 'z-file').write_text('4\n')
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames + ['.']:
            os.lchown(os.path.join(dirpath, n), NOBODY, NOBODY)
    # root owns locked/ (mode 755): nobody cannot unlink what is inside.
    os.chown(root / 'locked', 0, 0)


as_nobody = ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}', '--clear-groups']
if not shutil.which('setpriv'):
    test_skipped('setpriv (util-linux) is not installed')
os.chmod(SCRATCHDIR, 0o755)
os.chmod(empty, 0o755)
results = {}
for name, argv in (('stock', [stock]), ('fork', fork)):
    root = SCRATCHDIR / f'fail-{name}'
    failing_tree(root)
    p = run(as_nobody + argv + ['--delete-only' if name == 'fork' else '-r',
                                *([] if name == 'fork' else
                                  ['--delete', '--existing', '--ignore-existing']),
                                f'{empty}/', f'{root}/'])
    results[name] = (root, p)

(sroot, sp), (froot, fp) = results['stock'], results['fork']
if fp.returncode != 23 or sp.returncode != 23:
    test_fail(f'exit codes: fork {fp.returncode}, stock {sp.returncode}\n{fp.stderr}')
want = 'delete_file: unlink(locked/stuck) failed: Permission denied (13)'
if want not in fp.stderr:
    test_fail(f'missing {want!r} in:\n{fp.stderr}')


def lines(text, root):
    return [l.replace(str(root), 'ROOT') for l in text.splitlines()
            if not l.startswith('rsync error:')]


if lines(fp.stderr, froot) != lines(sp.stderr, sroot):
    test_fail(f'stderr differs:\nfork:  {fp.stderr}\nstock: {sp.stderr}')
if lines(fp.stdout, froot) != lines(sp.stdout, sroot):
    test_fail(f'stdout differs:\nfork:  {fp.stdout}\nstock: {sp.stdout}')
assert_same_tree(sroot, froot, 'after a failed unlink')
if sorted(os.listdir(froot)) != ['locked']:
    test_fail(f'not everything else went: {os.listdir(froot)}')
subprocess.run(['rm', '-rf', str(sroot), str(froot)])

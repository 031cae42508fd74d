#!/usr/bin/env python3
"""What rsync cannot list, stat or name, rsync-de reports as stock does.

The differential test in environments that a random tree never makes.
In each, identical destinations go through ./rsync-stock and ./rsync with
-a --delete, --delete-after and --delete-only (stock: its equivalent);
the exit codes, the trees left and every line printed must match, and
the exit must be 23: an entry left behind never exits 0.  In each, src
has sub/ and zlater/; the destination has a top-level file beside them,
extraneous entries in sub/ and zlater/extra.  Stock deletes the rest of
the directory where its listing failed, then "IO error encountered --
skipping file deletion": zlater/extra stays.

  * a near-PATH_MAX directory that the source has, holding an extraneous
    200-byte name: "filename overflows max-path len by N";
  * ext4 without d_type (mkfs -O ^filetype), an extraneous entry's inode
    cleared with debugfs (root): "readlink_stat(...) failed: Structure
    needs cleaning";
  * faultfs (testsuite/lib/faultfs.c, FUSE; root), getattr failing with EIO
    for one extraneous entry, every entry listed as DT_UNKNOWN:
    "readlink_stat(...) failed: Input/output error";
  * faultfs, reading sub/ failing with EIO: "readdir(sub): ...", and
    none of sub/'s entries deleted;
  * faultfs, reading a directory inside an extraneous subtree failing:
    "readdir(old/inner): ..." (rsync-de said "opendir ... failed"), and
    "cannot delete non-empty directory" for it and its parent;
  * faultfs, getattr of a directory inside an extraneous subtree
    failing: "readlink_stat(old/inner) failed: ..." (rsync-de said
    "opendir ... failed" and "rmdir ... failed").
"""

import atexit
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from rsyncfns import SCRATCHDIR, test_fail, test_skipped
from forkfns import (
    STOCK_EQUIVALENT, TOP, Mounts, age_tree, compare_same, require_stock, run,
)
from rsyncfns import RSYNC

stock = require_stock()
fork = RSYNC.split()
OPTION_SETS = [
    (['-a', '--delete', '-v'],) * 2,
    (['-a', '--delete-after', '-v'],) * 2,
    (['--delete-only', '-v'], STOCK_EQUIVALENT + ['-v']),
]


def layout(root: Path, extra=()) -> None:
    """src/{sub,zlater}/ and three destinations, dst-0..2 (one per option
    set), each with top, sub/{gone,keep}, zlater/extra and EXTRA (names of
    files to make in it; a name ending in / is a directory)."""
    for d in ('src/sub', 'src/zlater'):
        (root / d).mkdir(parents=True)
    age_tree(root / 'src')
    for i in range(len(OPTION_SETS)):
        for who in ('stock', 'fork'):
            dst = root / f'{who}-{i}'
            for d in ('sub', 'zlater'):
                (dst / d).mkdir(parents=True)
            for f in ('top', 'sub/gone', 'sub/keep', 'zlater/extra') + tuple(extra):
                if f.endswith('/'):
                    (dst / f).mkdir(parents=True)
                else:
                    (dst / f).parent.mkdir(parents=True, exist_ok=True)
                    (dst / f).write_text(f'{f}\n')
            # Only the root is compared by time (-a); see age_tree().
            os.utime(dst, (1_500_000_000, 1_500_000_000))


def compare(label: str, root: Path, want: str, back=None) -> None:
    """Run every option set on root's destinations; stock and fork must
    agree, exit 23, and stock's stderr must say WANT (so that the
    environment made the error it is here for).  The trees left are
    read from BACK, when given, which root (a faultfs mount) serves; so
    is the source, whose faults would be the sender's."""
    src = (back or root) / 'src'
    for i, (opts, stock_opts) in enumerate(OPTION_SETS):
        name = f'{label}: {" ".join(opts)}'
        print(name)
        res = []
        for who, argv in (('stock', [stock] + stock_opts), ('fork', fork + opts)):
            dst = root / f'{who}-{i}'
            res.append((dst, run(argv + [f'{src}/', f'{dst}/'], timeout=120)))
        if want not in res[0][1].stderr:
            test_fail(f'{name}: the environment did not make stock say {want!r}:\n'
                      f'{res[0][1].stderr[-500:]}')
        listed = back and (back / f'stock-{i}', back / f'fork-{i}')
        compare_same(name, res[0], res[1], listed)
        if res[1][1].returncode != 23:
            test_fail(f'{name}: exit {res[1][1].returncode}, want 23')


# ---- A name that overflows rsync's path limit ------------------------------
# sub/ is 16 levels of 250-byte names deep (4,016 bytes): a 200-byte name
# in it is past MAXPATHLEN (4,096), counted from the destination.  The
# trees sit right under /tmp: the sender opens the source's deepest
# directories by their full paths, which a long scratch path (make
# check's) would take past PATH_MAX.
root = Path(tempfile.mkdtemp(prefix='rde-', dir='/tmp'))
atexit.register(subprocess.run, ['rm', '-rf', str(root)])
layout(root)
for d in [root / 'src'] + sorted(root.glob('*-[0-9]')):
    fd = os.open(d / 'sub', os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(16):
        os.mkdir('d' * 250, dir_fd=fd)
        nfd = os.open('d' * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    if d.name != 'src':
        for leaf in ('n' * 200, 'short'):
            os.close(os.open(leaf, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.close(fd)
    # The same times on both sides, so -a changes no directory: set
    # through fds, as the paths are too long for utime() by name.
    fd = os.open(d / 'sub', os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(16):
        os.utime('d' * 250, (1_600_000_000, 1_600_000_000), dir_fd=fd)
        nfd = os.open('d' * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(fd)
    os.utime(d / 'sub', (1_600_000_000, 1_600_000_000))
compare('a name past MAXPATHLEN', root, 'filename overflows max-path len by ')
subprocess.run(['rm', '-rf', str(root)], check=True)

# ---- The rest mounts file systems ------------------------------------------
if os.geteuid() != 0:
    test_skipped('ext4 images and FUSE mounts need root')
if not os.path.exists('/dev/fuse') or not os.path.exists('/dev/loop-control'):
    test_skipped('no /dev/fuse or /dev/loop-control here (a chroot or container)')
mounts = Mounts()

# ---- ext4 without d_type, an inode cleared ---------------------------------
root = SCRATCHDIR / 'nofiletype'
img = SCRATCHDIR / 'nofiletype.img'
mounts.loop(['mkfs.ext4', '-q', '-O', '^filetype'], img, root, 64)
layout(root, ['sub/bad'])
inodes = [os.lstat(p).st_ino for p in sorted(root.glob('*-[0-9]/sub/bad'))]
mounts.undo()
for ino in inodes:
    p = run(['debugfs', '-w', '-R', f'clri <{ino}>', img])
    if p.returncode:
        test_fail(f'debugfs clri <{ino}>: {p.stderr}')
mounts.mount(['mount', '-o', 'loop', str(img)], root)
compare('ext4 -O ^filetype, an inode cleared', root,
        'sub/bad") failed: Structure needs cleaning (117)')
mounts.undo()
img.unlink()

# ---- faultfs: getattr and readdir fail -------------------------------------
faultfs = SCRATCHDIR / 'faultfs'
p = run(['sh', '-c', f'cc -O2 -o {faultfs} {TOP}/testsuite/lib/faultfs.c '
         '$(pkg-config --cflags --libs fuse3)'])
if p.returncode:
    test_fail(f'cannot build faultfs (libfuse3-dev, pkg-config):\n{p.stderr}')


def faulty(label: str, fault: list, extra: list, want: str) -> None:
    """compare() on a faultfs mount with the FAULT options, over a backing
    directory laid out with EXTRA."""
    back, mnt = SCRATCHDIR / 'back', SCRATCHDIR / 'mnt'
    shutil.rmtree(back, ignore_errors=True)
    back.mkdir()
    layout(back, extra)
    mnt.mkdir(exist_ok=True)
    daemon = subprocess.Popen([faultfs] + fault + [back, mnt, '-f', '-s'],
                              stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            if os.path.ismount(mnt) or daemon.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.ismount(mnt):
            test_skipped(f'cannot mount faultfs: {daemon.stderr.read() if daemon.poll() is not None else "timeout"}')
        compare(label, mnt, want, back)
    finally:
        if subprocess.run(['umount', str(mnt)], capture_output=True).returncode:
            subprocess.run(['umount', '-l', str(mnt)], capture_output=True)
        daemon.wait(timeout=30)
    shutil.rmtree(back)


faulty('FUSE, getattr EIO for sub/bad', ['--getattr-eio=bad', '--no-dtype'],
       ['sub/bad'], 'sub/bad") failed: Input/output error (5)')
faulty('FUSE, readdir EIO for sub/', ['--readdir-eio=sub'], [],
       'readdir("/')
faulty('FUSE, readdir EIO inside an extraneous tree', ['--readdir-eio=inner'],
       ['old/inner/f1', 'old/inner/f2', 'old/g'], 'old/inner"): Input/output error (5)')
faulty('FUSE, getattr EIO inside an extraneous tree', ['--getattr-eio=inner'],
       ['old/inner/f1', 'old/inner/f2', 'old/g'], 'old/inner") failed: Input/output error (5)')

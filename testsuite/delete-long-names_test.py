#!/usr/bin/env python3
"""Names longer than rsync's buffers: messages stay bounded, the run goes on.

The engine deletes below PATH_MAX, where stock rsync never gets, but
rsync's messages are sized for stock's names: rsyserr() exits with code
13 when a line passes BIGPATHBUFLEN (5,120 bytes), and make_backup() and
the filter rules need each entry's name.  Pins:
  * a failure 5,000 bytes down (an immutable file) is reported with its
    name cut around "[...]", every line fits in BIGPATHBUFLEN, the run
    goes on (the sibling tree is deleted) and exits 23, not 13 (it
    exited 13 and left the sibling half deleted);
  * --backup --backup-dir on a chain 6,000 bytes deep backs up and
    leaves exactly what stock does, says "File name too long" (errno 36)
    for the backups whose names are too long, and exits 23 (it exited 13
    having deleted nothing, and printed a stray errno).  The 600 levels
    have 9-byte names: each backup walks its directory's path in the
    backup tree component by component, so 3,000 levels of "d" take
    minutes, stock and fork alike.
"""

import fcntl
import os
import struct
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from chaoslib import crash_marks
from forkfns import require_stock

fork = RSYNC.split()
stock = require_stock()
BIGPATHBUFLEN = 4096 + 1024
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IMMUTABLE_FL = 0x80086601, 0x40086602, 0x10

empty = SCRATCHDIR / 'empty'
empty.mkdir()


def chain(root, depth, name='d', files=1):
    """root/name/name/... depth levels, files files in each level above
    the last; returns an fd of the deepest directory (caller closes)."""
    root.mkdir(parents=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        for k in range(files):
            os.close(os.open(f'f{k}', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    return fd


def sibling(root):
    for i in range(20):
        (root / f's{i}').mkdir(parents=True)
        for j in range(20):
            (root / f's{i}' / f'g{j}').write_text('g\n')


def set_immutable(dfd, name, on):
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
    try:
        flags = struct.unpack('i', fcntl.ioctl(fd, FS_IOC_GETFLAGS, b'\0' * 4))[0]
        flags = flags | FS_IMMUTABLE_FL if on else flags & ~FS_IMMUTABLE_FL
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack('i', flags))
    finally:
        os.close(fd)


def count(root):
    """Entries under root, walked with fds (os.fwalk recurses in Python:
    3,000 levels are too deep for it).  0 when root is gone."""
    try:
        stack, n = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)], 0
    except FileNotFoundError:
        return 0
    while stack:
        fd = stack.pop()
        with os.scandir(fd) as it:
            for e in it:
                n += 1
                if e.is_dir(follow_symlinks=False):
                    stack.append(os.open(e.name, os.O_RDONLY | os.O_DIRECTORY
                                         | os.O_NOFOLLOW, dir_fd=fd))
        os.close(fd)
    return n


def check_lines(label, text):
    long_lines = [len(line) for line in text.splitlines() if len(line) >= BIGPATHBUFLEN]
    if long_lines:
        test_fail(f'{label}: lines of {long_lines[:3]} bytes')


# ---- A failure 5,000 bytes down -------------------------------------------
target = SCRATCHDIR / 'T'
deep = chain(target / 'a', 2600)
os.close(os.open('stuck', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=deep))
try:
    set_immutable(deep, 'stuck', True)
except OSError as e:
    os.close(deep)
    test_skipped(f'cannot make a file immutable here: {e}')
sibling(target / 'b')
try:
    p = subprocess.run(fork + ['--delete-only', f'{empty}/', f'{target}/'],
                       capture_output=True, text=True, timeout=120)
finally:
    set_immutable(deep, 'stuck', False)
    os.close(deep)
print(f'immutable file 5,200 bytes down: exit {p.returncode}')
if crash_marks(p.stderr):
    test_fail(p.stderr[-2000:])
check_lines('failure', p.stdout + p.stderr)
if (target / 'b').exists():
    test_fail(f'the sibling tree was left: {count(target / "b")} entries')
unlink = [line for line in p.stderr.splitlines() if 'delete_file: unlink(' in line]
if len(unlink) != 1 or '[...]' not in unlink[0] or not unlink[0].endswith(
        '/d/stuck) failed: Operation not permitted (1)'):
    test_fail(f'want one cut "unlink(a/d/...[...].../stuck)" error, got {[u[-80:] for u in unlink]}')
if p.returncode != 23:
    test_fail(f'exit {p.returncode}, want 23: {p.stderr[-300:]}')
subprocess.run(['rm', '-rf', str(target)], check=True)

# ---- --backup --backup-dir on a chain 6,000 bytes deep, against stock -----
results = {}
for name, argv in (('stock', [stock]), ('fork', fork)):
    t = SCRATCHDIR / f'{name}-T'
    os.close(chain(t / 'a', 600, name='n' * 9))
    sibling(t / 'b')
    bak = SCRATCHDIR / f'{name}-bak'
    # Relative to the destination, so that where the lengths cross
    # MAXPATHLEN does not depend on where the scratch directory is.
    p = subprocess.run(argv + ['-r', '--delete', '--backup', f'--backup-dir=../{bak.name}',
                               f'{empty}/', f'{t}/'],
                       capture_output=True, text=True, timeout=120)
    results[name] = (p, count(t), count(bak))
    print(f'{name}: --backup-dir, 6,000 bytes deep: exit {p.returncode}, '
          f'{results[name][1]} left, {results[name][2]} in the backup')
(sp, s_left, s_bak), (fp, f_left, f_bak) = results['stock'], results['fork']
check_lines('backup', fp.stdout + fp.stderr)
if crash_marks(fp.stderr):
    test_fail(fp.stderr[-2000:])
if fp.returncode != sp.returncode:
    test_fail(f'exit {fp.returncode}, stock {sp.returncode}: {fp.stderr[-300:]}')
if (f_left, f_bak) != (s_left, s_bak):
    test_fail(f'left {f_left} and backed up {f_bak}; stock {s_left} and {s_bak}')
bak_errors = [line for line in fp.stderr.splitlines() if 'make_backup(' in line]
if not bak_errors or any(not line.endswith('File name too long (36)') for line in bak_errors):
    test_fail(f'make_backup errors: {[line[-60:] for line in bak_errors[:3]]}')

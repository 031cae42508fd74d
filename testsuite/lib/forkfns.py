"""Helpers shared by the fork's own tests (testsuite/*_test.py).

They run under upstream's runtests.py with upstream's rsyncfns, from a
suite directory that `make check-fork` assembles; this module adds what
only the fork needs: the stock build to compare against, and random trees.
"""

import atexit
import contextlib
import difflib
import os
import random
import re
import shutil
import stat
import subprocess
from pathlib import Path

import sshdlib
from rsyncfns import claim_free_port, test_fail, test_skipped

TOP = Path(os.environ.get('RSYNC_DE_TOP', Path(__file__).resolve().parents[2]))
RSYNC_STOCK = os.environ.get('RSYNC_STOCK', str(TOP / 'rsync-stock'))


def require_stock() -> str:
    """Return the stock rsync binary (same upstream, no patches) or skip."""
    if not os.access(RSYNC_STOCK, os.X_OK):
        test_skipped(f'no stock rsync at {RSYNC_STOCK} (make stock)')
    return RSYNC_STOCK


class Mounts:
    """Filesystems a test mounts (as root), all unmounted when it exits,
    whether it passes or fails.  before_umount(where), if given, runs
    before each unmount (e.g. to clear immutable flags)."""

    def __init__(self, before_umount=None):
        self.points = []
        self.before_umount = before_umount
        atexit.register(self.undo)

    def mount(self, argv, where: Path) -> Path:
        """Run `argv WHERE` (a mount command); skip the test if it fails."""
        where.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(argv + [str(where)], capture_output=True, text=True)
        if p.returncode:
            test_skipped(f'cannot mount ({" ".join(argv)}): {p.stderr.strip()}')
        self.points.append(where)
        return where

    def loop(self, mkfs, img: Path, where: Path, size_mb: int) -> Path:
        """A fresh filesystem made by `mkfs IMG` in a sparse size_mb image,
        loop-mounted on where."""
        with open(img, 'wb') as fh:
            fh.truncate(size_mb << 20)
        p = subprocess.run(mkfs + [str(img)], capture_output=True, text=True)
        if p.returncode:
            test_skipped(f'{mkfs[0]} failed: {p.stderr.strip()}')
        return self.mount(['mount', '-o', 'loop', str(img)], where)

    def undo(self):
        for where in reversed(self.points):
            if self.before_umount:
                self.before_umount(where)
            if subprocess.run(['umount', str(where)], capture_output=True).returncode:
                subprocess.run(['umount', '-l', str(where)], capture_output=True)
        self.points.clear()


def run(argv, **kw) -> subprocess.CompletedProcess:
    """Run argv capturing text output; never raises on a non-zero exit."""
    return subprocess.run([str(a) for a in argv], capture_output=True,
                          text=True, errors='surrogateescape', **kw)


# Names chosen to hit rsync's sort rules: case, digits, dots, a dash first,
# spaces, a newline and bytes that are not UTF-8.
_NAMES = ['a', 'B', 'b.txt', 'a.b', 'z9', '10', '2', '-dash', 'sp ace',
          'new\nline', 'caf\udce9', 'x' * 200, '.hidden', 'dir.d', 'dir']


def random_tree(root: Path, rng: random.Random, depth: int = 3,
                width: int = 6) -> None:
    """Fill root with a random tree of files, dirs, symlinks and fifos."""
    root.mkdir(parents=True, exist_ok=True)
    names = rng.sample(_NAMES, min(width, len(_NAMES)))
    for name in names:
        p = root / name
        kind = rng.random()
        if depth > 0 and kind < 0.35:
            random_tree(p, rng, depth - 1, width)
        elif kind < 0.80:
            p.write_bytes(os.urandom(rng.randrange(0, 64)))
        elif kind < 0.92:
            os.symlink(rng.choice(['/etc/passwd', '..', 'b.txt', 'missing']), p)
        else:
            os.mkfifo(p)


def age_tree(root: Path, when: int = 1_600_000_000) -> None:
    """Give every entry under root (and root) one old mtime.

    A deletion sets its directory's mtime to now; with old times on both
    sides, whether rsync reports a directory's time as changed no longer
    depends on which second the test ran in."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for n in filenames + dirnames:
            os.utime(Path(dirpath) / n, (when, when), follow_symlinks=False)
    os.utime(root, (when, when))


def tree_listing(root: Path) -> list:
    """A sorted listing of (path, type, size-or-target) for comparison."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            st = p.lstat()
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, 'l', os.readlink(p)))
            elif stat.S_ISDIR(st.st_mode):
                out.append((rel, 'd', ''))
            elif stat.S_ISFIFO(st.st_mode):
                out.append((rel, 'p', ''))
            else:
                out.append((rel, 'f', st.st_size))
    return sorted(out)


def assert_same_tree(a: Path, b: Path, label: str) -> None:
    la, lb = tree_listing(a), tree_listing(b)
    if la != lb:
        only_a = sorted(set(la) - set(lb))[:5]
        only_b = sorted(set(lb) - set(la))[:5]
        test_fail(f'{label}: trees differ; only in {a}: {only_a}; only in {b}: {only_b}')


# ---- The --delete-only interop matrix, shared by the remote tests ----------

STOCK_EQUIVALENT = ['-r', '--delete', '--existing', '--ignore-existing']


def seed_remote_dst(dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    (dst / 'keep' / 'deeper').mkdir(parents=True)
    (dst / 'gone' / 'a' / 'b').mkdir(parents=True)
    (dst / 'gone' / 'a' / 'b' / 'f').write_text('f\n')
    (dst / 'keep' / 'deeper' / 'k').write_text('dest k, different\n')
    (dst / 'keep' / 'extra').write_text('x\n')
    (dst / 'same').write_text('dest version\n')
    (dst / 'top-extra').write_text('t\n')
    age_tree(dst, 1_500_000_000)


def chown_tree(root: Path, owner) -> None:
    """Give root and everything under it to owner (uid, gid), if given."""
    if owner:
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames + ['.']:
                os.lchown(os.path.join(dirpath, n), *owner)


def delete_only_fixture(work: Path, fork: list, owner=None):
    """A source tree and what a local --delete-only leaves of a seeded
    destination; returns (src, expected).  Destinations for the remote
    runs are seeded with seed_remote_dst()."""
    work.mkdir(parents=True, exist_ok=True)
    chown_tree(work, owner)
    src = work / 'src'
    (src / 'keep' / 'deeper').mkdir(parents=True, exist_ok=True)
    (src / 'keep' / 'deeper' / 'k').write_text('source k\n')
    (src / 'same').write_text('source version\n')
    (src / 'only-in-src').write_text('new\n')
    chown_tree(src, owner)
    expected = work / 'expected'
    seed_remote_dst(expected)
    p = run(fork + ['--delete-only', f'{src}/', f'{expected}/'])
    if p.returncode != 0:
        test_fail(f'local --delete-only failed: {p.stderr}')
    return src, expected


def check_delete_only_result(expected: Path, dst: Path, label: str) -> None:
    assert_same_tree(expected, dst, label)
    if int(os.stat(dst / 'same').st_mtime) != 1_500_000_000:
        test_fail(f'{label}: a kept file was touched')


def delete_only_matrix(work: Path, fork: list, peers: list, host: str,
                       rsh: str, owner=None) -> None:
    """Run --delete-only push and pull against each (name, command) peer.

    host is the remote prefix ('lh:' or '127.0.0.1:'), rsh the remote
    shell command; owner (uid, gid), if given, owns every tree so that an
    unprivileged remote login can delete in them.  Each destination must
    end exactly as a local --delete-only leaves it, kept files untouched,
    and a stock client sending the equivalent options to an rsync-de
    server must get the same result."""
    import shlex

    src, expected = delete_only_fixture(work, fork, owner)
    cases = []
    for peer, peer_cmd in peers:
        path = f'--rsync-path={shlex.join(peer_cmd.split())}'
        cases.append((f'push to {peer}', fork + ['--delete-only', '-e', rsh, path],
                      'push'))
        cases.append((f'pull from {peer}', fork + ['--delete-only', '-e', rsh, path],
                      'pull'))
    cases.append(('stock client, rsync-de server',
                  [RSYNC_STOCK, *STOCK_EQUIVALENT, '-e', rsh,
                   f'--rsync-path={shlex.join(fork)}'], 'push'))
    for i, (label, argv, direction) in enumerate(cases):
        dst = work / f'dst{i}'
        seed_remote_dst(dst)
        chown_tree(dst, owner)
        if direction == 'push':
            argv = argv + [f'{src}/', f'{host}{dst}/']
        else:
            argv = argv + [f'{host}{src}/', f'{dst}/']
        print(label)
        p = run(argv)
        if p.returncode != 0:
            test_fail(f'{label}: exit {p.returncode}: {p.stderr}')
        check_delete_only_result(expected, dst, label)


@contextlib.contextmanager
def loopback_sshd(d: Path):
    """Run a throwaway openssh-server on 127.0.0.1 for the block.

    The set-up is sshdlib.LoopbackSshd, which bench/run.py uses too.  Skips
    unless root and openssh-server are there.  Keys, config and log live in
    d (created); the login user is rsyncde-test.  Yields (ssh command line
    for -e, run as root, logging in as that user; the user's passwd entry);
    sshd is stopped when the block ends, however it ends.  Nothing leaves
    loopback.
    """
    try:
        d.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(d.parent, 0o755)
        sshd = sshdlib.LoopbackSshd(d, port=claim_free_port(2222))
    except sshdlib.Unavailable as e:
        test_skipped(str(e))
    except sshdlib.StartFailed as e:
        test_fail(str(e))
    with sshd:
        yield sshd.ssh, sshd.pw


# ---- Comparing a run of ./rsync with one of stock ---------------------------

# --delete-only against the stock options that mean the same.
STOCK_EQUIVALENT = ['-r', '--delete', '--existing', '--ignore-existing']
DELETE_LINE = ('deleting ', '*deleting ')
SOURCE_LINE = re.compile(r'(\w+\.c)\(\d+\)')
VERSION_TAG = re.compile(r'\[(\w+)=\d+\.\d+\.\d+(?:-de\d+)?\]')


def normalise(text: str, dst: str) -> list:
    """Output lines with the run-specific destination path and timings removed."""
    keep = []
    for line in text.replace(dst, 'DST').splitlines():
        if line.startswith(('sent ', 'total size is ')):
            continue
        # Traffic and timing differ: rsync-de's local server sends no
        # deletion names that the client will not print.
        if 'bytes' in line or 'time:' in line:
            continue
        keep.append(line)
    return keep


def normalise_err(text: str, dst: str) -> list:
    """normalise(), and "rsync error: ... at main.c(1412) [generator=3.5.1]"
    without the source line and the version, which the patches move."""
    return [SOURCE_LINE.sub(r'\1(N)', VERSION_TAG.sub(r'[\1]', line))
            for line in normalise(text, dst)]


def diff(stock_lines: list, fork_lines: list) -> str:
    return '\n'.join(difflib.unified_diff(stock_lines, fork_lines, 'stock',
                                           'fork', lineterm='', n=1))


def fd_listing(root) -> list:
    """tree_listing() walked with directory fds, so that names past
    PATH_MAX are listed too (os.walk() cannot stat them).  An entry that
    cannot be stat'ed is listed with type '?'."""
    out, stack = [], [(os.open(root, os.O_RDONLY | os.O_DIRECTORY), '')]
    while stack:
        fd, rel = stack.pop()
        with os.scandir(fd) as it:
            for e in it:
                r = f'{rel}/{e.name}' if rel else e.name
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    out.append((r, '?', ''))
                    continue
                if stat.S_ISLNK(st.st_mode):
                    out.append((r, 'l', os.readlink(e.name, dir_fd=fd)))
                elif stat.S_ISDIR(st.st_mode):
                    out.append((r, 'd', ''))
                    stack.append((os.open(e.name, os.O_RDONLY | os.O_DIRECTORY
                                          | os.O_NOFOLLOW, dir_fd=fd), r))
                else:
                    out.append((r, 'f', st.st_size))
        os.close(fd)
    return sorted(out)


def compare_same(label, sres, fres, listed=None) -> None:
    """Fail unless two runs, SRES (stock) and FRES (fork), each a
    (destination, completed process) pair, exited alike, left the same
    tree, deleted in the same order and printed the same lines.  LISTED,
    if given, is the pair of directories to list in place of the
    destinations (a FUSE mount's backing directories)."""
    (sdst, sp), (fdst, fp) = sres, fres
    if sp.returncode != fp.returncode:
        test_fail(f'{label}: exit {fp.returncode}, stock {sp.returncode}\n{fp.stderr[-500:]}')
    sl, fl = map(fd_listing, listed or (sdst, fdst))
    if sl != fl:
        test_fail(f'{label}: trees differ: only stock {sorted(set(sl) - set(fl))[:3]}, '
                  f'only fork {sorted(set(fl) - set(sl))[:3]}')
    so, fo = normalise(sp.stdout, str(sdst)), normalise(fp.stdout, str(fdst))
    if [x for x in so if x.startswith(DELETE_LINE)] != [x for x in fo if x.startswith(DELETE_LINE)]:
        test_fail(f'{label}: deletion lines differ')
    if sorted(so) != sorted(fo):
        test_fail(f'{label}: stdout differs:\n' + diff(sorted(so), sorted(fo))[:2000])
    se, fe = normalise_err(sp.stderr, str(sdst)), normalise_err(fp.stderr, str(fdst))
    if se != fe:
        test_fail(f'{label}: stderr differs:\n' + diff(se, fe)[:2000])

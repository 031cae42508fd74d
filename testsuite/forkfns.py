"""Helpers shared by the fork's own tests (testsuite/*_test.py).

They run under upstream's runtests.py with upstream's rsyncfns, from a
suite directory that `make check-fork` assembles; this module adds what
only the fork needs: the stock build to compare against, and random trees.
"""

import contextlib
import os
import pwd
import random
import shutil
import stat
import subprocess
import time
from pathlib import Path

from rsyncfns import claim_free_port, test_fail, test_skipped

TOP = Path(os.environ.get('RSYNC_DE_TOP', Path(__file__).resolve().parent.parent))
RSYNC_STOCK = os.environ.get('RSYNC_STOCK', str(TOP / 'rsync-stock'))


def require_stock() -> str:
    """Return the stock rsync binary (same upstream, no patches) or skip."""
    if not os.access(RSYNC_STOCK, os.X_OK):
        test_skipped(f'no stock rsync at {RSYNC_STOCK} (make stock)')
    return RSYNC_STOCK


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


SSHD = '/usr/sbin/sshd'
SSH_USER = 'rsyncde-test'


@contextlib.contextmanager
def loopback_sshd(d: Path):
    """Run a throwaway openssh-server on 127.0.0.1 for the block.

    Skips unless root and openssh-server are there.  Keys, config and log
    live in d (created); the login user is rsyncde-test, created once with
    the password field '*' so sshd does not treat it as locked.  Yields
    (ssh command line for -e, the user's passwd entry); sshd is stopped
    when the block ends, however it ends.  Nothing leaves loopback.
    """
    if os.geteuid() != 0:
        test_skipped('needs root to start sshd and create its login user')
    if not os.access(SSHD, os.X_OK) or not shutil.which('ssh-keygen'):
        test_skipped('openssh-server is not installed')
    try:
        pw = pwd.getpwnam(SSH_USER)
    except KeyError:
        subprocess.run(['useradd', '--system', '--no-create-home', '--home-dir', '/nonexistent',
                        '--shell', '/bin/sh', SSH_USER], check=True)
        pw = pwd.getpwnam(SSH_USER)
    # Home "/" exists, so a login prints no "Could not chdir" on stderr
    # (fpsync counts any job stderr as a failure).
    subprocess.run(['usermod', '-p', '*', '-d', '/', SSH_USER], check=True)
    d.mkdir(parents=True)
    os.chmod(d.parent, 0o755)
    for key in ('host', 'client'):
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(d / key)],
                       check=True)
    shutil.copy(d / 'client.pub', d / 'authorized_keys')
    os.chmod(d / 'authorized_keys', 0o644)
    port = claim_free_port(2222)
    (d / 'sshd_config').write_text(f'''\
ListenAddress 127.0.0.1
Port {port}
HostKey {d}/host
AuthorizedKeysFile {d}/authorized_keys
PidFile {d}/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers {SSH_USER}
LogLevel ERROR
''')
    os.makedirs('/run/sshd', exist_ok=True)
    sshd = subprocess.Popen([SSHD, '-D', '-e', '-f', str(d / 'sshd_config')],
                            stderr=open(d / 'sshd.log', 'w'))
    ssh = (f'ssh -p {port} -i {d}/client -o BatchMode=yes -o StrictHostKeyChecking=no '
           f'-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -l {SSH_USER}')
    try:
        for _ in range(50):
            if run(ssh.split() + ['127.0.0.1', 'true']).returncode == 0:
                break
            time.sleep(0.1)
        else:
            test_fail(f'sshd did not come up: {(d / "sshd.log").read_text()}')
        yield ssh, pw
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)

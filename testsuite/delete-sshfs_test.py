#!/usr/bin/env python3
"""rsync-de deletes on sshfs what stock rsync deletes, and a race there
still cannot make it reach outside the tree.

sshfs (FUSE) without -o use_ino lists every entry with d_ino 0xffffffff
and stats it as its node id.  rsync-de took that for a directory swapped
under it: `--delete-only empty/ T/` printed `opendir ".../dir00001"
failed: Stale file handle (116)`, kept every directory and exited 23,
where rm -rf and stock rsync deleted everything (issue 19).

An ext4 image is loop-mounted, and sshfs mounts a directory of it over
the throwaway sshd on 127.0.0.1 (sshdlib.LoopbackSshd), as its login
user.  Pins:
  * the mount is FUSE and its d_ino is not stat's (else this proves
    nothing);
  * `--delete-only empty/ T/` there deletes the whole tree, exit 0;
  * differential cases: the same random trees and options through
    ./rsync-stock and ./rsync, with the destination on the mount, leave
    the same trees, print the same lines and exit the same way;
  * the race of delete-chaos (directories swapped for symlinks to a
    sentinel outside T while rsync deletes T), on the ext4 image itself
    and through sshfs: the sentinel is unchanged, swaps did happen
    meanwhile, and a rerun exits 0 and leaves T empty.
Every rsync run has a timeout; the mounts are undone and sshd stopped on
every exit.
"""

import atexit
import difflib
import os
import random
import re
import shutil
import subprocess
import time

import sshdlib
from rsyncfns import RSYNC, SCRATCHDIR, claim_free_port, test_fail, test_skipped
from chaoslib import (
    Chaos, RSYNC_EXIT_CODES, crash_marks, digest_diff, entries, make_sentinel,
    make_tree, tree_digest,
)
from forkfns import Mounts, age_tree, assert_same_tree, random_tree, require_stock

stock = require_stock()
fork = RSYNC.split()
TIMEOUT = 120
FUSE_SUPER_MAGIC = 0x65735546
SFTP_SERVERS = ['/usr/lib/openssh/sftp-server', '/usr/libexec/openssh/sftp-server',
                '/usr/libexec/sftp-server']

if os.geteuid() != 0:
    test_skipped('needs root to mount and to start sshd')
if not shutil.which('sshfs'):
    test_skipped('sshfs is not installed (rsync-src/deps.sh check installs it)')
sftp_server = next((s for s in SFTP_SERVERS if os.access(s, os.X_OK)), None)
if not sftp_server:
    test_skipped('no sftp-server (openssh-sftp-server)')

empty = SCRATCHDIR / 'empty'
empty.mkdir()
os.chmod(SCRATCHDIR, 0o755)
mounts = Mounts()
ext4 = mounts.loop(['mkfs.ext4', '-q', '-F'], SCRATCHDIR / 'ext4.img',
                   SCRATCHDIR / 'ext4', 512)
remote = ext4 / 'remote'        # what sshfs serves: the server's view
remote.mkdir()
mnt = SCRATCHDIR / 'mnt'        # the client's view of remote
mnt.mkdir()


def rsync(argv, label):
    """Run rsync with a timeout; fail on a crash or an undocumented exit."""
    try:
        p = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                           errors='surrogateescape', timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        test_fail(f'{label}: rsync hung (no exit after {TIMEOUT}s)')
    marks = crash_marks(p.stderr)
    if marks or p.returncode not in RSYNC_EXIT_CODES:
        test_fail(f'{label}: exit {p.returncode}, {marks}:\n{p.stderr[-3000:]}')
    return p


def give(root, owner):
    """Hand root and everything under it to the sshd's login user."""
    subprocess.run(['chown', '-R', '-h', f'{owner.pw_uid}:{owner.pw_gid}', str(root)],
                   check=True)


mounted = []


def unmount():
    while mounted:
        where = mounted.pop()
        if subprocess.run(['fusermount3', '-u', str(where)], capture_output=True).returncode \
           and subprocess.run(['fusermount', '-u', str(where)], capture_output=True).returncode:
            subprocess.run(['umount', '-l', str(where)], capture_output=True)


# ---- The sshfs mount ---------------------------------------------------------
try:
    sshd = sshdlib.LoopbackSshd(SCRATCHDIR / 'sshd', port=claim_free_port(2222))
except sshdlib.Unavailable as e:
    test_skipped(str(e))
except sshdlib.StartFailed as e:
    test_fail(str(e))
# atexit runs the last registered first: sshfs comes off, then sshd
# stops, then Mounts takes the ext4 image away.
atexit.register(sshd.close)
atexit.register(unmount)
user = sshd.pw
give(remote, user)
# Debian's sshfs refuses to read absolute symlinks and ones with ".." in
# them (contain_symlinks, EPERM): then stock's delete pass, which reads
# every link it deletes, fails where rsync-de's does not, and a followed
# symlink could not reach the sentinel, so the race would prove nothing.
# Turn it off where sshfs knows the option.
SSHFS = ['sshfs', '-o', f'port={sshd.port},IdentityFile={sshd.dir}/client,BatchMode=yes,'
         'StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,LogLevel=ERROR,'
         f'sftp_server={sftp_server}', f'{sshdlib.SSH_USER}@127.0.0.1:{remote}', str(mnt)]
for extra in (['-o', 'no_contain_symlinks'], []):
    p = subprocess.run(SSHFS + extra, capture_output=True, text=True, timeout=60)
    if p.returncode == 0:
        break
if p.returncode:
    test_fail(f'sshfs failed: {p.stderr}')
mounted.append(mnt)
fstype = subprocess.run(['stat', '-f', '-c', '%t', str(mnt)], capture_output=True,
                        text=True).stdout.strip()
if fstype != f'{FUSE_SUPER_MAGIC:x}':
    test_fail(f'{mnt} is not a FUSE mount (f_type {fstype})')

os.symlink(sshd.dir, remote / 'abs')
try:
    followed = os.readlink(mnt / 'abs') == str(sshd.dir)
except OSError:
    followed = False
if not followed:
    test_fail('sshfs does not read absolute symlinks here: the race would prove nothing')
os.unlink(remote / 'abs')

# ---- The report's case: --delete-only empties a tree on sshfs ---------------
t = remote / 't'
for i in range(1, 6):
    d = t / f'dir{i:05d}' / 'sub'
    d.mkdir(parents=True)
    for k in range(5):
        (d.parent / f'f{k}').write_text('x\n')
        (d / f'g{k}').write_text('y\n')
give(t, user)
with os.scandir(mnt / 't') as it:
    if not any(e.inode() != e.stat(follow_symlinks=False).st_ino for e in it):
        test_fail('readdir inode numbers on this sshfs mount are stat\'s: '
                  'it does not show the bug this test is for')
p = rsync(fork + ['--delete-only', f'{empty}/', f'{mnt}/t/'], '--delete-only on sshfs')
print(f'--delete-only on sshfs: exit {p.returncode}')
if p.returncode != 0 or os.listdir(t):
    test_fail(f'--delete-only on sshfs: exit {p.returncode}, left {os.listdir(t)}:\n{p.stderr}')

# ---- Differential: stock and rsync-de, destination on sshfs -----------------
STOCK_EQUIVALENT = ['-r', '--delete', '--existing', '--ignore-existing']
# -r, not -a: the sshd's user cannot chown, so -a fails alike in both and
# hides the rest.  Without -v the engine runs unordered, in parallel.
OPTION_SETS = [
    ['-r', '--delete'],
    ['-r', '--delete', '-v'],
    ['-r', '--delete-after', '-v'],
    ['-r', '--delete-delay', '-v'],
    ['-r', '--delete', '-n', '-v'],
    ['-r', '--delete', '--exclude=a', '-v'],
    ['-r', '--delete', '--max-delete=3', '-v'],
]
PAIRED = [(o, o) for o in OPTION_SETS] + [
    (['--delete-only'], STOCK_EQUIVALENT),
    (['--delete-only', '-v'], STOCK_EQUIVALENT + ['-v']),
    (['--delete-only', '-n', '-v'], STOCK_EQUIVALENT + ['-n', '-v']),
]
SOURCE_LINE = re.compile(r'(\w+\.c)\(\d+\)')
VERSION_TAG = re.compile(r'\[(\w+)=\d+\.\d+\.\d+(?:-de\d+)?\]')


def normalise(text, dst):
    out = []
    for line in text.replace(dst, 'DST').splitlines():
        if line.startswith(('sent ', 'total size is ')) or 'bytes' in line or 'time:' in line:
            continue
        out.append(SOURCE_LINE.sub(r'\1(N)', VERSION_TAG.sub(r'[\1]', line)))
    return out


def diff(a, b):
    return '\n'.join(difflib.unified_diff(a, b, 'stock', 'fork', lineterm='', n=1))


def one_case(n, seed, opts, stock_opts):
    rng = random.Random(seed)
    local = SCRATCHDIR / f'case{n}'
    src = local / 'src'
    random_tree(src, rng)
    age_tree(src)
    tmpl = local / 'dst'
    random_tree(tmpl, rng)
    age_tree(tmpl, 1_500_000_000)
    label = f'sshfs seed {seed} {" ".join(opts)}'
    res = {}
    for name, argv in (('stock', [stock] + stock_opts), ('fork', fork + opts)):
        # Each destination alone in a directory of its own (see
        # delete-differential, seed 468125672), made on the server's side
        # under a name the client has never looked up.
        back = remote / f'case{n}' / name / 'dst'
        back.parent.mkdir(parents=True)
        subprocess.run(['cp', '-a', str(tmpl), str(back)], check=True)
        give(remote / f'case{n}', user)
        dst = mnt / f'case{n}' / name / 'dst'
        res[name] = (back, dst, rsync(argv + [f'{src}/', f'{dst}/'], f'{label} ({name})'))
    (sback, sdst, sp), (fback, fdst, fp) = res['stock'], res['fork']
    if sp.returncode != fp.returncode:
        test_fail(f'{label}: exit {fp.returncode}, stock {sp.returncode}\n'
                  f'fork: {fp.stderr}\nstock: {sp.stderr}')
    assert_same_tree(sback, fback, label)
    so, fo = normalise(sp.stdout, str(sdst)), normalise(fp.stdout, str(fdst))
    dl = ('deleting ', '*deleting ')
    sdel = [x for x in so if x.startswith(dl)]
    fdel = [x for x in fo if x.startswith(dl)]
    if sdel != fdel:
        test_fail(f'{label}: deletion lines differ:\n' + diff(sdel, fdel))
    if sorted(so) != sorted(fo):
        test_fail(f'{label}: stdout differs:\n' + diff(sorted(so), sorted(fo)))
    se, fe = normalise(sp.stderr, str(sdst)), normalise(fp.stderr, str(fdst))
    if se != fe:
        test_fail(f'{label}: stderr differs:\n' + diff(se, fe))
    shutil.rmtree(local)
    shutil.rmtree(remote / f'case{n}')


n = 0
for seed in (1, 2, 468125672):
    for opts, stock_opts in PAIRED:
        print(f'sshfs seed {seed}: {" ".join(opts)}')
        one_case(n, seed, opts, stock_opts)
        n += 1

# ---- The swap race, on ext4 and through sshfs -------------------------------
# Trees and sentinels are made on the server's side (fast) and given to
# the sshd's user; rsync and the chaos workers go through the view under
# test, and the symlinks they plant point at the sentinel in that view.
base_seed = int(os.environ.get('RSYNC_DE_CHAOS_SEED', random.randrange(1 << 20)))
PLACES = [('ext4', ext4 / 'race', ext4 / 'race', (40, 20, 10)),
          ('sshfs', remote / 'race', mnt / 'race', (20, 10, 10))]
MODES = [['--delete-only'], ['-r', '--delete']]
for place, back, view, shape in PLACES:
    for i, mode in enumerate(MODES):
        seed = base_seed + i
        label = f'{place}: seed {seed} {" ".join(mode)}'
        print(label)
        shutil.rmtree(back, ignore_errors=True)
        make_tree(back / 'T', *shape)
        make_sentinel(back / 'sentinel')
        give(back, user)
        before = tree_digest(back / 'sentinel')
        chaos = Chaos(view / 'T', view / 'sentinel', seed, 2, SCRATCHDIR)
        t0 = t1 = 0
        try:
            time.sleep(0.1)
            t0 = time.monotonic()
            p = rsync(fork + mode + [f'{empty}/', f'{view}/T/'], label)
            t1 = time.monotonic()
        finally:
            counts = chaos.stop(t0, t1)
        print(f'  exit {p.returncode} after {t1 - t0:.2f}s; worker ops meanwhile: {counts}')
        changed = digest_diff(before, tree_digest(back / 'sentinel'))
        if changed:
            test_fail(f'{label}: the sentinel outside T changed: {changed[:5]}')
        if counts.get('swap-dir', 0) + counts.get('swap-top', 0) == 0:
            test_fail(f'{label}: no directory was swapped for a symlink while '
                      f'rsync ran ({counts}); the run proves nothing')
        p = rsync(fork + mode + [f'{empty}/', f'{view}/T/'], f'{label} rerun')
        if p.returncode != 0:
            test_fail(f'{label}: the rerun exited {p.returncode}:\n{p.stderr[-3000:]}')
        left = entries(back / 'T')
        if left:
            test_fail(f'{label}: the rerun left {len(left)} entries: {left[:5]}')
        changed = digest_diff(before, tree_digest(back / 'sentinel'))
        if changed:
            test_fail(f'{label}: the rerun changed the sentinel: {changed[:5]}')

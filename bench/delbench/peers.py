"""The deleters each scenario times, the tree sizes, and how a peer
is run and timed.
"""

import json
import os
import shutil
import subprocess
import time

from .common import NPM_CACHE, TOP, log, sh


# mktree arguments per scenario (the target directory is appended) at
# each size: quick (make bench: a few minutes on 2 cores, one
# filesystem), mid (a fifth of the full trees, the deep and ssh ones at
# full size: what a shared 2-core machine can run on three filesystems in
# an hour) and full.  One string: the same at every size.
TREE_ARGS = {
    'flat': ('flat 20000', 'flat 100000', 'flat 500000'),
    'rflat': ('rflat 20000', 'rflat 100000', 'rflat 500000'),
    'wide': ('wide 100 200', 'wide 200 500', 'wide 1000 1000'),
    'deep': ('deep 500 20', 'deep 2000 50', 'deep 2000 50'),
    'big': ('-z 1M flat 250', '-z 1M flat 4000', '-z 1M flat 4000'),
    'small': ('-z 4K wide 20 500', '-z 4K wide 20 1000', '-z 4K wide 100 1000'),
    'sync': ('wide 40 500', 'wide 100 1000', 'wide 1000 1000'),
    'ssh': ('wide 20 1000', 'wide 100 1000', 'wide 100 1000'),
    'dd': ('-z 1M -c 256K flat 250', '-z 1M -c 256K flat 1000', '-z 1M -c 256K flat 4000'),
    'sshfs': 'wide 20 500', 'sshfs-flat': 'flat 10000',
    'slowdisk': '(SLOWDISK_CELLS)', 'netfs': '(NETFS_CELLS)',
    'polite': '-z 1M -c 256K flat 4000',
    'snapshot-expiry': ('wide 100 200', 'wide 200 500', 'wide 300 1000'),
}
SIZES = {size: {sc: (a if isinstance(a, str) else a[i]).split() for sc, a in TREE_ARGS.items()}
         for i, size in enumerate(('quick', 'mid', 'full'))}
DD_MIB = {'quick': 128, 'mid': 512, 'full': 1024}

# Peers: name -> argv template.  {top}, {empty}, {target}, {src}, {ssh}
# and {rimraf} are filled in per run.
DELETE_PEERS = [
    ('rsync-de --delete-only', ['{top}/rsync', '--delete-only', '{empty}/', '{target}/']),
    ('rsync-de -a --delete', ['{top}/rsync', '-a', '--delete', '{empty}/', '{target}/']),
    ('stock -a --delete', ['{top}/rsync-stock', '-a', '--delete', '{empty}/', '{target}/']),
    ('debian -a --delete', ['/usr/bin/rsync', '-a', '--delete', '{empty}/', '{target}/']),
    ('rm -rf', ['rm', '-rf', '{target}']),
    ('find -delete', ['find', '{target}', '-delete']),
    ('rimraf', ['{rimraf}', '{target}']),
]
SYNC_PEERS = [
    ('rsync-de -a --delete', ['{top}/rsync', '-a', '--delete', '{src}/', '{target}/']),
    ('rsync-de --delete-only', ['{top}/rsync', '--delete-only', '{src}/', '{target}/']),
    ('stock -a --delete', ['{top}/rsync-stock', '-a', '--delete', '{src}/', '{target}/']),
    ('debian -a --delete', ['/usr/bin/rsync', '-a', '--delete', '{src}/', '{target}/']),
]
SSH_PEERS = [
    ('rsync-de --delete-only, local', ['{top}/rsync', '--delete-only', '{empty}/', '{target}/']),
    ('rsync-de --delete-only, ssh push', ['{top}/rsync', '--delete-only', '-e', '{ssh}',
                                          '--rsync-path={top}/rsync', '{empty}/',
                                          '127.0.0.1:{target}/']),
    ('stock -a --delete, local', ['{top}/rsync-stock', '-a', '--delete', '{empty}/', '{target}/']),
    ('stock -a --delete, ssh push', ['{top}/rsync-stock', '-a', '--delete', '-e', '{ssh}',
                                     '--rsync-path={top}/rsync-stock', '{empty}/',
                                     '127.0.0.1:{target}/']),
    # Over an open ControlMaster connection: the push without the login.
    ('rsync-de --delete-only, ssh push, open connection',
     ['{top}/rsync', '--delete-only', '-e', '{sshmux}', '--rsync-path={top}/rsync',
      '{empty}/', '127.0.0.1:{target}/']),
    ('rm -rf', ['rm', '-rf', '{target}']),
    # The fixed cost of the link alone: log in, run nothing.
    ('ssh 127.0.0.1 true', ['sh', '-c', '{ssh} 127.0.0.1 true']),
]
# snapshot-expiry: one of two `cp -al` generations expired, as rsnapshot's
# cmd_rm does it.
SNAPSHOT_PEERS = [
    ('rsync-rm -rf', ['{top}/rsync-rm', '-rf', '{target}']),
    ('rm -rf', ['rm', '-rf', '{target}']),
]
LINK_ONLY = {SSH_PEERS[-1][0]}	# peers that delete nothing: no tree, no check
SSHFS_PEERS = ['rsync-de --delete-only', 'stock -a --delete', 'rm -rf', 'find -delete']
SSHFS = ('sshfs', 'sshfs-flat')
# Issue 19's targets on sshfs: rsync-de's median against rm -rf's (and,
# for the 20 x 500 tree, stock's).
SSHFS_TARGET = {'sshfs': 0.35, 'sshfs-flat': 0.50}
SFTP_SERVERS = ['/usr/lib/openssh/sftp-server', '/usr/libexec/openssh/sftp-server',
                '/usr/libexec/sftp-server']
DD_PEERS = ['rsync-de --delete-only', 'stock -a --delete', 'rm -rf']
# --polite: the dd scenario's deleters for issue 8 instead of DD_PEERS:
# full speed, --delete-polite (500 a second in one burst a second, one
# idle thread), --delete-rate alone (evenly spaced), and rm -rf.
POLITE_PEERS = [
    ('full', ['{top}/rsync', '--delete-only', '{empty}/', '{target}/']),
    ('--delete-polite', ['{top}/rsync', '--delete-only', '--delete-polite', '{empty}/',
                         '{target}/']),
    ('--delete-rate=500', ['{top}/rsync', '--delete-only', '--delete-rate=500', '{empty}/',
                           '{target}/']),
    ('rm -rf', ['rm', '-rf', '{target}']),
]
TAIL = 2.0	# dd scenario: also measure the writer this long after the delete

# Issue 6's targets: ratio of rsync-de's median to the peer's, same run.
def target_vs_rm(scenario, fs):
    if scenario == 'wide':
        return 0.50 if fs in ('ext4', 'tmpfs') else 0.85
    return {'flat': 0.90, 'rflat': 0.90, 'deep': 0.70}.get(scenario, 1.0)


def target_vs_stock(scenario):
    return {'wide': 0.45, 'deep': 0.45, 'sync': 0.50}.get(scenario, 0.60)


def rimraf_path():
    """rimraf from npm, installed once into NPM_CACHE (outside git).
    Returns its path, or None with a note on stderr."""
    exe = os.path.join(NPM_CACHE, 'node_modules', '.bin', 'rimraf')
    if os.access(exe, os.X_OK):
        return exe
    if not shutil.which('npm'):
        log('rimraf skipped: npm is not installed (apt-get install npm)')
        return None
    os.makedirs(NPM_CACHE, exist_ok=True)
    r = sh(['npm', 'install', '--no-audit', '--no-fund', '--prefix', NPM_CACHE, 'rimraf'],
           capture_output=True, text=True, timeout=300)
    if r.returncode or not os.access(exe, os.X_OK):
        log(f'rimraf skipped: npm install failed: {r.stderr.strip()[-300:]}')
        return None
    return exe


def versions(vals):
    out = []
    for name, argv in (('rsync-de', [f'{TOP}/rsync', '--version']),
                       ('stock', [f'{TOP}/rsync-stock', '--version']),
                       ('debian', ['/usr/bin/rsync', '--version'])):
        try:
            line = sh(argv, capture_output=True, text=True).stdout.splitlines()[0]
            out.append(f'{name}: {line.strip()}')
        except (OSError, IndexError):
            pass
    if vals.get('rimraf'):
        pkg = os.path.join(NPM_CACHE, 'node_modules', 'rimraf', 'package.json')
        try:
            out.append(f'rimraf: {json.load(open(pkg))["version"]} (node {sh(["node", "--version"], capture_output=True, text=True).stdout.strip()})')
        except (OSError, ValueError, KeyError):
            pass
    return out


# ---- Filesystems -------------------------------------------------------------


def fill(template, vals):
    return [t.format(**vals) for t in template]


def timed(argv, rss_file, preexec=None):
    """Run argv under GNU time; return (wall seconds, exit code, last stderr
    line, peak RSS KiB or 0, CPU seconds (user + system, of the process and
    the children it waited for) or None)."""
    if os.path.exists('/usr/bin/time'):
        argv = ['/usr/bin/time', '-f', '%U %S %M', '-o', rss_file] + argv
    t = time.monotonic()
    r = sh(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=3600,
           preexec_fn=preexec)
    secs = time.monotonic() - t
    err = r.stderr.decode(errors='replace').strip().splitlines()
    kib, cpu = 0, None
    if os.path.exists(rss_file):
        # GNU time writes "Command exited with non-zero status N" first.
        words = open(rss_file).read().split()
        os.unlink(rss_file)
        if len(words) >= 3 and words[-1].isdigit():
            kib = int(words[-1])
            cpu = float(words[-3]) + float(words[-2])
    return secs, r.returncode, err[-1][-200:] if err else '', kib, cpu

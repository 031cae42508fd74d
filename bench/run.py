#!/usr/bin/python3
"""Time deleters side by side on identical, freshly generated trees.

Usage: bench/run.py [--quick] [--runs N] [--fs ext4,xfs,xfs-lb256k,btrfs,tmpfs]
                    [--scenarios flat,rflat,wide,deep,big,sync,ssh,dd,small,
                                 sshfs,sshfs-flat,slowdisk,snapshot-expiry]
                    [--cache cold,warm] [--peers NAME,...] [--peer NAME=CMD]
                    [--throttle wbps=20M,wiops=200] [--dir DIR]
                    [--json FILE] [--out FILE]
       bench/run.py --summarize FILE.jsonl ...

For each filesystem (a loop image or a tmpfs mounted here when run as root,
always unmounted and removed afterwards, also on ctrl-C; otherwise --dir, a
directory the user names), each cache state and each scenario, every peer
deletes a fresh tree made by bench/mktree, the peers alternating within a
round (forward, then reversed).  The first round is a warm-up and is not
counted.  "cold" drops the page cache after making the tree, "warm" only
syncs.  Each cell reports median seconds, min-max, the ratio of medians to
rm -rf and to stock rsync, and peak RSS (GNU time's %M: the largest single
process, not the sum); then CPU, cores, kernel and mount line.  Every
number comes from this run; --json appends raw records that --summarize
turns into the summary table again (several runs can be combined).

Scenarios, full size [--size mid] [--quick]:
  flat    500,000 files, sequential names   [100,000] [20,000]
  rflat   500,000 files, random names       [100,000] [20,000]
  wide    1,000 dirs x 1,000 files          [200 x 500] [100 x 200]
  deep    2,000 levels x 50 files           [same] [500 x 20]
  big     4,000 files of 1 MiB              [same] [250]
  small   100 dirs x 1,000 files of 4 KiB, the seed's small-file case
          (run it on xfs)                   [20 x 1,000] [20 x 500]
  sync    rsync -a --delete SRC/ DST/: DST has 1,000 x 1,000 files, SRC
          every second one with equal mtimes, so the run only deletes half
                                            [100 x 1,000] [40 x 500]
  ssh     --delete-only empty/ 127.0.0.1:T/ through a throwaway sshd on
          loopback, against the same delete run locally: 100 x 1,000
                                            [same] [20 x 1,000]
  sshfs   the delete peers on an sshfs mount (FUSE, over a throwaway
          sshd on loopback) of the filesystem under test, each run on a
          fresh mount; also reports the CPU of sshfs and its ssh client,
          and of sshd and sftp-server: 20 x 500        [same] [same]
  sshfs-flat  the same, 10,000 files in one directory  [same] [same]
  slowdisk  the disk model (bench/slowdisk): each peer deletes a copy of
          one image through a fresh hdd or cloud model, delete + sync -f
          timed; 100 x 400 files created in a shuffled order (and its
          cp -al copy, one flat directory of 40,000, 100 x 400 in order)
          on ext4 with a 4 MiB journal, and the shuffled tree on ext4's
          own journal and on xfs; reports the model's requests, bytes
          and seeks.  Whole cells run once, whatever --fs and --cache
          say                               [same] [hdd, shuffled, 50 x 400]
  snapshot-expiry  rsnapshot's expiry: a tree and its `cp -al` copy,
          made afresh for every run; rsync-rm -rf and rm -rf remove the
          copy: 300 x 1,000                [200 x 500] [100 x 200]
  dd      a dd writer (oflag=direct,dsync, 1 GiB) next to the deletion of
          4,000 fragmented 1 MiB files, by each peer
                                            [512 MiB, 1,000] [128 MiB, 250]

--peer 'NAME=CMD' adds a deleter (to every delete scenario and to dd);
CMD is split like a shell line and may use {top} (the checkout), {empty},
{target}, e.g. --peer 'fast={top}/rsync --delete-only --delete-polite --delete-rate=2000 {empty}/ {target}/'.
--throttle limits the loop device's I/O while dd runs (blkio on cgroup v1,
io.max on cgroup v2), to make the virtual disk behave like a slow one.
--polite runs the dd scenario with issue 8's deleters (full speed, rsync's
--delete-polite, --delete-rate alone, rm -rf); the dd figures include the writer's
rate from the deletion's start to 2 s after its end, which is where a
full-speed deletion's deferred write-back lands.
"""

import argparse
import atexit
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import threading
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, 'testsuite'))
import sshdlib	# noqa: E402  (the sshd the fork's tests use)
BENCH = os.path.join(TOP, 'bench')
MKTREE = os.path.join(BENCH, 'mktree')
NPM_CACHE = os.path.join(os.path.expanduser('~'), '.cache', 'rsync-de', 'npm')
MTIME = '1000000000'		# sync trees: equal mtimes, so -a updates nothing

# mktree arguments per scenario (the target directory is appended).
SIZES = {
    # make bench: a few minutes on 2 cores, one filesystem.
    'quick': {
        'flat': ['flat', '20000'], 'rflat': ['rflat', '20000'],
        'wide': ['wide', '100', '200'], 'deep': ['deep', '500', '20'],
        'big': ['-z', '1M', 'flat', '250'],
        'small': ['-z', '4K', 'wide', '20', '500'],
        'sync': ['wide', '40', '500'], 'ssh': ['wide', '20', '1000'],
        'dd': ['-z', '1M', '-c', '256K', 'flat', '250'],
        'sshfs': ['wide', '20', '500'], 'sshfs-flat': ['flat', '10000'],
        'slowdisk': ['(SLOWDISK_CELLS)'],
        'polite': ['-z', '1M', '-c', '256K', 'flat', '4000'],
        'snapshot-expiry': ['wide', '100', '200'],
    },
    # A fifth of the full trees (the deep and ssh ones at full size): what
    # a shared 2-core machine can run on three filesystems in an hour.
    'mid': {
        'flat': ['flat', '100000'], 'rflat': ['rflat', '100000'],
        'wide': ['wide', '200', '500'], 'deep': ['deep', '2000', '50'],
        'big': ['-z', '1M', 'flat', '4000'],
        'small': ['-z', '4K', 'wide', '20', '1000'],
        'sync': ['wide', '100', '1000'], 'ssh': ['wide', '100', '1000'],
        'dd': ['-z', '1M', '-c', '256K', 'flat', '1000'],
        'sshfs': ['wide', '20', '500'], 'sshfs-flat': ['flat', '10000'],
        'slowdisk': ['(SLOWDISK_CELLS)'],
        'polite': ['-z', '1M', '-c', '256K', 'flat', '4000'],
        'snapshot-expiry': ['wide', '200', '500'],
    },
    'full': {
        'flat': ['flat', '500000'], 'rflat': ['rflat', '500000'],
        'wide': ['wide', '1000', '1000'], 'deep': ['deep', '2000', '50'],
        'big': ['-z', '1M', 'flat', '4000'],
        'small': ['-z', '4K', 'wide', '100', '1000'],
        'sync': ['wide', '1000', '1000'], 'ssh': ['wide', '100', '1000'],
        'dd': ['-z', '1M', '-c', '256K', 'flat', '4000'],
        'sshfs': ['wide', '20', '500'], 'sshfs-flat': ['flat', '10000'],
        'slowdisk': ['(SLOWDISK_CELLS)'],
        'polite': ['-z', '1M', '-c', '256K', 'flat', '4000'],
        'snapshot-expiry': ['wide', '300', '1000'],
    },
}
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


# ---- Cleanup that survives ctrl-C and SIGTERM ------------------------------

_cleanups = []


def on_exit(fn):
    """Register fn to run once at exit (latest first); returns fn."""
    _cleanups.append(fn)
    return fn


def run_cleanups():
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception as e:	# cleanup must go on
            print(f'bench: cleanup: {e}', file=sys.stderr)


def _terminate(signum, frame):
    raise KeyboardInterrupt(f'signal {signum}')


atexit.register(run_cleanups)
signal.signal(signal.SIGTERM, _terminate)
signal.signal(signal.SIGHUP, _terminate)


# ---- Helpers -----------------------------------------------------------------

def log(msg):
    print(f'bench: {time.strftime("%H:%M:%S")} {msg}', file=sys.stderr, flush=True)


def sh(argv, **kw):
    return subprocess.run(argv, **kw)


def sync_fs(path):
    """Flush our filesystem only: a global sync waits for everything else
    the (shared) machine is writing."""
    sh(['sync', '-f', path])


def drop_caches(path):
    sync_fs(path)
    try:
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('3\n')
    except OSError as e:
        if not getattr(drop_caches, 'warned', False):
            log(f'cannot drop the page cache ({e.strerror}): "cold" runs are warm')
            drop_caches.warned = True


def count_entries(path, files_only=False):
    """Entries below path (find, not os.walk: deep trees are deeper than
    Python's recursion limit).  0 when path is gone."""
    if not os.path.lexists(path):
        return 0
    argv = ['find', path, '-mindepth', '1']
    if files_only:
        argv += ['-type', 'f']
    return len(sh(argv + ['-printf', '.'], capture_output=True).stdout)


def remove(path):
    if os.path.lexists(path):
        sh(['rm', '-rf', path], check=True)


def reporter(path=None):
    """A function that prints a report line, and appends it to PATH too."""
    outf = open(path, 'a') if path else None

    def out(line=''):
        print(line, flush=True)
        if outf:
            outf.write(line + '\n')
            outf.flush()
    return out


def median(xs):
    return statistics.median(xs) if xs else None


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

def unmount(path, tries=10):
    """umount path, retrying while it is busy (a peer's process may still
    be exiting), lazily after tries half-second waits."""
    for _ in range(tries):
        if sh(['umount', path], stderr=subprocess.DEVNULL).returncode == 0:
            return
        time.sleep(0.5)
    sh(['umount', '-l', path])


FS = {
    # -N: the sync scenario needs 1.5M inodes; the default ratio gives
    # 1M for a 16 GiB image.
    'ext4': (['mkfs.ext4', '-q', '-F', '-N', '3000000'], None),
    'xfs': (['mkfs.xfs', '-q', '-f'], None),
    'xfs-lb256k': (['mkfs.xfs', '-q', '-f'], 'logbsize=256k'),
    'btrfs': (['mkfs.btrfs', '-q', '-f'], None),
}


class Mount:
    """A scratch filesystem: a loop image or tmpfs when root, else --dir."""

    def __init__(self, fs, base, img_size):
        self.fs, self.base = fs, base
        self.path = tempfile.mkdtemp(prefix=f'rsyncde-bench-{fs}-', dir=base)
        os.chmod(self.path, 0o755)
        self.img = None
        self.mounted = False
        on_exit(self.close)
        if fs == 'dir':
            return
        if fs == 'tmpfs':
            sh(['mount', '-t', 'tmpfs', '-o', f'size={img_size},nr_inodes=0', 'tmpfs',
                self.path], check=True)
        else:
            mkfs, opts = FS[fs]
            self.img = self.path + '.img'
            sh(['truncate', '-s', img_size, self.img], check=True)
            sh(mkfs + [self.img], check=True, stdout=subprocess.DEVNULL)
            sh(['mount', '-o', 'loop' + (',' + opts if opts else ''), self.img, self.path],
               check=True)
        self.mounted = True

    def device(self):
        """MAJ:MIN of the loop device, or None."""
        if not self.img:
            return None
        st = os.stat(self.path)
        return f'{os.major(st.st_dev)}:{os.minor(st.st_dev)}'

    def mount_line(self):
        for line in open('/proc/mounts'):
            if line.split()[1] == self.path:
                return line.strip()
        return f'{self.path} (a directory on the host filesystem)'

    def close(self):
        if self.mounted:
            unmount(self.path)
            self.mounted = False
        if self.fs == 'dir':
            shutil.rmtree(self.path, ignore_errors=True)
        elif os.path.isdir(self.path):
            try:
                os.rmdir(self.path)
            except OSError:
                pass
        if self.img and os.path.exists(self.img):
            os.unlink(self.img)


class Throttle:
    """I/O limits on a loop device while a measurement runs, so that the
    virtual disk behaves like a slow one.  cgroup v1: blkio.throttle.* in
    the root group, which also holds the kernel's writeback and journal
    threads, so everything that reaches the device is limited (the device
    is our loop image only).  cgroup v2: io.max in a child group holding
    the writer and the deleter; v2 charges their writeback to it too.
    spec: 'wbps=20M,wiops=200,rbps=...,riops=...'."""

    V1 = '/sys/fs/cgroup/blkio'
    V2 = '/sys/fs/cgroup'

    def __init__(self, spec, dev):
        self.dev, self.limits, self.group = dev, {}, None
        self.registered = False
        for kv in spec.split(','):
            k, v = kv.split('=')
            mult = {'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}.get(v[-1].lower(), 1)
            self.limits[k] = int(v.rstrip('kKmMgG')) * mult
        self.v1 = os.path.exists(f'{self.V1}/blkio.throttle.write_bps_device')
        self.v2 = not self.v1 and os.path.exists(f'{self.V2}/cgroup.controllers')
        if not (self.v1 or self.v2):
            raise OSError('no blkio (v1) or io (v2) cgroup controller')

    def describe(self):
        how = 'cgroup v1 blkio.throttle, root group' if self.v1 else 'cgroup v2 io.max'
        return f'{self.dev} ' + ','.join(f'{k}={v}' for k, v in self.limits.items()) + f' ({how})'

    def _v1_write(self, value_of):
        names = {'wbps': 'write_bps', 'wiops': 'write_iops', 'rbps': 'read_bps',
                 'riops': 'read_iops'}
        for k, v in self.limits.items():
            with open(f'{self.V1}/blkio.throttle.{names[k]}_device', 'w') as f:
                f.write(f'{self.dev} {value_of(v)}\n')

    def on(self):
        if not self.registered:
            on_exit(self.off)
            self.registered = True
        if self.v1:
            self._v1_write(lambda v: v)
            return
        with open(f'{self.V2}/cgroup.subtree_control', 'w') as f:
            f.write('+io\n')
        self.group = f'{self.V2}/rsyncde-bench-{os.getpid()}'
        os.makedirs(self.group, exist_ok=True)
        with open(f'{self.group}/io.max', 'w') as f:
            f.write(f'{self.dev} ' + ' '.join(f'{k}={v}' for k, v in self.limits.items()) + '\n')

    def preexec(self):
        """For Popen(preexec_fn=): join the v2 group (v1: nothing)."""
        if self.group:
            with open(f'{self.group}/cgroup.procs', 'w') as f:
                f.write('0\n')

    def off(self):
        if self.v1:
            self._v1_write(lambda v: 0)
        elif self.group and os.path.isdir(self.group):
            try:
                os.rmdir(self.group)
            except OSError:
                pass
            self.group = None


class CpuGroup:
    """A cgroup counting the CPU time of the processes put in it and of
    their descendants, including those nobody waits for.  GNU time only
    sees the client of an ssh push; the remote rsync, sshd and the
    ControlMaster run elsewhere, so the ssh scenario puts those here and
    adds what the group used during a run.  cgroup v1 cpuacct or v2
    cpu.stat; seconds() is None when neither is there."""

    V1 = '/sys/fs/cgroup/cpuacct'
    V2 = '/sys/fs/cgroup'

    def __init__(self, name):
        self.path = None
        if os.path.exists(f'{self.V1}/cpuacct.usage'):
            self.path, self.v1 = f'{self.V1}/{name}', True
        elif os.path.exists(f'{self.V2}/cgroup.controllers'):
            self.path, self.v1 = f'{self.V2}/{name}', False
        else:
            return
        try:
            os.mkdir(self.path)
        except OSError as e:
            log(f'no cgroup for remote CPU time: {e}')
            self.path = None
            return
        on_exit(self.close)

    def add(self, pid):
        if self.path:
            with open(f'{self.path}/cgroup.procs', 'w') as f:
                f.write(f'{pid}\n')

    def procs(self):
        with open(f'{self.path}/cgroup.procs') as f:
            return len(f.read().split())

    def seconds(self):
        if not self.path:
            return None
        if self.v1:
            with open(f'{self.path}/cpuacct.usage') as f:
                return int(f.read()) / 1e9
        with open(f'{self.path}/cpu.stat') as f:
            return int(f.read().split()[1]) / 1e6	# usage_usec

    def settle(self, n, timeout=2.0):
        """Wait until only n processes are left (a session's sshd and
        remote rsync outlive the client by a few ms)."""
        end = time.monotonic() + timeout
        while self.path and self.procs() > n and time.monotonic() < end:
            time.sleep(0.01)

    def close(self):
        if not self.path:
            return
        for pid in open(f'{self.path}/cgroup.procs').read().split():
            try:	# back to the parent group
                with open(f'{os.path.dirname(self.path)}/cgroup.procs', 'w') as f:
                    f.write(pid + '\n')
            except OSError:
                pass
        try:
            os.rmdir(self.path)
        except OSError as e:
            log(f'cgroup {self.path} left: {e}')
        self.path = None


def start_sshd():
    """The tests' throwaway sshd (testsuite/sshdlib.py) on loopback, with a
    ControlMaster connection open; stopped at exit.  Returns the
    LoopbackSshd: .user_ssh and .mux are the login user's ssh command lines
    without and with the open connection, .as_user runs argv as that user,
    .cpu is a CpuGroup holding sshd and the master connection."""
    d = tempfile.mkdtemp(prefix='rsyncde-bench-sshd-')
    on_exit(lambda: shutil.rmtree(d, ignore_errors=True))
    os.chmod(d, 0o755)
    sshd = sshdlib.LoopbackSshd(os.path.join(d, 'sshd'))
    on_exit(sshd.close)
    sshd.cpu = CpuGroup(f'rsyncde-bench-sshd-{os.getpid()}')
    sshd.cpu.add(sshd.proc.pid)
    sshd.start_master()
    # The master forked into the background; -O check names its pid.
    r = sh(sshd.as_user(sshd.mux.split() + ['-O', 'check', '127.0.0.1']),
           capture_output=True, text=True)
    for word in r.stderr.replace('(', ' ').replace(')', ' ').split():
        if word.startswith('pid='):
            sshd.cpu.add(word[4:])
    return sshd


class Sshfs:
    """An sshfs mount of a directory (the server's view, on the filesystem
    under test) over the loopback sshd, as its login user; mounted afresh
    for every run so that no peer meets the caches another one filled.
    .cpu is a CpuGroup holding sshfs and the ssh client it starts."""

    def __init__(self, sshd, remote, mnt):
        sftp = next((x for x in SFTP_SERVERS if os.access(x, os.X_OK)), None)
        if not shutil.which('sshfs') or not sftp:
            raise sshdlib.Unavailable('sshfs or sftp-server is not installed '
                                      '(rsync-src/deps.sh bench installs them)')
        self.mnt, self.mounted = mnt, False
        os.makedirs(mnt, exist_ok=True)
        self.argv = ['sshfs', '-o', f'port={sshd.port},IdentityFile={sshd.dir}/client,'
                     'BatchMode=yes,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,'
                     f'LogLevel=ERROR,sftp_server={sftp}',
                     f'{sshdlib.SSH_USER}@127.0.0.1:{remote}', mnt]
        self.cpu = CpuGroup(f'rsyncde-bench-sshfs-{os.getpid()}')
        on_exit(self.umount)

    def mount(self):
        join = (lambda: self.cpu.add(os.getpid())) if self.cpu.path else None
        r = sh(self.argv, capture_output=True, text=True, timeout=60, preexec_fn=join)
        if r.returncode:
            raise OSError(f'sshfs failed: {r.stderr.strip()}')
        self.mounted = True

    def umount(self):
        if not self.mounted:
            return
        unmount(self.mnt)
        self.mounted = False
        # sshfs and its ssh client exit once the mount is gone.
        self.cpu.settle(0)


# ---- One timed run -----------------------------------------------------------

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


class Cell:
    """Results of one (filesystem, cache, scenario) cell."""

    def __init__(self, names):
        self.times = {n: [] for n in names}
        self.rss = {n: 0 for n in names}
        self.cpu = {n: [] for n in names}
        self.link = {n: [] for n in names}	# sshfs: (client, server) CPU s
        self.failed = {}

    def med(self, n):
        return None if n in self.failed else median(self.times[n])


def make_tree(spec, target, user=None):
    argv = [MKTREE] + spec + [target]
    if user:
        argv = user(argv)
    sh(argv, check=True, stdout=subprocess.DEVNULL)


def run_cell(m, scenario, spec, cache, peers, vals, runs, user=None, rotate=True,
             remote_cpu=None, sshfs=None):
    """Time every peer on a fresh tree, runs + 1 rounds, the first dropped.
    peers: list of (name, argv template).  remote_cpu: a CpuGroup whose
    CPU time during a run is added to the run's (sshd and the far side of
    an ssh push).  sshfs: an Sshfs serving vals['work']; the peers then
    delete through it, and remote_cpu (sshd, sftp-server) and the mount's
    CPU are kept apart in cell.link.  Returns a Cell."""
    names = [n for n, _ in peers]
    tmpl = dict(peers)
    cell = Cell(names)
    work = vals['work']
    target = os.path.join(work, 't')
    expect_left = 0
    if scenario == 'sync':
        src = os.path.join(work, 's')
        remove(src)
        make_tree(['-S', '2', '-t', MTIME] + spec, src)
        vals['src'] = src
        expect_left = count_entries(src)
    for rnd in range(runs + 1):
        order = names if rnd % 2 == 0 or not rotate else list(reversed(names))
        for n in order:
            if n in cell.failed:
                continue
            remove(target)
            if scenario == 'snapshot-expiry':
                # The generation expired shares every file with the one
                # kept, which is made afresh with it.
                gen0 = os.path.join(work, 'g0')
                remove(gen0)
                make_tree(spec, gen0)
                sh(['cp', '-al', gen0, target], check=True)
            elif n not in LINK_ONLY:
                make_tree((['-t', MTIME] if scenario == 'sync' else []) + spec, target, user)
            if cache == 'cold':
                drop_caches(m.path)
            else:
                sync_fs(m.path)
            view = os.path.join(sshfs.mnt, 't') if sshfs else target
            if sshfs:
                sshfs.mount()
            argv = fill(tmpl[n], dict(vals, target=view))
            if user and not sshfs:	# an sshfs mount is root's alone
                argv = user(argv)
            if remote_cpu and remote_cpu.path:
                nprocs, cpu0 = remote_cpu.procs(), remote_cpu.seconds()
            if sshfs:
                link0 = sshfs.cpu.seconds()
            secs, rc, err, kib, cpu = timed(argv, os.path.join(m.path, 'rss.out'))
            if sshfs:
                link = sshfs.cpu.seconds()
                sshfs.umount()
                if remote_cpu and remote_cpu.path and link is not None:
                    remote_cpu.settle(nprocs)
                    link = (link - link0, remote_cpu.seconds() - cpu0)
            elif remote_cpu and remote_cpu.path and cpu is not None:
                remote_cpu.settle(nprocs)
                cpu += remote_cpu.seconds() - cpu0
            left = count_entries(target) if n not in LINK_ONLY else expect_left
            remove(target)
            cell.rss[n] = max(cell.rss[n], kib)
            if rc != 0 or left != expect_left:
                # A peer that cannot do the job is reported, not timed.
                cell.failed[n] = f'exit {rc}, {left} entries left (expected {expect_left}): {err}'
                log(f'{m.fs} {scenario} {cache}: {n} FAILED: {cell.failed[n]}')
            elif rnd:
                cell.times[n].append(secs)
                if cpu is not None:
                    cell.cpu[n].append(cpu)
                if sshfs and isinstance(link, tuple):
                    cell.link[n].append(link)
            log(f'{m.fs} {scenario} {cache} round {rnd}: {n}: {secs:.3f} s')
    if scenario == 'sync':
        remove(vals['src'])
    if scenario == 'snapshot-expiry':
        remove(os.path.join(work, 'g0'))
    return cell


def print_cell(out, title, names, cell, base=('rm -rf', 'stock -a --delete'), cpu_what=''):
    link = any(cell.link.get(n) for n in names)
    out(f'\n## {title}\n')
    out(f'| peer | median s | min-max s | vs {base[0]} | vs {base[1]} | peak RSS MiB '
        f'| CPU s (user+sys{cpu_what}) |'
        + (' CPU s sshfs + ssh | CPU s sshd + sftp-server |' if link else ''))
    out('| --- | --- | --- | --- | --- | --- | --- |' + (' --- | --- |' if link else ''))
    b0, b1 = cell.med(base[0]) if base[0] in cell.times else None, \
        cell.med(base[1]) if base[1] in cell.times else None
    for n in names:
        if n in cell.failed:
            out(f'| {n} | failed: {cell.failed[n]} | | | | {cell.rss[n] / 1024:.1f} | |'
                + (' | |' if link else ''))
            continue
        med = cell.med(n)
        r0 = f'{med / b0:.2f}' if b0 else '-'
        r1 = f'{med / b1:.2f}' if b1 else '-'
        cpu = f'{median(cell.cpu[n]):.3f}' if cell.cpu.get(n) else '-'
        lk = ''
        if link:
            ls = cell.link.get(n) or []
            lk = ''.join(f' {median([x[i] for x in ls]):.3f} |' if ls else ' - |'
                         for i in (0, 1))
        out(f'| {n} | {med:.3f} | {min(cell.times[n]):.3f}-{max(cell.times[n]):.3f} '
            f'| {r0} | {r1} | {cell.rss[n] / 1024:.1f} | {cpu} |{lk}')


# ---- The dd scenario (seed 2) --------------------------------------------

def start_writer(ddout, dd_mib, throttle, stderr=subprocess.DEVNULL):
    """The dd and polite scenarios' writer: dd_mib MiB to ddout with
    oflag=direct,dsync, in the throttle's group when there is one."""
    return subprocess.Popen(['dd', 'if=/dev/zero', f'of={ddout}', 'bs=1M',
                             f'count={dd_mib}', 'oflag=direct,dsync'],
                            stdout=subprocess.DEVNULL, stderr=stderr,
                            preexec_fn=throttle.preexec if throttle else None)


def wait_for_eighth(dd, ddout, total):
    """Until the writer has written 1/8 of its total bytes (or ended), so
    that a deletion started then meets it in steady state."""
    while dd.poll() is None and (not os.path.exists(ddout) or
                                 os.path.getsize(ddout) < total // 8):
        time.sleep(0.005)


def dd_scenario(m, spec, cache, peers, vals, runs, dd_mib, throttle=None, out=print):
    """A dd writer (oflag=direct,dsync, dd_mib MiB) runs alone and next to
    the deletion of a fresh tree (bench/mktree spec) by each peer.  Rounds
    alternate the peers and "alone", the first round is dropped.  The
    deletion starts once dd has written 1/8 of its data, so it meets a
    writer in steady state.  Reported per peer: the deletion's time, the
    writer's MB/s over its whole run and during the deletion (bytes dd
    wrote between the deleter's start and end, from the size of its file),
    and the same for dd alone.  throttle: a Throttle, on while dd runs.
    peers: list of (name, argv template).  Returns the record for --json.

    This is the function to reuse for a polite mode: pass its peer with
    --peer NAME=CMD --scenarios dd, and --throttle for a slow disk."""
    names = ['dd alone'] + [n for n, _ in peers]
    tmpl = dict(peers)
    rec = {n: {'del': [], 'dd': [], 'win': [], 'win2': [], 'rss': 0, 'failed': None}
           for n in names}
    target = os.path.join(vals['work'], 't')
    ddout = os.path.join(m.path, 'dd.out')
    total = dd_mib << 20
    for rnd in range(runs + 1):
        order = names if rnd % 2 == 0 else list(reversed(names))
        for n in order:
            if rec[n]['failed']:
                continue
            remove(target)
            if os.path.exists(ddout):
                os.unlink(ddout)
            make_tree(spec, target)
            if cache == 'cold':
                drop_caches(m.path)
            else:
                sync_fs(m.path)
            if throttle:
                throttle.on()
            try:
                t0 = time.monotonic()
                dd = start_writer(ddout, dd_mib, throttle, stderr=subprocess.PIPE)
                dd_end = None
                if n != 'dd alone':
                    wait_for_eighth(dd, ddout, total)
                    argv = fill(tmpl[n], dict(vals, target=target))
                    rss_file = os.path.join(m.path, 'rss.out')
                    if os.path.exists('/usr/bin/time'):
                        argv = ['/usr/bin/time', '-f', '%M', '-o', rss_file] + argv
                    s0, d0 = os.path.getsize(ddout), time.monotonic()
                    dp = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE,
                                          preexec_fn=throttle.preexec if throttle else None)
                    d1 = s1 = None
                    while d1 is None:
                        if dp.poll() is not None:
                            d1, s1 = time.monotonic(), os.path.getsize(ddout)
                        elif dd_end is None and dd.poll() is not None:
                            dd_end, dd_size = time.monotonic(), os.path.getsize(ddout)
                        else:
                            time.sleep(0.002)
                    # The file system may write back what the deletion
                    # dirtied after the deleter is gone (ext4's journal
                    # commits, xfs's inode GC): also measure the writer
                    # from the deletion's start to TAIL s after its end.
                    d2 = s2 = None
                    while d2 is None:
                        if dd_end is None and dd.poll() is not None:
                            dd_end, dd_size = time.monotonic(), os.path.getsize(ddout)
                        if dd_end is not None:
                            d2, s2 = dd_end, dd_size
                        elif time.monotonic() >= d1 + TAIL:
                            d2, s2 = time.monotonic(), os.path.getsize(ddout)
                        else:
                            time.sleep(0.002)
                    err = dp.stderr.read().decode(errors='replace').strip().splitlines()
                    if os.path.exists(rss_file):
                        words = open(rss_file).read().split()
                        os.unlink(rss_file)
                        if words and words[-1].isdigit():
                            rec[n]['rss'] = max(rec[n]['rss'], int(words[-1]))
                    # If dd ended first, the window is the overlap.
                    if dd_end is not None and dd_end < d1:
                        win = (dd_size - s0) / max(dd_end - d0, 1e-6) / 1e6
                    else:
                        win = (s1 - s0) / max(d1 - d0, 1e-6) / 1e6
                    win2 = (s2 - s0) / max(d2 - d0, 1e-6) / 1e6
                    left = count_entries(target)
                    if dp.returncode or left:
                        rec[n]['failed'] = f'exit {dp.returncode}, {left} left: {err[-1] if err else ""}'
                dd.wait()
                # The writer's own run: it may have ended while the
                # deleter still ran.
                t1 = dd_end or time.monotonic()
            finally:
                if throttle:
                    throttle.off()
            ddmbs = total / (t1 - t0) / 1e6
            if dd.returncode:
                raise OSError(f'dd failed: {dd.stderr.read().decode(errors="replace")}')
            log(f'{m.fs} dd {cache} round {rnd}: {n}: dd {ddmbs:.1f} MB/s'
                + ('' if n == 'dd alone' else f', delete {d1 - d0:.3f} s, dd during it {win:.1f} MB/s'
                   f', to {TAIL:g} s after it {win2:.1f} MB/s'))
            if rnd and not rec[n]['failed']:
                rec[n]['dd'].append(ddmbs)
                if n != 'dd alone':
                    rec[n]['del'].append(d1 - d0)
                    rec[n]['win'].append(win)
                    rec[n]['win2'].append(win2)
    remove(target)
    if os.path.exists(ddout):
        os.unlink(ddout)
    print_dd(out, f'{m.fs}, dd {dd_mib} MiB next to deleting {" ".join(spec)} ({cache} cache)'
             + (f', throttled {throttle.describe()}' if throttle else ''), names, rec)
    return rec


# ---- The polite scenario (issue 20) -------------------------------------

# Deleters: full speed, --delete-polite as it adapts, and the same binary
# with /proc/pressure/io hidden (an empty file bound over it in a mount
# namespace), which is --delete-polite's fixed pace: 500 removals a
# second in one burst a second.
NO_PSI = ['unshare', '-m', 'sh', '-c', 'mount --bind /dev/null /proc/pressure/io && exec "$@"',
          'sh']
POLITE_ADAPT_PEERS = [
    ('full', ['{top}/rsync', '--delete-only', '{empty}/', '{target}/']),
    ('fixed pace', NO_PSI + ['{top}/rsync', '--delete-only', '--delete-polite', '{empty}/',
                             '{target}/']),
    ('adaptive', ['{top}/rsync', '--delete-only', '--delete-polite', '{empty}/', '{target}/']),
]
POLITE_TICK = 0.1	# s between samples of the writer and the deletion
POLITE_STOP = 3.0	# s into the deletion when the writer is stopped


class Timeline:
    """Samples, every POLITE_TICK, dd's file size and the entries left in
    the target, in a thread: (t, bytes, left) from the deletion's start."""

    def __init__(self, ddout, target, t0):
        self.ddout, self.target, self.t0 = ddout, target, t0
        self.rows, self.stop = [], threading.Event()
        self.th = threading.Thread(target=self.run)
        self.th.start()

    def run(self):
        while not self.stop.is_set():
            size = os.path.getsize(self.ddout) if os.path.exists(self.ddout) else 0
            self.rows.append((time.monotonic() - self.t0, size, count_entries(self.target)))
            self.stop.wait(POLITE_TICK)

    def end(self):
        self.stop.set()
        self.th.join()
        return self.rows


def write_back_left(m):
    """Seconds to write back what is still dirty on m's file system, the
    throttle still on: sync -f (data, and the journal's commit), then a
    freeze and a thaw (ext4 checkpoints its journal, xfs pushes its log:
    the metadata written in place).  That is a deletion's deferred cost,
    which the flusher pays later, after a writer's run ends or not."""
    t0 = time.monotonic()
    sync_fs(m.path)
    sh(['fsfreeze', '-f', m.path], check=True)
    try:
        return time.monotonic() - t0
    finally:
        sh(['fsfreeze', '-u', m.path], check=True)


def polite_scenario(m, spec, peers, vals, runs, dd_mib, throttle, plots, out=print):
    """Issue 20: --delete-polite next to a dd writer (oflag=direct,dsync,
    started first; the deletion starts when it has written 1/8), on an
    idle disk, and next to a writer that stops POLITE_STOP s into the
    deletion.  Peers alternate, first round dropped, fresh tree per run,
    settled (fresh()), cold cache.  Reports the deletion's time, the writer's MB/s during
    the deletion and over its whole run against dd alone, the deletion's
    time on an idle disk against full speed's, and how long after the
    writer stopped the adaptive deletion ran at full speed.  And, when
    the writer ends, the write-back still left (write_back_left(), the
    throttle on; a deletion still running waits for it, and its time is
    not counted) and the writer's whole run with it added: what the
    deletion cost the disk while the writer ran, wherever the flusher
    would have put it.  And the device's writes over the writer's run
    (sectors and requests, from dd's start to its end): what the
    deletion added to them is its cost to the disk while the writer ran,
    counted rather than timed.  plots: a directory for PNG timelines
    (writer MB/s and removals a second)."""
    names = [n for n, _ in peers]
    tmpl = dict(peers)
    target = os.path.join(vals['work'], 't')
    ddout = os.path.join(m.path, 'dd.out')
    total = dd_mib << 20
    dev = m.device()
    rec = {'alone': [], 'alone_wb': [], 'alone_io': [], 'idle': {n: [] for n in names},
           'stop': [], 'writer': {n: {'del': [], 'dd': [], 'win': [], 'wb': [], 'dd_wb': [],
                                      'io': []} for n in names}}

    def writes(since=None):
        """The device's (sectors, requests) written so far, or since."""
        if not dev:
            return None
        _, sectors, reqs = loop_stat(dev)
        return (sectors, reqs) if since is None else (sectors - since[0], reqs - since[1])
    lines = {}

    def fresh(tree=True):
        """A new tree, settled and a cold cache, then the throttle.  A
        tree that is deleted has long been written in place; one just
        made has not (xfs keeps its inodes and btree blocks logged but
        dirty, and drop_caches leaves dirty buffers be), and a deletion
        that frees those buffers before they are written back saves the
        writer their write-back: it would look cheap for it.  So the
        write-back is done first, unthrottled (write_back_left())."""
        if throttle:
            throttle.off()
        remove(target)
        if os.path.exists(ddout):
            os.unlink(ddout)
        if tree:
            make_tree(spec, target)
        write_back_left(m)
        drop_caches(m.path)
        if throttle:
            throttle.on()

    def delete(n):
        return subprocess.Popen(fill(tmpl[n], dict(vals, target=target)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                preexec_fn=throttle.preexec if throttle else None)

    def check(n, dp):
        left = count_entries(target)
        if dp.returncode or left:
            raise OSError(f'{n}: exit {dp.returncode}, {left} left: '
                          f'{dp.stderr.read().decode(errors="replace")[-300:]}')

    for rnd in range(runs + 1):
        order = names if rnd % 2 == 0 else list(reversed(names))
        try:
            # The writer alone.
            fresh(tree=False)
            t0, io0 = time.monotonic(), writes()
            dd = start_writer(ddout, dd_mib, throttle)
            dd.wait()
            took, io_alone = time.monotonic() - t0, writes(io0)
            alone = total / took / 1e6
            alone_wb = total / (took + write_back_left(m)) / 1e6
            # Next to the writer.
            for n in order:
                fresh()
                t0, io0 = time.monotonic(), writes()
                dd = start_writer(ddout, dd_mib, throttle)
                wait_for_eighth(dd, ddout, total)
                d0, s0 = time.monotonic(), os.path.getsize(ddout)
                tl = Timeline(ddout, target, d0)
                dp = delete(n)
                dd_end = wb = io = None
                while dp.poll() is None:
                    if dd_end is None and dd.poll() is not None:
                        # The deletion waits out the freeze: not its time.
                        dd_end, io = time.monotonic(), writes(io0)
                        wb = write_back_left(m)
                    time.sleep(0.002)
                d1, s1 = time.monotonic() - (wb or 0), os.path.getsize(ddout)
                dd.wait()
                t1 = dd_end or time.monotonic()
                if dd_end is None:
                    io = writes(io0)
                if wb is None:
                    wb = write_back_left(m)
                rows = tl.end()
                check(n, dp)
                if dd.returncode:
                    raise OSError('dd failed')
                # If dd ended first, "during" is the overlap.
                win = (s1 - s0) / max(min(d1, dd_end or d1) - d0, 1e-6) / 1e6
                whole = total / (t1 - t0) / 1e6
                whole_wb = total / (t1 - t0 + wb) / 1e6
                log(f'{m.fs} polite round {rnd}: {n}: delete {d1 - d0:.3f} s, dd during it '
                    f'{win:.1f} MB/s, whole run {whole:.1f} MB/s (alone {alone:.1f}), '
                    f'write-back left {wb:.2f} s, with it {whole_wb:.1f} MB/s '
                    f'(alone {alone_wb:.1f})' + (
                        f', device wrote {io[0] / 2048:.1f} MiB in {io[1]} requests '
                        f'(alone {io_alone[0] / 2048:.1f} MiB in {io_alone[1]})' if io else ''))
                if rnd:
                    r = rec['writer'][n]
                    r['del'].append(d1 - d0)
                    r['win'].append(win)
                    r['dd'].append(whole)
                    r['wb'].append(wb)
                    r['dd_wb'].append(whole_wb)
                    r['io'].append(io)
                    lines[n] = rows
            # An idle disk.
            for n in order:
                fresh()
                d0 = time.monotonic()
                dp = delete(n)
                dp.wait()
                took = time.monotonic() - d0
                check(n, dp)
                log(f'{m.fs} polite round {rnd}: {n} on an idle disk: {took:.3f} s')
                if rnd:
                    rec['idle'][n].append(took)
            # The writer stops POLITE_STOP s into an adaptive deletion
            # (when 'adaptive' is among the peers).
            if 'adaptive' in tmpl:
                fresh()
                dd = start_writer(ddout, dd_mib, throttle)
                wait_for_eighth(dd, ddout, total)
                d0 = time.monotonic()
                tl = Timeline(ddout, target, d0)
                dp = delete('adaptive')
                while dp.poll() is None and time.monotonic() < d0 + POLITE_STOP:
                    time.sleep(0.005)
                stopped = time.monotonic() - d0
                dd.kill()
                dd.wait()
                dp.wait()
                d1 = time.monotonic() - d0
                rows = tl.end()
                check('adaptive', dp)
                log(f'{m.fs} polite round {rnd}: writer stopped at {stopped:.2f} s, '
                    f'deletion done at {d1:.2f} s')
                if rnd:
                    rec['stop'].append({'stopped': stopped, 'done': d1, 'rows': rows})
            if rnd:
                rec['alone'].append(alone)
                rec['alone_wb'].append(alone_wb)
                rec['alone_io'].append(io_alone)
        finally:
            if throttle:
                throttle.off()
    remove(target)
    if os.path.exists(ddout):
        os.unlink(ddout)
    print_polite(out, f'{m.fs}, {" ".join(spec)}' +
                 (f', throttled {throttle.describe()}' if throttle else ''), names, rec)
    rec['lines'] = lines	# the last counted round's timelines, for plots
    if plots:
        plot_polite(plots, f'{m.fs}-{"-".join(spec)}'.replace(' ', ''), names, lines,
                    rec['stop'], rec['alone'])
    return rec


def print_polite(out, title, names, rec):
    """The polite scenario's table; the idle-disk ratio is against full
    speed, and reads "-" when full speed was not among the peers."""
    alone = median(rec['alone'])
    full_idle = median(rec['idle'].get('full', []))
    out()
    out(f'### {title}')
    out()
    out(f'dd alone: {alone:.1f} MB/s.')
    out()
    out('| deleter | delete s next to dd | dd MB/s during it | of dd alone '
        '| dd MB/s whole run | of dd alone | delete s, idle disk | of full speed |')
    out('| --- | --- | --- | --- | --- | --- | --- | --- |')
    for n in names:
        r = rec['writer'][n]
        win, whole, idle = median(r['win']), median(r['dd']), median(rec['idle'][n])
        ratio = f'{idle / full_idle:.2f}' if full_idle else '-'
        out(f'| {n} | {median(r["del"]):.3f} | {win:.1f} | {win / alone:.2f} '
            f'| {whole:.1f} | {whole / alone:.2f} | {idle:.3f} | {ratio} |')
    if rec.get('alone_wb'):
        # Records from before 2026-12-02's second run have no write-back.
        alone_wb = median(rec['alone_wb'])
        out()
        out(f'With the write-back left when the writer ends (throttled) added to its '
            f'whole run; dd alone: {alone_wb:.1f} MB/s.')
        out()
        out('| deleter | write-back left s | dd MB/s whole run with it | of dd alone |')
        out('| --- | --- | --- | --- |')
        for n in names:
            r = rec['writer'][n]
            with_wb = median(r['dd_wb'])
            out(f'| {n} | {median(r["wb"]):.2f} | {with_wb:.1f} | {with_wb / alone_wb:.2f} |')
    ios = [x for x in rec.get('alone_io', []) if x]
    if ios:
        # Records from before 2026-12-02's fourth run have no device counts.
        a_mib, a_req = median([x[0] for x in ios]) / 2048, median([x[1] for x in ios])
        out()
        out(f"The device's writes over the writer's run (dd's start to its end); "
            f'dd alone: {a_mib:.1f} MiB in {a_req:.0f} requests.')
        out()
        out('| deleter | MiB written | beyond dd alone | write requests | beyond dd alone |')
        out('| --- | --- | --- | --- | --- |')
        for n in names:
            io = [x for x in rec['writer'][n].get('io', []) if x]
            if io:
                mib, req = median([x[0] for x in io]) / 2048, median([x[1] for x in io])
                out(f'| {n} | {mib:.1f} | {mib - a_mib:+.1f} | {req:.0f} | {req - a_req:+.0f} |')
    st = rec['stop']
    if not st:
        return
    out()
    out('Writer stopped during an adaptive deletion: stopped at '
        + ', '.join(f'{x["stopped"]:.2f}' for x in st) + ' s; deletion done at '
        + ', '.join(f'{x["done"]:.2f}' for x in st) + ' s'
        + (f' (full speed on an idle disk: {full_idle:.3f} s).' if full_idle else '.'))


def rates(rows):
    """(t, writer MB/s, removals/s) per sample interval of a Timeline."""
    got = []
    for (ta, ba, la), (tb, bb, lb) in zip(rows, rows[1:]):
        dt = max(tb - ta, 1e-6)
        got.append((tb, (bb - ba) / dt / 1e6, max(la - lb, 0) / dt))
    return got


def plot_timeline(path, title, series, alone=None, mark=None):
    """A PNG at path: the writer's MB/s (top) and the removals a second
    (bottom) against time, one line per (label, Timeline rows) in series;
    alone: dd alone's MB/s, mark: the time the writer stopped."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    for label, rows in series:
        r = rates(rows)
        a1.plot([x[0] for x in r], [x[1] for x in r], label=label)
        a2.plot([x[0] for x in r], [x[2] for x in r], label=label)
    if alone:
        a1.axhline(alone, color='grey', linestyle=':', label='dd alone')
    if mark is not None:
        for a in (a1, a2):
            a.axvline(mark, color='red', linestyle='--', label='the writer stops')
    a1.set_ylabel('writer MB/s')
    a2.set_ylabel('removals / s')
    a2.set_yscale('symlog', linthresh=100)
    a2.set_xlabel('seconds since the deletion started')
    (a2 if mark is not None else a1).legend(fontsize='small')
    a1.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_polite(plots, stem, names, lines, stops, alone):
    """The timelines of the last counted round: each deleter next to the
    writer, and the adaptive deletion whose writer stops."""
    os.makedirs(plots, exist_ok=True)
    plot_timeline(os.path.join(plots, f'polite-{stem}.png'), f'{stem}: next to a dd writer',
                  [(n, lines.get(n, [])) for n in names], alone=median(alone))
    if stops:
        st = stops[-1]
        plot_timeline(os.path.join(plots, f'polite-stop-{stem}.png'),
                      f'{stem}: the writer stops during an adaptive deletion',
                      [('adaptive', st['rows'])], mark=st['stopped'])


# ---- The slowdisk scenario (issue 35) -------------------------------------

# Cells: (model, fs, tree, dirs, files); bench/slowdisk/bench.py runs each.
SLOWDISK_CELLS = {
    'quick': [('hdd', 'ext4-j4', 'shuffled', 50, 400)],
    'full': [(m, 'ext4-j4', t, 100, 400) for m in ('hdd', 'cloud')
             for t in ('shuffled', 'snapshot', 'flat', 'in-order')]
    + [(m, fs, 'shuffled', 100, 400) for m in ('hdd', 'cloud') for fs in ('ext4', 'xfs')],
}
SLOWDISK_PEERS = ['rsync-de', 'stock', 'rm', 'find']


def slowdisk_bench():
    """bench/slowdisk/bench.py as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'slowdisk_bench', os.path.join(BENCH, 'slowdisk', 'bench.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def loop_stat(dev):
    """(sectors read, sectors written, writes) of block device MAJ:MIN so
    far."""
    name = os.path.basename(os.path.realpath(f'/sys/dev/block/{dev}'))
    f = open(f'/sys/block/{name}/stat').read().split()
    return int(f[2]), int(f[6]), int(f[4])


def print_dd(out, title, names, rec):
    out(f'\n## {title}\n')
    out('| deleter | delete median s (min-max) | dd MB/s, whole run (min-max) '
        f'| dd MB/s during the delete | dd MB/s to {TAIL:g} s after it '
        '| whole run vs dd alone | peak RSS MiB |')
    out('| --- | --- | --- | --- | --- | --- | --- |')
    alone = median(rec['dd alone']['dd'])
    for n in names:
        r = rec[n]
        if r['failed']:
            out(f'| {n} | failed: {r["failed"]} | | | | | |')
            continue
        dd = median(r['dd'])
        dds = f'{dd:.1f} ({min(r["dd"]):.1f}-{max(r["dd"]):.1f})'
        if n == 'dd alone':
            out(f'| (none: dd alone) | - | {dds} | - | - | 1.00 | - |')
            continue
        out(f'| {n} | {median(r["del"]):.3f} ({min(r["del"]):.3f}-{max(r["del"]):.3f}) '
            f'| {dds} | {median(r["win"]):.1f} | {win2(r)} | {dd / alone:.2f} '
            f'| {r["rss"] / 1024:.1f} |')


def win2(r):
    """The median dd MB/s to TAIL s after the delete ('-' in older records)."""
    return f'{median(r["win2"]):.1f}' if r.get('win2') else '-'


# ---- Summary -----------------------------------------------------------------

DE = ('rsync-de --delete-only', 'rsync-de -a --delete')


def details(records, out):
    """Every cell's own table again, from --json records."""
    for r in records:
        sz = ' '.join(r['spec'])
        title = f'{r["fs"]}, {r["scenario"]} ({sz}), {r["cache"]} cache, {r["date"]}'
        if r['kind'] == 'dd':
            names = list(r['rows'])
            print_dd(out, f'{r["fs"]}, dd {r["dd_mib"]} MiB next to deleting {sz} '
                     f'({r["cache"]} cache, {r["date"]})'
                     + (f', throttled {r["throttle"]}' if r['throttle'] else ''), names, r['rows'])
            continue
        names = list(r['peers'])
        cell = Cell(names)
        for n, p in r['peers'].items():
            cell.times[n], cell.rss[n] = p['times'], p['rss_kib']
            cell.cpu[n] = p.get('cpu', [])
            cell.link[n] = [tuple(x) for x in p.get('link', [])]
            if p['failed']:
                cell.failed[n] = p['failed']
        if r['scenario'] == 'ssh':
            print_cell(out, title, names, cell, base=(SSH_PEERS[0][0], 'rm -rf'),
                       cpu_what=', with sshd and the far side' if r.get('remote_cpu') else '')
        else:
            print_cell(out, title, names, cell)
        out(f'\nmount: {r["mount"]}')


def cpu_ratio(r):
    """'push / local = ratio' of rsync-de's median CPU seconds in an ssh
    cell, or '-' for records made before the far side's CPU was counted."""
    push, local = (r['peers'].get(SSH_PEERS[i][0]) or {} for i in (1, 0))
    if not r.get('remote_cpu') or not push.get('cpu') or not local.get('cpu'):
        return '-'
    a, b = median(push['cpu']), median(local['cpu'])
    return f'{a:.3f} / {b:.3f} = {a / b:.2f}' if b else '-'


def medians(r):
    """Peer name -> median seconds of a cell record (None: failed)."""
    return {n: median(p['times']) if not p['failed'] else None for n, p in r['peers'].items()}


def table_head(out, title, cols, note=None):
    """A summary table's title, note and header row."""
    out(f'\n## {title}\n')
    if note:
        out(note + '\n')
    out('| ' + ' | '.join(cols) + ' |')
    out('|' + ' --- |' * len(cols))


def summarize(records, out):
    """The ratio table over every delete/sync cell, then ssh and dd."""
    cells = [r for r in records if r['kind'] == 'cell'
             and r['scenario'] not in ('ssh', 'snapshot-expiry') + SSHFS]
    snaps = [r for r in records if r['kind'] == 'cell' and r['scenario'] == 'snapshot-expiry']
    if snaps:
        table_head(out, 'Summary: snapshot expiry, rsync-rm against rm -rf',
                   ['tree (and its cp -al copy)', 'fs', 'cache', 'rsync-rm -rf s',
                    'rm -rf s', 'ratio (target 0.55)'])
    for r in snaps:
        med = medians(r)
        de, rm = med.get('rsync-rm -rf'), med.get('rm -rf')
        if not de or not rm:
            out(f'| {" ".join(r["spec"])} | {r["fs"]} | {r["cache"]} | failed | | |')
            continue
        v = f'{de / rm:.2f}'
        out(f'| {" ".join(r["spec"])} | {r["fs"]} | {r["cache"]} | {de:.3f} | {rm:.3f} '
            f'| {f"**{v}**" if de / rm > 0.55 else v} |')
    if cells:
        out('\n## Summary: rsync-de against rm -rf and stock rsync (ratio of medians)\n')
        out('Ratios below 1 mean rsync-de is faster.  "target" is issue 6\'s limit; '
            '**bold** marks a miss.\n')
        out('| scenario | fs | cache | --delete-only vs rm -rf (target) | vs stock (target) '
            '| -a --delete vs rm -rf | vs stock | rm -rf s | stock s | rsync-de peak RSS MiB |')
        out('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for r in cells:
        med = medians(r)
        rm, st = med.get('rm -rf'), med.get('stock -a --delete')

        def ratio(n, base, limit=None):
            if med.get(n) is None:
                return 'failed' if n in r['peers'] else '-'
            if not base:
                st_failed = (r['peers'].get('stock -a --delete') or {}).get('failed')
                return 'stock fails' if base is st and st_failed else '-'
            v = med[n] / base
            s = f'{v:.2f}'
            if limit is not None:
                s = (f'**{s}**' if v > limit else s) + f' ({limit:.2f})'
            return s
        lim_rm = target_vs_rm(r['scenario'], r['fs'].split('-')[0])
        lim_st = target_vs_stock(r['scenario'])
        rss = max((r['peers'][n]['rss_kib'] for n in DE if n in r['peers']), default=0)
        sz = ' '.join(a for a in r['spec'] if not a.startswith('-'))
        out(f'| {r["scenario"]} ({sz}) | {r["fs"]} | {r["cache"]} '
            f'| {ratio(DE[0], rm, lim_rm if r["scenario"] != "sync" else None)} '
            f'| {ratio(DE[0], st, lim_st)} | {ratio(DE[1], rm)} | {ratio(DE[1], st, lim_st if r["scenario"] == "sync" else None)} '
            f'| {f"{rm:.3f}" if rm else "-"} '
            f'| {f"{st:.3f}" if st else ("failed" if "stock -a --delete" in r["peers"] else "-")} '
            f'| {rss / 1024:.1f} |')
    sshs = [r for r in records if r['kind'] == 'cell' and r['scenario'] == 'ssh']
    if sshs:
        table_head(out, 'Summary: push over ssh to localhost against the same delete run locally',
                   ['tree', 'fs', 'cache', 'rsync-de ssh push s', 'rsync-de local s',
                    'ssh / local (issue 5: <= 1.15)', 'stock ssh / local',
                    'rsync-de ssh vs rm -rf', 'ssh login alone s', '(push - login) / local',
                    'push over an open connection / local', 'CPU s push (both ends) / local'])
    for r in sshs:
        med = medians(r)
        de_s, de_l = med.get(SSH_PEERS[1][0]), med.get(SSH_PEERS[0][0])
        st_s, st_l = med.get(SSH_PEERS[3][0]), med.get(SSH_PEERS[2][0])
        rm = med.get('rm -rf')
        sz = ' '.join(a for a in r['spec'] if not a.startswith('-'))
        f = lambda x: f'{x:.3f}' if x else 'failed'
        q = lambda a, b: f'{a / b:.2f}' if a and b else '-'
        login = med.get(SSH_PEERS[-1][0])
        out(f'| {sz} | {r["fs"]} | {r["cache"]} | {f(de_s)} | {f(de_l)} | {q(de_s, de_l)} '
            f'| {q(st_s, st_l)} | {q(de_s, rm)} | {f(login) if login else "-"} '
            f'| {q(de_s - login, de_l) if login and de_s else "-"} '
            f'| {q(med.get(SSH_PEERS[4][0]), de_l)} | {cpu_ratio(r)} |')
    fuse = [r for r in records if r['kind'] == 'cell' and r['scenario'] in SSHFS]
    if fuse:
        table_head(out, 'Summary: on an sshfs mount over loopback (ratio of medians)',
                   ['tree', 'fs', 'rsync-de s', 'vs rm -rf (target)',
                    'vs stock -a --delete (target)', 'vs find -delete', 'rm -rf s', 'stock s',
                    'find s', 'rsync-de CPU s: own, sshfs + ssh, sshd + sftp-server'],
                   'Issue 19\'s targets in brackets; **bold** marks a miss.')
    for r in fuse:
        med = medians(r)
        de, rm = med.get(DE[0]), med.get('rm -rf')
        st, fd = med.get('stock -a --delete'), med.get('find -delete')
        lim = SSHFS_TARGET.get(r['scenario'])

        def q(a, b, limit=None):
            if not a or not b:
                return '-'
            s = f'{a / b:.2f}'
            return s if limit is None else (f'**{s}**' if a / b > limit else s) + f' ({limit:.2f})'
        p = r['peers'].get(DE[0]) or {}
        link = p.get('link') or []
        cpu = '-'
        if p.get('cpu') and link:
            cpu = (f'{median(p["cpu"]):.3f}, {median([x[0] for x in link]):.3f}, '
                   f'{median([x[1] for x in link]):.3f}')
        def f(x, n=None):
            return f'{x:.3f}' if x else 'failed' if n is None or n in r['peers'] else '-'
        sz = ' '.join(a for a in r['spec'] if not a.startswith('-'))
        out(f'| {sz} | {r["fs"]} | {f(de, DE[0])} | {q(de, rm, lim)} '
            f'| {q(de, st, lim if r["scenario"] == "sshfs" else None)} | {q(de, fd)} '
            f'| {f(rm, "rm -rf")} | {f(st, "stock -a --delete")} | {f(fd, "find -delete")} '
            f'| {cpu} |')
    sd = [r for r in records if r['kind'] == 'slowdisk']
    if sd:
        mod = slowdisk_bench()
        for r in sd:
            out(f'\n## Summary: slowdisk {r["title"]}\n')
            out(mod.table(r['rows'], list(r['rows'])))
    for r in (r for r in records if r['kind'] == 'polite'):
        print_polite(out, f'Summary: {r["fs"]}, {" ".join(r["spec"])}, {r["throttle"]}',
                     list(r['rows']['writer']), r['rows'])
    dds = [r for r in records if r['kind'] == 'dd']
    if dds:
        out('\n## Summary: dd writer next to a deletion\n')
        out('| fs | cache | throttle | dd alone MB/s | deleter | delete s | dd MB/s whole run '
            f'| dd MB/s during delete | dd MB/s to {TAIL:g} s after it | during vs alone |')
        out('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for r in dds:
        alone = median(r['rows']['dd alone']['dd'])
        for n, p in r['rows'].items():
            if n == 'dd alone':
                continue
            if p['failed']:
                out(f'| {r["fs"]} | {r["cache"]} | {r["throttle"] or "-"} | {alone:.1f} | {n} | failed | | | | |')
                continue
            out(f'| {r["fs"]} | {r["cache"]} | {r["throttle"] or "-"} | {alone:.1f} | {n} '
                f'| {median(p["del"]):.3f} | {median(p["dd"]):.1f} | {median(p["win"]):.1f} '
                f'| {win2(p)} | {median(p["win"]) / alone:.2f} |')


# ---- Main --------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split('\n\n', 2)[2])
    ap.add_argument('--quick', action='store_true',
                    help='make bench: --size quick, and unless given --fs ext4 --scenarios '
                    'flat,rflat,wide,deep,big,sync,ssh,dd')
    ap.add_argument('--size', choices=('quick', 'mid', 'full'), default='full',
                    help='tree sizes (see above; default full)')
    ap.add_argument('--runs', type=int, default=3, help='counted runs per cell (default 3)')
    ap.add_argument('--fs', default=None,
                    help='ext4, xfs, xfs-lb256k (logbsize=256k), btrfs, tmpfs '
                    '(default ext4,xfs,tmpfs)')
    ap.add_argument('--scenarios', default=None, help='default: flat,rflat,wide,deep,big,sync,ssh')
    ap.add_argument('--cache', default='cold', help='cold, warm or cold,warm')
    ap.add_argument('--peers', default='',
                    help='only these peers in the delete and dd scenarios (names as printed)')
    ap.add_argument('--peer', action='append', default=[], metavar='NAME=CMD',
                    help='an extra deleter; CMD may use {top} {empty} {target}')
    ap.add_argument('--dd-peers', default=','.join(DD_PEERS),
                    help='deleters for the dd scenario (default: %(default)s)')
    ap.add_argument('--polite', action='store_true',
                    help='dd scenario: the polite deleters (issue 8) instead of --dd-peers')
    ap.add_argument('--dd-mib', type=int, default=None, help='dd size (default 1024, quick 256)')
    ap.add_argument('--plots', default=None, metavar='DIR',
                    help='polite scenario: write PNG timelines here')
    ap.add_argument('--throttle', default=None, metavar='wbps=20M,wiops=200',
                    help='limit the loop device while dd runs')
    ap.add_argument('--tree', action='append', default=[], metavar='SCENARIO=ARGS',
                    help='other mktree arguments for a scenario, e.g. "flat=flat 200000"')
    ap.add_argument('--img-size', default='16G', help='loop image / tmpfs size')
    ap.add_argument('--dir', default=None, help='non-root: where to make trees')
    ap.add_argument('--json', default=None, help='append raw records (JSON lines) here')
    ap.add_argument('--out', default=None, help='also write the report here')
    ap.add_argument('--summarize', nargs='+', default=None, metavar='FILE.jsonl',
                    help='print the summary tables of earlier --json runs')
    ap.add_argument('--details', action='store_true',
                    help='with --summarize: every cell\'s table too')
    a = ap.parse_args()
    if a.plots:
        # Before any measuring: a run of an hour must not end without
        # its records for want of the plotter.
        try:
            import matplotlib	# noqa: F401
        except ImportError:
            ap.error('--plots needs matplotlib (Debian: python3-matplotlib; '
                     'rsync-src/deps.sh bench installs it)')

    out = reporter(a.out)
    if a.summarize:
        recs = [json.loads(l) for f in a.summarize for l in open(f) if l.strip()]
        summarize(recs, out)
        if a.details:
            details(recs, out)
        return

    sh(['make', '-s', '-C', BENCH, 'mktree'], check=True, stdout=subprocess.DEVNULL)
    mode = 'quick' if a.quick else a.size
    if a.fs is None:
        a.fs = 'ext4' if a.quick else 'ext4,xfs,tmpfs'
    if a.scenarios is None:
        a.scenarios = 'flat,rflat,wide,deep,big,sync,ssh' + (',dd' if a.quick else '')
    sizes = dict(SIZES[mode])
    for t in a.tree:
        sc, args = t.split('=', 1)
        sizes[sc] = shlex.split(args)
    dd_mib = a.dd_mib or DD_MIB[mode]
    scenarios = a.scenarios.split(',')
    for s in scenarios:
        if s not in sizes:
            sys.exit(f'bench: unknown scenario {s}')
    root = os.geteuid() == 0
    fss = a.fs.split(',') if root and not a.dir else ['dir']
    for fs in fss:
        if fs not in FS and fs not in ('tmpfs', 'dir'):
            sys.exit(f'bench: unknown filesystem {fs}')
    base = a.dir or tempfile.gettempdir()

    vals = {'top': TOP}
    want = a.peers.split(',') if a.peers else None
    extra = []
    for p in a.peer:
        name, cmd = p.split('=', 1)
        extra.append((name, shlex.split(cmd)))

    def usable(peers, filtered=True):
        got = []
        for n, t in peers:
            if n.startswith('ssh '):
                got.append((n, t))
                continue
            if filtered and want and n not in want and n not in dict(extra):
                continue
            exe = t[0].format(top=TOP, rimraf=vals.get('rimraf') or '')
            if not exe or not (shutil.which(exe) or os.access(exe, os.X_OK)):
                continue
            got.append((n, t))
        return got
    if any(s not in ('sync', 'ssh') for s in scenarios) and (not want or 'rimraf' in want):
        vals['rimraf'] = rimraf_path()
    delete_peers = usable(DELETE_PEERS + extra)
    dd_names = a.dd_peers.split(',') + [n for n, _ in extra]
    dd_peers = [(n, t) for n, t in delete_peers if n in dd_names]
    if a.polite:
        sh(['make', '-s', '-C', os.path.join(TOP, 'delete_engine'), 'tools'], check=True,
           stdout=subprocess.DEVNULL)
        dd_peers = usable(POLITE_PEERS, False) + [(n, t) for n, t in dd_peers if n in dict(extra)]

    sshd = None
    if any(s in scenarios for s in ('ssh',) + SSHFS):
        try:
            sshd = start_sshd()
            vals['ssh'], vals['sshmux'] = sshd.user_ssh, sshd.mux
        except (sshdlib.Unavailable, sshdlib.StartFailed) as e:
            log(f'ssh and sshfs scenarios skipped: {e}')
            scenarios = [s for s in scenarios if s not in ('ssh',) + SSHFS]

    jsonf = open(a.json, 'a') if a.json else None
    records = []

    def record(r):
        records.append(r)
        if jsonf:
            jsonf.write(json.dumps(r) + '\n')
            jsonf.flush()

    out(f'# rsync-de deletion benchmark, {time.strftime("%Y-%m-%d %H:%M %Z")}')
    out()
    out(f'{a.runs} counted runs per cell after one warm-up round, peers alternated, '
        f'fresh tree per run. Ratios are of medians; < 1 means faster than the peer named.')
    out(f'Command: bench/run.py {" ".join(shlex.quote(x) for x in sys.argv[1:])}')
    if 'slowdisk' in scenarios:
        mod = slowdisk_bench()
        names = [n for n in SLOWDISK_PEERS if not want or n in want]
        for model, fs, tree, dirs, files in SLOWDISK_CELLS['quick' if mode == 'quick' else 'full']:
            rows, text = mod.run_cell(model, [], fs, tree, dirs, files, '2G', names, a.runs,
                                      log=log)
            out(text)
            record(dict(date=time.strftime('%Y-%m-%d %H:%M'), kind='slowdisk',
                        title=text.split('\n')[1].lstrip('# '), model=model, fs=fs,
                        tree=tree, dirs=dirs, files=files, runs=a.runs, rows=rows))
        scenarios = [s for s in scenarios if s != 'slowdisk']
    mounts = []
    for fs in fss:
        m = Mount(fs, base, a.img_size)
        try:
            mounts.append(m.mount_line())
            work = os.path.join(m.path, 'w')
            os.mkdir(work)
            empty = os.path.join(m.path, 'empty')
            os.mkdir(empty)
            vals.update(empty=empty, work=work)
            for cache in a.cache.split(','):
                for sc in scenarios:
                    spec = sizes[sc]
                    title = f'{fs}, {sc} ({" ".join(spec)}), {cache} cache'
                    now = dict(date=time.strftime('%Y-%m-%d %H:%M'), fs=fs, cache=cache,
                               scenario=sc, spec=spec, runs=a.runs, mount=m.mount_line())
                    if sc == 'polite':
                        thr = Throttle(a.throttle, m.device()) if a.throttle and m.device() \
                            else None
                        peers = [(n, t) for n, t in POLITE_ADAPT_PEERS
                                 if not want or n in want] + extra
                        rec = polite_scenario(m, spec, peers, vals, a.runs,
                                              dd_mib, thr, a.plots, out)
                        record(dict(now, kind='polite', dd_mib=dd_mib, rows=rec,
                                    throttle=thr.describe() if thr else None))
                        continue
                    if sc == 'dd':
                        thr = None
                        if a.throttle:
                            if m.device():
                                thr = Throttle(a.throttle, m.device())
                            else:
                                log(f'{fs}: not a block device, dd runs unthrottled')
                        rec = dd_scenario(m, spec, cache, dd_peers, vals, a.runs, dd_mib,
                                          thr, out)
                        record(dict(now, kind='dd', dd_mib=dd_mib, rows=rec,
                                    throttle=thr.describe() if thr else None))
                        continue
                    user = fuse = None
                    if sc in SSHFS:
                        peers = [(n, t) for n, t in delete_peers
                                 if n in SSHFS_PEERS or n in dict(extra)]
                        # The server's view: the login user's tree.  empty/
                        # is the user's too, so that stock's -a has no
                        # owner to change on T/ (sftp-server, running as
                        # the user, cannot chown: exit 23).
                        user = sshd.as_user
                        os.chown(work, sshd.pw.pw_uid, sshd.pw.pw_gid)
                        os.chown(empty, sshd.pw.pw_uid, sshd.pw.pw_gid)
                        try:
                            fuse = Sshfs(sshd, work, os.path.join(m.path, 'mnt'))
                        except sshdlib.Unavailable as e:
                            log(f'{sc} skipped: {e}')
                            continue
                    elif sc == 'snapshot-expiry':
                        peers = usable(SNAPSHOT_PEERS, False) + usable(extra, False)
                    elif sc == 'sync':
                        # --peer adds to these too, with {src} the source.
                        peers = usable(SYNC_PEERS, False) + usable(extra, False)
                    elif sc == 'ssh':
                        # --peer adds to these too: {ssh} and {sshmux}
                        # name the login's ssh command lines.
                        peers = usable(SSH_PEERS, False) + usable(extra, False)
                        user = sshd.as_user
                        os.chown(work, sshd.pw.pw_uid, sshd.pw.pw_gid)
                    else:
                        peers = delete_peers
                    try:
                        cell = run_cell(m, sc, spec, cache, peers, vals, a.runs, user,
                                        remote_cpu=sshd.cpu if sc in ('ssh',) + SSHFS
                                        else None, sshfs=fuse)
                    finally:
                        if sc in ('ssh',) + SSHFS:
                            os.chown(work, 0, 0)
                            os.chown(empty, 0, 0)
                        if fuse:
                            fuse.umount()
                            fuse.cpu.close()
                    names = [n for n, _ in peers]
                    if sc == 'ssh':
                        print_cell(out, title, names, cell,
                                   base=(SSH_PEERS[0][0], 'rm -rf'),
                                   cpu_what=', with sshd and the far side' if sshd.cpu.path
                                   else '')
                    elif sc == 'snapshot-expiry':
                        print_cell(out, title, names, cell, base=('rm -rf', 'rm -rf'))
                    else:
                        print_cell(out, title, names, cell)
                    if sc == 'ssh':
                        now['remote_cpu'] = bool(sshd.cpu.path)
                    record(dict(now, kind='cell', peers={
                        n: {'times': cell.times[n], 'rss_kib': cell.rss[n],
                            'cpu': cell.cpu[n], 'link': cell.link[n],
                            'failed': cell.failed.get(n)}
                        for n in names}))
        finally:
            m.close()
    summarize(records, out)
    out()
    cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo')
                if l.startswith('model name')), platform.processor())
    out(f'CPU: {cpu}; cores: {os.cpu_count()}; kernel: {platform.release()}')
    for line in versions(vals):
        out(f'peer: {line}')
    for line in mounts:
        out(f'mount: {line}')


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt as e:
        run_cleanups()
        sys.exit(f'bench: interrupted ({e}); scratch mounts and images removed')

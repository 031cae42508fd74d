"""Where trees live: loop images and tmpfs, the I/O throttle, CPU
accounting groups, the loopback sshd and sshfs mounts.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

from .common import TOP, log, on_exit, sh
from .peers import SFTP_SERVERS

sys.path.insert(0, os.path.join(TOP, 'testsuite', 'lib'))
import sshdlib	# noqa: E402  (the sshd the fork's tests use)


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
        if self._dir(os.mkdir, 'no cgroup for remote CPU time'):
            on_exit(self.close)

    def _dir(self, op, failed):
        """op(the group's directory); when it fails, log failed and why,
        and go on without the group."""
        try:
            op(self.path)
            return True
        except OSError as e:
            log(f'{failed}: {e}')
            self.path = None
            return False

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
        self._dir(os.rmdir, f'cgroup {self.path} left')
        self.path = None


def start_sshd():
    """The tests' throwaway sshd (testsuite/lib/sshdlib.py) on loopback, with a
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


def loop_stat(dev):
    """(sectors read, sectors written, writes) of block device MAJ:MIN so
    far."""
    name = os.path.basename(os.path.realpath(f'/sys/dev/block/{dev}'))
    f = open(f'/sys/block/{name}/stat').read().split()
    return int(f[2]), int(f[6]), int(f[4])

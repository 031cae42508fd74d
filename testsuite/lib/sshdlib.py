"""A throwaway openssh-server on 127.0.0.1, for the fork's tests and bench/.

One copy of the set-up that testsuite/lib/forkfns.py (loopback_sshd, for
delete-only-ssh_test and fpsync-workers_test) and bench/run.py (the ssh
scenario) both use, so the benchmark measures the sshd the tests check.
It needs nothing from upstream's rsyncfns, so bench/ can import it too.

What it sets up: host and client ed25519 keys, an authorized_keys file and
an sshd_config in a directory of the caller's, and sshd -D on a loopback
port, accepting only public-key logins of one throwaway system user
(rsyncde-test, created once: shell /bin/sh, home "/", password field '*'
so that sshd does not treat the account as locked).  The config is the
lean one an administrator would write for such a host: no PAM, no DNS
look-up of the client, no motd, no last-log, no ~/.ssh/rc.  None of these
showed up in a login's strace here (sshd -T already says UseDNS no, and
motd and last-log are only printed for a terminal), so they document the
set-up rather than speed it up; what a login costs on loopback is measured
in docs/BENCHMARKS.md ("Push over ssh to localhost").
"""

import os
import pwd
import shutil
import socket
import subprocess
import time
from pathlib import Path

SSHD = '/usr/sbin/sshd'
SSH_USER = 'rsyncde-test'


class Unavailable(Exception):
    """No sshd can be started here (not root, or openssh-server missing)."""


class StartFailed(Exception):
    """sshd was started but no login succeeded; the message has its log."""


def free_port() -> int:
    """Return a loopback port the kernel says is free right now."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def login_user() -> pwd.struct_passwd:
    """Create SSH_USER if missing, make it loginable; return its entry.

    Home is "/", which exists, so that a login prints no "Could not chdir
    to home directory" on stderr (fpsync counts any stderr as a failure,
    and a benchmark should not time an error path)."""
    try:
        pwd.getpwnam(SSH_USER)
    except KeyError:
        subprocess.run(['useradd', '--system', '--no-create-home', '--home-dir', '/',
                        '--shell', '/bin/sh', SSH_USER], check=True)
    subprocess.run(['usermod', '-p', '*', '-d', '/', '-s', '/bin/sh', SSH_USER], check=True)
    return pwd.getpwnam(SSH_USER)


def sshd_config(d: Path, port: int) -> str:
    """The sshd_config text for a server keeping its files in d."""
    return f'''\
ListenAddress 127.0.0.1
Port {port}
HostKey {d}/host
AuthorizedKeysFile {d}/authorized_keys
PidFile {d}/sshd.pid
StrictModes no
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
PermitUserRC no
X11Forwarding no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers {SSH_USER}
LogLevel ERROR
'''


class LoopbackSshd:
    """sshd on 127.0.0.1 for as long as the object is open.

    Attributes once started:
      pw        the login user's passwd entry
      ssh       ssh command line (a string, for rsync -e) for root to log
                in as the user: ssh -p PORT -i KEY ... -l rsyncde-test
      user_ssh  the same for the login user itself (its own copy of the
                client key, no -l), for runs that execute as that user
      port, dir the port and the directory holding keys, config and log
    close() stops the master connection (if any) and sshd; it is safe to
    call twice.  Raises Unavailable or StartFailed from the constructor.
    """

    def __init__(self, d, port=None):
        """Start sshd with its files in d (created; every parent must be
        searchable by the login user) on port, or on a free one."""
        if os.geteuid() != 0:
            raise Unavailable('needs root to start sshd and create its login user')
        if not os.access(SSHD, os.X_OK) or not shutil.which('ssh-keygen'):
            raise Unavailable('openssh-server is not installed')
        self.dir = d = Path(d)
        self.proc = self.mux = None
        self.pw = login_user()
        d.mkdir(parents=True, exist_ok=True)
        # sshd reads authorized_keys as the user, so the path must be open
        # to it: d here, its parents are the caller's.
        os.chmod(d, 0o755)
        for key in ('host', 'client'):
            subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(d / key)],
                           check=True)
        shutil.copy(d / 'client.pub', d / 'authorized_keys')
        os.chmod(d / 'authorized_keys', 0o644)
        # ssh insists that a private key be its user's own file.
        shutil.copy(d / 'client', d / 'client.user')
        os.chown(d / 'client.user', self.pw.pw_uid, self.pw.pw_gid)
        os.chmod(d / 'client.user', 0o600)
        self.port = port or free_port()
        (d / 'sshd_config').write_text(sshd_config(d, self.port))
        os.makedirs('/run/sshd', exist_ok=True)
        with open(d / 'sshd.log', 'w') as log:
            self.proc = subprocess.Popen([SSHD, '-D', '-e', '-f', str(d / 'sshd_config')],
                                         stderr=log)
        opts = (f'-p {self.port} -o BatchMode=yes -o StrictHostKeyChecking=no '
                '-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR')
        self.ssh = f'ssh {opts} -i {d}/client -l {SSH_USER}'
        self.user_ssh = f'ssh {opts} -i {d}/client.user'
        try:
            self._wait_for_login()
        except BaseException:
            self.close()
            raise

    def _wait_for_login(self):
        for _ in range(50):
            if subprocess.run(self.ssh.split() + ['127.0.0.1', 'true'],
                              capture_output=True).returncode == 0:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise StartFailed(f'sshd did not come up: {(self.dir / "sshd.log").read_text()}')

    def as_user(self, argv):
        """argv run as the login user, with a clean environment."""
        return ['setpriv', f'--reuid={self.pw.pw_uid}', f'--regid={self.pw.pw_gid}',
                '--clear-groups', '--reset-env'] + list(argv)

    def start_master(self) -> str:
        """Open a ControlMaster connection as the login user; return the
        user's ssh command line that reuses it (no key exchange, no login)."""
        mux = self.dir / 'mux'
        mux.mkdir(exist_ok=True)
        os.chown(mux, self.pw.pw_uid, self.pw.pw_gid)
        cmd = f'{self.user_ssh} -o ControlPath={mux}/c'
        subprocess.run(self.as_user(cmd.split() + ['-o', 'ControlMaster=yes', '-o',
                                                   'ControlPersist=yes', '-fN', '127.0.0.1']),
                       check=True)
        self.mux = cmd
        return cmd

    def close(self):
        if self.mux:
            subprocess.run(self.as_user(self.mux.split() + ['-O', 'exit', '127.0.0.1']),
                           capture_output=True)
            self.mux = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

#!/usr/bin/env python3
"""--delete-only over a real sshd on 127.0.0.1, against every kind of peer.

The test starts its own openssh-server on a free loopback port, with
throwaway host and client keys and a config in its scratch directory
(StrictModes no, UsePAM no), logs in as a throwaway unprivileged user
(rsyncde-test, created once, password field '*' so sshd does not treat
it as locked), and stops sshd at the end.  It then runs the same matrix
as delete-only-remote_test: push and pull with rsync-de, ./rsync-stock and
Debian's rsync 3.5.0 on the far side, plus a stock client talking to an
rsync-de server.  Nothing leaves the loopback interface.
"""

import os
import pwd
import shutil
import subprocess
import time

from rsyncfns import RSYNC, SCRATCHDIR, claim_free_port, test_fail, test_skipped
from forkfns import delete_only_matrix, require_stock, run

SSHD = '/usr/sbin/sshd'
USER = 'rsyncde-test'

stock = require_stock()
fork = RSYNC.split()
if os.geteuid() != 0:
    test_skipped('needs root to start sshd and create its login user')
if not os.access(SSHD, os.X_OK) or not shutil.which('ssh-keygen'):
    test_skipped('openssh-server is not installed')

# ---- A throwaway login user -------------------------------------------------
try:
    pw = pwd.getpwnam(USER)
except KeyError:
    subprocess.run(['useradd', '--system', '--no-create-home', '--home-dir', '/nonexistent',
                    '--shell', '/bin/sh', USER], check=True)
    pw = pwd.getpwnam(USER)
subprocess.run(['usermod', '-p', '*', USER], check=True)

# ---- Keys and config in the scratch directory ------------------------------
d = SCRATCHDIR / 'sshd'
d.mkdir()
os.chmod(SCRATCHDIR, 0o755)
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
AllowUsers {USER}
LogLevel ERROR
''')
os.makedirs('/run/sshd', exist_ok=True)
sshd = subprocess.Popen([SSHD, '-D', '-e', '-f', str(d / 'sshd_config')],
                        stderr=open(d / 'sshd.log', 'w'))
ssh = (f'ssh -p {port} -i {d}/client -o BatchMode=yes -o StrictHostKeyChecking=no '
       f'-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -l {USER}')
try:
    # Wait until sshd answers (bounded).
    for _ in range(50):
        if run(ssh.split() + ['127.0.0.1', 'true']).returncode == 0:
            break
        time.sleep(0.1)
    else:
        test_fail(f'sshd did not come up: {(d / "sshd.log").read_text()}')

    peers = [('rsync-de', ' '.join(fork)), ('stock', stock)]
    if os.access('/usr/bin/rsync', os.X_OK):
        peers.append(('debian', '/usr/bin/rsync'))
    delete_only_matrix(SCRATCHDIR / 'm', fork, peers, '127.0.0.1:', ssh,
                       owner=(pw.pw_uid, pw.pw_gid))
finally:
    sshd.terminate()
    sshd.wait(timeout=10)

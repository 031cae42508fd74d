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

from rsyncfns import RSYNC, SCRATCHDIR
from forkfns import delete_only_matrix, loopback_sshd, require_stock

stock = require_stock()
fork = RSYNC.split()
with loopback_sshd(SCRATCHDIR / 'sshd') as (ssh, pw):
    peers = [('rsync-de', ' '.join(fork)), ('stock', stock)]
    if os.access('/usr/bin/rsync', os.X_OK):
        peers.append(('debian', '/usr/bin/rsync'))
    delete_only_matrix(SCRATCHDIR / 'm', fork, peers, '127.0.0.1:', ssh,
                       owner=(pw.pw_uid, pw.pw_gid))

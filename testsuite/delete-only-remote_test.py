#!/usr/bin/env python3
"""--delete-only over a remote shell, against rsync-de and stock peers.

The remote shell is upstream's lsh.sh stand-in (delete-only-ssh_test runs
the same matrix over a real sshd).  Pins, for a push and for a pull, with
the far side being rsync-de, ./rsync-stock (3.5.1, protocol 33) and, when
installed, Debian's /usr/bin/rsync (3.5.0, protocol 32):
  * the destination ends up exactly as a local --delete-only leaves it:
    extraneous entries gone, kept files' content and mtime untouched,
    nothing created;
  * a stock client sending the equivalent options to an rsync-de server
    gets the same result.
"""

import os

from rsyncfns import RSYNC, SCRATCHDIR, rsh_cmd
from forkfns import delete_only_matrix, require_stock

stock = require_stock()
fork = RSYNC.split()
peers = [('rsync-de', ' '.join(fork)), ('stock', stock)]
if os.access('/usr/bin/rsync', os.X_OK):
    peers.append(('debian', '/usr/bin/rsync'))
delete_only_matrix(SCRATCHDIR / 'm', fork, peers, 'lh:', rsh_cmd())

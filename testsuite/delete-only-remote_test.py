#!/usr/bin/env python3
"""--delete-only over a remote shell, against rsync-de and stock peers.

The remote shell is upstream's lsh.sh stand-in (the fork's sshd tests run
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
import shutil

from rsyncfns import RSYNC, SCRATCHDIR, rsh_cmd, rsync_path_arg, test_fail
from forkfns import age_tree, assert_same_tree, require_stock, run

stock = require_stock()
fork = RSYNC.split()
os.environ['RSYNC_RSH'] = rsh_cmd()
STOCK_EQUIVALENT = ['-r', '--delete', '--existing', '--ignore-existing']

src = SCRATCHDIR / 'src'
(src / 'keep' / 'deeper').mkdir(parents=True)
(src / 'keep' / 'deeper' / 'k').write_text('source k\n')
(src / 'same').write_text('source version\n')
(src / 'only-in-src').write_text('new\n')


def seed(dst):
    shutil.rmtree(dst, ignore_errors=True)
    (dst / 'keep' / 'deeper').mkdir(parents=True)
    (dst / 'gone' / 'a' / 'b').mkdir(parents=True)
    (dst / 'gone' / 'a' / 'b' / 'f').write_text('f\n')
    (dst / 'keep' / 'deeper' / 'k').write_text('dest k, different\n')
    (dst / 'keep' / 'extra').write_text('x\n')
    (dst / 'same').write_text('dest version\n')
    (dst / 'top-extra').write_text('t\n')
    age_tree(dst, 1_500_000_000)


# The expected result: a local --delete-only.
expected = SCRATCHDIR / 'expected'
seed(expected)
p = run(fork + ['--delete-only', f'{src}/', f'{expected}/'])
if p.returncode != 0:
    test_fail(f'local --delete-only failed: {p.stderr}')

peers = [('rsync-de', ' '.join(fork)), ('stock', stock)]
if os.access('/usr/bin/rsync', os.X_OK):
    peers.append(('debian', '/usr/bin/rsync'))

for peer, peer_cmd in peers:
    path = f'--rsync-path={rsync_path_arg(peer_cmd)}'
    for direction in ('push', 'pull'):
        dst = SCRATCHDIR / f'{peer}-{direction}'
        seed(dst)
        if direction == 'push':
            argv = fork + ['--delete-only', path, f'{src}/', f'lh:{dst}/']
        else:
            argv = fork + ['--delete-only', path, f'lh:{src}/', f'{dst}/']
        p = run(argv)
        label = f'--delete-only {direction} with a {peer} peer'
        print(label)
        if p.returncode != 0:
            test_fail(f'{label}: exit {p.returncode}: {p.stderr}')
        assert_same_tree(expected, dst, label)
        if int(os.stat(dst / 'same').st_mtime) != 1_500_000_000:
            test_fail(f'{label}: a kept file was touched')

# ---- A stock client pushing the equivalent options to an rsync-de server ----
dst = SCRATCHDIR / 'stock-client'
seed(dst)
p = run([stock, *STOCK_EQUIVALENT, f'--rsync-path={rsync_path_arg(" ".join(fork))}',
         f'{src}/', f'lh:{dst}/'])
if p.returncode != 0:
    test_fail(f'stock client to rsync-de server: exit {p.returncode}: {p.stderr}')
assert_same_tree(expected, dst, 'stock client, rsync-de server')

#!/usr/bin/env python3
"""--delete-only to and from rsync daemons on 127.0.0.1, of every kind.

For each daemon (rsync-de, ./rsync-stock, Debian's rsync 3.5.0 when
installed), a real `rsync --daemon` bound to 127.0.0.1 on a free port.
Pins:
  * a push to a writable module and a pull from a read-only one end
    exactly as a local --delete-only leaves the tree, kept files untouched;
  * `refuse options = delete` also refuses --delete-only (the client sends
    --delete), with rsync's refusal message, and nothing is deleted;
  * the daemon's log records each deletion, as for --delete.
"""

import os

from rsyncfns import (
    RSYNC, SCRATCHDIR, claim_free_port, start_rsyncd, test_fail,
)
from forkfns import (
    check_delete_only_result, delete_only_fixture, require_stock, run,
    seed_remote_dst, tree_listing,
)

stock = require_stock()
fork = RSYNC.split()
src, expected = delete_only_fixture(SCRATCHDIR / 'w', fork)

# As root the daemons keep root's ids, to write into root's scratch
# directories; a user's daemon cannot set any (setgroups fails) and
# runs as that user.
ids = 'uid = 0\ngid = 0\n' if os.getuid() == 0 else ''

daemons = [('rsync-de', ' '.join(fork)), ('stock', stock)]
if os.access('/usr/bin/rsync', os.X_OK):
    daemons.append(('debian', '/usr/bin/rsync'))

for i, (name, cmd) in enumerate(daemons):
    base = SCRATCHDIR / name
    push_dst, refused_dst = base / 'push', base / 'refused'
    for d in (push_dst, refused_dst):
        seed_remote_dst(d)
    log = base / 'rsyncd.log'
    conf = base / 'rsyncd.conf'
    conf.write_text(f'''\
pid file = {base}/rsyncd.pid
use chroot = no
hosts allow = 127.0.0.1
log file = {log}
transfer logging = yes
{ids}
[src]
\tpath = {src}
\tread only = yes

[dst]
\tpath = {push_dst}
\tread only = no

[refused]
\tpath = {refused_dst}
\tread only = no
\trefuse options = delete
''')
    port = claim_free_port(12950 + i)
    start_rsyncd(conf, port, cmd)
    url = f'rsync://127.0.0.1:{port}'

    # ---- Push to a writable module ------------------------------------------
    label = f'push to a {name} daemon'
    print(label)
    p = run(fork + ['--delete-only', f'{src}/', f'{url}/dst/'])
    if p.returncode != 0:
        test_fail(f'{label}: exit {p.returncode}: {p.stderr}')
    check_delete_only_result(expected, push_dst, label)
    logged = log.read_text()
    for gone in ('top-extra', 'keep/extra', 'gone/a/b/f'):
        if gone not in logged:
            test_fail(f'{label}: the daemon log does not record {gone}:\n{logged}')

    # ---- Pull from a read-only module -----------------------------------------
    label = f'pull from a {name} daemon'
    print(label)
    pull_dst = base / 'pull'
    seed_remote_dst(pull_dst)
    p = run(fork + ['--delete-only', f'{url}/src/', f'{pull_dst}/'])
    if p.returncode != 0:
        test_fail(f'{label}: exit {p.returncode}: {p.stderr}')
    check_delete_only_result(expected, pull_dst, label)

    # ---- refuse options = delete refuses --delete-only ------------------------
    label = f'refused module on a {name} daemon'
    print(label)
    before = tree_listing(refused_dst)
    p = run(fork + ['--delete-only', f'{src}/', f'{url}/refused/'])
    if p.returncode == 0 or 'delete' not in p.stderr or 'refuse' not in p.stderr:
        test_fail(f'{label}: exit {p.returncode}: {p.stderr}')
    if tree_listing(refused_dst) != before:
        test_fail(f'{label}: the refused run changed the module')

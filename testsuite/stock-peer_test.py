#!/usr/bin/env python3
"""The stock baseline is what it claims to be.

Differential tests and benchmarks compare rsync-de with ./rsync-stock, the
same upstream release built from the same verified tarball with no patches.
Pins:
  * rsync-stock reports plain upstream: "rsync  version 3.5.1  protocol
    version 33", and no rsync-de line;
  * rsync-de reports the same release and protocol, plus its fork suffix.
"""

import re

from rsyncfns import RSYNC, test_fail
from forkfns import require_stock, run

stock = require_stock()

# ---- The stock build is plain upstream ---------------------------------------
lines = run([stock, '--version']).stdout.splitlines()
m = re.fullmatch(r'rsync  version (\d+\.\d+\.\d+)  protocol version 33', lines[0])
if not m:
    test_fail(f'stock first line: {lines[0]!r}')
if any('rsync-de' in line for line in lines):
    test_fail('stock build names rsync-de: it was built with patches')

# ---- The fork is the same release plus its suffix ----------------------------
fork = run(RSYNC.split() + ['--version']).stdout.splitlines()
want = f'rsync  version {m.group(1)}-de'
if not fork[0].startswith(want) or not fork[0].endswith('protocol version 33'):
    test_fail(f'fork first line {fork[0]!r} is not {want}N of the same release')

#!/usr/bin/env python3
"""--delete-threads beyond what memory allows: fewer workers, nothing failed.

Under `ulimit -v 1000000`, --delete-threads=1024 cannot start its
workers (each takes a stack and a 512 KiB buffer, and each malloc arena
64 MiB of address space).  Pins: the engine starts what it can, sheds
workers until the run has room, deletes sixteen directories of 5,000
files completely and exits 0, and no deletion reports "Cannot allocate
memory" (issue 22: 55 workers were started, the run had 8 MB left, and
reads failed with ENOMEM, leaving thousands of entries and exit 23).
"""

import os
import shutil

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from chaoslib import crash_marks
from forkfns import run

if not shutil.which('prlimit'):
    test_skipped('prlimit (util-linux) is not installed')
fork = RSYNC.split()
empty = SCRATCHDIR / 'empty'
empty.mkdir()
target = SCRATCHDIR / 'T'
for d in range(16):
    sub = target / f'd{d}'
    sub.mkdir(parents=True)
    for f in range(5000):
        os.close(os.open(sub / f'file-with-a-longish-name-{f:06d}', os.O_CREAT | os.O_WRONLY))

p = run(['prlimit', f'--as={1000000 * 1024}'] + fork
        + ['--delete-only', '--delete-threads=1024', f'{empty}/', f'{target}/'])
print(f'exit {p.returncode}')
if p.returncode != 0 or 'Cannot allocate memory' in p.stderr or crash_marks(p.stderr):
    test_fail(f'exit {p.returncode}: {p.stderr[-2000:]}')
if os.listdir(target):
    left = sum(len(files) + len(dirs) for _, dirs, files in os.walk(target))
    test_fail(f'{left} entries left')

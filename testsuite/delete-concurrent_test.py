#!/usr/bin/env python3
"""Deletes that race another deleter on one tree finish, leave nothing, and
exit as stock does: 0, or 24 with "file has vanished" lines.

Shapes, ROUNDS rounds each, on a fresh tree of 150 directories (each
with three subdirectories of two files and a subdirectory):
  * two --delete-only runs started together;
  * two --delete-only --exclude=zzz runs (issue 22: with a filter they
    hung, 3 times in 3);
  * one --delete-only --exclude=zzz run while `rm -rf` removes the same
    directories from the other end.
Pins, for every rsync-de run:
  * it returns within 60 s (a hang kills its process group and fails);
  * its exit code is 0 or 24, never 23: what the other deleter removed
    after rsync listed it has vanished, it did not fail (before: exit 23
    and `opendir ".../d142/s1" failed: No such file or directory`);
  * it prints nothing on stdout, and on stderr only stock's forms:
    `file has vanished: "..."` and the code-24 warning, with 24;
  * on this file system, which gives d_type, it prints no `file has
    vanished` at all: stock warns only when its listing's lstat finds a
    name gone, and is silent when its unlink or opendir does, and
    rsync-de lstats nothing here (it warned for every entry the other
    deleter took first: about 3,900 lines beside rm -rf, exit 24 every
    time, where stock printed about 120);
  * nothing is left in T (before: now and then an empty directory).
Stock, raced the same way, is the reference: it must meet the same pins
(two runs of it per shape, without rm -rf).

Why not in delete-differential_test.py: that test compares stock and
rsync-de line for line and by exit code, and a race decides both: which
run lists which name before the other removes it, so which lines each
prints and whether it exits 0 or 24.  No ordering of two real processes
makes that repeatable, so the outcome class is compared here instead.
"""

import os
import re
import shutil
import signal
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail
from chaoslib import crash_marks, entries
from forkfns import require_stock

stock = require_stock()
fork = RSYNC.split()
TIMEOUT = 60
ROUNDS = 4
STOCK_EQUIVALENT = ['-r', '--delete', '--existing', '--ignore-existing']
ALLOWED = [re.compile(r'^file has vanished: ".*"$'),
           re.compile(r'^rsync warning: some files vanished before they could '
                      r'be transferred \(code 24\) at \S+ \[\w+=[^\]]+\]$')]

empty = SCRATCHDIR / 'empty'
empty.mkdir()
target = SCRATCHDIR / 'T'


def build():
    for i in range(150):
        d = target / f'd{i}'
        for s in ('s1', 's2', 's3'):
            (d / s / 'x').mkdir(parents=True)
            for f in ('f1', 'f2', 'x/y'):
                (d / s / f).write_text(f'{i}\n')
        (d / 'g').write_text(f'{i}\n')


def start(argv):
    return subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            errors='surrogateescape', start_new_session=True)


def finish(p, label):
    """Wait for p; on a hang kill its process group (rsync's forked
    children too) and fail."""
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        test_fail(f'{label}: no exit after {TIMEOUT} s (hang)')
    return p.returncode, out, err


def check(label, rc, out, err, side):
    if crash_marks(err):
        test_fail(f'{label}: {err}')
    if rc not in (0, 24):
        test_fail(f'{label}: exit {rc}, want 0 or 24:\n{err[-3000:]}')
    if out:
        test_fail(f'{label}: stdout {out[-2000:]}')
    odd = [line for line in err.splitlines()
           if not any(a.match(line) for a in ALLOWED)]
    if odd:
        test_fail(f'{label}: stderr lines stock never prints here: {odd[:5]}')
    if (rc == 24) != ('vanished' in err):
        test_fail(f'{label}: exit {rc} with stderr {err[-2000:]}')
    if side == 'fork' and 'vanished' in err:
        test_fail(f'{label}: {err.count("file has vanished")} "file has vanished" '
                  f'lines, where nothing was lstat\'ed: {err[:500]}')


def left_over(label):
    left = entries(target)
    if left:
        test_fail(f'{label}: left {sorted(left)[:10]}')


SHAPES = [
    ('two runs', [], 2),
    ('two filtered runs', ['--exclude=zzz'], 2),
    ('a filtered run and rm -rf', ['--exclude=zzz'], 1),
]
for shape, extra, runs in SHAPES:
    sides = [('fork', fork + ['--delete-only'], ROUNDS)]
    if runs == 2:
        sides.append(('stock', [stock] + STOCK_EQUIVALENT, 2))
    for side, argv, rounds in sides:
        exits = []
        for r in range(rounds):
            label = f'{side}, {shape}, round {r}'
            build()
            procs = [start(argv + extra + [f'{empty}/', f'{target}/'])
                     for _ in range(runs)]
            if runs == 1:
                # From the other end of the listing, so the two meet.
                names = sorted(os.listdir(target), reverse=True)
                rm = subprocess.Popen(['rm', '-rf'] + [str(target / n) for n in names],
                                      stderr=subprocess.DEVNULL)
            results = [finish(p, label) for p in procs]
            if runs == 1:
                rm.wait()
            for rc, out, err in results:
                check(label, rc, out, err, side)
                exits.append(rc)
            left_over(label)
        print(f'{side}, {shape}: exits {exits}')

shutil.rmtree(target, ignore_errors=True)

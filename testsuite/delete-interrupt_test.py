#!/usr/bin/env python3
"""A deletion killed with SIGKILL half way is finished by a rerun, and
--delete-only is idempotent.

Pins:
  * kill -9 of every rsync process mid-delete (`--delete-only`), and
    kill -9 of only the process running the deletion engine (`-a
    --delete`): the tree is left part-deleted, the surviving rsync
    processes exit by themselves within a timeout (no hang, no orphan),
    with a code from rsync's set, and no sanitizer report;
  * a rerun exits 0 and leaves the target empty;
  * one more `--delete-only -v -i` run exits 0, prints no deletion or
    itemize line, and changes nothing (mtime of every entry included),
    both on the emptied tree and on a tree where the source keeps files.
"""

import os
import re
import signal
import subprocess
import time

from rsyncfns import RSYNC, SCRATCHDIR, test_fail
from chaoslib import (
    RSYNC_EXIT_CODES, crash_marks, digest_diff, entries, make_tree, tree_digest,
)

fork = RSYNC.split()
empty = SCRATCHDIR / 'empty'
empty.mkdir()
target = SCRATCHDIR / 'T'


def engine_pid(pgid: int):
    """The rsync process in pgid that runs more than one thread: the one
    deleting through the engine's pool."""
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            if len(os.listdir(f'/proc/{pid}/task')) > 1:
                return int(pid)
        except OSError:
            continue
    return None


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def kill_mid_delete(argv, how: str):
    """Start argv on target; once deletion is under way SIGKILL the whole
    group ('all') or the engine's process ('engine').  Returns the number
    of entries left, or None when rsync finished before it could be
    killed mid-delete."""
    before = len(entries(target))
    top = len(os.listdir(target))
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors='surrogateescape',
                         start_new_session=True)
    try:
        victim = None
        while p.poll() is None:
            if how == 'engine' and victim is None:
                victim = engine_pid(p.pid)
            if len(os.listdir(target)) < top and (how == 'all' or victim):
                break
            time.sleep(0.002)
        if p.poll() is not None:
            p.communicate()
            return None
        if how == 'all':
            os.killpg(p.pid, signal.SIGKILL)
        else:
            os.kill(victim, signal.SIGKILL)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            test_fail(f'{how}: rsync did not exit after its engine process was killed')
        deadline = time.monotonic() + 60
        while group_alive(p.pid):
            if time.monotonic() > deadline:
                test_fail(f'{how}: rsync processes still running 60s after the kill')
            time.sleep(0.05)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    if how == 'engine' and (p.returncode not in RSYNC_EXIT_CODES or
                            p.returncode == 0 or crash_marks(err)):
        test_fail(f'{how}: the client exited {p.returncode}:\n{err[-2000:]}')
    left = len(entries(target))
    print(f'  {how}: killed with {left} of {before} entries left, exit {p.returncode}')
    if left == 0:
        return None
    return left


def must_succeed(argv, label):
    p = subprocess.run(argv, capture_output=True, text=True,
                       errors='surrogateescape', timeout=120)
    if p.returncode != 0 or crash_marks(p.stderr):
        test_fail(f'{label}: exit {p.returncode}:\n{p.stderr[-2000:]}')
    return p


CHANGE_LINE = re.compile(r'^(\*?deleting |[<>ch.*][fdLDS])')


def assert_idempotent(src, label):
    """One more --delete-only run changes nothing and says nothing."""
    before = tree_digest(target)
    p = must_succeed(fork + ['--delete-only', '-v', '-i', f'{src}/', f'{target}/'],
                     label)
    said = [l for l in p.stdout.splitlines() if CHANGE_LINE.match(l)]
    if said:
        test_fail(f'{label}: a second run reported changes: {said[:5]}')
    changed = digest_diff(before, tree_digest(target))
    if changed:
        test_fail(f'{label}: a second run changed the tree: {changed[:5]}')


for how, mode in (('all', ['--delete-only']), ('engine', ['-a', '--delete'])):
    argv = fork + mode + [f'{empty}/', f'{target}/']
    for size in (20, 40, 80):
        subprocess.run(['rm', '-rf', str(target)])
        make_tree(target, 40, 20, size)
        if kill_mid_delete(argv, how) is not None:
            break
    else:
        test_fail(f'{how}: rsync always finished before it could be killed')
    must_succeed(argv, f'{how}: rerun')
    if entries(target):
        test_fail(f'{how}: the rerun left {entries(target)[:5]}')
    assert_idempotent(empty, f'{how}: second run')

# ---- Idempotent where the source keeps part of the tree --------------------
subprocess.run(['rm', '-rf', str(target)])
make_tree(target, 4, 4, 4)
# Not 'src': runtests.py makes SCRATCHDIR/src a symlink to the suite.
src = SCRATCHDIR / 'source'
make_tree(src, 2, 4, 2)
(src / 'only-in-src').write_text('not created by --delete-only\n')
must_succeed(fork + ['--delete-only', f'{src}/', f'{target}/'], 'keep: first run')
if (target / 'only-in-src').exists() or (target / 'd003').exists() or \
        not (target / 'd001' / 'e003' / 'f001').exists() or \
        (target / 'd001' / 'e003' / 'f002').exists():
    test_fail(f'keep: the first run did not delete exactly the extras: {entries(target)}')
assert_idempotent(src, 'keep: second run')

#!/usr/bin/env python3
"""--debug=del prints the deletion engine's plan: the schedule and why.

On a loop-mounted ext4, each form of a deletion prints one line
"[generator] delete plan: ext4: SCHEDULE (RULE)..." (de_explain()): auto
takes the global windows on a local file system, -v with
--delete-schedule=dirs goes directory by directory in rsync's order, a
limit with --delete-schedule=global takes the batch walk, and a dry run
the serial walk.  A sync that calls the engine once per directory prints
its plan once, as the line does not change.  Without --debug=del no such
line is printed, and the other lines are the same; -vv, which implies --debug=del's level, prints no plan.
"""

import os
import re
import shutil

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from forkfns import Mounts, run

if not shutil.which('mkfs.ext4'):
    test_skipped('mkfs.ext4 is not installed')
if os.geteuid() != 0:
    test_skipped('needs root for its loop mount')
fork = RSYNC.split()
mounts = Mounts()
mnt = mounts.loop(['mkfs.ext4', '-q', '-F'], SCRATCHDIR / 'ext4.img',
                  SCRATCHDIR / 'mnt', 64)
empty = SCRATCHDIR / 'empty'
empty.mkdir()
PLAN = re.compile(r'^\[(generator|receiver)\] delete plan: (.*)$', re.M)


def seed(dst, dirs=3):
    """dst: dirs directories of 4 files each, and a file."""
    shutil.rmtree(dst, ignore_errors=True)
    for d in range(dirs):
        (dst / f'd{d}').mkdir(parents=True)
        for f in range(4):
            (dst / f'd{d}' / f'f{f}').write_text('x\n')
    (dst / 'top').write_text('x\n')


def lines(out):
    """out's lines but the blank ones and the byte counts (the plan line
    is itself a message the generator sends)."""
    return [line for line in out.split('\n')
            if line and not line.startswith('sent ')]


def plans(label, opts, src=empty, want_rc=0, debug=True):
    """Run a deletion into mnt/dst with --debug=del (debug) and return
    its plan lines, after checking that the run without it prints the
    rest."""
    dst = mnt / 'dst'
    seed(dst)
    p = run(fork + opts + (['--debug=del'] if debug else []) +
            [f'{src}/', f'{dst}/'])
    if p.returncode != want_rc:
        test_fail(f'{label}: exit {p.returncode}, want {want_rc}: {p.stderr}')
    seed(dst)
    q = run(fork + opts + [f'{src}/', f'{dst}/'])
    if PLAN.search(q.stdout) or lines(PLAN.sub('', p.stdout)) != \
            lines(q.stdout):
        test_fail(f'{label}: without --debug=del:\n{q.stdout}\nwith it:\n{p.stdout}')
    return [m.group(2) for m in PLAN.finditer(p.stdout)]


def want(label, got, prefix, count=1, contains=()):
    if len(got) != count or not got[0].startswith(prefix) or \
            any(c not in got[0] for c in contains):
        test_fail(f'{label}: plan lines {got!r}, want {count} starting '
                  f'{prefix!r} with {contains!r}')


want('auto', plans('auto', ['-r', '--delete-only']),
     'ext4: global windows (a local file system); ')
want('-v dirs', plans('-v dirs', ['-rv', '--delete-only',
                                  '--delete-schedule=dirs']),
     'ext4: directory by directory, reports in order (asked for); ')
want('limit', plans('limit', ['-r', '--delete-only', '--max-delete=100',
                              '--delete-schedule=global']),
     'ext4: batch walk (global windows, reports in order) (asked for); ',
     contains=(', a limit',))
want('dry run', plans('dry run', ['-rn', '--delete-only']),
     'ext4: serial walk (a dry run decides entry by entry); ')
# -vv implies --debug=del's level, and its output stays stock's: only a
# --debug that names del prints the plan.
if plans('-vv', ['-rvv', '--delete-only'], debug=False):
    test_fail('-vv printed a plan line')
want('-vv --debug=del', plans('-vv --debug=del', ['-rvv', '--delete-only']),
     'ext4: batch walk (global windows, reports in order) (a local file '
     'system); ')

# A sync: the source keeps the directories and lacks their files, so the
# engine is called for each directory's extraneous files; one line.
src = SCRATCHDIR / 'src'
for d in range(3):
    (src / f'd{d}').mkdir(parents=True)
want('sync', plans('sync', ['-r', '--delete', '--delete-schedule=dirs'],
                   src=src), 'ext4: directory by directory (asked for); ')

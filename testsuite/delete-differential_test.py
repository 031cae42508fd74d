#!/usr/bin/env python3
"""rsync-de deletes exactly what stock rsync deletes, and says it the same way.

The same random source and destination trees go through ./rsync-stock and
./rsync with the same options (or, for --delete-only, stock's
`-r --delete --existing --ignore-existing`); the trees left behind, every
line printed and the exit codes must match.  The trees hold files, directories,
symlinks, fifos, awkward names (newline, non-UTF-8, leading dash, long)
and type changes between source and destination.

Seeds: a fixed set in `make check`; RSYNC_DE_SEEDS=N runs N more random
ones (the failing seed is printed).
"""

import difflib
import os
import random
import re
import shutil

from rsyncfns import RSYNC, SCRATCHDIR, test_fail
from forkfns import (
    age_tree, assert_same_tree, random_tree, require_stock, run,
)

stock = require_stock()
fork = RSYNC.split()
DELETE_LINE = ('deleting ', '*deleting ')
SOURCE_LINE = re.compile(r'(\w+\.c)\(\d+\)')
VERSION_TAG = re.compile(r'\[(\w+)=\d+\.\d+\.\d+(?:-de\d+)?\]')

OPTION_SETS = [
    ['-a', '--delete'],
    ['-a', '--delete', '-v'],
    ['-a', '--delete-before', '-v'],
    ['-a', '--delete-during', '-v'],
    ['-a', '--delete-delay', '-v'],
    ['-a', '--delete-after', '-v'],
    ['-a', '--delete', '-n', '-v'],
    ['-a', '--delete', '--exclude=a', '-v'],
    ['-a', '--delete', '--delete-excluded', '--exclude=a', '-v'],
    ['-a', '--delete', '--filter=P b.txt', '-v'],
    ['-r', '--delete', '--existing', '--ignore-existing', '-v'],
    ['-a', '--delete', '--max-delete=3', '-v'],
    ['-ai', '--delete'],
    ['-a', '--delete', '--max-delete=1', '-v'],
    ['-a', '--delete', '--max-delete=10', '-v', '--stats'],
    ['-a', '--delete', '--max-delete=5', '--exclude=b.txt'],
    ['-a', '--delete', '--stats'],
]

# --delete-only against the stock options that mean the same.
STOCK_EQUIVALENT = ['-r', '--delete', '--existing', '--ignore-existing']
PAIRED = [
    (['--delete-only', '-v'], STOCK_EQUIVALENT + ['-v']),
    (['--delete-only', '-v', '--exclude=a'], STOCK_EQUIVALENT + ['-v', '--exclude=a']),
    (['--delete-only', '-n', '-v'], STOCK_EQUIVALENT + ['-n', '-v']),
    (['--delete-only', '--max-delete=2', '-v'], STOCK_EQUIVALENT + ['--max-delete=2', '-v']),
    (['--delete-only', '-i', '--delete-after'], STOCK_EQUIVALENT + ['-i', '--delete-after']),
]


def normalise(text: str, dst: str) -> list:
    """Output lines with the run-specific destination path and timings removed."""
    keep = []
    for line in text.replace(dst, 'DST').splitlines():
        if line.startswith(('sent ', 'total size is ')):
            continue
        # Traffic and timing differ: rsync-de's local server sends no
        # deletion names that the client will not print.
        if 'bytes' in line or 'time:' in line:
            continue
        keep.append(line)
    return keep


def diff(stock_lines: list, fork_lines: list) -> str:
    return '\n'.join(difflib.unified_diff(stock_lines, fork_lines, 'stock',
                                           'fork', lineterm='', n=1))


def one_case(seed: int, opts: list, stock_opts: list) -> None:
    rng = random.Random(seed)
    base = SCRATCHDIR / f'case{seed}'
    shutil.rmtree(base, ignore_errors=True)
    src = base / 'src'
    random_tree(src, rng)
    dst_tmpl = base / 'dst-template'
    random_tree(dst_tmpl, rng)
    age_tree(src)
    age_tree(dst_tmpl, 1_500_000_000)
    results = []
    for name, argv in (('stock', [stock] + stock_opts), ('fork', fork + opts)):
        # Each destination alone in a directory of its own: a symlink to
        # ".." in it must lead both runs to the same world (base/ holds
        # the other run's destination, seed 468125672).
        dst = base / name / 'dst'
        dst.parent.mkdir()
        if run(['cp', '-a', dst_tmpl, dst]).returncode:
            test_fail(f'cp -a {dst_tmpl} failed')
        p = run(argv + [f'{src}/', f'{dst}/'])
        results.append((name, dst, p))
    (_, sdst, sp), (_, fdst, fp) = results
    label = f'seed {seed} {" ".join(opts)}'
    if sp.returncode != fp.returncode:
        test_fail(f'{label}: exit {fp.returncode}, stock {sp.returncode}\n{fp.stderr}')
    assert_same_tree(sdst, fdst, label)
    so, fo = normalise(sp.stdout, str(sdst)), normalise(fp.stdout, str(fdst))
    # The generator prints deletions while the receiver prints transfers,
    # so only the relative order of lines from one process is fixed: the
    # deletion lines must come in the same order, and every line stock
    # prints must be printed.
    sdel = [line for line in so if line.startswith(DELETE_LINE)]
    fdel = [line for line in fo if line.startswith(DELETE_LINE)]
    if sdel != fdel:
        test_fail(f'{label}: deletion lines differ:\n' + diff(sdel, fdel))
    if sorted(so) != sorted(fo):
        test_fail(f'{label}: stdout differs:\n' + diff(sorted(so), sorted(fo)))
    se, fe = normalise(sp.stderr, str(sdst)), normalise(fp.stderr, str(fdst))
    # "rsync error: ... at main.c(1412) [generator=3.5.1]" names a source
    # line and the version, which the patches move.
    se = [SOURCE_LINE.sub(r'\1(N)', VERSION_TAG.sub(r'[\1]', line)) for line in se]
    fe = [SOURCE_LINE.sub(r'\1(N)', VERSION_TAG.sub(r'[\1]', line)) for line in fe]
    if se != fe:
        test_fail(f'{label}: stderr differs:\n' + diff(se, fe))
    shutil.rmtree(base)


# 468125672: a "b.txt -> .." symlink led the two runs to different worlds.
seeds = [1, 2, 3, 4, 5, 468125672]
extra = int(os.environ.get('RSYNC_DE_SEEDS', '0'))
seeds += [random.randrange(1 << 30) for _ in range(extra)]
for seed in seeds:
    for opts, stock_opts in [(o, o) for o in OPTION_SETS] + PAIRED:
        print(f'seed {seed}: {" ".join(opts)}')
        one_case(seed, opts, stock_opts)

#!/usr/bin/python3
"""Time this build's deletion against an earlier build's, side by side.

Usage: bench/against.py REV [--new REV2] [--fs ext4] [--cells wide,flat]
                        [--cache cold] [--rounds 9] [--max-rounds 25]
                        [--args ARGS]
                        [--json FILE] [--out FILE]

REV is any git revision.  Its tree (git archive, committed files only) is
built once under build/against/SHA/ with the README's ./configure && make,
and its ./rsync runs beside this checkout's, `--delete-only empty/ T/`
(with --args' words before empty/, as "-v"),
on the CPU-bound cells (bench/run.py's trees, fresh for every run, the
two builds alternated within a round and the order reversed every other
round, the first round dropped); --new REV2 puts REV2's build (made the
same way) in this checkout's place.  Each round gives one ratio, this
build's seconds over REV's.  A verdict needs the 95% interval of the median ratio
(binomial order statistics, no assumption on the spread) to settle it:

  within 3%   the interval lies inside 0.97-1.03
  slower      the interval lies above 1.00
  faster      the interval lies below 1.00
  undecided   none of these: more rounds are run, four at a time, up to
              --max-rounds; then it says so

`make bench-against REV=...` runs it with the defaults.  README.md, "Making
a change", asks every engine change to quote its verdict against the
commit before it.  Run it on an otherwise idle machine: both builds are
CPU-bound here.
"""

import argparse
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from delbench import common, devices  # noqa: E402  (trees, mounts, timing)
from delbench.cells import run_cell  # noqa: E402

TOP = common.TOP
DEFAULT_CELLS = {'wide': ['wide', '300', '1000'], 'flat': ['flat', '100000']}


def build_rev(rev):
    """The ./rsync of git revision REV, built (once) under build/against/."""
    sha = subprocess.run(['git', '-C', TOP, 'rev-parse', '--verify', '-q', rev + '^{commit}'],
                         capture_output=True, text=True).stdout.strip()
    if not sha:
        sys.exit(f'bench/against.py: {rev} is not a commit of {TOP}')
    tree = os.path.join(TOP, 'build', 'against', sha[:12])
    exe = os.path.join(tree, 'rsync')
    if os.access(exe, os.X_OK):
        return sha, exe
    common.log(f'building {rev} ({sha[:12]}) in {tree}')
    subprocess.run(['rm', '-rf', tree], check=True)
    os.makedirs(tree)
    archive = subprocess.Popen(['git', '-C', TOP, 'archive', sha], stdout=subprocess.PIPE)
    subprocess.run(['tar', '-x', '-C', tree], stdin=archive.stdout, check=True)
    if archive.wait():
        sys.exit(f'bench/against.py: git archive {sha} failed')
    with open(os.path.join(tree, 'build.log'), 'w') as logf:
        if subprocess.run(['sh', '-c', './configure -q && make -s'], cwd=tree,
                          stdout=logf, stderr=subprocess.STDOUT).returncode:
            sys.exit(f'bench/against.py: building {rev} failed; see {tree}/build.log')
    return sha, exe


def median_interval(xs, level=0.95):
    """(low, median, high): the median of xs and a distribution-free
    interval for it, the k-th smallest and k-th largest, with the largest
    k for which the binomial tail on each side is at most (1-level)/2.
    None for the bounds when xs is too short for the level."""
    s, n = sorted(xs), len(xs)
    med = common.median(s)
    k, tail = 0, 0.0
    while True:
        tail += math.comb(n, k) / 2 ** n
        if tail > (1 - level) / 2:
            break
        k += 1
    if k == 0:
        return None, med, None
    return s[k - 1], med, s[n - k]


def verdict(lo, hi, band=0.03):
    if lo is None:
        return 'undecided'
    if lo >= 1 - band and hi <= 1 + band:
        return f'within {band:.0%}'
    if lo > 1:
        return 'slower'
    if hi < 1:
        return 'faster'
    return 'undecided'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('rev', help='the earlier build: a git revision')
    ap.add_argument('--new', default=None, metavar='REV2',
                    help='time this revision\'s build in place of the checkout\'s ./rsync')
    ap.add_argument('--fs', default='ext4', help='ext4, xfs, btrfs or tmpfs (default ext4)')
    ap.add_argument('--cells', default='wide,flat',
                    help='cells, from: ' + ', '.join(
                        f'{c} ({" ".join(t)})' for c, t in DEFAULT_CELLS.items()))
    ap.add_argument('--cache', default='cold', help='cold or warm (default cold)')
    ap.add_argument('--rounds', type=int, default=9, help='first batch of counted rounds')
    ap.add_argument('--max-rounds', type=int, default=25)
    ap.add_argument('--tree', action='append', default=[], metavar='CELL=ARGS',
                    help='other mktree arguments for a cell, e.g. "wide=wide 200 500"')
    ap.add_argument('--args', default='', metavar='ARGS',
                    help='more rsync arguments for both builds, e.g. "-v" (output discarded)')
    ap.add_argument('--img-size', default='16G')
    ap.add_argument('--json', default=None, help='append the raw records (JSON lines) here')
    ap.add_argument('--out', default=None, help='also write the report here')
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit('bench/against.py: needs root (loop-mounted file systems, dropped caches)')
    cells = dict(DEFAULT_CELLS)
    for t in a.tree:
        name, args = t.split('=', 1)
        cells[name] = shlex.split(args)
    names = a.cells.split(',')
    for c in names:
        if c not in cells:
            sys.exit(f'bench/against.py: unknown cell {c}')
    out = common.reporter(a.out)
    subprocess.run(['make', '-s', '-C', common.BENCH, 'mktree'], check=True,
                   stdout=subprocess.DEVNULL)
    sha, old = build_rev(a.rev)
    if a.new:
        head, new = build_rev(a.new)
        head = head[:12]
        new_name = f'{a.new} ({head})'
    else:
        head = subprocess.run(['git', '-C', TOP, 'describe', '--always', '--dirty'],
                              capture_output=True, text=True).stdout.strip()
        new, new_name = os.path.join(TOP, 'rsync'), f'this build ({head})'
    old_name = f'{a.rev} ({sha[:12]})'
    extra = shlex.split(a.args)
    peers = [(new_name, [new, '--delete-only'] + extra + ['{empty}/', '{target}/']),
             (old_name, [old, '--delete-only'] + extra + ['{empty}/', '{target}/'])]
    out(f'# rsync-de against {a.rev}, {time.strftime("%Y-%m-%d %H:%M %Z")}')
    out()
    out(f'`--delete-only {a.args + " " if a.args else ""}empty/ T/`, {a.fs}, {a.cache} '
        f'cache, a fresh tree per run, the '
        f'builds alternated. Ratio: this build\'s seconds over {a.rev}\'s, one per round; '
        f'the interval is the 95% one of the median ratio.')
    out(f'Command: bench/against.py {" ".join(shlex.quote(x) for x in sys.argv[1:])}')
    out()
    out(f'| cell | rounds | {new_name} median s | {a.rev} median s | median ratio '
        f'| 95% interval | verdict |')
    out('| --- | --- | --- | --- | --- | --- | --- |')
    jsonf = open(a.json, 'a') if a.json else None
    m = devices.Mount(a.fs, '/tmp', a.img_size)
    try:
        work, empty = os.path.join(m.path, 'w'), os.path.join(m.path, 'empty')
        os.mkdir(work)
        os.mkdir(empty)
        vals = {'top': TOP, 'work': work, 'empty': empty}
        for c in names:
            times = {new_name: [], old_name: []}
            batch, verdict_now = a.rounds, 'undecided'
            while batch > 0:
                cell = run_cell(m, c, cells[c], a.cache, peers, vals, batch)
                if cell.failed:
                    sys.exit(f'bench/against.py: {c}: {cell.failed}')
                for n in times:
                    times[n] += cell.times[n]
                ratios = [x / y for x, y in zip(times[new_name], times[old_name])]
                lo, med, hi = median_interval(ratios)
                verdict_now = verdict(lo, hi)
                done = len(ratios)
                batch = 0 if verdict_now != 'undecided' else min(4, a.max_rounds - done)
            iv = f'{lo:.3f}-{hi:.3f}' if lo is not None else '-'
            out(f'| {c} ({" ".join(cells[c])}) | {len(ratios)} '
                f'| {common.median(times[new_name]):.3f} | {common.median(times[old_name]):.3f} '
                f'| {med:.3f} | {iv} | {verdict_now} |')
            if jsonf:
                jsonf.write(json.dumps({
                    'kind': 'against', 'date': time.strftime('%Y-%m-%d %H:%M'),
                    'fs': a.fs, 'cache': a.cache, 'cell': c, 'spec': cells[c],
                    'new': head, 'old': sha, 'times': times, 'ratios': ratios,
                    'interval': [lo, hi], 'verdict': verdict_now,
                    'mount': m.mount_line()}) + '\n')
                jsonf.flush()
        out()
        cpu = next((line.split(':', 1)[1].strip() for line in open('/proc/cpuinfo')
                    if line.startswith('model name')), platform.processor())
        out(f'CPU: {cpu}; cores: {os.cpu_count()}; kernel: {platform.release()}')
        out(f'mount: {m.mount_line()}')
    finally:
        m.close()


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt as e:
        common.run_cleanups()
        sys.exit(f'bench/against.py: interrupted ({e}); scratch mounts removed')

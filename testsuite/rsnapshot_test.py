#!/usr/bin/env python3
"""Debian's rsnapshot with this project's commands keeps what it keeps with
stock's.

rsnapshot runs the same rotation history twice, on identical sources:
once with cmd_rsync = ./rsync and cmd_rm = rsync-rm, once with cmd_rsync
= ./rsync-stock and cmd_rm = /bin/rm.  The history: alpha (retain 3) and
beta (retain 2) rotations, so that the oldest alpha and beta generations
are expired with cmd_rm; between runs the source gains, loses and renames
files, turns a file into a directory and back, and holds an excluded
file (--delete-excluded).  Both link_dest settings: 0, where rsnapshot
copies the newest generation with `cp -al` and rsync --delete updates
it, and 1, where rsync --link-dest builds each.  Compared after each
run: rsnapshot's exit code, and the snapshot root (every entry's type,
mode, size, link count, and which paths share an inode).

Skipped, saying why, only where rsnapshot is not installed (rsync-src/
deps.sh check installs it).
"""

import os
import shutil
import subprocess
from pathlib import Path

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from forkfns import TOP, age_tree, require_stock, run

RSNAPSHOT = shutil.which('rsnapshot')
if not RSNAPSHOT:
    test_skipped('rsnapshot is not installed (Debian: rsync-src/deps.sh check installs it)')
stock = require_stock()
fork = RSYNC.split()[0]
RSYNC_RM = os.environ.get('RSYNC_RM', str(TOP / 'rsync-rm'))
GNU_RM = shutil.which('rm')
# One source for both histories: --relative puts its path in the snapshots.
SRC = SCRATCHDIR / 'src'


def write_source(src: Path, step: int) -> None:
    """The source as it is before run STEP."""
    subprocess.run(['rm', '-rf', str(src)], check=True)
    for d in range(4):
        for f in range(5):
            p = src / f'd{d}' / f'f{f}'
            if (d + f + step) % 5 == 0:
                continue	# comes and goes between runs
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f'{d} {f} {step // 3}\n')
    # Renamed every run; a file one run, a directory the next.
    (src / f'moved{step}').write_text('moved\n')
    swap = src / 'swap'
    if step % 2:
        (swap / 'inside').mkdir(parents=True)
        (swap / 'inside' / 'x').write_text('x\n')
    else:
        swap.write_text('a file\n')
    (src / 'd0' / 'cache.tmp').write_text('excluded\n')
    os.chmod(src / 'd1', 0o750)
    age_tree(src, 1_600_000_000 + step)


def config(work: Path, link_dest: int, rsync: str, rm: str) -> Path:
    conf = work / 'rsnapshot.conf'
    lines = [
        ('config_version', '1.2'),
        ('snapshot_root', f'{work}/snapshots/'),
        ('cmd_cp', shutil.which('cp')),
        ('cmd_rm', rm),
        ('cmd_rsync', rsync),
        ('retain', 'alpha\t3'),
        ('retain', 'beta\t2'),
        ('verbose', '3'),
        ('loglevel', '3'),
        ('lockfile', f'{work}/rsnapshot.pid'),
        ('link_dest', str(link_dest)),
        ('rsync_short_args', '-a'),
        ('rsync_long_args', '--delete --numeric-ids --relative --delete-excluded'),
        ('exclude', '*.tmp'),
        ('backup', f'{SRC}/\tlocalhost/'),
    ]
    conf.write_text(''.join(f'{k}\t{v}\n' for k, v in lines))
    return conf


def snapshot_root(root: Path) -> list:
    """Every entry under root: path, type, mode, size, links, and the
    first path (in walk order) that shares its inode."""
    first, out = {}, []
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            key = (st.st_dev, st.st_ino)
            share = first.setdefault(key, rel)
            out.append((rel, st.st_mode, st.st_size if not os.path.isdir(p) else 0,
                        st.st_nlink, share))
    return out


HISTORY = ['alpha', 'alpha', 'alpha', 'beta', 'alpha', 'alpha', 'beta', 'alpha',
           'beta', 'alpha']
for link_dest in (0, 1):
    states = {}
    for who, rsync, rm in (('stock', stock, GNU_RM), ('fork', fork, RSYNC_RM)):
        work = SCRATCHDIR / f'{who}-{link_dest}'
        subprocess.run(['rm', '-rf', str(work)])
        work.mkdir()
        conf = config(work, link_dest, rsync, rm)
        write_source(SRC, 0)
        p = run([RSNAPSHOT, '-c', conf, 'configtest'])
        if p.returncode:
            test_fail(f'rsnapshot configtest: {p.stdout}{p.stderr}')
        seen, calls = [], []
        for step, level in enumerate(HISTORY):
            write_source(SRC, step)
            p = run([RSNAPSHOT, '-c', conf, level])
            seen.append((level, p.returncode, snapshot_root(work / 'snapshots')))
            if p.returncode not in (0, 2):
                test_fail(f'{who} link_dest={link_dest}, run {step} ({level}): exit '
                          f'{p.returncode}\n{p.stdout[-1500:]}{p.stderr[-1500:]}')
            calls.append(p.stdout)
        states[who] = seen
        # rsnapshot says each command it runs (verbose 3): the expiries
        # must have gone through cmd_rm.
        if not any(f'{rm} -rf ' in out for out in calls):
            test_fail(f'{who} link_dest={link_dest}: rsnapshot never ran {rm}:\n{calls[-1][-1500:]}')
    for step, ((lv, src, sroot), (_, frc, froot)) in enumerate(zip(states['stock'],
                                                                   states['fork'])):
        label = f'link_dest={link_dest}, run {step} ({lv})'
        if src != frc:
            test_fail(f'{label}: rsnapshot exit {frc}, with stock {src}')
        if sroot != froot:
            only_s = sorted(set(sroot) - set(froot))[:3]
            only_f = sorted(set(froot) - set(sroot))[:3]
            test_fail(f'{label}: snapshot roots differ: only stock {only_s}, only fork {only_f}')
    gens = sorted({e[0].split('/')[0] for e in states['fork'][-1][2]})
    print(f'link_dest={link_dest}: {len(HISTORY)} runs alike; generations left {gens}')
    if gens != ['alpha.0', 'alpha.1', 'alpha.2', 'beta.0', 'beta.1']:
        test_fail(f'link_dest={link_dest}: the history did not expire what it should: {gens}')

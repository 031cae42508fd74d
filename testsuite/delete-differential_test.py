#!/usr/bin/env python3
"""rsync-de deletes exactly what stock rsync deletes, and says it the same way.

The same random source and destination trees go through ./rsync-stock and
./rsync with the same options (or, for --delete-only, stock's
`-r --delete --existing --ignore-existing`); the trees left behind, every
line printed and the exit codes must match.  The trees hold files, directories,
symlinks, fifos, awkward names (newline, non-UTF-8, leading dash, long)
and type changes between source and destination.

Seeds: a fixed set in `make check`; RSYNC_DE_SEEDS=N runs N more random
ones (the failing seed is printed).  The first two seeds run every option
set again with rsync-de given --delete-schedule=global.

Shapes a random tree never makes, each built afresh for each run:
  * a deep chain under a filter: 30 levels of 255-byte names (7,680
    bytes) beside a plain tree, with an exclude rule: stock keeps what it
    cannot name ("filename overflows max-path len", exit 23) and so must
    rsync-de (it kept it with exit 0 and no word).  The deepest names
    stock can name are 250 bytes short of its limit: it also counts the
    destination's own path when it deletes (and fails with "File name
    too long" where rsync-de deletes), so the shape leaves room for the
    scratch directory's path;
  * that difference itself: a chain of 200-byte names under a
    destination 500 bytes deeper, where stock fails on the deepest names
    it can name and rsync-de deletes them, and nothing else differs;
  * an extraneous mount point (root only): with -x the same as stock;
    without it, the documented safer outcome: rsync-de keeps the mount
    point and what is in it, where stock empties it and fails to remove
    it, both exit 23, rsync-de says "cannot delete mount point", and
    nothing else differs;
  * an extraneous --backup-dir inside the destination: stock backs up
    into it before it reaches it, then backs that up again, and so must
    rsync-de (it could list it before those backups);
  * --backup-dir through a dangling symlink, the documented difference:
    both keep every file, stock silent with exit 0, rsync-de with one
    "make_backup(NAME) failed" a file and exit 23;
  * an unreadable directory as non-root (as nobody, a mode-000 directory
    of its own with files inside, under an extraneous directory, and an
    extraneous file in a later directory): stock's opendir error, "cannot
    delete non-empty directory" for it and its parent, "IO error
    encountered -- skipping file deletion" for the later directory, exit
    23, the same tree left (the 000 directory is not opened up).  rsync-de's
    dry run lists exactly what its real run deletes; stock's does not (it
    says "deleting" of the unreadable directory and its parent), so the
    dry run is compared with the real run, not with stock.
"""

import os
import random
import re
import shutil
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from forkfns import (
    DELETE_LINE, STOCK_EQUIVALENT, Mounts, age_tree, assert_same_tree,
    compare_same, diff, fd_listing, normalise, normalise_err, random_tree,
    require_stock, run, tree_listing,
)

stock = require_stock()
fork = RSYNC.split()

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

PAIRED = [
    (['--delete-only', '-v'], STOCK_EQUIVALENT + ['-v']),
    (['--delete-only', '-v', '--exclude=a'], STOCK_EQUIVALENT + ['-v', '--exclude=a']),
    (['--delete-only', '-n', '-v'], STOCK_EQUIVALENT + ['-n', '-v']),
    (['--delete-only', '--max-delete=2', '-v'], STOCK_EQUIVALENT + ['--max-delete=2', '-v']),
    (['--delete-only', '-i', '--delete-after'], STOCK_EQUIVALENT + ['-i', '--delete-after']),
]


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
    se, fe = normalise_err(sp.stderr, str(sdst)), normalise_err(fp.stderr, str(fdst))
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
# The global schedule forced on (the engine's own choice takes it only on
# slow disks): the runs it serves (no -v, filters, limit or dry run) and
# the ones that must keep the canonical order alike.
for seed in seeds[:2]:
    for opts, stock_opts in [(o, o) for o in OPTION_SETS] + PAIRED:
        opts = opts + ['--delete-schedule=global']
        print(f'seed {seed}: {" ".join(opts)}')
        one_case(seed, opts, stock_opts)


# ---- Shapes: a deep chain under a filter, an extraneous mount point --------

def deep_chain_tree(dst, name_len=255) -> None:
    """a/N/N/... (30 levels of NAME_LEN-byte names, 20 files each) and b/."""
    for i in range(5):
        (dst / 'b' / f's{i}').mkdir(parents=True)
        for j in range(5):
            (dst / 'b' / f's{i}' / f'g{j}').write_text('g\n')
    (dst / 'a').mkdir()
    fd = os.open(dst / 'a', os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(30):
        os.mkdir('n' * name_len, dir_fd=fd)
        for k in range(20):
            os.close(os.open(f'f{k}', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        nfd = os.open('n' * name_len, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(fd)


def shape_runs(label, build, opts, stock_opts, mounts=None, base=None) -> tuple:
    """Build the shape into a fresh destination for each run (under BASE)
    and run both; returns (stock, fork) as (dst, completed process) pairs."""
    base = base or SCRATCHDIR / 'shape'
    subprocess.run(['rm', '-rf', str(base)], check=True)
    src = base / 'src'
    src.mkdir(parents=True)
    age_tree(src)
    out = []
    for name, argv in (('stock', [stock] + stock_opts), ('fork', fork + opts)):
        dst = base / name / 'dst'
        dst.mkdir(parents=True)
        build(dst)
        if mounts:
            mounts.mount(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs'],
                         dst / 'a' / 'mnt')
            (dst / 'a' / 'mnt' / 'inside').write_text('on tmpfs\n')
        # Only the root is compared by time (-a); see age_tree().
        os.utime(dst, (1_500_000_000, 1_500_000_000))
        out.append((dst, run(argv + [f'{src}/', f'{dst}/'], timeout=120)))
    print(f'{label}: exit {out[1][1].returncode}, stock {out[0][1].returncode}')
    return out[0], out[1]


def too_long(err, call) -> list:
    """ERR's lines that say CALL (unlink, rmdir) failed for the length."""
    return [x for x in err.splitlines()
            if f'delete_file: {call}(' in x and 'failed: File name too long' in x]


for opts, stock_opts in (
        (['-a', '--delete', '--exclude=*.tmp', '-v'],) * 2,
        (['--delete-only', '-v', '--exclude=zzz'], STOCK_EQUIVALENT + ['-v', '--exclude=zzz'])):
    label = 'deep chain under a filter: ' + ' '.join(opts)
    sres, fres = shape_runs(label, deep_chain_tree, opts, stock_opts)
    if 'filename overflows max-path len' not in fres[1].stderr:
        test_fail(f'{label}: no "filename overflows max-path len" in {fres[1].stderr[-300:]}')
    compare_same(label, sres, fres)

# The same chain of 200-byte names under a destination whose own path is
# 500 bytes longer: the deepest names rsync can name (4,024 bytes from the
# destination) are then more than 4,096 bytes from /.  Stock counts the
# destination's path when it unlinks them and fails, "File name too long";
# rsync-de, working from directory fds, deletes them (README).  All else
# is as stock leaves it, down to the same failures of rsync's own rmdir
# for the directories left non-empty.
label = 'deep chain under a long destination path'
opts = ['-a', '--delete', '--exclude=*.tmp', '-v']
(sdst, sp), (fdst, fp) = shape_runs(
    label, lambda d: deep_chain_tree(d, 200), opts, opts,
    base=SCRATCHDIR / 'long' / ('p' * 250) / ('p' * 250))
if (sp.returncode, fp.returncode) != (23, 23):
    test_fail(f'{label}: exit {fp.returncode}, stock {sp.returncode}')
s_unlink, f_unlink = too_long(sp.stderr, 'unlink'), too_long(fp.stderr, 'unlink')
if not s_unlink:
    test_fail(f'{label}: stock no longer fails here; make this shape '
              f'a compare_same():\n{sp.stderr[-300:]}')
if f_unlink:
    test_fail(f'{label}: {f_unlink[0][-200:]}')
# The directories left non-empty go through rsync's own rmdir in both.
if too_long(fp.stderr, 'rmdir') != too_long(sp.stderr, 'rmdir'):
    test_fail(f'{label}: the rmdir failures differ')
sl, fl = set(fd_listing(sdst)), set(fd_listing(fdst))
kept = sl - fl
if fl - sl or len(kept) != len(s_unlink) or any(t != 'f' for _, t, _ in kept):
    test_fail(f'{label}: stock failed on {len(s_unlink)}, only stock {len(kept)} '
              f'{sorted(kept)[:1]}, only fork {sorted(fl - sl)[:1]}')


def mount_tree(dst) -> None:
    for d in ('a/mnt', 'b'):
        (dst / d).mkdir(parents=True)
    for f in ('a/f', 'b/g', 'top'):
        (dst / f).write_text(f'{f}\n')


if os.geteuid() == 0:
    mounts = Mounts()
    for opts, stock_opts in (
            (['-a', '--delete', '-x', '-v'],) * 2,
            (['--delete-only', '-x', '-v'], STOCK_EQUIVALENT + ['-x', '-v'])):
        label = 'extraneous mount point: ' + ' '.join(opts)
        try:
            sres, fres = shape_runs(label, mount_tree, opts, stock_opts, mounts)
            compare_same(label, sres, fres)
        finally:
            mounts.undo()
    for opts, stock_opts in (
            (['-a', '--delete', '-v'],) * 2,
            (['--delete-only', '-v'], STOCK_EQUIVALENT + ['-v'])):
        # The documented safer outcome (rsync.1.md, --delete).
        label = 'extraneous mount point: ' + ' '.join(opts)
        try:
            (sdst, sp), (fdst, fp) = shape_runs(label, mount_tree, opts, stock_opts, mounts)
            in_mount = ('a/mnt/',)
            if (sp.returncode, fp.returncode) != (23, 23):
                test_fail(f'{label}: exit {fp.returncode}, stock {sp.returncode}, want 23')
            if 'cannot delete mount point: a/mnt' not in fp.stderr.splitlines():
                test_fail(f'{label}: no "cannot delete mount point: a/mnt" in {fp.stderr}')
            sl, fl = fd_listing(sdst), fd_listing(fdst)
            if sorted(set(fl) - set(sl)) != [('a/mnt/inside', 'f', 9)] or set(sl) - set(fl):
                test_fail(f'{label}: want only a/mnt/inside more than stock, got '
                          f'{sorted(set(fl) ^ set(sl))}')
            sdel = [x for x in normalise(sp.stdout, str(sdst))
                    if x.startswith(DELETE_LINE) and not x.split(' ', 1)[1].startswith(in_mount)]
            fdel = [x for x in normalise(fp.stdout, str(fdst)) if x.startswith(DELETE_LINE)]
            if sdel != fdel:
                test_fail(f'{label}: deletion lines differ:\n' + diff(sdel, fdel))
        finally:
            mounts.undo()


# ---- --backup-dir inside the destination, itself extraneous ---------------
# Stock deletes z/ first (backed up into bk/z), then reaches bk/, lists it
# with bk/z in it and backs all of it up again into bk/bk/...; rsync-de
# listed bk/ in the same engine call as z/, sooner or later than the
# backup as its workers went (bk/z left in place).  Only a backup
# directory at the top is defined: one deeper (x/bk, x extraneous) is
# backed up into itself, x/bk/x/bk/..., until stock's paths overflow.
def backup_tree(dst) -> None:
    for f in ('bk/old/deep/p', 'bk/old/o', 'a/fa', 'z/fz', 'top'):
        (dst / f).parent.mkdir(parents=True, exist_ok=True)
        (dst / f).write_text(f'{f}\n')


for mode in ('--delete', '--delete-delay', '--delete-after'):
    opts = ['-a', mode, '-b', '--backup-dir=bk', '-v']
    label = 'extraneous --backup-dir inside the destination: ' + ' '.join(opts)
    compare_same(label, *shape_runs(label, backup_tree, opts, opts))


# ---- --backup-dir through a dangling symlink: the documented difference ---
# No backup can be made, so both keep every file (dl too).  Stock's delete_item()
# takes make_backup()'s ENOENT for a file that vanished: no word, exit 0.
# rsync-de says "delete_file: make_backup(NAME) failed" for each file it
# keeps and exits 23 (rsync.1.md, --delete); all else is stock's.
def dangling_backup_tree(dst) -> None:
    for f in ('a/f1', 'a/f2', 'top'):
        (dst / f).parent.mkdir(parents=True, exist_ok=True)
        (dst / f).write_text(f'{f}\n')
    (dst / 'dl').symlink_to('/nonexistent-rsync-de')


label = 'backup-dir through a dangling symlink'
opts = ['-r', '--delete', '-b', '--backup-dir=dl/bk', '-v']
(sdst, sp), (fdst, fp) = shape_runs(label, dangling_backup_tree, opts, opts)
if (sp.returncode, fp.returncode) != (0, 23):
    test_fail(f'{label}: exit {fp.returncode}, stock {sp.returncode}, want 23 and 0')
if fd_listing(sdst) != fd_listing(fdst) or ('top', 'f', 4) not in fd_listing(fdst):
    test_fail(f'{label}: trees differ or the files went: {fd_listing(fdst)}')
if normalise(sp.stdout, str(sdst)) != normalise(fp.stdout, str(fdst)):
    test_fail(f'{label}: stdout differs:\n{fp.stdout}')
failed = sorted(re.findall(r'make_backup\((.*)\) failed: No such file', fp.stderr))
if failed != ['a/f1', 'a/f2', 'dl', 'top'] or normalise_err(sp.stderr, str(sdst)):
    test_fail(f'{label}: want one make_backup line per file kept, and none from '
              f'stock: {fp.stderr}\nstock: {sp.stderr}')


# ---- An unreadable directory as non-root -----------------------------------
NOBODY = 65534


def unreadable_tree(root) -> None:
    """src has a/ and y/; dst has a/b (mode 000, with files and a
    subdirectory), a/f1 and a/c/k beside it, and y/extra, all owned by
    the user who runs rsync."""
    shutil.rmtree(root, ignore_errors=True)
    for d in ('src/a', 'src/y', 'dst/a/b/sub', 'dst/a/c', 'dst/y'):
        (root / d).mkdir(parents=True)
    for f in ('dst/a/f1', 'dst/a/b/x', 'dst/a/b/sub/s', 'dst/a/c/k', 'dst/y/extra',
              'dst/top'):
        (root / f).write_text('x\n')
    if os.geteuid() == 0:
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames + ['.']:
                os.lchown(os.path.join(dirpath, n), NOBODY, NOBODY)
    os.chmod(root / 'dst' / 'a' / 'b', 0)


def as_user(argv) -> list:
    if os.geteuid() != 0:
        return argv
    return ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}', '--clear-groups'] + argv


def outcome(argv, root) -> tuple:
    """Run argv on root/src/ root/dst/; the exit code, the normalised
    stdout and stderr lines, and the tree left (readable again)."""
    p = run(as_user(argv + [f'{root}/src/', f'{root}/dst/']))
    mode = os.stat(root / 'dst' / 'a' / 'b').st_mode & 0o7777 \
        if (root / 'dst' / 'a' / 'b').exists() else None
    if (root / 'dst' / 'a' / 'b').exists():
        os.chmod(root / 'dst' / 'a' / 'b', 0o700)
    out = [ln for ln in normalise(p.stdout, str(root / 'dst')) if ln != 'sending incremental file list']
    err = normalise_err(p.stderr, str(root / 'dst'))
    return p.returncode, out, err, tree_listing(root / 'dst'), mode


if os.geteuid() == 0 and not shutil.which('setpriv'):
    test_skipped('setpriv (util-linux) is not installed')
os.chmod(SCRATCHDIR, 0o755)
UNREADABLE_SETS = [
    (['-r', '--delete', '-v'], ['-r', '--delete', '-v']),
    (['-r', '--delete-after', '-v'], ['-r', '--delete-after', '-v']),
    (['--delete-only', '-v'], STOCK_EQUIVALENT + ['-v']),
]
for opts, stock_opts in UNREADABLE_SETS:
    label = f'unreadable dir as non-root: {" ".join(opts)}'
    print(label)
    results = {}
    for name, argv in (('stock', [stock] + stock_opts), ('fork', fork + opts),
                       ('fork-dry', fork + opts + ['-n'])):
        root = SCRATCHDIR / f'unreadable-{name}'
        unreadable_tree(root)
        results[name] = outcome(argv, root)
    (src, sout, serr, stree, smode) = results['stock']
    (frc, fout, ferr, ftree, fmode) = results['fork']
    (drc, dout, derr, dtree, _) = results['fork-dry']
    if frc != src or frc != 23:
        test_fail(f'{label}: exit {frc}, stock {src}: {ferr}')
    if fout != sout:
        test_fail(f'{label}: stdout differs:\n' + diff(sout, fout))
    if ferr != serr:
        test_fail(f'{label}: stderr differs:\n' + diff(serr, ferr))
    if ftree != stree:
        test_fail(f'{label}: trees differ: stock {stree}, fork {ftree}')
    if fmode != 0:
        test_fail(f'{label}: the unreadable directory was opened up (mode {fmode:o})')
    if not any('IO error encountered -- skipping file deletion' in ln for ln in fout):
        test_fail(f'{label}: no "skipping file deletion": {fout}')
    # The dry run: the same lines as the real run, and nothing deleted.
    if (drc, dout, derr) != (frc, fout, ferr):
        test_fail(f'{label}: the dry run differs from the real run (exit {drc}, {frc}):\n'
                  + diff(fout + ferr, dout + derr))
    unreadable_tree(SCRATCHDIR / 'unreadable-fresh')
    os.chmod(SCRATCHDIR / 'unreadable-fresh' / 'dst' / 'a' / 'b', 0o700)
    if dtree != tree_listing(SCRATCHDIR / 'unreadable-fresh' / 'dst'):
        test_fail(f'{label}: the dry run changed the tree')
    for name in ('stock', 'fork', 'fork-dry', 'fresh'):
        subprocess.run(['rm', '-rf', str(SCRATCHDIR / f'unreadable-{name}')])

#!/usr/bin/env python3
"""Directories that cannot be read, as a user who is not root: rsync-de
leaves what stock leaves and says what stock says.

Each case runs `--delete-only -v empty/ dst/` (stock: its equivalent,
`-r --delete --existing --ignore-existing`) and `-a --delete -v src/
dst/` through ./rsync-stock and ./rsync, as nobody when run as root
(setpriv; skipped without it), else as the user running it, on
identical destinations owned by that user.  The exit codes, the trees
left (with their modes), the deletion lines in order, and every other
line of stdout and of stderr (modulo ordering) must match.

  * an empty extraneous directory of mode 000: stock's opendir fails
    ("opendir ... failed: Permission denied (13)"), its rmdir works:
    "deleting inacc/", exit 23;
  * an extraneous directory x holding an empty mode-000 directory x/s:
    the same for x/s, then x goes too (rsync-de kept x: "cannot delete
    non-empty directory: x", as the engine had marked it non-empty when
    it could not open x/s);
  * a directory of mode 0300 (writable and searchable, not readable)
    holding an extraneous file: with --delete-only it is extraneous
    itself and stays with its file ("cannot delete non-empty
    directory"), with -a it is in src and stock empties it.
"""

import os
import shutil
import stat
import subprocess

from rsyncfns import RSYNC, SCRATCHDIR, test_fail, test_skipped
from forkfns import (
    DELETE_LINE, STOCK_EQUIVALENT, diff, normalise, normalise_err,
    require_stock, run,
)

stock = require_stock()
fork = RSYNC.split()
NOBODY = 65534

if os.geteuid() == 0 and not shutil.which('setpriv'):
    test_skipped('setpriv (util-linux) is not installed')


def as_user(argv) -> list:
    if os.geteuid() != 0:
        return argv
    return ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}',
            '--clear-groups'] + argv


# name: (what dst holds, each a path and its mode (None: a file), and
# what src holds for -a --delete)
CASES = {
    'empty-000': ([('inacc', 0o000)], []),
    'empty-000-inside': ([('x', 0o755), ('x/s', 0o000)], []),
    'unreadable-parent': ([('sub', 0o755), ('sub/f', None), ('sub', 0o300)],
                          ['sub']),
}

RUNS = [
    ('--delete-only', 'empty', ['--delete-only', '-v'], STOCK_EQUIVALENT + ['-v']),
    ('-a --delete', 'src', ['-a', '--delete', '-v'], ['-a', '--delete', '-v']),
]


def build(root, dst_spec, src_dirs) -> None:
    """root/{empty,src,dst}: dst as DST_SPEC says (in order, a path made
    or re-moded each), src with SRC_DIRS; all owned by the user who runs
    rsync."""
    if root.exists():
        subprocess.run(['chmod', '-R', 'u+rwx', str(root)])
        shutil.rmtree(root)
    for d in ['empty', 'src', 'dst'] + [f'src/{s}' for s in src_dirs]:
        (root / d).mkdir(parents=True)
    for path, mode in dst_spec:
        p = root / 'dst' / path
        if mode is None:
            p.write_text('x\n')
        elif not p.exists():
            p.mkdir()
    if os.geteuid() == 0:
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames + ['.']:
                os.lchown(os.path.join(dirpath, n), NOBODY, NOBODY)
    # Each directory's last mode, the deepest first: a user who is not
    # root cannot reach inside one made unsearchable.
    last = {path: mode for path, mode in dst_spec if mode is not None}
    for path in sorted(last, key=lambda p: -p.count('/')):
        os.chmod(root / 'dst' / path, last[path])


def listing(root) -> list:
    """(path, type, mode) of everything below root, each directory made
    readable (u+rwx) once its own mode is read."""
    out, todo = [], [root]
    while todo:
        d = todo.pop()
        for e in os.scandir(d):
            st = os.lstat(e.path)
            rel = os.path.relpath(e.path, root)
            if stat.S_ISDIR(st.st_mode):
                out.append((rel, 'd', oct(st.st_mode & 0o7777)))
                os.chmod(e.path, 0o700)
                todo.append(e.path)
            else:
                out.append((rel, 'f', oct(st.st_mode & 0o7777)))
    return sorted(out)


def outcome(argv, root, source) -> tuple:
    os.chmod(root / 'dst', 0o755)
    p = run(as_user(argv + [f'{root}/{source}/', f'{root}/dst/']))
    dst = str(root / 'dst')
    out = [ln for ln in normalise(p.stdout, dst)
           if ln != 'sending incremental file list']
    return p.returncode, out, normalise_err(p.stderr, dst), listing(root / 'dst')


os.chmod(SCRATCHDIR, 0o755)
for case, (dst_spec, src_dirs) in CASES.items():
    for run_name, source, opts, stock_opts in RUNS:
        label = f'{case}, {run_name}'
        print(label)
        res = {}
        for who, argv in (('stock', [stock] + stock_opts), ('fork', fork + opts)):
            root = SCRATCHDIR / f'unreadable-{who}'
            build(root, dst_spec, src_dirs)
            res[who] = outcome(argv, root, source)
        (src, sout, serr, stree), (frc, fout, ferr, ftree) = res['stock'], res['fork']
        if frc != src:
            test_fail(f'{label}: exit {frc}, stock {src}:\n' + '\n'.join(ferr))
        if ftree != stree:
            test_fail(f'{label}: trees differ: stock {stree}, fork {ftree}')
        sdel = [ln for ln in sout if ln.startswith(DELETE_LINE)]
        fdel = [ln for ln in fout if ln.startswith(DELETE_LINE)]
        if fdel != sdel:
            test_fail(f'{label}: deletion lines differ:\n' + diff(sdel, fdel))
        if sorted(fout) != sorted(sout):
            test_fail(f'{label}: stdout differs:\n' + diff(sorted(sout), sorted(fout)))
        if sorted(ferr) != sorted(serr):
            test_fail(f'{label}: stderr differs:\n' + diff(sorted(serr), sorted(ferr)))
for who in ('stock', 'fork'):
    root = SCRATCHDIR / f'unreadable-{who}'
    subprocess.run(['chmod', '-R', 'u+rwx', str(root)])
    shutil.rmtree(root, ignore_errors=True)

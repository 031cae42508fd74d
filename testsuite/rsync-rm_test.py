#!/usr/bin/env python3
"""rsync-rm does what GNU rm does, and says it the same way.

The same operations run on identical copies with /bin/rm and with
rsync-rm; the exit codes, the trees left and the messages must match (the
program's name aside; -v's lines and the "cannot remove" lines as sets: the engine
removes in parallel, and rm's order of two failures in one directory is
the order readdir gives, which on ext4 is a hash of the names seeded per
file system).  Cases:
  * a nested tree with files, a symlink to a directory outside (which
    stays intact), a dangling symlink, a fifo and a socket: -rf and -rv;
  * a directory without -r; an operand that does not exist, with and
    without -f; no operand, with and without -f; several operands, one
    missing; '.', '..' and 'a/..'; '/' with -r; an unknown option;
  * a read-only directory and an unreadable one, as root and as nobody;
  * a hard-linked `cp -al` generation: the other generation is intact
    and its link counts fall to 1;
  * --one-file-system across a tmpfs mount (root): kept, "skipping ...,
    since it's on a different device", exit 1, as rm;
  * a file and a fifo named with a trailing slash ('f/'): kept, "Not a
    directory", exit 1 (0 with -f);
  * -d, -i, -I, --interactive[=WHEN] and write-protected entries with
    ---presume-input-tty (as nobody), answered yes and no: the same
    prompts (as sets: the orders of two siblings differ) and trees;
  * -v of a name with a newline, quoted; option values rm rejects;
    --help to a full disk fails.
The documented differences (rsync-rm.1), pinned:
  * a bind mount of the same file system: GNU rm crosses it even with
    --one-file-system and empties its source; rsync-rm keeps it, with
    or without the option ("since it's a mount point", exit 1);
  * 'link/', a symlink to a directory with a trailing slash: GNU rm 9.1
    empties the directory it points to and exits 0; rsync-rm refuses,
    removes nothing, exit 1;
And --polite and RSYNC_RM_POLITE=1 remove the tree as -rf does.
"""

import os
import socket
import subprocess
from pathlib import Path

from rsyncfns import SCRATCHDIR, test_fail
from forkfns import TOP, Mounts, fd_listing, run

RSYNC_RM = os.environ.get('RSYNC_RM', str(TOP / 'rsync-rm'))
GNU_RM = 'rm'	# by name, as rm's messages name argv[0]
NOBODY = 65534
if not os.access(RSYNC_RM, os.X_OK):
    test_fail(f'no rsync-rm at {RSYNC_RM} (make)')
os.chmod(SCRATCHDIR, 0o755)
outside = SCRATCHDIR / 'outside'
(outside / 'keep').mkdir(parents=True)
(outside / 'keep' / 'k').write_text('k\n')
OUTSIDE = fd_listing(outside)


def tree(root: Path, owner=None) -> None:
    """root/T: files, a subtree, a symlink out, a dangling one, a fifo, a
    socket; root/U: a second operand."""
    for d in ('T/a/b/c', 'T/d', 'U/e'):
        (root / d).mkdir(parents=True)
    for f in ('T/f', 'T/a/g', 'T/a/b/h', 'T/a/b/c/i', 'T/d/j', 'U/e/k', 'U/l'):
        (root / f).write_text(f'{f}\n')
    (root / 'T' / 'out').symlink_to(outside / 'keep')
    (root / 'T' / 'a' / 'dangling').symlink_to('/nonexistent-rsync-rm')
    os.mkfifo(root / 'T' / 'a' / 'fifo')
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(root / 'T' / 'd' / 'sock'))
    s.close()
    (root / 'dirlink').symlink_to('T/a')
    if owner is not None:
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames + ['.']:
                os.lchown(os.path.join(dirpath, n), owner, owner)


def norm(text: str, root: Path) -> list:
    """Lines with the program's name (argv[0], as rm has it) and the
    scratch path made alike; prompts, which end without a newline, one
    a line."""
    text = text.replace('? ', '?\n').replace(str(root), 'ROOT')
    return [line.replace(RSYNC_RM, 'rm') for line in text.splitlines()]


def both(label, args, build=tree, as_nobody=False, sets=False, setup=None,
         answers=None):
    """Run rm ARGS and rsync-rm ARGS (names relative to a fresh copy's
    root) and return ((rc, out, err, listing) for rm, the same for
    rsync-rm)."""
    res = []
    for prog in (GNU_RM, RSYNC_RM):
        root = SCRATCHDIR / ('gnu' if prog == GNU_RM else 'de')
        subprocess.run(['rm', '-rf', str(root)])
        root.mkdir()
        build(root, NOBODY if as_nobody else None)
        if as_nobody:
            os.chown(root, NOBODY, NOBODY)
        if setup:
            setup(root)
        argv = [prog] + args
        if as_nobody:
            argv = ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}',
                    '--clear-groups'] + argv
        p = run(argv, cwd=root, input=answers)
        # Each directory readable again before the walk lists it: a user
        # who is not root cannot list one left at mode 000.
        os.chmod(root, 0o755)
        for d, dirs, _ in os.walk(root):
            for n in dirs:
                if not os.path.islink(os.path.join(d, n)):
                    os.chmod(os.path.join(d, n), 0o755)
        out, err = norm(p.stdout, root), norm(p.stderr, root)
        err = [x for x in err if not x.startswith('rm: cannot remove ')] + \
            sorted(x for x in err if x.startswith('rm: cannot remove '))
        if sets:
            out, err = sorted(out), sorted(err)
        res.append((p.returncode, out, err, fd_listing(root)))
    if fd_listing(outside) != OUTSIDE:
        test_fail(f'{label}: the directory outside changed: {fd_listing(outside)}')
    print(f'{label}: exit {res[1][0]}, rm {res[0][0]}')
    return res


def same(label, args, **kw):
    g, d = both(label, args, **kw)
    if g != d:
        test_fail(f'{label}: rsync-rm {args} differs from rm:\n  rm:       {g}\n'
                  f'  rsync-rm: {d}')
    return g


# ---- What rm does, and rsync-rm the same -----------------------------------
same('tree -rf', ['-rf', 'T'])
same('tree -rv', ['-rv', 'T'], sets=True)
same('tree -r, two operands', ['-r', 'T', 'U'])
same('several operands, one missing', ['-r', 'T', 'nope', 'U'])
same('several operands, one missing, -f', ['-rf', 'T', 'nope', 'U'])
same('a directory without -r', ['T'])
same('a file and a symlink', ['-v', 'T/f', 'T/out', 'dirlink'])
same('missing', ['nope'])
same('missing, -f', ['-f', 'nope'])
same('no operand', [])
same('no operand, -f', ['-f'])
same("'.'", ['-rf', '.'])
same("'..'", ['-rf', '..'])
same("'T/a/..'", ['-rf', 'T/a/..'])
same("'/'", ['-rf', '/'])
same('an unknown option', ['-z', 'T'])
same('an unknown long option', ['--bogus', 'T'])


def read_only(root: Path) -> None:
    os.chmod(root / 'T' / 'a' / 'b', 0o555)


def unreadable(root: Path) -> None:
    os.chmod(root / 'T' / 'a' / 'b', 0o000)


me = 'root' if os.geteuid() == 0 else 'a user'
for who, nobody in ((me, False), ('nobody', True)):
    if nobody and os.geteuid() != 0:
        continue
    same(f'a read-only directory as {who}', ['-rf', 'T'], as_nobody=nobody, setup=read_only)
    same(f'an unreadable directory as {who}', ['-rf', 'T'], as_nobody=nobody, setup=unreadable)


# ---- A cp -al generation ----------------------------------------------------
def snapshots(root: Path, owner=None) -> None:
    tree(root, owner)
    subprocess.run(['rm', '-rf', str(root / 'U'), str(root / 'dirlink')], check=True)
    subprocess.run(['cp', '-al', str(root / 'T'), str(root / 'T.1')], check=True)


g = same('a cp -al generation', ['-rf', 'T.1'], build=snapshots)
left = SCRATCHDIR / 'de' / 'T'
for dirpath, _, filenames in os.walk(left):
    for n in filenames:
        st = os.lstat(os.path.join(dirpath, n))
        if st.st_nlink != 1:
            test_fail(f'a cp -al generation: {dirpath}/{n} has {st.st_nlink} links left')

# ---- Polite: the option and the environment variable --------------------------
for how, extra, env in (('--polite', ['--polite'], {}),
                        ('RSYNC_RM_POLITE=1', [], {'RSYNC_RM_POLITE': '1'})):
    root = SCRATCHDIR / 'polite'
    subprocess.run(['rm', '-rf', str(root)])
    root.mkdir()
    tree(root)
    p = run([RSYNC_RM, '-rf'] + extra + ['T'], cwd=root, env=dict(os.environ, **env))
    if p.returncode or (root / 'T').exists() or p.stdout or p.stderr:
        test_fail(f'{how}: exit {p.returncode}, T left: {(root / "T").exists()}, '
                  f'{p.stdout}{p.stderr}')
    print(f'{how}: exit 0, T gone')

# ---- The documented differences ----------------------------------------------
g, d = both("'dirlink/': a symlink to a directory, with a slash", ['-rf', 'dirlink/'])
fresh = SCRATCHDIR / 'fresh'
subprocess.run(['rm', '-rf', str(fresh)])
fresh.mkdir()
tree(fresh)
if d[0] != 1 or d[3] != fd_listing(fresh):
    test_fail(f"'dirlink/': rsync-rm must refuse and remove nothing: {d}")
if not any('dirlink/' in line and 'symlink' in line for line in d[2]):
    test_fail(f"'dirlink/': no word of the symlink: {d[2]}")
if g[3] == fd_listing(fresh):
    test_fail("'dirlink/': GNU rm no longer empties the directory: re-think the pin")


# ---- rm's interface: -d, prompts, names, option values -------------------------
same("a file with a trailing slash", ['T/f/'])
same("a file with a trailing slash, -rf", ['-rf', 'T/f/'])
same("a fifo with a trailing slash, -f", ['-f', 'T/a/fifo/'])
same("a path through a file, -f", ['-f', 'T/f/x'])
same('-d, an empty directory and a file', ['-dv', 'T/a/b/c', 'T/f'], setup=lambda r: (r / 'T/a/b/c/i').unlink())
same('-d, a directory with entries', ['-d', 'T/a'])
YES, NO = 'y\n' * 40, 'n\n' * 40
same('-ri, yes to all', ['-ri', 'T'], answers=YES, sets=True)
same('-ri, no to all', ['-ri', 'T'], answers=NO, sets=True)
same('-I, four operands, no', ['-I', 'T/f', 'T/a/g', 'T/d/j', 'U/l'], answers=NO)
same('-I, recursive, yes', ['-I', '-r', 'T', 'U'], answers=YES)
same('--interactive=never', ['--interactive=never', '-r', 'T'])
same('--interactive, no WHEN', ['--interactive', 'T/f', 'U/l'], answers='n\ny\n')
same('--interactive=bogus', ['--interactive=bogus', 'T'])
same('--preserve-root=foo', ['--preserve-root=foo', '-r', 'T'])


def write_protected(root: Path) -> None:
    os.chmod(root / 'T' / 'f', 0o444)
    os.chmod(root / 'T' / 'a' / 'b', 0o555)


def unread_empty(root: Path) -> None:
    (root / 'T' / 'a' / 'b' / 'c' / 'i').unlink()
    os.chmod(root / 'T' / 'a' / 'b' / 'c', 0)


if os.geteuid() == 0:
    same('-ri, an empty unreadable directory, as nobody', ['-ri', 'T'], as_nobody=True,
         setup=unread_empty, answers=YES, sets=True)
    same('-rf, an empty unreadable directory, as nobody', ['-rf', 'T'], as_nobody=True,
         setup=unread_empty)
    for ans in ('yes', 'no'):
        same(f'write-protected entries, a terminal, {ans}', ['---presume-input-tty', '-r', 'T'],
             as_nobody=True, setup=write_protected, answers=YES if ans == 'yes' else NO,
             sets=True)


def newline_name(root: Path, owner=None) -> None:
    tree(root, owner)
    (root / 'T' / 'new\nline').write_text('n\n')


same('-v of a name with a newline', ['-rv', 'T'], build=newline_name, sets=True)
for prog in (GNU_RM, RSYNC_RM):
    with open('/dev/full', 'w') as full:
        p = subprocess.run([prog, '--help'], stdout=full, stderr=subprocess.PIPE)
    if p.returncode != 1:
        test_fail(f'{prog} --help > /dev/full: exit {p.returncode}, want 1')
print('--help > /dev/full: exit 1, as rm')

# ---- Mounts (root) -------------------------------------------------------------
if os.geteuid() == 0:
    mounts = Mounts()

    def with_tmpfs(root: Path) -> None:
        mounts.mount(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs'], root / 'T' / 'd')
        (root / 'T' / 'd' / 'on-tmpfs').write_text('t\n')

    g = same('--one-file-system across a tmpfs', ['-rf', '--one-file-system', 'T'],
             setup=with_tmpfs)
    if g[0] != 1 or ('T/d/on-tmpfs', 'f', 2) not in g[3]:
        test_fail(f'--one-file-system across a tmpfs: want it kept, exit 1: {g}')
    mounts.undo()

    bindsrc = SCRATCHDIR / 'bindsrc'

    def with_bind(root: Path) -> None:
        subprocess.run(['rm', '-rf', str(bindsrc)])
        (bindsrc / 'inside').mkdir(parents=True)
        (bindsrc / 'inside' / 'x').write_text('x\n')
        mounts.mount(['mount', '--bind', str(bindsrc)], root / 'T' / 'd')

    for opts in (['-rf', '--one-file-system'], ['-rf']):
        label = 'a bind mount of the same file system, ' + ' '.join(opts)
        res = []
        for prog in (GNU_RM, RSYNC_RM):
            root = SCRATCHDIR / 'bind'
            subprocess.run(['rm', '-rf', str(root)])
            root.mkdir()
            tree(root)
            with_bind(root)
            p = run([prog] + opts + ['T'], cwd=root)
            res.append((p.returncode, fd_listing(bindsrc), p.stderr))
            mounts.undo()
        (grc, gsrc, _), (drc, dsrc, derr) = res
        print(f'{label}: exit {drc}, rm {grc}; bind source after rm {gsrc}')
        if drc != 1 or dsrc != [('inside', 'd', ''), ('inside/x', 'f', 2)]:
            test_fail(f'{label}: rsync-rm must keep the bind mount: exit {drc}, {dsrc}')
        if "skipping 'T/d', since it's a mount point" not in derr:
            test_fail(f'{label}: {derr}')
        if '--one-file-system' in opts and gsrc:
            test_fail(f'{label}: GNU rm kept the bind mount\'s contents: re-think the pin')

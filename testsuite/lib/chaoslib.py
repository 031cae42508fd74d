"""Helpers for the fork's race, interruption and fault tests.

Trees that are quick to build, a checksum of a tree that must not change,
and the "chaos" worker that mutates a tree while rsync deletes it.  The
worker never follows a symlink itself (every path is walked with
O_NOFOLLOW directory fds), so whatever it leaves in the sentinel tree is
rsync's doing, not its own.
"""

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

# Every exit code rsync documents (rsync.1, EXIT VALUES).  A signal or a
# sanitizer abort gives something else.
RSYNC_EXIT_CODES = {0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 20, 21, 22,
                    23, 24, 25, 30, 35}
SANITIZER_MARKS = ('AddressSanitizer', 'runtime error:', 'LeakSanitizer',
                   'ThreadSanitizer', 'Segmentation fault', 'stack smashing')


def make_tree(root: Path, dirs: int, subdirs: int, files: int,
              size: int = 0) -> int:
    """root/dNNN/eNNN/fNNN: dirs * subdirs directories of files files
    each (size bytes).  Returns the number of entries created."""
    data = b'x' * size
    n = 0
    root.mkdir(parents=True, exist_ok=True)
    for i in range(dirs):
        d = root / f'd{i:03d}'
        d.mkdir()
        n += 1
        for j in range(subdirs):
            e = d / f'e{j:03d}'
            e.mkdir()
            n += 1
            for k in range(files):
                fd = os.open(e / f'f{k:03d}', os.O_WRONLY | os.O_CREAT, 0o644)
                if data:
                    os.write(fd, data)
                os.close(fd)
                n += 1
    return n


def tree_digest(root: Path) -> dict:
    """path -> (type, mode, uid, size, mtime_ns, sha256 or link target),
    root included, nothing followed."""
    out = {}

    def one(p: Path, rel: str):
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            what = os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            what = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            what = ''
        out[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                    st.st_uid, st.st_size if not stat.S_ISDIR(st.st_mode) else 0,
                    st.st_mtime_ns, what)

    one(root, '.')
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            one(p, str(p.relative_to(root)))
    return out


def digest_diff(before: dict, after: dict) -> list:
    keys = sorted(set(before) | set(after))
    return [(k, before.get(k), after.get(k)) for k in keys
            if before.get(k) != after.get(k)]


def make_sentinel(root: Path) -> dict:
    """A small tree outside every target, shaped like the targets (so that a
    deleter that follows a swapped-in symlink finds names it would
    delete), and its digest."""
    for i in range(3):
        d = root / f'd{i:03d}' / 'e000'
        d.mkdir(parents=True)
        for k in range(3):
            (d / f'f{k:03d}').write_text(f'sentinel {i} {k}\n')
    (root / 'precious').write_text('do not delete\n')
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames + ['.']:
            os.utime(os.path.join(dirpath, n), (1_400_000_000, 1_400_000_000),
                     follow_symlinks=False)
    return tree_digest(root)


def entries(root: Path) -> list:
    """Everything under root (not root itself), nothing followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        out += [os.path.join(dirpath, n) for n in dirnames + filenames]
    return out


def crash_marks(text: str) -> list:
    return [m for m in SANITIZER_MARKS if m in text]


# ---- The chaos worker ------------------------------------------------------

# Run as `python3 chaoslib.py TARGET SENTINEL SEED COUNTFILE`; creates
# COUNTFILE.ready once it runs, stops on SIGTERM and writes into COUNTFILE
# each successful operation with its time.monotonic() (CLOCK_MONOTONIC,
# the same clock in every process).
def _chaos(target: str, sentinel: str, seed: int, countfile: str) -> None:
    import random
    import signal
    import time
    rng = random.Random(seed)
    ops = ['create', 'mkdir', 'rename', 'swap-dir', 'swap-top', 'swap-file']
    done = []
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    open(countfile + '.ready', 'w').close()
    ND = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    links = [os.path.join(sentinel, f'd{i:03d}') for i in range(3)] + \
        [os.path.join(sentinel, 'd000', 'e000'), sentinel,
         os.path.join(sentinel, 'precious')]

    def opendir(*parts):
        """An fd for target/parts..., refusing every symlink on the way."""
        fd = os.open(target, ND)
        try:
            for p in parts:
                nfd = os.open(p, ND, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except OSError:
            os.close(fd)
            raise
        return fd

    def pick(*parts):
        """A random name in target/parts..., or None."""
        fd = opendir(*parts)
        try:
            names = os.listdir(fd)
        finally:
            os.close(fd)
        return rng.choice(names) if names else None

    # Names are drawn from what is there now, originals and renamed
    # directories alike, so the workers keep finding real directories
    # after the first swaps (opendir() refuses the symlinks).
    n = 0
    while not stop:
        n += 1
        try:
            d = pick()
            e = pick(d)
            f = pick(d, e)
        except (OSError, TypeError, IndexError):
            d = e = f = None
        if d is None or e is None or f is None:
            if d is None and os.listdir(target) == []:
                time.sleep(0.01)
            d, e, f = d or 'd000', e or 'e000', f or 'f000'
        op = rng.choices(ops, [4, 2, 2, 4, 1, 2])[0]
        fd = -1
        try:
            if op == 'create':
                fd = opendir(d, e)
                os.close(os.open(f'new{seed}-{n}', os.O_WRONLY | os.O_CREAT |
                                 os.O_NOFOLLOW | os.O_EXCL, 0o644, dir_fd=fd))
            elif op == 'mkdir':
                fd = opendir(d)
                os.mkdir(f'nd{seed}-{n}', dir_fd=fd)
                sub = os.open(f'nd{seed}-{n}', ND, dir_fd=fd)
                os.close(os.open('inner', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=sub))
                os.close(sub)
            elif op == 'rename':
                fd = opendir()
                to = pick()
                src = opendir(d)
                dst = opendir(to)
                try:
                    os.rename(e, f'{e}.mv{seed}-{n}', src_dir_fd=src, dst_dir_fd=dst)
                finally:
                    os.close(src)
                    os.close(dst)
            elif op == 'swap-dir':
                # A directory becomes a symlink to a directory outside.
                fd = opendir(d)
                os.rename(e, f'{e}.sw{seed}-{n}', src_dir_fd=fd, dst_dir_fd=fd)
                os.symlink(rng.choice(links), e, dir_fd=fd)
            elif op == 'swap-top':
                # Only a real directory: renaming the symlink a previous
                # swap left proves nothing and would crowd out the rest.
                os.close(opendir(d))
                fd = opendir()
                os.rename(d, f'{d}.sw{seed}-{n}', src_dir_fd=fd, dst_dir_fd=fd)
                os.symlink(rng.choice(links), d, dir_fd=fd)
            else:
                fd = opendir(d, e)
                os.unlink(f, dir_fd=fd)
                os.symlink(rng.choice(links), f, dir_fd=fd)
            done.append((op, time.monotonic()))
        except OSError:
            pass
        finally:
            if fd >= 0:
                os.close(fd)
    with open(countfile, 'w') as fh:
        fh.writelines(f'{op} {t}\n' for op, t in done)


class Chaos:
    """Worker processes mutating target, running when the constructor
    returns; stop(t0, t1) returns how many operations of each kind
    succeeded between the monotonic times t0 and t1."""

    def __init__(self, target: Path, sentinel: Path, seed: int, workers: int,
                 scratch: Path):
        import time
        self.files = [scratch / f'chaos-{seed}-{i}.count' for i in range(workers)]
        self.procs = [subprocess.Popen(
            [sys.executable, __file__, str(target), str(sentinel),
             str(seed * 100 + i), str(cf)]) for i, cf in enumerate(self.files)]
        deadline = time.monotonic() + 30
        while not all(Path(f'{cf}.ready').exists() for cf in self.files):
            if time.monotonic() > deadline:
                self.stop(0, 0)
                raise RuntimeError('chaos workers did not start')
            time.sleep(0.01)

    def stop(self, t0: float, t1: float) -> dict:
        total = {}
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for cf in self.files:
            try:
                for line in cf.read_text().splitlines():
                    op, t = line.split()
                    if t0 <= float(t) <= t1:
                        total[op] = total.get(op, 0) + 1
                cf.unlink()
                Path(f'{cf}.ready').unlink()
            except (OSError, ValueError):
                pass
        self.procs = []
        return total


if __name__ == '__main__':
    _chaos(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])

#!/usr/bin/python3
"""Time deleters side by side on identical, freshly generated trees.

Usage: bench/run.py [--quick] [--runs N] [--fs ext4,xfs,tmpfs]
                    [--shapes flat,wide,deep] [--peers a,b,...] [--cold]
                    [--dir DIR]

For each filesystem (a loop image or a tmpfs mounted here when run as root;
otherwise --dir, a directory the user names) and each tree shape, every
peer deletes a fresh tree made by bench/mktree, the peers
alternating within a round; with --cold the page cache is dropped before
each timed run.  The first round is a warm-up and is not counted.  The
report is a markdown table of median seconds (min-max), the ratio to
rm -rf and to stock rsync, and peak RSS, followed by the machine's CPU,
kernel and mount line.  Nothing is hard-coded: every number comes from
this run.
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MKTREE = os.path.join(TOP, 'bench', 'mktree')

SHAPES = {
    'quick': {'flat': ['flat', '100000'], 'wide': ['wide', '200', '500'],
              'deep': ['deep', '1000', '20']},
    'full': {'flat': ['flat', '500000'], 'wide': ['wide', '1000', '1000'],
             'deep': ['deep', '2000', '50']},
}


def peers(top):
    """name -> function(target) returning the argv that deletes target."""
    empty = None

    def rsync_with(binary, *opts):
        def argv(target):
            return [binary, *opts, empty + '/', target + '/']
        return argv

    p = {}
    p['rsync-de --delete-only'] = rsync_with(os.path.join(top, 'rsync'), '--delete-only')
    p['rsync-de -a --delete'] = rsync_with(os.path.join(top, 'rsync'), '-a', '--delete')
    if os.access(os.path.join(top, 'rsync-stock'), os.X_OK):
        p['stock -a --delete'] = rsync_with(os.path.join(top, 'rsync-stock'), '-a', '--delete')
    if shutil.which('rsync') and os.path.realpath(shutil.which('rsync')) != os.path.join(top, 'rsync'):
        p['debian rsync -a --delete'] = rsync_with(shutil.which('rsync'), '-a', '--delete')
    p['rm -rf'] = lambda target: ['rm', '-rf', target]
    p['find -delete'] = lambda target: ['find', target, '-delete']

    def set_empty(path):
        nonlocal empty
        empty = path
    return p, set_empty


def drop_caches():
    subprocess.run(['sync'])
    try:
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('3\n')
    except OSError:
        pass


def timed(argv):
    """Run argv; return (wall seconds, exit code, last stderr line)."""
    t = time.monotonic()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    secs = time.monotonic() - t
    err = r.stderr.decode(errors='replace').strip().splitlines()
    return secs, r.returncode, err[-1][-200:] if err else ''


class Mount:
    """A scratch filesystem: a loop image or tmpfs when root, else --dir."""

    def __init__(self, fs, base):
        self.fs, self.base = fs, base
        self.path = tempfile.mkdtemp(prefix=f'bench-{fs}-', dir=base)
        self.img = None
        if fs == 'dir':
            return
        if fs == 'tmpfs':
            subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=8g', 'tmpfs', self.path], check=True)
        else:
            self.img = self.path + '.img'
            subprocess.run(['truncate', '-s', '8G', self.img], check=True)
            mkfs = {'ext4': ['mkfs.ext4', '-q', '-F'], 'xfs': ['mkfs.xfs', '-q', '-f'],
                    'btrfs': ['mkfs.btrfs', '-q', '-f']}[fs]
            subprocess.run(mkfs + [self.img], check=True)
            subprocess.run(['mount', '-o', 'loop', self.img, self.path], check=True)

    def mount_line(self):
        for line in open('/proc/mounts'):
            if line.split()[1] == self.path:
                return line.strip()
        return f'{self.path} (a directory on the host filesystem)'

    def close(self):
        if self.fs != 'dir':
            subprocess.run(['umount', self.path])
        shutil.rmtree(self.path, ignore_errors=True)
        if self.img:
            os.unlink(self.img)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--fs', default='ext4,xfs,tmpfs')
    ap.add_argument('--shapes', default='flat,wide,deep')
    ap.add_argument('--peers', default='')
    ap.add_argument('--cold', action='store_true')
    ap.add_argument('--dir', default=None, help='non-root: where to make trees')
    a = ap.parse_args()

    subprocess.run(['make', '-s', '-C', os.path.join(TOP, 'bench'), 'mktree'],
                   check=True, stdout=subprocess.DEVNULL)
    allpeers, set_empty = peers(TOP)
    names = [n for n in allpeers if not a.peers or n in a.peers.split(',')]
    sizes = SHAPES['quick' if a.quick else 'full']
    root = os.geteuid() == 0
    fss = a.fs.split(',') if root and not a.dir else ['dir']
    base = a.dir or tempfile.gettempdir()

    print(f'# rsync-de deletion benchmark, {time.strftime("%Y-%m-%d %H:%M")}')
    print()
    print(f'{a.runs} counted runs per cell after one warm-up round, peers alternated, '
          f'fresh tree per run, {"cold" if a.cold else "warm"} cache. Ratios are of medians; '
          '< 1 means faster than the peer named.')
    mounts = []
    for fs in fss:
        m = Mount(fs, base)
        try:
            empty = os.path.join(m.path, 'empty')
            os.mkdir(empty)
            set_empty(empty)
            for shape in a.shapes.split(','):
                times = {n: [] for n in names}
                rss = {n: 0 for n in names}
                failed = {}
                for rnd in range(a.runs + 1):
                    for n in (names if rnd % 2 == 0 else list(reversed(names))):
                        target = os.path.join(m.path, 't')
                        subprocess.run([MKTREE] + sizes[shape][:] + [target], check=True,
                                       stdout=subprocess.DEVNULL)
                        if a.cold:
                            drop_caches()
                        else:
                            subprocess.run(['sync'])
                        argv = allpeers[n](target)
                        if os.path.exists('/usr/bin/time'):
                            argv = ['/usr/bin/time', '-f', '%M', '-o', target + '.rss'] + argv
                        secs, rc, err = timed(argv)
                        if os.path.exists(target + '.rss'):
                            kib = open(target + '.rss').read().split()
                            os.unlink(target + '.rss')
                            if kib and kib[-1].isdigit():
                                rss[n] = max(rss[n], int(kib[-1]))
                        left = 0
                        if os.path.exists(target):
                            # find, not os.walk: the deep tree is deeper
                            # than Python's recursion limit.
                            left = len(subprocess.run(
                                ['find', target, '-mindepth', '1', '-printf', '.'],
                                capture_output=True).stdout)
                            subprocess.run(['rm', '-rf', target], check=True)
                        if rc != 0 or left:
                            # A peer that cannot do the job is reported,
                            # not timed; ours and rm -rf must not fail.
                            failed[n] = f'exit {rc}, {left} left: {err}'
                            if n.startswith('rsync-de') or n == 'rm -rf':
                                sys.exit(f'bench: {n} failed on {fs} {shape}: {failed[n]}')
                        elif rnd:
                            times[n].append(secs)
                med = {n: statistics.median(times[n]) for n in names if n not in failed}
                print()
                print(f'## {fs}, {shape} ({" ".join(sizes[shape][1:])})')
                print()
                print('| peer | median s | min-max s | vs rm -rf | vs stock | peak RSS MiB |')
                print('| --- | --- | --- | --- | --- | --- |')
                for n in names:
                    if n in failed:
                        print(f'| {n} | failed: {failed[n]} | | | | |')
                        continue
                    vs_rm = f'{med[n] / med["rm -rf"]:.2f}' if 'rm -rf' in med else '-'
                    st = med.get('stock -a --delete')
                    vs_st = f'{med[n] / st:.2f}' if st else '-'
                    print(f'| {n} | {med[n]:.3f} | {min(times[n]):.3f}-{max(times[n]):.3f} '
                          f'| {vs_rm} | {vs_st} | {rss[n] / 1024:.1f} |')
                sys.stdout.flush()
            mounts.append(m.mount_line())
        finally:
            m.close()

    print()
    cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo')
                if l.startswith('model name')), platform.processor())
    print(f'CPU: {cpu}; cores: {os.cpu_count()}; kernel: {platform.release()}')
    for line in mounts:
        print(f'mount: {line}')


if __name__ == '__main__':
    main()

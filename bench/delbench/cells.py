"""The delete scenarios: one cell, a fresh tree per timed run, the
peers alternated, and its report; the slow-disk scenario's glue.
"""

import os
import subprocess

from .common import BENCH, MKTREE, MTIME, count_entries, drop_caches, log, median, remove, sh, sync_fs
from .peers import LINK_ONLY, fill, timed


class Cell:
    """Results of one (filesystem, cache, scenario) cell."""

    def __init__(self, names):
        self.times = {n: [] for n in names}
        self.rss = {n: 0 for n in names}
        self.cpu = {n: [] for n in names}
        self.link = {n: [] for n in names}	# sshfs: (client, server) CPU s
        self.failed = {}

    def med(self, n):
        return None if n in self.failed else median(self.times[n])


def make_tree(spec, target, user=None):
    argv = [MKTREE] + spec + [target]
    if user:
        argv = user(argv)
    sh(argv, check=True, stdout=subprocess.DEVNULL)


def run_cell(m, scenario, spec, cache, peers, vals, runs, user=None, rotate=True,
             remote_cpu=None, sshfs=None):
    """Time every peer on a fresh tree, runs + 1 rounds, the first dropped.
    peers: list of (name, argv template).  remote_cpu: a CpuGroup whose
    CPU time during a run is added to the run's (sshd and the far side of
    an ssh push).  sshfs: an Sshfs serving vals['work']; the peers then
    delete through it, and remote_cpu (sshd, sftp-server) and the mount's
    CPU are kept apart in cell.link.  Returns a Cell."""
    names = [n for n, _ in peers]
    tmpl = dict(peers)
    cell = Cell(names)
    work = vals['work']
    target = os.path.join(work, 't')
    expect_left = 0
    if scenario == 'sync':
        src = os.path.join(work, 's')
        remove(src)
        make_tree(['-S', '2', '-t', MTIME] + spec, src)
        vals['src'] = src
        expect_left = count_entries(src)
    for rnd in range(runs + 1):
        order = names if rnd % 2 == 0 or not rotate else list(reversed(names))
        for n in order:
            if n in cell.failed:
                continue
            remove(target)
            if scenario == 'snapshot-expiry':
                # The generation expired shares every file with the one
                # kept, which is made afresh with it.
                gen0 = os.path.join(work, 'g0')
                remove(gen0)
                make_tree(spec, gen0)
                sh(['cp', '-al', gen0, target], check=True)
            elif n not in LINK_ONLY:
                make_tree((['-t', MTIME] if scenario == 'sync' else []) + spec, target, user)
            if cache == 'cold':
                drop_caches(m.path)
            else:
                sync_fs(m.path)
            view = os.path.join(sshfs.mnt, 't') if sshfs else target
            if sshfs:
                sshfs.mount()
            argv = fill(tmpl[n], dict(vals, target=view))
            if user and not sshfs:	# an sshfs mount is root's alone
                argv = user(argv)
            if remote_cpu and remote_cpu.path:
                nprocs, cpu0 = remote_cpu.procs(), remote_cpu.seconds()
            if sshfs:
                link0 = sshfs.cpu.seconds()
            secs, rc, err, kib, cpu = timed(argv, os.path.join(m.path, 'rss.out'))
            if sshfs:
                link = sshfs.cpu.seconds()
                sshfs.umount()
                if remote_cpu and remote_cpu.path and link is not None:
                    remote_cpu.settle(nprocs)
                    link = (link - link0, remote_cpu.seconds() - cpu0)
            elif remote_cpu and remote_cpu.path and cpu is not None:
                remote_cpu.settle(nprocs)
                cpu += remote_cpu.seconds() - cpu0
            left = count_entries(target) if n not in LINK_ONLY else expect_left
            remove(target)
            cell.rss[n] = max(cell.rss[n], kib)
            if rc != 0 or left != expect_left:
                # A peer that cannot do the job is reported, not timed.
                cell.failed[n] = f'exit {rc}, {left} entries left (expected {expect_left}): {err}'
                log(f'{m.fs} {scenario} {cache}: {n} FAILED: {cell.failed[n]}')
            elif rnd:
                cell.times[n].append(secs)
                if cpu is not None:
                    cell.cpu[n].append(cpu)
                if sshfs and isinstance(link, tuple):
                    cell.link[n].append(link)
            log(f'{m.fs} {scenario} {cache} round {rnd}: {n}: {secs:.3f} s')
    if scenario == 'sync':
        remove(vals['src'])
    if scenario == 'snapshot-expiry':
        remove(os.path.join(work, 'g0'))
    return cell


def print_cell(out, title, names, cell, base=('rm -rf', 'stock -a --delete'), cpu_what=''):
    link = any(cell.link.get(n) for n in names)
    out(f'\n## {title}\n')
    out(f'| peer | median s | min-max s | vs {base[0]} | vs {base[1]} | peak RSS MiB '
        f'| CPU s (user+sys{cpu_what}) |'
        + (' CPU s sshfs + ssh | CPU s sshd + sftp-server |' if link else ''))
    out('| --- | --- | --- | --- | --- | --- | --- |' + (' --- | --- |' if link else ''))
    b0, b1 = cell.med(base[0]) if base[0] in cell.times else None, \
        cell.med(base[1]) if base[1] in cell.times else None
    for n in names:
        if n in cell.failed:
            out(f'| {n} | failed: {cell.failed[n]} | | | | {cell.rss[n] / 1024:.1f} | |'
                + (' | |' if link else ''))
            continue
        med = cell.med(n)
        r0 = f'{med / b0:.2f}' if b0 else '-'
        r1 = f'{med / b1:.2f}' if b1 else '-'
        cpu = f'{median(cell.cpu[n]):.3f}' if cell.cpu.get(n) else '-'
        lk = ''
        if link:
            ls = cell.link.get(n) or []
            lk = ''.join(f' {median([x[i] for x in ls]):.3f} |' if ls else ' - |'
                         for i in (0, 1))
        out(f'| {n} | {med:.3f} | {min(cell.times[n]):.3f}-{max(cell.times[n]):.3f} '
            f'| {r0} | {r1} | {cell.rss[n] / 1024:.1f} | {cpu} |{lk}')


# ---- The dd scenario (seed 2) --------------------------------------------


SLOWDISK_CELLS = {
    'quick': [('hdd', 'ext4-j4', 'shuffled', 50, 400)],
    'full': [(m, 'ext4-j4', t, 100, 400) for m in ('hdd', 'cloud')
             for t in ('shuffled', 'snapshot', 'flat', 'in-order')]
    + [(m, fs, 'shuffled', 100, 400) for m in ('hdd', 'cloud') for fs in ('ext4', 'xfs')],
}
SLOWDISK_PEERS = ['rsync-de', 'stock', 'rm', 'find']


def slowdisk_bench():
    """bench/slowdisk/bench.py as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'slowdisk_bench', os.path.join(BENCH, 'slowdisk', 'bench.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

#!/usr/bin/env python3
"""Deletion on a disk model (slowdisk): each peer deletes an identical
copy of one file system image, served by the model, from a cold start.

    bench/slowdisk/bench.py [--model hdd|cloud] [--fs ext4-j4|ext4|xfs]
        [--tree shuffled|snapshot|flat|in-order] [--dirs 100] [--files 400]
        [--peers NAME,...] [--runs 3] [--json FILE] [--out FILE]

The tree is made once, on a loop image at full speed (bench/mktree;
shuffled: files created in a random order across the directories, as a
tree grown over time; snapshot: a cp -al copy of it, which is what is
deleted; flat: one directory of dirs x files; in-order: created
directory by directory).  Each run copies the image, attaches the copy
through the model (SlowDisk: a fresh daemon and loop device, so nothing
is cached), mounts it and times the delete plus `sync -f`.  The model's
counters give the requests and bytes read and written, and its seeks;
each record also has the pages the kernel read back after evicting them
(refaults) and the machine's proactive reclaim (slowdisk/README.md).
Rounds alternate the peers' order.  Root only.

The tree is w/d/t, and d holds nothing else.  Most peers delete t's
contents and keep t itself, as `rsync --delete-only empty/ t/` does;
rm, find and rsync-de-all remove t as well.  Keeping t costs its emptied
directory blocks, written home at the sync, where removing it frees
them; in one large directory that shows (docs/BENCHMARKS.md, "Slow
disks").  Compare peers that end in the same state.

The peers (--peers):
  rsync-de      ./rsync -r --delete-only empty/ t/  (its schedule: auto)
  rsync-de-all  ./rsync -r --delete-only empty/ d/  (t removed too, as
                by rm -rf: rsync hands the engine t whole)
  rsync-de-dirs the same with --delete-schedule=dirs (directory by
                directory, as before the global schedule)
  rsync-de-global  the same with --delete-schedule=global
  de-global     delete_engine/tools/de-rm -G -rf t  (the engine alone,
                its global schedule forced)
  de-global-wN  the same with windows of at most N directory blocks
                (de-rm -W N; the default is half a journal transaction)
  rsync-de-v    ./rsync -av --delete empty/ t/ (stock's order, printed)
  rsync-de-log  ./rsync -r --delete-only --log-file=/dev/null (logged)
  rsync-de-maxdel  ./rsync -r --delete-only --max-delete=1000000000
  rsync-de-backup  ./rsync -r --delete-only --backup --backup-dir=BK, BK
                being w/bk, beside d (the files moved there, not deleted)
  stock-push    ./rsync-stock -a --delete empty/ lh:t/, ./rsync the
                receiver through a remote shell (bench/slowdisk/lsh):
                a stock client, which takes the deletion messages
  stock         ./rsync-stock -r --delete empty/ t/
  stock-backup  ./rsync-stock -r --delete --backup --backup-dir=BK
  rm            rm -rf t
  find          find t -delete
  find-keep     find t -mindepth 1 -delete  (keeps t)
  --peer NAME=COMMAND adds one (repeatable): its words, with {t}, {d}
  and {empty} replaced, as `--peer 'before=build/against/SHA/rsync -r
  --delete-only {empty}/ {t}/'` for an earlier build beside this one.

A sync (--sync F): the tree is also copied, with cp -a, to a source
{src} outside the model (in /var/tmp), and a fraction F of its files,
chosen at random across the directories, is removed there; the peers
then sync the source into t, deleting the files it lacks, scattered
through the tree, and passing over the rest:
  sync-rsync-de        ./rsync -a --delete src/ t/
  sync-rsync-de-v      the same with -v
  sync-rsync-de-after  the same with --delete-after
  sync-stock           ./rsync-stock -a --delete src/ t/
  sync-stock-push      the stock client pushing it to ./rsync (lsh)
A run must leave t as the source is.

At a million files, the full runs of the slower peers take hours.
--limit SECS stops each run after SECS seconds (SIGTERM, then SIGKILL)
and counts the inodes it freed (statvfs, as `df -i`); the table then
gives its rate and the whole run's time at that rate, marked as such.
--inodes N makes the file system with N inodes (mkfs -N): the default
ratio gives an 8 GiB ext4 image 524,288, too few for a million files.
"""

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = HERE.parent.parent
sys.path.insert(0, str(HERE))
from slowdisk import SlowDisk  # noqa: E402

FS = {
    # ext4 with a journal smaller than the tree's metadata (4 MiB), as a
    # tree of millions of files has under the default 1 GiB journal.
    'ext4-j4': ['mkfs.ext4', '-q', '-F', '-J', 'size=4'],
    'ext4-j8': ['mkfs.ext4', '-q', '-F', '-J', 'size=8'],
    'ext4-j16': ['mkfs.ext4', '-q', '-F', '-J', 'size=16'],
    'ext4-j64': ['mkfs.ext4', '-q', '-F', '-J', 'size=64'],
    # mkfs.ext4's own choice: 64 MiB on the 2 GiB image
    'ext4': ['mkfs.ext4', '-q', '-F'],
    'xfs': ['mkfs.xfs', '-q', '-f'],
}
PEERS = {
    'rsync-de': [str(TOP / 'rsync'), '-r', '--delete-only', '{empty}/', '{t}/'],
    'rsync-de-all': [str(TOP / 'rsync'), '-r', '--delete-only', '{empty}/', '{d}/'],
    'rsync-de-dirs': [str(TOP / 'rsync'), '-r', '--delete-only', '--delete-schedule=dirs',
                      '{empty}/', '{t}/'],
    'rsync-de-global': [str(TOP / 'rsync'), '-r', '--delete-only', '--delete-schedule=global',
                        '{empty}/', '{t}/'],
    'de-global': [str(TOP / 'delete_engine/tools/de-rm'), '-G', '-rf', '{t}'],
    'rsync-de-v': [str(TOP / 'rsync'), '-av', '--delete', '{empty}/', '{t}/'],
    'rsync-de-log': [str(TOP / 'rsync'), '-r', '--delete-only', '--log-file=/dev/null',
                     '{empty}/', '{t}/'],
    'rsync-de-maxdel': [str(TOP / 'rsync'), '-r', '--delete-only', '--max-delete=1000000000',
                        '{empty}/', '{t}/'],
    'rsync-de-backup': [str(TOP / 'rsync'), '-r', '--delete-only', '--backup',
                        '--backup-dir={d}/../bk', '{empty}/', '{t}/'],
    'stock-backup': [str(TOP / 'rsync-stock'), '-r', '--delete', '--backup',
                     '--backup-dir={d}/../bk', '{empty}/', '{t}/'],
    'stock-push': [str(TOP / 'rsync-stock'), '-a', '--delete', '-e', str(HERE / 'lsh'),
                   '--rsync-path=' + str(TOP / 'rsync'), '{empty}/', 'lh:{t}/'],
    'stock': [str(TOP / 'rsync-stock'), '-r', '--delete', '{empty}/', '{t}/'],
    'sync-rsync-de': [str(TOP / 'rsync'), '-a', '--delete', '{src}/', '{t}/'],
    'sync-rsync-de-v': [str(TOP / 'rsync'), '-av', '--delete', '{src}/', '{t}/'],
    'sync-rsync-de-after': [str(TOP / 'rsync'), '-a', '--delete-after', '{src}/', '{t}/'],
    'sync-stock': [str(TOP / 'rsync-stock'), '-a', '--delete', '{src}/', '{t}/'],
    'sync-stock-push': [str(TOP / 'rsync-stock'), '-a', '--delete', '-e', str(HERE / 'lsh'),
                        '--rsync-path=' + str(TOP / 'rsync'), '{src}/', 'lh:{t}/'],
    'rm': ['rm', '-rf', '{t}'],
    'find': ['find', '{t}', '-delete'],
    'find-keep': ['find', '{t}', '-mindepth', '1', '-delete'],
}


def peer_argv(name):
    """PEERS[name], or de-rm -G -W N for de-global-wN."""
    if name.startswith('de-global-w') and name[11:].isdigit():
        return PEERS['de-global'][:2] + ['-W', name[11:]] + PEERS['de-global'][2:]
    return PEERS[name]


def sh(argv, **kw):
    return subprocess.run([str(a) for a in argv], check=True, **kw)


def entries(root):
    """Entries below root, directories and files."""
    return sum(len(d) + len(f) for _, d, f in os.walk(root)) if os.path.exists(root) else 0


def make_source(t, src, fraction):
    """src: a cp -a copy of t without a random fraction of its files."""
    import random
    sh(['cp', '-a', t, src])
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
    for f in random.Random(1).sample(files, int(len(files) * fraction)):
        os.unlink(f)


def make_image(path, fs, tree, dirs, files, size, src=None, fraction=0.0, inodes=0):
    """The image with the tree at w/d/t (and w/empty), and for a sync
    its source at src; returns the entries below t."""
    with open(path, 'wb') as fh:
        fh.truncate(size)
    sh(FS[fs] + (['-N', str(inodes)] if inodes else []) + [path], stdout=subprocess.DEVNULL)
    mnt = tempfile.mkdtemp(prefix='slowdisk-mk-')
    sh(['mount', '-o', 'loop', path, mnt])
    try:
        w = Path(mnt) / 'w'
        w.mkdir()
        (w / 'empty').mkdir()
        (w / 'd').mkdir()
        mktree = TOP / 'bench' / 'mktree'
        shape = ['flat', str(dirs * files)] if tree == 'flat' else ['wide', str(dirs), str(files)]
        shuffle = [] if tree == 'in-order' else ['-s']
        dest = w / ('src' if tree == 'snapshot' else 'd/t')
        sh([mktree] + shuffle + shape + [dest], stdout=subprocess.DEVNULL)
        if tree == 'snapshot':
            sh(['cp', '-al', dest, w / 'd' / 't'])
        if src:
            make_source(w / 'd' / 't', src, fraction)
        return entries(w / 'd' / 't')
    finally:
        sh(['umount', mnt])
        os.rmdir(mnt)


def jbd2(dev):
    """The journal's counters of block device dev (ext4): the
    transactions, and per transaction the handles (about one per
    unlink), the blocks and the logged blocks; {} without a journal."""
    try:
        text = Path(f'/proc/fs/jbd2/{os.path.basename(dev)}-8/info').read_text()
    except OSError:
        return {}
    out = {'transactions': int(text.split()[0])}
    for line in text.splitlines():
        for tail, name in ((' handles per transaction', 'tx_handles'),
                           (' blocks per transaction', 'tx_blocks'),
                           (' logged blocks per transaction', 'tx_logged')):
            head = line.strip()
            if head.endswith(tail) and head[:-len(tail)].isdigit():
                out[name] = int(head[:-len(tail)])
    return out


def refaults():
    """Pages the kernel has read back after evicting them, machine-wide
    (/proc/vmstat workingset_refault_file)."""
    for line in Path('/proc/vmstat').read_text().splitlines():
        name, _, value = line.partition(' ')
        if name == 'workingset_refault_file':
            return int(value)
    return 0


def reclaim():
    """The machine's proactive reclaim, as 'damon pageout after N s' for
    each running DAMON scheme that pages out memory idle that long; ''
    without one."""
    out = []
    for kd in sorted(Path('/sys/kernel/mm/damon/admin/kdamonds').glob('[0-9]*')):
        try:
            if (kd / 'state').read_text().strip() != 'on':
                continue
            for ctx in sorted(kd.glob('contexts/[0-9]*')):
                aggr = int((ctx / 'monitoring_attrs/intervals/aggr_us').read_text())
                for sch in sorted(ctx.glob('schemes/[0-9]*')):
                    if (sch / 'action').read_text().strip() == 'pageout':
                        age = int((sch / 'access_pattern/age/min').read_text())
                        out.append(f'damon pageout after {age * aggr / 1e6:g} s')
        except (OSError, ValueError):
            continue
    return ', '.join(out)


def used_inodes(mnt):
    st = os.statvfs(mnt)
    return st.f_files - st.f_ffree


def timed(argv, limit):
    """Run argv; with a limit, stop it after limit seconds.  Returns
    (the CompletedProcess-like result, whether it was stopped)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=limit or None)
        return subprocess.CompletedProcess(argv, p.returncode, out, err), False
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        return subprocess.CompletedProcess(argv, 0, out, err), True


def one_run(img, model, peer, opts, src=None, limit=0):
    """Copy img, delete w/d/t (or sync src into it) through the model;
    returns a record.  With a limit, a run still going then is stopped,
    and the record has the inodes it freed in that time (freed)."""
    # A name of its own: runs of one image side by side must not share it.
    fd, run = tempfile.mkstemp(prefix=os.path.basename(img) + '.', suffix='.run',
                               dir=os.path.dirname(img) or '.')
    os.close(fd)
    sh(['cp', '--sparse=always', img, run])
    mnt = tempfile.mkdtemp(prefix='slowdisk-run-')
    try:
        with SlowDisk(run, model, opts) as disk:
            sh(['mount', disk.dev, mnt])
            try:
                w = Path(mnt) / 'w'
                t = w / 'd' / 't'
                argv = [a.format(t=t, d=t.parent, empty=w / 'empty', src=src)
                        for a in peer_argv(peer)]
                used = used_inodes(mnt)
                lost = refaults()
                disk.reset()
                t0 = time.monotonic()
                p, stopped = timed(argv, limit)
                t1 = time.monotonic()
                freed = used - used_inodes(mnt)
                if not stopped:
                    sh(['sync', '-f', mnt])
                t2 = time.monotonic()
                lost = refaults() - lost
                st = disk.stats()
                journal = jbd2(disk.dev)
                # A stopped run's tree is not walked: through the model
                # that would take as long again.
                left = 0 if stopped else entries(t)
            finally:
                sh(['umount', mnt])
    finally:
        os.rmdir(mnt)
        os.unlink(run)
    return dict(peer=peer, secs=t2 - t0, sync=t2 - t1, rc=p.returncode, left=left,
                stopped=stopped, freed=freed, err=p.stderr[-300:], jbd2=journal,
                refaults=lost, reclaim=reclaim(),
                **{k: st[k] for k in st if k != 'model'})


def secs_of(r):
    """A run's seconds; for a stopped run, the whole run's at its rate."""
    if not r.get('stopped'):
        return r['secs']
    return r['secs'] * r['entries'] / max(r['freed'], 1)


def table(cell, names):
    med = {n: statistics.median(secs_of(r) for r in cell[n]) for n in names if cell[n]}
    lines = ['| peer | median s (delete + sync) | min-max s | vs rm -rf | vs stock '
             '| writes | write MiB | reads | read MiB | seeks |',
             '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |']
    notes = []
    for n in names:
        rs = cell[n]
        if not rs:
            continue
        m = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
        rel = [f'{med[n] / med[b]:.3f}' if b in med else '-'
               for b in ('rm', 'stock' if 'stock' in med else 'sync-stock')]
        mark = ''
        if any(r.get('stopped') for r in rs):
            mark = ' *'
            notes.append(f'{n}: stopped after {m("secs"):.0f} s, having freed '
                         f'{m("freed"):.0f} of {rs[0]["entries"]} inodes '
                         f'({m("freed") / m("secs"):.0f} a second); its time is the whole '
                         'run\'s at that rate, its requests those of the time it ran')
        lo, hi = min(secs_of(r) for r in rs), max(secs_of(r) for r in rs)
        lines.append(f'| {n}{mark} | {med[n]:.1f} | {lo:.1f}-{hi:.1f} | {rel[0]} | {rel[1]} | '
                     f'{m("writes"):.0f} | {m("write_bytes") / 2**20:.0f} | {m("reads"):.0f} | '
                     f'{m("read_bytes") / 2**20:.0f} | {m("seeks"):.0f} |')
    return '\n'.join(lines + [''] + ['\\* ' + x for x in notes] if notes else lines)


def run_cell(model, opts, fs, tree, dirs, files, size, names, runs, json_path=None,
             log=lambda line: print(line, file=sys.stderr, flush=True), sync=0.0,
             inodes=0, limit=0):
    """One cell: the tree made once, each peer deleting a copy of it
    `runs` times, alternated (with sync, syncing a source that lacks
    that fraction of its files into it).  Returns (records, a markdown
    section)."""
    for n in names:
        if n not in PEERS and not n.startswith('de-global-w'):
            raise SystemExit(f'unknown peer {n}; known: {", ".join(PEERS)}')
    subprocess.run(['make', '-s', '-C', str(TOP / 'bench'), 'mktree'], check=True)
    nbytes = int(size[:-1]) << {'M': 20, 'G': 30}[size[-1]]
    work = tempfile.mkdtemp(prefix='slowdisk-bench-', dir='/var/tmp')
    img = os.path.join(work, 'tree.img')
    cell = {n: [] for n in names}
    title = (f'{" ".join([model] + opts)}, {fs}, {tree} {dirs} x {files}'
             + (f', a sync deleting {sync:.0%} of the files' if sync else '')
             + (f', {size} with {inodes} inodes' if inodes else '')
             + (f', runs stopped after {limit:.0f} s' if limit else '')
             + f' ({runs} rounds, peers alternated)')
    src = os.path.join(work, 'src') if sync else None
    try:
        total = make_image(img, fs, tree, dirs, files, nbytes, src, sync, inodes)
        want_left = entries(src) if src else 0
        for rnd in range(runs):
            for n in (names if rnd % 2 == 0 else list(reversed(names))):
                r = one_run(img, model, n, opts, src, limit)
                r.update(round=rnd, model=model, model_opts=opts, fs=fs, tree=tree,
                         dirs=dirs, files=files, sync_fraction=sync, inodes=inodes,
                         entries=total)
                r['left'] -= want_left
                log(f'{title}: round {rnd} {n}: {r["secs"]:.1f} s (sync {r["sync"]:.1f}), '
                    f'{r["writes"]} writes, {r["reads"]} reads, {r["seeks"]} seeks'
                    + (f', stopped, {r["freed"]} freed' if r['stopped'] else ''))
                if r['rc'] or r['left']:
                    raise SystemExit(f'{n} failed: exit {r["rc"]}, {r["left"]} left: {r["err"]}')
                cell[n].append(r)
                if json_path:
                    with open(json_path, 'a') as fh:
                        fh.write(json.dumps(r) + '\n')
    finally:
        if os.path.exists(img):
            os.unlink(img)
        if src:
            sh(['rm', '-rf', src])
        os.rmdir(work)
    return cell, f'\n### {title}\n\n' + table(cell, names) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', default='hdd', choices=['hdd', 'cloud'])
    ap.add_argument('--model-opts', default='', help='slowdisk options, comma-separated')
    ap.add_argument('--fs', default='ext4-j4', choices=list(FS))
    ap.add_argument('--tree', default='shuffled', choices=['shuffled', 'snapshot', 'flat', 'in-order'])
    ap.add_argument('--dirs', type=int, default=100)
    ap.add_argument('--files', type=int, default=400)
    ap.add_argument('--size', default='2G')
    ap.add_argument('--peers', default='rsync-de,rm,stock,find')
    ap.add_argument('--peer', action='append', default=[], metavar='NAME=COMMAND',
                    help='one more peer: COMMAND with {t}, {d}, {empty}')
    ap.add_argument('--sync', type=float, default=0.0, metavar='F',
                    help='sync a source lacking this fraction of the files (sync-* peers)')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--inodes', type=int, default=0, help='mkfs -N: inodes of the file system')
    ap.add_argument('--limit', type=float, default=0, metavar='SECS',
                    help='stop each run after SECS s and count the inodes it freed')
    ap.add_argument('--json', default=None)
    ap.add_argument('--out', default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit('bench/slowdisk/bench.py: root only (loop devices, mounts)')
    for spec in a.peer:
        name, sep, cmd = spec.partition('=')
        if not sep or not cmd or name in PEERS:
            sys.exit(f'bench/slowdisk/bench.py: --peer {spec!r}: want a new NAME=COMMAND')
        PEERS[name] = shlex.split(cmd)
    _, text = run_cell(a.model, [o for o in a.model_opts.split(',') if o], a.fs, a.tree,
                       a.dirs, a.files, a.size, a.peers.split(','), a.runs, a.json,
                       sync=a.sync, inodes=a.inodes, limit=a.limit)
    print(text)
    if a.out:
        with open(a.out, 'a') as fh:
            fh.write(text)


if __name__ == '__main__':
    main()

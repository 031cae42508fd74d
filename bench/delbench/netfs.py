"""The netfs scenario: the deleters on the network file system model
(bench/netfs), where each request waits a round trip and the server
serves a limited number at once.

Every run deletes a fresh tree through a fresh mount of the model (so no
peer meets the kernel caches another one filled), made on a tmpfs behind
it.  Each cell reports seconds, the requests the model served by kind,
the CPU of the client (the peer and its children) and of the model.
"""

import os
import sys

from .common import BENCH, count_entries, log, median, remove
from .devices import Mount
from .cells import make_tree
from .peers import fill, timed

sys.path.insert(0, os.path.join(BENCH, 'netfs'))
from netfs import NetFS  # noqa: E402

# (round trip ms, server slots, tree name, mktree arguments, most runs)
TREES = [('100 x 200', ['wide', '100', '200']), ('flat 10,000', ['flat', '10000']),
         ('deep chain', ['deep', '500', '4'])]
NETFS_CELLS = {
    'quick': [(2.0, 16, '20 x 100', ['wide', '20', '100'], None)],
    # One directory at 2 ms is serial for every peer (the directory's
    # lock), 45 s a run: once is enough to see it.
    'full': [(lat, 16, n, s, 1 if lat == 2.0 and n.startswith('flat') else None)
             for lat in (0.2, 2.0) for n, s in TREES]
    + [(2.0, 64, '100 x 200', ['wide', '100', '200'], None)],
}
PARALLEL = ('xargs -P 32 rm', '16 x rm -rf')
NETFS_PEERS = [
    ('rsync-de --delete-only', ['{top}/rsync', '--delete-only', '{empty}/', '{target}/']),
    # The engine's earlier choice of workers, side by side with today's.
    ('rsync-de, 32 threads', ['{top}/rsync', '--delete-only', '--delete-threads=32',
                              '{empty}/', '{target}/']),
    ('stock -a --delete', ['{top}/rsync-stock', '-a', '--delete', '{empty}/', '{target}/']),
    ('rm -rf', ['rm', '-rf', '{target}']),
    ('find -delete', ['find', '{target}', '-delete']),
    # The files by 32 rm at once, 64 names each, then the directories.
    ('xargs -P 32 rm', ['sh', '-c', 'find "$1" -type f -print0 | xargs -0 -r -P 32 -n 64 '
                        'rm -f && rm -rf "$1"', 'sh', '{target}']),
    # One rm -rf per top-level entry, 16 at a time.
    ('16 x rm -rf', ['sh', '-c', 'find "$1" -mindepth 1 -maxdepth 1 -print0 | '
                     'xargs -0 -r -P 16 -n 1 rm -rf && rm -rf "$1"', 'sh', '{target}']),
]
KINDS = ('getattr', 'readdir', 'opendir', 'unlink', 'rmdir')


def netfs_cell(lat, slots, spec, peers, vals, runs, cache='nfs'):
    """Time each peer runs times on the model, the order reversed every
    other round.  No warm-up round: every run has a fresh mount, so no
    peer meets a cache another one filled, and the model's time is
    sleeps.  Returns {peer: {'times', 'cpu', 'model_cpu', 'requests' (per
    run, by kind), 'failed'}}."""
    names = [n for n, _ in peers]
    tmpl = dict(peers)
    res = {n: {'times': [], 'cpu': [], 'model_cpu': [], 'requests': [], 'failed': None}
           for n in names}
    m = Mount('tmpfs', '/tmp', '4G')
    try:
        work, empty = os.path.join(m.path, 'w'), os.path.join(m.path, 'empty')
        os.mkdir(work)
        os.mkdir(empty)
        target = os.path.join(work, 't')
        for rnd in range(runs):
            for n in names if rnd % 2 == 0 else list(reversed(names)):
                r = res[n]
                if r['failed']:
                    continue
                make_tree(spec, target)
                with NetFS(work, latency_ms=lat, slots=slots, cache=cache) as fs:
                    argv = fill(tmpl[n], dict(vals, empty=empty,
                                              target=os.path.join(fs.mnt, 't')))
                    cpu0 = fs.cpu()
                    secs, rc, err, _kib, cpu = timed(argv, os.path.join(m.path, 'rss.out'))
                    model_cpu = fs.cpu() - cpu0
                    reqs = fs.stats()
                left = count_entries(target)
                remove(target)
                if rc or left:
                    r['failed'] = f'exit {rc}, {left} entries left: {err}'
                    log(f'netfs {lat} ms: {n} FAILED: {r["failed"]}')
                    continue
                log(f'netfs {lat} ms {slots} slots {" ".join(spec)} round {rnd}: {n}: '
                    f'{secs:.3f} s, {reqs["total"]} requests')
                r['times'].append(secs)
                r['cpu'].append(cpu)
                r['model_cpu'].append(model_cpu)
                r['requests'].append(reqs)
    finally:
        m.close()
    return res


def print_netfs(out, title, entries, res):
    out(f'\n## {title}\n')
    out('| peer | median s | min-max s | vs rm -rf | vs best parallel peer '
        '| requests per entry | ' + ' | '.join(KINDS) + ' | CPU s client | CPU s model |')
    out('| --- ' * (8 + len(KINDS)) + '|')
    med = {n: median(r['times']) for n, r in res.items() if not r['failed']}
    rm = med.get('rm -rf')
    par = min((med[n] for n in PARALLEL if n in med), default=None)
    for n, r in res.items():
        if r['failed']:
            out(f'| {n} | failed: {r["failed"]} |' + ' |' * (6 + len(KINDS)))
            continue
        reqs = r['requests']
        total = median([q['total'] for q in reqs])
        kinds = ' | '.join(str(int(median([q[k] for q in reqs]))) for k in KINDS)
        out(f'| {n} | {med[n]:.2f} | {min(r["times"]):.2f}-{max(r["times"]):.2f} '
            f'| {med[n] / rm:.3f} | ' + (f'{med[n] / par:.2f}' if par else '-')
            + f' | {total / entries:.2f} | {kinds} '
            f'| {median([c for c in r["cpu"] if c is not None] or [0]):.2f} '
            f'| {median(r["model_cpu"]):.2f} |')


def netfs_scenario(mode, peers, vals, runs, out, record, cache='nfs'):
    """Every cell of NETFS_CELLS[mode]; returns nothing (out and record
    take the report and the raw records)."""
    import time
    for lat, slots, tree, spec, most in NETFS_CELLS[mode]:
        n = min(runs, most) if most else runs
        res = netfs_cell(lat, slots, spec, peers, vals, n, cache)
        entries = tree_entries(spec)
        title = (f'netfs, {tree} ({" ".join(spec)}), {lat:g} ms round trip, {slots} slots, '
                 f'--cache={cache}, {n} run{"s" if n > 1 else ""}')
        print_netfs(out, title, entries, res)
        record(dict(date=time.strftime('%Y-%m-%d %H:%M'), kind='netfs', latency_ms=lat,
                    slots=slots, cache=cache, tree=tree, spec=spec, runs=n,
                    entries=entries, peers=res))


def tree_entries(spec):
    """Entries below the top of a tree mktree makes from spec (made once
    and counted)."""
    m = Mount('tmpfs', '/tmp', '4G')
    try:
        t = os.path.join(m.path, 't')
        make_tree(spec, t)
        return count_entries(t)
    finally:
        m.close()

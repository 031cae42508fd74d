#!/usr/bin/python3
"""Draw docs/BENCHMARKS.md's charts from the raw records of the runs it cites.

    bench/charts.py                          # the records the page cites, into docs/img/
    bench/charts.py --local build/bench/quick.jsonl --out /tmp/img --print

--local takes bench/run.py --json records (one line per cell), --slowdisk
bench/slowdisk/bench.py's report.  Every bar is a median of a cell's runs; --print also writes the numbers behind each bar, so
that a chart can be checked against its table.  Needs python3-matplotlib
(make deps-bench).
"""

import argparse
import json
import os
import re
import statistics
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCAL = 'bench/results/2026-12-04/local-mid.jsonl'
SLOWDISK = 'bench/results/2026-12-03/slowdisk.md'

# The delete scenarios that have rm -rf as a peer, in the page's order.
LOCAL_SCENARIOS = ['flat', 'rflat', 'wide', 'deep', 'big']
LOCAL_PEERS = [('rsync-de --delete-only', 'rsync-de --delete-only', '#1f77b4'),
               ('stock -a --delete', 'rsync 3.5.1 -a --delete', '#aaaaaa')]

# (label, model, fs, tree) for the slow-disk chart; 100 x 400 files.
SLOW_CELLS = [('hdd, shuffled', 'hdd', 'ext4-j4', 'shuffled'),
              ('hdd, cp -al snapshot', 'hdd', 'ext4-j4', 'snapshot'),
              ('cloud 400 IOPS, shuffled', 'cloud', 'ext4-j4', 'shuffled'),
              ('cloud 400 IOPS, snapshot', 'cloud', 'ext4-j4', 'snapshot'),
              ('hdd, created in order', 'hdd', 'ext4-j4', 'in-order'),
              ('hdd, one dir of 40,000', 'hdd', 'ext4-j4', 'flat')]
# One directory, by its size: (files, the journal, records, cell) for the
# cost-per-file chart; stock's runs stopped early count at their rate.
SCALE_POINTS = [(40000, '4 MiB', ['bench/results/2026-12-07/scale-ded70d6.jsonl',
                                  'bench/results/2026-12-07/list-ahead-cells.jsonl',
                                  'bench/results/2026-12-05/slowdisk-flat.jsonl',
                                  'bench/results/2026-12-03/slowdisk.jsonl']),
                (250000, '4 MiB', ['bench/results/2026-12-06/slowdisk-250k-dir.jsonl',
                                   'bench/results/2026-12-06/slowdisk-250k-dir-stock.jsonl']),
                # The million: rsync-de 8d6ca39 (the inode tables pushed,
                # batches CO-CR) beside rm -rf (CQ); rm -rf also from
                # batches BA-BM (edb84f2's); stock and find -delete from
                # 2026-12-06.
                (1000000, '16 MiB', ['bench/results/2026-12-07/push-1m.jsonl',
                                     'bench/results/2026-12-07/slowdisk-million-dir-slide.jsonl',
                                     'bench/results/2026-12-07/slowdisk-million-dir-ahead.jsonl',
                                     'bench/results/2026-12-06/slowdisk-million-dir.jsonl'])]
# Trees of 1,000 files a directory, shuffled, at about 62,000 files per
# MiB of journal from 250,000 on (the 40,000-file cell: 10,000).
# 40,000: 8d6ca39 (the inode tables pushed) beside rm -rf, 2026-12-07
# batch CQ; 250,000: ded70d6 beside rm -rf and stock, batch CA
# (scale-ded70d6.jsonl has its 40,000 too; 2026-12-06/scale-*.jsonl
# b9d0de6's, and stock's 40,000).
TREE_POINTS = [(40000, '4 MiB', ['bench/results/2026-12-07/push-1m.jsonl']),
               (250000, '4 MiB', ['bench/results/2026-12-07/scale-ded70d6.jsonl']),
               # The million: rsync-de 8d6ca39, three runs (batches
               # CO-CR), rm -rf beside it (CQ); rm -rf and stock beside
               # 7fc5357 (batch AK, scale-1m-dirahead.jsonl: the builds
               # before; scale-1m-quarter.jsonl, scale-1m-holes.jsonl and
               # scale-1m.jsonl older ones).
               (1000000, '16 MiB', ['bench/results/2026-12-07/push-1m.jsonl',
                                    'bench/results/2026-12-07/scale-1m-dirahead.jsonl']),
               # Four million: rsync-de with its holes peeked (7b8a01e),
               # rm -rf and stock side by side (2026-12-06/scale-4m*.jsonl
               # have the builds before).
               (4000000, '64 MiB', ['bench/results/2026-12-07/scale-4m-peek.jsonl'])]
# Peers recorded under another name: scale-1m's "cur" is rsync-de at
# 59c374f (bench/results/2026-12-06/NOTES.md, "Trees at scale").
PEER_ALIASES = {'cur': 'rsync-de'}
# Where a size has runs of these builds, they alone are rsync-de's: the
# windows that take the directories the fds allow (ef4304d; 89d71ab
# bounds their entries at 393,216, which the million's do not reach),
# and whose holes are filled (b170855, run at the million); the cells
# they left alone (40,000 and 250,000: windows of fewer directories)
# keep the earlier builds' runs.  The first with runs at a size stands
# for it, as in docs/BENCHMARKS.md's table (the million's records name
# the build before this one's "rsync-de-before").  The one directory of
# a million (SCALE_POINTS): edb84f2, whose reads of it fill across; of
# 40,000: ded70d6 (2026-12-07 batch CC; 6a72117 read it ahead first).
# 8d6ca39, which writes the inode tables home behind its orders, stands
# where it ran: the trees' 40,000 and million, one directory of a
# million.
RSYNC_DE_BUILDS = ('rsync-de@8d6ca39', 'rsync-de@ded70d6', 'rsync-de@edb84f2', 'rsync-de@6a72117', 'rsync-de@b170855',
                   'rsync-de@89d71ab', 'rsync-de@ef4304d')
SLOW_PEERS = [('rsync-de', 'rsync-de --delete-only', '#1f77b4'),
              ('rm', 'rm -rf', '#d62728'),
              ('stock', 'rsync 3.5.1 --delete', '#aaaaaa')]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def local_ratios(records):
    """{(fs, scenario): {peer: median / rm -rf's median}} of the cold cells."""
    out = {}
    for r in records:
        if r.get('kind') != 'cell' or r.get('cache') != 'cold':
            continue
        peers = r['peers']
        rm = peers.get('rm -rf')
        if r['scenario'] not in LOCAL_SCENARIOS or not rm or rm['failed']:
            continue
        base = statistics.median(rm['times'])
        out[(r['fs'], r['scenario'])] = {
            p: statistics.median(v['times']) / base
            for p, v in peers.items() if not v['failed']}
    return out


def local_table(records):
    """docs/BENCHMARKS.md's table of the fast local disks, in Markdown."""
    names = {'flat': 'flat 100,000', 'rflat': 'rflat 100,000', 'wide': 'wide 200 x 500',
             'deep': 'deep 2,000 x 50', 'big': 'big 4,000 x 1 MiB', 'sync': 'sync 100 x 1,000'}
    de, dea, st, rm = ('rsync-de --delete-only', 'rsync-de -a --delete',
                       'stock -a --delete', 'rm -rf')
    cells = {(r['fs'], r['scenario']): r['peers'] for r in records
             if r.get('kind') == 'cell' and r.get('cache') == 'cold'}
    out = ['| fs | tree | rsync-de --delete-only s | rm -rf s | stock -a --delete s '
           '| --delete-only vs rm -rf | vs stock | -a --delete vs stock |',
           '| --- | --- | --- | --- | --- | --- | --- | --- |']

    def med(peers, p):
        v = peers.get(p)
        return statistics.median(v['times']) if v and not v['failed'] else None

    for fs in ('ext4', 'xfs', 'tmpfs'):
        for sc in names:
            peers = cells.get((fs, sc))
            if not peers:
                continue
            m = {p: med(peers, p) for p in (de, dea, st, rm)}
            sec = lambda p: f'{m[p]:.3f}' if m[p] else ('fails' if p in peers else 'not timed')  # noqa: E731
            rat = lambda a, b: f'{m[a] / m[b]:.2f}' if m[a] and m[b] else '-'  # noqa: E731
            out.append(f'| {fs} | {names[sc]} | {sec(de)} | {sec(rm) if rm in peers else "-"} '
                       f'| {sec(st)} | {rat(de, rm)} | {rat(de, st)} | {rat(dea, st)} |')
    return '\n'.join(out)


def slow_medians(path):
    """{(model, fs, tree): {peer: median seconds}} of the 100 x 400 cells
    in bench/slowdisk/bench.py's report, the first cell of each.

    The report, not the JSON lines: several cells ran at once, so their
    records interleave and carry no cell of their own; the report wrote
    each cell's table as it ended.
    """
    out = {}
    key = None
    with open(path) as f:
        for line in f:
            m = re.match(r'### (\S+), (\S+), (\S+) 100 x 400 \((\d+) rounds', line)
            if line.startswith('### '):
                key = (m.group(1), m.group(2), m.group(3)) if m and int(m.group(4)) >= 3 else None
                if key in out:
                    key = None
                elif key:
                    out[key] = {}
                continue
            cols = [c.strip() for c in line.split('|')]
            if key and len(cols) > 3 and re.fullmatch(r'[\d.]+', cols[2]):
                out[key][cols[1]] = float(cols[2])
    return out


# Every form of the command and a sync's deletions (issue 48): (label,
# records, model, tree, sync fraction, rsync-de's peer, stock's peer).
FORMS = 'bench/results/2026-12-05/forms-{}.jsonl'
BACKUPS = 'bench/results/2026-12-06/backup-{}.jsonl'
SYNCS_64 = 'bench/results/2026-12-05/sync-{}.jsonl'
SYNCS = 'bench/results/2026-12-06/sync-{}.jsonl'
FORM_CELLS = [
    ('hdd: -av --delete empty/ t/', FORMS, 'hdd', 'shuffled', 0, 'rsync-de-v', 'stock'),
    ('hdd: --log-file', FORMS, 'hdd', 'shuffled', 0, 'rsync-de-log', 'stock'),
    ('hdd: --max-delete', FORMS, 'hdd', 'shuffled', 0, 'rsync-de-maxdel', 'stock'),
    ('hdd: a stock client pushing', FORMS, 'hdd', 'shuffled', 0, 'stock-push', 'stock'),
    ('hdd: --backup --backup-dir', BACKUPS, 'hdd', 'shuffled', 0, 'rsync-de-backup',
     'stock-backup'),
    ('hdd: sync deleting 50%', SYNCS, 'hdd', 'shuffled', 0.5, 'sync-rsync-de', 'sync-stock'),
    ('hdd: sync deleting 10%', SYNCS, 'hdd', 'shuffled', 0.1, 'sync-rsync-de', 'sync-stock'),
    ('hdd: sync into a cp -al snapshot', SYNCS_64, 'hdd', 'snapshot', 0.5, 'sync-rsync-de',
     'sync-stock'),
    ('cloud: -av --delete empty/ t/', FORMS, 'cloud', 'shuffled', 0, 'rsync-de-v', 'stock'),
    ('cloud: --backup --backup-dir', BACKUPS, 'cloud', 'shuffled', 0, 'rsync-de-backup',
     'stock-backup'),
    ('cloud: sync deleting 50%', SYNCS, 'cloud', 'shuffled', 0.5, 'sync-rsync-de', 'sync-stock'),
    ('cloud: sync deleting 10%', SYNCS, 'cloud', 'shuffled', 0.1, 'sync-rsync-de', 'sync-stock'),
]


def form_medians():
    """{(label, 'de'|'stock'): median seconds} of FORM_CELLS, from the
    bench/slowdisk/bench.py --json records they name."""
    runs = {}
    for label, tmpl, model, tree, sync, de, stock in FORM_CELLS:
        path = os.path.join(TOP, tmpl.format(model))
        if not os.path.exists(path):
            continue
        for r in read_jsonl(path):
            # The first sync records kept the fraction in `sync`
            # (bench/results/2026-12-05/NOTES.md).
            frac = r.get('sync_fraction', r.get('sync', 0) if r['peer'].startswith('sync-') else 0)
            if r['model'] != model or r['tree'] != tree or frac != sync:
                continue
            for side, peer in (('de', de), ('stock', stock)):
                if r['peer'] == peer:
                    runs.setdefault((label, side), []).append(r['secs'])
    return {k: statistics.median(v) for k, v in runs.items()}


def chart_forms(plt, med, path, show):
    labels = [c[0] for c in FORM_CELLS if (c[0], 'de') in med]
    if not labels:
        sys.exit('charts: no records of the forms and syncs')
    series = [('rsync-de', '#1f77b4', [med.get((lb, 'de')) for lb in labels]),
              ('rsync 3.5.1', '#aaaaaa', [med.get((lb, 'stock')) for lb in labels])]
    seconds_chart(plt, labels, series, 'seconds, command + sync (lower is faster)',
                  'Slow disks (disk model): every form, and a sync, 40,000 files', path)
    if show:
        for lb in labels:
            print(f'{path}: {lb}: rsync-de {med[(lb, "de")]:.1f} s, '
                  f'stock {med.get((lb, "stock"), 0):.1f} s')


def bars(ax, labels, series, xlabel, fmt, missing=''):
    """Grouped horizontal bars, each with its value written at its end.

    series is [(legend, colour, [value per label])]; a value of None (the
    peer failed or was not run) gets the text `missing` instead of a bar.
    """
    n = len(series)
    h = 0.8 / n
    for i, (legend, colour, values) in enumerate(series):
        ys = [j + (i - (n - 1) / 2) * h for j in range(len(labels))]
        ax.barh(ys, [v or 0 for v in values], height=h, color=colour, label=legend)
        for y, v in zip(ys, values):
            ax.text(v or 0, y, ' ' + (fmt.format(v) if v else missing),
                    va='center', fontsize='x-small')
    ax.margins(x=0.15)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.grid(axis='x', alpha=0.3)


def seconds_chart(plt, labels, series, xlabel, title, path):
    """The slow-disk charts: seconds a bar, the legend below."""
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(labels) + 1.4))
    bars(ax, labels, series, xlabel, '{:.1f}')
    ax.set_title(title)
    ax.legend(loc='upper center', bbox_to_anchor=(0.5, -0.15), ncol=len(series),
              fontsize='small')
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches='tight', metadata={'Software': None})


def chart_local(plt, ratios, path, show):
    cells = [(fs, sc) for fs in ('ext4', 'xfs', 'tmpfs') for sc in LOCAL_SCENARIOS
             if (fs, sc) in ratios]
    if not cells:
        sys.exit('charts: no cold delete cells with rm -rf in the local records')
    labels = [f'{fs} {sc}' for fs, sc in cells]
    series = [(legend, colour, [ratios[c].get(peer) for c in cells])
              for peer, legend, colour in LOCAL_PEERS]
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(cells) + 1.4))
    bars(ax, labels, series, 'time relative to rm -rf (lower is faster)', '{:.2f}',
         missing='not timed')
    ax.axvline(1.0, color='#d62728', linewidth=1, label='rm -rf')
    ax.set_title('Fast local disks, cold cache, 100,000 files')
    ax.legend(loc='lower right', fontsize='small')
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches='tight', metadata={'Software': None})
    if show:
        for label, c in zip(labels, cells):
            print(f'{path}: {label}: ' + ', '.join(
                f'{p} {ratios[c][p]:.2f}' for p, _, _ in LOCAL_PEERS if p in ratios[c]))


def chart_slow(plt, med, path, show):
    cells = [c for c in SLOW_CELLS if c[1:] in med]
    if not cells:
        sys.exit('charts: no 100 x 400 cells in the slow-disk records')
    labels = [c[0] for c in cells]
    series = [(legend, colour, [med[c[1:]].get(peer) for c in cells])
              for peer, legend, colour in SLOW_PEERS]
    seconds_chart(plt, labels, series, 'seconds, delete + sync (lower is faster)',
                  'Slow disks (disk model): 40,000 files, ext4, 4 MiB journal', path)
    if show:
        for label, c in zip(labels, cells):
            print(f'{path}: {label}: ' + ', '.join(
                f'{p} {med[c[1:]][p]:.1f} s' for p, _, _ in SLOW_PEERS if p in med[c[1:]]))


def scale_costs(points, tree):
    """{(files, peer): median ms per file} of a tree shape on hdd.  A run
    stopped early counts at its rate; a peer named NAME@BUILD is NAME."""
    runs = {}
    for files, _, paths in points:
        for path in paths:
            if not os.path.exists(os.path.join(TOP, path)):
                continue
            for r in read_jsonl(os.path.join(TOP, path)):
                if (r.get('tree') != tree or r.get('model') != 'hdd' or
                        r['dirs'] * r['files'] != files or r.get('sync_fraction')):
                    continue
                secs = r['secs'] if not r.get('stopped') else \
                    r['secs'] * r['entries'] / max(r['freed'], 1)
                peer = r['peer'].split('@')[0]
                peer = PEER_ALIASES.get(peer, peer)
                runs.setdefault((files, peer), []).append(1000 * secs / files)
                if r['peer'] in RSYNC_DE_BUILDS:
                    runs.setdefault((files, r['peer']), []).append(1000 * secs / files)
    for files, _, _ in points:
        # The first of RSYNC_DE_BUILDS with runs at this size stands for it.
        got = [b for b in RSYNC_DE_BUILDS if (files, b) in runs]
        if got:
            runs[(files, 'rsync-de')] = runs[(files, got[0])]
        for b in RSYNC_DE_BUILDS:
            runs.pop((files, b), None)
    return {k: statistics.median(v) for k, v in runs.items()}


def chart_scale(plt, cost, points, title, path, show):
    """Milliseconds per file against the number of files, log-log."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for peer, legend, colour in SLOW_PEERS:
        pts = [(f, cost[(f, peer)]) for f, _, _ in points if (f, peer) in cost]
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], 'o-', color=colour, label=legend)
        for f, c in pts:
            ax.annotate(f'{c:.2f}', (f, c), textcoords='offset points', xytext=(4, 4),
                        fontsize='x-small')
        if show:
            print(f'{path}: {legend}: ' + ', '.join(f'{f} {c:.3f} ms' for f, c in pts))
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xticks([f for f, _, _ in points])
    ax.set_xticklabels([f'{f:,}\n{j} journal' for f, j, _ in points], fontsize='small')
    ax.set_ylabel('ms per file, delete + sync (lower is faster)')
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize='small')
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches='tight', metadata={'Software': None})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--local', default=os.path.join(TOP, LOCAL), help='bench/run.py records')
    ap.add_argument('--slowdisk', default=os.path.join(TOP, SLOWDISK),
                    help="bench/slowdisk/bench.py's report (Markdown)")
    ap.add_argument('--out', default=os.path.join(TOP, 'docs', 'img'), help='directory for the PNGs')
    ap.add_argument('--print', action='store_true', help='print the value behind every bar')
    ap.add_argument('--table', action='store_true',
                    help="print the page's table of the --local records and draw nothing")
    a = ap.parse_args()
    if a.table:
        print(local_table(read_jsonl(a.local)))
        return
    try:
        import matplotlib
    except ImportError:
        sys.exit('charts: needs python3-matplotlib (make deps-bench)')
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    os.makedirs(a.out, exist_ok=True)
    chart_local(plt, local_ratios(read_jsonl(a.local)), os.path.join(a.out, 'local.png'), a.print)
    chart_slow(plt, slow_medians(a.slowdisk), os.path.join(a.out, 'slowdisk.png'), a.print)
    chart_forms(plt, form_medians(), os.path.join(a.out, 'forms.png'), a.print)
    chart_scale(plt, scale_costs(SCALE_POINTS, 'flat'), SCALE_POINTS,
                'Slow disk (hdd model): one directory, by its size',
                os.path.join(a.out, 'scale.png'), a.print)
    chart_scale(plt, scale_costs(TREE_POINTS, 'shuffled'), TREE_POINTS,
                'Slow disk (hdd model): shuffled trees of 1,000-file directories',
                os.path.join(a.out, 'scale-trees.png'), a.print)


if __name__ == '__main__':
    main()

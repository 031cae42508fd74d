"""The summary tables of one or several runs' records
(bench/run.py --summarize).
"""

from .common import median
from .peers import SSHFS, SSHFS_TARGET, SSH_PEERS, TAIL, target_vs_rm, target_vs_stock
from .cells import Cell, print_cell, slowdisk_bench
from .dd import print_dd, win2
from .polite import print_polite


# ---- Summary -----------------------------------------------------------------

DE = ('rsync-de --delete-only', 'rsync-de -a --delete')


def details(records, out):
    """Every cell's own table again, from --json records."""
    for r in records:
        sz = ' '.join(r['spec'])
        title = f'{r["fs"]}, {r["scenario"]} ({sz}), {r["cache"]} cache, {r["date"]}'
        if r['kind'] == 'dd':
            names = list(r['rows'])
            print_dd(out, f'{r["fs"]}, dd {r["dd_mib"]} MiB next to deleting {sz} '
                     f'({r["cache"]} cache, {r["date"]})'
                     + (f', throttled {r["throttle"]}' if r['throttle'] else ''), names, r['rows'])
            continue
        names = list(r['peers'])
        cell = Cell(names)
        for n, p in r['peers'].items():
            cell.times[n], cell.rss[n] = p['times'], p['rss_kib']
            cell.cpu[n] = p.get('cpu', [])
            cell.link[n] = [tuple(x) for x in p.get('link', [])]
            if p['failed']:
                cell.failed[n] = p['failed']
        if r['scenario'] == 'ssh':
            print_cell(out, title, names, cell, base=(SSH_PEERS[0][0], 'rm -rf'),
                       cpu_what=', with sshd and the far side' if r.get('remote_cpu') else '')
        else:
            print_cell(out, title, names, cell)
        out(f'\nmount: {r["mount"]}')


def cpu_ratio(r):
    """'push / local = ratio' of rsync-de's median CPU seconds in an ssh
    cell, or '-' for records made before the far side's CPU was counted."""
    push, local = (r['peers'].get(SSH_PEERS[i][0]) or {} for i in (1, 0))
    if not r.get('remote_cpu') or not push.get('cpu') or not local.get('cpu'):
        return '-'
    a, b = median(push['cpu']), median(local['cpu'])
    return f'{a:.3f} / {b:.3f} = {a / b:.2f}' if b else '-'


def medians(r):
    """Peer name -> median seconds of a cell record (None: failed)."""
    return {n: median(p['times']) if not p['failed'] else None for n, p in r['peers'].items()}


def table_head(out, title, cols, note=None):
    """A summary table's title, note and header row."""
    out(f'\n## {title}\n')
    if note:
        out(note + '\n')
    out('| ' + ' | '.join(cols) + ' |')
    out('|' + ' --- |' * len(cols))


def summarize(records, out):
    """The ratio table over every delete/sync cell, then ssh and dd."""
    cells = [r for r in records if r['kind'] == 'cell'
             and r['scenario'] not in ('ssh', 'snapshot-expiry') + SSHFS]
    snaps = [r for r in records if r['kind'] == 'cell' and r['scenario'] == 'snapshot-expiry']
    if snaps:
        table_head(out, 'Summary: snapshot expiry, rsync-rm against rm -rf',
                   ['tree (and its cp -al copy)', 'fs', 'cache', 'rsync-rm -rf s',
                    'rm -rf s', 'ratio (target 0.55)'])
    for r in snaps:
        med = medians(r)
        de, rm = med.get('rsync-rm -rf'), med.get('rm -rf')
        if not de or not rm:
            out(f'| {" ".join(r["spec"])} | {r["fs"]} | {r["cache"]} | failed | | |')
            continue
        v = f'{de / rm:.2f}'
        out(f'| {" ".join(r["spec"])} | {r["fs"]} | {r["cache"]} | {de:.3f} | {rm:.3f} '
            f'| {f"**{v}**" if de / rm > 0.55 else v} |')
    if cells:
        out('\n## Summary: rsync-de against rm -rf and stock rsync (ratio of medians)\n')
        out('Ratios below 1 mean rsync-de is faster.  "target" is issue 6\'s limit; '
            '**bold** marks a miss.\n')
        out('| scenario | fs | cache | --delete-only vs rm -rf (target) | vs stock (target) '
            '| -a --delete vs rm -rf | vs stock | rm -rf s | stock s | rsync-de peak RSS MiB |')
        out('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for r in cells:
        med = medians(r)
        rm, st = med.get('rm -rf'), med.get('stock -a --delete')

        def ratio(n, base, limit=None):
            if med.get(n) is None:
                return 'failed' if n in r['peers'] else '-'
            if not base:
                st_failed = (r['peers'].get('stock -a --delete') or {}).get('failed')
                return 'stock fails' if base is st and st_failed else '-'
            v = med[n] / base
            s = f'{v:.2f}'
            if limit is not None:
                s = (f'**{s}**' if v > limit else s) + f' ({limit:.2f})'
            return s
        lim_rm = target_vs_rm(r['scenario'], r['fs'].split('-')[0])
        lim_st = target_vs_stock(r['scenario'])
        rss = max((r['peers'][n]['rss_kib'] for n in DE if n in r['peers']), default=0)
        sz = ' '.join(a for a in r['spec'] if not a.startswith('-'))
        out(f'| {r["scenario"]} ({sz}) | {r["fs"]} | {r["cache"]} '
            f'| {ratio(DE[0], rm, lim_rm if r["scenario"] != "sync" else None)} '
            f'| {ratio(DE[0], st, lim_st)} | {ratio(DE[1], rm)} | {ratio(DE[1], st, lim_st if r["scenario"] == "sync" else None)} '
            f'| {f"{rm:.3f}" if rm else "-"} '
            f'| {f"{st:.3f}" if st else ("failed" if "stock -a --delete" in r["peers"] else "-")} '
            f'| {rss / 1024:.1f} |')
    sshs = [r for r in records if r['kind'] == 'cell' and r['scenario'] == 'ssh']
    if sshs:
        table_head(out, 'Summary: push over ssh to localhost against the same delete run locally',
                   ['tree', 'fs', 'cache', 'rsync-de ssh push s', 'rsync-de local s',
                    'ssh / local (issue 5: <= 1.15)', 'stock ssh / local',
                    'rsync-de ssh vs rm -rf', 'ssh login alone s', '(push - login) / local',
                    'push over an open connection / local', 'CPU s push (both ends) / local'])
    for r in sshs:
        med = medians(r)
        de_s, de_l = med.get(SSH_PEERS[1][0]), med.get(SSH_PEERS[0][0])
        st_s, st_l = med.get(SSH_PEERS[3][0]), med.get(SSH_PEERS[2][0])
        rm = med.get('rm -rf')
        sz = ' '.join(a for a in r['spec'] if not a.startswith('-'))
        f = lambda x: f'{x:.3f}' if x else 'failed'
        q = lambda a, b: f'{a / b:.2f}' if a and b else '-'
        login = med.get(SSH_PEERS[-1][0])
        out(f'| {sz} | {r["fs"]} | {r["cache"]} | {f(de_s)} | {f(de_l)} | {q(de_s, de_l)} '
            f'| {q(st_s, st_l)} | {q(de_s, rm)} | {f(login) if login else "-"} '
            f'| {q(de_s - login, de_l) if login and de_s else "-"} '
            f'| {q(med.get(SSH_PEERS[4][0]), de_l)} | {cpu_ratio(r)} |')
    fuse = [r for r in records if r['kind'] == 'cell' and r['scenario'] in SSHFS]
    if fuse:
        table_head(out, 'Summary: on an sshfs mount over loopback (ratio of medians)',
                   ['tree', 'fs', 'rsync-de s', 'vs rm -rf (target)',
                    'vs stock -a --delete (target)', 'vs find -delete', 'rm -rf s', 'stock s',
                    'find s', 'rsync-de CPU s: own, sshfs + ssh, sshd + sftp-server'],
                   'Issue 19\'s targets in brackets; **bold** marks a miss.')
    for r in fuse:
        med = medians(r)
        de, rm = med.get(DE[0]), med.get('rm -rf')
        st, fd = med.get('stock -a --delete'), med.get('find -delete')
        lim = SSHFS_TARGET.get(r['scenario'])

        def q(a, b, limit=None):
            if not a or not b:
                return '-'
            s = f'{a / b:.2f}'
            return s if limit is None else (f'**{s}**' if a / b > limit else s) + f' ({limit:.2f})'
        p = r['peers'].get(DE[0]) or {}
        link = p.get('link') or []
        cpu = '-'
        if p.get('cpu') and link:
            cpu = (f'{median(p["cpu"]):.3f}, {median([x[0] for x in link]):.3f}, '
                   f'{median([x[1] for x in link]):.3f}')
        def f(x, n=None):
            return f'{x:.3f}' if x else 'failed' if n is None or n in r['peers'] else '-'
        sz = ' '.join(a for a in r['spec'] if not a.startswith('-'))
        out(f'| {sz} | {r["fs"]} | {f(de, DE[0])} | {q(de, rm, lim)} '
            f'| {q(de, st, lim if r["scenario"] == "sshfs" else None)} | {q(de, fd)} '
            f'| {f(rm, "rm -rf")} | {f(st, "stock -a --delete")} | {f(fd, "find -delete")} '
            f'| {cpu} |')
    sd = [r for r in records if r['kind'] == 'slowdisk']
    if sd:
        mod = slowdisk_bench()
        for r in sd:
            out(f'\n## Summary: slowdisk {r["title"]}\n')
            out(mod.table(r['rows'], list(r['rows'])))
    for r in (r for r in records if r['kind'] == 'polite'):
        print_polite(out, f'Summary: {r["fs"]}, {" ".join(r["spec"])}, {r["throttle"]}',
                     list(r['rows']['writer']), r['rows'])
    dds = [r for r in records if r['kind'] == 'dd']
    if dds:
        out('\n## Summary: dd writer next to a deletion\n')
        out('| fs | cache | throttle | dd alone MB/s | deleter | delete s | dd MB/s whole run '
            f'| dd MB/s during delete | dd MB/s to {TAIL:g} s after it | during vs alone |')
        out('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for r in dds:
        alone = median(r['rows']['dd alone']['dd'])
        for n, p in r['rows'].items():
            if n == 'dd alone':
                continue
            if p['failed']:
                out(f'| {r["fs"]} | {r["cache"]} | {r["throttle"] or "-"} | {alone:.1f} | {n} | failed | | | | |')
                continue
            out(f'| {r["fs"]} | {r["cache"]} | {r["throttle"] or "-"} | {alone:.1f} | {n} '
                f'| {median(p["del"]):.3f} | {median(p["dd"]):.1f} | {median(p["win"]):.1f} '
                f'| {win2(p)} | {median(p["win"]) / alone:.2f} |')


# ---- Main --------------------------------------------------------------------

"""The polite scenario: --delete-polite next to a writer, on an
idle disk, and beside a writer that stops; its timelines and plots.
"""

import os
import subprocess
import threading
import time

from .common import count_entries, drop_caches, log, median, remove, sh, sync_fs
from .peers import fill
from .devices import loop_stat
from .cells import make_tree
from .dd import start_writer, wait_for_eighth


NO_PSI = ['unshare', '-m', 'sh', '-c', 'mount --bind /dev/null /proc/pressure/io && exec "$@"',
          'sh']
POLITE_ADAPT_PEERS = [
    ('full', ['{top}/rsync', '--delete-only', '{empty}/', '{target}/']),
    ('fixed pace', NO_PSI + ['{top}/rsync', '--delete-only', '--delete-polite', '{empty}/',
                             '{target}/']),
    ('adaptive', ['{top}/rsync', '--delete-only', '--delete-polite', '{empty}/', '{target}/']),
]
POLITE_TICK = 0.1	# s between samples of the writer and the deletion
POLITE_STOP = 3.0	# s into the deletion when the writer is stopped


class Timeline:
    """Samples, every POLITE_TICK, dd's file size and the entries left in
    the target, in a thread: (t, bytes, left) from the deletion's start."""

    def __init__(self, ddout, target, t0):
        self.ddout, self.target, self.t0 = ddout, target, t0
        self.rows, self.stop = [], threading.Event()
        self.th = threading.Thread(target=self.run)
        self.th.start()

    def run(self):
        while not self.stop.is_set():
            size = os.path.getsize(self.ddout) if os.path.exists(self.ddout) else 0
            self.rows.append((time.monotonic() - self.t0, size, count_entries(self.target)))
            self.stop.wait(POLITE_TICK)

    def end(self):
        self.stop.set()
        self.th.join()
        return self.rows


def write_back_left(m):
    """Seconds to write back what is still dirty on m's file system, the
    throttle still on: sync -f (data, and the journal's commit), then a
    freeze and a thaw (ext4 checkpoints its journal, xfs pushes its log:
    the metadata written in place).  That is a deletion's deferred cost,
    which the flusher pays later, after a writer's run ends or not."""
    t0 = time.monotonic()
    sync_fs(m.path)
    sh(['fsfreeze', '-f', m.path], check=True)
    try:
        return time.monotonic() - t0
    finally:
        sh(['fsfreeze', '-u', m.path], check=True)


def polite_scenario(m, spec, peers, vals, runs, dd_mib, throttle, plots, out=print):
    """Issue 20: --delete-polite next to a dd writer (oflag=direct,dsync,
    started first; the deletion starts when it has written 1/8), on an
    idle disk, and next to a writer that stops POLITE_STOP s into the
    deletion.  Peers alternate, first round dropped, fresh tree per run,
    settled (fresh()), cold cache.  Reports the deletion's time, the writer's MB/s during
    the deletion and over its whole run against dd alone, the deletion's
    time on an idle disk against full speed's, and how long after the
    writer stopped the adaptive deletion ran at full speed.  And, when
    the writer ends, the write-back still left (write_back_left(), the
    throttle on; a deletion still running waits for it, and its time is
    not counted) and the writer's whole run with it added: what the
    deletion cost the disk while the writer ran, wherever the flusher
    would have put it.  And the device's writes over the writer's run
    (sectors and requests, from dd's start to its end): what the
    deletion added to them is its cost to the disk while the writer ran,
    counted rather than timed.  plots: a directory for PNG timelines
    (writer MB/s and removals a second)."""
    names = [n for n, _ in peers]
    tmpl = dict(peers)
    target = os.path.join(vals['work'], 't')
    ddout = os.path.join(m.path, 'dd.out')
    total = dd_mib << 20
    dev = m.device()
    rec = {'alone': [], 'alone_wb': [], 'alone_io': [], 'idle': {n: [] for n in names},
           'stop': [], 'writer': {n: {'del': [], 'dd': [], 'win': [], 'wb': [], 'dd_wb': [],
                                      'io': []} for n in names}}

    def writes(since=None):
        """The device's (sectors, requests) written so far, or since."""
        if not dev:
            return None
        _, sectors, reqs = loop_stat(dev)
        return (sectors, reqs) if since is None else (sectors - since[0], reqs - since[1])
    lines = {}

    def fresh(tree=True):
        """A new tree, settled and a cold cache, then the throttle.  A
        tree that is deleted has long been written in place; one just
        made has not (xfs keeps its inodes and btree blocks logged but
        dirty, and drop_caches leaves dirty buffers be), and a deletion
        that frees those buffers before they are written back saves the
        writer their write-back: it would look cheap for it.  So the
        write-back is done first, unthrottled (write_back_left())."""
        if throttle:
            throttle.off()
        remove(target)
        if os.path.exists(ddout):
            os.unlink(ddout)
        if tree:
            make_tree(spec, target)
        write_back_left(m)
        drop_caches(m.path)
        if throttle:
            throttle.on()

    def delete(n):
        return subprocess.Popen(fill(tmpl[n], dict(vals, target=target)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                preexec_fn=throttle.preexec if throttle else None)

    def check(n, dp):
        left = count_entries(target)
        if dp.returncode or left:
            raise OSError(f'{n}: exit {dp.returncode}, {left} left: '
                          f'{dp.stderr.read().decode(errors="replace")[-300:]}')

    for rnd in range(runs + 1):
        order = names if rnd % 2 == 0 else list(reversed(names))
        try:
            # The writer alone.
            fresh(tree=False)
            t0, io0 = time.monotonic(), writes()
            dd = start_writer(ddout, dd_mib, throttle)
            dd.wait()
            took, io_alone = time.monotonic() - t0, writes(io0)
            alone = total / took / 1e6
            alone_wb = total / (took + write_back_left(m)) / 1e6
            # Next to the writer.
            for n in order:
                fresh()
                t0, io0 = time.monotonic(), writes()
                dd = start_writer(ddout, dd_mib, throttle)
                wait_for_eighth(dd, ddout, total)
                d0, s0 = time.monotonic(), os.path.getsize(ddout)
                tl = Timeline(ddout, target, d0)
                dp = delete(n)
                dd_end = wb = io = None
                while dp.poll() is None:
                    if dd_end is None and dd.poll() is not None:
                        # The deletion waits out the freeze: not its time.
                        dd_end, io = time.monotonic(), writes(io0)
                        wb = write_back_left(m)
                    time.sleep(0.002)
                d1, s1 = time.monotonic() - (wb or 0), os.path.getsize(ddout)
                dd.wait()
                t1 = dd_end or time.monotonic()
                if dd_end is None:
                    io = writes(io0)
                if wb is None:
                    wb = write_back_left(m)
                rows = tl.end()
                check(n, dp)
                if dd.returncode:
                    raise OSError('dd failed')
                # If dd ended first, "during" is the overlap.
                win = (s1 - s0) / max(min(d1, dd_end or d1) - d0, 1e-6) / 1e6
                whole = total / (t1 - t0) / 1e6
                whole_wb = total / (t1 - t0 + wb) / 1e6
                log(f'{m.fs} polite round {rnd}: {n}: delete {d1 - d0:.3f} s, dd during it '
                    f'{win:.1f} MB/s, whole run {whole:.1f} MB/s (alone {alone:.1f}), '
                    f'write-back left {wb:.2f} s, with it {whole_wb:.1f} MB/s '
                    f'(alone {alone_wb:.1f})' + (
                        f', device wrote {io[0] / 2048:.1f} MiB in {io[1]} requests '
                        f'(alone {io_alone[0] / 2048:.1f} MiB in {io_alone[1]})' if io else ''))
                if rnd:
                    r = rec['writer'][n]
                    r['del'].append(d1 - d0)
                    r['win'].append(win)
                    r['dd'].append(whole)
                    r['wb'].append(wb)
                    r['dd_wb'].append(whole_wb)
                    r['io'].append(io)
                    lines[n] = rows
            # An idle disk.
            for n in order:
                fresh()
                d0 = time.monotonic()
                dp = delete(n)
                dp.wait()
                took = time.monotonic() - d0
                check(n, dp)
                log(f'{m.fs} polite round {rnd}: {n} on an idle disk: {took:.3f} s')
                if rnd:
                    rec['idle'][n].append(took)
            # The writer stops POLITE_STOP s into an adaptive deletion
            # (when 'adaptive' is among the peers).
            if 'adaptive' in tmpl:
                fresh()
                dd = start_writer(ddout, dd_mib, throttle)
                wait_for_eighth(dd, ddout, total)
                d0 = time.monotonic()
                tl = Timeline(ddout, target, d0)
                dp = delete('adaptive')
                while dp.poll() is None and time.monotonic() < d0 + POLITE_STOP:
                    time.sleep(0.005)
                stopped = time.monotonic() - d0
                dd.kill()
                dd.wait()
                dp.wait()
                d1 = time.monotonic() - d0
                rows = tl.end()
                check('adaptive', dp)
                log(f'{m.fs} polite round {rnd}: writer stopped at {stopped:.2f} s, '
                    f'deletion done at {d1:.2f} s')
                if rnd:
                    rec['stop'].append({'stopped': stopped, 'done': d1, 'rows': rows})
            if rnd:
                rec['alone'].append(alone)
                rec['alone_wb'].append(alone_wb)
                rec['alone_io'].append(io_alone)
        finally:
            if throttle:
                throttle.off()
    remove(target)
    if os.path.exists(ddout):
        os.unlink(ddout)
    print_polite(out, f'{m.fs}, {" ".join(spec)}' +
                 (f', throttled {throttle.describe()}' if throttle else ''), names, rec)
    rec['lines'] = lines	# the last counted round's timelines, for plots
    if plots:
        plot_polite(plots, f'{m.fs}-{"-".join(spec)}'.replace(' ', ''), names, lines,
                    rec['stop'], rec['alone'])
    return rec


def print_polite(out, title, names, rec):
    """The polite scenario's table; the idle-disk ratio is against full
    speed, and reads "-" when full speed was not among the peers."""
    alone = median(rec['alone'])
    full_idle = median(rec['idle'].get('full', []))
    out()
    out(f'### {title}')
    out()
    out(f'dd alone: {alone:.1f} MB/s.')
    out()
    out('| deleter | delete s next to dd | dd MB/s during it | of dd alone '
        '| dd MB/s whole run | of dd alone | delete s, idle disk | of full speed |')
    out('| --- | --- | --- | --- | --- | --- | --- | --- |')
    for n in names:
        r = rec['writer'][n]
        win, whole, idle = median(r['win']), median(r['dd']), median(rec['idle'][n])
        ratio = f'{idle / full_idle:.2f}' if full_idle else '-'
        out(f'| {n} | {median(r["del"]):.3f} | {win:.1f} | {win / alone:.2f} '
            f'| {whole:.1f} | {whole / alone:.2f} | {idle:.3f} | {ratio} |')
    if rec.get('alone_wb'):
        # Records from before 2026-12-02's second run have no write-back.
        alone_wb = median(rec['alone_wb'])
        out()
        out(f'With the write-back left when the writer ends (throttled) added to its '
            f'whole run; dd alone: {alone_wb:.1f} MB/s.')
        out()
        out('| deleter | write-back left s | dd MB/s whole run with it | of dd alone |')
        out('| --- | --- | --- | --- |')
        for n in names:
            r = rec['writer'][n]
            with_wb = median(r['dd_wb'])
            out(f'| {n} | {median(r["wb"]):.2f} | {with_wb:.1f} | {with_wb / alone_wb:.2f} |')
    ios = [x for x in rec.get('alone_io', []) if x]
    if ios:
        # Records from before 2026-12-02's fourth run have no device counts.
        a_mib, a_req = median([x[0] for x in ios]) / 2048, median([x[1] for x in ios])
        out()
        out(f"The device's writes over the writer's run (dd's start to its end); "
            f'dd alone: {a_mib:.1f} MiB in {a_req:.0f} requests.')
        out()
        out('| deleter | MiB written | beyond dd alone | write requests | beyond dd alone |')
        out('| --- | --- | --- | --- | --- |')
        for n in names:
            io = [x for x in rec['writer'][n].get('io', []) if x]
            if io:
                mib, req = median([x[0] for x in io]) / 2048, median([x[1] for x in io])
                out(f'| {n} | {mib:.1f} | {mib - a_mib:+.1f} | {req:.0f} | {req - a_req:+.0f} |')
    st = rec['stop']
    if not st:
        return
    out()
    out('Writer stopped during an adaptive deletion: stopped at '
        + ', '.join(f'{x["stopped"]:.2f}' for x in st) + ' s; deletion done at '
        + ', '.join(f'{x["done"]:.2f}' for x in st) + ' s'
        + (f' (full speed on an idle disk: {full_idle:.3f} s).' if full_idle else '.'))


def rates(rows):
    """(t, writer MB/s, removals/s) per sample interval of a Timeline."""
    got = []
    for (ta, ba, la), (tb, bb, lb) in zip(rows, rows[1:]):
        dt = max(tb - ta, 1e-6)
        got.append((tb, (bb - ba) / dt / 1e6, max(la - lb, 0) / dt))
    return got


def plot_timeline(path, title, series, alone=None, mark=None):
    """A PNG at path: the writer's MB/s (top) and the removals a second
    (bottom) against time, one line per (label, Timeline rows) in series;
    alone: dd alone's MB/s, mark: the time the writer stopped."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    for label, rows in series:
        r = rates(rows)
        a1.plot([x[0] for x in r], [x[1] for x in r], label=label)
        a2.plot([x[0] for x in r], [x[2] for x in r], label=label)
    if alone:
        a1.axhline(alone, color='grey', linestyle=':', label='dd alone')
    if mark is not None:
        for a in (a1, a2):
            a.axvline(mark, color='red', linestyle='--', label='the writer stops')
    a1.set_ylabel('writer MB/s')
    a2.set_ylabel('removals / s')
    a2.set_yscale('symlog', linthresh=100)
    a2.set_xlabel('seconds since the deletion started')
    (a2 if mark is not None else a1).legend(fontsize='small')
    a1.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_polite(plots, stem, names, lines, stops, alone):
    """The timelines of the last counted round: each deleter next to the
    writer, and the adaptive deletion whose writer stops."""
    os.makedirs(plots, exist_ok=True)
    plot_timeline(os.path.join(plots, f'polite-{stem}.png'), f'{stem}: next to a dd writer',
                  [(n, lines.get(n, [])) for n in names], alone=median(alone))
    if stops:
        st = stops[-1]
        plot_timeline(os.path.join(plots, f'polite-stop-{stem}.png'),
                      f'{stem}: the writer stops during an adaptive deletion',
                      [('adaptive', st['rows'])], mark=st['stopped'])


# ---- The slowdisk scenario (issue 35) -------------------------------------

# Cells: (model, fs, tree, dirs, files); bench/slowdisk/bench.py runs each.

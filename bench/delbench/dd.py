"""The dd scenario: a writer next to the deletion.
"""

import os
import subprocess
import time

from .common import count_entries, drop_caches, log, median, remove, sync_fs
from .peers import TAIL, fill
from .cells import make_tree


def start_writer(ddout, dd_mib, throttle, stderr=subprocess.DEVNULL):
    """The dd and polite scenarios' writer: dd_mib MiB to ddout with
    oflag=direct,dsync, in the throttle's group when there is one."""
    return subprocess.Popen(['dd', 'if=/dev/zero', f'of={ddout}', 'bs=1M',
                             f'count={dd_mib}', 'oflag=direct,dsync'],
                            stdout=subprocess.DEVNULL, stderr=stderr,
                            preexec_fn=throttle.preexec if throttle else None)


def wait_for_eighth(dd, ddout, total):
    """Until the writer has written 1/8 of its total bytes (or ended), so
    that a deletion started then meets it in steady state."""
    while dd.poll() is None and (not os.path.exists(ddout) or
                                 os.path.getsize(ddout) < total // 8):
        time.sleep(0.005)


def dd_scenario(m, spec, cache, peers, vals, runs, dd_mib, throttle=None, out=print):
    """A dd writer (oflag=direct,dsync, dd_mib MiB) runs alone and next to
    the deletion of a fresh tree (bench/mktree spec) by each peer.  Rounds
    alternate the peers and "alone", the first round is dropped.  The
    deletion starts once dd has written 1/8 of its data, so it meets a
    writer in steady state.  Reported per peer: the deletion's time, the
    writer's MB/s over its whole run and during the deletion (bytes dd
    wrote between the deleter's start and end, from the size of its file),
    and the same for dd alone.  throttle: a Throttle, on while dd runs.
    peers: list of (name, argv template).  Returns the record for --json.

    This is the function to reuse for a polite mode: pass its peer with
    --peer NAME=CMD --scenarios dd, and --throttle for a slow disk."""
    names = ['dd alone'] + [n for n, _ in peers]
    tmpl = dict(peers)
    rec = {n: {'del': [], 'dd': [], 'win': [], 'win2': [], 'rss': 0, 'failed': None}
           for n in names}
    target = os.path.join(vals['work'], 't')
    ddout = os.path.join(m.path, 'dd.out')
    total = dd_mib << 20
    for rnd in range(runs + 1):
        order = names if rnd % 2 == 0 else list(reversed(names))
        for n in order:
            if rec[n]['failed']:
                continue
            remove(target)
            if os.path.exists(ddout):
                os.unlink(ddout)
            make_tree(spec, target)
            if cache == 'cold':
                drop_caches(m.path)
            else:
                sync_fs(m.path)
            if throttle:
                throttle.on()
            try:
                t0 = time.monotonic()
                dd = start_writer(ddout, dd_mib, throttle, stderr=subprocess.PIPE)
                dd_end = None
                if n != 'dd alone':
                    wait_for_eighth(dd, ddout, total)
                    argv = fill(tmpl[n], dict(vals, target=target))
                    rss_file = os.path.join(m.path, 'rss.out')
                    if os.path.exists('/usr/bin/time'):
                        argv = ['/usr/bin/time', '-f', '%M', '-o', rss_file] + argv
                    s0, d0 = os.path.getsize(ddout), time.monotonic()
                    dp = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE,
                                          preexec_fn=throttle.preexec if throttle else None)
                    d1 = s1 = None
                    while d1 is None:
                        if dp.poll() is not None:
                            d1, s1 = time.monotonic(), os.path.getsize(ddout)
                        elif dd_end is None and dd.poll() is not None:
                            dd_end, dd_size = time.monotonic(), os.path.getsize(ddout)
                        else:
                            time.sleep(0.002)
                    # The file system may write back what the deletion
                    # dirtied after the deleter is gone (ext4's journal
                    # commits, xfs's inode GC): also measure the writer
                    # from the deletion's start to TAIL s after its end.
                    d2 = s2 = None
                    while d2 is None:
                        if dd_end is None and dd.poll() is not None:
                            dd_end, dd_size = time.monotonic(), os.path.getsize(ddout)
                        if dd_end is not None:
                            d2, s2 = dd_end, dd_size
                        elif time.monotonic() >= d1 + TAIL:
                            d2, s2 = time.monotonic(), os.path.getsize(ddout)
                        else:
                            time.sleep(0.002)
                    err = dp.stderr.read().decode(errors='replace').strip().splitlines()
                    if os.path.exists(rss_file):
                        words = open(rss_file).read().split()
                        os.unlink(rss_file)
                        if words and words[-1].isdigit():
                            rec[n]['rss'] = max(rec[n]['rss'], int(words[-1]))
                    # If dd ended first, the window is the overlap.
                    if dd_end is not None and dd_end < d1:
                        win = (dd_size - s0) / max(dd_end - d0, 1e-6) / 1e6
                    else:
                        win = (s1 - s0) / max(d1 - d0, 1e-6) / 1e6
                    win2 = (s2 - s0) / max(d2 - d0, 1e-6) / 1e6
                    left = count_entries(target)
                    if dp.returncode or left:
                        rec[n]['failed'] = f'exit {dp.returncode}, {left} left: {err[-1] if err else ""}'
                dd.wait()
                # The writer's own run: it may have ended while the
                # deleter still ran.
                t1 = dd_end or time.monotonic()
            finally:
                if throttle:
                    throttle.off()
            ddmbs = total / (t1 - t0) / 1e6
            if dd.returncode:
                raise OSError(f'dd failed: {dd.stderr.read().decode(errors="replace")}')
            log(f'{m.fs} dd {cache} round {rnd}: {n}: dd {ddmbs:.1f} MB/s'
                + ('' if n == 'dd alone' else f', delete {d1 - d0:.3f} s, dd during it {win:.1f} MB/s'
                   f', to {TAIL:g} s after it {win2:.1f} MB/s'))
            if rnd and not rec[n]['failed']:
                rec[n]['dd'].append(ddmbs)
                if n != 'dd alone':
                    rec[n]['del'].append(d1 - d0)
                    rec[n]['win'].append(win)
                    rec[n]['win2'].append(win2)
    remove(target)
    if os.path.exists(ddout):
        os.unlink(ddout)
    print_dd(out, f'{m.fs}, dd {dd_mib} MiB next to deleting {" ".join(spec)} ({cache} cache)'
             + (f', throttled {throttle.describe()}' if throttle else ''), names, rec)
    return rec


# ---- The polite scenario (issue 20) -------------------------------------

# Deleters: full speed, --delete-polite as it adapts, and the same binary
# with /proc/pressure/io hidden (an empty file bound over it in a mount
# namespace), which is --delete-polite's fixed pace: 500 removals a
# second in one burst a second.


def win2(r):
    """The median dd MB/s to TAIL s after the delete ('-' in older records)."""
    return f'{median(r["win2"]):.1f}' if r.get('win2') else '-'


def print_dd(out, title, names, rec):
    out(f'\n## {title}\n')
    out('| deleter | delete median s (min-max) | dd MB/s, whole run (min-max) '
        f'| dd MB/s during the delete | dd MB/s to {TAIL:g} s after it '
        '| whole run vs dd alone | peak RSS MiB |')
    out('| --- | --- | --- | --- | --- | --- | --- |')
    alone = median(rec['dd alone']['dd'])
    for n in names:
        r = rec[n]
        if r['failed']:
            out(f'| {n} | failed: {r["failed"]} | | | | | |')
            continue
        dd = median(r['dd'])
        dds = f'{dd:.1f} ({min(r["dd"]):.1f}-{max(r["dd"]):.1f})'
        if n == 'dd alone':
            out(f'| (none: dd alone) | - | {dds} | - | - | 1.00 | - |')
            continue
        out(f'| {n} | {median(r["del"]):.3f} ({min(r["del"]):.3f}-{max(r["del"]):.3f}) '
            f'| {dds} | {median(r["win"]):.1f} | {win2(r)} | {dd / alone:.2f} '
            f'| {r["rss"] / 1024:.1f} |')

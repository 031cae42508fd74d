#!/usr/bin/python3
"""Time deleters side by side on identical, freshly generated trees.

Usage: bench/run.py [--quick] [--runs N] [--fs ext4,xfs,xfs-lb256k,btrfs,tmpfs]
                    [--scenarios flat,rflat,wide,deep,big,sync,ssh,dd,small,
                                 sshfs,sshfs-flat,slowdisk,netfs,snapshot-expiry]
                    [--cache cold,warm] [--peers NAME,...] [--peer NAME=CMD]
                    [--throttle wbps=20M,wiops=200] [--dir DIR]
                    [--json FILE] [--out FILE]
       bench/run.py --summarize FILE.jsonl ...

For each filesystem (a loop image or a tmpfs mounted here when run as root,
always unmounted and removed afterwards, also on ctrl-C; otherwise --dir, a
directory the user names), each cache state and each scenario, every peer
deletes a fresh tree made by bench/mktree, the peers alternating within a
round (forward, then reversed).  The first round is a warm-up and is not
counted.  "cold" drops the page cache after making the tree, "warm" only
syncs.  Each cell reports median seconds, min-max, the ratio of medians to
rm -rf and to stock rsync, and peak RSS (GNU time's %M: the largest single
process, not the sum); then CPU, cores, kernel and mount line.  Every
number comes from this run; --json appends raw records that --summarize
turns into the summary table again (several runs can be combined).

Scenarios, full size [--size mid] [--quick]:
  flat    500,000 files, sequential names   [100,000] [20,000]
  rflat   500,000 files, random names       [100,000] [20,000]
  wide    1,000 dirs x 1,000 files          [200 x 500] [100 x 200]
  deep    2,000 levels x 50 files           [same] [500 x 20]
  big     4,000 files of 1 MiB              [same] [250]
  small   100 dirs x 1,000 files of 4 KiB, the seed's small-file case
          (run it on xfs)                   [20 x 1,000] [20 x 500]
  sync    rsync -a --delete SRC/ DST/: DST has 1,000 x 1,000 files, SRC
          every second one with equal mtimes, so the run only deletes half
                                            [100 x 1,000] [40 x 500]
  ssh     --delete-only empty/ 127.0.0.1:T/ through a throwaway sshd on
          loopback, against the same delete run locally: 100 x 1,000
                                            [same] [20 x 1,000]
  sshfs   the delete peers on an sshfs mount (FUSE, over a throwaway
          sshd on loopback) of the filesystem under test, each run on a
          fresh mount; also reports the CPU of sshfs and its ssh client,
          and of sshd and sftp-server: 20 x 500        [same] [same]
  sshfs-flat  the same, 10,000 files in one directory  [same] [same]
  slowdisk  the disk model (bench/slowdisk): each peer deletes a copy of
          one image through a fresh hdd or cloud model, delete + sync -f
          timed; 100 x 400 files created in a shuffled order (and its
          cp -al copy, one flat directory of 40,000, 100 x 400 in order)
          on ext4 with a 4 MiB journal, and the shuffled tree on ext4's
          own journal and on xfs; reports the model's requests, bytes
          and seeks.  Whole cells run once, whatever --fs and --cache
          say                               [same] [hdd, shuffled, 50 x 400]
  netfs   the network file system model (bench/netfs): each peer
          deletes through a fresh mount of the model, every request a
          round trip, 16 in flight at most; 100 x 200, a flat directory
          of 10,000 and a chain of 500 levels, at 0.2 ms and 2 ms, and
          100 x 200 with 64 slots (the flat directory at 2 ms once);
          no warm-up round, each run on a fresh mount; reports the
          requests by kind and the CPU of the client and of the model.
          Runs once, whatever --fs and --cache say; --netfs-cache=none
          turns the kernel's caches off     [same] [2 ms, 20 x 100]
  snapshot-expiry  rsnapshot's expiry: a tree and its `cp -al` copy,
          made afresh for every run; rsync-rm -rf and rm -rf remove the
          copy: 300 x 1,000                [200 x 500] [100 x 200]
  dd      a dd writer (oflag=direct,dsync, 1 GiB) next to the deletion of
          4,000 fragmented 1 MiB files, by each peer
                                            [512 MiB, 1,000] [128 MiB, 250]

--peer 'NAME=CMD' adds a deleter (to every delete scenario and to dd);
CMD is split like a shell line and may use {top} (the checkout), {empty},
{target}, e.g. --peer 'fast={top}/rsync --delete-only --delete-polite --delete-rate=2000 {empty}/ {target}/'.
--throttle limits the loop device's I/O while dd runs (blkio on cgroup v1,
io.max on cgroup v2), to make the virtual disk behave like a slow one.
--polite runs the dd scenario with issue 8's deleters (full speed, rsync's
--delete-polite, --delete-rate alone, rm -rf); the dd figures include the writer's
rate from the deletion's start to 2 s after its end, which is where a
full-speed deletion's deferred write-back lands.
"""

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from delbench.common import BENCH, TOP, log, reporter, run_cleanups, sh  # noqa: E402
from delbench.peers import DD_MIB, DD_PEERS, DELETE_PEERS, POLITE_PEERS, SIZES, SNAPSHOT_PEERS, SSHFS, SSHFS_PEERS, SSH_PEERS, SYNC_PEERS, rimraf_path, versions  # noqa: E402
from delbench.devices import FS, Mount, Sshfs, Throttle, sshdlib, start_sshd  # noqa: E402
from delbench.cells import SLOWDISK_CELLS, SLOWDISK_PEERS, print_cell, run_cell, slowdisk_bench  # noqa: E402
from delbench.dd import dd_scenario  # noqa: E402
from delbench.netfs import NETFS_PEERS, netfs_scenario  # noqa: E402
from delbench.polite import POLITE_ADAPT_PEERS, polite_scenario  # noqa: E402
from delbench.report import details, summarize  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split('\n\n', 2)[2])
    ap.add_argument('--quick', action='store_true',
                    help='make bench: --size quick, and unless given --fs ext4 --scenarios '
                    'flat,rflat,wide,deep,big,sync,ssh,dd')
    ap.add_argument('--size', choices=('quick', 'mid', 'full'), default='full',
                    help='tree sizes (see above; default full)')
    ap.add_argument('--runs', type=int, default=3, help='counted runs per cell (default 3)')
    ap.add_argument('--fs', default=None,
                    help='ext4, xfs, xfs-lb256k (logbsize=256k), btrfs, tmpfs '
                    '(default ext4,xfs,tmpfs)')
    ap.add_argument('--scenarios', default=None, help='default: flat,rflat,wide,deep,big,sync,ssh')
    ap.add_argument('--cache', default='cold', help='cold, warm or cold,warm')
    ap.add_argument('--peers', default='',
                    help='only these peers in the delete and dd scenarios (names as printed)')
    ap.add_argument('--peer', action='append', default=[], metavar='NAME=CMD',
                    help='an extra deleter; CMD may use {top} {empty} {target}')
    ap.add_argument('--dd-peers', default=','.join(DD_PEERS),
                    help='deleters for the dd scenario (default: %(default)s)')
    ap.add_argument('--polite', action='store_true',
                    help='dd scenario: the polite deleters (issue 8) instead of --dd-peers')
    ap.add_argument('--dd-mib', type=int, default=None, help='dd size (default 1024, quick 256)')
    ap.add_argument('--plots', default=None, metavar='DIR',
                    help='polite scenario: write PNG timelines here')
    ap.add_argument('--throttle', default=None, metavar='wbps=20M,wiops=200',
                    help='limit the loop device while dd runs')
    ap.add_argument('--tree', action='append', default=[], metavar='SCENARIO=ARGS',
                    help='other mktree arguments for a scenario, e.g. "flat=flat 200000"')
    ap.add_argument('--netfs-cache', default='nfs', choices=('nfs', 'none'),
                    help='netfs scenario: the kernel caches (bench/netfs/README.md)')
    ap.add_argument('--img-size', default='16G', help='loop image / tmpfs size')
    ap.add_argument('--dir', default=None, help='non-root: where to make trees')
    ap.add_argument('--json', default=None, help='append raw records (JSON lines) here')
    ap.add_argument('--out', default=None, help='also write the report here')
    ap.add_argument('--summarize', nargs='+', default=None, metavar='FILE.jsonl',
                    help='print the summary tables of earlier --json runs')
    ap.add_argument('--details', action='store_true',
                    help='with --summarize: every cell\'s table too')
    a = ap.parse_args()
    if a.plots:
        # Before any measuring: a run of an hour must not end without
        # its records for want of the plotter.
        try:
            import matplotlib	# noqa: F401
        except ImportError:
            ap.error('--plots needs matplotlib (Debian: python3-matplotlib; '
                     'rsync-src/deps.sh bench installs it)')

    out = reporter(a.out)
    if a.summarize:
        recs = [json.loads(l) for f in a.summarize for l in open(f) if l.strip()]
        summarize(recs, out)
        if a.details:
            details(recs, out)
        return

    sh(['make', '-s', '-C', BENCH, 'mktree'], check=True, stdout=subprocess.DEVNULL)
    mode = 'quick' if a.quick else a.size
    if a.fs is None:
        a.fs = 'ext4' if a.quick else 'ext4,xfs,tmpfs'
    if a.scenarios is None:
        a.scenarios = 'flat,rflat,wide,deep,big,sync,ssh' + (',dd' if a.quick else '')
    sizes = dict(SIZES[mode])
    for t in a.tree:
        sc, args = t.split('=', 1)
        sizes[sc] = shlex.split(args)
    dd_mib = a.dd_mib or DD_MIB[mode]
    scenarios = a.scenarios.split(',')
    for s in scenarios:
        if s not in sizes:
            sys.exit(f'bench: unknown scenario {s}')
    root = os.geteuid() == 0
    fss = a.fs.split(',') if root and not a.dir else ['dir']
    for fs in fss:
        if fs not in FS and fs not in ('tmpfs', 'dir'):
            sys.exit(f'bench: unknown filesystem {fs}')
    base = a.dir or tempfile.gettempdir()

    vals = {'top': TOP}
    want = a.peers.split(',') if a.peers else None
    extra = []
    for p in a.peer:
        name, cmd = p.split('=', 1)
        extra.append((name, shlex.split(cmd)))

    def usable(peers, filtered=True):
        got = []
        for n, t in peers:
            if n.startswith('ssh '):
                got.append((n, t))
                continue
            if filtered and want and n not in want and n not in dict(extra):
                continue
            exe = t[0].format(top=TOP, rimraf=vals.get('rimraf') or '')
            if not exe or not (shutil.which(exe) or os.access(exe, os.X_OK)):
                continue
            got.append((n, t))
        return got
    if any(s not in ('sync', 'ssh') for s in scenarios) and (not want or 'rimraf' in want):
        vals['rimraf'] = rimraf_path()
    delete_peers = usable(DELETE_PEERS + extra)
    dd_names = a.dd_peers.split(',') + [n for n, _ in extra]
    dd_peers = [(n, t) for n, t in delete_peers if n in dd_names]
    if a.polite:
        sh(['make', '-s', '-C', os.path.join(TOP, 'delete_engine'), 'tools'], check=True,
           stdout=subprocess.DEVNULL)
        dd_peers = usable(POLITE_PEERS, False) + [(n, t) for n, t in dd_peers if n in dict(extra)]

    sshd = None
    if any(s in scenarios for s in ('ssh',) + SSHFS):
        try:
            sshd = start_sshd()
            vals['ssh'], vals['sshmux'] = sshd.user_ssh, sshd.mux
        except (sshdlib.Unavailable, sshdlib.StartFailed) as e:
            log(f'ssh and sshfs scenarios skipped: {e}')
            scenarios = [s for s in scenarios if s not in ('ssh',) + SSHFS]

    jsonf = open(a.json, 'a') if a.json else None
    records = []

    def record(r):
        records.append(r)
        if jsonf:
            jsonf.write(json.dumps(r) + '\n')
            jsonf.flush()

    out(f'# rsync-de deletion benchmark, {time.strftime("%Y-%m-%d %H:%M %Z")}')
    out()
    out(f'{a.runs} counted runs per cell after one warm-up round, peers alternated, '
        f'fresh tree per run. Ratios are of medians; < 1 means faster than the peer named.'
        + (' (netfs: no warm-up round; each run on a fresh mount.)' if 'netfs' in scenarios
           else ''))
    out(f'Command: bench/run.py {" ".join(shlex.quote(x) for x in sys.argv[1:])}')
    if 'slowdisk' in scenarios:
        mod = slowdisk_bench()
        names = [n for n in SLOWDISK_PEERS if not want or n in want]
        for model, fs, tree, dirs, files in SLOWDISK_CELLS['quick' if mode == 'quick' else 'full']:
            rows, text = mod.run_cell(model, [], fs, tree, dirs, files, '2G', names, a.runs,
                                      log=log)
            out(text)
            record(dict(date=time.strftime('%Y-%m-%d %H:%M'), kind='slowdisk',
                        title=text.split('\n')[1].lstrip('# '), model=model, fs=fs,
                        tree=tree, dirs=dirs, files=files, runs=a.runs, rows=rows))
        scenarios = [s for s in scenarios if s != 'slowdisk']
    if 'netfs' in scenarios:
        peers = usable([(n, t) for n, t in NETFS_PEERS if not want or n in want], False) \
            + usable(extra, False)
        netfs_scenario('quick' if mode == 'quick' else 'full', peers, vals, a.runs, out,
                       record, a.netfs_cache)
        scenarios = [s for s in scenarios if s != 'netfs']
    mounts = []
    for fs in fss:
        m = Mount(fs, base, a.img_size)
        try:
            mounts.append(m.mount_line())
            work = os.path.join(m.path, 'w')
            os.mkdir(work)
            empty = os.path.join(m.path, 'empty')
            os.mkdir(empty)
            vals.update(empty=empty, work=work)
            for cache in a.cache.split(','):
                for sc in scenarios:
                    spec = sizes[sc]
                    title = f'{fs}, {sc} ({" ".join(spec)}), {cache} cache'
                    now = dict(date=time.strftime('%Y-%m-%d %H:%M'), fs=fs, cache=cache,
                               scenario=sc, spec=spec, runs=a.runs, mount=m.mount_line())
                    if sc == 'polite':
                        thr = Throttle(a.throttle, m.device()) if a.throttle and m.device() \
                            else None
                        peers = [(n, t) for n, t in POLITE_ADAPT_PEERS
                                 if not want or n in want] + extra
                        rec = polite_scenario(m, spec, peers, vals, a.runs,
                                              dd_mib, thr, a.plots, out)
                        record(dict(now, kind='polite', dd_mib=dd_mib, rows=rec,
                                    throttle=thr.describe() if thr else None))
                        continue
                    if sc == 'dd':
                        thr = None
                        if a.throttle:
                            if m.device():
                                thr = Throttle(a.throttle, m.device())
                            else:
                                log(f'{fs}: not a block device, dd runs unthrottled')
                        rec = dd_scenario(m, spec, cache, dd_peers, vals, a.runs, dd_mib,
                                          thr, out)
                        record(dict(now, kind='dd', dd_mib=dd_mib, rows=rec,
                                    throttle=thr.describe() if thr else None))
                        continue
                    user = fuse = None
                    if sc in SSHFS:
                        peers = [(n, t) for n, t in delete_peers
                                 if n in SSHFS_PEERS or n in dict(extra)]
                        # The server's view: the login user's tree.  empty/
                        # is the user's too, so that stock's -a has no
                        # owner to change on T/ (sftp-server, running as
                        # the user, cannot chown: exit 23).
                        user = sshd.as_user
                        os.chown(work, sshd.pw.pw_uid, sshd.pw.pw_gid)
                        os.chown(empty, sshd.pw.pw_uid, sshd.pw.pw_gid)
                        try:
                            fuse = Sshfs(sshd, work, os.path.join(m.path, 'mnt'))
                        except sshdlib.Unavailable as e:
                            log(f'{sc} skipped: {e}')
                            continue
                    elif sc == 'snapshot-expiry':
                        peers = usable(SNAPSHOT_PEERS, False) + usable(extra, False)
                    elif sc == 'sync':
                        # --peer adds to these too, with {src} the source.
                        peers = usable(SYNC_PEERS, False) + usable(extra, False)
                    elif sc == 'ssh':
                        # --peer adds to these too: {ssh} and {sshmux}
                        # name the login's ssh command lines.
                        peers = usable(SSH_PEERS, False) + usable(extra, False)
                        user = sshd.as_user
                        os.chown(work, sshd.pw.pw_uid, sshd.pw.pw_gid)
                    else:
                        peers = delete_peers
                    try:
                        cell = run_cell(m, sc, spec, cache, peers, vals, a.runs, user,
                                        remote_cpu=sshd.cpu if sc in ('ssh',) + SSHFS
                                        else None, sshfs=fuse)
                    finally:
                        if sc in ('ssh',) + SSHFS:
                            os.chown(work, 0, 0)
                            os.chown(empty, 0, 0)
                        if fuse:
                            fuse.umount()
                            fuse.cpu.close()
                    names = [n for n, _ in peers]
                    if sc == 'ssh':
                        print_cell(out, title, names, cell,
                                   base=(SSH_PEERS[0][0], 'rm -rf'),
                                   cpu_what=', with sshd and the far side' if sshd.cpu.path
                                   else '')
                    elif sc == 'snapshot-expiry':
                        print_cell(out, title, names, cell, base=('rm -rf', 'rm -rf'))
                    else:
                        print_cell(out, title, names, cell)
                    if sc == 'ssh':
                        now['remote_cpu'] = bool(sshd.cpu.path)
                    record(dict(now, kind='cell', peers={
                        n: {'times': cell.times[n], 'rss_kib': cell.rss[n],
                            'cpu': cell.cpu[n], 'link': cell.link[n],
                            'failed': cell.failed.get(n)}
                        for n in names}))
        finally:
            m.close()
    summarize(records, out)
    out()
    cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo')
                if l.startswith('model name')), platform.processor())
    out(f'CPU: {cpu}; cores: {os.cpu_count()}; kernel: {platform.release()}')
    for line in versions(vals):
        out(f'peer: {line}')
    for line in mounts:
        out(f'mount: {line}')


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt as e:
        run_cleanups()
        sys.exit(f'bench: interrupted ({e}); scratch mounts and images removed')

#!/usr/bin/python3
"""Who writes while the writer stalls: bench/run.py's polite scenario under
a kernel trace of the loop device's bios and of jbd2's checkpoints.

Usage (root; nothing else running):
    bench/trace-polite.py FS TREE RUNS PEERS [OUT]
e.g.
    bench/trace-polite.py ext4 'wide 100 1000' 3 full,adaptive

PEERS are polite_scenario()'s: full, fixed pace, adaptive.

Runs polite_scenario() (bench/run.py) on a fresh FS image with the same
throttle (40 MB/s, 400 write IOPS) and a 512 MiB writer, with tracefs
recording block:block_bio_queue for the loop device only, jbd2's
checkpoint, commit and log-tail events and the flusher's
writeback_start, on the CLOCK_MONOTONIC clock that the scenario's
timelines use.  Then, for every deletion next to the writer, prints each
stretch of 0.4 s or more in which the writer wrote nothing, and the bios
queued from 0.5 s before it to its end (a bio is traced as it is queued,
ahead of the throttle, which the stall then drains), by task and type (W write, S sync, M metadata, F flush and
FUA), in 4 KiB blocks.  The raw trace goes to OUT (default
/var/tmp/trace-polite.txt); it is tens of MB.  Used for
docs/BENCHMARKS.md, "Where ext4's writer stalls".
"""

import collections
import json
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, 'bench'))
from delbench import common, devices, polite  # noqa: E402  (bench/run.py's modules)

TRACEFS = '/sys/kernel/tracing'
EVENTS = ['block/block_bio_queue', 'jbd2/jbd2_checkpoint_stats', 'jbd2/jbd2_update_log_tail',
          'jbd2/jbd2_start_commit', 'writeback/writeback_start']
STALL = 0.4	# s without a byte from the writer
LEAD = 0.5	# s before a stall whose bios count: a bio is traced when it is
		# queued, ahead of the throttle, so a stall drains what came before


def tw(path, value):
    with open(os.path.join(TRACEFS, path), 'w') as f:
        f.write(value)


def record(fs, tree, runs, peers, out):
    """Run the scenario under the trace; returns the timelines as
    [(t0, rows)] with rows (t, writer bytes, entries left)."""
    if not os.path.isdir(os.path.join(TRACEFS, 'events')):
        common.sh(['mount', '-t', 'tracefs', 'nodev', TRACEFS], check=True)
    timelines = []
    end = polite.Timeline.end

    def keep(self):
        rows = end(self)
        timelines.append((self.t0, rows))
        return rows
    polite.Timeline.end = keep
    m = devices.Mount(fs, '/var/tmp', '16G')
    work, empty = os.path.join(m.path, 'w'), os.path.join(m.path, 'empty')
    os.mkdir(work)
    os.mkdir(empty)
    major, minor = map(int, m.device().split(':'))
    throttle = devices.Throttle('wbps=40M,wiops=400', m.device())
    tw('tracing_on', '0')
    tw('trace', '')
    tw('buffer_size_kb', '262144')
    tw('trace_clock', 'mono')
    tw('events/block/block_bio_queue/filter', f'dev == {(major << 20) | minor}')
    for e in EVENTS:
        tw(f'events/{e}/enable', '1')
    tw('tracing_on', '1')
    try:
        polite.polite_scenario(m, tree, [p for p in polite.POLITE_ADAPT_PEERS if p[0] in peers],
                            {'top': TOP, 'work': work, 'empty': empty}, runs, 512,
                            throttle, None)
    finally:
        tw('tracing_on', '0')
        with open(os.path.join(TRACEFS, 'trace')) as src, open(out, 'w') as dst:
            for line in src:
                dst.write(line)
        tw('events/enable', '0')
        tw('events/block/block_bio_queue/filter', '0')
        tw('trace', '')
        common.run_cleanups()
    return timelines


LINE = re.compile(r'\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\S+): (.*)')
BIO = re.compile(r'\d+,\d+ (\S+) \d+ \+ (\d+)')


def report(timelines, out):
    events = []
    with open(out) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                task = re.sub(r'\d+', 'N', m.group(1).strip())
                events.append((float(m.group(3)), task, m.group(4), m.group(5)))
    events.sort()
    for k, (t0, rows) in enumerate(timelines):
        stalls, last = [], rows[0]
        for r in rows[1:]:
            if r[1] != last[1]:
                if r[0] - last[0] >= STALL and last[1]:
                    stalls.append((last[0], r[0]))
                last = r
        print(f'deletion {k + 1}: {rows[-1][0]:.1f} s sampled, entries {rows[0][2]} -> '
              f'{rows[-1][2]}, writer stalls: {len(stalls)}')
        for a, b in stalls:
            bios, blocks, other = collections.Counter(), collections.Counter(), collections.Counter()
            for t, task, name, rest in events:
                if t0 + a - LEAD <= t <= t0 + b:
                    m = BIO.match(rest) if name == 'block_bio_queue' else None
                    if m:
                        bios[(task, m.group(1))] += 1
                        blocks[(task, m.group(1))] += int(m.group(2)) // 8
                    elif name != 'block_bio_queue':
                        other[name] += 1
            print(f'  {a:.2f}-{b:.2f} s: ' + ', '.join(
                f'{task} {rw} {n} bios ({blocks[(task, rw)]} blocks)'
                for (task, rw), n in bios.most_common(4)))
            if other:
                print('    ' + ', '.join(f'{n} {name}' for name, n in other.most_common()))


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    fs, tree, runs, peers = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), sys.argv[4]
    out = sys.argv[5] if len(sys.argv) == 6 else '/var/tmp/trace-polite.txt'
    timelines = record(fs, tree, runs, peers.split(','), out)
    with open(out + '.json', 'w') as f:
        json.dump(timelines, f)
    report(timelines, out)


if __name__ == '__main__':
    main()

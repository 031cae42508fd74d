#!/usr/bin/env python3
"""Who writes what in a run through the disk model: the kernel's own
events, from tracefs (root).

    bench/slowdisk/ktrace.py run IMAGE KTRACE NAME COMMAND...
    bench/slowdisk/ktrace.py who IMAGE KTRACE

`run` deletes as bench.py's one_run() does (a copy of IMAGE through the
hdd model; COMMAND's words with {t}, {d} and {empty} replaced), while
tracefs streams to KTRACE: each bio queued on a loop device (the model's
is one) with the task that queued it, jbd2's transactions and
checkpoints, and the flusher's write-back passes.  It prints one_run()'s
record.  LIMIT=SECS stops the command after SECS, as bench.py's --limit.
Run it alone: every loop device's bios are traced.

`who` counts KTRACE's bios by direction, task and kind of block (kinds as
trace_kinds.py gives them from IMAGE: journal, inode tables, bitmaps,
dirs), and sums the checkpoints (jbd2_checkpoint_stats: buffers written,
dropped, commits forced) and the flusher's passes by reason.  A
checkpoint runs in the task that needs room in the journal, so the
deleting command's own writes of inode-table and directory blocks are
the checkpoints', the flusher's ("kworker") the periodic write-back's,
and jbd2's the journal.  The lab notes of 2026-12-07 have the runs it
explained.
"""
import collections
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import bench  # noqa: E402
import trace_kinds  # noqa: E402

TRACEFS = '/sys/kernel/tracing'
# Loop devices (major 7), as the kernel encodes dev_t in its events.
LOOP_DEVS = 'dev >= %d && dev < %d' % (7 << 20, 8 << 20)
EVENTS = ['block/block_bio_queue', 'jbd2/jbd2_checkpoint_stats', 'jbd2/jbd2_run_stats',
          'jbd2/jbd2_checkpoint', 'jbd2/jbd2_start_commit', 'writeback/writeback_start']


def put(path, value):
    with open(os.path.join(TRACEFS, path), 'w') as f:
        f.write(value)


def events(on):
    for e in EVENTS:
        put(f'events/{e}/enable', '1' if on else '0')


def run(image, ktrace, name, argv):
    if not os.path.isdir(os.path.join(TRACEFS, 'events')):
        subprocess.run(['mount', '-t', 'tracefs', 'nodev', TRACEFS], check=True)
    put('tracing_on', '0')
    put('trace', '')
    put('buffer_size_kb', '65536')
    put('events/block/block_bio_queue/filter', LOOP_DEVS)
    events(True)
    with open(ktrace, 'w') as out:
        cat = subprocess.Popen(['cat', os.path.join(TRACEFS, 'trace_pipe')], stdout=out)
        put('tracing_on', '1')
        try:
            bench.PEERS[name] = argv
            r = bench.one_run(image, 'hdd', name, [],
                              limit=float(os.environ.get('LIMIT', '0')))
        finally:
            put('tracing_on', '0')
            time.sleep(2)
            cat.terminate()
            events(False)
            put('events/block/block_bio_queue/filter', '0')
    print(json.dumps(r))


BIO = re.compile(r'^\s*(.+?)-\d+\s+\[\d+\]\s+\S+\s+[\d.]+: block_bio_queue: '
                 r'\d+,\d+ (\S+) (\d+) \+ (\d+) \[')


def task(comm):
    """A task's name without what follows a slash: jbd2/loop0-8 is jbd2,
    kworker/u8:2 kworker."""
    return comm.split('/')[0]


def who(image, ktrace):
    kind, bsize = trace_kinds.classifier(image)
    bios = collections.Counter()
    blocks = collections.Counter()
    cp = collections.Counter()
    flusher = collections.Counter()
    with open(ktrace) as f:
        for line in f:
            m = BIO.match(line)
            if m and int(m[4]):         # not a flush, which has no data
                key = ('write' if 'W' in m[2] else 'read', task(m[1]),
                       kind(int(m[3]) * 512 // bsize))
                bios[key] += 1
                blocks[key] += int(m[4]) * 512 // bsize
            elif 'jbd2_checkpoint_stats:' in line:
                cp['checkpoints'] += 1
                for k, v in re.findall(r'(forced_to_close|written|dropped) (\d+)', line):
                    cp[k] += int(v)
            elif 'writeback_start:' in line:
                m = re.search(r'reason=(\S+)', line)
                flusher[m[1] if m else '?'] += 1
    print(f'{"dir":6} {"task":16} {"kind":14} {"bios":>9} {"blocks":>9}')
    for key in sorted(bios, key=lambda k: -bios[k]):
        print(f'{key[0]:6} {key[1]:16} {key[2]:14} {bios[key]:9,} {blocks[key]:9,}')
    print('checkpoints:', ', '.join(f'{k} {v:,}' for k, v in cp.items()))
    print('flusher passes:', ', '.join(f'{k} {v}' for k, v in flusher.items()) or 'none')


def main():
    if len(sys.argv) >= 6 and sys.argv[1] == 'run':
        run(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif len(sys.argv) == 4 and sys.argv[1] == 'who':
        who(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__.split('\n\n')[1])


if __name__ == '__main__':
    main()

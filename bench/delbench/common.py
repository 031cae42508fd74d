"""Shared by the bench's modules: paths, logging, clean-up that
survives ctrl-C and SIGTERM, and small file-system helpers.
"""

import atexit
import os
import signal
import statistics
import subprocess
import sys
import time

# bench/delbench/common.py: the checkout is three levels up.
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(TOP, 'bench')
MKTREE = os.path.join(BENCH, 'mktree')
NPM_CACHE = os.path.join(os.path.expanduser('~'), '.cache', 'rsync-de', 'npm')
MTIME = '1000000000'		# sync trees: equal mtimes, so -a updates nothing


# ---- Cleanup that survives ctrl-C and SIGTERM ------------------------------

_cleanups = []


def on_exit(fn):
    """Register fn to run once at exit (latest first); returns fn."""
    _cleanups.append(fn)
    return fn


def run_cleanups():
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception as e:	# cleanup must go on
            print(f'bench: cleanup: {e}', file=sys.stderr)


def _terminate(signum, frame):
    raise KeyboardInterrupt(f'signal {signum}')


atexit.register(run_cleanups)
signal.signal(signal.SIGTERM, _terminate)
signal.signal(signal.SIGHUP, _terminate)


# ---- Helpers -----------------------------------------------------------------

def log(msg):
    print(f'bench: {time.strftime("%H:%M:%S")} {msg}', file=sys.stderr, flush=True)


def sh(argv, **kw):
    return subprocess.run(argv, **kw)


def sync_fs(path):
    """Flush our filesystem only: a global sync waits for everything else
    the (shared) machine is writing."""
    sh(['sync', '-f', path])


def drop_caches(path):
    sync_fs(path)
    try:
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('3\n')
    except OSError as e:
        if not getattr(drop_caches, 'warned', False):
            log(f'cannot drop the page cache ({e.strerror}): "cold" runs are warm')
            drop_caches.warned = True


def count_entries(path, files_only=False):
    """Entries below path (find, not os.walk: deep trees are deeper than
    Python's recursion limit).  0 when path is gone."""
    if not os.path.lexists(path):
        return 0
    argv = ['find', path, '-mindepth', '1']
    if files_only:
        argv += ['-type', 'f']
    return len(sh(argv + ['-printf', '.'], capture_output=True).stdout)


def remove(path):
    if os.path.lexists(path):
        sh(['rm', '-rf', path], check=True)


def reporter(path=None):
    """A function that prints a report line, and appends it to PATH too."""
    outf = open(path, 'a') if path else None

    def out(line=''):
        print(line, flush=True)
        if outf:
            outf.write(line + '\n')
            outf.flush()
    return out


def median(xs):
    return statistics.median(xs) if xs else None

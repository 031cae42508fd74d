"""The disk model (slowdisk.c) as a block device, for the benchmarks and
the tests (root only).

    with SlowDisk(image, 'hdd') as disk:
        run mkfs/mount/... on disk.dev
        disk.stats()    # {'reads': ..., 'seeks': ..., 'model_seconds': ...}

SlowDisk starts the FUSE daemon on a mount point of its own, puts a loop
device on mnt/disk with direct I/O (so that every request the file system
sends reaches the model, none is served from the page cache of the
image), sets the device's rotational flag as the model's (1 for hdd, 0
for cloud, as a cloud volume reports) and the scheduler (mq-deadline, as
for a disk), and undoes it all
on exit.  Whatever is mounted from disk.dev must be unmounted before the
block ends.
"""

import os
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BINARY = HERE / 'slowdisk'


def build() -> Path:
    """Build slowdisk (bench/Makefile) if it is missing or older than its
    source; returns its path."""
    p = subprocess.run(['make', '-s', '-C', str(HERE.parent), 'slowdisk/slowdisk'],
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f'cannot build slowdisk (libfuse3-dev, pkg-config):\n{p.stderr}')
    return BINARY


class SlowDisk:
    def __init__(self, image, model='hdd', options=(), rotational=None,
                 scheduler='mq-deadline'):
        self.image = Path(image)
        self.model = model
        self.options = list(options)
        self.rotational = (model == 'hdd') if rotational is None else rotational
        self.scheduler = scheduler
        self.mnt = None
        self.dev = None

    def __enter__(self):
        binary = build()
        self.mnt = Path(tempfile.mkdtemp(prefix='slowdisk-'))
        try:
            subprocess.run([str(binary), f'--model={self.model}'] + self.options +
                           [str(self.image), str(self.mnt)], check=True,
                           capture_output=True, text=True)
            self.dev = subprocess.run(['losetup', '--direct-io=on', '--show', '-f',
                                       str(self.mnt / 'disk')], check=True,
                                      capture_output=True, text=True).stdout.strip()
            queue = Path('/sys/block') / os.path.basename(self.dev) / 'queue'
            (queue / 'rotational').write_text('1' if self.rotational else '0')
            try:
                (queue / 'scheduler').write_text(self.scheduler)
            except OSError:
                pass	# a kernel without it: the loop device's default
        except (subprocess.CalledProcessError, OSError) as e:
            self.__exit__(None, None, None)
            err = getattr(e, 'stderr', '') or ''
            raise RuntimeError(f'slowdisk: cannot set up the model: {e} {err}'.strip())
        return self

    def stats(self) -> dict:
        """The model's counters: reads, writes, read_bytes, write_bytes,
        seeks, ops (cloud), model_seconds."""
        out = {}
        for line in (self.mnt / 'stats').read_text().splitlines():
            k, v = line.split()
            out[k] = v if k == 'model' else float(v) if '.' in v else int(v)
        return out

    def reset(self) -> None:
        (self.mnt / 'stats').write_text('0\n')

    def __exit__(self, *exc):
        if self.dev:
            # The kernel may still hold the device for a moment after an
            # unmount.
            for _ in range(50):
                if subprocess.run(['losetup', '-d', self.dev],
                                  capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
            self.dev = None
        if self.mnt:
            for _ in range(50):
                if not os.path.ismount(self.mnt) or subprocess.run(
                        ['umount', str(self.mnt)], capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
            else:
                subprocess.run(['umount', '-l', str(self.mnt)], capture_output=True)
            try:
                self.mnt.rmdir()
            except OSError:
                pass
            self.mnt = None
        return False

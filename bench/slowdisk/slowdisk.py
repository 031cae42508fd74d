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
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import fusemodel  # noqa: E402  (bench/fusemodel.py)


class SlowDisk(fusemodel.FuseModel):
    NAME, COUNTERS = 'slowdisk', 'stats'

    def __init__(self, image, model='hdd', options=(), rotational=None,
                 scheduler='mq-deadline'):
        super().__init__()
        self.image = Path(image)
        self.model = model
        self.options = list(options)
        self.rotational = (model == 'hdd') if rotational is None else rotational
        self.scheduler = scheduler
        self.dev = None

    def __enter__(self):
        binary = self.mount_point()
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
        self.close_mount()
        return False

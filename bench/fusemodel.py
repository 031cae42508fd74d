"""What the drivers of the FUSE models share (netfs/netfs.py,
slowdisk/slowdisk.py): building a model, its mount point, and its
counters file.
"""

import os
import subprocess
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def build(target: str) -> Path:
    """Build the model bench/TARGET ('netfs/netfs') with bench/Makefile if
    it is missing or older than its sources; returns its path."""
    p = subprocess.run(['make', '-s', '-C', str(BENCH), target],
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f'cannot build {os.path.basename(target)} '
                           f'(libfuse3-dev, pkg-config):\n{p.stderr}')
    return BENCH / target


def _value(v: str):
    """A counter's value: an int, a float, or a name (slowdisk's model)."""
    for kind in (int, float):
        try:
            return kind(v)
        except ValueError:
            pass
    return v


def counters(path: Path) -> dict:
    """A model's counters file, its "name value" lines as a dict."""
    out = {}
    for line in Path(path).read_text().splitlines():
        k, v = line.split()
        out[k] = _value(v)
    return out


class FuseModel:
    """A model's daemon on a mount point of its own, a fresh directory.
    NAME is the model (bench/NAME/NAME), COUNTERS its counters file."""

    NAME = COUNTERS = None

    def __init__(self):
        self.mnt = None

    def mount_point(self) -> Path:
        """Build the model and make the mount point; returns the binary."""
        binary = build(f'{self.NAME}/{self.NAME}')
        self.mnt = Path(tempfile.mkdtemp(prefix=f'{self.NAME}-'))
        return binary

    def stats(self) -> dict:
        """The counters since the last reset, by name (the model's README
        lists them)."""
        return counters(self.mnt / self.COUNTERS)

    def reset(self) -> None:
        """Set the counters to zero: anything written to the file does."""
        (self.mnt / self.COUNTERS).write_text('0\n')

    def close_mount(self) -> None:
        """Unmount (the daemon then exits), retrying for 5 s while a
        process may still be leaving it, then lazily; remove the mount
        point."""
        if not self.mnt:
            return
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

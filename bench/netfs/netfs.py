"""The network file system model (netfs.c), for the benchmarks and the
tests.

    with NetFS(source, latency_ms=2.0, slots=16) as fs:
        run the tools on fs.mnt (SOURCE, each request a round trip)
        fs.stats()      # {'getattr': ..., 'unlink': ..., 'total': ...}
        fs.cpu()        # seconds of CPU the daemon has used

NetFS starts the FUSE daemon on a mount point of its own and unmounts it
on exit.  FUSE mounts need root, or fusermount3 for a user.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import fusemodel  # noqa: E402  (bench/fusemodel.py)


class NetFS(fusemodel.FuseModel):
    NAME, COUNTERS = 'netfs', '.netfs'

    def __init__(self, source, latency_ms=2.0, slots=16, service_ms=0.05, cache='nfs',
                 options=()):
        super().__init__()
        self.source = Path(source)
        self.args = [f'--latency={latency_ms}', f'--service={service_ms}',
                     f'--slots={slots}', f'--cache={cache}'] + list(options)
        self.pid = None

    def __enter__(self):
        binary = self.mount_point()
        try:
            # -f and a Popen of our own: the daemon's pid, for its CPU.
            self.proc = subprocess.Popen([str(binary)] + self.args +
                                         [str(self.source), str(self.mnt), '-f'],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for _ in range(100):
                if os.path.ismount(self.mnt):
                    break
                if self.proc.poll() is not None:
                    raise RuntimeError(self.proc.stderr.read().decode(errors='replace'))
                time.sleep(0.05)
            else:
                raise RuntimeError('not mounted after 5 s')
            self.pid = self.proc.pid
        except (OSError, RuntimeError) as e:
            self.__exit__(None, None, None)
            raise RuntimeError(f'netfs: cannot mount {self.source}: {e}'.strip())
        return self

    def cpu(self) -> float:
        """User and system seconds the daemon has used so far."""
        fields = (Path('/proc') / str(self.pid) / 'stat').read_text().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')

    def __exit__(self, *exc):
        self.close_mount()
        if getattr(self, 'proc', None):
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stderr.close()
            self.proc = None
        return False

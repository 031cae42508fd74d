#!/usr/bin/python3
"""How busy /proc/pressure/io's "some" line says 20 ms windows are.

Usage: bench/psi-windows.py LABEL [N]

Reads the "some" total (microseconds in which at least one task waited
for I/O) before and after N (default 50) windows of 20 ms, 30 ms apart,
and prints the share of each window's time, as --delete-polite's quiet
windows read it (delete_engine/pace.c): minimum, median and maximum.
Run it once on an idle machine and once next to the writer to compare.
"""

import sys
import time


def total():
    for line in open('/proc/pressure/io'):
        if line.startswith('some '):
            return int(line.split('total=')[1])
    raise SystemExit('psi-windows: no "some" line in /proc/pressure/io')


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else 'here'
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    shares = []
    for _ in range(n):
        a, t0 = total(), time.monotonic()
        time.sleep(0.02)
        b, t1 = total(), time.monotonic()
        shares.append((b - a) / ((t1 - t0) * 1e6))
        time.sleep(0.03)
    shares.sort()
    print(f'{label}: {n} windows of 20 ms, share of the time some task waited for I/O: '
          f'min {shares[0]:.3f}, median {shares[n // 2]:.3f}, max {shares[-1]:.3f}')


if __name__ == '__main__':
    main()

#!/bin/sh
# demo.sh: the README's first command ends here.  Generate two identical
# trees of 100,000 files, delete one with rsync-de and the other with
# rm -rf, and print both times and their ratio.  Then, as root, the same
# on a model of a rotating disk (bench/slowdisk): a tree of 20,000 files
# grown in a shuffled order, larger than its ext4 journal, about a
# minute for rm -rf.
#
# Usage: bench/demo.sh RSYNC [FILES]
# RSYNC_STOCK=PATH also times stock rsync's -a --delete on a third tree.
# DEMO_DIR picks where the trees go (default: a new directory in $TMPDIR).

set -eu
rsync=$1
files=${2:-100000}
work=$(mktemp -d "${DEMO_DIR:-${TMPDIR:-/tmp}}/rsync-de-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

set -- --delete-only

# tree DIR: FILES empty files in 100 directories.
tree() {
	/usr/bin/python3 - "$1" "$files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.mkdir(root)
per = max(1, n // 100)
for d in range((n + per - 1) // per):
    sub = os.path.join(root, f'd{d:03}')
    os.mkdir(sub)
    for f in range(min(per, n - d * per)):
        os.close(os.open(os.path.join(sub, f'f{f:06}'), os.O_CREAT | os.O_WRONLY, 0o644))
PY
}

# seconds CMD...: run CMD and print its wall time in seconds.
seconds() {
	/usr/bin/python3 -c '
import subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[1:])
print(f"{time.monotonic() - t:.3f}")
sys.exit(r.returncode)' "$@"
}

mkdir "$work/empty"
echo "demo: generating two trees of $files files in $work"
tree "$work/t-rsync"
tree "$work/t-rm"
[ -z "${RSYNC_STOCK:-}" ] || tree "$work/t-stock"
sync

t_rsync=$(seconds "$rsync" "$@" "$work/empty/" "$work/t-rsync/")
t_rm=$(seconds rm -rf "$work/t-rm")
[ -z "${RSYNC_STOCK:-}" ] ||
	t_stock=$(seconds "$RSYNC_STOCK" -a --delete "$work/empty/" "$work/t-stock/")
left=$(find "$work/t-rsync" -mindepth 1 | wc -l)
[ "$left" -eq 0 ] || { echo "demo: rsync left $left entries behind" >&2; exit 1; }

printf 'demo: %-40s %8s s\n' "rsync $* empty/ T/" "$t_rsync"
printf 'demo: %-40s %8s s\n' "rm -rf T" "$t_rm"
[ -z "${RSYNC_STOCK:-}" ] ||
	printf 'demo: %-40s %8s s\n' "rsync-stock -a --delete empty/ T/" "$t_stock"
printf 'demo: ratio rsync / rm -rf = %s (warm cache, one run; make bench measures properly)\n' \
	"$(awk -v a="$t_rsync" -v b="$t_rm" 'BEGIN { printf "%.2f", a / b }')"

# On a disk that seeks: the disk model, root only (a loop device).
if [ "$(id -u)" != 0 ]; then
	echo "demo: the slow-disk part needs root (a loop device on the disk model); skipped"
	exit 0
fi
echo "demo: the same on a model of a 7,200 rpm disk (bench/slowdisk), 50 x 400 files"
echo "demo: created in a shuffled order, ext4 with a 4 MiB journal; about a minute"
top=$(cd "$(dirname "$0")/.." && pwd)
/usr/bin/python3 - "$top" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + '/bench/slowdisk')
import bench
rows, _ = bench.run_cell('hdd', [], 'ext4-j4', 'shuffled', 50, 400, '2G',
                         ['rsync-de', 'rm'], 1, log=lambda line: None)
de, rm = rows['rsync-de'][0]['secs'], rows['rm'][0]['secs']
print(f'demo: {"rsync --delete-only empty/ T/ (hdd model)":<40} {de:8.3f} s')
print(f'demo: {"rm -rf T (hdd model)":<40} {rm:8.3f} s')
print(f'demo: ratio rsync / rm -rf = {de / rm:.2f} on the disk model (one run; '
      'docs/BENCHMARKS.md, "Slow disks")')
PY

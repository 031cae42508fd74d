#!/bin/sh
# demo.sh: the README's first command ends here.  Generate two identical
# trees of 100,000 files, delete one with rsync-de and the other with
# rm -rf, and print both times and their ratio.
#
# Usage: bench/demo.sh RSYNC [FILES]
# RSYNC_STOCK=PATH also times stock rsync's -a --delete on a third tree.
# DEMO_DIR picks where the trees go (default: a new directory in $TMPDIR).

set -eu
rsync=$1
files=${2:-100000}
work=$(mktemp -d "${DEMO_DIR:-${TMPDIR:-/tmp}}/rsync-de-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# Until --delete-only lands the demo uses rsync's folk idiom.
if "$rsync" --help 2>/dev/null | grep -q -- '--delete-only'; then
	set -- --delete-only
else
	set -- -a --delete
fi

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

#!/bin/sh
# check-patches.sh: the series is in order.
#
# Usage: testsuite/tools/check-patches.sh TARBALL
#
# Pins: every patch in patches/series exists and carries its DEP-3 header
# (Description, Author, Forwarded, Last-Update), the "To use this patch"
# block and based-on: with the pinned release; the series applies to a
# pristine tree without fuzz; a refresh (the edit workflow) leaves
# every patch byte for byte as committed; and no patch rewrites lines an
# earlier one added, beyond the pairs testsuite/tools/patch-rewrites.txt pins
# (testsuite/tools/patch-rewrites.py).

set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/rsync-src/VERSION"
tarball=$1
fail=0
bad() { echo "check-patches: $*" >&2; fail=1; }

series=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/patches/series" | awk '{print $1}')
for p in $series; do
	f="$top/patches/$p"
	[ -f "$f" ] || { bad "$p is in the series but missing"; continue; }
	head=$(sed '/^---/q' "$f")
	for field in Description Author Forwarded Last-Update; do
		printf '%s\n' "$head" | grep -q "^$field: ." || bad "$p: no $field: in its header"
	done
	printf '%s\n' "$head" | grep -q '^To use this patch' || bad "$p: no 'To use this patch' block"
	printf '%s\n' "$head" | grep -q "^based-on: rsync $RSYNC_VERSION\$" || bad "$p: based-on: is not rsync $RSYNC_VERSION"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rsync-de-patches.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
"$top/rsync-src/unpack.sh" "$tarball" "$work/tree"
cp -R "$top/patches" "$work/patches"
ln -s ../patches "$work/tree/patches"
if "$top/rsync-src/refresh.sh" "$work/tree"; then
	diff -ru "$top/patches" "$work/patches" >&2 || bad "a refresh changes the series: run make refresh-patches and commit"
else
	bad "the series does not apply without fuzz"
fi
"$top/rsync-src/unpack.sh" "$tarball" "$work/pristine"
"${PYTHON:-python3}" "$top/testsuite/tools/patch-rewrites.py" "$work/pristine" "$top/patches" \
	"$top/testsuite/tools/patch-rewrites.txt" >/dev/null || bad "a patch rewrites an earlier one's lines (above)"
n=$(echo $series | wc -w)
[ $fail = 0 ] && echo "check-patches: $n patches apply cleanly, refresh is a no-op, headers complete"
exit $fail

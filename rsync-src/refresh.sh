#!/bin/sh
# refresh.sh: re-apply the whole series to a tree and refresh every patch.
#
# Usage: rsync-src/refresh.sh TREE
#
# TREE is an unpacked upstream tree whose patches/ names the series (the
# build tree links it to the repository's patches/).  Patches are pushed
# one at a time without fuzz and refreshed, so offsets and fuzz from a new
# upstream disappear and headers are kept.  Fails naming the first patch
# that does not apply.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
export QUILTRC="$here/quiltrc" QUILT_PATCHES=patches
cd "$1"
if [ -s .pc/applied-patches ]; then quilt pop -a -q -f >/dev/null; fi
for p in $(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' patches/series | awk '{print $1}'); do
	if ! quilt push -q --fuzz=0 >/dev/null; then
		echo "refresh: $p does not apply; fix it with quilt push -f, quilt edit and quilt refresh" >&2
		exit 1
	fi
	quilt refresh >/dev/null
done

#!/bin/sh
# unpack.sh: unpack a verified rsync tarball into a fresh build tree.
#
# Usage: rsync-src/unpack.sh TARBALL DESTDIR
#
# DESTDIR is replaced.  Upstream's bundled zlib and popt are dropped (a
# release tarball has them, Debian's +ds1 repack does not) so that both
# build against the system libraries, and the empty zlib/dummy.in and
# popt/dummy.in inputs that upstream's configure still lists are created,
# as Debian's rules do.

set -eu
tarball=$1
dest=$2

tmp="$dest.unpack.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
tar -xf "$tarball" -C "$tmp" --strip-components=1
rm -rf "$tmp/zlib" "$tmp/popt"
mkdir "$tmp/zlib" "$tmp/popt"
: > "$tmp/zlib/dummy.in"
: > "$tmp/popt/dummy.in"
rm -rf "$dest"
mv "$tmp" "$dest"

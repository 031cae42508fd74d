#!/bin/sh
# fetch.sh: find, download and verify the pinned upstream rsync release.
#
# Usage: rsync-src/fetch.sh [TARBALL]
#        rsync-src/fetch.sh --manifest DIR   (print DIR's manifest)
#        rsync-src/fetch.sh --debian POOL-PATH SHA256
#
# --debian fetches another file of Debian's archive (POOL-PATH relative to
# a mirror's root, e.g. pool/main/c/coreutils/coreutils_9.1.orig.tar.xz)
# the same way, from the cache or the apt sources' mirrors, verified
# against SHA256, and prints its cached path; the test harnesses that run
# other projects' suites (testsuite/tools/coreutils-rm.sh) use it.
#
# Prints the path of a verified tarball on stdout and exits 0, or explains
# on stderr what to do and exits 1.  Sources, in order:
#
#   1. TARBALL, or $RSYNC_TARBALL (./configure --with-rsync-tarball=PATH);
#   2. the cache ($RSYNC_DE_CACHE, default ~/.cache/rsync-de), so rebuilds
#      work offline;
#   3. Debian's archive, through the mirror this machine's apt sources
#      already name (apt-helper checks the sha256 and retries);
#   4. the upstream release tarball from rsync's download site.
#
# A tarball is accepted when it is Debian's +ds1 repack with the pinned
# sha256, or an upstream release whose every file matches the pinned
# manifest (rsync-src/rsync-$RSYNC_VERSION.sha256sums, taken from the +ds1
# tree; upstream's bundled zlib/ and popt/ are the only extra files allowed,
# and the unpack step drops them).  Anything else is refused.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=rsync-src/VERSION
. "$here/VERSION"
manifest="$here/rsync-$RSYNC_VERSION.sha256sums"
upstream_name="rsync-$RSYNC_VERSION.tar.gz"
upstream_url="https://download.samba.org/pub/rsync/src/$upstream_name"
cache=${RSYNC_DE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/rsync-de}

say() { printf 'fetch: %s\n' "$*" >&2; }

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# manifest_of DIR: the manifest lines for an unpacked tree, in C order.
manifest_of() {
	(cd "$1" && find . \( -type f -o -type l \) ! -path './zlib/*' ! -path './popt/*' |
		LC_ALL=C sort | sed 's|^\./||' | while IFS= read -r f; do
			if [ -L "$f" ]; then
				printf 'symlink:%s  %s\n' "$(readlink "$f")" "$f"
			else
				sha256sum "$f"
			fi
		done)
}

# upstream_ok FILE: is FILE an upstream release tarball matching the manifest?
upstream_ok() {
	t=$(mktemp -d "${TMPDIR:-/tmp}/rsync-de-verify.XXXXXX")
	ok=1
	if tar -xf "$1" -C "$t" 2>/dev/null && [ -d "$t/rsync-$RSYNC_VERSION" ] &&
	   manifest_of "$t/rsync-$RSYNC_VERSION" | cmp -s - "$manifest"; then
		ok=0
	fi
	rm -rf "$t"
	return $ok
}

# accept FILE: verify FILE and copy it into the cache; prints the cached path.
accept() {
	sum=$(sha256 "$1")
	if [ "$sum" = "$RSYNC_DEB_SHA256" ]; then
		name=$RSYNC_DEB_TARBALL
	elif upstream_ok "$1"; then
		name=$upstream_name
	else
		say "$1: sha256 $sum is not rsync $RSYNC_VERSION"
		say "expected $RSYNC_DEB_TARBALL (sha256 $RSYNC_DEB_SHA256)"
		say "or $upstream_name matching $manifest"
		return 1
	fi
	mkdir -p "$cache"
	if [ "$1" != "$cache/$name" ]; then
		cp "$1" "$cache/$name.tmp.$$"
		mv -f "$cache/$name.tmp.$$" "$cache/$name"
	fi
	# The stamp lets later runs trust the cached upstream tarball without
	# unpacking it again; it is checked against the file every time.
	echo "$sum" > "$cache/$name.sha256"
	printf '%s\n' "$cache/$name"
}

# cached NAME: print the cached path if its content still matches its stamp.
cached() {
	f=$cache/$1
	[ -f "$f" ] && [ -f "$f.sha256" ] && [ "$(sha256 "$f")" = "$(cat "$f.sha256")" ] &&
		printf '%s\n' "$f"
}

# apt_mirrors: the archive URIs of this machine's apt sources, one per line.
# Both the one-line format and deb822 .sources files are read; entries of
# the security archive are skipped (it has no orig tarballs).
apt_mirrors() {
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed -n 's/^[[:space:]]*deb\(-src\)\{0,1\}[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\).*/\3/p' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		sed -n 's/^URIs:[[:space:]]*//p' "$f" | tr ' ' '\n'
	done | grep -v -e '^$' -e 'security' | sed 's|/*$||' | awk '!seen[$0]++'
}

# apt_download POOL-PATH SHA256 DEST: download POOL-PATH from the first
# mirror of this machine's apt sources that has it, checked against
# SHA256, to DEST.
apt_download() {
	helper=/usr/lib/apt/apt-helper
	[ -x "$helper" ] || return 1
	for uri in $(apt_mirrors); do
		case $uri in http://*|https://*|file:/*) ;; *) continue ;; esac
		say "trying $uri/$1"
		rm -f "$3"
		# apt drops privileges to _apt when it can; the cache may not be
		# writable by it, which only costs a warning.
		if "$helper" download-file "$uri/$1" "$3" "SHA256:$2" >/dev/null 2>&1; then
			return 0
		fi
		rm -f "$3"
	done
	return 1
}

fetch_apt() {
	mkdir -p "$cache"
	part="$cache/$RSYNC_DEB_TARBALL.part"
	if apt_download "pool/main/r/rsync/$RSYNC_DEB_TARBALL" "$RSYNC_DEB_SHA256" "$part"; then
		accept "$part" && { rm -f "$part"; return 0; }
	fi
	rm -f "$part"
	return 1
}

# fetch_debian POOL-PATH SHA256: the cached copy of a Debian archive file,
# downloaded first if the cache lacks it; prints its path.
fetch_debian() {
	name=${1##*/}
	f=$cache/$name
	if [ -f "$f" ] && [ "$(sha256 "$f")" = "$2" ]; then
		printf '%s\n' "$f"
		return 0
	fi
	mkdir -p "$cache"
	if apt_download "$1" "$2" "$f.part.$$" && [ "$(sha256 "$f.part.$$")" = "$2" ]; then
		mv -f "$f.part.$$" "$f"
		printf '%s\n' "$f"
		return 0
	fi
	rm -f "$f.part.$$"
	say "could not get $1 (sha256 $2) from the apt sources' mirrors:"
	say "  $(apt_mirrors | tr '\n' ' ')"
	say "download it from any Debian mirror into $cache/"
	return 1
}

fetch_upstream() {
	mkdir -p "$cache"
	part="$cache/$upstream_name.part"
	rm -f "$part"
	say "trying $upstream_url"
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --connect-timeout 20 -o "$part" "$upstream_url" 2>/dev/null || return 1
	elif command -v wget >/dev/null 2>&1; then
		wget -q -T 20 -O "$part" "$upstream_url" || return 1
	else
		return 1
	fi
	accept "$part" && rm -f "$part"
}

if [ "${1:-}" = --manifest ]; then
	manifest_of "$2"
	exit 0
fi
if [ "${1:-}" = --debian ]; then
	[ $# = 3 ] || { say "usage: $0 --debian POOL-PATH SHA256"; exit 2; }
	fetch_debian "$2" "$3" || exit 1
	exit 0
fi

given=${1:-${RSYNC_TARBALL:-}}
if [ -n "$given" ]; then
	[ -f "$given" ] || { say "$given: no such file"; exit 1; }
	accept "$given" && exit 0
	exit 1
fi

cached "$RSYNC_DEB_TARBALL" && exit 0
cached "$upstream_name" && exit 0
fetch_apt && exit 0
fetch_upstream && exit 0

cat >&2 <<EOF
fetch: could not get rsync $RSYNC_VERSION.
  Download either of these, then build with RSYNC_TARBALL=FILE
  (or ./configure --with-rsync-tarball=FILE):
    - Debian's $RSYNC_DEB_TARBALL (pool/main/r/rsync/ on any
      Debian mirror), sha256 $RSYNC_DEB_SHA256;
    - upstream's $upstream_name from $upstream_url.
  It is verified and cached in $cache for offline rebuilds.
EOF
exit 1

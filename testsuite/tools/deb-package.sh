#!/bin/sh
# deb-package.sh: test the Debian package that `make deb` built.
#
# Usage: testsuite/tools/deb-package.sh DEB_DIR [VERSION]
#
# DEB_DIR holds rsync-de_*.deb and its .changes (build/deb/); VERSION is
# the fork's version (configure's PACKAGE_VERSION, e.g. 3.5.1-de1) that the
# package and the binary must both carry.  `make check-deb` builds the
# package and runs this.
#
# Pins:
#   * the package is named rsync-de, carries VERSION-N, and never ships
#     /usr/bin/rsync or anything else of Debian's rsync package;
#   * unpacked (dpkg -x) in a scratch root, /usr/bin/rsync-de runs, names
#     the fork and VERSION, and --delete-only empty/ T/ empties T without
#     following a symlink out of it;
#   * /usr/lib/rsync-de/bin/rsync is rsync-de (the PATH opt-in);
#   * rsync-de.1 and rsyncd-de.conf.5 are installed, named for the fork,
#     carry the fork's text (--delete-only) and render without warnings;
#   * the docs hold NEWS, README.Debian, copyright and the changelog;
#   * as root: dpkg --root installs it into a scratch dpkg database, and
#     README.Debian's dpkg-divert recipe makes "rsync" run rsync-de there
#     and undoes cleanly (the machine's own /usr/bin/rsync is never touched);
#   * lintian reports no errors.
#
# Exits 0 when all pass, 1 on the first failure, 77 when dpkg is missing.

set -eu

dir=${1:?usage: deb-package.sh DEB_DIR [VERSION]}
version=${2:-}
start=$(date +%s)

fail() { echo "deb-package: FAIL: $*" >&2; exit 1; }
ok() { echo "deb-package: ok: $*"; }

command -v dpkg-deb >/dev/null 2>&1 || { echo "deb-package: SKIP: no dpkg-deb"; exit 77; }

deb=$(ls "$dir"/rsync-de_*.deb 2>/dev/null | head -1)
changes=$(ls "$dir"/rsync-de_*.changes 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no rsync-de_*.deb in $dir (run make deb)"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/rsync-de-deb.XXXXXX")
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT INT TERM
root=$scratch/root
bin=$root/usr/bin/rsync-de

# ---- The package's identity -------------------------------------------------

[ "$(dpkg-deb -f "$deb" Package)" = rsync-de ] || fail "package is not named rsync-de"
pkgver=$(dpkg-deb -f "$deb" Version)
if [ -n "$version" ]; then
	case $pkgver in
	"$version"-[0-9]*) ;;
	*) fail "package version $pkgver is not $version-N (debian/changelog and configure.ac disagree)" ;;
	esac
fi
for field in Conflicts Replaces Breaks Provides; do
	[ -z "$(dpkg-deb -f "$deb" $field)" ] || fail "package has $field: it must sit beside Debian's rsync"
done
dpkg-deb -c "$deb" | awk '{print $6}' | grep -qx -e './usr/bin/rsync' -e './usr/share/man/man1/rsync.1.gz' &&
	fail "package ships a file of Debian's rsync"
ok "rsync-de $pkgver, no file or relation of Debian's rsync"

# ---- Unpacked in a scratch root: the binary ------------------------------

dpkg-deb -x "$deb" "$root"
[ -x "$bin" ] || fail "no executable /usr/bin/rsync-de"
ldd "$bin" | grep -q 'not found' && fail "unresolved libraries: $(ldd "$bin" | grep 'not found')"
"$bin" --version > "$scratch/version" || fail "rsync-de --version failed"
line1=$(sed -n 1p "$scratch/version")
case $line1 in
"rsync  version ${version:-*}  protocol version "[0-9]*) ;;
*) fail "first --version line is '$line1'" ;;
esac
grep -q '^rsync-de: ' "$scratch/version" || fail "--version does not name rsync-de"
ok "$line1"

# A real delete: T holds files, a subtree and a symlink to a directory
# outside T; --delete-only empty/ T/ must empty T and leave the outside be.
w=$scratch/work
mkdir -p "$w/empty" "$w/outside" "$w/T/a/b/c" "$w/T/d"
echo keep > "$w/outside/keep"
for i in 1 2 3 4 5 6 7 8 9 10; do
	echo "$i" > "$w/T/f$i"
	echo "$i" > "$w/T/a/b/c/g$i"
done
ln -s ../outside "$w/T/link"
(cd "$w" && "$bin" --delete-only empty/ T/) || fail "rsync-de --delete-only empty/ T/ exited $?"
[ -d "$w/T" ] || fail "--delete-only removed T itself"
[ -z "$(ls -A "$w/T")" ] || fail "T not empty after --delete-only: $(ls -A "$w/T")"
[ -f "$w/outside/keep" ] || fail "--delete-only followed a symlink out of T"
ok "--delete-only empty/ T/ emptied T and left the symlink's target alone"

# rsync-rm, the same tree again: removed whole, the outside kept.
rm_bin=$root/usr/bin/rsync-rm
[ -x "$rm_bin" ] || fail "no executable /usr/bin/rsync-rm"
mkdir -p "$w/T/a/b"
echo 1 > "$w/T/a/b/f"
ln -s ../outside "$w/T/link"
(cd "$w" && "$rm_bin" -rf T) || fail "rsync-rm -rf T exited $?"
[ ! -e "$w/T" ] || fail "rsync-rm -rf T left T"
[ -f "$w/outside/keep" ] || fail "rsync-rm followed a symlink out of T"
"$rm_bin" --version | grep -q "^rsync-rm (rsync-de) ${version:-}" || fail "rsync-rm --version"
ok "rsync-rm -rf T removed T and left the symlink's target alone"

# The PATH opt-in: a directory whose rsync is rsync-de.
link=$root/usr/lib/rsync-de/bin/rsync
[ -L "$link" ] || fail "no /usr/lib/rsync-de/bin/rsync link"
PATH=$root/usr/lib/rsync-de/bin:$PATH rsync --version | grep -q '^rsync-de: ' ||
	fail "/usr/lib/rsync-de/bin/rsync is not rsync-de"
ok "PATH=/usr/lib/rsync-de/bin:\$PATH makes rsync mean rsync-de"

# ---- Man pages and docs ---------------------------------------------------

for page in man1/rsync-de.1.gz man5/rsyncd-de.conf.5.gz man1/rsync-rm.1.gz; do
	f=$root/usr/share/man/$page
	[ -f "$f" ] || fail "no /usr/share/man/$page"
	name=${page#*/}
	name=${name%.*.gz}
	zcat "$f" | grep -q "^\\.TH \"$name\" " || fail "$page: title is not $name"
	zcat "$f" | grep -q "^$name \\\\- " || fail "$page: NAME line does not name $name"
	if command -v man >/dev/null 2>&1; then
		warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$f" 2>&1 >/dev/null) ||
			fail "man cannot render $page"
		[ -z "$warn" ] || fail "$page renders with warnings: $warn"
	fi
done
zcat "$root/usr/share/man/man1/rsync-de.1.gz" | grep -q 'delete-only' ||
	fail "rsync-de.1 lacks --delete-only: not the fork's page"
ok "rsync-de.1, rsyncd-de.conf.5 and rsync-rm.1 installed, named and rendered"

doc=$root/usr/share/doc/rsync-de
for f in NEWS README.Debian copyright changelog.Debian; do
	[ -f "$doc/$f" ] || [ -f "$doc/$f.gz" ] || fail "no $f in /usr/share/doc/rsync-de"
done
{ zcat "$doc/NEWS.gz" 2>/dev/null || cat "$doc/NEWS"; } | grep -q 'delete-only' ||
	fail "NEWS is not the fork's"
ok "docs: NEWS, README.Debian, copyright, changelog.Debian"

# ---- As root: a dpkg install and the divert recipe, in a scratch root ----

if [ "$(id -u)" = 0 ]; then
	d=$scratch/dpkgroot
	mkdir -p "$d/var/lib/dpkg/info" "$d/var/lib/dpkg/updates" "$d/usr/bin"
	: > "$d/var/lib/dpkg/status"
	# Stand-in for Debian's rsync: the recipe must move it aside.
	printf '#!/bin/sh\necho debian-rsync\n' > "$d/usr/bin/rsync"
	chmod 755 "$d/usr/bin/rsync"
	# The scratch database has none of the libraries, hence --force-depends.
	dpkg --root="$d" --force-depends --force-script-chrootless -i "$deb" \
		> "$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg --root -i failed"; }
	dpkg --root="$d" -L rsync-de | grep -qx /usr/bin/rsync-de || fail "dpkg -L lacks /usr/bin/rsync-de"
	[ "$("$d/usr/bin/rsync")" = debian-rsync ] || fail "installing rsync-de changed /usr/bin/rsync"
	# README.Debian's recipe, verbatim but for --root.
	dpkg-divert --root="$d" --local --rename --divert /usr/bin/rsync.debian \
		--add /usr/bin/rsync > /dev/null
	ln -s rsync-de "$d/usr/bin/rsync"
	"$d/usr/bin/rsync" --version | grep -q '^rsync-de: ' || fail "diverted rsync is not rsync-de"
	[ "$("$d/usr/bin/rsync.debian")" = debian-rsync ] || fail "Debian's rsync not kept as rsync.debian"
	rm "$d/usr/bin/rsync"
	dpkg-divert --root="$d" --local --rename --remove /usr/bin/rsync > /dev/null
	[ "$("$d/usr/bin/rsync")" = debian-rsync ] || fail "undoing the divert did not restore rsync"
	dpkg --root="$d" --force-script-chrootless -P rsync-de > "$scratch/dpkg.log" 2>&1 ||
		{ cat "$scratch/dpkg.log"; fail "dpkg --root -P failed"; }
	[ ! -e "$d/usr/bin/rsync-de" ] || fail "purge left /usr/bin/rsync-de"
	ok "dpkg install, README.Debian's divert and its undo, purge (scratch root)"
else
	echo "deb-package: skip: dpkg --root install and divert recipe (needs root)"
fi

# ---- lintian ----------------------------------------------------------------

if command -v lintian >/dev/null 2>&1; then
	target=${changes:-$deb}
	lintian -I --fail-on error "$target" > "$scratch/lintian" 2>&1 || {
		cat "$scratch/lintian"; fail "lintian reports errors"; }
	grep -v 'running with root privileges' "$scratch/lintian" | sed 's/^/  /'
	ok "lintian: $(grep -c '^E:' "$scratch/lintian") errors, $(grep -c '^W:' "$scratch/lintian") warnings, $(grep -c '^I:' "$scratch/lintian") info"
else
	fail "lintian is not installed (rsync-src/deps.sh deb)"
fi

echo "deb-package: all passed in $(( $(date +%s) - start ))s"

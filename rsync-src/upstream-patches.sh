#!/bin/sh
# upstream-patches.sh: the series' patches for upstream, as upstream takes them.
#
# Usage: rsync-src/upstream-patches.sh TARBALL OUTDIR [--check]
#
# The patches whose header says "Forwarded: no" are the ones upstream
# could take (the others are the fork's own, "not-needed").  Upstream
# reviews git format-patch mails against its own tree, so each candidate
# is committed, in series order, on a git tree of the pinned release, with
# its DEP-3 Description as the commit message (the first line the
# subject), and written to OUTDIR as 0001-*.patch, 0002-*.patch, ...
# With --check, the result is configured with $CONFIGURE_ARGS (the
# Makefile passes its own), built, and upstream's own testsuite (make
# check, which runs the candidates' tests too) must pass on it.

set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
tarball=$1 out=$(mkdir -p "$2" && cd "$2" && pwd) check=${3:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/rsync-de-upstream.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

"$top/rsync-src/unpack.sh" "$tarball" "$work/tree" >/dev/null
cd "$work/tree"
git init -q
git add -A
git -c user.name=rsync-de -c user.email=rsync-de@localhost commit -q -m "rsync as released"

n=0
for p in $(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/patches/series" | awk '{print $1}'); do
	f="$top/patches/$p"
	grep -q '^Forwarded: no$' "$f" || continue
	# The Description field: its first line is the subject, the rest
	# (one space of indent, "." for an empty line) the body.
	awk '/^Description: /{sub(/^Description: /, ""); print; print ""; d=1; next}
	     d && /^ /{sub(/^ /, ""); if ($0 == ".") $0 = ""; print; next}
	     d{exit}' "$f" > "$work/msg"
	author=$(sed -n 's/^Author: //p' "$f" | head -1)
	patch -p1 -s --no-backup-if-mismatch < "$f"
	git add -A
	git -c user.name=rsync-de -c user.email=rsync-de@localhost \
		commit -q --author="$author <rsync-de@localhost>" -F "$work/msg"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "upstream-patches: no patch says Forwarded: no" >&2; exit 1; }
rm -f "$out"/*.patch
git format-patch -q -o "$out" HEAD~"$n"
echo "upstream-patches: $n patches in $out"

if [ "$check" = --check ]; then
	eval "./configure -q ${CONFIGURE_ARGS:-}"
	make -s >/dev/null
	make check
fi

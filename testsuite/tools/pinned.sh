#!/bin/sh
# pinned.sh SKIPS LOG [-l LIST] COMMAND...: run a test suite (COMMAND: a
# runtests.py command line, or a script that ends in one and passes its
# arguments on), or only the tests named in the file LIST, and hold its
# skips to a pinned list.  make check-upstream, check-tcp, check-user,
# check-fork and check-asan-fork run their suites through it, and
# interop.sh its two-sided tests.
#
# SKIPS names the tests expected to skip in this setup (one a line, "#"
# comments; make pin-skips writes them).  The run fails when a test
# fails, when a test in SKIPS passes (re-pin after a deliberate change),
# or when a test outside SKIPS skips twice.  Once is not enough: the race
# tests (files-from-leak, filter-leak...) skip when their flipper loses
# its race within its budget, which two loaded CPUs make likelier, so an
# unexpected skip is run again, alone (COMMAND TEST), once.
#
# A test may also skip where the environment lacks what it needs, as the
# lists beside SKIPS name them, one per missing facility:
#   env-no-userns.txt  no user namespace can be made here: a chroot (as
#                      sbuild and pbuilder build; the kernel refuses one
#                      to a chrooted process, root or not), or a container
#                      that forbids them.
#   env-no-other-fs-tmp.txt
#                      no writable directory on a file system other than
#                      the scratch directory's where the test looks for
#                      one (each line names the test, then the places it
#                      looks): a plain chroot, whose /dev is bound without
#                      its submounts (no /dev/shm tmpfs) and whose /run is
#                      no tmpfs.
#   env-no-pty.txt     no pseudo-terminal can be opened: a chroot whose
#                      /dev is bound without its devpts mount.
# Such a test may pass as well: elsewhere the same list holds.
#
# COMMAND's output goes to stdout as it comes and to LOG; the run again
# goes to LOG.again.  runtests.py's own pinning (--expect-skipped) is left at
# IGNORE: this script does that job.
set -eu
skips=$1 log=$2 list=
shift 2
if [ "$1" = -l ]; then
	list=$2
	shift 2
fi

names() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1"; }
may=
if ! unshare --user true 2>/dev/null; then
	may=$(names "$(dirname "$skips")/env-no-userns.txt")
	echo "pinned.sh: no user namespaces here; these may skip too: $(echo $may)"
fi
if ! "${PYTHON:-/usr/bin/python3}" -c 'import os; os.openpty()' 2>/dev/null; then
	nopty=$(names "$(dirname "$skips")/env-no-pty.txt")
	echo "pinned.sh: no pty can be opened here; these may skip too: $(echo $nopty)"
	may="$may $nopty"
fi
# other_fs_tmp DIR...: is one of DIR... a directory that every user the
# suite runs as may write, on another file system than the scratch
# directory's?  That is the suite's $scratchbase (or this directory, under
# which runtests.py makes it) and $TMPDIR (where run-as-user.sh copies the
# tree).  Root counts only a directory others may write too, since
# check-user runs the suite as another user; "$TMPDIR" and
# "$RSYNC_TEST_TMP" stand for those variables, as the tests read them.
other_fs_tmp() {
	for ref in "${scratchbase:-$PWD}" "${TMPDIR:-/tmp}"; do
		refdev=$(stat -L -c %d "$ref") || return 1
		found=0
		for d in "$@"; do
			case $d in
			'$TMPDIR') d=${TMPDIR:-/tmp} ;;
			'$RSYNC_TEST_TMP') d=${RSYNC_TEST_TMP:-} ;;
			esac
			[ -n "$d" ] && [ -d "$d" ] && [ -w "$d" ] || continue
			if [ "$(id -u)" = 0 ] && [ -z "$(find -L "$d" -maxdepth 0 -perm -0002)" ]; then
				continue
			fi
			[ "$(stat -L -c %d "$d")" != "$refdev" ] && { found=1; break; }
		done
		[ $found = 1 ] || return 1
	done
}
nofs=
while read -r t places; do
	# shellcheck disable=SC2086  # one word per place
	other_fs_tmp $places && continue
	nofs="$nofs $t"
done <<EOF
$(names "$(dirname "$skips")/env-no-other-fs-tmp.txt")
EOF
if [ -n "$nofs" ]; then
	echo "pinned.sh: no writable tmp dir on another file system for these; they may skip too:$nofs"
	may="$may$nofs"
fi
# tests LOG RESULT: the tests that runtests.py's LOG reports with RESULT.
tests() { sed -n "s/^$2[[:space:]]*\\([^[:space:]]*\\).*/\\1/p" "$1"; }
# run LOG ARG...: COMMAND ARG... to stdout and LOG; its exit code in rc.
run() {
	out=$1
	shift
	{ "$@" 2>&1 && echo 0 > "$out.rc" || echo $? > "$out.rc"; } | tee "$out"
	rc=$(cat "$out.rc")
	rm -f "$out.rc"
}

# shellcheck disable=SC2046  # one word per test name
run "$log" "$@" --expect-skipped=IGNORE $([ -z "$list" ] || names "$list")
[ "$rc" = 0 ] || exit "$rc"
bad=0
for t in $(tests "$log" PASS); do
	if names "$skips" | grep -qxF "$t"; then
		echo "pinned.sh: $t passed, but $skips expects it to skip; re-pin" >&2
		bad=1
	fi
done
for t in $(tests "$log" SKIP); do
	names "$skips" | grep -qxF "$t" && continue
	printf '%s\n' $may | grep -qxF "$t" && continue
	echo "pinned.sh: $t skipped unexpectedly; running it again alone"
	run "$log.again" "$@" --expect-skipped=IGNORE "$t"
	[ "$rc" = 0 ] || exit "$rc"
	if tests "$log.again" SKIP | grep -qxF "$t"; then
		echo "pinned.sh: $t skipped, and $skips does not expect it to" >&2
		bad=1
	fi
done
[ $bad = 0 ] || exit 1
echo "pinned.sh: skips as $skips expects"

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

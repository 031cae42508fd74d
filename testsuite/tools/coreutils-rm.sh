#!/bin/sh
# coreutils-rm.sh RSYNC_RM: coreutils' own rm tests against RSYNC_RM, an
# rm replacement (./rsync-rm).  `make check-coreutils-rm` runs it; it is
# not part of make check (a first run builds coreutils, over 10 minutes).
#
# A peer's test suite is the spec: GNU coreutils 9.1, Debian 12's, whose
# orig tarball comes from the mirror in this machine's apt sources,
# verified by its sha256 (rsync-src/fetch.sh --debian).  It is configured
# (--disable-nls) and built once into the cache ($RSYNC_DE_CACHE, default
# ~/.cache/rsync-de), in a directory named after the tarball's sha256, so
# a second run, from any checkout, does not build it again.
#
# Every run copies the built tree into a scratch directory, replaces
# src/rm there by a script that execs RSYNC_RM (a copy of it, by absolute
# path) with all its arguments and notes each call, and runs coreutils'
# test harness on the 50 tests of tests/rm/ and the four of tests/misc/
# that run every program (close-stdout, help-version, invalid-opt,
# usage_vs_getopt):
#
#   make check TESTS="..." SUBDIRS=.
#
# As root it does this twice: as root (NON_ROOT_USERNAME=nobody for the
# tests that drop privileges) and as nobody, in a copy nobody owns.  As
# another user it runs once, as that user.  A test has 5 minutes
# (COREUTILS_RM_TIMEOUT, seconds); RUN_EXPENSIVE_TESTS=yes in the
# environment runs coreutils' expensive tests too.
#
# What counts: the same tests run with GNU's own src/rm in the same
# setup (once per user; the results are cached beside the tree), and a
# test is held against RSYNC_RM only where GNU rm passes it.  Three tests
# are never held against it, as they rest on GNU rm's internals (issue
# 50): r-root (rm run under gdb, stopped at its unlinkat calls),
# rm-readdir-fail (readdir failures injected with LD_PRELOAD into gnulib
# fts's calls) and fail-2eperm; they run and are shown apart.
#
# The run fails (exit 1) when a counted test does not pass with RSYNC_RM:
# it fails, or it skips where GNU rm passes (coreutils' tests skip, for
# instance, when rm --version does not name coreutils' version, which
# must not let a test go unheld).  The logs of each run stay in
# build/coreutils-rm/USER-RM/: make's output, the per-test .log files
# under tests/, and rm-calls, the arguments of every call of the rm under
# test (a run that never called it is an error, not a pass).

set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
say() { printf 'coreutils-rm: %s\n' "$*"; }
die() { say "$*" >&2; exit 2; }

[ $# = 1 ] || die "usage: $0 RSYNC_RM"
[ -f "$1" ] && [ -x "$1" ] || die "$1: not an executable"
rm_bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

version=9.1
pool=pool/main/c/coreutils/coreutils_$version.orig.tar.xz
# As coreutils_9.1-1.dsc lists it.
sha=61a1f410d78ba7e7f37a5a4f50e6d1320aca33375484a3255eddf17a38580423
cache=${RSYNC_DE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/rsync-de}
tree=$cache/coreutils-$version-$(printf %.16s "$sha")
logs=$top/build/coreutils-rm
timeout=${COREUTILS_RM_TIMEOUT:-300}
# Tests of GNU rm's internals, never held against another rm.
not_counted="tests/rm/r-root.sh tests/rm/rm-readdir-fail.sh tests/rm/fail-2eperm.sh"

# --- coreutils, built once -------------------------------------------------
if [ ! -f "$tree/.built" ]; then
	tarball=$("$top/rsync-src/fetch.sh" --debian "$pool" "$sha") ||
		die "cannot get coreutils $version's source"
	mkdir -p "$cache"
	part=$tree.part.$$
	rm -rf "$part"
	mkdir "$part"
	trap 'rm -rf "$part"' EXIT
	say "building coreutils $version in $tree (once; about 10 minutes)"
	tar -xf "$tarball" -C "$part" --strip-components=1
	start=$(date +%s)
	# configure refuses root unless told that it is meant.
	if ! (cd "$part" && FORCE_UNSAFE_CONFIGURE=1 nice ./configure --disable-nls \
		> configure.out 2>&1 && nice make -j"$(nproc)" > make.out 2>&1); then
		mkdir -p "$logs"
		cp "$part/configure.out" "$part/make.out" "$logs/" 2>/dev/null || :
		tail -n 30 "$part/make.out" 2>/dev/null || tail -n 30 "$part/configure.out"
		die "building coreutils failed; logs in $logs/"
	fi
	# Where it was configured: the path its Makefiles name.
	printf '%s\n' "$part" > "$part/.built"
	# Another run may have finished the same build first: keep either.
	mv -T "$part" "$tree" 2>/dev/null || rm -rf "$part"
	trap - EXIT
	say "built in $(($(date +%s) - start)) s"
fi

# The tests: all of tests/rm/ and four of tests/misc/, as named in
# coreutils' tests/local.mk.
tests=$(cd "$tree" && ls tests/rm/*.sh tests/rm/*.pl tests/rm/*.xpl)
tests="$tests tests/misc/close-stdout.sh tests/misc/help-version.sh
tests/misc/invalid-opt.pl tests/misc/usage_vs_getopt.sh"
tests=$(echo $tests)

# --- Running the suite -----------------------------------------------------
scratch=
# drop_scratch: remove the scratch copy, never crossing into a mount that
# a test killed by its timeout left behind (one-file-system, read-only).
drop_scratch() {
	chmod -R u+rwx "$scratch" 2>/dev/null || :
	rm -rf --one-file-system "$scratch" ||
		say "could not remove all of $scratch (a mount left in it?)" >&2
	scratch=
}
cleanup() {
	rc=$?
	[ -z "$scratch" ] || drop_scratch
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# suite USER RM OUT: run the tests as USER (a user name) in a fresh copy of
# the tree, with RM (gnu, or an rm binary) as src/rm; write "RESULT TEST"
# lines to OUT.  The copy is removed afterwards; its logs go to
# $logs/USER-RM-NAME/.
suite() {
	user=$1 what=$2 out=$3
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/rsync-de-coreutils.XXXXXX")
	chmod 755 "$scratch"
	cu=$scratch/coreutils
	cp -a "$tree" "$cu"
	# configure wrote the build directory's absolute path into these, and
	# the test harness puts $abs_top_builddir/src first in PATH: point
	# them at the copy, with their old times, so that make rebuilds
	# nothing.
	built_at=$(cat "$tree/.built")
	for f in Makefile po/Makefile config.status; do
		sed -i "s|$built_at|$cu|g" "$cu/$f"
		touch -r "$tree/$f" "$cu/$f"
	done
	! grep -q "$built_at" "$cu/Makefile" || die "$cu/Makefile still names $built_at"
	if [ "$what" != gnu ]; then
		cp "$what" "$scratch/rm-under-test"
		chmod 755 "$scratch/rm-under-test"
		: > "$scratch/rm-calls"
		chmod 666 "$scratch/rm-calls"
		# A test that closes stdout gets it closed: the shell restores
		# a closed descriptor after a redirection.  The tests call rm
		# by name, so its argv[0] is "rm", which an rm's messages name
		# (bash, for exec -a; it is Essential in Debian).
		cat > "$cu/src/rm" <<-EOF
		#!/bin/bash
		{ echo "\$*" >> '$scratch/rm-calls'; } 2>/dev/null
		exec -a rm '$scratch/rm-under-test' "\$@"
		EOF
		chmod 755 "$cu/src/rm"
		# As old as the rm it replaces: make neither rebuilds it nor
		# makes man/rm.1 again from its --help.
		touch -r "$tree/src/rm" "$cu/src/rm"
	fi
	env_user="HOME=$scratch USER=$user LOGNAME=$user"
	if [ "$(id -un)" != "$user" ]; then
		chown -R "$user:" "$scratch"
		as="setpriv --reuid=$user --regid=$(id -g "$user") --clear-groups"
	else
		as=
	fi
	# The log compilers of coreutils' tests/local.mk, under a timeout.
	# Each test works in a directory of its own, so they run side by
	# side.
	to="timeout -k 10 $timeout"
	(cd "$cu" && nice $as env -i $env_user \
		PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin TERM=dumb \
		NON_ROOT_USERNAME=nobody ${RUN_EXPENSIVE_TESTS:+RUN_EXPENSIVE_TESTS=$RUN_EXPENSIVE_TESTS} \
		make -k -j"$(nproc)" check SUBDIRS=. VERBOSE=yes TESTS="$tests" \
		SH_LOG_COMPILER="$to \$(SHELL)" \
		PL_LOG_COMPILER="$to \$(TESTSUITE_PERL) \$(TESTSUITE_PERL_OPTIONS)" \
		XPL_LOG_COMPILER="$to \$(TESTSUITE_PERL) -T \$(TESTSUITE_PERL_OPTIONS)" \
		) > "$scratch/make-check.out" 2>&1 </dev/null || :
	name=$user-$( [ "$what" = gnu ] && echo gnu-rm || basename "$what")
	rm -rf "${logs:?}/$name"
	mkdir -p "$logs/$name"
	cp "$scratch/make-check.out" "$logs/$name/"
	: > "$out.tmp"
	for t in $tests; do
		b=${t%.*}
		mkdir -p "$logs/$name/${t%/*}"
		cp "$cu/$b.log" "$logs/$name/$b.log" 2>/dev/null || :
		r=$(sed -n 's/^:test-result: *//p' "$cu/$b.trs" 2>/dev/null | head -n 1)
		echo "${r:-ERROR} $t" >> "$out.tmp"
	done
	if [ "$what" != gnu ]; then
		cp "$scratch/rm-calls" "$logs/$name/"
		# The tests ran the rm under test, not GNU's: it was called.
		[ -s "$scratch/rm-calls" ] ||
			die "$user: the tests never called $what; see $logs/$name/make-check.out"
	fi
	drop_scratch
	mv -f "$out.tmp" "$out"
}

# results FILE RESULT [TESTS]: the tests of TESTS (default: all) with
# RESULT in FILE.
results() {
	sed -n "s|^$2 ||p" "$1" | while read -r t; do
		case " ${3:-$tests} " in *" $t "*) echo "$t" ;; esac
	done
}
count() { results "$@" | wc -l | tr -d ' '; }
short() { for t in "$@"; do b=${t##*/}; printf '%s ' "${b%.*}"; done; }
# outcome FILE TEST: TEST's result in FILE.
outcome() { sed -n "s|^\\([A-Z]*\\) $2\$|\\1|p" "$1"; }

# report USER: run both, print the counts, return 1 if a counted test does
# not pass with the rm under test.
report() {
	user=$1
	gnu=$tree/gnu-$user.results
	mine=$logs/$user.results
	have=1
	for t in $tests; do
		[ -n "$(outcome "$gnu" "$t" 2>/dev/null)" ] || have=0
	done
	if [ $have = 0 ]; then
		say "$user: coreutils' tests with GNU's own rm (once; cached in $gnu)"
		suite "$user" gnu "$gnu"
	else
		say "$user: GNU rm's results from $gnu"
	fi
	say "$user: coreutils' tests with $rm_bin"
	start=$(date +%s)
	suite "$user" "$rm_bin" "$mine"
	say "$user: ran in $(($(date +%s) - start)) s"

	counted=
	for t in $(results "$gnu" PASS); do
		case " $not_counted " in *" $t "*) ;; *) counted="$counted $t" ;; esac
	done
	counted=$(echo $counted)
	# Counts over the tests that count: all of them for GNU rm, those GNU
	# passes for the rm under test.
	for who in gnu mine; do
		eval "f=\$$who"
		set --
		for t in $tests; do
			case " $not_counted " in *" $t "*) ;; *) set -- "$@" "$t" ;; esac
		done
		all="$*"
		nc=
		for t in $not_counted; do nc="$nc$(short "$t")$(outcome "$f" "$t"), "; done
		p=$(count "$f" PASS "$all")
		fl=$(($(count "$f" FAIL "$all") + $(count "$f" ERROR "$all") + $(count "$f" XPASS "$all")))
		s=$(($(count "$f" SKIP "$all") + $(count "$f" XFAIL "$all")))
		if [ $who = gnu ]; then
			say "$user: GNU rm: $p passed, $fl failed, $s skipped (3 not counted: ${nc%, })"
		else
			cp=$(count "$f" PASS "$counted")
			say "$user: $(basename "$rm_bin"): $p passed, $fl failed, $s skipped (3 not counted: ${nc%, }); of the $(echo $counted | wc -w) GNU rm passes: $cp pass"
		fi
	done
	bad=$( { results "$mine" FAIL "$counted"; results "$mine" ERROR "$counted"; } | sort)
	skipped=$(results "$mine" SKIP "$counted")
	also=$(for t in $(results "$gnu" FAIL) $(results "$gnu" ERROR); do
		[ "$(outcome "$mine" "$t")" = PASS ] || echo "$t"
	done)
	[ -z "$bad" ] || say "$user: failed, where GNU rm passes: $(short $bad)"
	[ -z "$skipped" ] || say "$user: skipped, where GNU rm passes: $(short $skipped)"
	[ -z "$also" ] || say "$user: failed with GNU rm too (not held): $(short $also)"
	[ -z "$bad$skipped" ]
}

mkdir -p "$logs"
total=$(date +%s)
rc=0
if [ "$(id -u)" = 0 ]; then
	id nobody >/dev/null 2>&1 || die "no user nobody to run the tests as"
	report root || rc=1
	report nobody || rc=1
else
	report "$(id -un)" || rc=1
fi
say "logs in $logs/; $(($(date +%s) - total)) s in all"
exit $rc

#!/bin/sh
# interop.sh: upstream's two-sided tests with ./rsync-stock as the far side
# (the daemon, the remote shell's --rsync-path), so that rsync-de is seen
# to talk to plain 3.5.1 as 3.5.1 talks to itself.  make check-interop and
# make pin-interop run it.
#
#   interop.sh run TOOLDIR RSYNC STOCK LIST SKIPS [runtests option...]
#   interop.sh pin TOOLDIR RSYNC STOCK LIST
#
# Only a test that starts the far side's binary can tell a mixed pair from
# rsync-de alone; every other test would repeat check-upstream.  LIST
# (testsuite/tools/interop-tests.txt) names the tests that do, and is pinned
# like the expected skips: `pin` runs the whole suite with the far side
# behind a wrapper that records which test started it, and writes LIST.
# `run` runs the listed tests behind the same wrapper, their skips held to
# SKIPS (the expected skips of this setup) by pinned.sh as check-upstream's
# are, and fails when one of them no longer starts the far side (re-pin
# after a deliberate change).
# The tests' scratch directory name ($scratchdir, set by runtests.py for
# each test) is the test's name.
set -eu
mode=$1 tooldir=$2 rsync=$3 stock=$4 list=$5
shift 5
skips=
if [ "$mode" = run ]; then
	skips=$1
	shift
fi
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)

wrap=$(mktemp -d "${TMPDIR:-/tmp}/rsync-de-interop.XXXXXX")
trap 'rm -rf "$wrap"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Tests may run the far side as another user (a daemon's uid, sshd's
# login): the directory and the log must be theirs to use too.
chmod 755 "$wrap"
: > "$wrap/started"
chmod 666 "$wrap/started"
cat > "$wrap/rsync-stock" <<EOF
#!/bin/sh
echo "\${scratchdir##*/}" >> '$wrap/started'
exec '$stock' "\$@"
EOF
chmod 755 "$wrap/rsync-stock"

names() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1"; }

cd "$tooldir"
case $mode in
pin)
	"$python" runtests.py --rsync-bin="$rsync" --rsync-bin2="$wrap/rsync-stock" \
		--expect-skipped=IGNORE "$@" > "$wrap/suite.log" 2>&1 ||
		{ tail -n 30 "$wrap/suite.log"; exit 1; }
	{
		echo "# Upstream tests that start the far side's rsync (pinned by"
		echo "# make pin-interop): make check-interop runs these, and only these,"
		echo "# with ./rsync-stock as the far side.  Regenerate after a new pin."
		grep -v '^$' "$wrap/started" | LC_ALL=C sort -u
	} > "$list"
	echo "interop: $(names "$list" | wc -l) tests start the far side; written to $list"
	;;
run)
	"$here/pinned.sh" "$skips" "$wrap/suite.log" -l "$list" "$python" runtests.py \
		--rsync-bin="$rsync" --rsync-bin2="$wrap/rsync-stock" "$@"
	bad=0
	# Every test ran but the pinned skips (pinned.sh saw to that),
	# some of them a second time, alone.
	for t in $(names "$list"); do
		names "$skips" | grep -qxF "$t" && continue
		if ! grep -qxF "$t" "$wrap/started"; then
			echo "check-interop: $t no longer starts the far side; make pin-interop" >&2
			bad=1
		fi
	done
	[ $bad = 0 ] || exit 1
	echo "check-interop: $(names "$list" | wc -l) two-sided tests against $stock"
	;;
*)
	echo "usage: $0 run|pin TOOLDIR RSYNC STOCK LIST [SKIPS]" >&2
	exit 2
	;;
esac

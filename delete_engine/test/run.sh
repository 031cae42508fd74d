#!/bin/sh
# run.sh BINDIR TEST... - run each engine test with a timeout, one line
# per test, then "N passed, N failed, N skipped"; non-zero on any failure.
#
# DE_EXPECT_SKIPS=FILE pins the skips: FILE lists (one a line, # comments)
# the tests that must skip here, such as the ones that need root.  A test
# that skips without being listed fails, and so does a listed one that
# ran: a missing mkfs or a lost privilege must not pass as a quiet SKIP.
bindir=$1
shift
expect=
if [ -n "${DE_EXPECT_SKIPS:-}" ]; then
	expect=" $(sed -e 's/#.*//' "$DE_EXPECT_SKIPS" | tr -s ' \n' '  ')"
fi
listed() { case "$expect " in *" $1 "*) return 0 ;; esac; return 1; }
pass=0 fail=0 skip=0
for t in "$@"; do
	log=$(mktemp "${TMPDIR:-/tmp}/de-run-XXXXXX")
	timeout 120 "$bindir/$t" >"$log" 2>&1
	rc=$?
	if [ -n "$expect" ] || [ -n "${DE_EXPECT_SKIPS:-}" ]; then
		if [ $rc = 77 ] && ! listed "$t"; then
			echo "FAIL: $t skipped, and $DE_EXPECT_SKIPS does not expect it to"
			sed 's/^/    /' "$log" | tail -n 5
			fail=$((fail + 1)); rm -f "$log"; continue
		elif [ $rc = 0 ] && listed "$t"; then
			echo "FAIL: $t ran, but $DE_EXPECT_SKIPS expects it to skip"
			fail=$((fail + 1)); rm -f "$log"; continue
		fi
	fi
	case $rc in
	0) pass=$((pass + 1)); echo "PASS: $t" ;;
	77) skip=$((skip + 1)); echo "SKIP: $t" ;;
	*) fail=$((fail + 1)); echo "FAIL: $t (exit $rc)"; sed 's/^/    /' "$log" | tail -n 20 ;;
	esac
	rm -f "$log"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

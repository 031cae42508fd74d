#!/bin/sh
# run.sh BINDIR TEST... - run each engine test with a timeout, one line
# per test, then "N passed, N failed, N skipped"; non-zero on any failure.
bindir=$1
shift
pass=0 fail=0 skip=0
for t in "$@"; do
	log=$(mktemp "${TMPDIR:-/tmp}/de-run-XXXXXX")
	timeout 120 "$bindir/$t" >"$log" 2>&1
	rc=$?
	case $rc in
	0) pass=$((pass + 1)); echo "PASS: $t" ;;
	77) skip=$((skip + 1)); echo "SKIP: $t" ;;
	*) fail=$((fail + 1)); echo "FAIL: $t (exit $rc)"; sed 's/^/    /' "$log" | tail -n 20 ;;
	esac
	rm -f "$log"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

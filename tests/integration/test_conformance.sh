#!/bin/sh
# ember bench conformance: its classification on cases of its own (a pass, a failure, a crash of
# the guest, a hang, a native skip and a native failure: n/a), then the fixed subset of Go's
# standard-library tests (tests/conformance/subset.txt), every case of which must pass in each
# column of the backend under test (KVM: both syscall modes), with Ember leaving nothing behind.
# On the QEMU route (SUITE_SIZES=small) the self-test and the subset's io cases, in guest mode.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend
T=${EMBER_TEST_TIMEOUT:-10}
# on the QEMU route (every run there takes seconds to start) the guest mode alone, a hang
# bounded shorter
MODES=both HANG=$T
[ "${SUITE_SIZES:-}" = small ] && MODES=guest HANG=30

"$E" bench conformance --suite go --files selftest --backend "$EMBER_BACKEND" --syscalls $MODES \
	--timeout "$HANG" --state "$tmp/state" --json >"$tmp/self.json" 2>"$tmp/err"
rc=$?
expect_rc 0 "self-test run: Ember itself neither crashed, hung nor leaked"
cols=$(jq -r '.columns | keys_unsorted[] | select(. != "native")' "$tmp/self.json")
want="TestPass=pass TestFail=fail TestCrash=crash TestHang=timeout TestSkip=n/a TestNotApplicable=n/a"
for col in $cols; do
	for w in $want; do
		c=${w%%=*} r=${w#*=}
		got=$(jq -r --arg c "$c" --arg col "$col" \
			'.suites.go.cases[] | select(.case == $c) | .[$col]' "$tmp/self.json")
		check "$col: $c is $r (got $got)" [ "$got" = "$r" ]
	done
	why=$(jq -r --arg col "$col" '.suites.go.cases[] | select(.case == "TestCrash") | .why[$col]' \
		"$tmp/self.json")
	check "$col: the crash's reason is Ember's message ($why)" \
		[ "$why" = "ember: killed by signal 9 (KILL)" ]
	why=$(jq -r --arg col "$col" '.suites.go.cases[] | select(.case == "TestFail") | .why[$col]' \
		"$tmp/self.json")
	check "$col: the failure's reason is its first line ($why)" \
		[ "$why" = "selftest_test.go:24: a deliberate failure in Ember" ]
done
check "native: TestFail passes natively" [ "$(jq -r '.suites.go.cases[] |
	select(.case == "TestFail") | .native' "$tmp/self.json")" = pass ]
check "the summary counts 4 applicable cases, 1 passing" [ "$(jq -r \
	'.suites.go.summary | to_entries[] | select(.key != "native") |
	"\(.value.applicable)/\(.value.pass)"' "$tmp/self.json" | sort -u)" = "4/1" ]

# the subset: each listed case passes in every column, or the run fails and names it
cases=tests/conformance/subset.txt
if [ "${SUITE_SIZES:-}" = small ]; then
	awk '$1 == "go" && $2 == "io"' "$cases" >"$tmp/cases"
	cases=$tmp/cases
fi
n=$(grep -c '^go ' "$cases")
"$E" bench conformance --cases "$cases" --backend "$EMBER_BACKEND" --syscalls $MODES \
	--timeout $((T * 6)) --state "$tmp/state" --json >"$tmp/sub.json" 2>"$tmp/err"
rc=$?
expect_rc 0 "the subset's $n cases all pass in Ember ($EMBER_BACKEND)"
for col in $(jq -r '.columns | keys_unsorted[] | select(. != "native")' "$tmp/sub.json"); do
	got=$(jq -r --arg col "$col" '.suites.go.summary[$col] | "\(.pass)/\(.applicable)"' \
		"$tmp/sub.json")
	check "$col: $got of the subset pass" [ "${got%/*}" = "${got#*/}" ]
done
check "no subset case is n/a natively here" \
	[ "$(jq -r '.suites.go.summary.native.applicable' "$tmp/sub.json")" = "$n" ]
check "Ember left no process or descriptor behind" [ "$(jq -r \
	'.ember | "\(.crashes) \(.hangs) \(.runs_leaving_processes) \(.descriptors_left_open)"' \
	"$tmp/sub.json")" = "0 0 0 0" ]

echo "test_conformance: $pass passed, $fail failed"
[ "$fail" = 0 ]

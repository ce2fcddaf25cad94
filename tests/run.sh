#!/bin/sh
# Runs every test: the cmocka unit programs, then the integration scripts against the real binary.
# Prints one closing line "N passed, N failed" and exits non-zero when anything failed.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
pass=0
fail=0
failed=""
for t in "$B"/tests/unit/test_*; do
	[ -x "$t" ] || continue
	if "$t" >"$t.log" 2>&1; then
		pass=$((pass + 1))
		echo "ok   unit/$(basename "$t")"
	else
		fail=$((fail + 1))
		failed="$failed unit/$(basename "$t")"
		echo "FAIL unit/$(basename "$t")"
		cat "$t.log"
	fi
done
# integration NAME MODE: one script, with every syscall trapping (the default) or served by the
# in-guest runtime where it can be (guest)
integration()
{
	t=$1
	name="integration/$(basename "$t")"
	[ "$2" = guest ] && name="$name [syscalls=guest]"
	log="$B/tests/$(basename "$t" .sh)-$2.log"
	mkdir -p "$B/tests"
	if B="$B" EMBER_SYSCALLS=$2 sh "$t" >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "ok   $name"
	else
		fail=$((fail + 1))
		failed="$failed $name"
		echo "FAIL $name"
		cat "$log"
	fi
}
for t in tests/integration/test_*.sh; do
	[ -f "$t" ] && integration "$t" trap
done
# the tests of the core, of snapshots, of the suite and of cold starts pass in both modes
for t in test_run test_snapshot test_suite_virtine test_cold; do
	integration "tests/integration/$t.sh" guest
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

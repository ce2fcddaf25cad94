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
for t in tests/integration/test_*.sh; do
	[ -f "$t" ] || continue
	log="$B/tests/$(basename "$t" .sh).log"
	mkdir -p "$B/tests"
	if B="$B" sh "$t" >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "ok   integration/$(basename "$t")"
	else
		fail=$((fail + 1))
		failed="$failed integration/$(basename "$t")"
		echo "FAIL integration/$(basename "$t")"
		cat "$log"
	fi
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

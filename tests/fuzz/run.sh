#!/bin/sh
# Runs the libFuzzer harnesses that `make fuzz` built into $FUZZ_B/fuzz (default build-fuzz):
#   tests/fuzz/run.sh [NAME...]                each over its committed corpus (tests/fuzz/corpus/
#                                              NAME) plus its fixed number of new inputs, seed 1:
#                                              the pass `make test` makes (tests/run.sh)
#   tests/fuzz/run.sh --long SECONDS [NAME...] each for SECONDS (make fuzz-long), its corpus
#                                              growing in $FUZZ_B/corpus/NAME; prints libFuzzer's
#                                              last cov, ft and exec/s per harness
# NAME is sys, elf, snap, ws, spec, parse, http, stack or rt (default: all). Machines use $EMBER_BACKEND
# (default auto); guest programs come from $B/guest (default build). A crash, a leak or a broken
# invariant fails the run; its input is kept as $LOGS/NAME-crash-* (LOGS default $FUZZ_B/logs).
set -u
cd "$(dirname "$0")/../.."
FUZZ_B=${FUZZ_B:-build-fuzz}
B=${B:-build}
LOGS=${LOGS:-$FUZZ_B/logs}
export EMBER_GUEST_DIR="${EMBER_GUEST_DIR:-$B/guest}"

# NAME, new inputs in the make test pass, libFuzzer options
TABLE="sys 5000 -max_len=1024
elf 5000 -max_len=8192
snap 20000 -max_len=16384
ws 3000 -max_len=80000
spec 20000 -dict=tests/fuzz/spec.dict
parse 50000 -max_len=256
http 3000 -dict=tests/fuzz/http.dict
stack 10000 -dict=tests/fuzz/stack.dict
rt 20000 -max_len=512"

long=
if [ "${1:-}" = --long ]; then
	long=${2:-60}
	shift 2
fi
names=${*:-$(echo "$TABLE" | cut -d' ' -f1)}
mkdir -p "$LOGS"
status=0
for name in $names; do
	line=$(echo "$TABLE" | grep "^$name ") || {
		echo "no harness $name" >&2
		exit 2
	}
	runs=$(echo "$line" | cut -d' ' -f2)
	opts=$(echo "$line" | cut -d' ' -f3-)
	bin=$FUZZ_B/fuzz/fuzz_$name
	[ -x "$bin" ] || {
		echo "$bin is missing: make fuzz" >&2
		exit 2
	}
	log=$LOGS/$name.log
	if [ -n "$long" ]; then
		work=$FUZZ_B/corpus/$name
		mkdir -p "$work"
		# shellcheck disable=SC2086
		"$bin" -max_total_time="$long" -print_final_stats=1 -artifact_prefix="$LOGS/$name-" \
			$opts "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
	else
		# new inputs go to a scratch folder: the committed corpus is only read
		work=$(mktemp -d)
		# shellcheck disable=SC2086
		"$bin" -runs="$runs" -seed=1 -print_final_stats=1 -artifact_prefix="$LOGS/$name-" \
			$opts "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
	fi
	rc=$?
	[ -z "$long" ] && rm -rf "$work"
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	if [ "$rc" = 0 ]; then
		echo "ok   fuzz_$name: $execs inputs, cov $cov ft $ft, $eps exec/s"
	else
		status=1
		echo "FAIL fuzz_$name (exit $rc), log $log:"
		grep -E 'ERROR|invariant broken|runtime error|SUMMARY|Test unit written' "$log" |
			head -n 8 | sed 's/^/   | /'
	fi
done
exit $status

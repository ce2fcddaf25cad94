#!/bin/sh
# Runs the libFuzzer harnesses that `make fuzz` built into $FUZZ_B/fuzz (default build-fuzz):
#   tests/fuzz/run.sh [NAME...]                each over its committed corpus (tests/fuzz/corpus/
#                                              NAME) plus its fixed number of new inputs, seed 1:
#                                              the pass `make test` makes (tests/run.sh)
#   tests/fuzz/run.sh --long SECONDS [NAME...] each for SECONDS (make fuzz-long), its corpus
#                                              growing in $FUZZ_B/corpus/NAME; prints libFuzzer's
#                                              last cov, ft and exec/s per harness
#   tests/fuzz/run.sh --coverage [NAME...]     the line coverage of its own sources by both its
#                                              corpora, with llvm-cov (make fuzz-cov: FUZZ_B is
#                                              then build-fuzz-cov, FUZZ_CORPUS build-fuzz/corpus)
# NAME is sys, elf, snap, ws, spec, parse, http, stack, rt or bundle (default: all). Machines use
# $EMBER_BACKEND (default auto); guest programs come from $B/guest (default build). A crash, a
# leak or a broken invariant fails the run; its input is kept as $LOGS/NAME-crash-* (LOGS
# default $FUZZ_B/logs).
set -u
cd "$(dirname "$0")/../.."
FUZZ_B=${FUZZ_B:-build-fuzz}
B=${B:-build}
LOGS=${LOGS:-$FUZZ_B/logs}
CORPUS=${FUZZ_CORPUS:-$FUZZ_B/corpus} # the grown corpora (--long), kept between runs
export EMBER_GUEST_DIR="${EMBER_GUEST_DIR:-$B/guest}"

# NAME, new inputs in the make test pass, the sources it is for (--coverage), libFuzzer options
TABLE="sys 5000 src/sys/,src/fd/,src/fs/ -max_len=1024
elf 5000 src/image/ -max_len=8192
snap 20000 src/snap/snap_file.c,src/snap/snap_fmt.c -max_len=16384
ws 3000 src/cold/cold.c -max_len=80000
spec 20000 src/server/srv_spec.c -dict=tests/fuzz/spec.dict
parse 50000 src/server/srv_parse.c,src/base/base_parse.c -max_len=256
http 3000 src/server/srv_routes.c,src/server/srv_reply.c,src/server/srv_auth.c,src/server/srv_meta.c,src/server/srv_invoke.c -dict=tests/fuzz/http.dict
stack 10000 src/client/stack -dict=tests/fuzz/stack.dict
rt 20000 src/guest/ -max_len=512
bundle 5000 src/bundle/ -max_len=65536"

long=
coverage=
if [ "${1:-}" = --long ]; then
	long=${2:-60}
	shift 2
elif [ "${1:-}" = --coverage ]; then
	coverage=1
	shift
fi
names=${*:-$(echo "$TABLE" | cut -d' ' -f1)}

# coverage BIN NAME TARGETS OPTS: the line coverage of TARGETS (paths, or their beginnings) by
# the harness's corpora (the grown one of --long and the committed one), with llvm-cov; BIN is
# built with -fprofile-instr-generate -fcoverage-mapping (make fuzz-cov)
coverage()
{
	prof=$LOGS/$2.profraw
	mkdir -p "$CORPUS/$2"
	# shellcheck disable=SC2086
	LLVM_PROFILE_FILE=$prof "$1" -runs=0 $4 "$CORPUS/$2" "tests/fuzz/corpus/$2" \
		>"$LOGS/$2.log" 2>&1 || {
		echo "FAIL fuzz_$2: its corpus does not run (log $LOGS/$2.log)"
		status=1
		return
	}
	llvm-profdata merge -sparse "$prof" -o "$LOGS/$2.profdata"
	files=$(for t in $(echo "$3" | tr , ' '); do ls -d "$t"*.c 2>/dev/null || ls "$t"; done)
	# shellcheck disable=SC2086
	llvm-cov report "$1" -instr-profile="$LOGS/$2.profdata" $files |
		awk -v n="fuzz_$2" -v root="$PWD/" 'NF == 13 && $1 != "Filename" {
			sub(root, "", $1)
			printf "%s: %-16s lines %7s of %4d, branches %7s, functions %7s\n", n, $1,
				$10, $8, $13, $7 }'
}
mkdir -p "$LOGS"
status=0
for name in $names; do
	line=$(echo "$TABLE" | grep "^$name ") || {
		echo "no harness $name" >&2
		exit 2
	}
	runs=$(echo "$line" | cut -d' ' -f2)
	targets=$(echo "$line" | cut -d' ' -f3)
	opts=$(echo "$line" | cut -d' ' -f4-)
	bin=$FUZZ_B/fuzz/fuzz_$name
	[ -x "$bin" ] || {
		echo "$bin is missing: make fuzz" >&2
		exit 2
	}
	log=$LOGS/$name.log
	if [ -n "$coverage" ]; then
		coverage "$bin" "$name" "$targets" "$opts"
		continue
	fi
	if [ -n "$long" ]; then
		work=$CORPUS/$name
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

#!/bin/sh
# Runs every test: unit programs and integration suites on KVM and on ptrace, natively where
# /dev/kvm works and inside a QEMU guest with nested AMD SVM (scripts/qemu-kvm.sh) on every
# machine. One line per suite names its backend, route and syscall mode and how many checks it
# made ("ok   LABEL: N checks (S s)", "FAIL LABEL: F of N checks failed ..."); the last line sums the
# checks, not only the suites: "N suites (N failed), N checks passed, N failed". A suite fails
# when a check fails, when it exits non-zero (one failed check more when it named none), and
# when it reports no check at all. Fails, never skips, when KVM cannot be reached by either
# route.
#   tests/run.sh                 the whole plan for this machine
#   tests/run.sh --here ROUTE SUITE...   the given suites here, labelled ROUTE (the QEMU guest
#                                runs its share this way); SUITE is KIND:NAME:BACKEND:MODE
#                                or KIND:NAME:BACKEND:MODE:SHARING (EMBER_SHARING)
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
LOGS=${LOGS:-$B/tests}
export B
pass=0
fail=0
checks_pass=0
checks_fail=0
failed=""

have_kvm()
{
	[ -c /dev/kvm ] && (exec 3<>/dev/kvm) 2>/dev/null
}

# checks KIND LOG: the checks one suite reported, as "PASSED FAILED": cmocka's totals for a
# unit program, an integration script's closing "N passed, N failed" (lib.sh's finish), else
# its "ok" and "FAIL" lines (tests/fuzz/run.sh prints one per harness)
checks()
{
	if [ "$1" = unit ]; then
		sed -n -e 's/^\[  PASSED  \] \([0-9]*\) test.*/\1 0/p' \
			-e 's/^\[  FAILED  \] \([0-9]*\) test(s), listed.*/0 \1/p' "$2" |
			awk '{ p += $1; f += $2 } END { print p + 0, f + 0 }'
		return
	fi
	last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$2" | tail -n 1)
	if [ -n "$last" ]; then
		echo "$last" | sed 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/'
	else
		echo "$(grep -c '^ok ' "$2") $(grep -c '^FAIL ' "$2")"
	fi
}

# record LABEL STATUS LOG KIND
record()
{
	read -r cp cf <<EOF
$(checks "$4" "$3")
EOF
	[ "$2" != 0 ] && [ "$cf" = 0 ] && cf=1 # it failed without naming a check
	[ "$((cp + cf))" = 0 ] && cf=1         # it checked nothing: that is no pass
	checks_pass=$((checks_pass + cp))
	checks_fail=$((checks_fail + cf))
	if [ "$cf" = 0 ]; then
		pass=$((pass + 1))
		echo "ok   $1: $cp checks${secs:-}"
	else
		fail=$((fail + 1))
		failed="$failed
  $1"
		echo "FAIL $1: $cf of $((cp + cf)) checks failed (exit $2)"
		# the failed checks first, so that a view cut to the start of the output names them
		grep -E '^(FAIL |\[  (FAILED|ERROR) +\] )' "$3" | head -n 20 | sed 's/^/   ! /'
		sed 's/^/   | /' "$3"
	fi
}

# totals [ROUTE]: the closing line
totals()
{
	echo "$((pass + fail)) suites ($fail failed), $checks_pass checks passed," \
		"$checks_fail failed${1:+ ($1)}"
}

# suite KIND:NAME:BACKEND:MODE ROUTE: one unit program (KIND unit), integration script (int) or
# fuzzing harness over its corpus and a fixed number of new inputs (fuzz: tests/fuzz/run.sh)
suite()
{
	IFS=: read -r kind name backend mode share <<EOF
$1
EOF
	label="$kind/$name [backend=$backend route=$2${mode:+ syscalls=$mode}${share:+ sharing=$share}]"
	log="$LOGS/$name-$backend-${mode:-any}-${share:-upm}-$2.log"
	if [ -n "${share:-}" ]; then export EMBER_SHARING="$share"; else unset EMBER_SHARING; fi
	mkdir -p "$LOGS"
	t0=$(date +%s)
	if [ "$kind" = unit ]; then
		EMBER_BACKEND=$backend "$B/tests/unit/$name" >"$log" 2>&1
	elif [ "$kind" = fuzz ]; then
		EMBER_BACKEND=$backend LOGS="$LOGS/fuzz" sh tests/fuzz/run.sh "$name" >"$log" 2>&1
	else
		EMBER_BACKEND=$backend EMBER_SYSCALLS=${mode:-guest} \
			sh "tests/integration/$name.sh" >"$log" 2>&1
	fi
	rc=$?
	secs=" ($(($(date +%s) - t0)) s)" # which suites the time goes to
	record "$label" $rc "$log" "$kind"
}

# The suites of one backend, natively. Unit programs that need no machine run once; test_kvm
# and test_slots are the KVM backend's own and run wherever KVM does.
UNIT_VM="test_pool test_isolation test_errors test_hint test_shell test_sandbox test_share test_mem test_bundle_map test_deadline test_pad"
UNIT_PURE="test_base test_park test_gostarts test_opt test_snap_file test_elf test_sites test_x86 test_logs test_image_name test_demand test_cpu test_lb test_bench_samples test_ws test_land test_vma test_spec test_rt_mode test_serve_log test_conf_parse test_padsel test_history test_cstore test_bench_knobs test_workers_merge"
# the fuzzing harnesses (make fuzz); those that make machines run on each backend there is
FUZZ_PURE="snap spec parse stack rt bundle"
FUZZ_VM="sys elf ws http"
INT_ALL="test_run test_cpu test_snapshot test_guest test_corpus test_threads test_tmp test_tmpexec test_fdmeta test_shmap test_procs test_proccalls test_cold test_coldload test_server test_async test_auth test_status test_logs test_stack test_secrets test_kill9 test_workers test_slow test_suite_virtine test_errors test_sandbox test_demand test_lb test_cluster test_memory test_files test_files_server test_python test_runtimes test_bench_all test_bench_programs test_conformance test_console test_options"
# every integration suite runs in the default syscall mode (guest); these also with syscalls=trap
INT_TRAP="test_run test_snapshot test_suite_virtine test_cold"
# also in the other sharing modes (upm is the default): the whole suite's outputs, fresh state
UNIT_SHARING="test_isolation"
INT_SHARING="test_snapshot test_suite_virtine"
plan_native()
{
	for u in $UNIT_VM; do echo "unit:$u:$1:"; done
	for t in $INT_ALL; do echo "int:$t:$1:guest"; done
	for t in $INT_TRAP; do echo "int:$t:$1:trap"; done
	# ptrace holds private copies in every mode: the other modes are KVM's
	[ "$1" = kvm ] || return 0
	for m in off ksm; do
		for u in $UNIT_SHARING; do echo "unit:$u:$1::$m"; done
		for t in $INT_SHARING; do echo "int:$t:$1:guest:$m"; done
	done
}

# What runs inside QEMU: on a machine with its own KVM (PVM) the core and the crash suites, to
# catch what SVM does differently; without one, every KVM suite that matters (the README says
# which), so that KVM is tested at all, in two guests side by side (one emulated CPU each).
QEMU_WITH_KVM="unit:test_kvm:kvm: unit:test_slots:kvm: unit:test_isolation:kvm: unit:test_share:kvm: unit:test_mem:kvm:
unit:test_deadline:kvm: int:test_run:kvm:guest int:test_snapshot:kvm:guest int:test_guest:kvm:guest
int:test_backends:kvm: int:test_threads:kvm:guest int:test_corpus:kvm:guest int:test_tmp:kvm:guest
int:test_procs:kvm:guest int:test_runtimes:kvm:guest"
QEMU_WITHOUT_KVM_1="unit:test_kvm:kvm: unit:test_slots:kvm: unit:test_isolation:kvm: unit:test_pool:kvm: int:test_backends:kvm:
unit:test_share:kvm: unit:test_mem:kvm: int:test_server:kvm:guest"
QEMU_WITHOUT_KVM_2="int:test_run:kvm:guest int:test_snapshot:kvm:guest int:test_guest:kvm:guest
int:test_cold:kvm:guest int:test_run:kvm:trap int:test_threads:kvm:guest int:test_corpus:kvm:guest
int:test_tmp:kvm:guest int:test_procs:kvm:guest int:test_runtimes:kvm:guest
int:test_conformance:kvm:guest"

if [ "${1:-}" = --here ]; then
	route=$2
	shift 2
	for s in "$@"; do suite "$s" "$route"; done
	totals "$route"
	[ "$fail" = 0 ]
	exit
fi

# qemu_start N SUITE...: boots QEMU guest N in the background to run the suites with this
# same script; qemu_collect N waits for it and counts its lines
qemu_start()
{
	n=$1
	shift
	# shellcheck disable=SC2086
	scripts/qemu-kvm.sh run --timeout 2400 --rw "$LOGS" --env LOGS="$LOGS" \
		--env SUITE_SIZES=small --env EMBER_TEST_TIMEOUT=120 -- \
		sh tests/run.sh --here qemu-svm "$@" \
		>"$LOGS/qemu-$n.log" 2>&1 &
	eval "qpid_$n=\$!"
	qpids="$qpids $!"
}

qemu_collect()
{
	qlog=$LOGS/qemu-$1.log
	eval "wait \$qpid_$1"
	qrc=$?
	grep -E '^(ok|FAIL) ' "$qlog"
	q_fail=$(grep -c '^FAIL ' "$qlog")
	pass=$((pass + $(grep -c '^ok ' "$qlog")))
	fail=$((fail + q_fail))
	# the guest's suite lines carry their checks: "ok   L: N checks", "FAIL L: F of N checks"
	read -r qp qf <<EOF
$(sed -n -e 's/^ok   .*: \([0-9]*\) checks\( (.*)\)\{0,1\}$/\1 0/p' \
		-e 's/^FAIL .*: \([0-9]*\) of \([0-9]*\) checks failed.*/\2 \1/p' "$qlog" |
		awk '{ p += $1 - $2; f += $2 } END { print p + 0, f + 0 }')
EOF
	checks_pass=$((checks_pass + qp))
	checks_fail=$((checks_fail + qf))
	if [ "$qrc" != 0 ] && [ "$q_fail" = 0 ]; then
		# the guest itself failed (no KVM inside, no boot, timeout): loud, never a skip
		fail=$((fail + 1))
		checks_fail=$((checks_fail + 1))
		failed="$failed
  QEMU guest $1 (exit $qrc)"
		echo "FAIL QEMU guest $1 with nested SVM (exit $qrc):"
		tail -n 30 "$qlog" | sed 's/^/   | /'
	elif [ "$q_fail" != 0 ]; then
		grep -v -E '^ok ' "$qlog" | sed 's/^/   | /' | tail -n 80
		failed="$failed
$(grep '^FAIL ' "$qlog" | sed 's/^FAIL /  /')"
	fi
}

mkdir -p "$LOGS"
qpids=""
trap 'kill $qpids 2>/dev/null' EXIT
# the kernel and initramfs once (cached under build/qemu), before guests that share them
if ! scripts/qemu-kvm.sh prepare >"$LOGS/qemu-prepare.log" 2>&1; then
	fail=$((fail + 1))
	checks_fail=$((checks_fail + 1))
	failed="$failed
  preparing the QEMU guest"
	echo "FAIL preparing the QEMU guest's kernel and initramfs:"
	sed 's/^/   | /' "$LOGS/qemu-prepare.log"
fi
# the guests first, so that they run while the native suites use the other core
if have_kvm; then
	echo "##### /dev/kvm works: every suite on KVM and on ptrace natively, a share in QEMU #####"
	qemu_start 1 $QEMU_WITH_KVM
	guests=1
else
	echo "##### no /dev/kvm: KVM suites inside two QEMU guests, ptrace natively #####"
	qemu_start 1 $QEMU_WITHOUT_KVM_1
	qemu_start 2 $QEMU_WITHOUT_KVM_2
	guests="1 2"
fi

# every unit program and integration script is in a list above: one left out fails the run
for f in tests/unit/test_*.c tests/integration/test_*.sh; do
	n=$(basename "${f%.*}")
	case " test_kvm test_slots $UNIT_VM $UNIT_PURE $INT_ALL test_backends test_install test_suite_native " in
	*" $n "*) ;;
	*)
		fail=$((fail + 1))
		checks_fail=$((checks_fail + 1))
		failed="$failed
  $f: in no list of tests/run.sh"
		echo "FAIL $f: in no list of tests/run.sh, so make test would never run it"
		;;
	esac
done
for u in $UNIT_PURE; do suite "unit:$u:none:" native; done
for f in $FUZZ_PURE; do suite "fuzz:$f:none:" native; done
fuzz_backends=ptrace
have_kvm && fuzz_backends="kvm ptrace"
for b in $fuzz_backends; do
	for f in $FUZZ_VM; do suite "fuzz:$f:$b:" native; done
done
# test_install (make install, the embedding example) tests the installed tree, not a backend:
# once, on KVM where it works, else on ptrace
if have_kvm; then
	for s in unit:test_kvm:kvm: unit:test_slots:kvm: $(plan_native kvm) int:test_backends:kvm: int:test_install:kvm:; do
		suite "$s" native
	done
else
	suite int:test_install:ptrace: native
fi
for s in $(plan_native ptrace) int:test_suite_native:none:; do suite "$s" native; done

for n in $guests; do qemu_collect "$n"; done
trap - EXIT

[ -n "$failed" ] && printf 'failed:%s\n' "$failed"
totals
[ "$fail" = 0 ]

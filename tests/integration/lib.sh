# Shared helpers for the integration tests (sourced, not run): the backend choice, `ember run`
# wrappers, pass/fail counting and reading the --stats JSON. POSIX sh.
# After sourcing: B (build dir), E (ember binary), G (guest dir), tmp (removed at exit).

B=${B:-build}
E=$B/ember
G=$B/guest
pass=0
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# have_kvm: /dev/kvm is a character device that opens read-write. The -c test comes first
# because `<>` would create a missing file.
have_kvm()
{
	[ -c /dev/kvm ] && (exec 3<>/dev/kvm) 2>/dev/null
}

# pick_backend: kvm when have_kvm, else ptrace; a preset EMBER_BACKEND of kvm or ptrace wins.
# Prints one loud line saying which backend these tests exercise, and whether ptrace was asked
# for (tests/run.sh runs every suite on each backend) or taken because KVM does not work here.
pick_backend()
{
	fell_back=""
	if [ -z "${EMBER_BACKEND:-}" ] || [ "$EMBER_BACKEND" = auto ]; then
		if have_kvm; then
			EMBER_BACKEND=kvm
		else
			EMBER_BACKEND=ptrace
			fell_back=1
		fi
	fi
	export EMBER_BACKEND
	if [ "$EMBER_BACKEND" = kvm ]; then
		echo "##### BACKEND UNDER TEST: kvm #####"
	elif [ -n "$fell_back" ]; then
		echo "##### BACKEND UNDER TEST: ptrace -- /dev/kvm does not work here: THE KVM BACKEND WAS NOT EXERCISED #####"
	else
		echo "##### BACKEND UNDER TEST: $EMBER_BACKEND, as EMBER_BACKEND asks (no hardware isolation; the KVM run of this suite is a run of its own) #####"
	fi
}

ok()
{
	pass=$((pass + 1))
	echo "ok   $1"
}

# bad MSG: a failed check; shows the start of the last run's stderr
bad()
{
	fail=$((fail + 1))
	echo "FAIL $1"
	[ -s "$tmp/err" ] && sed 's/^/     | /' "$tmp/err" | head -n 8
	return 0
}

# check MSG CMD...: ok when CMD succeeds
check()
{
	msg=$1
	shift
	if "$@"; then
		ok "$msg"
	else
		bad "$msg"
	fi
}

# er ARGS...: `ember run` on the backend under test, stdin from $tmp/in (empty unless written),
# stdout to $tmp/out, stderr to $tmp/err; sets rc. A hung run is killed after 60 s.
# EMBER_TEST_TIMEOUT=SECS (the QEMU route, under emulation) raises ember's own default timeout
# and that bound with it; a --timeout among ARGS still wins.
er()
{
	[ -f "$tmp/in" ] || : >"$tmp/in"
	timeout -k 5 $((${EMBER_TEST_TIMEOUT:-10} + 50)) "$E" run --backend "$EMBER_BACKEND" \
		${EMBER_TEST_TIMEOUT:+--timeout "$EMBER_TEST_TIMEOUT"} "$@" <"$tmp/in" >"$tmp/out" \
		2>"$tmp/err"
	rc=$?
}

# req TEXT: the request the next runs read
req()
{
	printf '%s' "$1" >"$tmp/in"
}

# copies N FILE: $tmp/want is N copies of FILE
copies()
{
	: >"$tmp/want"
	i=0
	while [ "$i" -lt "$1" ]; do
		cat "$2" >>"$tmp/want"
		i=$((i + 1))
	done
}

# expect_rc WANT MSG: checks the last run's exit status
expect_rc()
{
	if [ "$rc" = "$1" ]; then
		ok "$2: exit $1"
	else
		bad "$2: exit $rc, expected $1"
	fi
}

# out_is TEXT MSG: the last run's stdout is exactly TEXT plus a newline
out_is()
{
	printf '%s\n' "$1" >"$tmp/want"
	if cmp -s "$tmp/out" "$tmp/want"; then
		ok "$2: output '$1'"
	else
		bad "$2: output '$(head -c 200 "$tmp/out" | tr '\n' '|')', expected '$1'"
	fi
}

# out_exact TEXT MSG: the last run's stdout is exactly TEXT, no newline added (a handler's result)
out_exact()
{
	printf '%s' "$1" >"$tmp/want"
	if cmp -s "$tmp/out" "$tmp/want"; then
		ok "$2: output '$1'"
	else
		bad "$2: output '$(head -c 200 "$tmp/out" | tr '\n' '|')', expected '$1'"
	fi
}

# has FILE ERE MSG: some line of FILE matches ERE
has()
{
	if grep -Eq -- "$2" "$1"; then
		ok "$3"
	else
		bad "$3 (no /$2/ in $(basename "$1"))"
	fi
}

# stats PYEXPR MSG: evaluates PYEXPR with j = the --stats JSON (the last line of $tmp/err);
# ok when it is true
stats()
{
	if tail -n 1 "$tmp/err" | python3 -c '
import json, sys
try:
    j = json.loads(sys.stdin.read())
except ValueError as e:
    sys.exit("stats: not JSON: %s" % e)
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" 2>"$tmp/pyerr"; then
		ok "$2"
	else
		bad "$2"
		sed 's/^/     | /' "$tmp/pyerr" | tail -n 3
	fi
}

# finish: prints the totals and exits non-zero when a check failed
finish()
{
	echo "$pass passed, $fail failed (backend $EMBER_BACKEND)"
	[ "$fail" = 0 ]
	exit
}

# make_secrets DIR: the credentials a test server is started with (--secrets DIR), as OpenFaaS
# keeps them; sets AUTH to curl's -u value for them
make_secrets()
{
	mkdir -p "$1"
	printf 'tester\n' >"$1/basic-auth-user"
	printf 'pw-%s-%s\n' "$$" "$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')" >"$1/basic-auth-password"
	chmod 600 "$1/basic-auth-user" "$1/basic-auth-password"
	AUTH="tester:$(cat "$1/basic-auth-password")"
}

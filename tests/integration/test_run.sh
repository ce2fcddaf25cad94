#!/bin/sh
# `ember run` on the guest programs: libc variants, native equivalence, argv/env, exit statuses,
# crashes, timeouts, limits, denied syscalls, rejected images and bad usage, --stats.
# Run from the repository root; B is the build directory (default build). One line per check.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend

# hello in all four builds
req bob
for v in musl glibc musl-pie glibc-pie; do
	er "$G/hello.$v"
	expect_rc 0 "hello.$v"
	out_is 'Hello, bob!' "hello.$v"
done

# workout: the same output inside Ember as natively, on the same request
seq 1 3000 >"$tmp/in"
for v in musl glibc; do
	"$G/workout.$v" <"$tmp/in" >"$tmp/native" 2>/dev/null
	er "$G/workout.$v"
	expect_rc 0 "workout.$v"
	if [ -s "$tmp/native" ] && cmp -s "$tmp/out" "$tmp/native"; then
		ok "workout.$v: output equals the native run's"
	else
		bad "workout.$v: output differs from the native run's"
		diff "$tmp/native" "$tmp/out" | head -n 6 | sed 's/^/     | /'
	fi
done
req ''

# argv and environment
for v in musl glibc; do
	er --env TEST_A=1 --env OTHER=2 "$G/args.$v" first 'sec ond'
	expect_rc 0 "args.$v"
	has "$tmp/out" '^argv\[1\]=first$' "args.$v: argv[1]"
	has "$tmp/out" '^argv\[2\]=sec ond$' "args.$v: argv[2] keeps its space"
	has "$tmp/out" '^env TEST_A=1$' "args.$v: --env TEST_A=1 reaches the program"
	has "$tmp/out" '^ok$' "args.$v: prints ok"
done

# exit status passthrough
er "$G/exitcode.musl" 42
expect_rc 42 "exitcode 42"
has "$tmp/err" '^exiting 42$' "exitcode 42: its stderr is passed through"

# crashes: exit status and a reason on stderr
crash()
{
	er "$G/$1.musl"
	expect_rc "$2" "$1"
	has "$tmp/err" "$3" "$1: stderr says /$3/"
	has "$tmp/out" '^before$' "$1: output before the crash is kept"
}
crash crash_null 139 'page fault.*null pointer'
crash crash_abort 134 'signal 6|ABRT|abort'
crash crash_stack 139 'stack overflow'
crash crash_div 136 'divide'
crash crash_ud2 132 'invalid opcode'
crash crash_hlt 139 'general protection|page fault'

# isolation: a permission taken away takes effect at once, in every syscall mode
req ro
er "$G/isolation.musl"
expect_rc 139 "isolation ro"
has "$tmp/err" '^ember: page fault at address 0x[0-9a-f]+, rip' "isolation ro: a write after mprotect(PROT_READ) faults"
out_is 'read-only 1' "isolation ro"
if [ "${EMBER_SYSCALLS:-trap}" = trap ]; then
	# (the in-guest runtime's pool keeps freed memory readable within the invocation)
	req unmap
	er "$G/isolation.musl"
	expect_rc 139 "isolation unmap"
	has "$tmp/err" '^ember: page fault at address 0x[0-9a-f]+, rip' "isolation unmap: a read after munmap faults"
fi

# the host survives a crash: the next run works
req survivor
er "$G/hello.musl"
expect_rc 0 "hello after crashes"
out_is 'Hello, survivor!' "hello after crashes"
req ''

# timeout: a 1 s limit ends the endless loop (the bound leaves room for a slow machine; the
# harness itself kills a hung run after 60 s)
t0=$(date +%s)
er --timeout 1 "$G/loop.musl"
t1=$(date +%s)
expect_rc 124 "loop --timeout 1"
check "loop --timeout 1: ended after $((t1 - t0)) s (bound 30 s)" [ $((t1 - t0)) -le 30 ]
has "$tmp/out" '^looping$' "loop: output before the timeout is kept"

# memory: malloc fails inside the guest, which reports it and exits normally
er --mem 64M "$G/membomb.musl"
expect_rc 0 "membomb --mem 64M"
has "$tmp/out" '^out of memory after [0-9]+ MiB$' "membomb: prints 'out of memory after'"

# output limit: 126, and stdout holds exactly the limit
er --output-limit 1M "$G/outbomb.musl"
expect_rc 126 "outbomb --output-limit 1M"
n=$(wc -c <"$tmp/out" | tr -d ' ')
check "outbomb: stdout is $n bytes (limit 1048576)" [ "$n" -eq 1048576 ]

# denied syscalls fail with the right errno
# syscall instructions made at run time were never rewritten: they are served all the same,
# by the host's emulation (a write to a descriptor that is not open is its EBADF), as natively
er "$G/rawsys.musl"
"$G/rawsys.musl" >"$tmp/native" 2>&1
expect_rc 0 "rawsys"
check "rawsys: the output is the native run's" cmp -s "$tmp/out" "$tmp/native"
has "$tmp/out" "^wrote 12; to fd 99: -9$" "rawsys: a raw write served, EBADF for fd 99"

er "$G/forbidden.musl"
expect_rc 0 "forbidden"
# fork makes a child virtine; /bin/sh is no file of a function without files
for want in 'fork: ok' 'socket: EACCES' 'open: EACCES' 'execve: ENOENT'; do
	has "$tmp/out" "^$want\$" "forbidden: $want"
done

er "$G/sleepy.musl"
expect_rc 0 "sleepy"
out_is slept "sleepy"

# legacy system-call instructions are refused when run, not before: a program that holds one and
# never executes it runs; one that executes it dies of SIGSYS with a one-line reason naming it
for name in bad_int80 bad_sysenter; do
	insn=sysenter
	[ "$name" = bad_int80 ] && insn='int $0x80'
	er "$G/$name.musl"
	expect_rc 0 "$name, not executed"
	out_is "${name#bad_} not executed" "$name, not executed"
	er "$G/$name.musl" run
	expect_rc 159 "$name, executed"
	check "$name, executed: one line on stderr" [ "$(wc -l <"$tmp/err")" -eq 1 ]
	check "$name, executed: the reason names $insn" grep -qF -- "uses $insn" "$tmp/err"
	check "$name, executed: nothing on stdout" [ ! -s "$tmp/out" ]
done
# where it was: the address of the instruction (the ptrace backend cannot tell a sysenter's)
want=$(objdump -d "$G/bad_int80.musl" | awk '/int +\$0x80/ { sub(":", "", $1); print $1; exit }')
er "$G/bad_int80.musl" run
check "bad_int80: the reason names its address 0x$want" grep -qF -- "at 0x$want:" "$tmp/err"

# malformed ELF corpus: each is refused with 125 and exactly one `ember:` line, never hangs
mkdir "$tmp/badelf"
if "$B/tests/mkbadelf" "$G/hello.musl" "$tmp/badelf" >/dev/null 2>&1; then
	total=0
	wrong=0
	for f in "$tmp"/badelf/*; do
		total=$((total + 1))
		timeout -k 2 10 "$E" run --backend "$EMBER_BACKEND" "$f" </dev/null >/dev/null \
			2>"$tmp/err"
		r=$?
		lines=$(wc -l <"$tmp/err")
		if [ "$r" != 125 ] || [ "$lines" -ne 1 ] || ! grep -q '^ember: ' "$tmp/err"; then
			wrong=$((wrong + 1))
			echo "     | $(basename "$f"): exit $r, $lines stderr lines: $(head -n 1 "$tmp/err")"
		fi
	done
	: >"$tmp/err"
	check "malformed ELF corpus: $total files, $wrong handled wrongly" \
		[ $((total > 0 && wrong == 0)) = 1 ]
else
	bad "mkbadelf failed"
fi

# bad usage and missing programs
er
expect_rc 125 "no program"
er --no-such-option "$G/hello.musl"
expect_rc 125 "unknown option"
er --mem abc "$G/hello.musl"
expect_rc 125 "--mem abc"
er "$tmp/does-not-exist"
expect_rc 125 "missing program file"
has "$tmp/err" 'does-not-exist' "missing program file: named on stderr"

# --stats: the last stderr line is one JSON object with the counters
req stats
er --stats "$G/hello.musl"
expect_rc 0 "hello --stats"
out_is 'Hello, stats!' "hello --stats"
stats 'isinstance(j, dict)' "stats: the last stderr line is a JSON object"
stats "j['backend'] == '$EMBER_BACKEND'" "stats: backend is $EMBER_BACKEND"
stats "j['exit_code'] == 0" "stats: exit_code 0"
stats "j['rewritten_sites'] > 0" "stats: rewritten_sites > 0"
stats "any(s['name'] in ('write', 'writev') and s['served'] > 0 for s in j['syscalls'])" \
	"stats: write/writev served"
stats "j['exits']['total'] > 0 and j['exits']['hypercall'] > 0" "stats: exits counted"
stats "len(j['invocations']) == 1" "stats: one invocation"
req ''
er --stats "$G/forbidden.musl"
stats "any(s['name'] == 'socket' and s['denied'] > 0 for s in j['syscalls'])" "stats: socket denied"
for s in fork execve wait4; do
	stats "any(s['name'] == '$s' and s['served'] > 0 for s in j['syscalls'])" "stats: $s served"
done
# open without files is served (the made /proc files are there), its EACCES checked above
stats "any(s['name'] == 'open' and s['served'] > 0 for s in j['syscalls'])" \
	"stats: open served, without files"
er --stats "$G/crash_null.musl"
stats "j['exit_code'] == 139 and j['invocations'][0]['outcome'] == 'crash'" \
	"stats: crash_null outcome crash, exit_code 139"
# the CPU time an invocation cost: a spin to a 0.3 s timeout costs most of it (on ptrace in the
# stub), hello next to nothing
req loop
er --stats --timeout 0.3 "$G/crashy.musl"
stats "j['invocations'][0]['outcome'] == 'timeout' and j['invocations'][0]['cpu_us'] >= 100000" \
	"stats: a 0.3 s spin costs at least 0.1 s of CPU"
stats "j['invocations'][0]['cpu_us'] <= j['invocations'][0]['run_us'] * 2 + 100000" \
	"stats: and not much more than its run"
req ''
er --stats "$G/hello.musl"
stats "0 < j['invocations'][0]['cpu_us'] < 100000" "stats: hello costs some CPU, under 0.1 s"

# no KVM: --backend kvm is refused with a reason naming /dev/kvm
if ! have_kvm; then
	timeout 30 "$E" run --backend kvm "$G/hello.musl" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	expect_rc 125 "--backend kvm without /dev/kvm"
	has "$tmp/err" '/dev/kvm' "--backend kvm without /dev/kvm: stderr names /dev/kvm"
fi

finish

#!/bin/sh
# Threads and signals as careless or hostile programs use them (tests/guest/hostile_threads.c,
# one case per mode), and what an invocation leaves never reaching the next (threadleak.c), a
# thread that spins preempted, --threads and --cpus: Linux's answers where a native run gives them, in both syscall modes and,
# on KVM, on one vCPU and on two; where the program misbehaves, a run that ends (at its timeout
# at worst), a machine that goes on, and a next invocation with nothing of the last one.
# Run from the repository root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
H=$G/hostile_threads.musl
# the ptrace backend runs one vCPU
CPUS=1
[ "$EMBER_BACKEND" = kvm ] && CPUS="1 2"
req "hostile"

# like MODE [ARG]: exit 0 and the native run's stdout, in every invocation of --repeat 2, in
# both syscall modes, on each number of vCPUs
like()
{
	"$H" "$@" <"$tmp/in" >"$tmp/native" 2>/dev/null
	cat "$tmp/native" "$tmp/native" >"$tmp/native2"
	for mode in trap guest; do
		for c in $CPUS; do
			er --syscalls "$mode" --cpus "$c" --repeat 2 --timeout 20 "$H" "$@"
			expect_rc 0 "$* ($mode, $c vCPU)"
			check "$* ($mode, $c vCPU): the native run's output, twice" \
			    cmp -s "$tmp/out" "$tmp/native2"
			# what differed, for a failure seen once (under emulation, say)
			cmp -s "$tmp/out" "$tmp/native2" ||
				diff "$tmp/native2" "$tmp/out" | head -n 8 | sed 's/^/     | /'
		done
	done
}

# timeouts MODE: the run's own timeout ends both invocations (not the test's), each starting
# afresh (the same output twice)
timeouts()
{
	for mode in trap guest; do
		for c in $CPUS; do
			er --syscalls "$mode" --cpus "$c" --repeat 2 --timeout 1 "$H" "$1"
			expect_rc 124 "$1 ($mode, $c vCPU)"
			check "$1 ($mode, $c vCPU): both invocations timed out at --timeout" \
			    [ "$(grep -c 'timed out' "$tmp/err")" = 2 ]
			check "$1 ($mode, $c vCPU): the second invocation as fresh as the first" \
			    [ "$(wc -l <"$tmp/out") $(sort -u "$tmp/out" | wc -l)" = "2 1" ]
		done
	done
}

# dies MODE [ARG]: SIGSEGV (139) in both invocations, with Ember's line saying why, as on Linux
dies()
{
	for mode in trap guest; do
		er --syscalls "$mode" --repeat 2 --timeout 5 "$H" "$@"
		expect_rc 139 "$* ($mode)"
		check "$* ($mode): both invocations died of it, the machine went on" \
		    [ "$(grep -c '^ember: ' "$tmp/err")" = 2 ]
	done
}

# one invocation's waiter, handler, mask, pending signal, timer and alternate stack: gone in
# the next; a wait interrupted by a handler with SA_RESTART goes on, without it returns EINTR
like leftover
like restart
like norestart

# clone in a loop: EAGAIN at --threads (256 by default, the first included), in every invocation
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 "$H" bomb
	expect_rc 0 "bomb ($mode)"
	printf 'threads made: 255, then Resource temporarily unavailable\n' >"$tmp/want"
	cat "$tmp/want" "$tmp/want" >"$tmp/want2"
	check "bomb ($mode): EAGAIN past 256 threads, in both invocations" cmp -s "$tmp/out" "$tmp/want2"
	er --syscalls "$mode" --threads 10 "$H" bomb
	out_is "threads made: 9, then Resource temporarily unavailable" "bomb ($mode, --threads 10)"
done

# a SIGSEGV handler that returns to the faulting load: Linux faults forever, Ember until
# --timeout, and the next invocation starts afresh
timeouts segvloop

# a garbage signal frame (a non-canonical, kernel, runtime or handler's address, an unmapped
# frame), a SIGSEGV handler that faults until the stack is gone, a thread on an unmapped or
# non-canonical stack: SIGSEGV
for how in noncanonical kernel runtime isr unmapped; do
	dies sigreturn "$how"
done
dies segvnest
dies badstack 0x100000000
dies badstack 0x8000000000000000
# a thread on a stack in the in-guest runtime's memory (its code, its vCPUs' areas): trap mode
# faults as Linux does; guest mode may write there (the runtime's memory is the program's own),
# and either way the next invocation behaves the same
for sp in 0x1f0000 0xc4000 0x180000; do
	for mode in trap guest; do
		er --syscalls "$mode" --repeat 2 --timeout 5 "$H" badstack "$sp"
		case $rc in 0 | 139) ok "badstack $sp ($mode): exit $rc" ;;
		*) bad "badstack $sp ($mode): exit $rc, not the program's 0 or 139" ;;
		esac
		# the rip a fault names too: the QEMU route once named another thread's (a fault
		# still in flight in KVM when a slice ended went to the next registers, test_kvm)
		check "badstack $sp ($mode): both invocations alike" \
		    [ "$(sort -u "$tmp/err" "$tmp/out" | wc -l)" -le 1 ]
	done
done

# a main thread that waits with sched_yield for another: the other runs (the main thread,
# restored inside the in-guest runtime, does not keep the vCPU for itself)
like yield

# threads taken off their vCPU mid-loop go on where they were, registers and FPU state
like preempt 3

# the request read on vCPU 1 by the one thread left (the main one ended with exit): every
# invocation runs it
like snaplone

# a thread that spins forever while the main thread waits for it: the invocation ends at
# --timeout, and the next one starts afresh; signals to a thread that spends its time inside the
# in-guest runtime, each waited for with sched_yield: each delivered
timeouts spin
like rtsignals

# sigsuspend with the signal pending already (block, raise, suspend): the handler runs at once
like sigsuspend
like sigwait

# in a handler: sa_mask and the signal blocked (not with SA_NODEFER), siginfo, the alternate
# stack (SA_ONSTACK); SA_RESETHAND; the mask back after it
like sigmasks

# futex: bad addresses (unmapped, misaligned, read-only), bad timeouts, a zero bitset, requeue
# and wake_op on the wrong value or memory, FUTEX_OP's signed 12-bit arguments; FUTEX_WAKE_OP's
# addition against a thread's atomic ones on another vCPU
like futex
like wakeop_race

# the snapshot, in every invocation restored from it: a waiter woken just before it, and the
# main thread waiting on vCPU 0 while another thread reads the request on vCPU 1
like snapwake
like snapwait
# a thread making calls the host serves on vCPU 1 as it is taken
like snapcall
# the FPU state of the main thread inside the runtime while another reads the request
like snapfpu

# a POSIX timer on CLOCK_MONOTONIC set for an absolute time fires then
like timerabs
# a thread taking exceptions in a loop (int3, a handler) on vCPU 1 as the snapshot is taken
like snaptrap

# a wake right after a signal to a waiter, on one vCPU (natively: one CPU): the waiter waits
# still, so the wake counts it, its wait returns 0 and its handler runs after
all=$CPUS
CPUS=1
like wakesig
CPUS=$all

# a SA_RESTART handler ends a futex wait with a timeout (EINTR) and makes one without again
like timedrestart

# what one invocation leaves behind (threads running or waiting, signal handlers, masks,
# pending signals, timers, a thread's writes) never reaches the next
C=$B/corpus

req x
"$G/threadleak.musl" <"$tmp/in" >"$tmp/native" 2>/dev/null
copies 3 "$tmp/native"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 3 "$G/threadleak.musl"
	expect_rc 0 "threadleak $mode"
	check "threadleak $mode: each invocation finds no thread, waiter, handler, mask, pending \
signal, timer or write of the one before (three times the native run's output)" \
		cmp -s "$tmp/out" "$tmp/want"
done

# preemption: a thread that never yields does not keep the only vCPU from the others
req spin
"$C/pt_spin.musl" <"$tmp/in" >"$tmp/native" 2>/dev/null
copies 2 "$tmp/native"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 --stats "$C/pt_spin.musl"
	expect_rc 0 "pt_spin $mode"
	check "pt_spin $mode: the spinner was preempted, the output is the native run's twice" \
		cmp -s "$tmp/out" "$tmp/want"
	stats "j['exits']['interrupt'] > 0" "pt_spin $mode: the host took the vCPU back (interrupt exits)"
done

# --threads bounds the threads of an invocation: pt_pool starts 4 workers besides main
req pool
er --threads 4 "$C/pt_pool.musl"
check "pt_pool --threads 4: the fifth thread is refused (pthread_create fails)" [ "$rc" != 0 ]
has "$tmp/err" "Resource temporarily unavailable" "pt_pool --threads 4: EAGAIN, as Linux's RLIMIT_NPROC"
er --threads 5 "$C/pt_pool.musl"
expect_rc 0 "pt_pool --threads 5"
er --threads 0 "$C/pt_pool.musl"
expect_rc 125 "--threads 0 refused"
has "$tmp/err" "threads needs a count" "--threads 0: says what it wants"

# --cpus: refused clearly where the backend cannot, parallel threads where it can
req par
if [ "$EMBER_BACKEND" = ptrace ]; then
	er --cpus 2 "$C/pt_create.musl"
	expect_rc 125 "--cpus 2 on ptrace refused"
	has "$tmp/err" "ptrace backend runs one vCPU" "--cpus 2 on ptrace: says why"
else
	"$C/pt_create.musl" <"$tmp/in" >"$tmp/native" 2>/dev/null
	copies 3 "$tmp/native"
	er --cpus 2 --repeat 3 "$C/pt_create.musl"
	expect_rc 0 "pt_create --cpus 2"
	check "pt_create --cpus 2: the native output, three times" cmp -s "$tmp/out" "$tmp/want"
	er --cpus 17 "$C/pt_create.musl"
	expect_rc 125 "--cpus 17 refused"
fi
finish

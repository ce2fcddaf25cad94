#!/bin/sh
# Threads in a virtine: what one invocation leaves (threads running or waiting, signal handlers,
# masks, pending signals, timers, a thread's writes) never reaches the next, in both syscall
# modes; a thread that spins loses its vCPU; --cpus and --threads.
. "$(dirname "$0")/lib.sh"
pick_backend
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

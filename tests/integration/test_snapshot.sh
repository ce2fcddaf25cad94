#!/bin/sh
# Snapshots and resets through `ember run --repeat`: every invocation starts from the state after
# init (globals, heap, stack, mmap), init runs once, ember_snapshot(), resets after crashes and
# timeouts, and --no-snapshot. Run from the repository root; B is the build directory.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend

# lines TEXT N MSG: stdout is TEXT repeated on N lines
lines()
{
	: >"$tmp/want"
	i=0
	while [ "$i" -lt "$2" ]; do
		printf '%s\n' "$1" >>"$tmp/want"
		i=$((i + 1))
	done
	if cmp -s "$tmp/out" "$tmp/want"; then
		ok "$3: '$1' $2 times"
	else
		bad "$3: output '$(head -c 200 "$tmp/out" | tr '\n' '|')', expected '$1' $2 times"
	fi
}

# warm_after_first N MSG: N invocations; the 2nd to the Nth started warm from the snapshot
warm_after_first()
{
	stats "len(j['invocations']) == $1 and all(i['warm'] for i in j['invocations'][1:])" \
		"$2: $1 invocations, warm from the 2nd on"
}

req request
# a global counter is 1 in every invocation: globals are reset
for v in musl glibc musl-pie glibc-pie; do
	er --repeat 5 --stats "$G/counter.$v"
	expect_rc 0 "counter.$v --repeat 5"
	lines 1 5 "counter.$v --repeat 5"
	stats "j['init']['snapshot'] is True and j['init']['snapshot_pages'] > 0" \
		"counter.$v: init.snapshot true, snapshot_pages > 0"
	warm_after_first 5 "counter.$v"
	stats "all(i['outcome'] == 'ok' and i['exit_code'] == 0 for i in j['invocations'])" \
		"counter.$v: every invocation ok"
done

# markers written by one request are seen by none of the next: static data, heap (before and
# after the snapshot, small and mmap-sized), an mmap, main's frame and a deeper stack frame
for v in musl glibc musl-pie glibc-pie; do
	"$G/marker.$v" <"$tmp/in" >"$tmp/out" 2>/dev/null
	rc=$?
	check "marker.$v native: clean" [ "$rc:$(cat "$tmp/out")" = 0:clean ]
	er --repeat 5 "$G/marker.$v"
	expect_rc 0 "marker.$v --repeat 5"
	lines clean 5 "marker.$v --repeat 5"
done

# init runs once, before the snapshot; the invocations pay only for the request
er --repeat 5 --stats "$G/slowinit.musl"
expect_rc 0 "slowinit --repeat 5"
lines 'ready yes' 5 "slowinit --repeat 5"
stats "j['init']['us'] >= 250000" "slowinit: init.us >= 250000 (the ~300 ms init counted once)"
stats "all(i['run_us'] < j['init']['us'] / 2 for i in j['invocations'])" \
	"slowinit: every run_us < init.us / 2 (init not re-run)"
warm_after_first 5 "slowinit"

# ember_snapshot(): 0 inside Ember, -1 natively; code after the call runs in every invocation
"$G/snapcall.musl" <"$tmp/in" >"$tmp/out" 2>/dev/null
has "$tmp/out" '^ember_snapshot: -1$' "snapcall native: ember_snapshot() returns -1"
er --repeat 3 --stats "$G/snapcall.musl"
expect_rc 0 "snapcall --repeat 3"
check "snapcall: 'ember_snapshot: 0' in each of 3 invocations" \
	[ "$(grep -c '^ember_snapshot: 0$' "$tmp/out")" = 3 ]
check "snapcall: a second call also returns 0, 3 times" \
	[ "$(grep -c '^again: 0$' "$tmp/out")" = 3 ]
check "snapcall: state after the snapshot is fresh and the table intact, 3 times" \
	[ "$(grep -c '^after 1, table ok$' "$tmp/out")" = 3 ]
stats "j['init']['snapshot'] is True" "snapcall: init.snapshot true"
warm_after_first 3 "snapcall"

# a crash does not poison the virtine: every invocation crashes the same way
req crash
er --repeat 3 --stats "$G/crashy.musl"
expect_rc 139 "crashy crash --repeat 3"
stats "len(j['invocations']) == 3" "crashy crash: three invocations"
stats "all(i['outcome'] == 'crash' and i['exit_code'] == 139 for i in j['invocations'])" \
	"crashy crash: each invocation crashed with 139"
check "crashy crash: three crash reports on stderr" \
	[ "$(grep -c 'null pointer' "$tmp/err")" = 3 ]
stats "all(i['warm'] for i in j['invocations'])" \
	"crashy crash: the crashed virtine is reset and used again (every invocation warm)"

# nor does a timeout: both invocations run their full second and time out
req loop
t0=$(date +%s)
er --timeout 1 --repeat 2 --stats "$G/crashy.musl"
t1=$(date +%s)
expect_rc 124 "crashy loop --timeout 1 --repeat 2"
stats "len(j['invocations']) == 2 and all(i['outcome'] == 'timeout' and i['exit_code'] == 124
    for i in j['invocations'])" "crashy loop: both invocations timed out"
check "crashy loop: ended after $((t1 - t0)) s (bound 40 s)" [ $((t1 - t0)) -le 40 ]

req fine
er --repeat 3 "$G/crashy.musl"
expect_rc 0 "crashy fine --repeat 3"
lines 'fine 1' 3 "crashy fine --repeat 3"

# --no-snapshot: every invocation loads and initialises afresh
req request
for v in musl glibc; do
	er --no-snapshot --repeat 3 --stats "$G/counter.$v"
	expect_rc 0 "counter.$v --no-snapshot --repeat 3"
	lines 1 3 "counter.$v --no-snapshot --repeat 3"
	stats "j['init']['snapshot'] is False" "counter.$v --no-snapshot: init.snapshot false"
	stats "len(j['invocations']) == 3 and not any(i['warm'] for i in j['invocations'])" \
		"counter.$v --no-snapshot: 3 invocations, none warm"
done
er --no-snapshot --repeat 3 "$G/marker.musl"
expect_rc 0 "marker --no-snapshot --repeat 3"
lines clean 3 "marker --no-snapshot --repeat 3"

# a page made writable, written and made read-only again within one request is reset too
er --repeat 4 "$G/reprotect.musl"
expect_rc 0 "reprotect --repeat 4"
lines 1 4 "reprotect --repeat 4"

# snapshot pages changed without a write the reset would see (given back and read, remapped,
# written by the host, written and made read-only) are the snapshot's again in the next request
er --repeat 3 "$G/giveback.musl"
expect_rc 0 "giveback --repeat 3"
lines intact 3 "giveback --repeat 3"

# memory given back with madvise where the program cannot write (read-only data) is put back
er --repeat 3 "$G/rodontneed.musl"
expect_rc 0 "rodontneed --repeat 3"
lines ORIGINAL 3 "rodontneed --repeat 3"

# the FPU state of init (rounding modes, a vector register) is back in every invocation, though
# each one changes it (in guest mode the runtime restores it from the snapshot's memory)
er --repeat 3 "$G/fpustate.musl"
expect_rc 0 "fpustate --repeat 3"
lines "round=towardzero q=0.099999999999999991 lq=0.0999999999999999999945 xmm15=1122334455667788" \
	3 "fpustate --repeat 3"

finish

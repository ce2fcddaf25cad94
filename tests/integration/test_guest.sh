#!/bin/sh
# The in-guest runtime (--syscalls guest): one exit per warm hello world, the red zone respected,
# clocks that never go back and stay near the host's, fresh randomness in every invocation; and
# the readiness and event calls (pipes, eventfd, timerfd, poll, select, epoll) in both modes.
. "$(dirname "$0")/lib.sh"
pick_backend
G=$B/guest

# hello world, warm: exactly one entry and one exit per invocation in guest mode
req Ember
er --syscalls guest --repeat 5 --stats "$G/hello.musl"
expect_rc 0 "hello guest --repeat 5"
stats "j['syscalls_mode'] == 'guest' and j['sites_call'] > 0" "hello guest: sites reach the runtime"
stats "all(i['exits'] == 1 for i in j['invocations'][1:])" "hello guest: one exit per warm invocation"
stats "sum(s['served'] for s in j['syscalls'] if s['name'] in ('writev', 'write')) >= 5" \
	"hello guest: writes counted though served in the guest"
er --syscalls trap --repeat 5 --stats "$G/hello.musl"
stats "all(i['exits'] > 1 for i in j['invocations'])" "hello trap: more than one exit each"
stats "j['sites_call'] == 0" "hello trap: no site reaches the runtime"
# the small static runtimes (Duktape, Lua), whose every site the loader rewrites
for lang in js lua; do
	rt=$lang
	[ "$lang" = js ] && rt=duktape
	er --syscalls guest --repeat 3 --stats --runtime "$rt" "functions/hello-$lang/handler.$lang"
	expect_rc 0 "hello-$lang guest"
	stats "all(i['exits'] <= 2 for i in j['invocations'][1:])" \
		"hello-$lang guest: at most two exits per warm invocation"
done

# a leaf function with live data in its red zone around a syscall keeps the trapping form
for mode in trap guest; do
	er --syscalls "$mode" --stats "$G/redzone.musl"
	expect_rc 0 "redzone $mode"
	out_is "redzone ok" "redzone $mode"
	stats "j['sites_trap'] > 0" "redzone $mode: some sites keep the trapping form"
done

# the memory calls: the same answers as a native run in both modes, over invocations restored
# from one snapshot; in guest mode served by the runtime, trapping sites included
req hi
"$G/memcalls.musl" <"$tmp/in" >"$tmp/native" 2>/dev/null
cat "$tmp/native" "$tmp/native" >"$tmp/native2"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 --stats "$G/memcalls.musl"
	expect_rc 0 "memcalls $mode"
	check "memcalls $mode: output equals the native run's, twice" cmp -s "$tmp/out" "$tmp/native2"
	er --syscalls "$mode" "$G/memcalls.musl" wp
	check "memcalls wp $mode: a write to a page made read-only kills it (SIGSEGV)" [ "$rc" = 139 ]
	out_is "before" "memcalls wp $mode: it ran up to the write"
done
# structures at odd addresses and calls whose new and old values share a buffer: as natively
req "hello world"
"$G/unaligned.musl" <"$tmp/in" >"$tmp/native" 2>/dev/null
cat "$tmp/native" "$tmp/native" >"$tmp/native2"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 "$G/unaligned.musl"
	expect_rc 0 "unaligned $mode"
	check "unaligned $mode: output equals the native run's, twice" cmp -s "$tmp/out" "$tmp/native2"
done
# buffers the program cannot use (unmapped, non-canonical, read-only, page 0, the runtime's area,
# in an iovec after a good one): EFAULT from each call and nothing consumed or written, as
# natively with pipes (fds 0 to 2 are pipes); in guest mode the runtime's copy faults and the host
# makes the call return EFAULT (EMBER_RT_EFAULT_ENTRY) instead of ending the run
req "hello world"
cat "$tmp/in" | "$G/badbuf.musl" 2>/dev/null | cat >"$tmp/native"
check "badbuf native: every call fails with EFAULT" [ "$(grep -c ': Bad address$' "$tmp/native")" = 20 ]
cat "$tmp/native" "$tmp/native" >"$tmp/native2"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 --stats "$G/badbuf.musl"
	expect_rc 0 "badbuf $mode"
	check "badbuf $mode: output equals the native run's, twice" cmp -s "$tmp/out" "$tmp/native2"
	tail -n 1 "$tmp/err" >"$tmp/badbuf-$mode.json"
done
stats "j['sites_call'] > 0 and any(s['name'] == 'read' and s['in_guest'] > 0 for s in j['syscalls'])" \
	"badbuf guest: its reads were the runtime's"
stats "j['exits']['fault'] == 30 and all(i['outcome'] == 'ok' for i in j['invocations'])" \
	"badbuf guest: one fault exit per bad buffer the runtime touched (15 a run), and the runs went on"
check "badbuf: every call counted the same in both modes, the failed ones included" python3 -c '
import json, sys
t, g = (json.load(open(f)) for f in sys.argv[1:])
c = lambda j: {s["name"]: s["served"] for s in j["syscalls"]}
sys.exit(c(t) != c(g))' "$tmp/badbuf-trap.json" "$tmp/badbuf-guest.json"
# a call through a null function pointer in rax (a rewritten site's form), and a return to address
# 0: a page fault at 0 in both modes, as natively, never a system call
for p in crash_nullcall crash_nullret; do
	for mode in trap guest; do
		er --syscalls "$mode" "$G/$p.musl"
		expect_rc 139 "$p $mode"
		has "$tmp/err" 'page fault at address 0 \(null pointer\), rip 0$' "$p $mode: a page fault at 0"
		out_is before "$p $mode: it ran up to the call, and no further"
	done
done

# the heap unmapped in part below the break, the break moved down over it and up: fresh pages
"$G/memcalls.musl" heap <"$tmp/in" >"$tmp/native" 2>/dev/null
check "memcalls heap native: fresh pages" grep -q 'up=1 fresh=1' "$tmp/native"
cat "$tmp/native" "$tmp/native" >"$tmp/native2"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 "$G/memcalls.musl" heap
	expect_rc 0 "memcalls heap $mode"
	check "memcalls heap $mode: output equals the native run's, twice" \
		cmp -s "$tmp/out" "$tmp/native2"
done
# PROT_NONE reservations larger than guest memory (64 MiB here): reserved, cut, unmapped as
# natively; none of it can be made accessible (ENOMEM); and one an invocation keeps is gone with
# its reset (the next one gets the same address, not the one after it)
"$G/farmap.musl" <"$tmp/in" >"$tmp/native" 2>/dev/null
cat "$tmp/native" "$tmp/native" >"$tmp/native2"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 "$G/farmap.musl"
	expect_rc 0 "farmap $mode"
	check "farmap $mode: 64 GiB and 100 GiB reserved, a hole, a fixed page, unmapped: the native \
run's output, twice" cmp -s "$tmp/out" "$tmp/native2"
	er --syscalls "$mode" "$G/farmap.musl" touch
	expect_rc 0 "farmap touch $mode"
	out_is "touch=Out of memory" "farmap touch $mode: a page beyond guest memory made read-write: ENOMEM"
	er --syscalls "$mode" --repeat 3 "$G/farmap.musl" keep
	expect_rc 0 "farmap keep $mode"
	lines="$(wc -l <"$tmp/out") $(sort -u "$tmp/out" | wc -l)"
	check "farmap keep $mode: each invocation's reservation starts where the first one's did \
(3 lines, 1 address)" [ "$lines" = "3 1" ]
done
er --syscalls guest --stats "$G/memcalls.musl"
for call in brk mmap munmap mremap mprotect madvise; do
	stats "any(s['name'] == '$call' and s['served'] > 0 for s in j['syscalls'])" \
		"memcalls guest: $call is counted"
done
stats "j['sites_trap'] > 0" "memcalls guest: its red-zone mmap site keeps the trapping form"
# that site exits, and the host sends the call on to the runtime, which owns the memory map
er --syscalls guest --repeat 3 --stats "$G/memcalls.musl" bounce
check "memcalls bounce guest: zeroed memory, red zone kept, unmapped, rcx and r11 as a syscall leaves them" \
	[ "$(grep -c '^trapped_mmap=1 redzone=1 munmap=1$' "$tmp/out")" = 3 ]
stats "all(s['served'] == s['in_guest'] for s in j['syscalls'] if s['name'] in ('mmap', 'munmap'))" \
	"memcalls bounce guest: the trapped mmap was served by the runtime"
stats "all(i['exits'] == 3 for i in j['invocations'][1:])" \
	"memcalls bounce guest: the two trapping sites' exits and the last one, nothing more"
er --syscalls guest --repeat 4 --stats "$G/memcalls.musl" light
expect_rc 0 "memcalls light guest"
stats "all(i['exits'] == 1 for i in j['invocations'][1:])" \
	"memcalls light guest: mmap, munmap, mremap and brk without an exit"
stats "all(any(s['name'] == c and s['served'] >= 4 for s in j['syscalls']) for c in ('mmap', 'munmap', 'mremap', 'brk'))" \
	"memcalls light guest: each call served in every invocation"

# memfuzz: 3000 random memory calls per seed (tests/guest/memfuzz.c), the same answers and the
# same memory contents as a native run in both modes, over invocations restored from one snapshot
req hi
for seed in 1 2 3; do
	"$G/memfuzz.musl" "$seed" <"$tmp/in" >"$tmp/native" 2>/dev/null
	check "memfuzz $seed native: every page as expected (bad=0)" grep -q ' bad=0$' "$tmp/native"
	cat "$tmp/native" "$tmp/native" >"$tmp/native2"
	for mode in trap guest; do
		er --syscalls "$mode" --repeat 2 "$G/memfuzz.musl" "$seed"
		expect_rc 0 "memfuzz $seed $mode"
		check "memfuzz $seed $mode: output equals the native run's, twice" \
			cmp -s "$tmp/out" "$tmp/native2"
	done
done

# clocks and randomness, in both modes, over invocations restored from one snapshot
for mode in trap guest; do
	before=$(date +%s%N)
	er --syscalls "$mode" --repeat 5 "$G/clockrand.musl"
	after=$(date +%s%N)
	expect_rc 0 "clockrand $mode"
	check "clockrand $mode: five distinct random draws" \
		[ "$(grep '^random' "$tmp/out" | sort -u | wc -l)" -eq 5 ]
	check "clockrand $mode: monotonic never goes back, within or across invocations" \
		sh -c "! grep -q backward '$tmp/out' && grep '^mono' '$tmp/out' | awk '\$2 <= p {exit 1} {p = \$2}'"
	check "clockrand $mode: realtime within 1 ms of the host's" \
		sh -c "grep '^real' '$tmp/out' | awk -v lo=$before -v hi=$after \
			'\$2 < lo - 1000000 || \$2 > hi + 1000000 {exit 1}'"
done

# readiness and event calls over the program's own descriptors (tests/guest/events.c): pipes,
# eventfd, timerfd, poll, ppoll, select, epoll between threads, as natively (fd 0 a pipe there
# too), in both modes (and on two vCPUs on KVM), over invocations restored from one snapshot
req Ember
cat "$tmp/in" | "$G/events.musl" 2>/dev/null | cat >"$tmp/native"
check "events native: every section ran" grep -q '^nested: 1 ready; a loop: ' "$tmp/native"
cat "$tmp/native" "$tmp/native" >"$tmp/native2"
# same_events MSG: the last run's output is the native one twice; else the difference shown
same_events() {
	if cmp -s "$tmp/out" "$tmp/native2"; then
		ok "$1"
	else
		bad "$1"
		diff "$tmp/native2" "$tmp/out" | head -n 20 | sed 's/^/     | /'
	fi
}
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 --stats "$G/events.musl"
	expect_rc 0 "events $mode"
	same_events "events $mode: output equals the native run's, twice"
	stats "not any(s['denied'] for s in j['syscalls'])" "events $mode: no call refused"
done
if [ "$EMBER_BACKEND" = kvm ]; then # ptrace runs one vCPU
	er --syscalls guest --cpus 2 --repeat 2 "$G/events.musl"
	same_events "events guest --cpus 2: output equals the native run's, twice"
fi
# from a snapshot on disk: the descriptor table is in its state file, the pipe's bytes with it
er --state "$tmp/events-state" "$G/events.musl"
er --state "$tmp/events-state" --cold --repeat 2 "$G/events.musl"
expect_rc 0 "events cold"
same_events "events cold: output equals the native run's, twice"
# isolation: the pipe, eventfd, epoll and timer init made are in every invocation as init left
# them (the pipe's bytes, the count, the hour less the time since), though each invocation
# reads and writes them; what an invocation makes (a pipe and an eventfd with bytes in them,
# left open) is gone in the next
er --repeat 3 "$G/events.musl"
expect_rc 0 "events --repeat 3"
for line in "leftover descriptors: 0" "init pipe: 'init-bytes'" "init eventfd: 5" \
	"init epoll: 1 event, data 77" "init timer: between 59 and 60 minutes left: yes"; do
	check "events isolation: '$line' in each of 3 invocations" \
		[ "$(grep -c -x -F "$line" "$tmp/out")" = 3 ]
done

# RLIMIT_FSIZE, RLIMIT_DATA and RLIMIT_AS lowered and held as natively (tests/guest/rlimits.c), in both modes;
# each invocation starts with its own limits, not the ones the invocation before set
req "r"
"$G/rlimits.musl" <"$tmp/in" >"$tmp/one" 2>&1
copies 2 "$tmp/one"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 "$G/rlimits.musl"
	expect_rc 0 "rlimits $mode"
	check "rlimits $mode --repeat 2: file size, heap and mappings held by the limits, as natively" \
		cmp -s "$tmp/out" "$tmp/want"
	[ "$rc" = 0 ] && ! cmp -s "$tmp/out" "$tmp/want" && diff "$tmp/want" "$tmp/out" | head -n 4
done

finish

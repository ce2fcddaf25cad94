#!/bin/sh
# The in-guest runtime (--syscalls guest): one exit per warm hello world, the red zone respected,
# clocks that never go back and stay near the host's, fresh randomness in every invocation.
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
for lang in js lua; do
	er --syscalls guest --repeat 3 --stats --runtime "$lang" "functions/hello-$lang/handler.$lang"
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

finish

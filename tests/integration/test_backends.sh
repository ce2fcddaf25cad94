#!/bin/sh
# The two backends side by side: every crash ends with the same exit status, the same message
# and the same output on KVM as on ptrace, in both syscall modes. Needs a working /dev/kvm
# (natively, or inside the QEMU guest of scripts/qemu-kvm.sh): without one it fails.
set -u
. "$(dirname "$0")/lib.sh"
if ! have_kvm; then
	echo "FAIL /dev/kvm does not work here: this suite compares KVM with ptrace and needs both"
	exit 1
fi
echo "##### BACKENDS UNDER TEST: kvm and ptrace, side by side #####"
EMBER_BACKEND="kvm and ptrace" # for finish()

# same NAME ARGS...: one run per backend and mode; exit status, stdout and stderr must match
same()
{
	name=$1
	shift
	for mode in trap guest; do
		for b in kvm ptrace; do
			timeout -k 5 60 "$E" run --backend "$b" --syscalls "$mode" "$@" <"$tmp/in" \
				>"$tmp/$b.out" 2>"$tmp/$b.err"
			echo "exit $?" >>"$tmp/$b.err"
		done
		if cmp -s "$tmp/kvm.err" "$tmp/ptrace.err" && cmp -s "$tmp/kvm.out" "$tmp/ptrace.out"; then
			ok "$name [$mode]: $(head -n 1 "$tmp/kvm.err") / $(tail -n 1 "$tmp/kvm.err")"
		else
			bad "$name [$mode]: the backends differ"
			diff "$tmp/kvm.err" "$tmp/ptrace.err" | sed 's/^/     | /' | head -n 6
			diff "$tmp/kvm.out" "$tmp/ptrace.out" | sed 's/^/     | /' | head -n 4
		fi
	done
}

req x
for p in crash_null crash_nullcall crash_nullret crash_abort crash_stack crash_div crash_ud2 crash_hlt \
	crash_int3 crash_fpe rawsys; do
	same "$p" "$G/$p.musl"
done
req ro
same "isolation ro" "$G/isolation.musl"
req crash
same "crashy crash --repeat 3" --repeat 3 "$G/crashy.musl"
req x
same "hello" "$G/hello.musl"
finish

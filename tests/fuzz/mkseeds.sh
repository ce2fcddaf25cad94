#!/bin/sh
# Writes the generated seeds of the fuzzing corpus (tests/fuzz/corpus/): tiny static programs for
# fuzz_elf, the state files of a real snapshot for fuzz_snap, a real working set's trace for
# fuzz_ws. Needs `make all` (build/ember, build/guest) and KVM or the ptrace backend. The other
# seeds are written by hand, the regress-* inputs are what the fuzzers found; this script leaves
# them alone.
set -eu
cd "$(dirname "$0")/../.."
B=${B:-build}
C=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$C/elf" "$C/snap" "$C/ws"

# fuzz_elf: write(1, "hi\n", 3), a leaf call with data below its stack pointer, exit(0)
cat >"$tmp/t.S" <<'EOF'
	.globl _start
	.text
_start:
	mov $1, %eax
	mov $1, %edi
	lea msg(%rip), %rsi
	mov $3, %edx
	syscall
	call leaf
	mov $60, %eax
	xor %edi, %edi
	syscall
leaf:
	mov %rdi, -8(%rsp)
	mov $39, %eax
	syscall
	mov -8(%rsp), %rdi
	ret
	.data
msg:	.ascii "hi\n"
	.bss
buf:	.zero 8192
EOF
sed 's/^\tsyscall$/\tint $0x80/' "$tmp/t.S" >"$tmp/int80.S"
small="-nostdlib -Wl,-z,noseparate-code -Wl,--build-id=none"
E=$PWD/$C/elf
# in the folder of the sources, whose names go into the symbol tables, so seeds stay the same
# shellcheck disable=SC2086
(
	cd "$tmp"
	cc $small -static -o "$E/seed-exec" t.S
	cc $small -static-pie -fPIE -Wl,-z,norelro -o "$E/seed-pie" t.S
	cc $small -static -o "$E/seed-int80" int80.S
)
strip -o "$E/seed-stripped" "$E/seed-exec"

# the same as a stripped Go program: a "Go" note, the functions padded with int3 to 32 bytes
# and named only in Go's own function table (.gopclntab, the layout of Go 1.18 on)
{
	echo '	.section .note.go.buildid,"a",@note'
	echo '	.p2align 2'
	echo '	.long 3, 4, 4'
	echo '	.asciz "Go"'
	echo '	.p2align 2'
	echo '	.ascii "seed"'
	sed 's/^leaf:$/	.p2align 5, 0xcc\nleaf:/; s/^	\.data$/	.p2align 5, 0xcc\nend:\n	.data/' "$tmp/t.S"
	cat <<'PCLN'
	.section .gopclntab,"a",@progbits
	.p2align 5
pcln:	.long 0xfffffff0
	.byte 0, 0, 1, 8
	.quad 2, 0, _start, 0, 0, 0, 0, ftab - pcln
ftab:	.long 0, 0, leaf - _start, 0, end - _start
PCLN
} >"$tmp/go.S"
(cd "$tmp" && cc $small -static -o go go.S)
strip -o "$E/seed-go-stripped" "$tmp/go"

# fuzz_snap: FLAGS (8: with pages) and the state file of counter.musl in each syscall mode;
# fuzz_ws: the trace of its working set, recorded by a cold start, as a structured input
printf hi >"$tmp/in"
for mode in trap guest; do
	for cold in "" --cold; do
		"$B/ember" run --syscalls $mode --state "$tmp/$mode" $cold "$B/guest/counter.musl" \
			<"$tmp/in" >/dev/null
	done
	{
		printf '\010'
		cat "$tmp/$mode"/snapshots/*/state
	} >"$C/snap/seed-$mode"
done
python3 - "$tmp"/trap/snapshots/*/ws "$C/ws/seed-trace" <<'EOF'
import struct, sys
f = open(sys.argv[1], 'rb').read()
n = struct.unpack_from('<Q', f, 8)[0]
trace = struct.unpack_from('<%dQ' % n, f, 88)  # after the header of format 3 (cold_ws.h)
seed = bytes([0, n]) + b''.join(struct.pack('<I', a // 4096) for a in trace) + b'ember'
open(sys.argv[2], 'wb').write(seed)
EOF
echo "seeds written to $C"

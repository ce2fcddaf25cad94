#!/bin/sh
# Descriptors, pipes and /proc as Linux has them (tests/guest/fdmeta.c): /proc/self/cmdline and
# /proc/sys/fs/pipe-max-size, a pipe's size (F_GETPIPE_SZ, F_SETPIPE_SZ) and FIONREAD, vector
# I/O at an offset (ESPIPE on a pipe), the old getdents, O_PATH descriptors, statfs and fstatfs,
# /proc/self/fd/N and fdinfo/N and the /proc folders, statx's checks and mount id, the root
# and /dev without files (and /dev with files that have none), setrlimit; every check as
# natively, in both syscall modes and after an exec of itself.
. "$(dirname "$0")/lib.sh"
pick_backend
P=$G/fdmeta.musl

"$P" one "two words" "" >"$tmp/native" 2>&1
check "natively: every check holds" sh -c "! grep -q FAIL '$tmp/native'"
for mode in trap guest; do
	er --syscalls "$mode" "$P" one "two words" ""
	expect_rc 0 "$mode: runs to its end"
	check "$mode: every check as natively" cmp -s "$tmp/out" "$tmp/native"
	[ -s "$tmp/out" ] && ! cmp -s "$tmp/out" "$tmp/native" && diff "$tmp/native" "$tmp/out" | head -n 8
done
"$P" exec >"$tmp/native" 2>&1
check "natively, exec'd: every check holds" sh -c "! grep -q FAIL '$tmp/native'"
for mode in trap guest; do
	er --syscalls "$mode" "$P" exec
	expect_rc 0 "$mode, exec'd: runs to its end"
	check "$mode, exec'd: every check as natively (the new argv)" cmp -s "$tmp/out" "$tmp/native"
done
# with files that have no /dev (a root of bin and etc): /dev is still the devices' folder
mkdir -p "$tmp/root/bin" "$tmp/root/etc"
for mode in trap guest; do
	er --syscalls "$mode" --files "$tmp/root" "$P" one
	check "$mode, files without /dev: /dev lists null, as natively" \
		grep -q -x -F "/dev lists null: ok" "$tmp/out"
done
finish

# The tree tests/guest/files.c reads, and its native run (sourced by test_files.sh and
# test_files_server.sh after lib.sh, not run). After sourcing: P (the program), T (the tree),
# $tmp/native (the native output for the request "request"), and sums (the tree's listing with
# contents, to show it unchanged).
P=$G/files.musl
T=$tmp/tree
mkdir -p "$T/data/b" "$T/sub"
printf 'hello bundle\n' >"$T/data/a.txt"
printf 'in sub\n' >"$T/sub/b.txt"
printf 'deep c\n' >"$T/data/b/c.txt"
printf '#!/bin/sh\n' >"$T/data/run.sh"
chmod 755 "$T/data/run.sh" "$T"
head -c 9000 /dev/urandom >"$T/data/big.bin"
ln -s a.txt "$T/data/link_a"
ln -s ../sub "$T/data/up"
ln -s /sub/b.txt "$T/data/abs_in"
ln -s loop "$T/data/loop"
ln -s /etc/passwd "$T/data/esc_abs"
ln -s ../../../../etc/passwd "$T/data/esc_rel"
sums() { (cd "$T" && find . -printf '%p %y %m %l\n' | sort && find . -type f -exec sha256sum {} + | sort); }

# the native run: the same program over a read-only copy, chrooted there
cp -a "$T" "$tmp/copy"
printf request >"$tmp/native.in"
if unshare -rm sh -c 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && exec "$2" "$1"' \
	sh "$tmp/copy" "$P" <"$tmp/native.in" >"$tmp/native" 2>"$tmp/err"; then
	ok "native run over a read-only copy"
else
	bad "native run over a read-only copy (unshare -rm: a user namespace is needed)"
fi
has "$tmp/native" '^access W: errno 30' "natively the copy is read-only (access W_OK is EROFS)"

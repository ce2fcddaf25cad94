#!/bin/sh
# ldcache.sh DEST: DEST/etc/ld.so.cache naming the libraries under DEST/lib/x86_64-linux-gnu (what
# closure.sh copied there), so that ld.so finds each one at once: without a cache it tries some
# 17 hwcaps folders first, each an open that fails, each an exit in a virtine (docs/benchmarks.md)
set -eu
dest=$1
mkdir -p "$dest/etc"
# -X: the folders as they are (no links made); -f /dev/null: no ld.so.conf of DEST's
/sbin/ldconfig -X -r "$dest" -f /dev/null -C /etc/ld.so.cache /lib/x86_64-linux-gnu

#!/bin/sh
# The scratch /tmp (tests/guest/tmpfs.c): files and folders made, written, read, listed, renamed
# and removed as on Linux (compared with a native run in the host's /tmp), in both syscall modes;
# what init leaves there is every invocation's start and nothing more; what an invocation leaves
# is gone at the next; it is bounded (ENOSPC past a quarter of guest memory); Debian's sqlite3
# keeps a database there; a cwd there works as natively; symbolic links (tests/guest/tmplinks.c)
# and hard links as natively, hostile ones too, kept by snapshots as files are; /tmp itself
# removed is refused; the umask, times, owners, statfs and ids are an unprivileged user's; named
# pipes (tests/guest/fifo.c) as natively, gone at the next invocation with what they held.
. "$(dirname "$0")/lib.sh"
pick_backend
P=$G/tmpfs.musl

# as_native NAME PROG MODE DIR LAST [ARGS]: PROG MODE run natively (DIR, its folder in the host's
# /tmp, made and removed), its output ending in the line LAST, then in a virtine (ARGS to ember
# run) in both syscall modes: every result as natively
as_native()
{
	name=$1 prog=$2 pmode=$3 dir=$4 last=$5
	shift 5
	rm -rf "$dir"
	"$prog" "$pmode" <"$tmp/in" >"$tmp/native" 2>&1
	# fchmodat2 came with Linux 6.6: where the native kernel is older (the QEMU route's 6.1),
	# Linux 6.6's answer is the one Ember must give
	sed -i 's/^\(fchmodat2 .*\): ENOSYS$/\1: EOPNOTSUPP/' "$tmp/native"
	rm -rf "$dir"
	check "natively: the $name program ran to its end" grep -q "^$last\$" "$tmp/native"
	for mode in trap guest; do
		er --syscalls "$mode" "$@" "$prog" "$pmode"
		expect_rc 0 "$name, $mode"
		check "$name, $mode: every result as natively" cmp -s "$tmp/out" "$tmp/native"
		[ -s "$tmp/out" ] && ! cmp -s "$tmp/out" "$tmp/native" &&
			diff "$tmp/native" "$tmp/out" | head -n 6
	done
	check "$name: nothing of it in the host's /tmp" [ ! -e "$dir" ]
}

req ""
as_native ops "$P" ops /tmp/ember-tmpfs "rmdir: 0"

# an invocation's files are gone at the next: each of three sees none, then leaves one
er --repeat 3 "$P" leave
expect_rc 0 "leave --repeat 3"
printf 'absent\nabsent\nabsent\n' >"$tmp/want"
check "leave --repeat 3: no invocation sees the file the one before left" cmp -s "$tmp/out" "$tmp/want"

# what init wrote is there at every invocation, as init left it
req "req;"
er --repeat 3 "$P" init
printf 'from init;req;\nfrom init;req;\nfrom init;req;\n' >"$tmp/want"
check "init --repeat 3: each sees init's file, not the last one's appends" cmp -s "$tmp/out" "$tmp/want"
# ... kept in memory only: a snapshot on disk is not made, a cold start is refused with why
mkdir -p "$tmp/state"
er --state "$tmp/state" --repeat 2 "$P" init
check "init with --state: runs (the snapshot in memory)" [ "$rc" = 0 ]
er --state "$tmp/state2" --cold "$P" init
check "init --cold: refused" [ "$rc" != 0 ]
has "$tmp/err" "in /tmp" "init --cold: says /tmp is why"

# bounded: a quarter of guest memory, then ENOSPC; freed space can be used again
req ""
er "$P" fill
expect_rc 0 "fill"
has "$tmp/out" "^wrote 15 MiB, then ENOSPC$" "fill: 16 MiB (64 MiB of guest memory / 4), then ENOSPC"
has "$tmp/out" "^write after: 1$" "fill: the space of the file removed is free again"
er --mem 128M "$P" fill
has "$tmp/out" "^wrote 31 MiB, then ENOSPC$" "fill --mem 128M: 32 MiB"

# what a tmpfs would do and this /tmp refuses
er "$P" edges
printf 'link: EPERM\nrmdir /tmp: EBUSY\n' >"$tmp/want"
check "edges: a hard link to a folder EPERM, /tmp itself EBUSY" cmp -s "$tmp/out" "$tmp/want"

# a cwd in /tmp, as natively: relative paths, getcwd, out of /tmp by ".." into the function's
# files (which hold /etc as the host does), the cwd removed
mkdir -p "$tmp/root/etc"
as_native cwd "$P" cwd /tmp/ember-tmpfs "getcwd: /tmp" --files "$tmp/root"

# pieces at an offset, fadvise, fallocate, mknod, the scheduler's answers: as natively
as_native vec "$P" vec /tmp/ember-tmpfs "sched_getaffinity(-1): ESRCH"

# what an unprivileged user may do with its files and ids (natively root may do more)
cat >"$tmp/want_attr" <<'EOF'
umask: 022
creat: 0
stat: 0
mode: 600, umask then: 077
utimensat: 0
stat: 0
atime 1.500000000, mtime 4.250000000
utimensat, atime omitted: 0
stat: 0
atime 1, mtime 9
chown to its own: 0
chown to -1: 0
chown to root: EPERM
chown /etc: EROFS
fchown 99: EBADF
statfs /tmp: 0
tmpfs: 1, bsize 4096, read-only 0
statfs /etc: 0
read-only 1
statfs /none: ENOENT
fstatfs 99: EBADF
getresuid: 0
ids: 1000 1000 1000
groups: 1, the first its own: 1
setreuid -1 -1: 0
setresuid to its own: 0
setuid 0: EPERM
clock_settime: EPERM
clock_settime of the monotonic clock: EINVAL
its thread's CPU clock read: 0
chmod 0400: 0
open for writing: EACCES
open for reading: 0
mkdir d: 0
chmod d 0500: 0
create in d: EACCES
mkdir in d: EACCES
rename into d: EACCES
chmod d 0700: 0
rename into d: 0
chmod d 0500: 0
unlink in d: EACCES
chmod d 0700: 0
unlink in d: 0
rmdir d: 0
EOF
for mode in trap guest; do
	er --syscalls "$mode" --files "$tmp/root" "$P" attr
	expect_rc 0 "attr, $mode"
	check "attr, $mode: as the user the guest is" cmp -s "$tmp/out" "$tmp/want_attr"
	[ -s "$tmp/out" ] && ! cmp -s "$tmp/out" "$tmp/want_attr" &&
		diff "$tmp/want_attr" "$tmp/out" | head -n 6
done

# what once harmed the host: refused or done, and the host goes on (a long path, a folder
# open while renamed over: EBUSY, 600 MiB written through a 16 MiB bound and given back)
er "$P" hostile
expect_rc 0 "hostile"
printf '%s\n' "a path of 2,048 components: ENOENT" "mkdir a: 0" "mkdir b: 0" \
	"rename over the open b: EBUSY" "b listed: 0" "grown to 15 MiB and truncated: 40 of 40" \
	"15 MiB held by one: 0" "and 2 more by another: ENOSPC" >"$tmp/want"
check "hostile: each answered, the bound counting what files hold" cmp -s "$tmp/out" "$tmp/want"
[ "$rc" = 0 ] && ! cmp -s "$tmp/out" "$tmp/want" && diff "$tmp/want" "$tmp/out" | head -n 8
# a descriptor on /tmp opened by init: there, and usable, at every invocation
er --repeat 2 "$P" dirfd
printf 'fstat of /tmp'"'"'s descriptor: 1\na file made through it: 0\n' >"$tmp/want1"
cat "$tmp/want1" "$tmp/want1" >"$tmp/want"
check "dirfd --repeat 2: /tmp's descriptor from init works in each" cmp -s "$tmp/out" "$tmp/want"

# Debian's sqlite3 with its database in /tmp (pwrite, locks, fsync, a journal made and removed)
SQL='create table t(x, y); insert into t values (1, "a"), (2, "b"); select sum(x), group_concat(y) from t;'
req "$SQL"
rm -f /tmp/ember-sqlite-native.db
printf '%s' "$SQL" | /usr/bin/sqlite3 /tmp/ember-sqlite-native.db >"$tmp/native" 2>/dev/null
rm -f /tmp/ember-sqlite-native.db
er --repeat 2 /usr/bin/sqlite3 /tmp/t.db
expect_rc 0 "sqlite3 /tmp/t.db --repeat 2"
cat "$tmp/native" "$tmp/native" >"$tmp/want"
check "sqlite3 /tmp/t.db: as natively, twice (each invocation a new database)" \
	cmp -s "$tmp/out" "$tmp/want"
# symbolic links (tests/guest/tmplinks.c): made, read, listed, followed or not by each call,
# renamed and removed, as natively, and hard links; loops, a chain of 41, a 4,000-byte target, links out of /tmp
# to /dev, /proc, the function's files (/etc) and the root and back into /tmp, a link to a folder
# then "..": answered as Linux, and the host goes on
L=$G/tmplinks.musl
req ""
as_native links "$L" ops /tmp/ember-tmplinks "rmdir D: 0" --files "$tmp/root"
# the folder's modes obeyed (natively root passes them)
er "$L" perm
printf '%s\n' "mkdir d: 0" "symlink in d: EACCES" "chmod d 0700: 0" "symlink in d: 0" \
	"symlink in d again: EEXIST" "link /dev/null into /tmp: EXDEV" >"$tmp/want"
check "links perm: EACCES in a folder it may not write, EEXIST twice, EXDEV from /dev" \
	cmp -s "$tmp/out" "$tmp/want"
# a program of the function's files run through links in /tmp (programs in /tmp: test_tmpexec.sh)
mkdir -p "$tmp/root/bin"
cp "$L" "$tmp/root/bin/tmplinks"
er --files "$tmp/root" "$L" exec /bin/tmplinks
printf '%s\n' "symlink /tmp/prog: 0" "symlink /tmp/hop -> prog: 0" "ran as /tmp/hop" >"$tmp/want"
check "links exec: a program of the files run through two links of /tmp's" cmp -s "$tmp/out" "$tmp/want"
# an invocation's link is gone at the next; init's is there at every one, as init left it
er --repeat 3 "$L" leave
expect_rc 0 "links leave --repeat 3"
printf 'absent\nabsent\nabsent\n' >"$tmp/want"
check "links leave --repeat 3: no invocation sees the link the one before made" \
	cmp -s "$tmp/out" "$tmp/want"
er --repeat 3 "$L" init
expect_rc 0 "links init --repeat 3"
printf 'through linit: from init, names 2\n%.0s' 1 2 3 >"$tmp/want"
check "links init --repeat 3: each reads init's file through init's link (not the replaced one), its hard link there" \
	cmp -s "$tmp/out" "$tmp/want"

# named pipes (tests/guest/fifo.c): made by mkfifo (musl's mknod, glibc's mknodat), opened as
# Linux opens them (a reader waits for a writer and back, O_NONBLOCK, ENXIO, O_RDWR), read,
# written, polled, ended (EOF, EPIPE), resized, between threads and processes, unlinked while
# open, an open that waits interrupted by a signal: as natively, with musl and with glibc
F=$G/fifo.musl
req ""
as_native fifo "$F" ops /tmp/ember-fifo "rmdir: 0"
as_native fifo.glibc "$G/fifo.glibc" ops /tmp/ember-fifo "rmdir: 0"
# devices are no unprivileged user's to make (natively root may); nor sockets here
er "$F" dev
printf '%s\n' "mknod a character device: EPERM" "mknod a block device: EPERM" \
	"mknod a socket: EPERM" >"$tmp/want"
check "fifo dev: mknod of a device or a socket EPERM" cmp -s "$tmp/out" "$tmp/want"
# an invocation's named pipe is gone at the next with what it held; one init made and holds open
# is there at every invocation, empty: what an invocation wrote into it is gone
er --repeat 3 "$F" leave
expect_rc 0 "fifo leave --repeat 3"
printf 'absent\nabsent\nabsent\n' >"$tmp/want"
check "fifo leave --repeat 3: no invocation sees the named pipe the one before left" \
	cmp -s "$tmp/out" "$tmp/want"
er --repeat 3 "$F" init
expect_rc 0 "fifo init --repeat 3"
printf "init's fifo: empty\n%.0s" 1 2 3 >"$tmp/want"
check "fifo init --repeat 3: init's named pipe, open since init, holds nothing an invocation wrote" \
	cmp -s "$tmp/out" "$tmp/want"
[ "$rc" = 0 ] && ! cmp -s "$tmp/out" "$tmp/want" && diff "$tmp/want" "$tmp/out" | head -n 4
# an open that waits for a writer that never comes: the invocation's timeout ends it, each time,
# and the next starts without it
for mode in trap guest; do
	er --syscalls "$mode" --repeat 2 --timeout 2 "$F" wait
	expect_rc 124 "fifo wait ($mode)"
	check "fifo wait ($mode): both invocations timed out at --timeout" \
		[ "$(grep -c 'timed out' "$tmp/err")" = 2 ]
	printf 'stat /tmp/fw: ENOENT\n%.0s' 1 2 >"$tmp/want"
	check "fifo wait ($mode): the second starts without the first's named pipe" \
		cmp -s "$tmp/out" "$tmp/want"
done
finish

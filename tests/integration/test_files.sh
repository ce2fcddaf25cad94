#!/bin/sh
# A function's read-only files (--files): every file call of tests/guest/files.c against a native
# run over a read-only copy of the same tree (a bind mount in a user namespace, chroot there),
# from a folder and from tar and zip archives, warm, from a snapshot on disk (both restore modes)
# and in both syscall modes; the escapes refused; bad trees (tar and zip) refused at load with the
# entry named; the tree left as it was.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend

. "$(dirname "$0")/files_lib.sh"
sums >"$tmp/sums.before"
req request

# same OUT MSG: OUT (stdout of a run) is the native output, N times over
same()
{
	copies "${3:-1}" "$tmp/native"
	if cmp -s "$1" "$tmp/want"; then
		ok "$2: as natively"
	else
		bad "$2: differs from the native run"
		diff "$tmp/want" "$1" | head -n 20 | sed 's/^/     | /'
	fi
}

tar -C "$T" -cf "$tmp/tree.tar" .
tar -C "$T" -czf "$tmp/tree.tgz" data sub
tar -C "$T" -cJf "$tmp/tree.txz" .
# a zip archive (links kept as links), named .bin: told apart by its content, not its name
(cd "$T" && zip -qry "$tmp/tree.zip.bin" .)
for mode in trap guest; do
	for src in "$T" "$tmp/tree.tar" "$tmp/tree.tgz" "$tmp/tree.txz" "$tmp/tree.zip.bin"; do
		what="$mode, $(basename "$src")"
		er --syscalls "$mode" --files "$src" --repeat 3 --stats "$P"
		expect_rc 0 "$what: --repeat 3"
		same "$tmp/out" "$what: 3 invocations from the snapshot with files open" 3
		stats "all(i['warm'] for i in j['invocations'][1:])" "$what: warm after the first"
	done
	# the reads of a file open across the snapshot: served by the in-guest runtime on KVM (a
	# window of the bundle's pages), by the host elsewhere
	if [ "$mode" = guest ]; then
		er --syscalls guest --files "$T" --repeat 3 --stats "$P"
		if [ "$EMBER_BACKEND" = kvm ]; then want='n > 0'; else want='n == 0'; fi
		stats "(lambda n: $want)(sum(s['in_guest'] for s in j['syscalls'] if s['name'] in ('read', 'pread64', 'readv', 'lseek')) - 3)" \
			"guest: file reads inside the virtine where it maps the bundle ($want)"
	fi
	# the snapshot on disk holds the open files; a cold start restores them
	for restore in reap lazy; do
		S=$tmp/state-$mode-$restore
		EMBER_SYSCALLS=$mode
		export EMBER_SYSCALLS
		timeout 60 "$E" snapshot --state "$S" --backend "$EMBER_BACKEND" --files "$T" "$P" \
			>"$tmp/out" 2>"$tmp/err" </dev/null
		rc=$?
		expect_rc 0 "$mode: ember snapshot --files"
		er --state "$S" --cold --restore "$restore" --files "$T" --stats "$P"
		unset EMBER_SYSCALLS
		expect_rc 0 "$mode, $restore: cold start"
		same "$tmp/out" "$mode, $restore: cold start from disk with files open"
		stats "j['invocations'][0]['cold'] is True" "$mode, $restore: it was a cold start"
	done
done

# another tree: the snapshot on disk is not the one for it
S=$tmp/state-trap-reap
cp -a "$T" "$tmp/other"
printf 'changed\n' >"$tmp/other/data/a.txt"
timeout 60 "$E" snapshot --state "$S" --backend "$EMBER_BACKEND" --files "$tmp/other" "$P" \
	>"$tmp/out" 2>"$tmp/err" </dev/null
if grep -q reused "$tmp/out"; then
	bad "a snapshot made with other files was reused"
else
	ok "a snapshot made with other files is not reused"
fi
er --state "$S" --cold --files "$tmp/other" "$P"
has "$tmp/out" '^read rest: 5 \[nged' "a cold start with the other files reads them"

# a file kept open across the snapshot, read in every invocation from its window, in every
# sharing mode (off and ksm copy the snapshot: the virtine that ran the initialisation keeps
# the window's pages, which its reset must not drop)
mkdir -p "$tmp/big/data"
head -c 2097152 /dev/urandom >"$tmp/big/data/big.bin"
for sharing in upm off ksm; do
	printf '100' >"$tmp/in"
	er --syscalls guest --sharing "$sharing" --files "$tmp/big" --repeat 4 "$G/fileread.musl"
	expect_rc 0 "guest, $sharing: 4 invocations reading a file open across the snapshot"
	n=$(sort -u "$tmp/out" | wc -l)
	[ "$n" = 1 ] && [ "$(wc -l <"$tmp/out")" = 4 ] &&
		ok "guest, $sharing: every invocation reads the same bytes" ||
		bad "guest, $sharing: the invocations read different bytes: $(sort "$tmp/out" | uniq -c)"
done

# a file closed by the runtime just before the snapshot point (its own read of the request, no
# call served between): closed by the host before the snapshot too, its window's 512 pages not
# in the snapshot
er --syscalls guest --files "$tmp/big" --stats "$G/filestat.musl" /data/none
expect_rc 0 "guest: no file opened in the initialisation"
pages=$(tail -n 1 "$tmp/err" | python3 -c 'import json,sys; print(json.load(sys.stdin)["init"]["snapshot_pages"])')
er --syscalls guest --files "$tmp/big" --stats "$G/filestat.musl" /data/big.bin
expect_rc 0 "guest: a file opened, read and closed in the initialisation"
stats "j['init']['snapshot_pages'] < $pages + 128" \
	"guest: a file closed before the snapshot point is not in the snapshot ($pages pages without)"
req request

# one file read by the runtime and by the host (tests/guest/filemix.c: a site left trapping)
# in turn, across the snapshot: positions agree with a native run, every invocation
printf x >"$tmp/mix.in"
unshare -rm sh -c 'exec "$1" "$2"' sh "$G/filemix.musl" "$T" <"$tmp/mix.in" >"$tmp/mix.native"
for mode in trap guest; do
	cp "$tmp/mix.in" "$tmp/in"
	er --syscalls "$mode" --files "$T" --repeat 3 --stats "$G/filemix.musl"
	expect_rc 0 "$mode: runtime and host reads of one file"
	cat "$tmp/mix.native" "$tmp/mix.native" "$tmp/mix.native" >"$tmp/mix.want"
	cmp -s "$tmp/out" "$tmp/mix.want" && ok "$mode: runtime and host reads agree on the position" ||
		bad "$mode: runtime and host reads disagree: $(diff "$tmp/mix.want" "$tmp/out" | head -n 4)"
done
if [ "$EMBER_BACKEND" = kvm ]; then
	stats "[(s['served'] - s['in_guest'], s['in_guest']) for s in j['syscalls'] if s['name'] == 'read'] == [(9, 12)]" \
		"guest: 3 reads a run by the host (the trapping site), 3 by the runtime and the request"
fi

# a file opened during a request: fstat, newfstatat of the descriptor and a terminal's ioctl
# on it answered by the in-guest runtime on KVM (its window is made at the open: CPython's
# imports, docs/benchmarks.md), the same as the host's stat of its path
req x
for mode in trap guest; do
	er --syscalls "$mode" --files "$T" --repeat 2 --stats "$G/filestat.musl"
	expect_rc 0 "$mode: fstat of a file opened in the request"
	want='close 0, then read -1 errno 9, fstat -1 errno 9, reopened on the same fd yes
fstat same, newfstatat same, size 13, TCGETS errno 25, read 13, bad buffer EFAULT'
	[ "$(sort -u "$tmp/out")" = "$want" ] &&
		ok "$mode: fstat and stat of its path agree; closed, the descriptor is gone" ||
		bad "$mode: fstat, ioctl, read or close of an open file: $(sort -u "$tmp/out")"
done
if [ "$EMBER_BACKEND" = kvm ]; then
	stats "{s['name']: (s['served'], s['in_guest']) for s in j['syscalls'] if s['name'] in ('fstat', 'newfstatat', 'ioctl', 'close')} == {'fstat': (6, 4), 'newfstatat': (2, 2), 'ioctl': (4, 4), 'close': (4, 4)}" \
		"guest: fstat, newfstatat of the fd, TCGETS, read and close served in the virtine"
fi
# fstat, newfstatat and statx of Ember's own descriptors (the request, stdout, stderr, the
# metadata) and of a bundle's file open across the snapshot (tests/guest/stdstat.c): answered by
# the in-guest runtime on KVM (Node.js's readFileSync(0) is a statx), byte for byte as the host
# answers them in trap mode, refusals included; a bad buffer writes nothing (one that ends on a
# read-only page, for the stat calls and a bundle file's read and pread too; one in the runtime's
# own area), a path in page 0 is a bad pointer, a file
# dup2'd over fd 0 is the file, a forked child's are its own, an fd with bits above its 32 is
# the host's; the metadata closed, they are the host's (EBADF)
req x
er --syscalls trap --files "$T" --repeat 2 --stats "$G/stdstat.musl" /data/a.txt
expect_rc 0 "trap: the stat calls of Ember's descriptors"
cp "$tmp/out" "$tmp/stdstat.trap"
grep -q '^statx 0: 0$' "$tmp/out" && grep -q '^fstat 4: -9$' "$tmp/out" &&
	ok "trap: Ember's descriptors stat'd, the closed one EBADF" ||
	bad "trap: the stat calls of Ember's descriptors: $(head -n 3 "$tmp/out")"
er --syscalls guest --files "$T" --repeat 2 --stats "$G/stdstat.musl" /data/a.txt
expect_rc 0 "guest: the stat calls of Ember's descriptors"
cmp -s "$tmp/out" "$tmp/stdstat.trap" &&
	ok "guest: fstat, newfstatat and statx of Ember's descriptors as in trap mode, byte for byte" ||
	bad "guest: the stat calls differ from trap mode: $(diff "$tmp/stdstat.trap" "$tmp/out" | head -n 6)"
if [ "$EMBER_BACKEND" = kvm ]; then
	stats "{s['name']: (s['served'], s['in_guest']) for s in j['syscalls'] if s['name'] in ('fstat', 'newfstatat', 'statx')} == {'fstat': (28, 22), 'newfstatat': (22, 14), 'statx': (36, 20)}" \
		"guest: the stat calls of open descriptors served in the virtine (a child's too), the refusals, a bad path, fd 0 moved and a closed one by the host"
fi
# the same from the snapshot on disk (a cold start, then a warm one): the runtime learns which of
# Ember's descriptors it may answer for at the run's start, after the memory is in
er --syscalls guest --state "$tmp/stdstate" --cold --files "$T" --repeat 2 --stats \
	"$G/stdstat.musl" /data/a.txt
expect_rc 0 "guest, cold: the stat calls of Ember's descriptors"
stats "j['starts']['cold'] == 1" "guest, cold: the first invocation from the snapshot on disk"
cmp -s "$tmp/out" "$tmp/stdstat.trap" &&
	ok "guest, cold: the stat calls as in trap mode, byte for byte" ||
	bad "guest, cold: the stat calls differ from trap mode: $(diff "$tmp/stdstat.trap" "$tmp/out" | head -n 6)"
req request

# the packed tree is kept in the state folder (STATE/bundles/KEY.bnd) and read back, checked: a
# damaged one is packed again and replaced; a changed tree has another key
S=$tmp/state-cache
er --state "$S" --files "$T" "$P"
expect_rc 0 "a run with a state folder"
n=$(ls "$S"/bundles/*.bnd 2>/dev/null | wc -l)
[ "$n" = 1 ] && ok "the packed tree is kept in the state folder" || bad "$n packed trees kept, not 1"
cp "$S"/bundles/*.bnd "$tmp/kept.bnd"
er --state "$S" --files "$T" "$P"
same "$tmp/out" "the packed tree read back from the state folder"
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(4096 + 64); f.write(b"damaged!")' \
	"$S"/bundles/*.bnd
rm -rf "$S/snapshots"
er --state "$S" --files "$T" "$P"
same "$tmp/out" "a damaged packed tree in the state folder is not used"
cmp -s "$S"/bundles/*.bnd "$tmp/kept.bnd" && ok "the damaged packed tree is replaced" ||
	bad "the damaged packed tree is not replaced"
cp -a "$T" "$tmp/changed"
printf 'other!!!\n' >"$tmp/changed/data/a.txt"
er --state "$S" --files "$tmp/changed" "$P"
has "$tmp/out" '^read rest: 6 \[er!!!' "a changed tree is packed again, not read back"

# an archive's entry declaring more bytes than it holds: refused as truncated, without memory
# for what it declares (900 MiB, more than the process may have here)
python3 -c '
import sys, tarfile
i = tarfile.TarInfo("big.bin")
i.size = 900 << 20
f = open(sys.argv[1], "wb")
f.write(i.tobuf(format=tarfile.GNU_FORMAT) + b"x" * 512)' "$tmp/huge.tar"
(
	ulimit -v 800000
	er --sharing off --files "$tmp/huge.tar" "$P"
	echo "$rc" >"$tmp/rc"
)
rc=$(cat "$tmp/rc")
expect_rc 125 "an entry larger than its archive"
has "$tmp/err" 'big.bin: Truncated' "an entry larger than its archive: truncated, not out of memory"

# the table of descriptors is bounded: init left 2 open
req emfile
er --files "$T" "$P"
out_is "opened 249 more, then errno 24 (No file descriptors available)" "EMFILE when the table is full"

# without --files every path is refused as before
req request
er "$P"
has "$tmp/out" '^init: fa 0 fdir 0' "no files: open is refused"
has "$tmp/out" '^open /etc/passwd: errno 13' "no files: /etc/passwd is EACCES"

# bad trees are refused at load, with the reason
mkdir -p "$tmp/bad1" && mkfifo "$tmp/bad1/pipe"
er --files "$tmp/bad1" "$P"
expect_rc 125 "a pipe in the tree"
has "$tmp/err" 'pipe: not a file, folder or link' "a pipe in the tree: named"
python3 - "$tmp" <<'PY'
import io, sys, tarfile
def make(name, entries):
    with tarfile.open(sys.argv[1] + '/' + name, 'w') as t:
        for n, kind, data in entries:
            i = tarfile.TarInfo(n)
            if kind == 'f':
                i.size = len(data)
                t.addfile(i, io.BytesIO(data))
            else:
                i.type = {'h': tarfile.LNKTYPE, 'c': tarfile.CHRTYPE}[kind]
                i.linkname = data
                t.addfile(i)
make('dotdot.tar', [('../evil', 'f', b'x')])
make('hard.tar', [('a', 'f', b'x'), ('b', 'h', 'a')])
make('dev.tar', [('null', 'c', '')])
make('ctrl.tar', [('bad\nname', 'f', b'x')])
make('twice.tar', [('a', 'f', b'x'), ('a', 'f', b'y')])
PY
for t in dotdot:"'..' component" hard:"hard links" dev:"not a file" ctrl:"control character" \
	twice:"given twice"; do
	er --files "$tmp/${t%%:*}.tar" "$P"
	expect_rc 125 "tar ${t%%:*} refused"
	has "$tmp/err" "${t#*:}" "tar ${t%%:*}: the reason says ${t#*:}"
done
# zip entries that are not files, folders or links are refused, named
python3 - "$tmp" <<'PY'
import sys, warnings, zipfile
warnings.simplefilter('ignore')  # the name given twice is meant
def make(name, entries):
    with zipfile.ZipFile(sys.argv[1] + '/' + name, 'w') as z:
        for n, mode, data in entries:
            i = zipfile.ZipInfo(n)
            i.create_system = 3  # Unix: the mode is in the high half of external_attr
            i.external_attr = mode << 16
            z.writestr(i, data)
make('dev.zip', [('ok.txt', 0o100644, b'x'), ('null', 0o020666, b'')])
make('sock.zip', [('sock', 0o140644, b'')])
make('blk.zip', [('d/blk', 0o060644, b'')])
make('dotdot.zip', [('../evil', 0o100644, b'x')])
make('twice.zip', [('a', 0o100644, b'x'), ('a', 0o100644, b'y')])
PY
for t in dev:"null: not a file" sock:"sock: not a file" blk:"d/blk: not a file" \
	dotdot:"'..' component" \
	twice:"given twice"; do
	er --files "$tmp/${t%%:*}.zip" "$P"
	expect_rc 125 "zip ${t%%:*} refused"
	has "$tmp/err" "${t#*:}" "zip ${t%%:*}: the reason says ${t#*:}"
done
head -c 100 "$tmp/tree.zip.bin" >"$tmp/cut.zip"
er --files "$tmp/cut.zip" "$P"
expect_rc 125 "a cut zip archive refused"
printf 'not a tar' >"$tmp/junk"
er --files "$tmp/junk" "$P"
expect_rc 125 "a file that is no archive"
has "$tmp/err" "neither a tar nor a zip archive" "a file that is no archive: the reason"
er --files "$tmp/missing" "$P"
expect_rc 125 "a missing folder"
has "$tmp/err" 'No such file' "a missing folder: named"

# nothing a function did changed the tree
sums >"$tmp/sums.after"
check "the tree is as it was" cmp -s "$tmp/sums.before" "$tmp/sums.after"
finish

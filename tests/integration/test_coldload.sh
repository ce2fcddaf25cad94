#!/bin/sh
# The load before a cold start: an unchanged function's load opens no file of its sources (its
# files' folder, its runtime's files; strace proves it, and proves it would see one), its image's
# digest from the hint kept for it (its syscall sites' table read only by an init); a changed
# folder, a new image are noticed; a damaged packed tree, site table, digest hint, state file and
# snapshot page are each detected, said, and made again.
# Run from the repository root; B is the build directory.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend
command -v strace >/dev/null || {
	bad "strace is missing (scripts/setup.sh installs it)"
	finish
}

# flip FILE OFFSET: inverts one byte of FILE (written in place)
flip()
{
	python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' "$1" "$2"
}

# load_is PYEXPR MSG: stats about the load (l = j['init']['load'])
load_is()
{
	stats "(lambda l: $1)(j['init']['load'])" "$2"
}

# a Python function with files of its own, read at init; python-static brings its runtime's
# 1,300 files too
D=$tmp/src
mkdir -p "$D/files/mydata/deep"
printf 'one' >"$D/files/mydata/a.txt"
printf 'two' >"$D/files/mydata/deep/b.txt"
cat >"$D/handler.py" <<'EOF'
text = open("/mydata/a.txt").read() + open("/mydata/deep/b.txt").read()


def handler(input, env):
    return text + ":" + input
EOF
S=$tmp/state
R=$B/runtimes/python-lib
py()
{
	er --state "$S" --stats --runtime python-static --files "$D/files" "$@" "$D/handler.py"
}
req x
py
out_exact "onetwo:x" "first load: init reads the files"
load_is "l['image_from'] == 'scanned' and l['bundle_from'] == 'packed'" \
	"first load: the image scanned, the files packed"
py
out_exact "onetwo:x" "second load: a cold start"
stats "j['init']['from_disk'] and j['invocations'][0]['cold']" "second load: from disk, cold"
load_is "l['image_from'] == 'hint' and l['bundle_from'] == 'kept' and l['damaged'] is None" \
	"second load: the image's digest from its hint (its site table not read), the files kept"

# strace proves what a load opens: on KVM (the ptrace backend's stub cannot be traced twice)
if [ "$EMBER_BACKEND" = kvm ]; then
	# tr LOG: `ember run` of the function under strace, every open and exec of a path into LOG
	tr()
	{
		[ -f "$tmp/in" ] || : >"$tmp/in"
		strace -f -qq -o "$1" -e trace=open,openat,openat2,creat,execve,execveat,open_by_handle_at \
			"$E" run --backend "$EMBER_BACKEND" --state "$S" --runtime python-static \
			--files "$D/files" "$D/handler.py" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
		rc=$?
	}
	tr "$tmp/trace"
	out_exact "onetwo:x" "under strace: the answer"
	# (the execve line names the folder as an argument: only opens count)
	grep -E '(open|creat)[a-z0-9_]*\(' "$tmp/trace" >"$tmp/opens"
	n=$(grep -cE "\"($D/files|$R)[/\"]" "$tmp/opens")
	[ "$n" = 0 ] && ok "an unchanged function's cold start opens no file of its folder nor its runtime's" ||
		bad "$n opens under its sources: $(grep -E "\"($D/files|$R)" "$tmp/opens" | head -n 3)"
	grep -q "handler.py" "$tmp/opens" && ok "the trace sees the opens the load makes (its handler)" ||
		bad "the trace shows no open of the handler: it sees nothing"
	# the image's digest from its hint: the site table is not opened (without --stats, which
	# count the sites)
	n=$(grep -c '\.sites"' "$tmp/opens")
	[ "$n" = 0 ] && ok "a start from disk opens no site table (the digest from its hint)" ||
		bad "$n opens of a site table: $(grep '\.sites"' "$tmp/opens" | head -n 2)"

	# a dynamic program (Debian's jq with this host's ld.so and libraries as its files): a
	# start from disk reads neither its site table nor its interpreter's (ld.so's digest from a
	# hint too); a damaged hint of either is refused and the tables read instead
	SJ=$tmp/state-jq
	printf '{"a":[1,2]}' >"$tmp/in"
	jq_run()
	{
		strace -f -qq -o "$1" -e trace=open,openat,openat2 "$E" run --backend "$EMBER_BACKEND" \
			--state "$SJ" --cold /usr/bin/jq -j '.a|add' <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
		rc=$?
	}
	er --state "$SJ" /usr/bin/jq -j '.a|add'
	out_exact "3" "a dynamic program (jq): first load"
	n=$(ls "$SJ"/sites/*.digest 2>/dev/null | wc -l)
	[ "$n" = 2 ] && ok "a dynamic program: hints for its image and its interpreter" ||
		bad "$n digest hints for jq and its ld.so (expected 2)"
	jq_run "$tmp/trace-jq"
	out_exact "3" "a dynamic program from disk: the answer"
	n=$(grep -c '\.sites"' "$tmp/trace-jq")
	[ "$n" = 0 ] && ok "a dynamic program from disk opens no site table (its ld.so's neither)" ||
		bad "$n opens of a site table: $(grep '\.sites"' "$tmp/trace-jq" | head -n 2)"
	for h in "$SJ"/sites/*.digest; do ln -sfn "d1-0123456789abcdef-0123456789abcdef" "$h"; done
	jq_run "$tmp/trace-jq2"
	out_exact "3" "a dynamic program, its hints damaged: the answer"
	n=$(grep -c '\.sites"' "$tmp/trace-jq2")
	[ "$n" = 2 ] && ok "damaged hints refused: both site tables read instead" ||
		bad "$n opens of a site table with damaged hints (expected 2)"
	jq_run "$tmp/trace-jq3"
	n=$(grep -c '\.sites"' "$tmp/trace-jq3")
	[ "$n" = 0 ] && ok "then the hints written again are used" ||
		bad "$n opens of a site table after the hints were written again"
	req x

	# a changed folder is noticed (a file written in place, then one added): packed again, and the
	# trace shows the opens of the folder then
	printf 'ONE' >"$D/files/mydata/a.txt"
	tr "$tmp/trace2"
	out_exact "ONEtwo:x" "a file written in place: noticed, init runs on the new files"
	grep -E '(open|creat)[a-z0-9_]*\(' "$tmp/trace2" | grep -q "\"$D/files\"" &&
		ok "the trace would see an open under the folder (the changed tree is read)" ||
		bad "the changed tree was read without an open the trace shows"
else
	printf 'ONE' >"$D/files/mydata/a.txt"
	py
	out_exact "ONEtwo:x" "a file written in place: noticed, init runs on the new files"
fi
printf 'three' >"$D/files/mydata/deep/c.txt"
py
out_exact "ONEtwo:x" "a file added: the answer"
load_is "l['bundle_from'] == 'packed'" "a file added deep in the folder: packed again"
py
load_is "l['bundle_from'] == 'kept'" "then kept again"

# damaged kept files: each detected with a clear word, the answer right, made again
bnd=$(ls "$S"/bundles/*.bnd | head -n 1)
flip "$bnd" $(($(wc -c <"$bnd") - 100))
py
out_exact "ONEtwo:x" "a byte flipped in the packed files: the answer"
load_is "l['damaged'] is not None and 'damaged' in l['damaged'] and l['bundle_from'] == 'packed'" \
	"a byte flipped in the packed files: detected, said, packed again"
py
load_is "l['bundle_from'] == 'kept' and l['damaged'] is None" "the packed files made again are kept"
# the site table: a start from disk does not read it (the digest's hint names the snapshot);
# an init does, and refuses it damaged (so do --stats, which count the sites, after the run)
for t in "$S"/sites/*.sites; do flip "$t" 70; done
py
out_exact "ONEtwo:x" "a byte flipped in the site table: the answer"
load_is "l['image_from'] == 'hint'" "a damaged site table: not read by a start from disk"
for t in "$S"/sites/*.sites; do flip "$t" 70; done
rm -r "$S/snapshots"
py
out_exact "ONEtwo:x" "a damaged site table, no snapshot: the answer"
load_is "l['image_from'] == 'scanned'" "a damaged site table: refused when init needs it, the image scanned again"
py
load_is "l['image_from'] == 'hint'" "then its hint is used again"
# a damaged or missing hint: the table read instead, the hint written again
for h in "$S"/sites/*.digest; do ln -sfn "d1-0123456789abcdef-0123456789abcdef" "$h"; done
py
out_exact "ONEtwo:x" "a damaged digest hint: the answer"
load_is "l['image_from'] == 'table'" "a damaged digest hint: refused, the site table read"
py
load_is "l['image_from'] == 'hint'" "then the hint written again is used"
rm "$S"/sites/*.digest
py
load_is "l['image_from'] == 'table'" "no digest hint: the site table read"
py
load_is "l['image_from'] == 'hint'" "then the hint written again is used"

# an execve of the program itself after a start from disk: the load left its sites unread (the
# digest's hint), the new image needs them: read then, its syscalls reach the runtime (trap mode:
# none does)
X=$tmp/procs
cp "$G/procs.musl" "$X"
er --state "$S" --stats "$X" execself
er --state "$S" --stats "$X" execself
grep -q "child-exec: 1 args: \[self\]" "$tmp/out" && [ "$rc" = 3 ] &&
	ok "execve of itself after a start from disk: the new image runs" ||
	bad "execve of itself after a start from disk: rc $rc, $(head -c 200 "$tmp/out")"
load_is "l['image_from'] == 'hint'" "execve of itself: the load took the digest's hint"
w=3
[ "${EMBER_SYSCALLS:-guest}" = trap ] && w=0
stats "[s['in_guest'] for s in j['syscalls'] if s['name'] == 'write'] == [$w]" \
	"execve of itself after a start from disk: the new image's sites rewritten"

# a new image at the same path: noticed (its identity), its snapshot not taken for the old one's
P=$tmp/prog
cp "$G/hello.musl" "$P"
req Ember
er --state "$S" --stats "$P"
er --state "$S" --stats "$P"
out_is "Hello, Ember!" "a C program from disk"
load_is "l['image_from'] == 'hint'" "a C program: its digest's hint"
cp "$G/echoreq.musl" "$P.new" && mv "$P.new" "$P"
er --state "$S" --stats "$P"
out_exact "Ember" "a new image at the same path: it runs, not the old snapshot"
stats "not j['init']['from_disk'] and j['init']['load']['image_from'] == 'scanned'" \
	"a new image: scanned, a new snapshot"

# a damaged snapshot: a truncated state file, a byte flipped in a page of the memory file (a
# page of the working set; and one outside it, found after the response)
d=$(ls -dt "$S"/snapshots/* | grep -v '\.tmp-' | head -n 1) # the new image's
truncate -s 100 "$d/state"
er --state "$S" --stats "$P"
out_exact "Ember" "a truncated state file: the answer"
stats "j['init']['rebuilt'] is not None and not j['init']['from_disk']" \
	"a truncated state file: refused, said, made again"
er --state "$S" --stats "$P"
er --state "$S" --stats "$P"
stats "j['init']['from_disk'] and j['init']['rebuilt'] is None" "the snapshot made again is used"
# the last page the sparse memory file holds (the stack's: outside the program's pages)
last=$(python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); end = os.lseek(fd, 0, os.SEEK_END); at = 0; page = 0
while at < end:
    try:
        at = os.lseek(fd, at, os.SEEK_DATA)
    except OSError:
        break
    hole = os.lseek(fd, at, os.SEEK_HOLE); page = hole - 4096; at = hole
print(page + 7)' "$d/mem")
for off in $((0x400000 + 123)) $last; do
	flip "$d/mem" $off
	er --state "$S" --stats "$P"
	out_exact "Ember" "a byte flipped in a snapshot page at $off: the answer"
	stats "j['init']['rebuilt'] is not None and \
any(w in j['init']['rebuilt'] for w in ('damaged', 'checksum'))" \
		"a byte flipped in a snapshot page at $off: detected, said"
	er --state "$S" --stats "$P"
	er --state "$S" --stats "$P"
	stats "j['init']['from_disk'] and j['init']['rebuilt'] is None" \
		"after a flipped page: the snapshot made again is used"
done
# A kept bundle's file read whole (a program of the function's files an execve reads, or one an
# init copies in) is asked of the disk in one request: its mapping reads only the pages touched
# (bnd.paged), and busybox's 1.9 MB faulted in a page at a time cost 482 disk reads, 30-50 ms.
# The bundle is written back and dropped from the page cache first; major faults of ember counted.
FB=$tmp/bb-files
SB=$tmp/state-bb
mkdir -p "$FB/bin"
cp /bin/busybox "$FB/bin/busybox" && cp /bin/busybox "$FB/bin/echo"
# faults MSG ARGS...: ember run ARGS with the kept bundle out of the page cache, "hi" as request
faults()
{
	msg=$1
	shift
	set -- "$E" run --backend "$EMBER_BACKEND" --state "$SB" --files "$FB" "$@"
	got=$(python3 -c 'import glob, os, resource, subprocess, sys
for p in glob.glob(sys.argv[1] + "/bundles/*.bnd"):
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)  # written back: the advice drops only clean pages
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
r = subprocess.run(sys.argv[2:], input=b"hi", stdout=subprocess.PIPE)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_majflt,
      r.stdout.decode().strip())' "$SB" "$@")
	set -- $got
	[ "$1" = 0 ] && [ "$2" -lt 100 ] && ok "$msg: $2 major faults ($3 $4)" ||
		bad "$msg: exit $1, $2 major faults (fewer than 100 expected), output '$3 $4'"
}
req hi
er --state "$SB" --files "$FB" /bin/busybox sh -c 'read x; /bin/echo got $x'
out_exact "got hi
" "busybox of its files: an execve of another of them"
faults "a start from disk whose execve reads a kept file whole" \
	--cold /bin/busybox sh -c 'read x; /bin/echo got $x'
faults "an init that copies its program from a kept file" \
	--sharing off /bin/busybox sh -c 'read x; echo init $x'
# a fork in a start from disk: the child has the snapshot's pages the parent had not had yet
# (holes in its memory until the fault server serves them) and what the parent wrote since, as
# natively; a third start, REAP's from its working set, which on KVM is the whole snapshot when
# the parent read all of it (arg t) and is read before the run, the child mapping it beneath
# as a warm fork's does. Then a shell's pipeline, whose children ran with zeros and crashed.
req hi
for arg in "" t; do
	"$G/forkcold.musl" $arg <"$tmp/in" >"$tmp/native"
	for r in reap lazy; do
		rm -rf "$tmp/fk"
		for n in "an init" "a start from disk" "a second start from disk"; do
			er --state "$tmp/fk" --restore "$r" --stats "$G/forkcold.musl" $arg
			label="fork in $n (--restore $r${arg:+, the parent read it all})"
			if cmp -s "$tmp/out" "$tmp/native"; then
				ok "$label: output as natively"
			else
				bad "$label: '$(paste -sd '|' "$tmp/out")', natively '$(paste -sd '|' "$tmp/native")'"
			fi
			[ "$n" = "an init" ] || stats "j['invocations'][0]['cold']" "$label: a start from disk"
		done
	done
done
for r in reap lazy; do
	rm -rf "$tmp/bb"
	for n in "an init" "a start from disk"; do
		er --state "$tmp/bb" --restore "$r" /bin/busybox sh -c 'read x; echo got $x | cat'
		expect_rc 0 "busybox sh: echo | cat in $n (--restore $r)"
		out_is "got hi" "busybox sh: echo | cat in $n (--restore $r)"
	done
done
finish

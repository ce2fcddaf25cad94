#!/bin/sh
# Snapshots on disk and cold starts: reuse across processes, `ember snapshot`, damaged, truncated,
# foreign and outdated snapshots refused and rebuilt, crashes while writing, REAP with a working
# set recorded on another request, model's 8 MiB working set prefetched beside the run (recorded
# again after mispredictions, a damaged chunk), KVM's whole read of rnn recording its working set
# again after mispredictions, the working set's copy of the state file (damaged, stale, of the
# format before), a state folder on a ramfs (no O_DIRECT: said once), and lazy next to REAP on the
# whole function suite.
# Run from the repository root; B is the build directory.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend
F=functions
hello=$G/hello.musl

# flip FILE OFFSET: inverts one byte of FILE
flip()
{
	python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' "$1" "$2"
}

# ws_at FILE K: the offset of a byte in chunk K of the working-set file's pages; K = copy: of a
# byte of its copy of the state file (format 3: cold_ws.h)
ws_at()
{
	python3 -c 'import struct, sys
h = open(sys.argv[1], "rb").read(88)
n, cp = struct.unpack("<QQ", h[8:24])
sl, ne = struct.unpack("<Q", h[32:40])[0], struct.unpack("<Q", h[80:88])[0]
meta = 88 + 8 * (n + (n + cp - 1) // cp + ne)
if sys.argv[2] == "copy":
    print(meta + sl // 2)
else:
    print((meta + sl + 4095) // 4096 * 4096 + int(sys.argv[2]) * cp * 4096 + 100)' "$1" "$2"
}

# snapdir STATE: the one snapshot folder under STATE
snapdir()
{
	ls -d "$1"/snapshots/* | grep -v '\.tmp-' | head -n 1
}

# fresh STATE: hello's snapshot in STATE, its working set recorded by one cold start
fresh()
{
	rm -rf "$1"
	req Ember
	er --state "$1" "$hello"
	er --state "$1" "$hello"
	d=$(snapdir "$1")
}

# rebuilt MSG [OPTIONS]: a run with STATE=$s refuses the snapshot, makes it again, answers right;
# the run after it starts from the new snapshot on disk
rebuilt()
{
	msg=$1
	shift
	er --state "$s" --stats "$@" "$hello"
	expect_rc 0 "$msg"
	out_is "Hello, Ember!" "$msg"
	stats "j['init']['rebuilt'] is not None and not j['init']['from_disk']" \
		"$msg: refused and rebuilt"
	er --state "$s" --stats "$hello"
	stats "j['init']['from_disk'] and j['init']['rebuilt'] is None and \
j['invocations'][0]['cold']" "$msg: the rebuilt snapshot is used by the next process"
}

# --- a snapshot survives the process ---------------------------------------------------------
s=$tmp/restart
req Ember
er --state "$s" --stats "$hello"
out_is "Hello, Ember!" "first process"
stats "not j['init']['from_disk'] and j['init']['snapshot_path']" "first process: snapshot made"
er --state "$s" --stats "$hello"
out_is "Hello, Ember!" "second process"
stats "j['init']['from_disk'] and j['invocations'][0]['cold'] and \
j['invocations'][0]['recorded']" "second process: from disk, cold, working set recorded"
er --state "$s" --stats --repeat 3 "$hello"
stats "j['init']['from_disk'] and j['invocations'][0]['prefetched_pages'] > 0 and \
all(i['warm'] for i in j['invocations'][1:])" "third process: REAP prefetch, then warm"
if [ "$EMBER_BACKEND" = kvm ]; then
	er --state "$s" --cold --stats "$hello"
	out_is "Hello, Ember!" "KVM: REAP read whole"
	stats "(lambda i, p: i['cold'] and i['prefetched_pages'] > 0 and i['faults'] == 0 and \
p['open_us'] == 0 and p['outside_pages'] + i['prefetched_pages'] >= j['init']['snapshot_pages'])\
(j['invocations'][0], j['invocations'][0]['cold_parts'])" \
		"KVM: hello's REAP start reads the snapshot whole and maps it, no userfaultfd"
fi

# --- ember snapshot --------------------------------------------------------------------------
s=$tmp/ahead
"$E" snapshot --backend "$EMBER_BACKEND" --state "$s" "$hello" "$B/functions/sha256" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 0 "ember snapshot of two programs"
has "$tmp/out" "^$hello: snapshot $s/snapshots/[0-9a-f]+ \([0-9]+ pages, init [0-9.]+ ms\)$" \
	"ember snapshot: made, with its pages and init time"
has "$tmp/out" "^$B/functions/sha256: snapshot " "ember snapshot: one line per program"
"$E" snapshot --backend "$EMBER_BACKEND" --state "$s" "$hello" >"$tmp/out" 2>"$tmp/err"
has "$tmp/out" "^$hello: snapshot .* reused$" "ember snapshot again: reused"
er --state "$s" --stats "$hello"
out_is "Hello, Ember!" "run after ember snapshot"
stats "j['init']['from_disk']" "run after ember snapshot: its snapshot came from disk"
"$E" snapshot --backend "$EMBER_BACKEND" --state "$s" --runtime duktape $F/hello-js/handler.js \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 0 "ember snapshot --runtime duktape"
cp $F/hello-js/small.req "$tmp/in"
er --state "$s" --stats --runtime duktape $F/hello-js/handler.js
stats "j['init']['from_disk']" "js run after ember snapshot: from disk"
cmp -s "$tmp/out" $F/hello-js/small.out && ok "js run after ember snapshot: output" ||
	bad "js run after ember snapshot: output"
flip "$(snapdir "$tmp/restart")/state" 200
"$E" snapshot --backend "$EMBER_BACKEND" --state "$tmp/restart" "$hello" >"$tmp/out" 2>"$tmp/err"
has "$tmp/out" "rebuilt: .*bad checksum" "ember snapshot of a damaged snapshot: rebuilt, says why"
"$E" snapshot --backend "$EMBER_BACKEND" --state "$s" "$tmp/nonexistent" >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 125 "ember snapshot of a missing program"

# --- damaged, truncated, outdated and foreign snapshots ---------------------------------------
s=$tmp/bad
fresh "$s"
flip "$d/state" $(($(wc -c <"$d/state") / 2))
rebuilt "a byte flipped in state"
fresh "$s"
head -c 65536 /dev/urandom | dd of="$d/mem" bs=4096 seek=$((0x400000 / 4096)) conv=notrunc \
	2>/dev/null
rebuilt "64 KiB of garbage in mem (REAP)"
fresh "$s"
head -c 65536 /dev/urandom | dd of="$d/mem" bs=4096 seek=$((0x400000 / 4096)) conv=notrunc \
	2>/dev/null
# a poisoned page ends the run: refused before its timeout, however slow the machine
t0=$(date +%s)
rebuilt "64 KiB of garbage in mem (lazy)" --restore lazy --timeout 300
[ $(($(date +%s) - t0)) -lt 300 ] && ok "damaged mem: refused, not run until the timeout" ||
	bad "damaged mem: took until the timeout"
fresh "$s"
truncate -s 100 "$d/state"
rebuilt "truncated state"
fresh "$s"
truncate -s 1M "$d/mem"
rebuilt "truncated mem" --restore lazy
fresh "$s"
printf '\143\0\0\0' | dd of="$d/state" bs=1 seek=8 conv=notrunc 2>/dev/null
rebuilt "another version"
fresh "$s"
# format 10 (before the runtime's file table moved to the control page's 0x200): refused, not
# read as 11 (the table would be read from where format 10 had other bytes)
printf '\012\0\0\0' | dd of="$d/state" bs=1 seek=8 conv=notrunc 2>/dev/null
er --state "$s" --stats "$hello"
expect_rc 0 "format 10"
out_is "Hello, Ember!" "format 10"
stats "'incompatible' in (j['init']['rebuilt'] or '') and not j['init']['from_disk']" \
	"format 10: refused for its version (not its checksum, nor read as 11) and rebuilt"
fresh "$s"
er --state "$s" "$G/echoreq.musl"
other=$(ls -d "$s"/snapshots/* | grep -v "$d" | head -n 1)
cp "$other/state" "$d/state"
cp "$other/mem" "$d/mem"
rebuilt "another image's snapshot"
fresh "$s"
flip "$d/ws" "$(ws_at "$d/ws" 0)"
er --state "$s" --stats "$hello"
out_is "Hello, Ember!" "damaged working set"
stats "j['invocations'][0]['prefetched_pages'] == 0 and j['invocations'][0]['recorded']" \
	"damaged working set: dropped, the start is lazy and records it again"
er --state "$s" --stats "$hello"
stats "j['invocations'][0]['prefetched_pages'] > 0" "damaged working set: recorded again"

# --- the working set's copy of the state file (format 3): REAP on KVM reads both in one request;
# a damaged copy, a state file written since, a working set of the format before: the state file
# read instead (and a damaged state file then refused as ever), the copy written again
# from STATE: where the last start took the state from
from()
{
	stats "j['init']['load']['state_from'] == '$1' and j['init']['rebuilt'] is None" "$2"
}
if [ "$EMBER_BACKEND" = kvm ]; then
	fresh "$s"
	er --state "$s" --stats "$hello"
	out_is "Hello, Ember!" "a start with the copy"
	from copy "a sound working set: the state from its copy (the state file not read)"
	stats "j['host_fds_leaked'] == 0" \
		"a whole read: nothing left open (ember run makes no landing for a next one)"
	# the snapshot's files such a start opens: ws, and mem once, for the check of its copies
	# after the response; not state (its copy is in ws, its identity a stat), and mem neither
	# at the load nor at the start (every page is in ws); strace would see them (it sees ws)
	if command -v strace >/dev/null; then
		strace -f -qq -o "$tmp/trace" -e trace=open,openat,openat2 "$E" run --backend kvm \
			--state "$s" "$hello" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
		n_ws=$(grep -c "\"$d/ws\"" "$tmp/trace")
		n_state=$(grep -c "\"$d/state\"" "$tmp/trace")
		n_mem=$(grep -c "\"$d/mem\"" "$tmp/trace")
		[ "$n_ws" -ge 1 ] && [ "$n_state" = 0 ] && [ "$n_mem" = 1 ] &&
			ok "a whole read opens ws, mem once (its check after the response), not state" ||
			bad "a whole read opened ws $n_ws, state $n_state and mem $n_mem times"
	else
		bad "strace is missing (scripts/setup.sh installs it)"
	fi
	flip "$d/ws" "$(ws_at "$d/ws" copy)"
	er --state "$s" --stats "$hello"
	out_is "Hello, Ember!" "a damaged copy: the answer"
	from file "a damaged copy: the state file read instead, nothing rebuilt"
	stats "'copy of the state file is damaged' in (j['init']['load']['damaged'] or '') and \
j['invocations'][0]['prefetched_pages'] > 0" "a damaged copy: said; the working set's pages still used"
	er --state "$s" --stats "$hello"
	from copy "a damaged copy: written again, used by the next start"
	touch "$d/state"
	er --state "$s" --stats "$hello"
	from file "the state file written since (touched): not trusted through the copy"
	er --state "$s" --stats "$hello"
	from copy "then the copy written again is used"
	# the state file damaged after the working set copied it: refused, not taken from the copy
	flip "$d/state" 300
	er --state "$s" --stats "$hello"
	out_is "Hello, Ember!" "a byte flipped in state after the copy was made: the answer"
	stats "'checksum' in (j['init']['rebuilt'] or '') and not j['init']['from_disk']" \
		"a byte flipped in state after the copy was made: refused (not taken from the copy), said, rebuilt"
	fresh "$s"
	printf '2' | dd of="$d/ws" bs=1 seek=7 conv=notrunc 2>/dev/null # "EMBERWS2"
	er --state "$s" --stats "$hello"
	out_is "Hello, Ember!" "a working set of the format before: the answer"
	from file "a working set of the format before: the state file read"
	stats "j['invocations'][0]['recorded']" "a working set of the format before: recorded again"
	er --state "$s" --stats "$hello"
	from copy "then the working set recorded again brings the state"
	[ "$(head -c 8 "$d/ws")" = EMBERWS3 ] && ok "the working set recorded again is format 3" ||
		bad "the working set recorded again: $(head -c 8 "$d/ws")"
else
	fresh "$s"
	er --state "$s" --stats "$hello"
	from file "ptrace: the state file read (the working set is read beside the run)"
fi

# --- a crash while the snapshot is written --------------------------------------------------
# kill -9 at random times near the end of `ember snapshot` (after init, where it writes); a
# snapshot folder left behind must be whole: the next process uses it as it is
s=$tmp/crash
slow=$G/slowinit.musl
ms()
{
	date +%s%N | cut -c1-13
}
t0=$(ms)
"$E" snapshot --backend "$EMBER_BACKEND" --state "$s" "$slow" >/dev/null 2>&1
full=$(($(ms) - t0))
rm -rf "$s"
i=0
torn=0
mid=0
while [ $i -lt 16 ]; do
	d=$(awk -v r="$(od -An -N2 -tu2 /dev/urandom)" -v f="$full" \
		'BEGIN { print f * (0.85 + (r % 120) / 1000) / 1000 }')
	"$E" snapshot --backend "$EMBER_BACKEND" --state "$s" "$slow" >/dev/null 2>&1 &
	pid=$!
	sleep "$d"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	ls -d "$s"/snapshots/*.tmp-* >/dev/null 2>&1 && mid=$((mid + 1))
	if [ -n "$(snapdir "$s" 2>/dev/null)" ]; then
		: >"$tmp/in"
		er --state "$s" --stats "$slow"
		if [ "$rc" != 0 ] || ! grep -q '"from_disk":true' "$tmp/err" ||
			! grep -q '"rebuilt":null' "$tmp/err"; then
			torn=$((torn + 1))
		fi
	fi
	rm -rf "$s"
	i=$((i + 1))
done
[ $torn = 0 ] && ok "kill -9 near the write, 16 times ($mid mid-write): what is left is whole" ||
	bad "kill -9 near the write: $torn snapshots left behind were refused"
: >"$tmp/in"
"$E" snapshot --backend "$EMBER_BACKEND" --state "$s" "$slow" >/dev/null 2>&1 &
pid=$!
sleep "$(awk -v f="$full" 'BEGIN { print f * 0.95 / 1000 }')"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
er --state "$s" "$slow"
out_is "ready yes" "after a crash: a run with --state"
er --state "$s" --stats "$slow"
stats "j['init']['from_disk']" "after a crash: the snapshot is on disk"

# --- REAP with a working set recorded on another request --------------------------------------
for name in sha256 json; do
	if [ $name = json ]; then set -- --runtime duktape $F/json/handler.js; else set -- "$B/functions/$name"; fi
	s=$tmp/mis-$name
	cp $F/$name/small.req "$tmp/in"
	er --state "$s" "$@"
	er --state "$s" --cold --stats "$@"
	stats "j['invocations'][0]['recorded']" "$name: working set recorded on small.req"
	cp $F/$name/large.req "$tmp/in"
	er --state "$s" --cold --stats "$@"
	expect_rc 0 "$name: REAP on large.req"
	cmp -s "$tmp/out" $F/$name/large.out && ok "$name: REAP on large.req: output" ||
		bad "$name: REAP on large.req: output differs from large.out"
	# (KVM reads the snapshot whole: what small.req did not touch is counted as mispredicted)
	stats "j['invocations'][0]['prefetched_pages'] > 0 and j['invocations'][0]['faults'] + \
j['invocations'][0]['cold_parts']['mispredicted'] > 0" \
		"$name: REAP on large.req: prefetched, and faults for what small.req did not touch"
done

# --- overlapped REAP, mispredictions, a damaged chunk: model's 8 MiB working set --------------
# part EXPR MSG: EXPR on the first invocation's cold_parts (p) and the invocation (i)
part()
{
	stats "(lambda i, p: $1)(j['invocations'][0], j['invocations'][0]['cold_parts'])" "$2"
}
model=$B/functions/model
s=$tmp/big
cp $F/model/large.req "$tmp/in"
er --state "$s" "$model"
er --state "$s" --cold --stats "$model"
part "i['recorded'] and i['faults'] > 2000" "model: the first cold start records 8 MiB"
er --state "$s" --cold --stats "$model"
cmp -s "$tmp/out" $F/model/large.out && ok "model: overlapped REAP: output" ||
	bad "model: overlapped REAP: output differs from large.out"
part "i['prefetched_pages'] > 2000 and i['faults'] < 16 and p['ws_bytes'] > 8 << 20 and \
p['ws_read_us'] > 0 and p['install_us'] > 0 and p['run_us'] > 0 and not p['rerecorded']" \
	"model: overlapped REAP: the working set in chunks beside the run, its parts reported"
s=$tmp/mis-model
cp $F/model/small.req "$tmp/in"
er --state "$s" "$model"
er --state "$s" --cold --stats "$model"
cp $F/model/large.req "$tmp/in"
er --state "$s" --cold --stats "$model"
cmp -s "$tmp/out" $F/model/large.out && ok "model: mispredicted REAP: output" ||
	bad "model: mispredicted REAP: output differs from large.out"
part "i['faults'] + p['mispredicted'] > 1000 and p['rerecorded']" \
	"model: working set of small.req, run on large.req: faults on demand, recorded again"
er --state "$s" --cold --stats "$model"
part "i['prefetched_pages'] > 2000 and i['faults'] < 16" \
	"model: the working set recorded again covers large.req"
ws=$(snapdir "$s")/ws
flip "$ws" "$(ws_at "$ws" 10)"
er --state "$s" --cold --stats "$model"
cmp -s "$tmp/out" $F/model/large.out && ok "model: a damaged chunk of the working set: output" ||
	bad "model: a damaged chunk of the working set: output differs from large.out"
part "0 < i['prefetched_pages'] < 2000 and i['faults'] + p['outside_pages'] > 1000" \
	"model: a damaged chunk: the chunks before it installed, the rest served on demand or read"
er --state "$s" --cold --stats "$model"
part "i['recorded'] and i['prefetched_pages'] == 0" \
	"model: the damaged working set was dropped: the next start records it again"

# --- KVM's whole read mispredicts: the working set is written again ---------------------------
# rnn's working set fits the whole read (cold_read_pays); recorded on small.req, large.req touches
# 30-odd pages more: past the threshold, the start writes the working set again with them, so the
# file changes and the next start of large.req mispredicts nothing
# wsid FILE: the file's sha256, its working set's pages (the file's size is the snapshot's pages
# for a whole read: those outside it come after it) and mtime in ns
wsid()
{
	python3 -c 'import hashlib, os, struct, sys
st = os.stat(sys.argv[1])
b = open(sys.argv[1], "rb").read()
print(hashlib.sha256(b).hexdigest(), struct.unpack("<Q", b[8:16])[0], st.st_mtime_ns)' "$1"
}
if [ "$EMBER_BACKEND" = kvm ]; then
	rnn=$B/functions/rnn
	cp $F/rnn/large.req "$tmp/in"
	er --state "$tmp/rnn-warm" "$rnn"
	cp "$tmp/out" "$tmp/warm"
	cmp -s "$tmp/warm" $F/rnn/large.out && ok "rnn: warm output on large.req" ||
		bad "rnn: warm output on large.req differs from large.out"
	s=$tmp/mis-rnn
	cp $F/rnn/small.req "$tmp/in"
	er --state "$s" "$rnn"
	er --state "$s" --cold --stats "$rnn"
	part "i['recorded']" "rnn: working set recorded on small.req"
	ws=$(snapdir "$s")/ws
	before=$(wsid "$ws")
	cp $F/rnn/large.req "$tmp/in"
	er --state "$s" --cold --stats "$rnn"
	cmp -s "$tmp/out" "$tmp/warm" && ok "rnn: mispredicted whole read: output equals warm" ||
		bad "rnn: mispredicted whole read: output differs from warm"
	part "i['faults'] == 0 and p['open_us'] == 0 and i['prefetched_pages'] > 0 and \
p['mispredicted'] >= 8 and p['rerecorded']" \
		"rnn: whole read on large.req: no fault server, mispredicted past the threshold, recorded again"
	after=$(wsid "$ws")
	set -- $before
	b_sum=$1 b_size=$2 b_mtime=$3
	set -- $after
	[ "$1" != "$b_sum" ] && [ "$2" -gt "$b_size" ] && [ "$3" != "$b_mtime" ] &&
		ok "rnn: the working-set file was written again (content, pages, mtime changed)" ||
		bad "rnn: the working-set file was not rewritten ($before -> $after)"
	er --state "$s" --cold --stats "$rnn"
	cmp -s "$tmp/out" "$tmp/warm" && ok "rnn: the next whole read: output equals warm" ||
		bad "rnn: the next whole read: output differs from warm"
	part "i['faults'] == 0 and p['open_us'] == 0 and p['mispredicted'] == 0 and \
not p['rerecorded']" "rnn: the working set recorded again covers large.req: nothing mispredicted"
	[ "$(wsid "$ws")" = "$after" ] && ok "rnn: a start without mispredictions leaves the file" ||
		bad "rnn: a start without mispredictions rewrote the working set"
fi

# --- a file system without O_DIRECT: said once, read through the page cache ------------------
# ramfs refuses O_DIRECT (tmpfs takes it on this kernel): the state folder on a ramfs mounted in a
# private mount namespace (gone with it if the test dies), a snapshot made, its working set
# recorded, then a cold start and a warm one; on KVM hello is read whole and model's 8 MiB through
# the fault server's prefetch, on ptrace both through the prefetch
cat >"$tmp/ramfs.sh" <<'EOS'
# MNT IN RES PROGRAM...: on a ramfs at MNT, the runs of PROGRAM with stdin IN; RES.probe, .out,
# .err, .rc: whether the ramfs took O_DIRECT, and the last run's output, errors and exit status
mnt=$1 in=$2 res=$3
shift 3
mount -t ramfs ramfs "$mnt" || exit 97
if dd if=/dev/zero of="$mnt/probe" bs=4096 count=1 oflag=direct 2>/dev/null; then
	echo takes >"$res.probe"
else
	echo refuses >"$res.probe"
fi
e() { timeout -k 5 $((${EMBER_TEST_TIMEOUT:-10} + 50)) "$E" run --backend "$EMBER_BACKEND" \
	${EMBER_TEST_TIMEOUT:+--timeout "$EMBER_TEST_TIMEOUT"} --state "$mnt/s" "$@" <"$in"; }
e "$@" >/dev/null 2>&1
e --cold "$@" >/dev/null 2>&1
e --cold --stats --repeat 2 "$@" >"$res.out" 2>"$res.err"
echo $? >"$res.rc"
umount "$mnt"
EOS
# no_direct NAME WANT PATH PROGRAM...: PROGRAM's cold start with its state on a ramfs, checked: said
# once, buffered in the JSON, outputs equal WANT (warm's, twice); PATH: whole or prefetch
no_direct()
{
	name=$1 want=$2 path=$3
	shift 3
	mkdir -p "$tmp/ramfs"
	E=$E unshare -m sh "$tmp/ramfs.sh" "$tmp/ramfs" "$tmp/in" "$tmp/rf" "$@"
	urc=$?
	rmdir "$tmp/ramfs"
	if [ "$urc" = 97 ]; then
		bad "$name: no ramfs could be mounted"
		return
	fi
	[ "$(cat "$tmp/rf.probe")" = refuses ] && ok "$name: ramfs refuses O_DIRECT (dd oflag=direct)" ||
		bad "$name: ramfs took O_DIRECT: this check proves nothing here"
	rc=$(cat "$tmp/rf.rc")
	cp "$tmp/rf.out" "$tmp/out"
	cp "$tmp/rf.err" "$tmp/err"
	expect_rc 0 "$name: cold start from a ramfs"
	cmp -s "$tmp/out" "$want" && ok "$name: on a ramfs: cold and warm outputs equal warm's" ||
		bad "$name: on a ramfs: outputs differ from warm's"
	n=$(grep -c 'warning: the file system of .* has no O_DIRECT: the working set was read through the page cache' "$tmp/err")
	[ "$n" = 1 ] && ok "$name: ember run says once that the file system has no O_DIRECT" ||
		bad "$name: the no-O_DIRECT warning said $n times"
	if [ "$path" = whole ]; then
		cond="p['open_us'] == 0 and i['faults'] == 0"
	else
		cond="p['open_us'] > 0"
	fi
	part "i['cold'] and i['prefetch_buffered'] and i['prefetched_pages'] > 0 and $cond and \
not j['invocations'][1]['prefetch_buffered']" \
		"$name: on a ramfs: the cold start ($path read) reports prefetch_buffered, the warm one not"
}
req Ember
printf 'Hello, Ember!\nHello, Ember!\n' >"$tmp/warm"
[ "$EMBER_BACKEND" = kvm ] && hpath=whole || hpath=prefetch
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
	bad "no-O_DIRECT checks: they mount a ramfs, which needs root and unshare (make test runs as root)"
else
	no_direct "hello" "$tmp/warm" $hpath "$hello"
	msize=${SUITE_SIZES:-large}
	msize=${msize##* }
	copies 2 $F/model/$msize.out
	cp $F/model/$msize.req "$tmp/in"
	no_direct "model/$msize" "$tmp/want" prefetch "$model"
	# and where O_DIRECT works, nothing is said
	s=$tmp/direct
	req Ember
	er --state "$s" "$hello"
	er --state "$s" "$hello"
	er --state "$s" --cold --stats "$hello"
	! grep -q 'no O_DIRECT' "$tmp/err" && ok "hello on $tmp's file system: no O_DIRECT warning" ||
		bad "hello on $tmp's file system: an O_DIRECT warning"
	stats "not j['invocations'][0]['prefetch_buffered']" "hello on $tmp's file system: not buffered"
fi

# --- lazy and REAP give the same outputs on the whole suite ---------------------------------
# (SUITE_SIZES=small: the QEMU route, under emulation, leaves the large requests to native runs)
for dir in $F/*/; do
	name=$(basename "$dir")
	# a function that names its runtime (functions/NAME/runtime: Node.js, CPython) runs in it
	if [ -f "$dir/runtime" ]; then
		[ -f "$dir/small.req" ] || continue
		set -- --runtime "$(cat "$dir/runtime")" "$dir"/handler.*
	elif [ -f "$dir/handler.js" ]; then
		set -- --runtime duktape "$dir/handler.js"
	elif [ -f "$dir/handler.lua" ]; then
		set -- --runtime lua "$dir/handler.lua"
	elif [ -f "$dir/handler.py" ]; then
		set -- --runtime python-static "$dir/handler.py"
	elif [ -f "$dir/main.c" ]; then
		set -- "$B/functions/$name"
	else
		continue
	fi
	# files the build made for it (functions/NAME/files.py)
	if [ -f "$dir/files.py" ]; then
		set -- --files "$B/functions/$name/files" "$@"
	fi
	s=$tmp/suite-$name
	cp "$dir/small.req" "$tmp/in"
	er --state "$s" "$@"
	for size in ${SUITE_SIZES:-small large}; do
		cp "$dir/$size.req" "$tmp/in"
		er --state "$s" --cold --restore lazy --stats "$@"
		cp "$tmp/out" "$tmp/lazy"
		lazy_rc=$rc
		stats "j['invocations'][0]['cold']" "$name/$size: lazy start is cold"
		er --state "$s" --cold --restore reap --stats "$@"
		if [ "$rc" = 0 ] && [ "$lazy_rc" = 0 ] && cmp -s "$tmp/out" "$tmp/lazy" &&
			{ [ ! -f "$dir/$size.out" ] || cmp -s "$tmp/out" "$dir/$size.out"; }; then
			ok "$name/$size: lazy and REAP cold starts give the same, right output"
		else
			bad "$name/$size: lazy (exit $lazy_rc) and REAP (exit $rc) outputs differ or are wrong"
		fi
	done
	rm -rf "$s"
done

finish

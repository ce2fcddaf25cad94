#!/bin/sh
# The compatibility corpus (tests/corpus/): small real threaded programs (Go, pthreads on musl and
# glibc, C++, Rust), and Debian's own static programs, run natively and in virtines. Each virtine run is two invocations from one
# snapshot (--repeat 2), in both syscall modes: its exit status must be the native run's and its
# stdout the native run's twice over. The parallel ones also run on two vCPUs (--cpus 2), on KVM.
. "$(dirname "$0")/lib.sh"
pick_backend
C=$B/corpus

# Go's runtime reserves some 700 MiB of address space as it starts: Go 1.19's (Debian's) fits in
# 1G of guest memory, less than a Go program's default (2G, EMBER_MEM_GO): the suite says so
GO_MEM=1G

# same MSG: the last run's stdout is the native run's twice over; else a diff of the two
same()
{
	if cmp -s "$tmp/out" "$tmp/native2"; then
		ok "$1: output equals the native run's, twice"
		return
	fi
	bad "$1: output differs from the native run's, twice"
	diff "$tmp/native2" "$tmp/out" | head -n 6 | sed 's/^/     diff /'
}

# corpus NAME REQUEST [parallel]: $C/NAME natively (twice: it must print the same both times),
# then in virtines with --repeat 2 in both syscall modes, and with parallel on two vCPUs too
corpus()
{
	name=$1
	p=$C/$1
	req "$2"
	mem=""
	case $name in go_*) mem="--mem $GO_MEM" ;; esac
	if [ ! -x "$p" ]; then
		: >"$tmp/err"
		bad "$name: $p was not built (make corpus)"
		return 0
	fi
	"$p" <"$tmp/in" >"$tmp/native" 2>"$tmp/err"
	nrc=$?
	check "$name native: exit 0" [ "$nrc" = 0 ]
	"$p" <"$tmp/in" >"$tmp/again" 2>"$tmp/err"
	check "$name native: the same output in a second run" cmp -s "$tmp/native" "$tmp/again"
	cat "$tmp/native" "$tmp/native" >"$tmp/native2"
	for mode in trap guest; do
		# shellcheck disable=SC2086
		er --syscalls "$mode" --repeat 2 $mem "$p"
		expect_rc "$nrc" "$name $mode"
		same "$name $mode"
	done
	[ "${3:-}" = parallel ] || return 0
	# the ptrace backend runs one vCPU (--cpus 2 is refused there, exit 125: test_threads checks it)
	[ "$EMBER_BACKEND" = kvm ] || return 0
	# shellcheck disable=SC2086
	er --syscalls guest --cpus 2 --repeat 2 $mem "$p"
	expect_rc "$nrc" "$name guest --cpus 2"
	same "$name guest --cpus 2"
}

REQ="Ember corpus"
JSON='{"name":"Ember","count":3,"tags":["virtine","kvm","snapshot"],"meta":{"lang":"go","b":"x"}}'
ran=""

# Go: the runtime starts its threads (sysmon, the GC's workers) before main reads the request
corpus go_hello Ember
corpus go_goroutines "$REQ" parallel
corpus go_channels "$REQ" parallel
corpus go_json "$JSON"
corpus go_sleep "$REQ"
corpus go_panic "$REQ"
corpus go_gc "$REQ" parallel
ran="$ran go_hello go_goroutines go_channels go_json go_sleep go_panic go_gc"

# Go programs as people ship them, stripped (-ldflags='-s -w'): no .symtab, no DWARF
corpus go_hello_stripped Ember
corpus go_json_stripped "$JSON"

# A Go program has no page 0 (its nil checks must fault there: go_panic above), so its sites
# call the runtime through their functions' int3 padding (EMBER_RT_ENTRY_REL): a warm hello's
# read of the request and its write are served in the virtine, one exit an invocation. The
# padding needs the functions' starts: a stripped program's come from Go's own function table
# (.gopclntab), which names the functions its .symtab would, so it gets the same sites.
calls=""
for g in go_hello go_hello_stripped; do
	req Ember
	er --syscalls guest --repeat 3 --stats --mem "$GO_MEM" "$C/$g"
	expect_rc 0 "$g guest: three invocations"
	stats "[i['exits'] for i in j['invocations'][1:]] == [1, 1]" \
		"$g guest: a warm invocation is one exit"
	stats "{s['name']: s['in_guest'] for s in j['syscalls'] if s['name'] in ('read', 'write')} == {'read': 6, 'write': 3}" \
		"$g guest: its reads and writes served in the virtine"
	# only the sites given padding call the runtime (25 of go_hello's 43 with Go 1.19;
	# exitThread's and those of functions with too little padding trap): --stats counts
	# those, not all that might
	stats "j['sites_call'] > 0 and j['sites_trap'] >= 10 and j['sites_call'] + j['sites_trap'] == j['rewritten_sites']" \
		"$g guest: the sites without padding are counted as trapping"
	calls="$calls $(tail -n 1 "$tmp/err" | python3 -c 'import json, sys; j = json.load(sys.stdin); print("%d/%d" % (j["sites_call"], j["rewritten_sites"]))')"
done
# shellcheck disable=SC2086
set -- $calls
check "go_hello_stripped guest: as many sites call the runtime as go_hello's ($1, stripped $2)" \
	[ "$1" = "$2" ]

# Go's runtime reads its clocks through the vDSO (nanotime and walltime call it on the g0
# stack), thousands of times an invocation of a program with goroutines and channels. Without
# it each read is a system call from a site with no room to reach the runtime (nanotime1 has 6
# bytes of padding): an exit each, ~950 an invocation of go_channels. The vDSO's own sites have
# padding and call the runtime.
req "$REQ"
er --syscalls guest --repeat 3 --stats --mem "$GO_MEM" "$C/go_channels"
expect_rc 0 "go_channels guest: three invocations"
stats "[s['served'] > 100 and s['in_guest'] == s['served'] for s in j['syscalls'] if s['name'] == 'clock_gettime'] == [True]" \
	"go_channels guest: its clock reads (through the vDSO) served in the virtine"
stats "max(i['exits'] for i in j['invocations'][1:]) <= 20" \
	"go_channels guest: a warm invocation takes a few exits, not one a clock read"
# and started from disk (its vDSO in the snapshot's memory, as its code is): as natively
"$C/go_channels" <"$tmp/in" >"$tmp/native" 2>/dev/null
cat "$tmp/native" "$tmp/native" >"$tmp/native2"
for start in first cold; do
	extra=""
	[ $start = cold ] && extra=--cold
	# shellcheck disable=SC2086
	er --syscalls guest --state "$tmp/go-state" $extra --repeat 2 --mem "$GO_MEM" "$C/go_channels"
	expect_rc 0 "go_channels guest, --state ($start)"
	same "go_channels guest, --state ($start)"
done

# C, each program with musl and with glibc: c_single, single-threaded, is the control that Ember
# runs today; pt_pool starts its workers before the request
for libc in musl glibc; do
	corpus c_single.$libc "$REQ"
	corpus pt_create.$libc "$REQ" parallel
	corpus pt_mutex.$libc "$REQ" parallel
	corpus pt_tls.$libc "$REQ" parallel
	corpus pt_spin.$libc "$REQ" parallel
	corpus pt_signal.$libc "$REQ"
	corpus pt_detach.$libc "$REQ" parallel
	corpus pt_pool.$libc "$REQ" parallel
done
ran="$ran c_single pt_create pt_mutex pt_tls pt_spin pt_signal pt_detach pt_pool"

# C++: cpp_thread's threads wait at a gate from before the request
corpus cpp_thread "$REQ" parallel
corpus cpp_async "$REQ" parallel
ran="$ran cpp_thread cpp_async"

# Rust: rustc is no Debian package; when it is on PATH the build made rs_threads and it must
# run here, when it is not, that is said loudly and counts as nothing, never as a pass
if command -v rustc >/dev/null 2>&1; then
	corpus rs_threads "$REQ" parallel
else
	echo "##### RUST: rustc is not on PATH: rs_threads WAS NEITHER BUILT NOR RUN (not counted as a pass) #####"
fi
ran="$ran rs_threads"

# debian NAME PROGRAM ARGS...: a program as Debian ships it, natively (in /) and in virtines with
# --repeat 2 in both syscall modes: the same exit status, the native stdout twice over. DREQ is
# the request (stdin), DFILES more options (--files), DNATIVE the native run's command line
# instead, given to the program's -c (a shell's, with paths of the host for those of the files)
debian()
{
	name=$1
	shift
	if [ ! -x "$1" ]; then
		: >"$tmp/err"
		bad "$name: $1 is not installed (scripts/setup.sh installs it)"
		return 0
	fi
	req "${DREQ:-}"
	if [ -n "${DNATIVE:-}" ]; then
		(cd / && "$1" -c "$DNATIVE") <"$tmp/in" >"$tmp/native" 2>"$tmp/err"
	else
		(cd / && "$@") <"$tmp/in" >"$tmp/native" 2>"$tmp/err"
	fi
	nrc=$?
	check "$name native: exit 0" [ "$nrc" = 0 ]
	cat "$tmp/native" "$tmp/native" >"$tmp/native2"
	[ "${DREPEAT:-2}" = 1 ] && cp "$tmp/native" "$tmp/native2"
	for mode in trap guest; do
		# shellcheck disable=SC2086
		er --syscalls "$mode" --repeat "${DREPEAT:-2}" ${DFILES:-} "$@"
		expect_rc "$nrc" "$name $mode"
		same "$name $mode"
	done
}

# Debian's static programs that were refused at load for a legacy system call they never execute
# (gpgv-static's int $0x80 at 0x54395f): int $0x80 and sysenter are refused only when run
debian gpgv-static /usr/bin/gpgv-static --version
debian sash /bin/sash -c '-echo hello from sash'

# bash-static running a script without processes (a loop, arithmetic, a here-string through a
# pipe of its own, a function, a glob, /dev/null, the cwd): as natively
debian bash-static /bin/bash-static -c 'for i in 1 2 3; do echo "n=$i"; done; echo $((6 * 7))
read l <<< "a here-string"; echo "read: $l"; f() { echo "f($1)"; }; f x
case abc in a*) echo glob ;; esac; echo hidden > /dev/null; echo "${#BASH_VERSION}" > /dev/null; pwd'

# and with processes, each a virtine of its own: a command substitution, a pipe into a subshell,
# a subshell's status, a pipeline's status (fork, pipes, wait4); busybox's applets in a pipeline
debian 'bash-static x=$(echo hi)' /bin/bash-static -c 'x=$(echo hi); echo "$x"'
debian 'bash-static echo a | (read x; ...)' /bin/bash-static -c 'echo a | (read x; echo got $x)'
debian 'bash-static (subshell; exit 3)' /bin/bash-static -c '(echo sub; exit 3); echo "status $?"'
debian 'bash-static false | true' /bin/bash-static -c 'false | true; echo $?'
debian 'busybox sh seq | sort -rn | head -3' /bin/busybox sh -c 'seq 1 100 | sort -rn | head -3'

# a #! script among the function's files (--files, with the bash-static it names): bash-static
# execs it, and it runs a pipeline of three processes, a subshell and a command substitution;
# natively the same file where it lies (DNATIVE)
mkdir -p "$tmp/sroot/bin"
cp /bin/bash-static "$tmp/sroot/bin/" 2>/dev/null
cat >"$tmp/sroot/pipe.sh" <<'EOF'
#!/bin/bash-static
gen() { for i in 3 1 2; do echo "line $i"; done; }
gen | while read -r a b; do echo "$b $a"; done |
	(n=0; while read -r x y; do n=$((n + x)); echo "$y $x"; done; echo "sum $n")
echo "status ${PIPESTATUS[*]}, words $(echo a b c | (read -ra w; echo ${#w[@]}))"
EOF
chmod 755 "$tmp/sroot/pipe.sh"
DFILES="--files $tmp/sroot"
DNATIVE="$tmp/sroot/pipe.sh; echo rc=\$?"
debian 'bash-static runs a #! script of its files' /bin/bash-static -c '/pipe.sh; echo rc=$?'
has "$tmp/out" "^sum 6$" "the #! script of its files: its pipeline's sum, in a virtine"
DFILES=""
DNATIVE=""

# the devices, with files or without: /dev/null, /dev/zero, /dev/full, /dev/urandom
er /bin/busybox head -c 16 /dev/zero
check "busybox head -c 16 /dev/zero: 16 zeros" sh -c "[ \$(od -An -tx1 '$tmp/out' | tr -d ' \n') = 00000000000000000000000000000000 ]"
er /bin/busybox head -c 16 /dev/urandom
check "busybox head -c 16 /dev/urandom: 16 bytes" [ "$(wc -c <"$tmp/out")" -eq 16 ]
er /bin/busybox cat /dev/null
check "busybox cat /dev/null: nothing, exit 0" sh -c "[ $rc = 0 ] && [ ! -s '$tmp/out' ]"
er /bin/busybox ls -l /dev/null
has "$tmp/out" "^crw-rw-rw- .* 1, +3 .*/dev/null$" "ls -l /dev/null: the character device 1,3"
er /bin/bash-static -c 'echo x > /dev/full'
has "$tmp/err" "No space left on device" "a write to /dev/full: ENOSPC"

# Debian's dynamic programs: with no flags, with the closure Ember gives them of this host's
# ld.so and the libraries they need; then with a root filesystem (--files) of the same files
DREQ='{"name":"Ember","tags":["virtine","kvm","snapshot"],"n":[3,1,2]}'
debian jq /usr/bin/jq -c '{tags: (.tags|length), n: (.n|sort), up: (.name|ascii_upcase)}'
DREQ=""
SQL='create table t(x, y); insert into t values (1, "a"), (2, "b"), (3, "c");
select sum(x), group_concat(y, "-"), sqlite_version() from t;'
debian sqlite3 /usr/bin/sqlite3 :memory: "$SQL"

# a program whose interpreter is also a library its libc needs (PT_INTERP
# /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2): the closure holds it once
req "Ember"
er "$G/hello.dyn"
expect_rc 0 "hello.dyn (PT_INTERP /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)"
out_is "Hello, Ember!" "hello.dyn"

# the libraries ld.so maps at run time (libc.so.6): their syscall sites are rewritten where they
# are mapped, as the program's own are at load. In guest mode libc's own clock_gettime (no vDSO)
# is served in the guest, 1000 calls and no exit each; in trap mode each is a hypercall, not a
# stray `syscall` (a #UD or fetch fault). The runtime's table of sites follows a file the program
# maps executable itself, moves (mremap), unmaps and maps over: no stale entry is left.
er --syscalls guest --stats "$G/libsites.dyn" table /lib/x86_64-linux-gnu/libc.so.6
expect_rc 0 "libsites.dyn guest"
printf '%s\n' "monotonic: never back" "mapped executable: sites in the table" \
	"read-only copy: as the file" "moved: the table follows" "unmapped: its sites gone" \
	"mapped over: its sites gone" >"$tmp/want"
check "libsites.dyn guest: libc's sites in the table where mapped, gone when unmapped" \
	cmp -s "$tmp/out" "$tmp/want"
tail -n 1 "$tmp/err" >"$tmp/stats"
check "libsites.dyn guest: libc's 1000 clock_gettime calls served in the guest, not exits" \
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
c = [s for s in j["syscalls"] if s["name"] == "clock_gettime"][0]
assert c["in_guest"] >= 1000 and j["exits"]["total"] < 200, (c, j["exits"])' "$tmp/stats"
er --syscalls trap --stats "$G/libsites.dyn"
expect_rc 0 "libsites.dyn trap"
out_is "monotonic: never back" "libsites.dyn trap"
tail -n 1 "$tmp/err" >"$tmp/stats"
check "libsites.dyn trap: libc's sites trap by hypercall, none is a stray call's fault" \
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["exits"]["fault"] == 0 and j["exits"]["hypercall"] >= 1000, j["exits"]' "$tmp/stats"

# Node.js as the system has it (dynamic, V8 and libuv threads, epoll): a script run with -e, in
# 512 MiB of guest memory (its binary alone is near 100 MiB). On AMD SVM (the QEMU route) its
# invocations died of #UD at a `syscall` of a library, a stray call; its libraries' sites are
# rewritten where ld.so maps them now, so none is left stray
DFILES="--mem 512M"
debian node /usr/bin/node -e 'console.log(JSON.stringify({sum: [1, 2, 3].reduce((a, b) => a + b), up: "ember".toUpperCase()}))'
DFILES=""

# rootfs PROGRAM: its interpreter and libraries (as the host's ldd names them) under $tmp/root
rootfs()
{
	for f in $(ldd "$1" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
		mkdir -p "$tmp/root$(dirname "$f")"
		cp -L "$f" "$tmp/root$f"
	done
}
rootfs /usr/bin/jq
rootfs /usr/bin/sqlite3
DFILES="--files $tmp/root"
DREQ='{"name":"Ember","tags":["virtine","kvm","snapshot"],"n":[3,1,2]}'
debian "jq --files" /usr/bin/jq -c '{tags: (.tags|length), n: (.n|sort), up: (.name|ascii_upcase)}'
DREQ=""
debian "sqlite3 --files" /usr/bin/sqlite3 :memory: "$SQL"
DFILES=""

# Debian's CPython with its standard library as the function's files (its closure as ldd names
# it, /usr/lib/python3.11 without its tests): decimal, json and hashlib, as natively
rm -rf "$tmp/root"
rootfs /usr/bin/python3.11
mkdir -p "$tmp/root/usr/lib" "$tmp/root/usr/bin"
cp -a /usr/lib/python3.11 "$tmp/root/usr/lib/"
rm -rf "$tmp/root/usr/lib/python3.11/test"
cp /usr/bin/python3.11 "$tmp/root/usr/bin/"
DFILES="--files $tmp/root --mem 512M"
DREQ="1.1"
debian "python3.11 decimal" /usr/bin/python3.11 -c 'import sys, json, hashlib
from decimal import Decimal
d = Decimal(sys.stdin.read()) * 3
print(json.dumps({"d": str(d), "sha": hashlib.sha256(str(d).encode()).hexdigest()[:16]}))'
# subprocess (vfork, close_range, execve of a file of its files, a pipe back), the request read
# by the child through stdin passed on
mkdir -p "$tmp/root/bin"
cp /bin/busybox "$tmp/root/bin/busybox"
DREQ="through the child"
debian "python3.11 subprocess" /usr/bin/python3.11 -c 'import subprocess, sys
r = subprocess.run(["/bin/busybox", "tr", "a-z", "A-Z"], capture_output=True)
o = subprocess.run(["/bin/busybox", "echo", "out"], stdout=subprocess.PIPE, text=True).stdout
print(r.returncode, r.stdout, o.strip(), subprocess.call(["/bin/busybox", "false"]))'
DFILES=""
DREQ=""

# what a dynamic program is refused with: its interpreter missing from its files (one line that
# names it); a library missing (ld.so's own words, exit 127, as natively)
mkdir -p "$tmp/empty"
er --files "$tmp/empty" /usr/bin/jq .
expect_rc 125 "jq, files without ld.so"
check "jq, files without ld.so: one line naming /lib64/ld-linux-x86-64.so.2" \
	sh -c "[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -qF /lib64/ld-linux-x86-64.so.2 '$tmp/err'"
rm -rf "$tmp/ldonly"
mkdir -p "$tmp/ldonly/lib64"
cp -L /lib64/ld-linux-x86-64.so.2 "$tmp/ldonly/lib64/"
er --files "$tmp/ldonly" /usr/bin/jq .
expect_rc 127 "jq, files without its libraries"
has "$tmp/err" "libjq.so.1: cannot open shared object file" "jq, files without its libraries: ld.so names libjq.so.1"

# a program naming a host file that is no library as its interpreter gets nothing of it: hello
# with a PT_INTERP of /etc/passwd (mkbadelf's relative one, rewritten) is refused, naming it
"$B/tests/mkbadelf" "$G/hello.musl" "$tmp/badelf" >/dev/null 2>&1 || mkdir -p "$tmp/badelf"
python3 - "$tmp/badelf/interp_relative" "$tmp/interp_passwd" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
old = b"lib64/ld-linux-x86-64.so.2"
open(sys.argv[2], "wb").write(b.replace(old, b"/etc/passwd".ljust(len(old), b"\0")))
PY
chmod +x "$tmp/interp_passwd"
er "$tmp/interp_passwd"
expect_rc 125 "PT_INTERP /etc/passwd"
has "$tmp/err" "interpreter /etc/passwd is not named ld-" "PT_INTERP /etc/passwd: refused, naming it"

# the closure holds the program's libraries and nothing else of the host's
er /bin/ls /etc
expect_rc 2 "ls /etc in the closure (no /etc)"
er /bin/cat /etc/passwd
check "cat /etc/passwd in the closure: fails" [ "$rc" = 1 ]
check "cat /etc/passwd in the closure: nothing read" [ ! -s "$tmp/out" ]

# the few /proc and /sys files programs read at start, made from the virtine's own state, with
# files (the closure of Debian's dynamic programs) and without (busybox, static)
BB=/bin/busybox
req ""
er /usr/bin/readlink /proc/self/exe
out_is /usr/bin/readlink "readlink /proc/self/exe: the program's path, as natively"
er /usr/bin/sha256sum /proc/self/exe
/usr/bin/sha256sum /usr/bin/sha256sum | sed 's|/usr/bin/sha256sum|/proc/self/exe|' >"$tmp/want"
check "sha256sum /proc/self/exe: the program's own bytes" cmp -s "$tmp/out" "$tmp/want"
er /usr/bin/nproc
out_is 1 "nproc: one vCPU (/sys/devices/system/cpu/online, sched_getaffinity)"
if [ "$EMBER_BACKEND" = kvm ]; then
	er --cpus 2 /usr/bin/nproc
	out_is 2 "nproc --cpus 2: two"
	er --cpus 2 "$BB" cat /sys/devices/system/cpu/online
	out_is 0-1 "busybox cat /sys/devices/system/cpu/online --cpus 2, without files: 0-1"
fi
er "$BB" cat /proc/cpuinfo
check "busybox cat /proc/cpuinfo, without files: one processor, the CPU's vendor" sh -c \
	"[ \$(grep -c '^processor' '$tmp/out') -eq 1 ] && grep -q \"^vendor_id.*: \$(grep -m1 '^vendor_id' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')\" '$tmp/out'"
er "$BB" cat /proc/self/maps
has "$tmp/out" "^[0-9a-f]{8,}-[0-9a-f]{8,} r-xp .*" "/proc/self/maps: the program's code"
has "$tmp/out" "\[stack\]$" "/proc/self/maps: its stack"
# the program is pid 1 of its invocation: /proc/1 is its own, argv as it was started (never the
# host's pid 1)
er "$BB" cat /proc/1/cmdline
printf '%s\0cat\0/proc/1/cmdline\0' "$BB" >"$tmp/want"
check "busybox cat /proc/1/cmdline: its own argv" cmp -s "$tmp/out" "$tmp/want"
# and nothing else of /proc: not another process's, not the host's
for f in /proc/2/cmdline /proc/self/environ /proc/self/mem /proc/version; do
	er "$BB" cat "$f"
	check "busybox cat $f: refused, nothing read" sh -c "[ $rc -ne 0 ] && [ ! -s '$tmp/out' ]"
done
er "$BB" sh -c 'echo x > /proc/cpuinfo'
check "a write to /proc/cpuinfo: refused" [ "$rc" -ne 0 ]

# every program of tests/corpus/ runs above: one left out fails the suite
for f in tests/corpus/*.c tests/corpus/*.cpp tests/corpus/*.go tests/corpus/*.rs; do
	n=$(basename "${f%.*}")
	case " $ran " in
	*" $n "*) ;;
	*)
		: >"$tmp/err"
		bad "$f: run by no line of $0"
		;;
	esac
done

finish

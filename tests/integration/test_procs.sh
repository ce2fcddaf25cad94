#!/bin/sh
# Processes inside an invocation (tests/guest/procs.c, with musl's fork and glibc's clone):
# fork, vfork, clone without CLONE_VM, execve of itself and of the function's files, wait4 and
# waitid, pipes, dup2, kill and SIGCHLD, process groups, each mode's output compared with a
# native run in both syscall modes; hostile: a fork bomb bounded by --pids, nothing of an
# invocation's processes reaching the next, the server serving on after a bomb; Debian's
# bash-static and busybox running pipelines and subshells, as natively.
. "$(dirname "$0")/lib.sh"
pick_backend
P=$G/procs.musl

# same MSG: the last run's stdout is $tmp/native's; else where they part and what the virtine
# printed from there
same()
{
	# DROP: lines left out of the comparison, on both sides
	grep -v "${DROP:-^\$^}" "$tmp/out" >"$tmp/out.kept"
	grep -v "${DROP:-^\$^}" "$tmp/native" >"$tmp/native.kept"
	if cmp -s "$tmp/out.kept" "$tmp/native.kept"; then
		ok "$1: output as natively"
		return
	fi
	bad "$1: output differs from the native run's"
	diff "$tmp/native" "$tmp/out" | grep '^[<>]' | head -n 3 | sed 's/^/     diff /'
	diff "$tmp/native" "$tmp/out" | grep '^>' | head -n 3 | sed 's/^/     diff /'
}

# compare LABEL PROGRAM ARGS...: PROGRAM natively (its exit status the one to have), then in a
# virtine in both syscall modes with EOPTS (ember options) before it, stdout compared. NATIVE,
# when set, is the native command instead (another path to the same files)
compare()
{
	label=$1
	shift
	if [ -n "${NATIVE:-}" ]; then
		# shellcheck disable=SC2086
		$NATIVE <"$tmp/in" >"$tmp/native" 2>"$tmp/nerr"
	else
		"$@" <"$tmp/in" >"$tmp/native" 2>"$tmp/nerr"
	fi
	nrc=$?
	[ -s "$tmp/native" ] || bad "$label: nothing printed natively"
	for mode in trap guest; do
		# shellcheck disable=SC2086
		er --syscalls "$mode" ${EOPTS:-} "$@"
		expect_rc "$nrc" "$label, $mode"
		same "$label, $mode"
	done
}

req ""
# shmem is not among them: a MAP_SHARED mapping is copied at fork like the rest of memory
# (docs/run.md), not shared with the child
MODES="fork pipe exec waitany kill dup2 orphan crash pgid threads"
for libc in musl glibc; do
	for m in $MODES; do
		compare "$m ($libc)" "$G/procs.$libc" "$m"
	done
	# a vfork child is a copy too: glibc's posix_spawn learns of a failed exec through
	# memory it shares with the child, so here it reports success and the child exits 127
	# (musl's reads a pipe and reports ENOENT, as natively)
	if [ "$libc" = glibc ]; then
		DROP="posix_spawn of a missing path" compare "vfork ($libc)" "$G/procs.$libc" vfork
		has "$tmp/out" "^posix_spawn of a missing path: exited 127$" \
			"vfork ($libc): the child of a failed posix_spawn exits 127"
	else
		compare "vfork ($libc)" "$G/procs.$libc" vfork
	fi
	compare "execself ($libc)" "$G/procs.$libc" execself
done
check "execself natively: exit 3, the new image's" [ "$nrc" = 3 ]
# static-PIE: the copy and the execve of an image loaded elsewhere
for v in musl-pie glibc-pie; do
	compare "fork ($v)" "$G/procs.$v" fork
	compare "exec ($v)" "$G/procs.$v" exec
done

# processes from a snapshot, twice: each invocation forks from the same state
for m in fork pipe exec; do
	"$P" "$m" <"$tmp/in" >"$tmp/once" 2>/dev/null
	cat "$tmp/once" "$tmp/once" >"$tmp/want"
	er --repeat 2 "$P" "$m"
	check "$m --repeat 2: as natively, twice" cmp -s "$tmp/out" "$tmp/want"
done

# a machine a process left is emptied and kept for the next fork or execve (vm_empty,
# pool_shell_return): nothing of the process before reaches the next one given it, neither
# memory it wrote (new memory, a global of the parent's) nor its FPU controls (an exec'd
# program starts with Linux's); 8 rounds each, from the request (a warm parent) and from argv
for m in fork exec; do
	compare "reuse of a machine ($m)" "$G/reuse.musl" "$m"
	req "$m"
	compare "reuse of a machine ($m, warm parent)" "$G/reuse.musl"
	req ""
done
# the machines kept for a next fork are nobody's: none counts as a descriptor the function left
req exec
er --stats "$G/reuse.musl"
stats "j['host_fds_leaked'] == 0" "reuse (exec) --stats: host_fds_leaked 0"
req ""

# execve of the function's files: a file that is no ELF (executable: ENOEXEC), and a copy of
# the program at another path
mkdir -p "$tmp/files"
printf 'echo not an ELF\n' >"$tmp/files/notelf"
chmod 755 "$tmp/files/notelf"
cp "$P" "$tmp/files/procs"
NATIVE="$P exec $tmp/files/notelf $tmp/files/procs" EOPTS="--files $tmp/files" \
	compare "exec of the function's files" "$P" exec /notelf /procs
has "$tmp/native" "^execve of a file that is no ELF: ENOEXEC$" "natively: ENOEXEC for the file that is no ELF"

# --- hostile
# a fork bomb: EAGAIN past --pids (the first process counts), all of them killed and reaped;
# the next invocation has the whole budget again
for mode in trap guest; do
	er --syscalls "$mode" --pids 8 --repeat 2 "$P" bomb
	expect_rc 0 "bomb --pids 8, $mode"
	has "$tmp/out" "^fork failed: EAGAIN$" "bomb --pids 8, $mode: fork failed: EAGAIN"
	check "bomb --pids 8, $mode: 7 children besides the parent, in each of two invocations" \
		[ "$(grep -c '^children before that: 7$' "$tmp/out")" = 2 ]
	check "bomb --pids 8, $mode: reaped all, twice" [ "$(grep -c '^reaped all$' "$tmp/out")" = 2 ]
done
er "$P" bomb
has "$tmp/out" "^fork failed: EAGAIN$" "bomb, default --pids (64): EAGAIN"
has "$tmp/out" "^children before that: 63$" "bomb, default --pids: 63 children besides the parent"
has "$tmp/out" "^reaped all$" "bomb, default --pids: reaped all"
er --pids 1 "$P" fork
expect_rc 1 "fork --pids 1"
has "$tmp/out" "^fork: EAGAIN$" "fork --pids 1: the first process alone, fork: EAGAIN"

# nothing of an invocation's processes reaches the next: a child's write to a global, its /tmp
# file, children left running (one paused, one blocked on a full pipe; their alarms at 3 s: the
# invocation must not wait for them)
rm -f /tmp/ember-procs-leak
"$P" leak <"$tmp/in" >"$tmp/native" 2>/dev/null
rm -f /tmp/ember-procs-leak
check "leak natively: clean" grep -q "^clean: 1$" "$tmp/native"
copies 3 "$tmp/native"
# (under emulation, EMBER_TEST_TIMEOUT, its bound stays: 2 s may not be enough there)
lt="--timeout 2"
[ -n "${EMBER_TEST_TIMEOUT:-}" ] && lt=""
for mode in trap guest; do
	# shellcheck disable=SC2086
	er --syscalls "$mode" $lt --repeat 3 "$P" leak
	expect_rc 0 "leak --repeat 3, $mode (a child left running does not hold the invocation)"
	check "leak --repeat 3, $mode: clean 3 times" cmp -s "$tmp/out" "$tmp/want"
	[ "$rc" = 0 ] && ! cmp -s "$tmp/out" "$tmp/want" && head -n 6 "$tmp/out" | sed 's/^/     | /'
done
check "nothing of it in the host's /tmp" [ ! -e /tmp/ember-procs-leak ]

# --- Debian's shells: pipelines, command substitution, subshells (fork without exec), and an
# execve of /proc/self/exe (busybox) and of the function's files (bash-static). Natively in /
# with an empty environment, as a virtine's.
# shell LABEL PROGRAM ARGS...: compare, natively through env -i in /
shell()
{
	if [ ! -x "$2" ]; then
		: >"$tmp/err"
		bad "$1: $2 is not installed (scripts/setup.sh installs it)"
		return 0
	fi
	label=$1
	shift
	(cd / && env -i "$@") <"$tmp/in" >"$tmp/native" 2>"$tmp/nerr"
	nrc=$?
	for mode in trap guest; do
		# shellcheck disable=SC2086
		er --syscalls "$mode" ${EOPTS:-} "$@"
		expect_rc "$nrc" "$label, $mode"
		same "$label, $mode"
	done
}
BASH=/bin/bash-static
BB=/bin/busybox
shell 'bash: x=$(echo hi)' $BASH -c 'x=$(echo hi); echo "$x"'
shell 'bash: echo a | (read x; ...)' $BASH -c 'echo a | (read x; echo got $x)'
shell 'bash: (echo sub)' $BASH -c '(echo sub); echo after'
shell 'bash: false | true; echo $?' $BASH -c 'false | true; echo $?; true | false; echo $?'
shell 'bash: a subshell'"'"'s status, exit 5' $BASH -c 'f() { return 3; }; (f); echo $?; exit 5'
shell 'busybox sh: seq | sort -rn | head -3' $BB sh -c 'seq 1 100 | sort -rn | head -3'
shell 'busybox sh: $(( $(echo 6) * 7 ))' $BB sh -c 'echo $(( $(echo 6) * 7 ))'
shell 'busybox sh: busybox echo (execve of /proc/self/exe)' $BB sh -c 'busybox echo via exe; echo $?'
# an execve by a relative path: the new program's /proc/self/exe is its file's absolute path
mkdir -p "$tmp/relroot/bin"
cp "$BB" "$tmp/relroot/bin/busybox"
: >"$tmp/in"
for mode in trap guest; do
	er --syscalls "$mode" --files "$tmp/relroot" --workdir /bin /bin/busybox sh -c \
		'exec ./busybox readlink /proc/self/exe'
	out_is /bin/busybox "execve of ./busybox from /bin, $mode: /proc/self/exe"
done
# the request read by processes: a pipeline's first stage, an exec'd program, a child after its
# parent's read, each at the one position, as a file shared by parent and child is natively;
# these fork before reading it, so every invocation runs from the start with its own request
printf 'hello procs\nsecond line\n' >"$tmp/in"
shell 'busybox sh: the request through cat | tr' $BB sh -c 'cat | tr a-z A-Z'
shell 'busybox sh: exec cat (the first process execs)' $BB sh -c 'exec busybox cat'
shell 'busybox sh: read, then a child reads the rest' $BB sh -c 'read x; echo "1: $x"; busybox cat'
shell 'bash: read in a pipeline stage' $BASH -c '{ read a; echo "$a"; } | { read b; echo "[$b]"; }'
(cd / && env -i $BB sh -c 'cat | tr a-z A-Z') <"$tmp/in" >"$tmp/once" 2>/dev/null
copies 3 "$tmp/once"
er --repeat 3 $BB sh -c 'cat | tr a-z A-Z'
check "the request through a pipeline, --repeat 3: each invocation its own, whole" \
	cmp -s "$tmp/out" "$tmp/want"
req ""
mkdir -p "$tmp/root/bin"
[ -x $BB ] && cp $BB "$tmp/root/bin/busybox"
EOPTS="--files $tmp/root" shell 'bash: /bin/busybox from the files' \
	$BASH -c '/bin/busybox echo ext; echo rc=$?'

# --- the server goes on after a bomb (the mode is the request's first word)
. "$(dirname "$0")/srv_lib.sh"
: >"$tmp/err"
start
expect "upload procs" 201 "$(http PUT /system/images/procs --data-binary @"$P")"
expect "deploy procs" 202 "$(http POST /system/functions -d '{"service":"procs","image":"procs"}')"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' --data-binary bomb "$U/function/procs")
check "server: bomb answered 200 (got $code)" [ "$code" = 200 ]
has "$tmp/body" "^fork failed: EAGAIN$" "server: bomb: fork failed: EAGAIN"
has "$tmp/body" "^reaped all$" "server: bomb: reaped all"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' --data-binary fork "$U/function/procs")
check "server: fork after the bomb answered 200 (got $code)" [ "$code" = 200 ]
has "$tmp/body" "^fork child: exited 7$" "server: fork after the bomb: its child exited 7"
check "server: healthy after them" curl -sf "$U/healthz" -o /dev/null
# across functions: the machines one function's processes leave are emptied and handed to
# another function (the shell cache is the server's): function "dirtier" execs 8 programs that
# write new memory, a global and the FPU's controls; function "looker" (another service of the
# same program: the same addresses) execs 8 that look only, on machines the dirtier's left:
# they find none of it, as natively
expect "upload reuse" 201 "$(http PUT /system/images/reuse --data-binary @"$G/reuse.musl")"
for s in dirtier looker; do
	expect "deploy $s" 202 "$(http POST /system/functions -d "{\"service\":\"$s\",\"image\":\"reuse\"}")"
done
"$G/reuse.musl" looks >"$tmp/want"
for i in 1 2 3; do
	expect "server: dirtier $i" 200 "$(http POST /function/dirtier --data-binary exec)"
	expect "server: looker $i after the dirtier's machines" 200 \
		"$(http POST /function/looker --data-binary looks)" "$(cat "$tmp/want")"
done
stop
check "server: stopped cleanly (exit $rc)" [ "$rc" = 0 ]
finish

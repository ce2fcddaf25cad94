#!/bin/sh
# Programs and #! scripts written to /tmp and run (tests/guest/tmpexec.c): execve and execveat
# (a folder's descriptor, AT_EMPTY_PATH's fexecve, AT_SYMLINK_NOFOLLOW, their errors) of an ELF
# copy of the program, of scripts (#! lines split as Linux's, nested to its limit, interpreters
# in /tmp and in the function's files) and of hostile files (no execute bit, no ELF, truncated
# or malformed ELFs): every answer as natively, in both syscall modes; a dynamic program with its
# interpreter from the files or from /tmp; the program read at the exec (a later write to its
# file changes nothing it runs); a chain of 200 execs; nothing of it at the next invocation,
# nor in the host's /tmp.
. "$(dirname "$0")/lib.sh"
pick_backend
P=$G/tmpexec.musl
D=/tmp/ember-tmpexec
root=$tmp/root
mkdir -p "$root/bin" "$root/lib/x86_64-linux-gnu"
cp "$P" "$root/bin/tmpexec.musl" # its own name: a process is named by its file
cp "$G/hello.dyn" "$root/bin/hello.dyn"
LD=/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
cp "$LD" /lib/x86_64-linux-gnu/libc.so.6 "$root/lib/x86_64-linux-gnu/"

# natively (in the host's /tmp, the folder made and removed), then in a virtine (the files'
# program at /bin/tmpexec): every result as natively
rm -rf "$D"
"$P" ops "$P" >"$tmp/native" 2>&1
rm -rf "$D"
check "natively: the program ran to its end" grep -q "^rmdir: 0\$" "$tmp/native"
check "natively: 5 scripts deep run, 6 are ELOOP" grep -q "^6 scripts deep: ELOOP\$" "$tmp/native"
for mode in trap guest; do
	er --syscalls "$mode" --files "$root" "$P" ops /bin/tmpexec.musl
	expect_rc 0 "ops, $mode"
	check "ops, $mode: every execve and execveat as natively" cmp -s "$tmp/out" "$tmp/native"
	[ -s "$tmp/out" ] && ! cmp -s "$tmp/out" "$tmp/native" && diff "$tmp/native" "$tmp/out" | head -n 8
done
check "ops: nothing of it in the host's /tmp" [ ! -e "$D" ]

# a dynamic program: its interpreter the files' (the one it names), then a copy in /tmp
rm -rf "$D"
"$P" dyn "$G/hello.dyn" "$LD" >"$tmp/native" 2>&1
rm -rf "$D"
check "natively: the dynamic program ran twice" [ "$(grep -c 'exit 0' "$tmp/native")" = 2 ]
for mode in trap guest; do
	er --syscalls "$mode" --files "$root" "$P" dyn /bin/hello.dyn "$LD"
	expect_rc 0 "dyn, $mode"
	check "dyn, $mode: as natively (interpreter from the files, from /tmp, removed: ENOENT)" \
		cmp -s "$tmp/out" "$tmp/native"
done

# read at the exec: the file rewritten while its program runs (Linux refuses, ETXTBSY; Ember's
# /tmp lets it be written) changes nothing the program runs nor its /proc/self/exe
er "$P" later
expect_rc 0 "later"
printf '%s\n' "its file rewritten: 0" "still running; /proc/self/exe: the program" \
	"it ended: exit 5" >"$tmp/want"
check "later: the running program is the bytes read at the exec" cmp -s "$tmp/out" "$tmp/want"

# 200 execs one after the other, of the /tmp copy and of /proc/self/exe: each a new machine,
# the copies no process runs given back
for mode in trap guest; do
	er --syscalls "$mode" "$P" chain 200
	expect_rc 0 "chain 200, $mode"
	out_is "chain: done" "chain 200, $mode: ran to its end"
done

# nothing survives the invocation: each of three finds no program the one before left, and the
# program each runs prints in its own invocation's output only
er --repeat 3 --files "$root" "$P" leave
expect_rc 0 "leave --repeat 3"
printf '%s\n' absent "execve of an ELF in /tmp:  ran: argc 4 [prog] [child] [one] [two]; name prog, execfn [$D/prog]" \
	"  exit 7" >"$tmp/one"
copies 3 "$tmp/one"
check "leave --repeat 3: each invocation starts without the program the one before left, and has its own program's output once" \
	cmp -s "$tmp/out" "$tmp/want"
check "leave: nothing in the host's /tmp" [ ! -e "$D" ]
finish

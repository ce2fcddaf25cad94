#!/bin/sh
# Which system calls the ember processes of a command make: runs CMD under `perf record` on the
# raw_syscalls:sys_enter tracepoint (the command and its children only, ember's threads and the
# ptrace stub by their names), then prints one line per call: count, process (ember or stub),
# number, name, and for ioctl, fcntl, prctl, socket, clone, mmap, mprotect, madvise and
# setsockopt the argument values seen. The sandbox's allow-list (src/cli/sandbox_list.c) is
# built from these tables; docs/security.md says how. With --after, only the calls made under
# the sandbox: after the process installed its filter (seccomp(SECCOMP_SET_MODE_FILTER)), in
# its threads and in the processes it started since (the ptrace stub). A call the filter refuses
# never reaches the tracepoint: it shows as the "forbidden system call" line on stderr instead.
#   tests/tools/syscall-trace.sh [--after] OUT CMD...   e.g.
#   tests/tools/syscall-trace.sh --after /tmp/run.txt sh tests/integration/test_run.sh
set -u
after=0
if [ "$1" = --after ]; then
	after=1
	shift
fi
out=$1
shift
data=$(mktemp /tmp/syscall-trace.XXXXXX)
trap 'rm -f "$data"' EXIT
perf record -q -e raw_syscalls:sys_enter,raw_syscalls:sys_exit --filter 'comm ~ "*ember*" || comm ~ "MHD*"' -o "$data" -- "$@"
rc=$?
unistd=/usr/include/x86_64-linux-gnu/asm/unistd_64.h
perf script -i "$data" -F comm,pid,tid,event,trace 2>/dev/null | awk -v unistd="$unistd" -v after=$after '
BEGIN {
	while ((getline line < unistd) > 0)
		if (split(line, f, " ") == 3 && f[1] == "#define" && f[2] ~ /^__NR_/)
			name[f[3]] = substr(f[2], 6)
	# the argument that tells what the call does: 1 = first, 2 = second ...
	which["ioctl"] = 2; which["fcntl"] = 2; which["prctl"] = 1; which["socket"] = 1
	which["clone"] = 1; which["mmap"] = 3; which["mprotect"] = 3; which["madvise"] = 3
	which["setsockopt"] = 3; which["getsockopt"] = 3; which["futex"] = 2
}
{
	# "COMM PID/TID EVENT: NR n (a, b, ...)" or "... sys_exit: NR n = ret": COMM may hold spaces,
	# so find "NR" from the end
	for (i = NF; i > 0 && $i != "NR"; i--)
		;
	if (i < 3)
		next
	split($(i - 2), pt, "/") # PID/TID
	pid = pt[1]
	tid = pt[2]
	nr = $(i + 1)
	if ($(i - 1) ~ /sys_exit/) {
		ret = $(i + 3)
		# seccomp(SECCOMP_SET_MODE_FILTER, ...) that worked (libseccomp probes with NULL
		# first): the sandbox is on from here
		if (last[tid] == "317 1" && ret == 0)
			under[pid] = 1
		# a process clone starts (its first event is this return, with 0) from an ember
		# under the filter: the ptrace stub, before and after its execveat
		if (nr == 56 && ret == 0 && !(pid in seen) && anyunder)
			under[pid] = 1
		seen[pid] = 1
		anyunder = anyunder || under[pid]
		next
	}
	seen[pid] = 1
	a1 = $(i + 2)
	gsub(/[(),]/, "", a1)
	last[tid] = nr " " a1
	if (after && !under[pid])
		next
	proc = $1 ~ /^memfd:/ ? "stub" : "ember"
	n = name[nr] != "" ? name[nr] : "?"
	count[proc " " nr " " n]++
	if (n in which) {
		a = $(i + 1 + which[n])
		gsub(/[(),]/, "", a)
		args[proc " " nr " " n] = args[proc " " nr " " n] (index(seen[proc n], " " a " ") ? "" : " " a)
		seen[proc n] = seen[proc n] " " a " "
	}
}
END {
	for (k in count)
		printf "%9d %s%s\n", count[k], k, args[k] != "" ? "  args:" args[k] : ""
}' | sort -k2,2 -k3,3n >"$out"
echo "syscall-trace: $(wc -l <"$out") calls in $out (the command exited $rc)"
exit $rc

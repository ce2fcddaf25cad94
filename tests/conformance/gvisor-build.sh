#!/bin/sh
# Builds gVisor's system-call tests (a checkout's test/syscalls/linux) as static binaries with Debian's gtest, gmock and absl.
#
# usage: gvisor-build.sh GVISOR_CHECKOUT OUTDIR [NAME...]
# NAME is a test file's base name, read for test/syscalls/linux/read.cc; the
# default is the families Ember serves. Makes OUTDIR/NAME_test, and the helper
# programs some tests exec under OUTDIR/test/syscalls/linux/, where RunfilePath
# finds them (beside the test binary, or under $TEST_SRCDIR). Needs g++,
# libgtest-dev, libgmock-dev and libabsl-dev. JOBS (default 2) sets make -j.
set -u
[ $# -ge 2 ] || { echo "usage: $0 GVISOR_CHECKOUT OUTDIR [NAME...]" >&2; exit 2; }
src=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
shift 2
lx=$src/test/syscalls/linux
[ -f "$lx/read.cc" ] && [ -f "$src/test/util/test_util.h" ] ||
	{ echo "$src: no test/syscalls/linux or test/util" >&2; exit 2; }

families="read write pipe poll epoll eventfd mmap brk clock_gettime futex fork
exec wait sigaction sigprocmask sigaltstack uname prctl arch_prctl open stat getdents"
names=${*:-$families}

# Extra sources a test links and helper programs it runs (from the suite's BUILD).
extra() { case $1 in poll) echo base_poll_test.cc ;; esac; }
helpers() {
	case $1 in
	exec) echo exec_assert_closed_workload exec_basic_workload exec_check_creds \
		exec_proc_exe_workload exec_state_workload priority_execve ;;
	sigaltstack) echo sigaltstack_check ;;
	esac
}

# Debian 12's absl (20220623) predates Mutex::lock() and MutexLock(Mutex&),
# which the suite now uses: the test files are compiled from copies in
# OUTDIR/src rewritten to the older spelling.
mkdir -p "$out"
: >"$out/compat.new"
grep -q 'void lock()' /usr/include/absl/synchronization/mutex.h ||
	cat >"$out/compat.new" <<'SED'
s/\bmu\.lock()/mu.Lock()/
s/\bmu\.unlock()/mu.Unlock()/
s/\(absl::\(Reader\|Writer\)\{0,1\}MutexLock [a-z_]*(\)\([a-z_]\)/\1\&\3/
SED
cmp -s "$out/compat.new" "$out/compat.sed" || mv "$out/compat.new" "$out/compat.sed"

mkdir -p "$out/src" "$out/obj/util" "$out/obj/linux" "$out/log" "$out/shim" "$out/test/syscalls/linux"

# Two files of test/util stand in for Bazel and Google Benchmark, which Debian
# does not ship as static libraries: RunfilePath and TestInit/RunAllTests.
cat >"$out/shim/runfiles.cc" <<'CC'
// RunfilePath without Bazel: $TEST_SRCDIR/PATH, else PATH beside the test binary.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <string>
#include "test/util/test_util.h"
namespace gvisor {
namespace testing {
std::string RunfilePath(std::string path) {
  const char* dir = getenv("TEST_SRCDIR");
  if (dir) return std::string(dir) + "/" + path;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return path;
  std::string s(exe, n);
  return s.substr(0, s.rfind('/') + 1) + path;
}
}  // namespace testing
}  // namespace gvisor
CC
cat >"$out/shim/test_init.cc" <<'CC'
// TestInit and RunAllTests without Google Benchmark: gtest flags, then absl flags.
#include <signal.h>
#include "gtest/gtest.h"
#include "absl/flags/parse.h"
#include "test/util/test_util.h"
namespace gvisor {
namespace testing {
void SetupGvisorDeathTest() {}
void TestInit(int* argc, char*** argv) {
  ::testing::InitGoogleTest(argc, *argv);
  ::absl::ParseCommandLine(*argc, *argv);
  signal(SIGPIPE, SIG_IGN);  // as the suite's own: tests do not expect SIGPIPE
}
int RunAllTests() { return RUN_ALL_TESTS(); }
}  // namespace testing
}  // namespace gvisor
CC

# test/util: all but its tests, other systems' files and the two replaced above.
util=$(cd "$src/test/util" && ls *.cc | grep -Ev \
	'_test\.cc$|^test_main\.cc$|^fuchsia_|_other\.cc$|^test_util_(runfiles|impl)\.cc$')

libdir=/usr/lib/x86_64-linux-gnu
absl=$(ls "$libdir"/libabsl_*.a | tr '\n' ' ')
tests= progs=
for n in $names; do
	tests="$tests $n"
	progs="$progs $(helpers "$n")"
done

{
	echo ".SECONDARY:"
	echo "CXX = g++"
	echo "CXXFLAGS = -std=c++17 -O1 -w -I$src -I$out/shim -pthread"
	echo "LIBS = $out/libgvutil.a -Wl,--start-group -lgmock -lgtest $absl -Wl,--end-group -pthread"
	echo "LINK = \$(CXX) -static -o \$@ \$^ \$(LIBS) 2>>$out/log/\$(@F).log"
	echo "COMPILE = \$(CXX) \$(CXXFLAGS) -c -o \$@ \$< 2>>$out/log/\$(@F).log"
	echo "obj/util/%.o: $src/test/util/%.cc; @\$(COMPILE)"
	echo "obj/util/%.o: shim/%.cc; @\$(COMPILE)"
	echo "src/%.cc: $lx/%.cc compat.sed; @sed -f compat.sed \$< >\$@"
	echo "obj/linux/%.o: src/%.cc; @\$(COMPILE)"
	echo "util: $(for f in $util runfiles.cc test_init.cc; do printf ' obj/util/%s' "${f%.cc}.o"; done)"
	for n in $tests; do
		printf '%s_test: obj/linux/%s.o' "$n" "$n"
		grep -q '^int main(' "$lx/$n.cc" 2>/dev/null || printf ' obj/util/test_main.o'
		for e in $(extra "$n"); do printf ' obj/linux/%s' "${e%.cc}.o"; done
		printf '\n\t@$(LINK)\n'
	done
	for p in $progs; do
		printf 'test/syscalls/linux/%s: obj/linux/%s.o\n\t@$(LINK)\n' "$p" "$p"
	done
} >"$out/Makefile"

jobs=${JOBS:-2}
rm -f "$out"/log/*.log
# A file of test/util that does not compile is left out of the archive; a test
# needing it then fails to link, and says which symbol.
make -C "$out" -k -j"$jobs" util >/dev/null 2>&1
for f in "$out"/log/*.o.log; do
	[ -s "$f" ] && echo "test/util/$(basename "$f" .o.log).cc: $(grep -m1 'error' "$f")" >&2
done
rm -f "$out/libgvutil.a"
ar rcs "$out/libgvutil.a" "$out"/obj/util/*.o 2>/dev/null
[ -f "$src/test/syscalls/linux/exit_script.sh" ] &&
	cp "$lx/exit_script.sh" "$out/test/syscalls/linux/exit_script"

targets=
for n in $tests; do targets="$targets ${n}_test"; done
for p in $progs; do targets="$targets test/syscalls/linux/$p"; done
make -C "$out" -k -j"$jobs" $targets >/dev/null 2>&1

built=0
for t in $targets; do
	if [ -x "$out/$t" ]; then
		built=$((built + 1))
		echo "built $out/$t"
	else
		why=$(cat "$out/log/$(basename "$t").log" "$out"/log/"$(basename "${t%_test}")".o.log 2>/dev/null |
			grep -m1 -E 'error|undefined reference|No rule' || echo "no rule (no $t source?)")
		echo "FAILED $t: $why"
	fi
done
# what `ember bench conformance --gvisor OUT` runs them in: a root filesystem holding the test
# programs and their helpers under /gvisor (they find the helpers beside themselves; never under
# /tmp, a virtine's own), a shell (Debian's busybox-static) as /bin/sh and /bin/echo (a hard link), bash
# (Debian's bash-static: exit_script's interpreter) as /bin/bash, and the checkout's commit as the
# suite's version. Every program built in OUTDIR so far goes in, not only this run's NAMEs, so
# rebuilding one file keeps the others.
rm -rf "$out/root"
mkdir -p "$out/root/gvisor/test/syscalls/linux" "$out/root/bin"
for t in "$out"/*_test "$out"/test/syscalls/linux/*; do
	r=${t#"$out"/}
	[ -f "$t" ] && [ -x "$t" ] && { ln "$t" "$out/root/gvisor/$r" 2>/dev/null || cp "$t" "$out/root/gvisor/$r"; }
done
cp /bin/busybox "$out/root/bin/busybox" && ln -sf busybox "$out/root/bin/sh" &&
	ln "$out/root/bin/busybox" "$out/root/bin/echo" # a file, not a link: execveat AT_SYMLINK_NOFOLLOW runs it
for b in /bin/bash-static /usr/bin/bash-static; do
	[ -x "$b" ] && { cp "$b" "$out/root/bin/bash"; break; }
done
[ -x "$out/root/bin/bash" ] || echo "no bash-static: exec_test's interpreter scripts will fail" >&2
commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo "${GVISOR_COMMIT:-unknown}")
echo "google/gvisor $commit, test/syscalls/linux" >"$out/SOURCE"
[ "$built" -gt 0 ]

#!/bin/sh
# make install into a temporary DESTDIR, from the build already made: the files and their
# contents (binary, runtimes, libember.a and .so, headers, ember.pc, ember.1); examples/embed
# built against that tree with pkg-config's flags only, linked with libember.so and with
# libember.a, and run on the backend under test; the installed ember finding its runtimes
# with no environment (ember run, ember serve); another PREFIX; make uninstall.
# Run from the repository root; B is the build directory (default build); EMBER_BACKEND is
# kvm, ptrace or auto (the default: kvm when /dev/kvm works).
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
unset EMBER_RUNTIME_DIR

ROOT=$tmp/root
repo=$PWD
P=$ROOT/usr/local
version=$(sed -n 's/^#define EMBER_VERSION "\(.*\)"$/\1/p' include/ember/ember.h)

# inst DESTDIR PREFIX [TARGET]: make install (or TARGET) from this build; its output in $tmp/err.
# MAKEFLAGS is the caller's (make test's jobserver), not this make's.
# shellcheck disable=SC2317 # run by check
inst() {
	MAKEFLAGS='' make -s B="$B" DESTDIR="$1" PREFIX="$2" "${3:-install}" >"$tmp/err" 2>&1
}

# --- the installed files
check "make install DESTDIR=... PREFIX=/usr/local" inst "$ROOT" /usr/local
for f in bin/ember lib/ember/runtimes/js lib/ember/runtimes/lua "lib/libember.so.$version"; do
	check "installed $f, executable" test -x "$P/$f"
done
for f in lib/libember.a include/ember/ember.h include/ember/abi.h include/ember/function.h \
	lib/pkgconfig/ember.pc share/man/man1/ember.1; do
	check "installed $f" test -s "$P/$f"
done
check "libember.so.0 -> libember.so.$version" test "$(readlink "$P/lib/libember.so.0")" = \
	"libember.so.$version"
check "libember.so -> libember.so.0" test "$(readlink "$P/lib/libember.so")" = libember.so.0
readelf -d "$P/lib/libember.so" >"$tmp/dyn"
has "$tmp/dyn" "SONAME.*\[libember\.so\.0\]" "the .so's soname is libember.so.0"
has "$tmp/dyn" "NEEDED.*libcapstone" "the .so needs libcapstone"
check "the .so needs no libmicrohttpd, jansson, libcurl, libyaml (no server, no CLI)" \
	sh -c "! grep -Eq 'microhttpd|jansson|curl|yaml' '$tmp/dyn'"
nm -D --defined-only "$P/lib/libember.so" | awk '{ print $3 }' >"$tmp/exports"
has "$tmp/exports" "^ember_load$" "the .so exports ember_load"
check "the .so exports only ember_* ($(wc -l <"$tmp/exports") symbols)" \
	sh -c "! grep -v '^ember_' '$tmp/exports'"
nm "$P/lib/libember.a" 2>/dev/null >"$tmp/syms"
has "$tmp/syms" " T ember_invoke$" "libember.a defines ember_invoke"
has "$tmp/syms" " _binary_ember_rt_start$" "libember.a holds the in-guest runtime"
has "$tmp/syms" " _binary_ember_stub_start$" "libember.a holds the ptrace stub"
check "libember.a holds no server (srv_*, MHD_*, json_*)" \
	sh -c "! grep -Eq ' (T srv_|U MHD_|U json_)' '$tmp/syms'"
pc=$P/lib/pkgconfig/ember.pc
has "$pc" "^prefix=/usr/local$" "ember.pc: prefix substituted"
has "$pc" "^Version: $version$" "ember.pc: version $version"
has "$pc" "^Requires.private: .*capstone.*libseccomp.*libxxhash" "ember.pc: Requires.private"
has "$pc" "^Libs: -L\\$\{libdir\} -lember$" "ember.pc: Libs"
man=$P/share/man/man1/ember.1
has "$man" '^\.TH EMBER 1 ' "ember.1 is a man page"
for c in $("$E" --help | awk '/^commands:$/ { on = 1; next } /^$/ { on = 0 } on { print $1 }'); do
	has "$man" "^\\.SH \"EMBER $(echo "$c" | tr '[:lower:]' '[:upper:]')\"" "ember.1 documents ember $c"
	for o in $("$E" "$c" --help | sed -n 's/^  \(--[a-z-]*\).*/\1/p'); do
		check "ember.1 has ember $c $o" grep -qF -- "\\fB$(echo "$o" | sed 's/-/\\-/g')" "$man"
	done
done

# --- the example, built with pkg-config's flags only (a copy, as a project of its own would)
cp -r examples/embed "$tmp/embed"
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
check "pkg-config --modversion ember" test "$(PKG_CONFIG_SYSROOT_DIR=$ROOT pkg-config --modversion ember)" = "$version"
EX_CFLAGS="-std=c11 -O2 -Wall -Wextra -Werror"
check "embed built with PKG_CONFIG_SYSROOT_DIR, linked with libember.so" \
	sh -c "PKG_CONFIG_SYSROOT_DIR='$ROOT' make -s -C '$tmp/embed' CFLAGS='$EX_CFLAGS' embed >'$tmp/err' 2>&1"
check "embed-static built with --define-variable=prefix, linked with libember.a" \
	sh -c "make -s -C '$tmp/embed' CFLAGS='$EX_CFLAGS' embed-static \
		PKG_CONFIG='pkg-config --define-variable=prefix=$P' >'$tmp/err' 2>&1"
LD_LIBRARY_PATH=$P/lib ldd "$tmp/embed/embed" >"$tmp/ldd" 2>&1
has "$tmp/ldd" "libember\.so\.0 => $P/lib/libember\.so\.0" "embed loads the installed libember.so"
readelf -d "$tmp/embed/embed-static" >"$tmp/dyn" 2>&1
check "embed-static needs no shared library" sh -c "! grep -q NEEDED '$tmp/dyn'"

# embed BINARY ARGS...: runs the example on the requests in $tmp/in, output in $tmp/out
embed() {
	LD_LIBRARY_PATH=$P/lib timeout -k 5 60 "$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
printf 'Ember\nworld\n\nlibember\n' >"$tmp/in"
printf 'Hello, Ember!\nHello, world!\nHello, world!\nHello, libember!\n' >"$tmp/want"
for bin in embed embed-static; do
	embed "$tmp/embed/$bin" "$B/functions/hello"
	expect_rc 0 "$bin hello, 4 requests"
	check "$bin hello: the 4 answers" cmp -s "$tmp/out" "$tmp/want"
	has "$tmp/err" "^embed: requests 4, failed 0, warm 4, backend $EMBER_BACKEND$" \
		"$bin: 4 warm invocations on $EMBER_BACKEND"
	embed "$tmp/embed/$bin" "$P/lib/ember/runtimes/js" functions/hello-js/handler.js
	expect_rc 0 "$bin with the installed js runtime and hello-js"
	check "$bin hello-js: the 4 answers" cmp -s "$tmp/out" "$tmp/want"
done
printf 'x\ny\n' >"$tmp/in"
embed "$tmp/embed/embed" "$G/crash_null.musl"
expect_rc 1 "embed: a function that crashes fails its requests"
has "$tmp/err" "^embed: requests 2, failed 2," "embed counts the 2 failures"
embed "$tmp/embed/embed" "$tmp/nothing"
expect_rc 2 "embed: a missing image is not loaded"
has "$tmp/err" 'No such file or directory \(image\)$' "embed: ember_error_name names the kind"

# --- the installed ember finds its runtimes with no environment
IE=$P/bin/ember
ier() {
	(cd "$tmp" && timeout -k 5 60 "$IE" run --backend "$EMBER_BACKEND" "$@") <"$tmp/in" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
}
req Ember
for rt in js lua; do
	ier --runtime $rt "$repo/functions/hello-$rt/handler.$rt"
	expect_rc 0 "installed ember run --runtime $rt"
	out_is "Hello, Ember!" "installed ember run --runtime $rt"
done
ier "$repo/$B/functions/hello"
out_is "Hello, Ember!" "installed ember run, a C function"
mkdir -p "$tmp/lonely/bin"
cp "$IE" "$tmp/lonely/bin/"
(cd "$tmp" && "$tmp/lonely/bin/ember" run --runtime duktape "$repo/functions/hello-js/handler.js") \
	<"$tmp/in" >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 125 "an ember without its runtimes"
has "$tmp/err" "not found at $tmp/lonely/bin/runtimes/js" "names where it looked"

# ember serve from the tree (srv_lib.sh's start runs $E): a js deployment answers
BUILD_E=$E
E=$IE
# shellcheck disable=SC2119 # no arguments for this start
start
python3 -c 'import json, sys
print(json.dumps({"service": "hi", "runtime": "duktape", "code": open(sys.argv[1]).read()}))' \
	functions/hello-js/handler.js >"$tmp/deploy.json"
expect "installed ember serve: deploy a js function" 202 \
	"$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
expect "installed ember serve: the js function answers" 200 "$(http POST /function/hi -d Ember)" \
	"Hello, Ember!"
stop
expect_rc 0 "installed ember serve stops cleanly"
E=$BUILD_E

# --- another PREFIX: the runtimes follow it; uninstall leaves nothing
check "make install PREFIX=/opt/ember" inst "$tmp/opt" /opt/ember
has "$tmp/opt/opt/ember/lib/pkgconfig/ember.pc" "^prefix=/opt/ember$" "ember.pc: prefix=/opt/ember"
IE=$tmp/opt/opt/ember/bin/ember
ier --runtime duktape "$repo/functions/hello-js/handler.js"
out_is "Hello, Ember!" "ember installed in /opt/ember finds its js runtime"
check "make uninstall (PREFIX=/usr/local)" inst "$ROOT" /usr/local uninstall
find "$ROOT" ! -type d >"$tmp/left"
check "uninstall leaves no file ($(wc -l <"$tmp/left") left)" test ! -s "$tmp/left"
check "make uninstall (PREFIX=/opt/ember)" inst "$tmp/opt" /opt/ember uninstall
check "uninstall removes lib/ember" test ! -e "$tmp/opt/opt/ember/lib/ember"
finish

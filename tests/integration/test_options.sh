#!/bin/sh
# Every command's option table, through the ember binary: each option its --help lists (made
# from the table) is in the man page scripts/mkman.sh makes, in that command's own section;
# every command refuses an unknown option, and a bad value of one of its options, with exit
# status 125 and one line naming it. Nothing runs a function.
# Run from the repository root; B is the build directory (default build).
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend

scripts/mkman.sh "$E" >"$tmp/ember.1" 2>"$tmp/err"
check "mkman.sh makes the man page" test -s "$tmp/ember.1"

# the names listed under a heading of a help text on stdin (as mkman.sh finds them)
listed()
{
	awk -v want="$1" '/^[^ ].*:$/ { on = ($0 == want); next } /^$/ { on = 0; next }
		on && /^  [a-z][a-z0-9-]*( |$)/ { print $1 }'
}

# ember bench is a dispatcher: its benchmarks have the options
cmds=$("$E" --help | listed commands: | grep -vx bench)
for b in $("$E" bench --help | listed benchmarks:); do cmds="$cmds bench:$b"; done
check "ember --help lists the commands, ember bench --help the benchmarks" \
	sh -c "echo '$cmds' | grep -q 'run' && echo '$cmds' | grep -q 'bench:latency'"

total=0
for c in $cmds; do
	words=$(echo "$c" | tr ':' ' ')
	# shellcheck disable=SC2086
	"$E" $words --help >"$tmp/help" 2>"$tmp/err"
	check "ember $words --help: exit 0" test $? = 0
	# the command's own section of the man page: from its .SH to the next
	head=$(echo "EMBER $words" | tr '[:lower:]' '[:upper:]')
	awk -v h=".SH \"$head\"" '$0 == h { on = 1; next } /^\.SH / { on = 0 } on' \
		"$tmp/ember.1" >"$tmp/section"
	check "ember.1 has a section for ember $words" test -s "$tmp/section"
	opts=$(sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p' "$tmp/help")
	n=0
	missing=""
	for o in $opts; do
		n=$((n + 1))
		grep -qF -- "\\fB$(echo "$o" | sed 's/-/\\-/g')" "$tmp/section" || missing="$missing $o"
	done
	total=$((total + n))
	check "ember $words: its $n options (--help among them) all in its man page section${missing:+; missing:$missing}" \
		test -z "$missing" -a "$n" -gt 1
	# shellcheck disable=SC2086
	"$E" $words --no-such-option >"$tmp/out" 2>"$tmp/err"
	rc=$?
	check "ember $words --no-such-option: 125, one line naming it" sh -c "[ $rc = 125 ] &&
		grep -q \"^ember $words: unknown option '--no-such-option'\\$\" '$tmp/err' &&
		[ \$(wc -l <'$tmp/err') = 2 ]"
done
check "$total options seen in all" test "$total" -gt 40

# bad values: COMMAND WORDS... -- WHAT STDERR SAYS (each refused before anything runs)
bad_value()
{
	want=$1
	shift
	"$E" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	check "ember $*: 125, '$want'" sh -c "[ $rc = 125 ] && grep -qF -- \"$want\" '$tmp/err'"
}
bad_value "--cpus needs a count from 1 to 16" run --cpus 17 "$G/hello.musl"
bad_value "--mem needs a size from 8M to 64G" run --mem 4M "$G/hello.musl"
bad_value "--timeout needs a positive number" run --timeout 0 "$G/hello.musl"
bad_value "--env needs NAME=VALUE" snapshot --env FOO "$G/hello.musl"
bad_value "--mem needs a value" snapshot --mem
bad_value "--async-workers needs a number from 1 to 256" serve --async-workers 0
bad_value "--max-body needs a size" serve --max-body 0
bad_value "--no-auth takes no value" serve --no-auth=yes
bad_value "--yaml needs a value" deploy -f
bad_value "-H takes 'Name: value'" invoke -H nocolon hello
bad_value "--gateway needs a value" list --gateway
bad_value "--timeout takes 1 to 86400 seconds" lb-config --timeout 0 127.0.0.1:8080
bad_value "--iterations needs a count from 1 to 1000000" bench latency --iterations 0
bad_value "--iterations needs a count from 1 to 100000" bench cold --iterations x
bad_value "--processes needs a count from 1 to 16" bench memory --processes 17
bad_value "--peer-timeout needs seconds" bench all --peer-timeout 0
bad_value "--jobs needs a count from 1 to 16" bench conformance --jobs 0
bad_value "unknown option '--functions'" bench programs --functions x
finish

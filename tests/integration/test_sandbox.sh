#!/bin/sh
# The host process's sandbox: a running ember serve and a running ember run have the seccomp
# filter on (/proc/PID/status Seccomp 2, at least one filter, no new privileges) and work under
# it; --no-sandbox and the config's "sandbox": false turn it off. ember serve --user: the server
# becomes the user (uid, gid and groups in /proc/PID/status, no capabilities left), deploys,
# invokes and starts a function cold from its state folder, which it made the user's, and
# listens on a port below 1024; a state folder of another owner, an unknown user and root are
# refused. That a forbidden call kills the process is tests/unit/test_sandbox.c's part (no
# release binary can make one on purpose).
# Run from the repository root, as root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"

# field PID NAME: the value of the NAME: line of /proc/PID/status, tabs as spaces
field() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr '\t' ' ' | sed 's/ *$//'
}

# sandboxed PID: the filter is on
# shellcheck disable=SC2317 # run by await
sandboxed() {
	[ "$(field "$1" Seccomp)" = 2 ] && [ "$(field "$1" Seccomp_filters)" -ge 1 ] &&
		[ "$(field "$1" NoNewPrivs)" = 1 ]
}

# unsandboxed PID: running, without a filter
# shellcheck disable=SC2317 # run by await
unsandboxed() {
	[ "$(field "$1" Seccomp)" = 0 ]
}

# has_guest PID: the process holds a guest's memory (a memfd), so it is past the point where
# ember run installs the sandbox
# shellcheck disable=SC2317 # run by await
has_guest() {
	ls -l "/proc/$1/fd" 2>/dev/null | grep -q 'memfd:'
}

# --- ember serve: on by default, and everything works under it
start
check "serve: the filter is on (Seccomp 2, a filter, NoNewPrivs)" sandboxed "$pid"
expect "serve: upload" 201 "$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "serve: deploy" 202 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
expect "serve: invoke" 200 "$(http POST /function/hello -d a)" "Hello, a!"
expect "serve: deploy js" 202 "$(http POST /system/functions \
	-d '{"service":"js","runtime":"duktape","code":"function handler(i) { return \"js \" + i; }"}')"
expect "serve: invoke js" 200 "$(http POST /function/js -d b)" "js b"
# async calls: their callbacks go out through libcurl, by name through the resolver
cbpid=
# shellcheck disable=SC2317 # run by the trap
sbx_cleanup() {
	[ -n "$cbpid" ] && kill -KILL "$cbpid" 2>/dev/null
	srv_cleanup
}
trap sbx_cleanup EXIT
mkdir "$tmp/cb"
python3 "$(dirname "$0")/callback_server.py" "$tmp/cb" 2>"$tmp/cb.log" &
cbpid=$!
# shellcheck disable=SC2317 # run by await
cb_listening() { [ -s "$tmp/cb/port" ]; }
await "the callback receiver to listen" cb_listening
expect "serve: async call, callback to localhost by name" 202 "$(http POST /async-function/hello \
	-d cb -H "X-Callback-Url: http://localhost:$(cat "$tmp/cb/port")/sbx")"
id=$(tr -d '\r' <"$tmp/headers" | sed -n 's/^X-Call-Id: //p')
# shellcheck disable=SC2317 # run by await
arrived() { [ -f "$tmp/cb/$id.1.body" ]; }
await "the callback of $id" arrived
check "serve: the callback arrived with the output" grep -qx 'Hello, cb!' "$tmp/cb/$id.1.body"
expect "serve: async call, callback to a name that does not resolve" 202 \
	"$(http POST /async-function/hello -d x -H "X-Callback-Url: http://ember-sandbox.invalid/x")"
await "the server to give that callback up" grep -q "ember-sandbox.invalid" "$tmp/server.log"
check "serve: still sandboxed after the work" sandboxed "$pid"
if stop; then ok "serve: stop"; else bad "serve: stop: $rc"; fi
if grep -q "forbidden system call" "$tmp/server.log"; then
	bad "serve: a forbidden call: $(grep "forbidden" "$tmp/server.log")"
else
	ok "serve: no forbidden call"
fi

# a relative state folder, as make run gives (./var): resolving it needs getcwd
mkdir -p "$tmp/rel"
(cd "$tmp/rel" && exec "$OLDPWD/$E" serve --listen "127.0.0.1:$port" --state ./var \
	--secrets "$tmp/secrets" --backend "$EMBER_BACKEND" 2>>"$tmp/server.log") &
pid=$!
await "serve with a relative state folder" curl -sf "$U/healthz" -o /dev/null
expect "serve, relative state folder: it answers" 200 "$(http GET /system/functions)" "[]"
check "serve, relative state folder: still sandboxed" kill -0 "$pid"
stop
echo hi >"$tmp/in"
(cd "$B/functions" && "$OLDPWD/$E" run --backend "$EMBER_BACKEND" --state ./relstate --cold \
	./hello <"$tmp/in" >"$tmp/out" 2>"$tmp/err")
rc=$?
check "run, relative image and state folder: exit 0" test "$rc" = 0
check "run, relative image and state folder: output" grep -q 'Hello, hi!' "$tmp/out"
rm -rf "$B/functions/relstate"
start --no-sandbox
check "serve --no-sandbox: no filter" unsandboxed "$pid"
stop
printf '{"sandbox": false}\n' >"$tmp/nosbx.json"
start --config "$tmp/nosbx.json"
check "serve, config sandbox false: no filter" unsandboxed "$pid"
stop
printf '{"sandbox": "off"}\n' >"$tmp/badsbx.json"
timeout 30 "$E" serve --listen "127.0.0.1:$port" --state "$tmp/state" --config "$tmp/badsbx.json" \
	2>"$tmp/err"
rc=$?
expect_rc 125 "serve, config sandbox not a boolean"
has "$tmp/err" 'sandbox true or false' "serve, config sandbox not a boolean: says so"

# --- ember run: waiting for its request on stdin, already sandboxed
# run_waiting ARGS...: ember run ARGS with stdin from a FIFO the test holds open on fd 3; the
# process in rpid
run_waiting() {
	rm -f "$tmp/fifo"
	mkfifo "$tmp/fifo"
	"$E" run --backend "$EMBER_BACKEND" "$@" <"$tmp/fifo" >"$tmp/out" 2>"$tmp/err" &
	rpid=$!
	exec 3>"$tmp/fifo"
}
# run_answer TEXT: the request, then the exit status in rc
run_answer() {
	printf '%s' "$1" >&3
	exec 3>&-
	wait "$rpid"
	rc=$?
}
run_waiting "$G/hello.musl"
await "ember run to load its guest" has_guest "$rpid"
check "run: the filter is on while it waits for the request" sandboxed "$rpid"
run_answer bob
expect_rc 0 "run: hello under the sandbox"
out_is 'Hello, bob!' "run: hello under the sandbox"
run_waiting --no-sandbox "$G/hello.musl"
await "ember run --no-sandbox to load its guest" has_guest "$rpid"
check "run --no-sandbox: no filter" unsandboxed "$rpid"
run_answer eve
expect_rc 0 "run --no-sandbox"

# --- ember serve --user nobody
nobody_uid=$(id -u nobody)
nobody_gid=$(id -g nobody)
nobody_groups=$(id -G nobody | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')
chmod 711 "$tmp" # nobody passes through to its own folders below
mkdir "$tmp/usecrets"
cp "$tmp/secrets/basic-auth-user" "$tmp/secrets/basic-auth-password" "$tmp/usecrets/"
chown -R nobody "$tmp/usecrets"
SERVE_ARGS="--user nobody --secrets $tmp/usecrets"
ustate=$tmp/ustate/state # neither folder exists yet
# start_user: start with the user's state folder
# The default syscall mode, not the suite's: on ptrace, guest mode needs page 0, which a stub of a
# process without root's CAP_SYS_RAWIO cannot map, so the default falls back to trap there
start_user() {
	env -u EMBER_SYSCALLS "$E" serve --listen "127.0.0.1:$port" --state "$ustate" \
		--backend "$EMBER_BACKEND" $SERVE_ARGS "$@" 2>>"$tmp/server.log" &
	pid=$!
	await "the server as nobody to answer" curl -sf "$U/healthz" -o /dev/null
}
start_user
uid_line=$(field "$pid" Uid)
gid_line=$(field "$pid" Gid)
check "--user: uid $nobody_uid, real, effective, saved and fs ($uid_line)" \
	test "$uid_line" = "$nobody_uid $nobody_uid $nobody_uid $nobody_uid"
check "--user: gid $nobody_gid, all four ($gid_line)" \
	test "$gid_line" = "$nobody_gid $nobody_gid $nobody_gid $nobody_gid"
groups_line=$(field "$pid" Groups | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')
check "--user: nobody's groups only ($groups_line)" test "$groups_line" = "$nobody_groups"
check "--user: no capability left to regain root with" \
	test "$(field "$pid" CapEff)/$(field "$pid" CapPrm)" = "0000000000000000/0000000000000000"
check "--user: sandboxed too" sandboxed "$pid"
check "--user: the missing state folder was made nobody's" \
	test "$(stat -c %U "$ustate")" = nobody
check "--user: its parent stays root's" test "$(stat -c %U "$tmp/ustate")" = root
expect "--user: upload" 201 "$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "--user: deploy" 202 "$(http POST /system/functions \
	-d '{"service":"idle","image":"hello","ember":{"keepAlive":1}}')"
expect "--user: invoke" 200 "$(http POST /function/idle -d c)" "Hello, c!"
want_mode=guest
[ "$EMBER_BACKEND" = ptrace ] && want_mode=trap
expect "--user: idle's status" 200 "$(http GET /system/function/idle)"
contains "--user: by default it runs in $want_mode mode on $EMBER_BACKEND" \
	"\"syscalls\":\"$want_mode\"" "$tmp/body"
if [ "$EMBER_BACKEND" = ptrace ]; then
	expect "--user: guest mode asked for on ptrace: 400" 400 "$(http POST /system/functions \
		-d '{"service":"guesty","image":"hello","ember":{"syscalls":"guest"}}')"
	contains "--user: ... saying why and what to use instead" "use --syscalls trap" "$tmp/body"
fi
await "idle to be unloaded after its keepAlive" status_has idle '"loaded":false'
expect "--user: invoke, cold from the snapshot on disk" 200 \
	"$(http POST /function/idle -d d)" "Hello, d!"
contains "--user: that start was cold" "X-Ember-Start: cold" "$tmp/headers"
if stop; then ok "--user: stop"; else bad "--user: stop: $rc"; fi
start_user
expect "--user: after a restart, the deployment is back" 200 \
	"$(http POST /function/idle -d e)" "Hello, e!"
stop
if [ "$EMBER_BACKEND" = kvm ]; then
	# --backend auto finds KVM through the /dev/kvm opened before root was given up: guest
	start_user --backend auto
	expect "--user --backend auto: invoke" 200 "$(http POST /function/idle -d f)" "Hello, f!"
	expect "--user --backend auto: idle's status" 200 "$(http GET /system/function/idle)"
	contains "--user --backend auto: on KVM, in guest mode" '"backend":"kvm"' "$tmp/body"
	contains "--user --backend auto: ... guest mode" '"syscalls":"guest"' "$tmp/body"
	stop
fi
others=$(find "$ustate" ! -user nobody | head -n 3)
check "--user: everything in the state folder is nobody's ($others)" test -z "$others"

# refused: a state folder of another owner (the first server's, root's), a user that does not
# exist, root
timeout 30 "$E" serve --listen "127.0.0.1:$port" --state "$tmp/state" --user nobody 2>"$tmp/err"
rc=$?
expect_rc 125 "--user with root's state folder"
has "$tmp/err" "belongs to uid 0, not to nobody.*chown -R nobody" \
	"--user with root's state folder: says whose it is and how to fix it"
timeout 30 "$E" serve --listen "127.0.0.1:$port" --state "$ustate" --user no-such-user-here 2>"$tmp/err"
rc=$?
expect_rc 125 "--user of an unknown user"
has "$tmp/err" "no-such-user-here: no such user" "--user of an unknown user: says so"
timeout 30 "$E" serve --listen "127.0.0.1:$port" --state "$ustate" --user root 2>"$tmp/err"
rc=$?
expect_rc 125 "--user root"
has "$tmp/err" "that is root" "--user root: says so"
# a port below 1024: bound as root before the drop
lowport=$(python3 -c 'import socket
for p in range(990, 900, -1):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break')
"$E" serve --listen "127.0.0.1:$lowport" --state "$ustate" --backend "$EMBER_BACKEND" \
	--user nobody --secrets "$tmp/usecrets" 2>>"$tmp/server.log" &
pid=$!
await "the server as nobody on port $lowport" curl -sf "http://127.0.0.1:$lowport/healthz" \
	-o /dev/null
check "--user on port $lowport (below 1024): answers as nobody" \
	test "$(field "$pid" Uid)" = "$nobody_uid $nobody_uid $nobody_uid $nobody_uid"
if stop; then ok "--user on port $lowport: stop"; else bad "--user on port $lowport: stop: $rc"; fi
printf '{"user": "nobody", "secrets": "%s"}\n' "$tmp/usecrets" >"$tmp/user.json"
SERVE_ARGS="--config $tmp/user.json"
start_user
check "config user: uid $nobody_uid" test "$(field "$pid" Uid)" = \
	"$nobody_uid $nobody_uid $nobody_uid $nobody_uid"
stop
finish

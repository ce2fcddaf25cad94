#!/bin/sh
# Status codes that tell who failed a deploy or an upload: the deployment's own fault is 400
# with the kind of failure (image, config, init); the server's is 5xx (a state folder it cannot
# write: 507, kind io; no memory: 503, kind nomem) and leaves nothing half-written, and an
# update that fails keeps the old version serving. The disk fails through the running server's
# RLIMIT_FSIZE (it stops root too, unlike permissions) and, where mount works, a full tmpfs
# (ENOSPC); memory through its RLIMIT_AS. Also the virtine's 8M memory minimum, at deploy and
# in `ember run --mem`.
# Run from the repository root; B is the build directory (default build); EMBER_BACKEND is kvm,
# ptrace or auto. The server, its credentials and the requests come from srv_lib.sh. Waits
# poll, bounded by AWAIT_POLLS polls 0.1 s apart (default 600).
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
pick_backend
mnt=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null && wait "$pid"
	pid=
	[ -n "$mnt" ] && umount "$mnt"
	srv_cleanup
}
trap cleanup EXIT
# SIGXFSZ ignored, as a service manager may leave it for the server: a write past RLIMIT_FSIZE
# then fails with EFBIG instead of killing it (the servers started below inherit this)
trap '' XFSZ

# refused WHAT STATUS KIND TEXT GOT: the answer was STATUS with {"kind": KIND} (when KIND is
# not -) and an error that says TEXT
refused() {
	if [ "$5" != "$2" ]; then
		bad "$1: status $5, wanted $2: $(head -c 300 "$tmp/body")"
	elif [ "$3" != - ] && ! grep -qF "\"kind\":\"$3\"" "$tmp/body"; then
		bad "$1: not of kind $3: $(head -c 300 "$tmp/body")"
	elif ! grep -qF -- "$4" "$tmp/body"; then
		bad "$1: the error does not say '$4': $(head -c 300 "$tmp/body")"
	else
		ok "$1: $2, $3"
	fi
}

# leftovers STATE [NAME]: temporary files in STATE, and NAME's deployment files (at most 3)
leftovers() {
	find "$1/functions" "$1/images" "$1/snapshots" \( -name '.tmp-*' -o -name '*.tmp-*' \
		-o -name "${2:-.tmp-}.json" -o -name "${2:-.tmp-}.image*" \) 2>/dev/null | head -n 3
}

# untouched WHAT STATE NAME: no trace of NAME's failed deployment, no temporary file anywhere
untouched() {
	left=$(leftovers "$2" "$3")
	code=$(http GET "/system/function/$3")
	if [ -n "$left" ] || [ "$code" != 404 ]; then
		bad "$1: left behind: ${left:-nothing} (status $code)"
	else
		ok "$1: nothing left behind"
	fi
}

# rlimit RESOURCE SOFT: sets the running server's soft limit (-1: none); the hard one stays
rlimit() {
	python3 -c 'import resource, sys
r = getattr(resource, "RLIMIT_" + sys.argv[2])
resource.prlimit(int(sys.argv[1]), r, (int(sys.argv[3]), resource.prlimit(int(sys.argv[1]), r)[1]))' \
		"$pid" "$1" "$2"
}

# js NAME FILE: a deployment of the JS source in FILE, to $tmp/deploy.json
js() {
	python3 -c 'import json, sys
print(json.dumps({"service": sys.argv[1], "runtime": "duktape", "code": open(sys.argv[2]).read()}))' \
		"$1" "$2" >"$tmp/deploy.json"
}

S=$tmp/state
start

# --- the deployment's own faults: 400, with the kind
refused "upload a text file" 400 image "bad image: " \
	"$(http PUT /system/images/junk --data-binary @Makefile)"
untouched "upload a text file" "$S" junk
refused "deploy an image never uploaded" 400 image "has not been uploaded" \
	"$(http POST /system/functions -d '{"service":"ghost","image":"ghost"}')"
untouched "deploy an image never uploaded" "$S" ghost
expect "upload hello: 201" 201 "$(http PUT /system/images/hello --data-binary @"$G/hello.musl")"
refused "limits.memory 4M, below a virtine's minimum" 400 - "from 8M" \
	"$(http POST /system/functions -d '{"service":"small","image":"hello","limits":{"memory":"4M"}}')"
untouched "limits.memory 4M" "$S" small
expect "limits.memory 8M, the minimum" 202 \
	"$(http POST /system/functions -d '{"service":"small","image":"hello","limits":{"memory":"8M"}}')"
expect "invoke the 8M function" 200 "$(http POST /function/small -d min)"
check "the 8M function answers" grep -qx 'Hello, min!' "$tmp/body"
printf 'throw new Error("broken at load");\nfunction handler(x) { return x; }\n' >"$tmp/init.js"
js brokeninit "$tmp/init.js"
refused "a JS handler that throws during init" 400 init "broken at load" \
	"$(http POST /system/functions -d @"$tmp/deploy.json")"
untouched "a JS init failure" "$S" brokeninit

# --- the server's faults: 5xx, and nothing half-written
cp "$S/functions/small.json" "$tmp/small.json"
head -c 2097152 /dev/urandom >"$tmp/big"
rlimit FSIZE 1048576 # 1 MiB: an image of 2 MiB, a snapshot's 64 MiB memory file cannot be written
refused "upload past the file size limit" 507 io "the server cannot write its state folder" \
	"$(http PUT /system/images/big --data-binary @"$tmp/big")"
untouched "a failed upload" "$S" big
refused "deploy when its snapshot cannot be written" 507 io "File too large" \
	"$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
untouched "a failed deploy" "$S" hello
refused "update when its snapshot cannot be written" 507 io "File too large" \
	"$(http PUT /system/functions -d '{"service":"small","image":"hello","envVars":{"V":"2"},"limits":{"memory":"64M"}}')"
check "a failed update keeps the old deployment on disk" cmp -s "$tmp/small.json" "$S/functions/small.json"
expect "a failed update keeps the old version serving" 200 "$(http POST /function/small -d old)"
rlimit FSIZE -1
expect "deploy once the disk takes it" 202 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
expect "update once the disk takes it" 202 \
	"$(http PUT /system/functions -d '{"service":"small","image":"hello","envVars":{"V":"2"},"limits":{"memory":"64M"}}')"
# the update pins the same image file it replaces: its temporary link goes too
check "no temporary file after the updates" [ -z "$(leftovers "$S")" ]

# no memory for guest RAM: the address space in use plus 256 MiB, and a function of 4 GiB
vm_kb=$(awk '/^VmSize:/ { print $2 }' "/proc/$pid/status")
rlimit AS $(((vm_kb + 262144) * 1024))
refused "deploy past the address space limit" 503 nomem "the server is out of memory" \
	"$(http POST /system/functions -d '{"service":"huge","image":"hello","limits":{"memory":"4G"}}')"
rlimit AS -1
untouched "a deploy without memory" "$S" huge
expect "hello still runs" 200 "$(http POST /function/hello -d again)"
stop

# --- a full disk (ENOSPC): a tmpfs of 16 MiB as the state folder, where mount is allowed
mkdir "$tmp/full"
if mount -t tmpfs -o size=16m ember-test "$tmp/full" 2>/dev/null; then
	mnt=$tmp/full
	start --state "$mnt"
	expect "upload hello to the small disk" 201 \
		"$(http PUT /system/images/hello --data-binary @"$G/hello.musl")"
	dd if=/dev/zero of="$mnt/filler" bs=65536 2>/dev/null # until the disk is full
	refused "deploy on a full disk" 507 io "No space left on device" \
		"$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
	untouched "a deploy on a full disk" "$mnt" hello
	refused "upload on a full disk" 507 io "No space left on device" \
		"$(http PUT /system/images/again --data-binary @"$G/hello.musl")"
	untouched "an upload on a full disk" "$mnt" again
	rm "$mnt/filler"
	expect "deploy once there is room" 202 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
	expect "invoke it" 200 "$(http POST /function/hello -d room)"
	stop
	umount "$mnt" && mnt=
else
	echo "skip: a full tmpfs (mount -t tmpfs needs root and CAP_SYS_ADMIN); RLIMIT_FSIZE above covered the disk"
fi

# --- ember run --mem: the same minimum
er --mem 4M "$G/hello.musl"
expect_rc 125 "ember run --mem 4M"
has "$tmp/err" 'from 8M' "ember run --mem 4M names the minimum"
req min
er --mem 8M "$G/hello.musl"
expect_rc 0 "ember run --mem 8M"
finish

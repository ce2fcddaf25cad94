#!/bin/sh
# Slow and greedy clients (slowloris): a request whose headers or body trickle in is cut after
# readTimeout, a connection that starts no request after connectionTimeout; one client address
# holds at most maxConnectionsPerAddress connections while others still get in; a chunked body
# past the size limit is answered 413, or cut when it goes on and on; a handler that runs long
# (a log follower) is never cut. Run from the repository root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"

printf '{"readTimeout": 2, "connectionTimeout": 3, "maxConnections": 40, "maxConnectionsPerAddress": 5}\n' \
	>"$tmp/serve.json"
SERVE_ARGS="--config $tmp/serve.json"
start
expect "upload hello" 201 "$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "deploy hello" 202 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"

b64=$(printf %s "$AUTH" | base64 | tr -d '\n')
# slow CLIENT-KIND SECONDS: a client of that kind on its own connection; prints how long the
# server took to close it ("open" when it was still open after SECONDS)
slow() {
	python3 - "$port" "$1" "$2" "$b64" <<'EOF'
import socket, sys, time
port, kind, limit = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(0.2)
t0 = time.time()
start = {"headers": b"POST /function/hello HTTP/1.1\r\nHost: x\r\nX-Slow: ",
         "body": b"POST /function/hello HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
         "idle": b"",
         "follow": b"GET /system/logs?name=hello&follow=true HTTP/1.1\r\nHost: x\r\n"
                   b"Authorization: Basic " + sys.argv[4].encode() + b"\r\n\r\n"}
s.sendall(start[kind])
while time.time() - t0 < limit:
    try:
        if kind in ("headers", "body"):
            s.send(b"a")  # a byte every 0.2 s: never idle
        d = s.recv(65536)
        if not d:
            print("%.1f" % (time.time() - t0))
            sys.exit(0)
    except socket.timeout:
        pass
    except OSError:
        print("%.1f" % (time.time() - t0))
        sys.exit(0)
print("open")
EOF
}
for kind in headers body idle; do
	case $kind in
	headers) what="trickling its headers" ;;
	body) what="trickling its body" ;;
	*) what="that starts no request" ;;
	esac
	got=$(slow $kind 10)
	case $got in
	open) bad "a client $what is cut: still open after 10 s" ;;
	*) check "a client $what is cut (after ${got}s)" \
		awk -v t="$got" 'BEGIN {exit !(t >= 1.5 && t < 6)}' ;;
	esac
done
got=$(slow follow 5)
expect "a log follower is not cut (its handler runs)" open "$got"
NOAUTH=1 http GET /metrics >/dev/null
check "the cuts are counted" grep -qE '^ember_http_connections_cut_total [1-9]' "$tmp/body"

# --- one address holds at most 5 connections; another address still gets in
python3 - "$port" >"$tmp/perip" <<'EOF'
import socket, sys
port = int(sys.argv[1])
held = []
for i in range(5):  # each answered once, so the server holds it (keep-alive) before the sixth
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    s.settimeout(3)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    s.recv(100)
    held.append(s)
s = socket.socket()
s.bind(("127.0.0.2", 0))
s.connect(("127.0.0.1", port))
s.settimeout(3)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
try:
    d = s.recv(100)
except OSError:
    d = b""
print("sixth:", "refused" if not d else d.split(b"\r\n")[0].decode())
o = socket.create_connection(("127.0.0.1", port))
o.settimeout(3)
o.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
print("other:", o.recv(100).split(b"\r\n")[0].decode())
EOF
contains "a sixth connection from one address is refused" "sixth: refused" "$tmp/perip"
contains "another address still gets in" "other: HTTP/1.1 200" "$tmp/perip"

# --- chunked bodies past the 6 MiB limit: 413 when they end, cut when they go on
head -c 20000000 /dev/zero >"$tmp/big"
st=$(curl -s -o /dev/null -w '%{http_code}' -H 'Transfer-Encoding: chunked' -H 'Expect:' \
	--data-binary @"$tmp/big" "$U/function/hello")
expect "a chunked body of 20 MB: 413 once it ends" 413 "$st"
head -c 90000000 /dev/zero >"$tmp/big"
st=$(curl -s -o /dev/null -w '%{http_code} %{size_upload}' -H 'Transfer-Encoding: chunked' \
	-H 'Expect:' --data-binary @"$tmp/big" "$U/function/hello")
check "a chunked body of 90 MB is cut after 64 MiB past the limit ($st)" \
	awk -v u="${st#* }" 'BEGIN {exit !(u < 90000000)}'
expect "the server still answers" 200 "$(http POST /function/hello -d x)" "Hello, x!"
if stop; then ok "stop"; else bad "stop: $rc"; fi
finish

"""A callback receiver for test_async.sh: python3 callback_server.py DIR

Listens on a free loopback port and writes it to DIR/port once it accepts connections. Each
request is kept as DIR/<X-Call-Id>.<n>.body and DIR/<X-Call-Id>.<n>.headers (n counts the
requests with that call id from 1; the headers file starts with "METHOD PATH" and is written
last, so a test that sees it sees the whole request). The answer is 200, except:
  /flaky...       503 to the first request of each call id, 200 after
  /status/NNN     NNN
"""
import http.server
import os
import re
import sys
import threading

DIR = sys.argv[1]
lock = threading.Lock()
counts = {}


def put(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        call = self.headers.get("X-Call-Id", "none")
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,80}", call):
            call = "bad-call-id"
        with lock:
            n = counts[call] = counts.get(call, 0) + 1
        stem = os.path.join(DIR, "%s.%d" % (call, n))
        put(stem + ".body", body)
        head = "%s %s\n" % (self.command, self.path)
        head += "".join("%s: %s\n" % (k, v) for k, v in self.headers.items())
        put(stem + ".headers", head.encode())
        code = 200
        m = re.fullmatch(r"/status/(\d{3})", self.path)
        if m:
            code = int(m.group(1))
        elif self.path.startswith("/flaky") and n == 1:
            code = 503
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, fmt, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
put(os.path.join(DIR, "port"), str(server.server_address[1]).encode())
server.serve_forever()

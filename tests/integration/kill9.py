#!/usr/bin/env python3
"""test_kill9.sh's client: a stream of deploys, updates, deletes and uploads that kills the
server with SIGKILL at a point chosen from a seed (`fire`), then what must hold after a
restart (`check`). The ledger (a JSON file) keeps, across rounds, what the server acknowledged
(a 2xx received) and what was in flight when it died.

  kill9.py fire URL USER:PASS PID SEED ROUND LEDGER HELLO ARGS CALLBACK-URL
  kill9.py check URL USER:PASS STATE LEDGER HELLO ARGS CALLBACK-LOG
  kill9.py callbacks PORT-FILE CALLBACK-LOG   (until killed: the async calls' callbacks)

Functions: js-0..js-2 (runtime js, whose code and envVars V carry the version) and img-0..img-2
(an image, pic-hello or pic-args, chosen per version, with envVars TEST_V the version; args
prints TEST_V back, hello answers Hello). Each function has one thread doing one request at a
time, so at most one of its requests is in flight when the server dies; another thread
uploads the two images again and again (always the same bytes), and one more makes async calls
of `async` (a JS function deployed once), each with its own X-Call-Id; every call acknowledged
(202) must call back at least once, across the kills (the callbacks server logs them). `fire`
kills the server right
after the N-th acknowledged answer (odd rounds) or right after the N-th request was sent in
full (even rounds), N drawn from the seed and the round. Exit status: 0, or 1 with a reason on
stderr for every check that failed.
"""
import base64
import http.client
import json
import os
import random
import signal
import sys
import threading
import time
import urllib.parse

FUNCS = ["js-0", "js-1", "js-2", "img-0", "img-1", "img-2"]
IMAGES = ["pic-hello", "pic-args"]
JS = 'function handler(input, env) { return "%s v%d\\n"; }\n'


def connect(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def deployment(name, v, rng):
    d = {"service": name, "envVars": {"V": str(v), "TEST_V": str(v)}}
    if name.startswith("js"):
        d.update(runtime="duktape", code=JS % (name, v))
    else:
        d["image"] = rng.choice(IMAGES)
    return d


def expected(name, status, body):
    """what an invocation of the deployment `status` must answer, or why it cannot be right"""
    v = status.get("envVars", {}).get("V")
    if v is None:
        return "no version in its envVars"
    if name.startswith("js"):
        return None if body == "%s v%s\n" % (name, v) else "answered %r, not v%s" % (body, v)
    if status.get("image") == "pic-hello":
        return None if body == "Hello, x!\n" else "answered %r, not hello's" % body
    if status.get("image") == "pic-args":
        ok = ("TEST_V=%s\n" % v) in body and "FAIL" not in body
        return None if ok else "answered %r, not args with TEST_V=%s" % (body[:200], v)
    return "an unknown image %r" % status.get("image")


class Fire:
    def __init__(self, url, auth, pid, seed, rnd, ledger):
        self.url, self.pid = url, pid
        self.hdr = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()}
        self.rng = random.Random(seed * 1000 + rnd)
        self.target = self.rng.randint(1, 30)
        self.on_send = rnd % 2 == 0
        self.count = 0
        self.lock = threading.Lock()
        self.dead = threading.Event()
        self.ledger = ledger
        self.errors = []

    def tick(self, sent):
        """one request sent or acknowledged: the kill comes at the target's"""
        with self.lock:
            if sent != self.on_send or self.dead.is_set():
                return
            self.count += 1
            if self.count >= self.target:
                os.kill(self.pid, signal.SIGKILL)
                self.dead.set()

    def request(self, method, path, body, ctype, more=None):
        """the status, or None when no answer came (the server died meanwhile)"""
        c = connect(self.url)
        try:
            h = dict(self.hdr)
            h.update(more or {})
            h["Content-Type"] = ctype
            c.request(method, path, body=body, headers=h)
            self.tick(True)
            r = c.getresponse()
            text = r.read()
            if 200 <= r.status < 300:
                self.tick(False)
            elif not self.dead.is_set():
                self.errors.append("%s %s: %d %r" % (method, path, r.status, text[:200]))
            return r.status
        except (OSError, http.client.HTTPException):
            return None
        finally:
            c.close()

    def function(self, name):
        rng = random.Random(self.rng.random())
        f = self.ledger["functions"].setdefault(
            name, {"exists": False, "version": 0, "image": None, "pending": None})
        while not self.dead.is_set():
            with self.lock:
                self.ledger["next"] += 1
                v = self.ledger["next"]
            if f["exists"] and rng.random() < 0.1:
                op = {"op": "delete", "version": v}
                body = json.dumps({"functionName": name})
                method = "DELETE"
            else:
                d = deployment(name, v, rng)
                op = {"op": "deploy", "version": v, "image": d.get("image")}
                body = json.dumps(d)
                method = "PUT" if f["exists"] else "POST"
            f["pending"] = op
            st = self.request(method, "/system/functions", body, "application/json")
            if st is None:
                return  # no answer: op stays pending
            f["pending"] = None
            if 200 <= st < 300:
                f["exists"] = op["op"] == "deploy"
                f["version"] = v if f["exists"] else 0
                f["image"] = op.get("image")

    def uploads(self, files):
        rng = random.Random(self.rng.random())
        while not self.dead.is_set():
            name = rng.choice(IMAGES)
            self.request("PUT", "/system/images/" + name, files[name],
                         "application/octet-stream")

    def calls(self, callback, rnd):
        n = 0
        while not self.dead.is_set():
            n += 1
            cid = "r%d-%d" % (rnd, n)
            h = {"X-Call-Id": cid, "X-Callback-Url": callback}
            self.ledger["async"].setdefault("pending", []).append(cid)
            st = self.request("POST", "/async-function/async", "x", "text/plain", h)
            if st == 202:
                self.ledger["async"]["acked"].append(cid)
            if st is not None:
                self.ledger["async"]["pending"].remove(cid)

    def run(self, files, callback, rnd):
        ts = [threading.Thread(target=self.function, args=(n,)) for n in FUNCS]
        ts.append(threading.Thread(target=self.uploads, args=(files,)))
        ts.append(threading.Thread(target=self.calls, args=(callback, rnd)))
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print("killed after the %d-th %s, %d async calls acknowledged" %
              (self.target, "request sent" if self.on_send else "acknowledged answer",
               len(self.ledger["async"]["acked"])))
        return self.errors


def called_back(log):
    """the ids the callbacks server saw, with a right answer (status 200, async's output)"""
    seen = set()
    if os.path.exists(log):
        with open(log) as fh:
            for line in fh:
                cid, status, body = (line.rstrip("\n").split(" ", 2) + ["", ""])[:3]
                if status == "200" and body == "async x":
                    seen.add(cid)
    return seen


def check_async(state, ledger, log):
    """every acknowledged call calls back (within a minute); every call file whole"""
    bad = []
    adir = os.path.join(state, "async")
    for n in sorted(os.listdir(adir)):
        p = os.path.join(adir, n)
        if not n.endswith(".call"):
            bad.append("async/%s: not a call file (a damaged one is renamed .bad)" % n)
            continue
        with open(p, "rb") as fh:
            head = fh.read().split(b"\n", 1)[0]
        try:
            json.loads(head)
        except ValueError as e:
            bad.append("async/%s: its first line does not parse: %s" % (n, e))
    want = set(ledger["async"]["acked"])
    for _ in range(600):
        if want <= called_back(log):
            break
        time.sleep(0.1)
    missing = sorted(want - called_back(log))
    if missing:
        bad.append("%d acknowledged async calls never called back: %s" %
                   (len(missing), " ".join(missing[:10])))
    ledger["async"]["acked"] = []
    ledger["async"]["pending"] = []
    return bad


def callbacks(portfile, log):
    """an HTTP server that logs every POST it gets: "ID STATUS BODY" (X-Call-Id,
    X-Function-Status)"""
    import http.server

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            line = "%s %s %s\n" % (self.headers.get("X-Call-Id"),
                                   self.headers.get("X-Function-Status"),
                                   body.decode(errors="replace").strip())
            with open(log, "a") as fh:
                fh.write(line)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    with open(portfile + ".tmp", "w") as fh:
        fh.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


def check(url, auth, state, ledger, files):
    bad = []
    hdr = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()}
    # no temporary file or folder left anywhere in the state folder
    for root, dirs, names in os.walk(state):
        for n in dirs + names:
            if ".tmp" in n:
                bad.append("a temporary file is left: %s" % os.path.join(root, n))
    # every file whole: the JSON parses, an image is one of the uploaded ones, byte for byte
    fdir = os.path.join(state, "functions")
    named = set()
    for n in sorted(os.listdir(fdir)):
        p = os.path.join(fdir, n)
        if n.endswith(".json"):
            try:
                with open(p) as fh:
                    named.add(json.load(fh).get("imageFile"))
            except ValueError as e:
                bad.append("%s does not parse: %s" % (p, e))
    for n in sorted(os.listdir(fdir)):
        if n.endswith(".json"):
            continue
        with open(os.path.join(fdir, n), "rb") as fh:
            data = fh.read()
        if data not in files.values():
            bad.append("functions/%s is not an uploaded image (%d bytes)" % (n, len(data)))
        if n not in named:
            bad.append("functions/%s is named by no deployment" % n)
    for n in IMAGES:
        with open(os.path.join(state, "images", n), "rb") as fh:
            if fh.read() != files[n]:
                bad.append("images/%s is not the uploaded bytes" % n)
    # every acknowledged deployment there in its acknowledged version (or the one in flight)
    c = connect(url)
    c.request("GET", "/system/functions", headers=hdr)
    served = {s["name"]: s for s in json.loads(c.getresponse().read())}
    left = dict(served)
    left.pop("async", None)  # deployed once by the test, for the async calls
    for name, f in ledger["functions"].items():
        s = left.pop(name, None)
        p = f["pending"]
        if s is None:
            if f["exists"] and not (p and p["op"] == "delete"):
                bad.append("%s v%d was acknowledged and is gone" % (name, f["version"]))
            continue
        v = int(s["envVars"].get("V", "0"))
        if f["exists"] and v == f["version"] and s.get("image") == f["image"]:
            pass
        elif p and p["op"] == "deploy" and v == p["version"] and s.get("image") == p["image"]:
            pass  # the update in flight made it
        else:
            bad.append("%s is v%d (image %s); acknowledged: %s, in flight: %s" %
                       (name, v, s.get("image"), f, p))
            continue
        c.request("POST", "/function/" + name, body="x")
        r = c.getresponse()
        body = r.read().decode(errors="replace")
        why = "status %d" % r.status if r.status != 200 else expected(name, s, body)
        if why:
            bad.append("%s v%d: %s" % (name, v, why))
    for name in left:
        bad.append("%s is served and was never deployed" % name)
    settle(ledger, served)
    return bad


def settle(ledger, served):
    """what the restarted server holds is what the next round starts from"""
    for name, f in ledger["functions"].items():
        s = served.get(name)
        f["pending"] = None
        f["exists"] = s is not None
        f["version"] = int(s["envVars"].get("V", "0")) if s else 0
        f["image"] = s.get("image") if s else None


def main():
    mode = sys.argv[1]
    if mode == "callbacks":
        return callbacks(sys.argv[2], sys.argv[3])
    if mode == "fire":
        url, auth, pid, seed, rnd, lpath, hello, args, callback = sys.argv[2:11]
    else:
        url, auth, state, lpath, hello, args, log = sys.argv[2:9]
    files = {}
    for n, p in (("pic-hello", hello), ("pic-args", args)):
        with open(p, "rb") as fh:
            files[n] = fh.read()
    ledger = {"next": 0, "functions": {}, "async": {"acked": [], "pending": []}}
    if os.path.exists(lpath):
        with open(lpath) as fh:
            ledger = json.load(fh)
    if mode == "fire":
        errs = Fire(url, auth, int(pid), int(seed), int(rnd), ledger).run(files, callback,
                                                                         int(rnd))
    else:
        errs = check(url, auth, state, ledger, files) + check_async(state, ledger, log)
    with open(lpath, "w") as fh:
        json.dump(ledger, fh)
    for e in errs:
        print(e, file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""test_kill9.sh's client: a stream of deploys, updates, deletes and uploads that kills the
server with SIGKILL at a point chosen from a seed (`fire`), then what must hold after a
restart (`check`). The ledger (a JSON file) keeps, across rounds, what the server acknowledged
(a 2xx received) and what was in flight when it died.

  kill9.py fire URL USER:PASS PID SEED ROUND LEDGER HELLO ARGS
  kill9.py check URL USER:PASS STATE LEDGER HELLO ARGS

Functions: js-0..js-2 (runtime js, whose code and envVars V carry the version) and img-0..img-2
(an image, pic-hello or pic-args, chosen per version, with envVars TEST_V the version; args
prints TEST_V back, hello answers Hello). Each function has one thread doing one request at a
time, so at most one of its requests is in flight when the server dies; another thread
uploads the two images again and again (always the same bytes). `fire` kills the server right
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
        d.update(runtime="js", code=JS % (name, v))
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

    def request(self, method, path, body, ctype):
        """the status, or None when no answer came (the server died meanwhile)"""
        c = connect(self.url)
        try:
            h = dict(self.hdr)
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

    def run(self, files):
        print("round: kill after the %d-th %s" %
              (self.target, "request sent" if self.on_send else "acknowledged answer"))
        ts = [threading.Thread(target=self.function, args=(n,)) for n in FUNCS]
        ts.append(threading.Thread(target=self.uploads, args=(files,)))
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return self.errors


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
    if mode == "fire":
        url, auth, pid, seed, rnd, lpath, hello, args = sys.argv[2:10]
    else:
        url, auth, state, lpath, hello, args = sys.argv[2:8]
    files = {}
    for n, p in (("pic-hello", hello), ("pic-args", args)):
        with open(p, "rb") as fh:
            files[n] = fh.read()
    ledger = {"next": 0, "functions": {}}
    if os.path.exists(lpath):
        with open(lpath) as fh:
            ledger = json.load(fh)
    if mode == "fire":
        errs = Fire(url, auth, int(pid), int(seed), int(rnd), ledger).run(files)
    else:
        errs = check(url, auth, state, ledger, files)
    with open(lpath, "w") as fh:
        json.dump(ledger, fh)
    for e in errs:
        print(e, file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())

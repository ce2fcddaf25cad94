# Ember's CPython runtime: loads the handler once (its source on fd 3), then serves the request.
#
# Ember snapshots this program at its first read of the request (fd 0), after CPython has
# started and run the handler's top level with its imports; every invocation resumes from there,
# calls the handler once, writes the result and exits. See runtimes/README.md for the contract.
import errno
import gc
import json
import os
import sys
import traceback
import types

CODE_FD = 3
META_FD = 4
FILE = sys.argv[1] if len(sys.argv) > 1 else "handler.py"


def die(status, line):
    """One line on stderr and an exit status: 65 the source, 66 its descriptor."""
    os.write(2, (line.replace("\n", " ") + "\n").encode("utf-8", "replace"))
    os._exit(status)


def read_fd(fd):
    parts = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            return b"".join(parts)
        parts.append(b)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


try:
    source = read_fd(CODE_FD)
except OSError as e:
    die(66, "%s: cannot read the source on fd %d: %s" % (FILE, CODE_FD, e.strerror))

sys.stdout = sys.stderr  # print() is the log, at the top level and in a handler alike

# the function's files: its own modules and pure-Python packages beside the handler
sys.path.insert(0, "/")
module = types.ModuleType("handler")
module.__file__ = "/" + FILE
sys.modules["handler"] = module
try:
    exec(compile(source, FILE, "exec"), module.__dict__)
except SyntaxError as e:
    die(65, "%s:%d: SyntaxError: %s" % (FILE, e.lineno or 1, e.msg))
except BaseException as e:  # the top level raised, an import failed: its line in the handler
    line = 1
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename == FILE:
            line = frame.lineno
    die(65, "%s:%d: %s: %s" % (FILE, line, type(e).__name__, e))

handle = getattr(module, "handle", None)
handler = getattr(module, "handler", None)
if not callable(handle) and not callable(handler):
    die(65, "%s:1: error: define handle(event, context) (OpenFaaS's python3-http) or "
        "handler(input)" % FILE)


def read_meta():
    """The request's metadata (fd 4): NAME=value lines; none in a native run."""
    env = {}
    try:
        text = read_fd(META_FD).decode("utf-8", "surrogateescape")
    except OSError:
        return env
    for line in text.split("\n"):
        name, eq, value = line.partition("=")
        if eq and name and name not in env:
            env[name] = value
    return env


def write_head(status, headers):
    """The response's status and headers for Ember: "Status: N", "Name: value" lines on fd 4."""
    lines = [] if status == 200 else ["Status: %d" % status]
    for k, v in headers.items():
        k, v = str(k), str(v)
        if not any(c in k for c in "\r\n:") and "\r" not in v and "\n" not in v:
            lines.append("%s: %s" % (k, v))
    if lines:
        try:
            write_all(META_FD, ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
        except OSError as e:  # a native run has no fd 4; anything else is said
            if e.errno != errno.EBADF:
                sys.stderr.write("%s: the response head was not written: %s\n" % (FILE, e))


def as_bytes(r):
    if r is None:
        return b""
    if isinstance(r, str):
        return r.encode("utf-8", "surrogateescape")
    if isinstance(r, (bytes, bytearray, memoryview)):
        return bytes(r)
    return json.dumps(r).encode()


from urllib.parse import parse_qs  # imported before the snapshot, not at a request


class Headers(dict):
    """Header names looked up in any case, as Flask's request.headers are."""

    def __init__(self, items):
        super().__init__((k.lower(), v) for k, v in items)

    def __getitem__(self, k):
        return super().__getitem__(k.lower())

    def __contains__(self, k):
        return super().__contains__(k.lower())

    def get(self, k, default=None):
        return super().get(k.lower(), default)


class Event:
    """OpenFaaS's python3-http event: the body's bytes, headers, method, query and path."""

    def __init__(self, body, env):
        self.body = body
        self.headers = Headers(
            (k[5:].replace("_", "-"), v)
            for k, v in env.items()
            if k.startswith("Http_") and k not in ("Http_Method", "Http_Path", "Http_Query")
        )
        self.method = env.get("Http_Method", "POST")
        query = parse_qs(env.get("Http_Query", ""), keep_blank_values=True)
        self.query = {k: v[0] for k, v in query.items()}
        self.path = env.get("Http_Path", "/")


class Context:
    def __init__(self):
        self.hostname = os.environ.get("HOSTNAME", "localhost")


def openfaas(body):
    try:
        res = handle(Event(body, read_meta()), Context())
    except Exception:  # answered as Flask answers: 500, the traceback in the log only
        sys.stderr.write("%s: handler failed: %s" % (FILE, traceback.format_exc()))
        write_head(500, {})
        write_all(1, b"Internal Server Error\n")
        return
    if not isinstance(res, dict):  # a plain value is the body, as the template's jsonify
        write_all(1, as_bytes(res))
        return
    status = int(res.get("statusCode", 200))
    headers = dict(res.get("headers") or {})
    payload = res.get("body", "")
    if isinstance(payload, (dict, list)) and not any(
        k.lower() == "content-type" for k in headers
    ):
        headers["Content-Type"] = "application/json"
    write_head(status, headers)
    write_all(1, as_bytes(payload))


def wants_env(fn):
    """handler(input, env), handler(*args) or a callable that takes two: give it the metadata."""
    # here, not at the top: the python3-http form's initialisation does without inspect and
    # the ast, dis and tokenize it imports (some 30 exits and 2 MB fewer, docs/benchmarks.md)
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        sig.bind("", {})
        return True
    except TypeError:
        return False


WANTS_ENV = callable(handler) and wants_env(handler)


def ember(body):
    text = body.decode("utf-8", "surrogateescape")
    r = handler(text, read_meta()) if WANTS_ENV else handler(text)
    write_all(1, as_bytes(r))


# what the top level built stays in the snapshot, and later collections need not walk it
gc.collect()
gc.freeze()
# the snapshot point: everything above is done once, everything below per request
request = read_fd(0)
try:
    openfaas(request) if callable(handle) else ember(request)
except BaseException:
    sys.stderr.write("%s: handler failed: %s" % (FILE, traceback.format_exc()))
    sys.stderr.flush()
    os._exit(1)
sys.stderr.flush()
os._exit(0)

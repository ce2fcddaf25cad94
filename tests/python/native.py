# The native peer of Ember's python runtime (runtimes/python/main.c): runs handler(input[, env])
# from the file argv[1] on stdin, with the same conversion of its result, in Debian's python3.11.
import json
import sys


def main():
    file = sys.argv[1]
    g = {"__name__": "__main__", "__file__": file}
    with open(file, "rb") as f:
        exec(compile(f.read(), file.split("/")[-1], "exec"), g)
    h = g["handler"]
    text = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    sys.stdout, out = sys.stderr, sys.stdout  # print() is the log, as in the runtime
    r = h(text, {}) if h.__code__.co_argcount >= 2 else h(text)
    if r is None:
        r = b""
    elif isinstance(r, str):
        r = r.encode("utf-8", "surrogateescape")
    elif not isinstance(r, (bytes, bytearray, memoryview)):
        r = json.dumps(r).encode()
    out.buffer.write(bytes(r))


main()

# The runtime's mmap module (runtimes/python/pymmap.c) against CPython's: one of the function's
# files mapped MAP_PRIVATE read-only at import and marked mergeable, anonymous memory, both as
# buffers; madvise, close and their errors.
import hashlib
import mmap
import os

with open(os.environ.get("EMBER_DATA", "/data/table.csv"), "rb") as f:
    M = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
M.madvise(mmap.MADV_MERGEABLE)
M.madvise(mmap.MADV_WILLNEED, 0, mmap.PAGESIZE)
A = mmap.mmap(-1, 3 * mmap.PAGESIZE, flags=mmap.MAP_PRIVATE,
              prot=mmap.PROT_READ | mmap.PROT_WRITE)


def error(f):
    try:
        f()
    except (ValueError, BufferError, OSError) as e:
        return "%s: %s" % (type(e).__name__, e)
    return "no error"


def handler(input):
    v = memoryview(M)
    out = {"len": len(M), "head": bytes(v[:16]).decode(), "sha256": hashlib.sha256(M).hexdigest(),
           "readonly": v.readonly, "close exported": error(M.close),
           "madvise past the end": error(lambda: M.madvise(mmap.MADV_NORMAL, len(M) + 1))}
    v.release()
    data = input.encode()
    a = memoryview(A)
    a[:len(data)] = data
    out["anonymous"] = bytes(a[:len(data)]).decode()
    a.release()
    A.madvise(mmap.MADV_DONTNEED)
    out["after DONTNEED"] = bytes(A)[:4].hex()
    M.close()
    out["closed"] = M.closed
    out["len closed"] = error(lambda: len(M))
    return out

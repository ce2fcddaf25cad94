# A model loaded from the function's files, as UPM's model-loading functions do: the 8 MiB of
# weights (model/weights.bin, made by files.py) mapped MAP_PRIVATE read-only at import, before
# the snapshot, marked MADV_MERGEABLE (pages another function has too may be shared) and read
# once (its digest); each request's words pick rows whose signed bytes score it.
import hashlib
import mmap
import os
import zlib

ROWS, WIDTH = 32768, 256
# the files are at / in a virtine; natively EMBER_FILES names their folder
PATH = os.path.join(os.environ.get("EMBER_FILES", "/"), "model/weights.bin")

with open(PATH, "rb") as f:
    WEIGHTS = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
WEIGHTS.madvise(mmap.MADV_MERGEABLE)
VIEW = memoryview(WEIGHTS)
DIGEST = hashlib.sha256(VIEW).hexdigest()


def score(row, feature):
    w = VIEW[row * WIDTH:(row + 1) * WIDTH]
    return sum((b - 256 if b > 127 else b) * ((feature >> (i % 32)) & 1) for i, b in enumerate(w))


def handler(input):
    words = input.split()
    scores = {}
    for word in words:
        if word not in scores:
            h = zlib.crc32(word.encode("utf-8", "surrogateescape"))
            scores[word] = score(h % ROWS, h)
    top = sorted(scores, key=lambda w: (-scores[w], w))[:5]
    return {"weights": len(VIEW), "sha256": DIGEST, "words": len(words),
            "score": sum(scores[w] for w in words), "top": top}

# The standard library the bundle carries: modules built into libpython (math, struct, zlib,
# binascii, datetime, pickle, hashlib's sha256) and pure-Python ones (re, collections, string,
# base64, heapq, textwrap), imported before the snapshot. (decimal, fractions, statistics and
# asyncio need _contextvars, which Debian's static libpython lacks.)
import base64, binascii, collections, datetime, hashlib, heapq, math, pickle, re, string, struct
import textwrap, zlib


def handler(input):
    data = (input or "ember").encode()
    words = re.findall(r"\w+", input or "the quick brown fox the end")
    return {
        "sqrt2": round(math.sqrt(2), 12),
        "packed": binascii.hexlify(struct.pack("<IH", 7, 3)).decode(),
        "crc": zlib.crc32(data),
        "zlen": len(zlib.compress(data * 100)),
        "sha256": hashlib.sha256(data).hexdigest(),
        "date": datetime.date(2026, 12, 1).isoformat(),
        "pickle": len(pickle.dumps(list(range(10)))),
        "common": collections.Counter(words).most_common(2),
        "b64": base64.b64encode(data).decode(),
        "top": heapq.nlargest(2, [len(w) for w in words]),
        "upper": string.ascii_uppercase[:5],
        "wrap": textwrap.wrap("a b c d e f", 3),
    }

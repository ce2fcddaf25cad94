# A compress and hash over the request (FunctionBench's gzip_compression, and a digest): zlib's
# deflate at level 6 and back, crc32 and adler32, and SHA-256 and BLAKE2b of the request and of
# the compressed bytes (zlib and hashlib's own hashes are built into Debian's static libpython).
import hashlib
import zlib


def handler(input):
    data = input.encode("utf-8", "surrogateescape")
    packed = zlib.compress(data, 6)
    return {"bytes": len(data), "compressed": len(packed),
            "round_trip": zlib.decompress(packed) == data,
            "crc32": zlib.crc32(data), "adler32": zlib.adler32(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "blake2b": hashlib.blake2b(data, digest_size=16).hexdigest(),
            "compressed_sha256": hashlib.sha256(packed).hexdigest()}

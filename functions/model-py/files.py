# The files of model-py, made by the build (never committed): model/weights.bin, 8 MiB of
# weights from SHA-256 in counter mode (the same bytes on every machine), in the folder argv[1].
import hashlib
import os
import sys

ROWS, WIDTH = 32768, 256  # 8 MiB: a row of 256 signed bytes per feature bucket

out = os.path.join(sys.argv[1], "model")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "weights.bin.tmp"), "wb") as f:
    for i in range(ROWS * WIDTH // 32):
        f.write(hashlib.sha256(b"ember model-py %d" % i).digest())
os.replace(os.path.join(out, "weights.bin.tmp"), os.path.join(out, "weights.bin"))

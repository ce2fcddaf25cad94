# matmul-numpy: a 256x256 matrix product with Debian's numpy (--runtime python); the request
# seeds the matrices, the answer is the product's trace.
import numpy as np

N = 256


def handler(text):
    rng = np.random.default_rng(len(text))
    a = rng.random((N, N))
    b = rng.random((N, N))
    return "trace %.6f\n" % float(np.trace(a @ b))

# A matrix multiply in pure Python (FunctionBench's matmul): N x N matrices from a fixed
# pseudo-random sequence, N from the request (default 40); the result's trace and checksum.
def matrix(n, seed):
    m, x = [], seed
    for _ in range(n):
        row = []
        for _ in range(n):
            x = (x * 1103515245 + 12345) % 2147483648
            row.append((x >> 16) % 100 / 10.0)
        m.append(row)
    return m


def handler(input):
    n = int(input) if input.strip().isdigit() else 40
    a, b = matrix(n, 1), matrix(n, 2)
    bt = list(zip(*b))
    c = [[sum(x * y for x, y in zip(row, col)) for col in bt] for row in a]
    return {"n": n, "trace": round(sum(c[i][i] for i in range(n)), 6),
            "sum": round(sum(map(sum, c)), 6)}

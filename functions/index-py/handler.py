# index-py: a function with a large heap: at import it builds an in-memory catalogue of 60,000
# records (tens of MiB of Python heap, part of the snapshot); each request ("min=N") walks all of
# it and answers how many records score at least N, the sum of their ids and the first name.
import re

records = []
_seed = 12345
for _i in range(60000):
    _seed = (_seed * 1103515245 + 12345) % 2147483648
    records.append({"id": _i, "name": "item-%d-%d" % (_i, _seed % 9973), "score": _seed % 1000,
                    "tags": ["t%d" % (_seed % 7), "t%d" % (_seed % 11)]})


def handler(input, env):
    m = re.search(r"min=(\d+)", input or "")
    low = int(m.group(1)) if m else 500
    count = total = 0
    first = None
    for r in records:
        if r["score"] >= low and len(r["tags"]) == 2:
            count += 1
            total += r["id"]
            if first is None:
                first = r["name"]
    return "records %d, score >= %d: %d, ids sum %d, first %s\n" % (len(records), low, count,
                                                                   total, first)

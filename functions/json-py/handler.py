# JSON round trip (FunctionBench's json_serdes): parse the request, transform, serialise.
import json


def handler(input, env):
    doc = json.loads(input) if input else {"items": list(range(50))}
    items = doc.get("items", [])
    out = {
        "count": len(items),
        "sum": sum(x for x in items if isinstance(x, (int, float))),
        "sorted": sorted(items, key=str),
        "env_is_dict": isinstance(env, dict),
    }
    return json.loads(json.dumps(out, sort_keys=True))

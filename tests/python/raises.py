# A handler that raises: a 5xx with the traceback in the logs.
def handler(input):
    return {"ratio": 1 / len(input or "")}

# A handler that starts a thread: a virtine has one, so Python says it cannot.
import threading


def handler(input):
    threading.Thread(target=print).start()
    return "started"

# A handler that starts threads and joins them: each adds its part of a sum under a lock.
import threading


def handler(input):
    parts = []
    lock = threading.Lock()

    def work(k):
        with lock:
            parts.append(sum(range(k * 1000, (k + 1) * 1000)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return "threads %d, sum %d" % (len(parts), sum(parts))

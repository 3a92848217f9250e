"""The fake provider's state: per queue, its scripted steps (FIFO) and the
requests it received; ids that count up until /_reset. One lock guards it all."""
import itertools
import threading
from collections import deque


class Queue:
    def __init__(self):
        self.steps = deque()
        self.requests = []
        self.calls = itertools.count(1)


class Store:
    """All queues, behind one lock; ids count up until /_reset."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.queues = {}
            self.ids = itertools.count(1)

    def _queue(self, name):
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = Queue()
        return q

    def script(self, name, steps):
        with self.lock:
            self._queue(name).steps.extend(steps)
            return len(steps)

    def record(self, name, request):
        with self.lock:
            self._queue(name).requests.append(request)

    def requests(self, name):
        with self.lock:
            return list(self._queue(name).requests)

    def refused(self):
        """Every request refused as invalid, of every queue: {queue, path, refused}."""
        with self.lock:
            return [{"queue": name, "path": r["path"], "refused": r["refused"]}
                    for name, q in sorted(self.queues.items()) for r in q.requests if r.get("refused")]

    def pop(self, name):
        with self.lock:
            q = self._queue(name)
            return q.steps.popleft() if q.steps else None

    def next_id(self):
        with self.lock:
            return next(self.ids)

    def next_call(self, name):
        with self.lock:
            return next(self._queue(name).calls)


STORE = Store()

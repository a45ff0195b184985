"""Running one kernel on several threads.

A kernel takes `[start, end)` of its parallel dim, so a large kernel is
called once per range, from a small pool of worker threads plus the calling
thread. ctypes releases the GIL during a foreign call, so the ranges run at
the same time. `DYNJIT_NUM_THREADS` sets the number of threads (default:
the number of CPUs); it is read when a graph is compiled.
"""
import os
import queue
import threading


def num_threads():
    value = os.environ.get("DYNJIT_NUM_THREADS")
    if value:
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"DYNJIT_NUM_THREADS must be a positive integer, got {value!r}") from None
        if n < 1:
            raise ValueError(f"DYNJIT_NUM_THREADS must be a positive integer, got {value!r}")
        return n
    return os.cpu_count() or 1


class _Pool:
    def __init__(self):
        self.pid = os.getpid()
        self.tasks = queue.SimpleQueue()
        self.workers = []

    def ensure(self, n):
        while len(self.workers) < n:
            t = threading.Thread(target=self._work, name=f"dynjit-llvm-{len(self.workers)}", daemon=True)
            t.start()
            self.workers.append(t)

    def _work(self):
        tasks = self.tasks
        while True:
            fn, args, done = tasks.get()
            try:
                fn(*args)
            finally:
                # drop the arguments before waiting: a parked reference would keep
                # the arrays from being freed (or reused, see runtime.BufferCache)
                del fn, args
                done.put(None)


_pool = None
_pool_lock = threading.Lock()


def _get_pool():
    global _pool
    pool = _pool
    if pool is None or pool.pid != os.getpid():       # threads do not survive fork
        with _pool_lock:
            if _pool is None or _pool.pid != os.getpid():
                _pool = _Pool()
            pool = _pool
    return pool


def parallel_call(fn, args, ranges):
    """fn(*args, start, end, chunk) for every (start, end, chunk) in `ranges`, concurrently."""
    pool = _get_pool()
    pool.ensure(len(ranges) - 1)
    done = queue.SimpleQueue()
    put = pool.tasks.put
    for r in ranges[1:]:
        put((fn, args + r, done))
    fn(*args, *ranges[0])
    for _ in range(len(ranges) - 1):
        done.get()


def split_ranges(extent, n, align=1):
    """`n` (start, end, chunk) ranges covering [0, extent), boundaries multiples of `align`."""
    n = max(1, min(n, extent))
    bounds = [0]
    for i in range(1, n):
        b = (extent * i // n) // align * align
        bounds.append(max(b, bounds[-1]))
    bounds.append(extent)
    return tuple((bounds[i], bounds[i + 1], i) for i in range(n))

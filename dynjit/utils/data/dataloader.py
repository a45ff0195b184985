"""DataLoader (torch.utils.data.DataLoader): batches from a dataset, in the main process
(`num_workers=0`) or in worker processes.

With workers, batch k of a map-style dataset is fetched by worker k % num_workers and the
batches are yielded in order, so the sequence equals `num_workers=0`'s. Each pass draws a base
seed from the loader's `generator` (or dynjit's global generator) before sampling, with or
without workers, so shuffling depends only on the seed; worker i seeds dynjit and Python's
`random` with base_seed + i."""
import itertools
import multiprocessing
import pickle
import queue
import time
import warnings

from ...random import default_generator
from . import _worker
from ._collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_POLL_S = 1.0                   # how often a waiting main process checks its workers are alive


class _InfiniteConstantSampler(Sampler):
    """For an iterable dataset: indices carry no information, only how many to fetch."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor <= 0:
            raise ValueError("prefetch_factor option should be positive")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found (dynjit runs "
                          "on the CPU only), then device pinned memory won't be used.", stacklevel=2)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler "
                                 f"option, but got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset()
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        pass


def _base_seed(loader):
    g = loader.generator if loader.generator is not None else default_generator
    return int(g.np.integers(0, 2 ** 63))


class _SingleProcessIter:
    def __init__(self, loader):
        self._loader = loader
        _base_seed(loader)      # drawn as with workers, so both shuffle alike
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = _worker.make_fetcher(loader._iterable, loader.dataset, loader._auto_collation,
                                             loader.collate_fn, loader.drop_last)

    def __iter__(self):
        return self

    def __next__(self):
        index = next(self._sampler_iter)
        return self._fetcher.fetch(index)

    def __len__(self):
        return len(self._loader)


class _MultiProcessIter:
    def __init__(self, loader):
        self._loader = loader
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        base_seed = _base_seed(loader)
        self._index_queues = []
        self._data_queue = ctx.Queue()
        self._workers = []
        for i in range(self._num_workers):
            q = ctx.SimpleQueue()       # no feeder thread: later forks see a single-threaded process
            w = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                loader._iterable, loader.dataset, q, self._data_queue, loader._auto_collation,
                loader.collate_fn, loader.drop_last, base_seed + i, loader.worker_init_fn, i,
                self._num_workers))
            w.start()
            self._index_queues.append(q)
            self._workers.append(w)
        self._shutdown = False
        self._start_epoch()

    def _start_epoch(self):
        self._sampler_iter = iter(self._loader._index_sampler)
        self._send_idx = 0          # next task to send
        self._rcvd_idx = 0          # next task to yield
        self._task_info = {}        # task id -> (worker id,) while pending, (worker id, data) when here
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        self._sampler_done = False
        for _ in range(self._prefetch):
            self._put_index()

    def _reset(self):
        """A new epoch on persistent workers: each worker restarts (its iterable dataset is
        iterated anew) and acknowledges; results still in flight from the last epoch (one that
        was left early) arrive before the acknowledgements and are dropped."""
        for q in self._index_queues:
            q.put((_worker.RESUME, None))
        pending = self._num_workers
        while pending:
            task_id, _ = self._get()
            if task_id == _worker.RESUME:
                pending -= 1
        self._start_epoch()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _put_index(self):
        if self._sampler_done:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            self._sampler_done = True
            return
        if self._loader._iterable:
            # batch k goes to worker k % n while it lasts: skip exhausted workers
            for _ in range(self._num_workers):
                worker = next(self._worker_cycle)
                if self._active[worker]:
                    break
            else:
                self._sampler_done = True
                return
        else:
            worker = self._send_idx % self._num_workers
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._send_idx += 1

    def _get(self):
        """The next (task id, data) any worker sends, watching for dead workers and timeouts."""
        timeout = self._loader.timeout
        start = time.monotonic()
        while True:
            wait = _POLL_S if not timeout else min(_POLL_S, max(timeout - (time.monotonic() - start), 0.01))
            try:
                task_id, payload = self._data_queue.get(timeout=wait)
                return task_id, pickle.loads(payload)
            except queue.Empty:
                pass
            dead = [w for w in self._workers if not w.is_alive()]
            if dead:
                pids = ", ".join(str(w.pid) for w in dead)
                codes = ", ".join(str(w.exitcode) for w in dead)
                self._shutdown_workers(kill=True)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly (exit code(s) "
                                   f"{codes})")
            if timeout and time.monotonic() - start >= timeout:
                self._shutdown_workers(kill=True)
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds")

    def __next__(self):
        while True:
            if self._shutdown:
                raise StopIteration
            # skip tasks of exhausted iterable workers
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._active[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            if self._rcvd_idx >= self._send_idx:
                if not self._loader.persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                data = info[1]
                if isinstance(data, _worker.IterableStop):
                    continue
                self._put_index()
                if isinstance(data, _worker.ExceptionWrapper):
                    self._shutdown_workers(kill=True)
                    data.reraise()
                return data
            task_id, data = self._get()
            if task_id not in self._task_info:
                continue            # an answer to a task skipped when its worker ran out
            if isinstance(data, _worker.IterableStop):
                self._active[data.worker_id] = False
                self._put_index()       # the slot it held goes to a live worker
            self._task_info[task_id] = (self._task_info[task_id][0], data)

    def _shutdown_workers(self, kill=False):
        """Stop the workers: asked to finish (after the last batch), or terminated at once
        (after an error or a timeout, when a worker may be stuck)."""
        if self._shutdown:
            return
        self._shutdown = True
        for q in self._index_queues:
            try:
                q.put(None)
            except Exception:
                pass
        for w in self._workers:
            if kill:
                w.terminate()
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
                w.join(timeout=5)
        for q in self._index_queues:
            q.close()
        self._data_queue.cancel_join_thread()
        self._data_queue.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass

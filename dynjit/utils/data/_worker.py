"""What runs in a DataLoader worker process: seeding, `worker_init_fn`, fetching batches
from the dataset and sending them back; `get_worker_info()`; and the wrapper that carries an
exception raised in a worker back to the main process."""
import pickle
import random
import sys
import traceback
from dataclasses import dataclass

from ... import _dtype
from ...random import manual_seed
from ...tensor import tensor

__all__ = ["get_worker_info", "WorkerInfo"]

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """In a worker process: its `id` (0..num_workers-1), `num_workers`, `seed` (dynjit's and
    Python's `random` are seeded with it) and its copy of the `dataset`."""
    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """The WorkerInfo of this DataLoader worker process, or None in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, re-raised in the main process with its traceback."""

    def __init__(self, where):
        exc_type, exc, tb = sys.exc_info()
        try:
            pickle.dumps(exc_type)
        except Exception:              # a class the main process cannot import
            exc_type = RuntimeError
        self.exc_type = exc_type
        self.message = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.message}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class KeyErrorMessage(str):
    def __repr__(self):         # KeyError shows its argument with repr: keep the newlines
        return self


class IterableStop:
    """A worker's iterable dataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


RESUME = "resume"               # persistent workers: start the iterable dataset again
RESUMED = "resumed"


def _tensor_dataset_under(dataset):
    """(TensorDataset, [Subset index lists, outermost first]) when `dataset` is a TensorDataset
    or Subsets of one (random_split's), else None."""
    from .dataset import Subset, TensorDataset
    maps = []
    while type(dataset) is Subset:
        maps.append(dataset.indices)
        dataset = dataset.dataset
    return (dataset, maps) if type(dataset) is TensorDataset else None


class MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        from ._collate import default_collate
        # default_collate of TensorDataset rows is one gather per tensor: the same values as
        # stacking the rows, without a tensor per sample
        self.gather = (_tensor_dataset_under(dataset) if auto_collation and collate_fn is default_collate
                       else None)

    def fetch(self, index):
        if self.gather is not None:
            dataset, maps = self.gather
            for m in maps:
                index = [m[i] for i in index]
            rows = tensor([int(i) for i in index], dtype=_dtype.int64)
            return [t[rows] for t in dataset.tensors]
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.iterator))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.iterator)
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    return (IterableFetcher if iterable else MapFetcher)(dataset, auto_collation, collate_fn, drop_last)


def worker_loop(iterable, dataset, index_queue, data_queue, auto_collation, collate_fn, drop_last,
                seed, init_fn, worker_id, num_workers):
    """A worker: answer each (task id, indices) from `index_queue` with (task id, batch) on
    `data_queue` until it receives None."""
    global _worker_info
    try:
        random.seed(seed)
        manual_seed(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
        while True:
            task = index_queue.get()
            if task is None:
                break
            task_id, index = task
            if task_id == RESUME:
                try:
                    fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                except Exception:
                    init_error = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
                data_queue.put((RESUME, pickle.dumps(RESUMED)))
                continue
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        raise
                    data = IterableStop(worker_id)
                except Exception:
                    data = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
            try:
                payload = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                payload = pickle.dumps(ExceptionWrapper(
                    f"in DataLoader worker process {worker_id} while sending a batch to the main "
                    "process (the batch must be picklable)"))
            data_queue.put((task_id, payload))
    except KeyboardInterrupt:
        pass

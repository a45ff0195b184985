"""dynjit.utils.data: datasets, random_split, samplers, default_collate and DataLoader, in the
main process and with worker processes (whose batches equal num_workers=0's)."""
import collections
import math
import os
import random

import numpy as np
import pytest

import dynjit
from dynjit.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                               IterableDataset, RandomSampler, SequentialSampler, StackDataset,
                               Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                               default_collate, default_convert, get_worker_info, random_split)


def _tensors(n=10):
    return dynjit.arange(n * 2.0).reshape(n, 2), dynjit.arange(n)


def gen(seed):
    return dynjit.Generator().manual_seed(seed)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": dynjit.tensor([float(i)]), "y": i * i, "name": f"s{i}"}


class Counting(IterableDataset):
    """0..n-1; with workers, each worker yields every num_workers-th item."""

    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


# -- datasets ---------------------------------------------------------------------------------

def test_tensor_dataset():
    x, y = _tensors()
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    xi, yi = ds[3]
    assert xi.tolist() == [6.0, 7.0] and yi.item() == 3
    assert [t.tolist() for t in ds[-1]] == [[18.0, 19.0], 9]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, dynjit.arange(3))
    with pytest.raises(TypeError, match="TensorDataset takes tensors"):
        TensorDataset([1, 2])


def test_base_dataset_and_concat():
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        Dataset()[0]
    a, b = Squares(3), Squares(2)
    c = a + b
    assert isinstance(c, ConcatDataset) and len(c) == 5 and c.cumulative_sizes == [3, 5]
    assert [c[i]["y"] for i in range(5)] == [0, 1, 4, 0, 1] and c[-1]["y"] == 1
    with pytest.raises(IndexError):
        c[5]
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([a, Counting(3)])
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        ConcatDataset([])
    chain = Counting(2) + Counting(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5


def test_subset_and_stack_dataset():
    s = Subset(Squares(10), [7, 2, 5])
    assert len(s) == 3 and [s[i]["y"] for i in range(3)] == [49, 4, 25]
    st = StackDataset(Squares(3), TensorDataset(*_tensors(3)))
    assert st[1][0]["y"] == 1 and st[1][1][1].item() == 1
    kw = StackDataset(a=Squares(3), b=Squares(3))
    assert set(kw[2]) == {"a", "b"}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(3), Squares(4))


def test_random_split_lengths_and_fractions():
    ds = Squares(10)
    parts = random_split(ds, [3, 7], generator=gen(0))
    idx = parts[0].indices + parts[1].indices
    assert [len(p) for p in parts] == [3, 7] and sorted(idx) == list(range(10))
    again = random_split(ds, [3, 7], generator=gen(0))
    assert again[0].indices == parts[0].indices                  # the generator decides
    assert random_split(ds, [3, 7], generator=gen(1))[0].indices != parts[0].indices
    assert idx == np.random.Generator(np.random.PCG64(0)).permutation(10).tolist()
    fr = random_split(Squares(11), [0.5, 0.3, 0.2], generator=gen(0))
    # floor(5.5)=5, floor(3.3)=3, floor(2.2)=2, the remaining 1 goes to the first
    assert [len(p) for p in fr] == [6, 3, 2]
    assert sorted(sum((p.indices for p in fr), [])) == list(range(11))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length"):
        random_split(ds, [3, 3])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Squares(2), [1.0, 0.0])
    dynjit.manual_seed(5)
    a = random_split(ds, [5, 5])[0].indices
    dynjit.manual_seed(5)
    assert random_split(ds, [5, 5])[0].indices == a          # default generator, seeded


# -- samplers ---------------------------------------------------------------------------------

def test_sequential_and_batch_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    bs = BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    bs = BatchSampler(SequentialSampler(range(7)), 3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5]] and len(bs) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler():
    s = RandomSampler(range(10), generator=gen(0))
    first, second = list(s), list(s)
    assert sorted(first) == list(range(10)) and sorted(second) == list(range(10)) and first != second
    assert list(RandomSampler(range(10), generator=gen(0))) == first
    # matches an independent numpy permutation with the same seed
    assert first == np.random.Generator(np.random.PCG64(0)).permutation(10).tolist()
    r = list(RandomSampler(range(4), replacement=True, num_samples=50, generator=gen(1)))
    assert len(r) == 50 and set(r) <= {0, 1, 2, 3} and len(set(r)) == 4
    m = list(RandomSampler(range(4), num_samples=10, generator=gen(1)))
    assert len(m) == 10 and sorted(m[:4]) == sorted(m[4:8]) == [0, 1, 2, 3]
    assert len(RandomSampler(range(4), num_samples=10)) == 10
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(4), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(4), replacement=1)
    dynjit.manual_seed(3)
    a = list(RandomSampler(range(10)))
    dynjit.manual_seed(3)
    assert list(RandomSampler(range(10))) == a


def test_subset_random_and_weighted_samplers():
    s = list(SubsetRandomSampler([10, 20, 30, 40], generator=gen(0)))
    assert sorted(s) == [10, 20, 30, 40]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 400, generator=gen(0)))
    counts = collections.Counter(w)
    assert set(counts) == {1, 3} and 0.15 < counts[1] / 400 < 0.35
    assert sorted(WeightedRandomSampler([1, 1, 1], 3, replacement=False, generator=gen(0))) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        WeightedRandomSampler([-1.0, 1.0], 2)


# -- collate ----------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")


def test_default_collate():
    b = default_collate([dynjit.tensor([1.0, 2.0]), dynjit.tensor([3.0, 4.0])])
    assert b.shape == (2, 2) and b.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    f = default_collate([1.5, 2.5])
    assert f.dtype is dynjit.float64 and f.tolist() == [1.5, 2.5]
    i = default_collate([1, 2])
    assert i.dtype is dynjit.int64 and i.tolist() == [1, 2]
    assert default_collate([True, False]).dtype is dynjit.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    a = default_collate([np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)])
    assert a.dtype is dynjit.int32 and a.tolist() == [[1, 2], [3, 4]]
    assert default_collate([np.float32(1), np.float32(2)]).dtype is dynjit.float32
    d = default_collate([{"x": dynjit.ones(2), "n": 1}, {"x": dynjit.zeros(2), "n": 2}])
    assert d["x"].tolist() == [[1, 1], [0, 0]] and d["n"].tolist() == [1, 2]
    od = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert type(od) is collections.OrderedDict
    p = default_collate([Point(1, dynjit.ones(1)), Point(2, dynjit.zeros(1))])
    assert type(p) is Point and p.x.tolist() == [1, 2] and p.y.tolist() == [[1], [0]]
    t = default_collate([(dynjit.ones(1), 1), (dynjit.zeros(1), 2)])
    assert type(t) is list and t[0].tolist() == [[1], [0]] and t[1].tolist() == [1, 2]
    l2 = default_collate([[1, 2], [3, 4]])
    assert type(l2) is list and [x.tolist() for x in l2] == [[1, 3], [2, 4]]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers"):
        default_collate([object(), object()])


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": "s", "c": (np.float64(1.0), 2)})
    assert isinstance(out["a"], dynjit.Tensor) and out["b"] == "s"
    assert isinstance(out["c"][0], dynjit.Tensor) and out["c"][1] == 2


# -- DataLoader in the main process ----------------------------------------------------------

def test_dataloader_batches_in_order():
    ds = TensorDataset(*_tensors())
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2)
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[1].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    one = list(DataLoader(ds))
    assert len(one) == 10 and one[0][0].shape == (1, 2)


def test_dataloader_shuffle_with_a_generator():
    ds = TensorDataset(*_tensors())
    run = lambda seed: [b[1].tolist() for b in DataLoader(ds, batch_size=3, shuffle=True, generator=gen(seed))]
    a = run(0)
    assert sorted(sum(a, [])) == list(range(10)) and a == run(0) and a != run(1)
    loader = DataLoader(ds, batch_size=10, shuffle=True, generator=gen(0))
    e1, e2 = next(iter(loader))[1].tolist(), next(iter(loader))[1].tolist()
    assert e1 != e2 and sorted(e1) == sorted(e2)      # a new order each epoch
    dynjit.manual_seed(7)
    g = [b[1].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]
    dynjit.manual_seed(7)
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)] == g


def test_dataloader_dict_samples_and_collate_fn():
    loader = DataLoader(Squares(5), batch_size=2)
    first = next(iter(loader))
    assert first["x"].tolist() == [[0.0], [1.0]] and first["y"].tolist() == [0, 1] and first["name"] == ["s0", "s1"]
    custom = DataLoader(Squares(5), batch_size=2, collate_fn=lambda b: [s["y"] for s in b])
    assert list(custom) == [[0, 1], [4, 9], [16]]


def test_dataloader_sampler_and_batch_sampler():
    ds = Squares(6)
    loader = DataLoader(ds, batch_size=2, sampler=[5, 4, 3, 2, 1, 0])
    assert [b["y"].tolist() for b in loader] == [[25, 16], [9, 4], [1, 0]]
    loader = DataLoader(ds, batch_sampler=[[0, 5], [1], [2, 3, 4]])
    assert [b["y"].tolist() for b in loader] == [[0, 25], [1], [4, 9, 16]] and len(loader) == 3
    no_batch = DataLoader(ds, batch_size=None)
    assert next(iter(no_batch))["y"] == 0 and len(no_batch) == 6
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with batch_size"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator"):
        DataLoader(ds, pin_memory=True)


def test_dataloader_iterable_dataset():
    loader = DataLoader(Counting(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    assert [b.tolist() for b in DataLoader(Counting(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Counting(3), batch_size=None)) == [0, 1, 2]     # default_convert keeps ints
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Counting(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Counting(3), sampler=[0])


# -- DataLoader with worker processes ---------------------------------------------------------

def _as_lists(loader):
    out = []
    for batch in loader:
        out.append(batch[0].tolist() + batch[1].tolist() if isinstance(batch, (list, tuple)) else batch)
    return out


@pytest.mark.parametrize("num_workers", [1, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_workers_give_the_same_batches_as_the_main_process(num_workers, shuffle):
    ds = TensorDataset(*_tensors(23))
    kwargs = lambda: dict(batch_size=4, shuffle=shuffle, generator=gen(11) if shuffle else None)
    expected = _as_lists(DataLoader(ds, **kwargs()))
    got = _as_lists(DataLoader(ds, num_workers=num_workers, **kwargs()))
    assert got == expected and len(got) == 6


def test_workers_keep_the_global_shuffle_reproducible():
    ds = TensorDataset(*_tensors(12))
    dynjit.manual_seed(4)
    a = _as_lists(DataLoader(ds, batch_size=5, shuffle=True))
    dynjit.manual_seed(4)
    b = _as_lists(DataLoader(ds, batch_size=5, shuffle=True, num_workers=2))
    assert a == b


def _init_record(worker_id):
    info = get_worker_info()
    info.dataset.init_ids.append((worker_id, info.num_workers))


class Probe(Dataset):
    """Reports the process and worker that fetched each item, and a random draw there."""
    def __init__(self):
        self.init_ids = []

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "pid": os.getpid(), "worker": info.id if info else -1,
                "seed": info.seed if info else -1, "init": list(self.init_ids),
                "draw": dynjit.rand(1).item(), "pyrand": random.random()}


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    loader = DataLoader(Probe(), batch_size=2, num_workers=2, worker_init_fn=_init_record,
                        generator=gen(0), collate_fn=lambda b: b)
    items = [s for batch in loader for s in batch]
    assert [s["i"] for s in items] == list(range(8))
    assert {s["pid"] for s in items}.isdisjoint({os.getpid()}) and len({s["pid"] for s in items}) == 2
    assert [s["worker"] for s in items] == [0, 0, 1, 1, 0, 0, 1, 1]     # batch k -> worker k % 2
    seeds = {s["worker"]: s["seed"] for s in items}
    assert seeds[1] == seeds[0] + 1
    assert all(s["init"] == [(s["worker"], 2)] for s in items)
    # each worker seeded dynjit and random with its seed: its first draw is predictable
    for w in (0, 1):
        first = next(s for s in items if s["worker"] == w)
        dynjit.manual_seed(seeds[w])
        random.seed(seeds[w])
        assert first["draw"] == dynjit.rand(1).item() and first["pyrand"] == random.random()
    again = [s["draw"] for batch in DataLoader(Probe(), batch_size=2, num_workers=2, generator=gen(0),
                                               collate_fn=lambda b: b) for s in batch]
    assert again == [s["draw"] for s in items]          # same generator, same worker seeds


def test_iterable_dataset_with_workers():
    loader = DataLoader(Counting(10), batch_size=2, num_workers=2)
    got = [b.tolist() for b in loader]
    # worker 0 yields 0,2,4,6,8 and worker 1 yields 1,3,5,7,9; batches alternate between them
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    uneven = [b.tolist() for b in DataLoader(Counting(5), batch_size=2, num_workers=2)]
    assert uneven == [[0, 2], [1, 3], [4]]
    dup = list(DataLoader(Counting(3, shard=False), batch_size=None, num_workers=2))
    assert sorted(dup) == [0, 0, 1, 1, 2, 2]             # unsharded: each worker yields all, as torch


class Failing(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise KeyError(f"no item {i}")
        return i


def test_worker_errors_reach_the_main_process():
    loader = DataLoader(Failing(), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    with pytest.raises(KeyError, match=r"Caught KeyError in DataLoader worker process 1\.\nOriginal Traceback"):
        next(it)


class Crashing(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if get_worker_info() is not None:
            os._exit(3)
        return i


def test_a_dead_worker_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+.*\) exited unexpectedly"):
        list(DataLoader(Crashing(), batch_size=2, num_workers=1))


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        import time
        time.sleep(3)
        return i


def test_timeout():
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.3))


def test_persistent_workers_across_epochs():
    ds = TensorDataset(*_tensors(9))
    loader = DataLoader(ds, batch_size=2, shuffle=True, generator=gen(3), num_workers=2,
                        persistent_workers=True)
    e1, e2 = _as_lists(loader), _as_lists(loader)
    ids = lambda epoch: sorted(v for b in epoch for v in b[len(b) * 2 // 3:])
    assert ids(e1) == ids(e2) == list(range(9)) and e1 != e2
    it = iter(loader)
    next(it)                                               # an epoch left early
    assert len(_as_lists(loader)) == 5
    it_loader = DataLoader(Counting(4), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in it_loader] == [[0, 2], [1, 3]] == [b.tolist() for b in it_loader]


def test_spawn_context():
    ds = TensorDataset(*_tensors(6))
    got = _as_lists(DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn"))
    assert got == _as_lists(DataLoader(ds, batch_size=4))


def test_dataloader_len_for_iterable():
    assert len(DataLoader(Counting(7), batch_size=2)) == math.ceil(7 / 2)
    assert len(DataLoader(Counting(7), batch_size=2, drop_last=True)) == 3


def test_tensor_dataset_batches_equal_collated_rows():
    x = dynjit.randn(13, 3, 2)
    y = dynjit.randint(0, 5, (13,))
    ds = TensorDataset(x, y)
    train, _ = random_split(ds, [9, 4], generator=gen(0))
    for data in (ds, train, Subset(train, [8, 0, 3, 3, -1])):
        fast = list(DataLoader(data, batch_size=4, shuffle=True, generator=gen(2)))
        slow = list(DataLoader(data, batch_size=4, shuffle=True, generator=gen(2),
                               collate_fn=lambda b: default_collate(b)))
        assert len(fast) == len(slow)
        for f, s in zip(fast, slow):
            assert type(f) is list and len(f) == 2
            assert all(a.dtype is b.dtype and a.shape == b.shape and dynjit.equal(a, b) for a, b in zip(f, s))
    with pytest.raises(IndexError):
        list(DataLoader(Subset(ds, [0, 99]), batch_size=2))

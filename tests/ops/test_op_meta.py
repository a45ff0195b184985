"""Every op's meta function (shape and dtype without computing) agrees with
what eager execution produces, on every sample of the op table."""
import numpy as np
import pytest

import dynjit
from dynjit.ops.meta import TensorMeta, DataDependentOutputError, broadcast_shapes
from dynjit.ops.registry import registry, INPLACE

from opinfo_samples import SAMPLES, materialize, inplace_samples

CASES = [(name, i) for name in sorted(SAMPLES) for i in range(len(SAMPLES[name]))]


def _metas(value):
    if isinstance(value, dynjit.Tensor):
        return TensorMeta.of(value)
    if isinstance(value, list):
        return [_metas(v) for v in value]
    return value


def _describe(out):
    if isinstance(out, (tuple, list)):
        return [_describe(o) for o in out]
    return tuple(out.shape), out.dtype


def _run_both(op, sample):
    leaves, build = materialize(sample)
    args, kwargs = build(leaves)
    meta_args = [_metas(a) for a in args]
    meta_kwargs = {k: _metas(v) for k, v in kwargs.items()}
    dynjit.manual_seed(0)
    return op.meta(meta_args, meta_kwargs), _describe(op(*args, **kwargs))


def _data_dependent(name, sample):
    """Samples whose output shape depends on values (bool-mask indexing, one_hot
    without num_classes): meta must say so instead of guessing."""
    if name in ("nonzero", "masked_select", "bincount"):
        return True
    if name == "one_hot":
        return len(sample.args) < 2
    if name in ("index", "index_put", "index_backward"):
        return False if name != "index" else any(
            isinstance(i, np.ndarray) and i.dtype == np.bool_ for i in sample.args[1])
    return False


@pytest.mark.parametrize("name,i", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_meta_matches_eager(name, i):
    op = registry[name]
    sample = SAMPLES[name][i]
    if _data_dependent(name, sample):
        leaves, build = materialize(sample)
        args, kwargs = build(leaves)
        with pytest.raises(DataDependentOutputError):
            op.meta([_metas(a) for a in args], kwargs)
        return
    meta, eager = _run_both(op, sample)
    assert meta == eager, f"{name}{sample}: meta {meta} but eager gives {eager}"


INPLACE_OPS = sorted(n for n, op in registry.items() if op.kind == INPLACE)


@pytest.mark.parametrize("name", INPLACE_OPS)
def test_inplace_meta_matches_eager(name):
    op = registry[name]
    samples = inplace_samples(op)
    assert samples, f"no sample of {op.functional.name} can run in place"
    for sample in samples:
        meta, eager = _run_both(op, sample)
        assert meta == eager, f"{name}{sample}: meta {meta} but eager gives {eager}"


def test_inplace_meta_rejects_a_result_that_does_not_fit():
    x = TensorMeta((3,), dynjit.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        registry["add_"].meta([x, 1.5])
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        registry["add_"].meta([x, TensorMeta((2, 3), dynjit.int64)])


def test_meta_costs_no_memory_for_huge_views():
    big = TensorMeta((10 ** 6, 10 ** 6), dynjit.float32)
    assert registry["transpose"].meta([big, 0, 1]) == ((10 ** 6, 10 ** 6), dynjit.float32)
    assert registry["reshape"].meta([big, (-1,)]) == ((10 ** 12,), dynjit.float32)
    assert registry["sum"].meta([big, 1]) == ((10 ** 6,), dynjit.float32)
    assert registry["matmul"].meta([big, big]) == ((10 ** 6, 10 ** 6), dynjit.float32)


def test_meta_accepts_real_tensors_and_keywords():
    x = dynjit.ones(2, 3)
    assert registry["sum"].meta([x], {"dim": 0, "keepdim": True}) == ((1, 3), dynjit.float32)


def test_broadcast_error_names_the_sizes_like_pytorch():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of tensor b "
                                           r"\(3\) at non-singleton dimension 1"):
        broadcast_shapes((3, 4), (4, 3))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        registry["mul"].meta([TensorMeta((2, 3), dynjit.float32), TensorMeta((4,), dynjit.float32)])

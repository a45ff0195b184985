"""Library additions the second batch of real programs (tests/programs) needed:
F.embedding_bag / nn.EmbeddingBag (a composite of registered ops), and Tensor.uniform_ /
Tensor.normal_. Values against independent numpy loops, gradients by finite differences,
plain against compiled on every backend."""
import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck

BACKENDS = ["eager", "aot_eager", "llvm"]


def bags_reference(weight, indices, offsets, mode, per_sample_weights=None, include_last_offset=False,
                   padding_idx=None):
    """One numpy loop per bag: the rows of `weight` in it, padding rows left out."""
    ends = list(offsets[1:]) + ([] if include_last_offset else [len(indices)])
    starts = offsets[:-1] if include_last_offset else offsets
    out = np.zeros((len(starts), weight.shape[1]), weight.dtype)
    for b, (s, e) in enumerate(zip(starts, ends)):
        rows = [weight[indices[i]] * (1 if per_sample_weights is None else per_sample_weights[i])
                for i in range(s, e) if indices[i] != padding_idx]
        if rows:
            out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](np.stack(rows), axis=0)
    return out


INDICES = np.array([1, 2, 0, 4, 5, 0, 3, 9, 2])
OFFSETS = np.array([0, 3, 3, 5])        # the second bag is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 0])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_matches_a_loop_per_bag(mode, padding_idx, include_last_offset):
    weight = np.random.RandomState(0).randn(10, 3)
    offsets = np.append(OFFSETS, len(INDICES)) if include_last_offset else OFFSETS
    out = F.embedding_bag(dynjit.tensor(INDICES), dynjit.tensor(weight), dynjit.tensor(offsets), mode=mode,
                          padding_idx=padding_idx, include_last_offset=include_last_offset)
    expected = bags_reference(weight, INDICES, offsets, mode, include_last_offset=include_last_offset,
                              padding_idx=padding_idx)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_embedding_bag_2d_input_and_per_sample_weights():
    weight = np.random.RandomState(1).randn(10, 4)
    indices = np.array([[1, 2, 3], [4, 4, 9]])
    out = F.embedding_bag(dynjit.tensor(indices), dynjit.tensor(weight), mode="mean")
    np.testing.assert_allclose(out.numpy(), weight[indices].mean(1), rtol=1e-12)
    psw = np.random.RandomState(2).rand(len(INDICES))
    out = F.embedding_bag(dynjit.tensor(INDICES), dynjit.tensor(weight), dynjit.tensor(OFFSETS), mode="sum",
                          per_sample_weights=dynjit.tensor(psw))
    np.testing.assert_allclose(out.numpy(), bags_reference(weight, INDICES, OFFSETS, "sum", psw), rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck(mode):
    weight = dynjit.tensor(np.random.RandomState(3).randn(10, 3), requires_grad=True)
    psw = dynjit.tensor(np.random.RandomState(4).rand(len(INDICES)), requires_grad=True)
    indices, offsets = dynjit.tensor(INDICES), dynjit.tensor(OFFSETS)
    if mode == "sum":
        assert gradcheck(lambda w, p: F.embedding_bag(indices, w, offsets, mode="sum", per_sample_weights=p),
                         (weight, psw))
    else:
        assert gradcheck(lambda w: F.embedding_bag(indices, w, offsets, mode=mode, padding_idx=0), (weight,))


def test_embedding_bag_padding_row_gets_no_gradient():
    bag = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    assert np.all(bag.weight.detach().numpy()[0] == 0)
    bag(dynjit.tensor(INDICES), dynjit.tensor(OFFSETS)).sum().backward()
    grad = bag.weight.grad.numpy()
    assert np.all(grad[0] == 0)
    np.testing.assert_array_equal(grad[:, 0], np.bincount(INDICES[INDICES != 0], minlength=10))


def test_embedding_bag_errors():
    weight = dynjit.randn(10, 3)
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(dynjit.tensor(INDICES), weight, dynjit.tensor(OFFSETS), mode="prod")
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(dynjit.tensor([[1, 2]]), weight, dynjit.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(dynjit.tensor([1, 2]), weight)
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(dynjit.tensor([1, 2]), weight, dynjit.tensor([0]), mode="mean",
                        per_sample_weights=dynjit.ones(2))
    with pytest.raises(RuntimeError, match="integer dtype"):
        F.embedding_bag(dynjit.tensor([1.0]), weight, dynjit.tensor([0]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["mean", "max"])
def test_embedding_bag_compiled_like_plain(backend, mode):
    bag = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=0)

    def step(indices, offsets):
        bag.weight.grad = None
        out = bag(indices, offsets)
        (out * dynjit.arange(out.numel()).reshape(out.shape)).sum().backward()
        return out.detach(), bag.weight.grad.clone()

    compiled = dynjit.compile(step, backend=backend)
    for offsets in (OFFSETS, np.array([0, 4, 8])):   # other offsets: the graph reads them, not a constant
        args = dynjit.tensor(INDICES), dynjit.tensor(offsets)
        for a, b in zip(step(*args), compiled(*args)):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)


def test_tensor_uniform_and_normal_in_place():
    dynjit.manual_seed(5)
    x = dynjit.empty(2000)
    assert x.uniform_(-0.5, 2.0) is x
    values = x.numpy()
    assert values.min() >= -0.5 and values.max() < 2.0 and abs(values.mean() - 0.75) < 0.05
    dynjit.manual_seed(5)
    np.testing.assert_array_equal(dynjit.empty(2000).uniform_(**{"from": -0.5, "to": 2.0}).numpy(), values)
    y = dynjit.empty(4000).normal_(mean=3.0, std=0.5)
    assert abs(y.numpy().mean() - 3.0) < 0.05 and abs(y.numpy().std() - 0.5) < 0.05
    g1, g2 = dynjit.Generator().manual_seed(1), dynjit.Generator().manual_seed(1)
    np.testing.assert_array_equal(dynjit.empty(5).normal_(generator=g1).numpy(),
                                  dynjit.empty(5).normal_(generator=g2).numpy())
    with pytest.raises(Exception, match="not implemented for 'Long'"):
        dynjit.zeros(3, dtype=dynjit.int64).uniform_()

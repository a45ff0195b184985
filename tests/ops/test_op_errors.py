"""Bad inputs to ops fail with clear errors in the user's terms (which sizes,
which dims, which dtypes), and meta functions raise the same errors."""
import re

import pytest

import dynjit
from dynjit.ops import registry
from dynjit.ops.meta import TensorMeta


def x23():
    return dynjit.ones(2, 3)


ERRORS = [
    # broadcasting names the clashing sizes, like PyTorch
    (lambda: x23() + dynjit.ones(4), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    (lambda: dynjit.ones(3, 4) * dynjit.ones(4, 3), RuntimeError,
     "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1"),
    (lambda: x23() < dynjit.ones(2, 2), RuntimeError, "The size of tensor a (3) must match the size of tensor b (2)"),
    (lambda: x23() / dynjit.ones(4), RuntimeError, "The size of tensor a (3) must match"),
    (lambda: x23() ** dynjit.ones(4), RuntimeError, "The size of tensor a (3) must match"),
    (lambda: dynjit.where(x23() > 0, x23(), dynjit.ones(5)), RuntimeError, "The size of tensor a (3) must match"),
    (lambda: x23().clamp(dynjit.ones(4)), RuntimeError, "The size of tensor a (3) must match"),
    (lambda: x23().masked_fill(dynjit.ones(4) > 0, 1.0), RuntimeError, "The size of tensor a (3) must match"),
    (lambda: x23().lerp(dynjit.ones(4), 0.5), RuntimeError, "The size of tensor a (3) must match"),
    # matrix products
    (lambda: x23() @ x23(), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    (lambda: dynjit.tensor(1.0) @ x23(), RuntimeError, "both arguments to matmul need to be at least 1D"),
    (lambda: x23() @ dynjit.ones(3, 2, dtype=dynjit.float64), RuntimeError,
     "expected both operands to have the same dtype, but got: float32 != float64"),
    (lambda: dynjit.ones(2, 2, 2).mm(x23()), RuntimeError, "mm: expected 2D tensors, got 3D and 2D"),
    (lambda: dynjit.ones(2, 2, 3).bmm(dynjit.ones(3, 3, 2)), RuntimeError,
     "batch1 and batch2 must have same number of batches, got 2 and 3"),
    (lambda: dynjit.linear(x23(), dynjit.ones(4, 2)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x4)"),
    (lambda: dynjit.dot(dynjit.ones(3), dynjit.ones(4)), RuntimeError, "inconsistent tensor size"),
    (lambda: dynjit.outer(x23(), x23()), RuntimeError, "outer: Expected 1-D argument self, but got 2-D"),
    (lambda: dynjit.einsum("ij,jk->ik", x23(), x23()), RuntimeError,
     "subscript j has size 2 for operand 1 which does not broadcast with previously seen size 3"),
    # shapes and dims
    (lambda: dynjit.cat([x23(), dynjit.ones(3, 2)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size [2, 3] but got size [3, 2] for tensor number 1"),
    (lambda: dynjit.cat([dynjit.tensor(1.0)]), RuntimeError, "zero-dimensional tensor (at position 0) cannot be concatenated"),
    (lambda: dynjit.stack([x23(), dynjit.ones(3, 2)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1"),
    (lambda: x23().t().view(6), RuntimeError, "view size is not compatible with input tensor's size and stride"),
    (lambda: x23().view(4), RuntimeError, "shape '[4]' is invalid for input of size 6"),
    (lambda: x23().sum(3), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 3)"),
    (lambda: x23().transpose(0, 2), IndexError, "Dimension out of range"),
    (lambda: x23().permute(0, 0), RuntimeError, "appears multiple times"),
    (lambda: x23().narrow(0, 1, 5), IndexError, "start (1) + length (5) exceeds dimension size (2)"),
    (lambda: x23().select(0, 5), IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    (lambda: x23().expand(4, 3), RuntimeError, "The expanded size of the tensor (4) must match the existing size (2)"),
    (lambda: x23().repeat(2), RuntimeError, "Number of dimensions of repeat dims can not be smaller"),
    (lambda: x23().sum_to_size(4), RuntimeError, "size [4] is not expandable to size [2, 3]"),
    (lambda: dynjit.ones(3).tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda: dynjit.ones(3).diagonal(), IndexError, "Dimension out of range"),
    (lambda: x23().diagonal(0, 1, 1), RuntimeError, "diagonal dimensions requested must be distinct"),
    (lambda: dynjit.tensor(1.0).unbind(0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: x23().roll((1, 2), (0,)), RuntimeError, "shifts and dimensions must align"),
    # indexing
    (lambda: x23()[5], IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    (lambda: x23()[0, 0, 0], IndexError, "too many indices for tensor of dimension 2"),
    (lambda: x23()[dynjit.tensor([0.0])], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda: x23().gather(1, dynjit.tensor([[5], [0]])), IndexError, "index 5 is out of bounds for dimension 1 with size 3"),
    (lambda: x23().gather(1, dynjit.tensor([[1.0], [0.0]])), RuntimeError, "gather(): Expected dtype int64 for index"),
    (lambda: x23().scatter(0, dynjit.tensor([0, 1]), 1.0), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    (lambda: x23().index_select(0, dynjit.tensor([5])), IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    (lambda: x23().index_put_((dynjit.tensor([0]),), dynjit.ones(4)), RuntimeError,
     "shape mismatch: value tensor of shape [4] cannot be broadcast to indexing result of shape [1, 3]"),
    # dtypes
    (lambda: -dynjit.tensor([True]), RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported"),
    (lambda: dynjit.tensor([True]) - dynjit.tensor([False]), RuntimeError,
     "Subtraction, the `-` operator, with two bool tensors is not supported"),
    (lambda: x23() & x23(), RuntimeError, "bitwise_and is only defined for integer and bool tensors"),
    (lambda: ~x23(), RuntimeError, "bitwise_not is only defined for integer and bool tensors"),
    (lambda: dynjit.tensor([1, 2]).mean(), RuntimeError, "mean(): could not infer output dtype"),
    (lambda: dynjit.tensor([1, 2]).std(), RuntimeError, "std and var only support floating point dtypes"),
    (lambda: x23().masked_fill(dynjit.ones(2, 3, dtype=dynjit.int64), 1.0), RuntimeError,
     "masked_fill(): the mask must be a bool tensor, but got int64"),
    (lambda: dynjit.where(x23(), x23(), x23()), RuntimeError, "where(): the condition must be a bool tensor"),
    (lambda: dynjit.tensor([2]) ** -1, RuntimeError, "Integers to negative integer powers are not allowed."),
    (lambda: x23().div(2, rounding_mode="round"), ValueError, "rounding_mode to be one of None, 'trunc', or 'floor'"),
    # reductions of nothing, nn ops, factories
    (lambda: dynjit.zeros(0).max(), RuntimeError, "Expected reduction dim to be specified for input.numel() == 0"),
    (lambda: dynjit.zeros(0).argmax(), RuntimeError, "Expected reduction dim to be specified for input.numel() == 0"),
    (lambda: dynjit.zeros(0, 3).argmax(0), IndexError, "argmax(): Expected reduction dim 0 to have non-zero size."),
    (lambda: dynjit.zeros(0, 3).amax(0), IndexError, "amax(): Expected reduction dim 0 to have non-zero size."),
    (lambda: dynjit.zeros(2, 0).amin(), IndexError, "amin(): Expected reduction dim 1 to have non-zero size."),
    (lambda: dynjit.zeros(0, 3).max(0), IndexError, "max(): Expected reduction dim 0 to have non-zero size."),
    (lambda: x23().softmax(2), IndexError, "Dimension out of range"),
    (lambda: registry["nll_loss"](x23(), dynjit.tensor([0.0, 1.0])), RuntimeError, "expected an integer (int64) target"),
    (lambda: registry["nll_loss"](x23(), dynjit.tensor([0, 1, 2])), ValueError,
     "Expected input batch_size (2) to match target batch_size (3)"),
    (lambda: registry["nll_loss"](x23(), dynjit.tensor([0, 7])), IndexError, "Target 7 is out of bounds"),
    (lambda: x23().clamp(), RuntimeError, "At least one of 'min' or 'max' must not be None"),
    (lambda: dynjit.arange(0, 5, -1), RuntimeError, "upper bound (5) and lower bound (0) inconsistent with step sign (-1)"),
    (lambda: dynjit.zeros(-1), RuntimeError, "Trying to create tensor with negative dimension -1"),
    (lambda: dynjit.randint(5, 3, (2,)), RuntimeError, "randint expects low to be less than high"),
    (lambda: registry["one_hot"](dynjit.tensor([3]), 2), RuntimeError, "Class values must be smaller than num_classes."),
]


@pytest.mark.parametrize("fn,exc,message", ERRORS, ids=[m[:40] for _, _, m in ERRORS])
def test_bad_inputs_give_clear_errors(fn, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        fn()


def m(*shape, dtype=dynjit.float32):
    return TensorMeta(shape, dtype)


META_ERRORS = [
    ("add", [m(2, 3), m(4)], RuntimeError, "The size of tensor a (3) must match the size of tensor b (4)"),
    ("matmul", [m(2, 3), m(2, 3)], RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    ("matmul", [m(2, 3), m(3, dtype=dynjit.float64)], RuntimeError, "same dtype"),
    ("cat", [[m(2, 3), m(3, 2)]], RuntimeError, "Sizes of tensors must match except in dimension 0"),
    ("sum", [m(2, 3), 3], IndexError, "Dimension out of range"),
    ("view", [m(2, 3), (4,)], RuntimeError, "shape '[4]' is invalid for input of size 6"),
    ("expand", [m(2, 3), (4, 3)], RuntimeError, "The expanded size of the tensor (4)"),
    ("mean", [m(2, dtype=dynjit.int64)], RuntimeError, "mean(): could not infer output dtype"),
    ("sub", [m(2, dtype=dynjit.bool), m(2, dtype=dynjit.bool)], RuntimeError, "two bool tensors"),
    ("neg", [m(2, dtype=dynjit.bool)], RuntimeError, "on a bool tensor is not supported"),
    ("where", [m(2), m(2), m(2)], RuntimeError, "condition must be a bool tensor"),
    ("tril", [m(3)], RuntimeError, "at least 2 dimensions"),
    ("gather", [m(3, 4), 1, m(3, dtype=dynjit.int64)], RuntimeError, "same number of dimensions"),
    ("einsum", ["ij,jk->ik", [m(2, 3), m(2, 3)]], RuntimeError, "subscript j has size 2"),
    ("arange", [0, 5, -1], RuntimeError, "inconsistent with step sign"),
    ("amax", [m(0, 3), 0], IndexError, "Expected reduction dim 0 to have non-zero size"),
    ("argmin", [m(0, 3), 0], IndexError, "Expected reduction dim 0 to have non-zero size"),
]


@pytest.mark.parametrize("name,args,exc,message", META_ERRORS, ids=[f"{n}-{msg[:30]}" for n, _, _, msg in META_ERRORS])
def test_meta_raises_the_same_errors(name, args, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        registry[name].meta(args)

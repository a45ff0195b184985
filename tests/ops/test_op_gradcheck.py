"""gradcheck (and gradgradcheck) of every differentiable op on every sample of
the op table, in float64: the analytical backward from the registry's
derivative must match central finite differences, and, since derivatives are
written with registered ops, backward must itself be differentiable."""
import pytest

import dynjit
from dynjit.autograd import gradcheck, gradgradcheck
from dynjit.ops.registry import registry, INPLACE

from opinfo_samples import SAMPLES, materialize, inplace_samples, checkable, GRADCHECKED_ELSEWHERE


# (ops whose kernel takes sparse tensors have their own samples and gradchecks in tests/sparse)
DIFFERENTIABLE = sorted(n for n, op in registry.items()
                        if op.backward_cls is not None and op.kind != INPLACE and op.sparse is not op)



CASES = [(n, i) for n in DIFFERENTIABLE for i in range(len(SAMPLES.get(n, ())))]


def test_every_differentiable_op_is_gradchecked():
    checked = {n for n, i in CASES if checkable(registry[n], SAMPLES[n][i]) is not None}
    missing = sorted(set(DIFFERENTIABLE) - checked - set(GRADCHECKED_ELSEWHERE))
    assert not missing, f"differentiable ops without a float64 sample to gradcheck: {missing}"


@pytest.mark.parametrize("name,i", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_gradcheck(name, i):
    op = registry[name]
    case = checkable(op, SAMPLES[name][i])
    if case is None:
        return      # nothing differentiable in this sample (covered by the test above)
    fn, leaves = case
    assert gradcheck(fn, leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


INPLACE_DIFFERENTIABLE = sorted(n for n, op in registry.items()
                                if op.kind == INPLACE and op.functional.backward_cls is not None)


def _inplace_fn(op, build, on_view):
    """Run the in-place op on a copy of the first input (or on a view of that copy,
    which goes through CopySlices) and return the copy."""
    def fn(*ls):
        a, kw = build(ls)
        copy = a[0] * 1.0 if a[0].dtype.is_floating_point else a[0].clone()
        target = copy[...] if on_view else copy
        op(target, *a[1:], **kw)
        return copy
    return fn


@pytest.mark.parametrize("on_view", [False, True], ids=["on_copy", "on_view"])
@pytest.mark.parametrize("name", INPLACE_DIFFERENTIABLE)
def test_gradcheck_inplace(name, on_view):
    op = registry[name]
    checked = 0
    for sample in inplace_samples(op):
        leaves, build = materialize(sample, requires_grad=True)
        fn = _inplace_fn(op, build, on_view)
        with dynjit.no_grad():
            out = fn(*leaves)
        if not any(t.requires_grad for t in leaves) or out.dtype is not dynjit.float64:
            continue
        assert gradcheck(fn, leaves), f"{name}{sample}"
        checked += 1
    assert checked, f"no float64 sample to gradcheck {name} on"


# Ops whose double backward is not checked, and why.
NO_GRADGRAD = dict(GRADCHECKED_ELSEWHERE)


def _first_checkable(name, count):
    out = []
    for sample in SAMPLES.get(name, ()):
        c = checkable(registry[name], sample)
        if c is not None:
            out.append(c)
        if len(out) == count:
            break
    return out


GRADGRAD = [n for n in DIFFERENTIABLE if n not in NO_GRADGRAD]


@pytest.mark.parametrize("name", GRADGRAD)
def test_gradgradcheck(name):
    checks = _first_checkable(name, 2)
    assert checks, f"no float64 sample of {name} to gradgradcheck"
    for fn, leaves in checks:
        assert gradgradcheck(fn, leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name", sorted(n for n, op in registry.items() if op.kind != INPLACE and op.sparse is not op))
def test_only_floating_outputs_require_grad(name):
    """Integer and bool results (x.long(), comparisons, indices) never require grad."""
    op = registry[name]
    for sample in SAMPLES[name]:
        leaves, build = materialize(sample, requires_grad=True)
        args, kwargs = build(leaves)
        dynjit.manual_seed(0)
        for out in _outputs(op(*args, **kwargs)):
            if isinstance(out, dynjit.Tensor) and not (out.dtype.is_floating_point or out.dtype.is_complex):
                assert not out.requires_grad and out.grad_fn is None, f"{name}{sample} gives a {out.dtype} requiring grad"


def test_prod_is_twice_differentiable_at_zeros():
    x = dynjit.tensor([[2.0, 0.0, 3.0], [1.5, 0.5, -1.0], [0.0, 0.0, 2.0]], dtype=dynjit.float64, requires_grad=True)
    assert gradgradcheck(lambda t: t.prod(1), [x])
    assert gradgradcheck(lambda t: t.prod(), [x])


def test_cumprod_is_twice_differentiable_at_zeros():
    x = dynjit.tensor([2.0, 0.0, 3.0, 0.0, 1.5], dtype=dynjit.float64, requires_grad=True)
    assert gradgradcheck(lambda t: t.cumprod(0), [x])
    y = dynjit.tensor([[0.0, 2.0, 0.5], [1.5, 0.0, 0.0]], dtype=dynjit.float64, requires_grad=True)
    assert gradgradcheck(lambda t: t.cumprod(1), [y])
    assert gradgradcheck(lambda t: t.cumprod(0), [y])

"""Forward-mode AD of every registered op with a derivative, on every float64 sample of
the op table (tests/ops/opinfo_samples.py): the Jacobian forward AD gives (one tangent
per input element, through the op's JVP rule, its view of the tangent, or the
linearized backward formula) must match central finite differences. In-place variants
are checked on a copy and on a view of a copy (the tangent is written in place, through
the view into its base's tangent)."""
import os
import sys

import pytest

import dynjit
from dynjit.autograd import gradcheck
from dynjit.ops.registry import registry, INPLACE

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ops"))
from opinfo_samples import SAMPLES, materialize, inplace_samples, checkable, GRADCHECKED_ELSEWHERE  # noqa: E402

DIFFERENTIABLE = sorted(n for n, op in registry.items()
                        if op.backward_cls is not None and op.kind != INPLACE)
INPLACE_DIFFERENTIABLE = sorted(n for n, op in registry.items()
                                if op.kind == INPLACE and op.functional.backward_cls is not None)



CASES = [(n, i) for n in DIFFERENTIABLE for i in range(len(SAMPLES.get(n, ())))]


def test_every_differentiable_op_is_checked_forward():
    """Every op the sample table covers (whether each op has samples is the table's own
    test, tests/ops/test_op_declarations.py) has a float64 sample checked here."""
    checked = {n for n, i in CASES if checkable(registry[n], SAMPLES[n][i]) is not None}
    missing = sorted(set(DIFFERENTIABLE) & set(SAMPLES) - checked - set(GRADCHECKED_ELSEWHERE))
    assert not missing, f"differentiable ops without a float64 sample to check forward AD on: {missing}"


@pytest.mark.parametrize("name,i", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_forward_ad_matches_finite_differences(name, i):
    case = checkable(registry[name], SAMPLES[name][i])
    if case is None:
        return      # nothing differentiable in this sample (covered by the test above)
    fn, leaves = case
    assert gradcheck(fn, leaves, check_forward_ad=True, check_backward_ad=False,
                     check_undefined_grad=False)


def _inplace_fn(op, build, on_view):
    def fn(*ls):
        a, kw = build(ls)
        copy = a[0] * 1.0 if a[0].dtype.is_floating_point else a[0].clone()
        target = copy[...] if on_view else copy
        op(target, *a[1:], **kw)
        return copy
    return fn


@pytest.mark.parametrize("on_view", [False, True], ids=["on_copy", "on_view"])
@pytest.mark.parametrize("name", INPLACE_DIFFERENTIABLE)
def test_forward_ad_of_inplace_ops(name, on_view):
    op = registry[name]
    checked = 0
    for sample in inplace_samples(op):
        leaves, build = materialize(sample, requires_grad=True)
        fn = _inplace_fn(op, build, on_view)
        with dynjit.no_grad():
            out = fn(*leaves)
        if not any(t.requires_grad for t in leaves) or out.dtype is not dynjit.float64:
            continue
        assert gradcheck(fn, leaves, check_forward_ad=True, check_backward_ad=False,
                         check_undefined_grad=False), f"{name}{sample}"
        checked += 1
    assert checked, f"no float64 sample to check {name} on"

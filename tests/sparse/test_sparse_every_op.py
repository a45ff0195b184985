"""Every registered op, given a sparse operand, either computes what it computes on the
dense equal (the ops with a sparse kernel) or raises a clear error (PyTorch's "Could not
run ... with arguments from the 'SparseCPU' backend", or a sparse kernel's own
RuntimeError such as "add(sparse, dense) is not supported"): never a result computed from the sparse storage as if it were an
array, and never an internal crash (AttributeError, ...). The samples are the registry-wide
ones of tests/ops/opinfo_samples.py, with their first tensor argument made sparse."""
import sys
from pathlib import Path

import numpy as np
import pytest

import dynjit
from dynjit.ops.registry import registry, INPLACE, RANDOM

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ops"))
from opinfo_samples import SAMPLES, materialize  # noqa: E402

OPS = sorted(n for n, op in registry.items()
             if op.sparse is not op and RANDOM not in op.tags and SAMPLES.get(n))


def _first_tensor(args, kwargs):
    for i, a in enumerate(args):
        if isinstance(a, dynjit.Tensor) and a.dim() > 0 and a.numel() > 0:
            return ("arg", i), a
    return None, None


def _values(out):
    if isinstance(out, dynjit.Tensor):
        return [out.to_dense() if out.layout is not dynjit.strided else out]
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _values(o)]
    return [out]


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr"])
@pytest.mark.parametrize("name", OPS)
def test_an_op_given_a_sparse_operand_is_right_or_refuses(name, layout):
    op = registry[name]
    backend = "SparseCPU" if layout == "sparse_coo" else "SparseCsrCPU"
    for sample in SAMPLES[name]:
        leaves, build = materialize(sample)
        args, kwargs = build(leaves)
        where, dense = _first_tensor(args, kwargs)
        if where is None or (layout == "sparse_csr" and dense.dim() != 2):
            continue
        sparse_args = list(args)
        sparse_args[where[1]] = dense.to_sparse(layout=getattr(dynjit, layout))
        if op.kind is INPLACE:
            sparse_args[0] = sparse_args[0].clone() if where[1] == 0 else sparse_args[0]
        try:
            got = op(*sparse_args, **kwargs)
        except NotImplementedError as e:
            assert f"with arguments from the '{backend}' backend" in str(e), f"{name}: {e}"
            continue
        except RuntimeError:        # the sparse kernel's own check (add(sparse, dense), ...)
            continue
        dynjit.manual_seed(0)
        leaves, build = materialize(sample)
        args, kwargs = build(leaves)
        want = op(*args, **kwargs)
        for g, w in zip(_values(got), _values(want)):
            if isinstance(w, dynjit.Tensor):
                assert isinstance(g, dynjit.Tensor), f"{name}{sample}: {type(g).__name__}"
                np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-6, atol=1e-9,
                                           err_msg=f"{name} with a sparse operand")
            else:
                assert g == w, f"{name}{sample}: {g!r} != {w!r}"

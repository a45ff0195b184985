"""Function transforms (PyTorch's torch.func / functorch): `vmap`, `grad`,
`grad_and_value`, `vjp`, `jacrev`, `functionalize`, and forward mode: `jvp`,
`jacfwd`, `linearize`, `hessian` (forward-over-reverse); `functional_call`.

They are written with dynjit's own ops and autograd engine, so that tracing a
transformed function (make_fx) records the ops the transform runs: vmap's
batching rules (_batching), the backward formulas of the vjp, the functional
ops of functionalize.
"""
from ._vmap import vmap
from ._eager_transforms import vjp, grad, grad_and_value, jacrev
from ._functionalize import functionalize
from ._forward_transforms import jvp, jacfwd, linearize, hessian
from ._functional_call import functional_call

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jacrev", "functionalize", "jvp", "jacfwd",
           "linearize", "hessian", "functional_call"]

from ..autograd.gradcheck import install_vmap as _install_vmap  # noqa: E402
_install_vmap(vmap)   # gradcheck(check_batched_forward_grad=True) batches with it

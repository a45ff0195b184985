"""Value checks as an op: `check_values(self, ok, msg, show_values=False)` passes `self`
through and raises ValueError(msg) when the bool tensor `ok` is False anywhere (with
`show_values`, `self`'s values are appended to the message, as PyTorch's distributions
print them). Written as an op, not a Python `if` on a tensor's values, so that library code
that must reject bad values (a negative variance in `gaussian_nll_loss`, a distribution's
invalid parameters) checks on every call under every backend: an `if` would be a graph
break, or, inside a function the compiler records as one node, a value frozen at trace time."""
import numpy as np

from .meta import same_as
from .registry import register, OTHER


@register("check_values", OTHER)
def check_values(self, ok, msg, show_values=False):
    values = np.asarray(self)
    if not bool(np.all(ok)):
        raise ValueError(f"{msg}\n{values}" if show_values else msg)
    return np.array(values, copy=True)


check_values.meta_fn(lambda self, ok, msg, show_values=False: same_as(self))
check_values.derivative(lambda grad, ok, msg, show_values: (grad, None, None, None))
check_values.jvp(lambda tangents, result, self, ok, msg, show_values=False: tangents[0])

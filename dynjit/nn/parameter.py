"""`Parameter`: a leaf tensor that a Module registers as one of its parameters."""
import numpy as np

from ..tensor import Tensor


class Parameter(Tensor):
    """A Tensor that, assigned as a Module attribute, is registered in its parameters.

    `Parameter(t)` shares `t`'s memory (like `t.detach()`) and is a leaf that
    requires grad unless `requires_grad=False`.
    """
    _is_param = True

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = Tensor._make(np.empty((0,), dtype=np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a dynjit.Tensor as its data, got {type(data).__name__}")
        p = object.__new__(cls)
        p._data = data._data
        p._version_counter = data._version_counter
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass    # all set up in __new__ (Tensor.__init__ takes other arguments)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        new = Parameter(Tensor._make(self._data.copy()), self._requires_grad)
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self._data.copy(), self._requires_grad))


def _rebuild_parameter(arr, requires_grad):
    return Parameter(Tensor._make(arr), requires_grad)


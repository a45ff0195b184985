"""torch.nextafter: the next floating-point value after `self` towards `other`, in their
promoted floating dtype (bfloat16 steps by bfloat16's own spacing, computed on its bits).

PyTorch 2.13 differentiates it as the identity in `self` (the step is at most one unit
in the last place) and not at all in `other`; dynjit declares the same.
"""
import numpy as np

from .. import _dtype
from .registry import register, POINTWISE, FLOAT
from .pointwise import _tensor_dtype


def _reject_non_float(self, other):
    """PyTorch computes nextafter in floating dtypes only: integer operands are an error,
    not converted (called with arrays or, from meta, with tensor metas)."""
    a, b = _tensor_dtype(self), _tensor_dtype(other)
    if a is not None and b is not None:
        d = _dtype.promote_types(a, b)
        if not d.is_floating_point:
            raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{_dtype.scalar_type_name(d)}'")


def _bfloat16_nextafter(x, y):
    """nextafter on bfloat16 values held in float32: step the upper 16 bits (bfloat16's
    sign, exponent and 7-bit mantissa) by one towards y."""
    x, y = np.broadcast_arrays(np.asarray(x, np.float32), np.asarray(y, np.float32))
    bits = (x.view(np.uint32) >> 16).astype(np.int64)
    magnitude, sign = bits & 0x7FFF, bits & 0x8000
    away_from_zero = (y > x) == (x > 0)
    magnitude = np.where(away_from_zero, magnitude + 1, magnitude - 1)
    stepped = ((sign | magnitude) << 16).astype(np.uint32).view(np.float32)
    tiniest = np.where(y > 0, np.uint32(0x00010000), np.uint32(0x80010000)).view(np.float32)
    out = np.where(x == 0, tiniest, stepped)
    out = np.where(x == y, y, out)
    return np.where(np.isnan(x) | np.isnan(y), np.float32(np.nan), out)


@register("nextafter", POINTWISE, dtype_rule=FLOAT, variants="function, method", inplace=True,
          operand_check=_reject_non_float)
def nextafter(self, other):
    if getattr(np.asarray(self).dtype, "metadata", None) == _dtype.BFLOAT16_NP.metadata:
        return _bfloat16_nextafter(self, other)     # operands come in the computation dtype
    return np.nextafter(self, other)


@nextafter.derivative
def _(grad, needs):
    return grad, (grad * 0 if needs[1] else None)

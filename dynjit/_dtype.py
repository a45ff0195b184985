"""dynjit's dtypes and PyTorch's type-promotion rules.

A dtype is a small singleton that maps onto a numpy dtype. Promotion follows
PyTorch: categories bool < integer < floating; dimensioned tensors win over
0-d tensors, which win over Python scalars, unless the weaker operand is of a
higher category (then the default dtype of that category is used for scalars).
"""
import numpy as np

__all__ = ["dtype", "float16", "float32", "float64", "half", "float", "double",
           "int8", "int16", "int32", "int64", "uint8", "long", "int", "bool",
           "get_default_dtype", "set_default_dtype", "promote_types", "result_type"]


class dtype:
    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_category", "_short")

    def __init__(self, name, np_dtype, category, short):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = category == 2
        self.is_signed = self.np.kind in "fi"
        self.itemsize = self.np.itemsize
        self._category = category
        self._short = short

    @property
    def is_complex(self):
        return False

    def __repr__(self):
        return f"dynjit.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name):
    return _BY_NAME[name]


bool_ = dtype("bool", np.bool_, 0, "b8")
uint8 = dtype("uint8", np.uint8, 1, "u8")
int8 = dtype("int8", np.int8, 1, "i8")
int16 = dtype("int16", np.int16, 1, "i16")
int32 = dtype("int32", np.int32, 1, "i32")
int64 = dtype("int64", np.int64, 1, "i64")
float16 = dtype("float16", np.float16, 2, "f16")
float32 = dtype("float32", np.float32, 2, "f32")
float64 = dtype("float64", np.float64, 2, "f64")
half, float, double, long, int = float16, float32, float64, int64, int32
globals()["bool"] = bool_

_ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
_BY_NAME = {d.name: d for d in _ALL}
_FROM_NP = {d.np: d for d in _ALL}

_default_float = [float32]


# PyTorch's C++ scalar type names, which its "not implemented for" errors use
_SCALAR_TYPE_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                      "int64": "Long", "float16": "Half", "float32": "Float", "float64": "Double"}


def scalar_type_name(d):
    """PyTorch's name of dtype `d` in kernel errors ('Long' for int64)."""
    return _SCALAR_TYPE_NAMES[d.name]


def get_default_dtype():
    return _default_float[0]


def set_default_dtype(d):
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype only supports floating point dtypes, got {d!r}")
    _default_float[0] = d


def from_numpy_dtype(np_dtype):
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"dynjit has no dtype for numpy dtype {np.dtype(np_dtype)}; "
                        f"supported: {', '.join(d.name for d in _ALL)}") from None


def to_dtype(d):
    """Accept a dynjit dtype, a numpy dtype, or the Python types float/int/bool."""
    if isinstance(d, dtype):
        return d
    if d is builtins_float:
        return get_default_dtype()
    if d is builtins_int:
        return int64
    if d is builtins_bool:
        return bool_
    return from_numpy_dtype(d)


import builtins as _b
builtins_float, builtins_int, builtins_bool = _b.float, _b.int, _b.bool

def _promote_pair(a, b):
    # Across categories the higher category's dtype wins as it is (int64 with float16 is
    # float16, unlike numpy's float64); within a category numpy's rules match PyTorch's.
    if a._category != b._category:
        return a if a._category > b._category else b
    return from_numpy_dtype(np.promote_types(a.np, b.np))


_PROMOTE = {(_a, _c): _promote_pair(_a, _c) for _a in _ALL for _c in _ALL}


def promote_types(a, b):
    return _PROMOTE[a, b]


def scalar_category(x):
    if isinstance(x, _b.bool):
        return 0
    if isinstance(x, _b.int):
        return 1
    return 2


def scalar_dtype(x):
    """The dtype a Python scalar gets when it becomes a tensor on its own."""
    c = scalar_category(x)
    return bool_ if c == 0 else int64 if c == 1 else get_default_dtype()


def result_type(tensors, zero_dim, scalars):
    """PyTorch's three-tier promotion.

    tensors: dtypes of operands with dim > 0; zero_dim: dtypes of 0-d tensors;
    scalars: Python numbers.
    """
    result = None
    for d in tensors:
        result = d if result is None else _PROMOTE[result, d]
    zr = None
    for d in zero_dim:
        zr = d if zr is None else _PROMOTE[zr, d]
    if zr is not None:
        if result is None:
            result = zr
        elif zr._category > result._category:
            result = zr
    if scalars:
        cat = max(scalar_category(s) for s in scalars)
        if result is None:
            result = bool_ if cat == 0 else int64 if cat == 1 else get_default_dtype()
        elif cat > result._category:
            result = int64 if cat == 1 else get_default_dtype()
    return result

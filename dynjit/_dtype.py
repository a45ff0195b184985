"""dynjit's dtypes and PyTorch's type-promotion rules.

A dtype is a small singleton that maps onto a numpy dtype. Promotion follows
PyTorch: categories bool < integer < floating < complex; dimensioned tensors win
over 0-d tensors, which win over Python scalars, unless the weaker operand is of
a higher category (then the default dtype of that category is used for scalars,
and a complex operand makes a floating one complex of the same precision:
float64 with a complex64 0-d tensor is complex128, as PyTorch's
combine_categories).

bfloat16 has no numpy dtype: its values live in float32 arrays whose numpy dtype
carries the metadata {"dynjit": "bfloat16"} (views and copies keep it, numpy's
computations drop it). Every op computes in float32 and the dispatcher rounds a
bfloat16 result to bfloat16's 8 significant bits (round to nearest even), so
values are exactly those PyTorch's bfloat16 tensors hold; `element_size()` is 2
though the array takes 4 bytes an element.
"""
import numpy as np

__all__ = ["dtype", "float16", "float32", "float64", "half", "float", "double", "bfloat16",
           "complex64", "complex128", "cfloat", "cdouble",
           "int8", "int16", "int32", "int64", "uint8", "long", "int", "bool",
           "get_default_dtype", "set_default_dtype", "promote_types", "result_type"]


class dtype:
    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_category", "_short")

    def __init__(self, name, np_dtype, category, short):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = category == 2
        self.is_signed = self.np.kind in "fic"
        self.itemsize = self.np.itemsize
        self._category = category
        self._short = short

    @property
    def is_complex(self):
        return self._category == 3

    def to_real(self):
        """The real dtype of a complex dtype's parts (complex64 -> float32); others as they are."""
        return _TO_REAL.get(self, self)

    def to_complex(self):
        """The complex dtype whose parts are this floating dtype (float64 -> complex128)."""
        if self._category == 3:
            return self
        try:
            return _TO_COMPLEX[self]
        except KeyError:
            raise TypeError(f"dynjit has no complex dtype with {self.name} parts (complex32 / "
                            "chalf is not supported)") from None

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
complex64 = dtype("complex64", np.complex64, 3, "c64")
complex128 = dtype("complex128", np.complex128, 3, "c128")
# bfloat16: float32 storage tagged by the numpy dtype's metadata (see the module docstring)
BFLOAT16_NP = np.dtype(np.float32, metadata={"dynjit": "bfloat16"})
bfloat16 = dtype("bfloat16", BFLOAT16_NP, 2, "bf16")
bfloat16.itemsize = 2
half, float, double, long, int = float16, float32, float64, int64, int32
cfloat, cdouble = complex64, complex128
globals()["bool"] = bool_

_ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
_BY_NAME = {d.name: d for d in _ALL}
_TO_REAL = {complex64: float32, complex128: float64}
_TO_COMPLEX = {float32: complex64, float64: complex128}


# numpy dtype -> dynjit dtype. numpy compares and hashes dtypes without their metadata, so
# a bfloat16 array's dtype finds float32 here: dtype_of_np (and Tensor.dtype, inlined) tell
# the two apart.
_FROM_NP = {d.np: d for d in _ALL if d is not bfloat16}


def dtype_of_np(np_dtype):
    """The dynjit dtype of a numpy array's dtype (bfloat16 for tagged float32)."""
    d = _FROM_NP[np_dtype]
    if np_dtype.metadata is not None and d is float32 and np_dtype.metadata.get("dynjit") == "bfloat16":
        return bfloat16
    return d


def is_bfloat16_np(np_dtype):
    """Is this numpy dtype bfloat16's storage (float32 tagged by metadata)?"""
    m = np_dtype.metadata
    return m is not None and m.get("dynjit") == "bfloat16"


def round_to_bfloat16(arr):
    """float values rounded to bfloat16 (round to nearest even on float32's bits, NaN kept
    NaN), as a tagged float32 array."""
    a = np.asarray(arr, dtype=np.float32)
    bits = a.view(np.uint32) if a.flags.c_contiguous else np.ascontiguousarray(a).view(np.uint32)
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))) & np.uint32(0xFFFF0000)
    out = np.asarray(rounded).view(np.float32).reshape(a.shape)
    nan = np.isnan(a)
    if nan.any():
        out = np.where(nan, np.float32(np.nan), out)
    return np.asarray(out).astype(BFLOAT16_NP)

_default_float = [float32]


# PyTorch's C++ scalar type names, which its "not implemented for" errors use
_SCALAR_TYPE_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                      "int64": "Long", "float16": "Half", "float32": "Float", "float64": "Double",
                      "bfloat16": "BFloat16", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def scalar_type_name(d):
    """PyTorch's name of dtype `d` in kernel errors ('Long' for int64)."""
    return _SCALAR_TYPE_NAMES[d.name]


def get_default_dtype():
    return _default_float[0]


def get_default_complex_dtype():
    """complex64 while the default dtype is float32, complex128 with float64 (PyTorch's)."""
    return complex128 if _default_float[0] is float64 else complex64


def set_default_dtype(d):
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype only supports floating point dtypes, got {d!r}")
    _default_float[0] = d


def from_numpy_dtype(np_dtype):
    try:
        return dtype_of_np(np.dtype(np_dtype))
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
    if d is builtins_complex:
        return get_default_complex_dtype()
    return from_numpy_dtype(d)


import builtins as _b
builtins_float, builtins_int, builtins_bool, builtins_complex = _b.float, _b.int, _b.bool, _b.complex

def _promote_pair(a, b):
    # Across categories the higher category's dtype wins as it is (int64 with float16 is
    # float16, unlike numpy's float64), except that complex with a wider float widens
    # (complex64 with float64 is complex128); within a category numpy's rules match
    # PyTorch's. bfloat16 with itself stays, with another float is at least float32.
    if a is b:
        return a
    if bfloat16 in (a, b) and a._category == b._category == 2:
        other = b if a is bfloat16 else a
        return float64 if other is float64 else float32
    if a._category != b._category:
        high, low = (a, b) if a._category > b._category else (b, a)
        if high._category == 3 and low._category == 2:
            return from_numpy_dtype(np.promote_types(high.np, np.float32 if low is bfloat16 else low.np))
        return high
    return from_numpy_dtype(np.promote_types(a.np, b.np))


_PROMOTE = {(_a, _c): _promote_pair(_a, _c) for _a in _ALL for _c in _ALL}


def promote_types(a, b):
    return _PROMOTE[a, b]


def scalar_category(x):
    if isinstance(x, _b.bool):
        return 0
    if isinstance(x, _b.int):
        return 1
    if isinstance(x, _b.complex):
        return 3
    return 2


def scalar_dtype(x):
    """The dtype a Python scalar gets when it becomes a tensor on its own."""
    c = scalar_category(x)
    return (bool_ if c == 0 else int64 if c == 1 else get_default_dtype() if c == 2
            else get_default_complex_dtype())


def _combine(higher, lower):
    """PyTorch's combine_categories: the dtype of a stronger tier of operands (`higher`)
    with a weaker tier (`lower`) folded in."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._category == 3:
        return higher
    if lower._category == 3:
        return higher.to_complex() if higher._category == 2 else lower
    if higher._category == 2:
        return higher
    if higher is bool_ or lower._category == 2:
        return _PROMOTE[higher, lower]
    return higher


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
    wrapped = None
    if scalars:
        cat = max(scalar_category(s) for s in scalars)
        wrapped = (bool_ if cat == 0 else int64 if cat == 1 else get_default_dtype() if cat == 2
                   else get_default_complex_dtype())
    return _combine(result, _combine(zr, wrapped))


class finfo:
    """PyTorch's torch.finfo: the limits of a floating point dtype (of a complex dtype's
    parts; the default dtype without an argument). bfloat16's are its own (8 significant
    bits), though its values are stored as float32."""

    def __init__(self, type=None):
        d = get_default_dtype() if type is None else type
        if not isinstance(d, dtype) or d._category < 2:
            raise TypeError("dynjit.finfo() requires a floating point input type. Use dynjit.iinfo to "
                            "handle 'dynjit.finfo'")
        d = d.to_real()
        if d is bfloat16:
            self.bits, self.eps, self.max, self.tiny, self.resolution = (
                16, 2.0 ** -7, _b.float(np.float32(3.3895313892515355e+38)), 2.0 ** -126, 0.01)
        else:
            info = np.finfo(d.np)
            self.bits, self.eps, self.max = info.bits, _b.float(info.eps), _b.float(info.max)
            self.tiny, self.resolution = _b.float(info.tiny), 10.0 ** -info.precision
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """PyTorch's torch.iinfo: the limits of an integer dtype."""

    def __init__(self, type):
        if not isinstance(type, dtype) or type._category > 1 or type is bool_:
            raise TypeError("dynjit.iinfo() requires an integer input type. Use dynjit.finfo to handle "
                            "'dynjit.iinfo'")
        info = np.iinfo(type.np)
        self.bits, self.max, self.min, self.dtype = info.bits, _b.int(info.max), _b.int(info.min), type.name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

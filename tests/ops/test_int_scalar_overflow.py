"""Python ints that an integer tensor's dtype cannot hold (issue 14: `int8_tensor + 300`
raised numpy's OverflowError). PyTorch wraps such an int into the dtype where it is an
operand of arithmetic, comparisons and bitwise ops (a "wrapped number" cast unchecked),
raises "value cannot be converted to type int8_t without overflow" where the schema takes
a Scalar (clamp, where, pow's exponent, fill_, threshold), and raises OverflowError for
an int that does not fit 64 bits. The expected values are PyTorch 2.13's, worked out from
that rule (300 is 44 in int8, -1 is 255 in uint8), eagerly, through meta, and compiled."""
import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit.ops.meta import TensorMeta
from dynjit.ops.registry import registry

BACKENDS = ("eager", "aot_eager", "llvm")
I8 = dynjit.int8


def a8():
    return dynjit.tensor([100, -100], dtype=I8)


def wrap8(v):
    """v as int8 arithmetic sees it: its low 8 bits, two's complement."""
    return int(np.array(v, dtype=np.int64).astype(np.int8))


# (name, fn of the int8 tensor [100, -100], expected list)
WRAPPING = [
    ("add", lambda a: a + 300, [-112, -56]),
    ("sub", lambda a: a - 300, [56, 112]),
    ("rsub", lambda a: 300 - a, [-56, -112]),
    ("radd", lambda a: 300 + a, [-112, -56]),
    ("mul", lambda a: a * 300, [48, -48]),
    ("sub_1000", lambda a: a - 1000, [124, -76]),
    ("add_2**40", lambda a: a + 2 ** 40, [100, -100]),          # the low bits of 2**40 are 0
    ("add_2**63", lambda a: a + 2 ** 63, [100, -100]),
    ("floordiv", lambda a: a // 300, [2, -3]),
    ("div_trunc", lambda a: dynjit.div(a, 300, rounding_mode="trunc"), [2, -2]),
    ("remainder", lambda a: a % 300, [12, 32]),
    ("fmod", lambda a: dynjit.fmod(a, 300), [12, -12]),
    ("eq", lambda a: a == 300, [False, False]),
    ("eq_356", lambda a: a == 356, [True, False]),                # 356 wraps to 100
    ("ne", lambda a: a != 300, [True, True]),
    ("lt", lambda a: a < 300, [False, True]),                     # compared with 44
    ("le", lambda a: a <= 300, [False, True]),
    ("gt", lambda a: a > 300, [True, False]),
    ("ge", lambda a: a >= 300, [True, False]),
    ("bitwise_and", lambda a: a & 300, [36, 12]),
    ("bitwise_or", lambda a: a | 300, [108, -68]),
    ("bitwise_xor", lambda a: a ^ 300, [72, -80]),
    ("add_", lambda a: a.clone().add_(300), [-112, -56]),
    ("mul_", lambda a: a.clone().mul_(300), [48, -48]),
    ("sub_", lambda a: a.clone().sub_(300), [56, 112]),
    ("true_div", lambda a: (a / 300 * 300).round(), [100.0, -100.0]),    # float: 300 stays 300
]


@pytest.mark.parametrize("name,fn,expected", WRAPPING, ids=[w[0] for w in WRAPPING])
def test_an_operand_wraps_into_the_integer_dtype(name, fn, expected):
    out = fn(a8())
    assert out.tolist() == expected
    if out.dtype is not dynjit.bool and not out.dtype.is_floating_point:
        assert out.dtype is I8
    assert wrap8(300) == 44 and wrap8(356) == 100


def test_unsigned_and_wider_dtypes_wrap_too():
    u = dynjit.tensor([200, 5], dtype=dynjit.uint8)
    assert (u + 300).tolist() == [244, 49]
    assert (u + (-1)).tolist() == [199, 4]
    assert (u > -1).tolist() == [False, False]            # -1 is 255
    assert (dynjit.tensor([1], dtype=dynjit.int32) + 2 ** 40).tolist() == [1]
    assert (dynjit.tensor([1]) + 2 ** 63).tolist() == [1 - 2 ** 63]
    assert (dynjit.tensor([1]) + (2 ** 64 - 1)).tolist() == [0]
    assert (dynjit.tensor([True]) + 300).tolist() == [301]     # bool promotes to int64
    assert (dynjit.tensor([1.0]) + 2 ** 63).tolist() == [float(2 ** 63)]


CHECKED = [
    ("pow", lambda a: a ** 300),
    ("clamp", lambda a: a.clamp(-300, 300)),
    ("clamp_max", lambda a: a.clamp(max=300)),
    ("where_other", lambda a: dynjit.where(a > 0, a, 300)),
    ("where_self", lambda a: dynjit.where(a > 0, 300, a)),
    ("masked_fill", lambda a: a.masked_fill(a > 0, 300)),
    ("fill_", lambda a: a.clone().fill_(300)),
    ("fill_float", lambda a: a.clone().fill_(1e10)),
    ("fill_127.9", lambda a: a.clone().fill_(127.9)),
    ("fill_nan", lambda a: a.clone().fill_(float("nan"))),
    ("full", lambda a: dynjit.full((2,), 300, dtype=I8)),
    ("add_alpha", lambda a: a.add(1, alpha=300)),
    ("addcmul_value", lambda a: dynjit.addcmul(a, a, a, value=300)),
    ("threshold", lambda a: F.threshold(a, 300, 5)),
    ("threshold_value", lambda a: F.threshold(a, 3, 500)),
    ("setitem", lambda a: a.clone().__setitem__(0, 300)),
]


@pytest.mark.parametrize("name,fn", CHECKED, ids=[c[0] for c in CHECKED])
def test_a_scalar_argument_is_converted_checked(name, fn):
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8(_t)? without overflow"):
        fn(a8())


def test_checked_conversions_that_succeed():
    assert dynjit.tensor([1], dtype=dynjit.uint8).fill_(-255).tolist() == [1]   # unsigned: -255..255
    assert dynjit.tensor([1], dtype=I8).fill_(2.7).tolist() == [2]
    assert dynjit.tensor([1], dtype=dynjit.float16).fill_(1e6).tolist() == [float("inf")]
    with pytest.raises(RuntimeError, match="uint8_t without overflow"):
        dynjit.tensor([1], dtype=dynjit.uint8).fill_(-256)
    with pytest.raises(RuntimeError, match="type int without overflow"):          # PyTorch's name for int32
        dynjit.tensor([1], dtype=dynjit.int32).fill_(2 ** 31)
    with pytest.raises(RuntimeError, match="int16_t without overflow"):
        dynjit.tensor([1], dtype=dynjit.int16).clamp(max=40000)


@pytest.mark.parametrize("fn,message", [
    (lambda: a8() + 2 ** 64, "int too big to convert"),
    (lambda: dynjit.tensor([1.0]) + 2 ** 64, "int too big to convert"),
    (lambda: dynjit.tensor([1.0]) * 10 ** 20, "int too big to convert"),
    (lambda: a8() + (-2 ** 63 - 1), "can't convert negative int to unsigned"),
], ids=["int8", "float", "float-mul", "negative"])
def test_an_int_beyond_64_bits_is_an_overflow_error(fn, message):
    with pytest.raises(OverflowError, match=message):
        fn()


def test_meta_agrees_with_eager():
    m = TensorMeta((2,), I8)
    assert registry["add"].meta([m, 300]) == ((2,), I8)
    assert registry["lt"].meta([m, 300]) == ((2,), dynjit.bool)
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        registry["clamp"].meta([m, None, 300])
    with pytest.raises(OverflowError, match="int too big to convert"):
        registry["add"].meta([m, 2 ** 64])


def _arith(a):
    return a + 300, a < 300, a * 300, a // 300, a == 356, (a + 1) > -1


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_matches_eager(backend):
    for make in (a8, lambda: dynjit.tensor([200, 5], dtype=dynjit.uint8)):
        expected = [t.tolist() for t in _arith(make())]
        compiled = dynjit.compile(_arith, backend=backend)
        for _ in range(2):                          # the first call and the cached graph
            assert [t.tolist() for t in compiled(make())] == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_checked_conversion_raises_as_eager(backend):
    def clamp(a):
        return a.clamp(max=300) + 1
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        dynjit.compile(clamp, backend=backend)(a8())


def _int_pow(a, b):
    return a ** b


@pytest.mark.parametrize("backend", (None,) + BACKENDS)
def test_integer_pow_with_negative_exponents_is_pytorchs(backend):
    # numpy refuses negative integer powers; PyTorch gives 1 for a base of 1, +-1 for -1, else 0
    fn = _int_pow if backend is None else dynjit.compile(_int_pow, backend=backend)
    base, exponent = dynjit.tensor([2, 1, -1, 0, -1, 3]), dynjit.tensor([-1, -2, -3, -1, -2, 2])
    assert fn(base, exponent).tolist() == [0, 1, -1, 0, 1, 9]
    assert fn(dynjit.tensor([2, 1, -1], dtype=I8), dynjit.tensor([-1, -2, -3], dtype=I8)).tolist() == [0, 1, -1]
    assert (300 ** a8()).tolist() == [0, 0]         # 44 ** 100 and 44 ** -100 in int8
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        dynjit.tensor([2]) ** -1


def test_the_checked_operands_are_declared_at_registration():
    declared = {n: sorted(op.scalar_args) for n, op in registry.items() if op.scalar_args}
    assert declared == {"pow": ["exponent"], "lerp": ["weight"], "clamp": ["max", "min"],
                        "where": ["other", "self"], "masked_fill": ["value"]}

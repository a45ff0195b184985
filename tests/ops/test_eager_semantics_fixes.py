"""PyTorch's results and errors where dynjit used to give a silent wrong answer (the
"Known problems" of docs/porting.md): integer division by zero, the dtype of Python
scalars that meet no tensor, ints that do not fit the tensor's dtype, and random
distributions asked for an integer dtype. Each is checked eagerly, through the op's
meta function, and compiled on every backend (first call and a cached graph's call).

The expectations are written out from PyTorch's documented rules (wrapped numbers,
checked conversions), not taken from PyTorch at test time."""
import math

import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F
import dynjit.nn.init as init
from dynjit.ops.meta import TensorMeta
from dynjit.ops.registry import registry

BACKENDS = ("eager", "aot_eager", "llvm")
INT_DTYPES = (dynjit.uint8, dynjit.int8, dynjit.int16, dynjit.int32, dynjit.int64)
ZERO_DIVISION = "ZeroDivisionError"

# -- 1. integer division, remainder and fmod by zero ------------------------------------

# (name, fn, the Python-int reference for a non-zero divisor)
DIVISIONS = [
    ("floordiv_operator", lambda a, b: a // b, lambda x, y: x // y),
    ("remainder_operator", lambda a, b: a % b, lambda x, y: x % y),
    ("floor_divide", dynjit.floor_divide, lambda x, y: x // y),
    ("remainder", dynjit.remainder, lambda x, y: x % y),
    ("fmod", dynjit.fmod, lambda x, y: int(math.fmod(x, y))),
    ("div_floor", lambda a, b: dynjit.div(a, b, rounding_mode="floor"), lambda x, y: x // y),
    ("div_trunc", lambda a, b: dynjit.div(a, b, rounding_mode="trunc"), lambda x, y: int(x / y)),
    ("floor_divide_", lambda a, b: a.clone().floor_divide_(b), lambda x, y: x // y),
    ("remainder_", lambda a, b: a.clone().remainder_(b), lambda x, y: x % y),
    ("fmod_", lambda a, b: a.clone().fmod_(b), lambda x, y: int(math.fmod(x, y))),
    ("div_floor_", lambda a, b: a.clone().div_(b, rounding_mode="floor"), lambda x, y: x // y),
    ("div_trunc_", lambda a, b: a.clone().div_(b, rounding_mode="trunc"), lambda x, y: int(x / y)),
]
DIVISION_IDS = [d[0] for d in DIVISIONS]


@pytest.mark.parametrize("name,fn,ref", DIVISIONS, ids=DIVISION_IDS)
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
def test_integer_division_by_a_zero_tensor_element_raises(name, fn, ref, dtype):
    a = dynjit.tensor([7, 5, 3], dtype=dtype)
    with pytest.raises(RuntimeError, match=ZERO_DIVISION):
        fn(a, dynjit.tensor([2, 0, 1], dtype=dtype))      # one zero among non-zeros
    with pytest.raises(RuntimeError, match=ZERO_DIVISION):
        fn(a, dynjit.tensor(0, dtype=dtype))              # a 0-d divisor, broadcast


@pytest.mark.parametrize("name,fn,ref", DIVISIONS, ids=DIVISION_IDS)
@pytest.mark.parametrize("zero", [0, False], ids=["int", "bool"])
def test_integer_division_by_a_zero_scalar_raises(name, fn, ref, zero):
    with pytest.raises(RuntimeError, match=ZERO_DIVISION):
        fn(dynjit.tensor([7, -5]), zero)


@pytest.mark.parametrize("name,fn,ref", DIVISIONS, ids=DIVISION_IDS)
def test_integer_division_by_nonzero_divisors_is_exact(name, fn, ref):
    xs, ys = [7, -7, 7, -7, 0, 9], [2, 2, -2, -2, 3, 3]
    out = fn(dynjit.tensor(xs), dynjit.tensor(ys))
    assert out.dtype is dynjit.int64
    assert out.tolist() == [ref(x, y) for x, y in zip(xs, ys)]


@pytest.mark.parametrize("fn", [lambda t: 3 // t, lambda t: 3 % t], ids=["rfloordiv", "rmod"])
def test_scalar_divided_by_a_tensor_holding_zero_raises(fn):
    with pytest.raises(RuntimeError, match=ZERO_DIVISION):
        fn(dynjit.tensor([1, 0]))
    assert fn(dynjit.tensor([2, -2])).tolist() == [fn(2), fn(-2)]      # Python's int semantics


@pytest.mark.parametrize("name,fn,ref", DIVISIONS, ids=DIVISION_IDS)
def test_float_division_by_zero_stays_ieee(name, fn, ref):
    # a float operand (tensor or scalar) makes it a float division: inf / nan, no error
    with np.errstate(all="ignore"):
        x = np.array([3.0, -3.0, 0.0], dtype=np.float32)
        if "floor" in name or "floordiv" in name:
            expected = np.floor(x / np.float32(0))
        elif "trunc" in name:
            expected = np.trunc(x / np.float32(0))
        else:
            expected = np.full(3, np.nan, dtype=np.float32)     # x mod 0 and fmod(x, 0)
    for divisor in (dynjit.tensor([0.0, 0.0, 0.0]), 0.0):
        out = fn(dynjit.tensor([3.0, -3.0, 0.0]), divisor)
        assert out.dtype is dynjit.float32
        np.testing.assert_array_equal(out.numpy(), expected)
    if not name.endswith("_"):       # an int tensor divided by a float zero is a float result
        out = fn(dynjit.tensor([3, -3, 0]), 0.0)
        assert out.dtype is dynjit.float32
        np.testing.assert_array_equal(out.numpy(), expected)


def test_true_division_of_integers_by_zero_is_inf():
    out = dynjit.tensor([3, -3]) / dynjit.tensor([0, 0])
    assert out.dtype is dynjit.float32 and out.tolist() == [math.inf, -math.inf]


@pytest.mark.parametrize("fn,kernel", [
    (lambda a, b: a // b, "div_floor_cpu"),
    (lambda a, b: a % b, "remainder_cpu"),
    (dynjit.fmod, "fmod_cpu"),
    (lambda a, b: dynjit.div(a, b, rounding_mode="floor"), "div_floor_cpu"),
    (lambda a, b: dynjit.div(a, b, rounding_mode="trunc"), "div_trunc_cpu"),
], ids=["floordiv", "mod", "fmod", "div_floor", "div_trunc"])
def test_integer_division_of_bools_is_not_implemented(fn, kernel):
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Bool\''):
        fn(dynjit.tensor([True, False]), dynjit.tensor([True, True]))


@pytest.mark.parametrize("op,args,message", [
    ("floor_divide", (True, True), "div_floor_cpu"),
    ("remainder", (True, True), "remainder_cpu"),
    ("fmod", (True, True), "fmod_cpu"),
    ("div_mode", (True, True, "trunc"), "div_trunc_cpu"),
])
def test_division_meta_rejects_bool_as_the_kernel_does(op, args, message):
    b = TensorMeta.of(dynjit.tensor([True]))
    metas = [b if a is True else a for a in args]
    with pytest.raises(NotImplementedError, match=message):
        registry[op].meta(metas)


@pytest.mark.parametrize("op,args", [
    ("floor_divide", (dynjit.tensor([1], dtype=dynjit.int8), 2)),
    ("floor_divide", (dynjit.tensor([1], dtype=dynjit.int8), 2.5)),
    ("remainder", (dynjit.tensor([1]), dynjit.tensor(2.0, dtype=dynjit.float64))),
    ("fmod", (dynjit.tensor([1], dtype=dynjit.int32), dynjit.tensor([2], dtype=dynjit.int16))),
    ("div_mode", (dynjit.tensor([1]), 2, "trunc")),
    ("div_mode", (dynjit.tensor([1.0], dtype=dynjit.float16), 2, "floor")),
])
def test_division_meta_dtype_matches_eager(op, args):
    metas = [TensorMeta.of(a) if isinstance(a, dynjit.Tensor) else a for a in args]
    _, dtype = registry[op].meta(metas)
    assert dtype is registry[op](*args).dtype


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,fn,ref", DIVISIONS[:7], ids=DIVISION_IDS[:7])
def test_compiled_integer_division_by_zero_raises_when_traced(backend, name, fn, ref):
    compiled = dynjit.compile(fn, backend=backend)
    with pytest.raises(RuntimeError, match=ZERO_DIVISION):
        compiled(dynjit.tensor([7, 5]), dynjit.tensor([2, 0]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,fn,ref", DIVISIONS[:7], ids=DIVISION_IDS[:7])
def test_compiled_integer_division_by_zero_raises_on_a_cached_graph(backend, name, fn, ref):
    compiled = dynjit.compile(fn, backend=backend)
    a, ok = dynjit.tensor([7, -5]), dynjit.tensor([2, 3])
    assert compiled(a, ok).tolist() == fn(a, ok).tolist()
    with pytest.raises(RuntimeError, match=ZERO_DIVISION):
        compiled(a, dynjit.tensor([2, 0]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_float_and_bool_division_match_eager(backend):
    def f(a, b):
        return a // b, a % b, dynjit.fmod(a, b)
    compiled = dynjit.compile(f, backend=backend)
    a, b = dynjit.tensor([3.0, -3.0]), dynjit.tensor([0.0, 2.0])
    for got, want in zip(compiled(a, b), f(a, b)):
        assert got.dtype is want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(NotImplementedError, match="div_floor_cpu"):
        dynjit.compile(lambda a, b: a // b, backend=backend)(dynjit.tensor([True]), dynjit.tensor([True]))


# -- 2. Python scalars promote as wrapped numbers ---------------------------------------

COND = [True, False]
I32 = dict(dtype=dynjit.int32)
# (x, y, expected dtype) for where(cond, x, y); a tensor is ("t", values, dtype),
# a 0-d tensor ("0", value, dtype). Rules: Python scalars on their own give bool / int64 /
# the default float dtype by their highest category; a tensor of the same or higher
# category keeps its dtype; a 0-d tensor yields to a dimensioned one of its category.
WHERE_CASES = [
    (1.0, 0, dynjit.float32),
    (1, 0, dynjit.int64),
    (1.0, 0.0, dynjit.float32),
    (True, False, dynjit.bool),
    (True, 0, dynjit.int64),
    (True, 0.5, dynjit.float32),
    (("t", [1, 2], dynjit.int32), 0.5, dynjit.float32),
    (("t", [1, 2], dynjit.int32), 2, dynjit.int32),
    (("0", 1, dynjit.int32), 2, dynjit.int32),
    (("0", 1, dynjit.int32), 2.5, dynjit.float32),
    (("0", 1.0, dynjit.float64), 2, dynjit.float64),
    (("0", 1.0, dynjit.float64), ("t", [1, 2], dynjit.float16), dynjit.float16),
    (("0", 1.0, dynjit.float64), ("t", [1, 2], dynjit.int32), dynjit.float64),
    (1, ("t", [1.0, 2.0], dynjit.float16), dynjit.float16),
    (("t", [1, 2], dynjit.int8), ("t", [1, 2], dynjit.int16), dynjit.int16),
]


def _make(spec):
    if isinstance(spec, tuple):
        kind, value, dtype = spec
        return dynjit.tensor(value, dtype=dtype)
    return spec


def _where_expected(x, y, dtype):
    vals = [np.broadcast_to(np.asarray(v if not isinstance(v, tuple) else v[1], dtype=np.float64), (2,))
            for v in (x, y)]
    return np.where(np.array(COND), vals[0], vals[1]).astype(dtype.np)


@pytest.mark.parametrize("x,y,dtype", WHERE_CASES)
def test_where_promotes_scalars_as_wrapped_numbers(x, y, dtype):
    out = dynjit.where(dynjit.tensor(COND), _make(x), _make(y))
    assert out.dtype is dtype
    np.testing.assert_array_equal(out.numpy(), _where_expected(x, y, dtype))


@pytest.mark.parametrize("x,y,dtype", WHERE_CASES)
def test_where_meta_dtype_matches_eager(x, y, dtype):
    args = [TensorMeta.of(dynjit.tensor(COND))] + [
        TensorMeta.of(_make(v)) if isinstance(v, tuple) else v for v in (x, y)]
    assert registry["where"].meta(args)[1] is dtype


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("x,y,dtype", WHERE_CASES[:6])
def test_compiled_where_of_scalars_matches_eager(backend, x, y, dtype):
    def f(c):
        return dynjit.where(c, x, y)
    cond = dynjit.tensor(COND)
    for c in (cond, dynjit.tensor([False, True])):       # the second call runs the cached graph
        got, want = dynjit.compile(f, backend=backend)(c), f(c)
        assert got.dtype is want.dtype is dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_where_with_float64_default_dtype_follows_the_default():
    previous = dynjit.get_default_dtype()
    dynjit.set_default_dtype(dynjit.float64)
    try:
        assert dynjit.where(dynjit.tensor(COND), 1.0, 0).dtype is dynjit.float64
    finally:
        dynjit.set_default_dtype(previous)


@pytest.mark.parametrize("fn,dtype", [
    (lambda t: dynjit.clamp(t, 0, 3), dynjit.int64),
    (lambda t: dynjit.clamp(t, 0.5, 3), dynjit.float32),
    (lambda t: dynjit.clamp(t.double(), 0, 3), dynjit.float64),
    (lambda t: dynjit.full_like(t, 2.5), dynjit.int64),
    (lambda t: dynjit.full((2,), 1.5), dynjit.float32),
    (lambda t: dynjit.full((2,), True), dynjit.bool),
    (lambda t: dynjit.lerp(t.float(), t.float() + 2, 0.5), dynjit.float32),
    (lambda t: dynjit.addcmul(t, t, t, value=2), dynjit.int64),
])
def test_other_scalar_taking_ops_follow_result_type(fn, dtype):
    assert fn(dynjit.tensor([1, 5])).dtype is dtype


# -- 3. ints that do not fit ------------------------------------------------------------

@pytest.mark.parametrize("data", [
    [2 ** 63], [-2 ** 63 - 1], 2 ** 63, [2 ** 64], [2 ** 100], [1, 2 ** 63], [[1], [2 ** 63]],
    [True, 2 ** 63],
], ids=repr)
def test_int_beyond_int64_is_an_overflow_error(data):
    for make in (dynjit.tensor, dynjit.as_tensor):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            make(data)
    for dtype in INT_DTYPES:
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            dynjit.tensor(data, dtype=dtype)


def test_int64_limits_and_big_ints_as_floats_or_bools():
    assert dynjit.tensor([-2 ** 63, 2 ** 63 - 1]).tolist() == [-2 ** 63, 2 ** 63 - 1]
    # a float in the data makes it a float tensor; a float or bool dtype converts any int
    assert dynjit.tensor([1.5, 2 ** 63]).tolist() == [1.5, float(2 ** 63)]
    assert dynjit.tensor([[2 ** 64], [1.5]]).tolist() == [[float(2 ** 64)], [1.5]]
    assert dynjit.tensor([2 ** 63], dtype=dynjit.float64).tolist() == [float(2 ** 63)]
    assert dynjit.tensor([[1], [2 ** 64]], dtype=dynjit.float32).dtype is dynjit.float32
    assert dynjit.tensor([2 ** 63, 0], dtype=dynjit.bool).tolist() == [True, False]
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        dynjit.tensor([1.5, 2 ** 63], dtype=dynjit.int64)


@pytest.mark.parametrize("data,dtype", [
    ([300], dynjit.int8), ([128], dynjit.int8), ([-129], dynjit.int8), ([256], dynjit.uint8),
    ([-256], dynjit.uint8), ([2 ** 40], dynjit.int32), ([2 ** 15], dynjit.int16),
    ([2 ** 63 - 1], dynjit.uint8), ([1e10], dynjit.int32), ([1e20], dynjit.int64),
    ([float("nan")], dynjit.int64), ([float("inf")], dynjit.int8), ([-1.5], dynjit.uint8),
    ([-0.5], dynjit.uint8), ([255.9], dynjit.uint8), ([127.5], dynjit.int8), ([9.3e18], dynjit.int64),
    ([1, [2, 300]][1:], dynjit.int8),
], ids=lambda v: repr(v))
def test_value_outside_an_integer_dtype_is_an_error(data, dtype):
    for make in (dynjit.tensor, dynjit.as_tensor):
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {dtype.name} "
                                               "without overflow"):
            make(data, dtype=dtype)


@pytest.mark.parametrize("data,dtype,expected", [
    ([-1, -255], dynjit.uint8, [255, 1]),        # negative ints wrap into uint8 (two's complement)
    ([127, -128], dynjit.int8, [127, -128]),
    ([3.7, -3.7], dynjit.int8, [3, -3]),         # floats are truncated towards zero
    ([3.7, 255.0], dynjit.uint8, [3, 255]),
    ([2, 0, -1], dynjit.bool, [True, False, True]),
    ([True, 2], None, [1, 2]),
    ([70000.0], dynjit.float16, [math.inf]),     # a float overflows to inf, as in PyTorch
    ([1e300], None, [math.inf]),
], ids=repr)
def test_values_that_convert(data, dtype, expected):
    out = dynjit.tensor(data, dtype=dtype)
    assert out.dtype is (dtype or (dynjit.float32 if any(isinstance(v, float) for v in data) else dynjit.int64))
    assert out.tolist() == expected


@pytest.mark.parametrize("make,dtype_name", [
    (lambda: dynjit.full((2,), 2 ** 63), "int64_t"),
    (lambda: dynjit.full((2,), 300, dtype=dynjit.int8), "int8_t"),
    (lambda: dynjit.full((1,), float("nan"), dtype=dynjit.int64), "int64_t"),
    (lambda: dynjit.full((1,), 1e40, dtype=dynjit.float32), "float"),
    (lambda: dynjit.full_like(dynjit.tensor([1]), 2 ** 63), "int64_t"),
    (lambda: dynjit.arange(2 ** 63 - 2, 2 ** 63 + 1), "int64_t"),
    (lambda: dynjit.arange(0, 2 ** 64, 2 ** 62), "int64_t"),
], ids=["full-big", "full-int8", "full-nan", "full-float", "full_like", "arange", "arange-step"])
def test_factories_reject_fill_values_and_bounds_outside_the_dtype(make, dtype_name):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {dtype_name} without overflow"):
        make()


def test_factory_values_that_convert():
    assert dynjit.full((2,), 2.5, dtype=dynjit.int64).tolist() == [2, 2]          # truncated
    assert dynjit.full((2,), -1, dtype=dynjit.uint8).tolist() == [255, 255]       # wraps, as in PyTorch
    assert dynjit.arange(-2 ** 63, -2 ** 63 + 2).tolist() == [-2 ** 63, -2 ** 63 + 1]
    big = dynjit.arange(0.0, 2.0 ** 64, 2.0 ** 63)
    assert big.dtype is dynjit.float32 and big.tolist() == [0.0, 2.0 ** 63]
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        registry["full"].meta([(2,), 300, dynjit.int8])


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_tensor_construction_errors_match_eager(backend):
    def big(x):
        return x + dynjit.tensor([2 ** 63])

    def small(x):
        return x + dynjit.tensor([300], dtype=dynjit.int8)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        dynjit.compile(big, backend=backend)(dynjit.tensor([1]))
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without overflow"):
        dynjit.compile(small, backend=backend)(dynjit.tensor([1]))


# -- 4. continuous random distributions need a floating point dtype ---------------------

UNIFORM = "\"check_uniform_bounds\" not implemented for '{}'"
NORMAL = "\"normal_kernel_cpu\" not implemented for '{}'"
TORCH_NAMES = {dynjit.bool: "Bool", dynjit.uint8: "Byte", dynjit.int8: "Char", dynjit.int16: "Short",
               dynjit.int32: "Int", dynjit.int64: "Long"}
NON_FLOAT = list(TORCH_NAMES)


@pytest.mark.parametrize("dtype", NON_FLOAT, ids=lambda d: d.name)
def test_random_factories_with_a_non_float_dtype_raise(dtype):
    name = TORCH_NAMES[dtype]
    x = dynjit.zeros(2, dtype=dtype)
    cases = [
        (lambda: dynjit.rand(2, dtype=dtype), UNIFORM),
        (lambda: dynjit.randn(2, dtype=dtype), NORMAL),
        (lambda: dynjit.rand_like(x), UNIFORM),
        (lambda: dynjit.randn_like(x), NORMAL),
        (lambda: dynjit.rand_like(dynjit.zeros(2), dtype=dtype), UNIFORM),
        (lambda: dynjit.randn_like(dynjit.zeros(2), dtype=dtype), NORMAL),
        (lambda: init.uniform_(x), UNIFORM),
        (lambda: init.uniform_(x, generator=dynjit.Generator(0)), UNIFORM),
        (lambda: init.normal_(x), NORMAL),
        (lambda: init.normal_(x, generator=dynjit.Generator(0)), NORMAL),
        (lambda: init.trunc_normal_(x), NORMAL),
        (lambda: init.xavier_uniform_(dynjit.zeros(2, 2, dtype=dtype)), UNIFORM),
        (lambda: init.kaiming_normal_(dynjit.zeros(2, 2, dtype=dtype)), NORMAL),
        (lambda: init.orthogonal_(dynjit.zeros(2, 2, dtype=dtype)), NORMAL),
    ]
    for make, message in cases:
        with pytest.raises(NotImplementedError, match=message.format(name)):
            make()
    for op, message in (("rand", UNIFORM), ("randn", NORMAL)):
        with pytest.raises(NotImplementedError, match=message.format(name)):
            registry[op].meta([(2,), dtype])


@pytest.mark.parametrize("dtype", NON_FLOAT, ids=lambda d: d.name)
def test_bernoulli_reads_probabilities_from_float_tensors_only(dtype):
    x = dynjit.tensor([0, 1], dtype=dtype)
    with pytest.raises(NotImplementedError,
                       match=f"\"bernoulli_tensor_cpu_p_\" not implemented for '{TORCH_NAMES[dtype]}'"):
        dynjit.bernoulli(x)
    with pytest.raises(NotImplementedError, match="bernoulli_tensor_cpu_p_"):
        x.bernoulli()
    with pytest.raises(NotImplementedError, match="bernoulli_tensor_cpu_p_"):
        registry["bernoulli"].meta([TensorMeta.of(x), None])
    # with p given, the tensor only gives the shape and dtype
    out = dynjit.bernoulli(x, p=1.0)
    assert out.dtype is dtype and out.tolist() == dynjit.tensor([1, 1], dtype=dtype).tolist()


@pytest.mark.parametrize("dtype", NON_FLOAT, ids=lambda d: d.name)
def test_dropout_of_a_non_float_tensor_raises_while_training(dtype):
    x = dynjit.tensor([1, 0], dtype=dtype)
    with pytest.raises(RuntimeError, match=f"result type Float can't be cast to the desired output "
                                           f"type {TORCH_NAMES[dtype]}"):
        F.dropout(x, 0.5)
    assert F.dropout(x, 0.5, training=False).tolist() == x.tolist()
    assert F.dropout(x, 0.0).tolist() == x.tolist()
    assert F.dropout(x, 1.0).tolist() == dynjit.zeros(2, dtype=dtype).tolist()


def test_integer_valued_random_factories_take_any_dtype():
    dynjit.manual_seed(0)
    for dtype in (dynjit.float32, dynjit.float64, dynjit.int8, dynjit.bool):
        out = dynjit.randint(0, 2, (50,), dtype=dtype)
        assert out.dtype is dtype
        assert set(out.tolist()) <= {0, 1}
    out = dynjit.randperm(6, dtype=dynjit.float32)
    assert out.dtype is dynjit.float32 and sorted(out.tolist()) == [0, 1, 2, 3, 4, 5]
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for 'Bool'"):
        dynjit.randperm(3, dtype=dynjit.bool)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,message", [
    (lambda x: dynjit.randn(2, dtype=dynjit.int64) + x, NORMAL.format("Long")),
    (lambda x: dynjit.rand(2, dtype=dynjit.int32) + x, UNIFORM.format("Int")),
    (lambda x: dynjit.rand_like(x), UNIFORM.format("Long")),
    (lambda x: dynjit.bernoulli(x), "bernoulli_tensor_cpu_p_"),
    (lambda x: F.dropout(x, 0.5), "result type Float can't be cast to the desired output type Long"),
], ids=["randn", "rand", "rand_like", "bernoulli", "dropout"])
def test_compiled_random_with_integer_dtype_raises_as_eager(backend, fn, message):
    with pytest.raises((NotImplementedError, RuntimeError), match=message):
        fn(dynjit.tensor([1, 0]))
    with pytest.raises((NotImplementedError, RuntimeError), match=message):
        dynjit.compile(fn, backend=backend)(dynjit.tensor([1, 0]))


# -- ops that PyTorch does not implement for bool operands ------------------------------

SUB_WITH_BOOL = "Subtraction, the `-` operator, with a bool tensor is not supported"
SUB_TWO_BOOLS = "Subtraction, the `-` operator, with two bool tensors is not supported"


@pytest.mark.parametrize("fn,message", [
    (lambda b: dynjit.tensor([1, 2]) - b, SUB_WITH_BOOL),
    (lambda b: b - dynjit.tensor([1.0]), SUB_WITH_BOOL),
    (lambda b: dynjit.tensor([1.0]) - True, SUB_WITH_BOOL),
    (lambda b: 1 - b, SUB_WITH_BOOL),
    (lambda b: b - 1, SUB_WITH_BOOL),
    (lambda b: dynjit.sub(dynjit.tensor([3]), b, alpha=2), SUB_WITH_BOOL),
    (lambda b: dynjit.tensor([3]).sub_(b), SUB_WITH_BOOL),
    (lambda b: b - b, SUB_TWO_BOOLS),
], ids=["int-bool", "bool-float", "float-pybool", "rsub", "bool-int", "alpha", "inplace", "bool-bool"])
def test_subtraction_with_a_bool_operand_is_an_error(fn, message):
    with pytest.raises(RuntimeError, match=message):
        fn(dynjit.tensor([True, False]))


def test_sub_meta_rejects_a_bool_operand():
    meta = TensorMeta.of(dynjit.tensor([True]))
    with pytest.raises(RuntimeError, match=SUB_WITH_BOOL):
        registry["sub"].meta([TensorMeta.of(dynjit.tensor([1])), meta])
    assert registry["sub"].meta([TensorMeta.of(dynjit.tensor([1])), 2])[1] is dynjit.int64


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_sub_with_a_bool_operand_raises(backend):
    with pytest.raises(RuntimeError, match=SUB_WITH_BOOL):
        dynjit.compile(lambda a, b: a - b, backend=backend)(dynjit.tensor([1]), dynjit.tensor([True]))


def test_pow_and_addcmul_of_bools_are_not_implemented():
    b = dynjit.tensor([True, False])
    for fn in (lambda: b ** b, lambda: dynjit.pow(True, b), lambda: dynjit.pow(b, dynjit.tensor(True))):
        with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
            fn()
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        registry["pow"].meta([TensorMeta.of(b), TensorMeta.of(b)])
    # a Python bool exponent, or an int operand, is a real power
    assert (b ** True).tolist() == [True, False] and (b ** True).dtype is dynjit.bool
    assert dynjit.pow(2, b).tolist() == [2, 1]
    with pytest.raises(NotImplementedError, match="\"addcmul_cpu_out\" not implemented for 'Bool'"):
        dynjit.addcmul(b, b, b)
    assert dynjit.addcmul(dynjit.tensor([1, 1]), b, b).tolist() == [2, 1]


@pytest.mark.parametrize("a,b,name", [
    (dynjit.tensor([1, 2]), dynjit.tensor([3, 4]), "Long"),
    (dynjit.tensor([1, 2], dtype=dynjit.int32), dynjit.tensor([3], dtype=dynjit.int8), "Int"),
    (dynjit.tensor([True]), dynjit.tensor([False]), "Bool"),
])
def test_logaddexp_of_integers_is_not_implemented(a, b, name):
    with pytest.raises(NotImplementedError, match=f"\"logaddexp_cpu\" not implemented for '{name}'"):
        dynjit.logaddexp(a, b)
    with pytest.raises(NotImplementedError, match="logaddexp_cpu"):
        registry["logaddexp"].meta([TensorMeta.of(a), TensorMeta.of(b)])
    # one floating operand makes it a float computation
    out = dynjit.logaddexp(a, b.float())
    expected = np.logaddexp(a.numpy().astype(np.float32), b.numpy().astype(np.float32))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)

"""Adversarial programs for what compiled code may specialize on: Python
scalars equal under == but different in behaviour (-0.0 and 0.0, True and 1,
nan), tensors reached through globals and closures that change in place
between calls, deep recursion and long unrolled loops."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["negative_zero_float"] = '''
import math
import dynjit
def main(x, k):
    return x * math.copysign(1.0, k), str(k), 1 / k if k else "zero"
def make_args(call):
    return dynjit.ones(2), [0.0, 0.0, -0.0, 0.0][call]
'''

PROGRAMS["true_vs_one"] = '''
import dynjit
def main(x, k):
    return x * k, type(k).__name__, repr(k), k + 1
def make_args(call):
    return dynjit.ones(2), [1, 1, True, 1.0][call]
'''

PROGRAMS["nan_scalar_argument"] = '''
import math
import dynjit
def main(x, k):
    if k != k:
        return x * 0, "nan"
    return x * k, math.isnan(k)
def make_args(call):
    return dynjit.ones(2), [float("nan"), float("nan"), 2.0, float("nan")][call]
'''

PROGRAMS["int_vs_float_equal_value"] = '''
import dynjit
def main(x, k):
    return x * k, k / 2, k // 2, type(k).__name__, [0] * int(k)
def make_args(call):
    return dynjit.ones(2), [2, 2, 2.0, 3][call]
'''

PROGRAMS["global_tensor_mutated_between_calls"] = '''
import dynjit
W = dynjit.ones(2)
def main(x):
    return x * W
def make_args(call):
    W.add_(call)
    return (dynjit.ones(2),)
'''

PROGRAMS["global_tensor_rebound_between_calls"] = '''
import dynjit
W = dynjit.ones(2)
def main(x):
    return x * W
def make_args(call):
    global W
    if call >= 2:
        W = dynjit.full((2,), 5.0)
    return (dynjit.ones(2),)
'''

PROGRAMS["closure_tensor_mutated_between_calls"] = '''
import dynjit
def make():
    w = dynjit.ones(2)
    def f(x):
        return x + w
    return f, w
F, WREF = make()
def main(x):
    return F(x)
def make_args(call):
    WREF.mul_(2)
    return (dynjit.ones(2),)
'''

PROGRAMS["module_param_changed_outside"] = '''
import dynjit
import dynjit.nn as nn
dynjit.manual_seed(0)
NET = nn.Linear(2, 2)
def main(x):
    return NET(x)
def make_args(call):
    with dynjit.no_grad():
        NET.weight.add_(call)
        if call == 2:
            NET.bias = None
    return (dynjit.ones(1, 2),)
'''

PROGRAMS["global_list_of_tensors_item_replaced"] = '''
import dynjit
WS = [dynjit.ones(2), dynjit.ones(2) * 2]
def main(x):
    for w in WS:
        x = x * w
    return x
def make_args(call):
    if call == 1:
        WS[0] = dynjit.full((2,), 3.0)
    if call == 2:
        WS[1].fill_(7.0)
    return (dynjit.ones(2),)
'''

PROGRAMS["tensor_attribute_on_object_mutated_inplace"] = '''
import dynjit
class Holder:
    def __init__(self):
        self.t = dynjit.zeros(2)
H = Holder()
def main(x):
    H.t.add_(x)
    return H.t * 2
def make_args(call):
    return (dynjit.ones(2) * (call + 1),)
'''

PROGRAMS["deep_recursion"] = '''
import dynjit
def rec(t, n):
    if n == 0:
        return t
    return rec(t + 1, n - 1)
def main(x, n):
    return rec(x, n)
def make_args(call):
    return dynjit.zeros(2), [25, 25, 30][call]
'''

PROGRAMS["recursion_error_propagates"] = '''
import sys
import dynjit
def forever(t, n):
    return forever(t, n + 1)
def main(x):
    try:
        return forever(x, 0)
    except RecursionError:
        return "recursion", x + 1
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["long_unrolled_loop"] = '''
import dynjit
def main(x, n):
    acc = x
    for i in range(n):
        acc = acc * 0.99 + i * 0.001
    return acc
def make_args(call):
    return dynjit.ones(2), [150, 150, 151][call]
'''

PROGRAMS["parameter_vs_tensor_isinstance"] = '''
import dynjit
import dynjit.nn as nn
def main(t):
    if isinstance(t, nn.Parameter):
        return "param", t * 2
    return "tensor", t * 3
def make_args(call):
    return ([dynjit.ones(2), dynjit.ones(2), nn.Parameter(dynjit.ones(2))][call],)
'''

PROGRAMS["dtype_and_size_args"] = '''
import dynjit
def main(shape, dtype):
    z = dynjit.zeros(shape, dtype=dtype)
    return z, z.dtype == dynjit.float64, z.shape == (2, 3), z.size() == dynjit.Size(shape)
def make_args(call):
    return [(2, 3), (2, 3), (3,)][call], [dynjit.float32, dynjit.float32, dynjit.float64][call]
'''

PROGRAMS["big_python_ints_into_tensors"] = '''
import dynjit
def main(k):
    t = dynjit.tensor([k, 1])
    return t, t.dtype, (t * 2).tolist(), k * 2
def make_args(call):
    return ([2 ** 40, 2 ** 40, 2 ** 62][call],)
'''

PROGRAMS["string_key_guard_similar"] = '''
import dynjit
def main(x, key):
    table = {"a": 1, "b": 2, "ab": 3}
    return x * table.get(key, -1), key * 2
def make_args(call):
    return dynjit.ones(2), ["a", "a", "ab", "b"][call]
'''

@pytest.mark.slow
def test_deep_recursion_120():
    """Inlining 120 nested calls compiles (slowly: compile time grows faster than the depth)."""
    check_program(PROGRAMS["deep_recursion"].replace("[25, 25, 30]", "[100, 100, 120]"), backends=("eager",))


XFAIL = {}

CALLS = {"negative_zero_float": 4, "true_vs_one": 4, "nan_scalar_argument": 4, "int_vs_float_equal_value": 4,
         "string_key_guard_similar": 4}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))

"""How traced code's operators are computed: one table per arity, keyed on the operator and
on what kind of value each operand is. The first row that matches, and whose handler does
not decline (NotImplemented), decides; no row is a graph break."""
import operator
from collections import OrderedDict

from .exc import unimplemented, fold, BreakKind, DataDependent
from .variables import ConstantVariable, TensorVariable, ListVariable, TupleVariable, wrap
from .variables.containers import DictVariable, equal_as_contains
from .variables.functions import BoundMethodVariable, BuiltinMethodVariable
from .variables.tensor import TensorMethodVariable
from .variables.objects import UserObjectVariable, NewObjectVariable, class_attribute
from .variables.symbolic import ARITHMETIC, UNARY_ARITHMETIC, SymNumberVariable

BINARY_OPS = {
    "+": (operator.add, "__add__", "__radd__"), "-": (operator.sub, "__sub__", "__rsub__"),
    "*": (operator.mul, "__mul__", "__rmul__"), "/": (operator.truediv, "__truediv__", "__rtruediv__"),
    "//": (operator.floordiv, "__floordiv__", "__rfloordiv__"), "%": (operator.mod, "__mod__", "__rmod__"),
    "**": (operator.pow, "__pow__", "__rpow__"), "@": (operator.matmul, "__matmul__", "__rmatmul__"),
    "&": (operator.and_, "__and__", "__rand__"), "|": (operator.or_, "__or__", "__ror__"),
    "^": (operator.xor, "__xor__", "__rxor__"), "<<": (operator.lshift, "__lshift__", "__rlshift__"),
    ">>": (operator.rshift, "__rshift__", "__rrshift__"),
    "+=": (operator.iadd, "__iadd__", None), "-=": (operator.isub, "__isub__", None),
    "*=": (operator.imul, "__imul__", None), "/=": (operator.itruediv, "__itruediv__", None),
    "//=": (operator.ifloordiv, "__ifloordiv__", None), "%=": (operator.imod, "__imod__", None),
    "**=": (operator.ipow, "__ipow__", None), "@=": (operator.imatmul, "__imatmul__", None),
    "&=": (operator.iand, "__iand__", None), "|=": (operator.ior, "__ior__", None),
    "^=": (operator.ixor, "__ixor__", None), "<<=": (operator.ilshift, "__ilshift__", None),
    ">>=": (operator.irshift, "__irshift__", None),
    "<": (operator.lt, "__lt__", "__gt__"), "<=": (operator.le, "__le__", "__ge__"),
    ">": (operator.gt, "__gt__", "__lt__"), ">=": (operator.ge, "__ge__", "__le__"),
    "==": (operator.eq, "__eq__", "__eq__"), "!=": (operator.ne, "__ne__", "__ne__"),
}
INPLACE_FALLBACK = {operator.iadd: "+", operator.isub: "-", operator.imul: "*", operator.itruediv: "/",
                    operator.ifloordiv: "//", operator.imod: "%", operator.ipow: "**",
                    operator.imatmul: "@", operator.iand: "&", operator.ior: "|", operator.ixor: "^",
                    operator.ilshift: "<<", operator.irshift: ">>"}
UNARY_DUNDER = {operator.neg: "__neg__", operator.pos: "__pos__", operator.invert: "__invert__",
                operator.abs: "__abs__"}

_SYMBOL_OF = {fn: sym for sym, (fn, _, _) in BINARY_OPS.items()}
ANY_OP = None


# -- operand kinds ---------------------------------------------------------------------------
def is_tensor(v):
    return isinstance(v, TensorVariable)


def is_tensor_operand(v):
    """What a tensor op takes on either side: a tensor, or a constant (a Python number)."""
    return isinstance(v, TensorVariable) or v.is_python_constant()


def is_constant(v):
    return v.is_python_constant()


def is_list(v):
    return isinstance(v, ListVariable)


def is_plain_tuple(v):
    return isinstance(v, TupleVariable) and not hasattr(v, "cls")


def is_sequence(v):
    return isinstance(v, (ListVariable, TupleVariable))


def without_eq(v):
    """A value whose == is identity (no user-defined __eq__)."""
    return not (isinstance(v, (UserObjectVariable, NewObjectVariable))
                and getattr(v.python_type(), "__eq__", None) is not object.__dict__["__eq__"])


def anything(v):
    return True


_BOUND_METHODS = (BoundMethodVariable, BuiltinMethodVariable, TensorMethodVariable)


def is_bound_method(v):
    return isinstance(v, _BOUND_METHODS)


# -- handlers --------------------------------------------------------------------------------
def _record(tx, fn, a, b):
    return tx.output.record(fn, [a, b], {})


def _extend_in_place(tx, fn, a, b):
    a.call_method(tx, "extend", [b], {})     # in place: every alias of the list sees it
    return a


def _repeat_in_place(tx, fn, a, b):
    unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "list *= n (in place)")


def _fold(tx, fn, a, b):
    return wrap(tx, fold(fn, a.as_python_constant(), b.as_python_constant()))


def _concat_list(tx, fn, a, b):
    return ListVariable(a.items + b.items)


def _concat_tuple(tx, fn, a, b):
    return TupleVariable(a.items + b.items)


def _repeat(tx, fn, a, b):
    return type(a)(a.items * b.as_python_constant())


def _identity(tx, fn, a, b):
    same = tx.is_same(a, b)
    return ConstantVariable(same if fn is operator.eq else not same)


def _method_equal(tx, fn, a, b):
    """Bound methods are equal when they bind the same function to the same object."""
    if type(a) is not type(b):
        same = False
    elif isinstance(a, BoundMethodVariable):
        same = tx.is_same(a.func, b.func) and tx.is_same(a.self_var, b.self_var)
    elif isinstance(a, TensorMethodVariable):
        same = a.name == b.name and tx.is_same(a.tensor, b.tensor)
    else:
        same = a.name == b.name and tx.is_same(a.obj, b.obj)
    return ConstantVariable(same if fn is operator.eq else not same)


def _user_dunders(tx, fn, a, b):
    sym = _SYMBOL_OF.get(fn)
    if sym is None:
        return NotImplemented
    _, dunder, rdunder = BINARY_OPS[sym]
    if fn in INPLACE_FALLBACK:          # a += b: __iadd__, then as a + b
        result = _call_dunder(tx, a, dunder, [b])
        if result is not None:
            return result
        _, dunder, rdunder = BINARY_OPS[INPLACE_FALLBACK[fn]]
    order = [(a, dunder, b), (b, rdunder, a)]
    if rdunder is not None and _reflected_first(a, b, fn, rdunder):
        order.reverse()
    for obj, name, other in order:
        if name is not None:
            result = _call_dunder(tx, obj, name, [other])
            if result is not None:
                return result
    return NotImplemented


_COMPARISONS = frozenset({operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge})


def _reflected_first(a, b, fn, rdunder):
    """Whether Python tries the right operand's reflected method first: its type is a proper
    subclass of the left's, and (for arithmetic) overrides that method."""
    ta, tb = a.python_type(), b.python_type()
    if ta is None or tb is None or ta is tb or not issubclass(tb, ta):
        return False
    if fn in _COMPARISONS:
        return True
    return getattr(tb, rdunder, None) is not getattr(ta, rdunder, None)


def _call_dunder(tx, obj, name, args):
    if not isinstance(obj, (UserObjectVariable, NewObjectVariable)):
        return None
    try:
        method = class_attribute(tx, obj, obj.python_type(), name)
    except AttributeError:
        return None
    result = method.call(tx, args, {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    return result


def is_symbolic(v):
    return isinstance(v, SymNumberVariable) and not v.specialized


def _number_operand(v):
    return v if is_symbolic(v) else v.as_python_constant()


def _symbolic_arithmetic(tx, fn, a, b):
    if not (is_symbolic(a) or is_symbolic(b)):
        return NotImplemented
    result = SymNumberVariable.apply(ARITHMETIC[fn], [_number_operand(a), _number_operand(b)])
    return NotImplemented if result is None else result


def _sequence_items(tx, v):
    """The element trackers of a list or tuple tracker or constant, or None."""
    if isinstance(v, (ListVariable, TupleVariable)):
        return v.items
    if v.is_python_constant() and isinstance(v.as_python_constant(), (list, tuple)):
        return [wrap(tx, item) for item in v.as_python_constant()]
    return None


def is_sequence_like(v):
    return is_sequence(v) or (v.is_python_constant() and isinstance(v.as_python_constant(), (list, tuple)))


def _sequence_equal(tx, fn, a, b):
    """`a == b` / `a != b` for lists and tuples as Python computes it: lengths first, then
    element by element, each pair equal if it is one object or if `==` is true (a user's
    __eq__ runs, a tensor's truth is data-dependent), stopping at the first unequal pair."""
    kinds = (issubclass(a.python_type(), list), issubclass(b.python_type(), list))
    if kinds[0] != kinds[1]:
        return NotImplemented       # a list and a tuple: never equal
    xs, ys = _sequence_items(tx, a), _sequence_items(tx, b)
    equal = len(xs) == len(ys) and all(equal_as_contains(tx, x, y) for x, y in zip(xs, ys))
    return ConstantVariable(equal if fn is operator.eq else not equal)


def is_dict_like(v):
    return isinstance(v, DictVariable) or (v.is_python_constant() and isinstance(v.as_python_constant(), dict))


def _dict_items(tx, v):
    if isinstance(v, DictVariable):
        return v.items
    return {k: wrap(tx, value) for k, value in v.as_python_constant().items()}


def _dict_equal(tx, fn, a, b):
    """`a == b` / `a != b` for dicts as Python computes it: the same length, and every key of
    `a` found in `b` (by hash and ==) with a value that is the same object or `==`; order
    counts only between two OrderedDicts."""
    xs, ys = _dict_items(tx, a), _dict_items(tx, b)
    equal = len(xs) == len(ys)
    if equal and issubclass(a.python_type(), OrderedDict) and issubclass(b.python_type(), OrderedDict):
        equal = fold(lambda p, q: list(p) == list(q), xs, ys)
    if equal:
        for key, value in xs.items():
            if not fold(operator.contains, ys, key):
                equal = False
                break
            other = ys[key]
            if not equal_as_contains(tx, value, other):
                equal = False
                break
    return ConstantVariable(equal if fn is operator.eq else not equal)


# (operators or ANY_OP, left operand kind, right operand kind, handler), tried in order
BINARY_RULES = (
    (ANY_OP, is_tensor, is_tensor_operand, _record),
    (ANY_OP, is_tensor_operand, is_tensor, _record),
    (set(ARITHMETIC), is_constant, is_constant, _symbolic_arithmetic),
    ({operator.iadd}, is_list, anything, _extend_in_place),
    ({operator.imul}, is_list, anything, _repeat_in_place),
    (ANY_OP, is_constant, is_constant, _fold),
    ({operator.add, operator.iadd}, is_list, is_list, _concat_list),
    ({operator.add}, is_plain_tuple, is_plain_tuple, _concat_tuple),
    ({operator.mul}, is_sequence, is_constant, _repeat),
    ({operator.eq, operator.ne}, is_sequence_like, is_sequence_like, _sequence_equal),
    ({operator.eq, operator.ne}, is_dict_like, is_dict_like, _dict_equal),
    ({operator.eq, operator.ne}, is_bound_method, is_bound_method, _method_equal),
    ({operator.eq, operator.ne}, without_eq, without_eq, _identity),
    (ANY_OP, anything, anything, _user_dunders),
)


def binary(tx, fn, a, b):
    """The tracker of `a <fn> b` (fn from the operator module)."""
    for ops, left, right, handler in BINARY_RULES:
        if (ops is ANY_OP or fn in ops) and left(a) and right(b):
            result = handler(tx, fn, a, b)
            if result is not NotImplemented:
                return result
    unimplemented(BreakKind.UNSUPPORTED_BUILTIN,
                  f"operator {getattr(fn, '__name__', fn)} on {a.describe()} and {b.describe()}")


def _not_tensor(tx, fn, a):
    raise DataDependent(BreakKind.DATA_DEPENDENT_BRANCH, "`not` on a tensor (data-dependent)")


def _record_unary(tx, fn, a):
    return tx.output.record(fn, [a], {})


def _fold_unary(tx, fn, a):
    return wrap(tx, fold(fn, a.as_python_constant()))


def _truth(tx, fn, a):
    return ConstantVariable(not tx.truth(a))


def _user_unary_dunder(tx, fn, a):
    result = _call_dunder(tx, a, UNARY_DUNDER.get(fn, ""), [])
    return NotImplemented if result is None else result


def _symbolic_unary(tx, fn, a):
    result = SymNumberVariable.apply(fn, [a])
    return NotImplemented if result is None else result


UNARY_RULES = (
    ({operator.not_}, is_tensor, _not_tensor),
    (ANY_OP, is_tensor, _record_unary),
    (set(UNARY_ARITHMETIC), is_symbolic, _symbolic_unary),
    (ANY_OP, is_constant, _fold_unary),
    ({operator.not_}, anything, _truth),
    (ANY_OP, anything, _user_unary_dunder),
)


def unary(tx, fn, a):
    """The tracker of `<fn> a` (fn from the operator module: neg, pos, invert, not_, abs)."""
    for ops, kind, handler in UNARY_RULES:
        if (ops is ANY_OP or fn in ops) and kind(a):
            result = handler(tx, fn, a)
            if result is not NotImplemented:
                return result
    unimplemented(BreakKind.UNSUPPORTED_BUILTIN, f"unary {fn.__name__} on {a.describe()}")

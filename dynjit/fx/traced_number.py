"""Traced numbers: a graph's Python int and float inputs while make_fx or AOT autograd
traces it, so that one trace serves every value of such a number.

A `TracedNumber` stands for one number input (or a number computed from them) during a
trace. It is not an int or float (`type(n)` is TracedNumber, although `isinstance(n, int)`
holds, through `__class__`), so that no C code can read its value behind the tracer's back:
every use goes through one of its methods, and each method either records or specializes.

- Passed to an op (directly, or inside a tuple, list or slice argument: `x.view(n, -1)`,
  `x * lr`, `dynjit.full((2,), v)`, `x[:n]`), it becomes the node of the number in the
  recorded call. The op itself runs for real: its kernel is handed the plain value, and
  everything else the op keeps (its autograd node's arguments, a view's recipe) keeps the
  traced number, so a derivative that uses it (`grad * lr`) records it in the backward too.
- Arithmetic with plain numbers or other traced numbers (+ - * / // % ** neg abs, both
  sides, and the int bit operations) records an `operator.*` node and gives a traced number.
- Any other use needs the value at trace time to decide something (bool, comparisons,
  int()/float()/index(), hash and use as a dict key, range(), str/format, math functions,
  numpy scalars made from it, an attribute such as `.real`): the number is *specialized*.
  The trace then records that the inputs it is computed from are assumed to have their
  current values (`NumberTracing.specialized`), and whoever replays the graph must check
  that (AOT autograd's cache key holds those values; make_fx's graph asserts them).

While an op runs for real (its meta function, its kernel, its autograd bookkeeping) a traced
number acts as its plain value: whatever the op computes from it is replayed with the op.
After the trace, a traced number kept somewhere acts as its (trace-time) value.

A number that may decide a tensor's shape (any argument of an op other than a pointwise
one, except fill_value, value, alpha, beta and p) is specialized, because the shapes the
trace sees are read as plain numbers afterwards; in a trace with symbolic sizes
(dynjit.fx.symbolic_shapes) a number that is a size (its node's `meta["sym"]`) is not: it is
recorded as the op's argument, its comparisons are guards, and specializing it pins it. Python code that
cannot take a traced number (C code that wants an exact int, such as the json encoder)
raises; the tracers then trace again with plain numbers, all specialized. One difference
remains visible: `type(n)` is TracedNumber, so code testing `type(n) is int` takes the
branch for other types (isinstance, which numbers' users and dynjit test, is right).
"""
import operator
import os
import sys
import threading

_NUMBER_TYPES = (int, float)


class _State(threading.local):
    def __init__(self):
        self.in_op = 0          # > 0 while an op runs for real on traced numbers


_state = _State()


class NumberTracing:
    """The number inputs of one trace: makes their traced numbers and records which of them
    the trace specialized (input index -> the reason, for messages and logs)."""

    def __init__(self, graph):
        self.graph = graph
        self.active = True
        self.specialized = {}
        self.inputs = []
        self.shape_env = None       # a symbolic_shapes.ShapeEnv while sizes are symbols

    def input(self, value, node, index):
        """The traced number of input `index` (a Python int or float), whose node is `node`."""
        node.meta["val"] = value
        number = TracedNumber(value, node, self, frozenset((index,)))
        self.inputs.append(number)
        return number

    def specialize_inputs(self, why):
        """Specialize every number input (a value read that may depend on any of them)."""
        for number in self.inputs:
            if self.active and not _state.in_op:
                self.specialize(number, why)

    def specialize(self, number, why):
        symbols = [i for i in number._sources if type(i) is tuple]
        if symbols:
            # a symbolic size whose value is needed: the trace holds for that value only
            for _, k in symbols:
                self.shape_env.pin(k, why)
        new = [i for i in number._sources if i not in self.specialized and type(i) is not tuple]
        if new:
            where = _user_line()
            for i in new:
                self.specialized[i] = f"{why} at {where}" if where else why

    def record(self, fn, args, value, sources):
        """A node computing fn(*args) (args: nodes of traced numbers, or plain numbers) whose
        value is `value` now: its traced number."""
        node = self.graph.call_function(fn, args)
        node.meta["val"] = value
        if self.shape_env is not None and type(value) is int:
            from .symbolic_shapes import poly_result
            sym = poly_result(fn, [a.meta.get("sym") if hasattr(a, "meta") else
                                   _int_poly(a) for a in args])
            if sym is not None:
                node.meta["sym"] = self.shape_env.norm(sym)
        return TracedNumber(value, node, self, sources)

    def finish(self):
        """The trace is over: traced numbers kept anywhere act as their values from now on."""
        self.active = False


def _int_poly(value):
    from .symbolic_shapes import Poly
    return Poly.const(value) if type(value) is int else None


def _size_poly(number):
    """The Poly of a traced number that is a size of a symbolic trace, else None."""
    node = number._node
    return node.meta.get("sym") if node is not None and number._tracing.shape_env is not None else None


def is_traceable_number(value):
    """Is this graph input traced as a number? Exactly int and float: a bool is a flag
    that the trace specializes anyway, a numpy scalar a constant."""
    t = type(value)
    return t is int or t is float


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_line():
    """'file:line' of the innermost frame outside dynjit (the line that read the value)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _specialized_value(n, why):
    if n._tracing.active and not _state.in_op:
        n._tracing.specialize(n, why)
    return n._value


def plain(value):
    """`value` with every traced number in it (also in tuples, lists, dicts, slices) replaced
    by its plain value, without specializing (for code replayed with the op)."""
    t = type(value)
    if t is TracedNumber:
        return value._value
    if t is tuple or t is list:
        if not any(has_traced(v) for v in value):
            return value
        return t(plain(v) for v in value)
    if isinstance(value, tuple):
        if not any(has_traced(v) for v in value):
            return value
        items = [plain(v) for v in value]
        return t(*items) if hasattr(value, "_fields") else t(items)
    if t is dict:
        return {k: plain(v) for k, v in value.items()} if has_traced(value) else value
    if t is slice:
        return slice(plain(value.start), plain(value.stop), plain(value.step)) if has_traced(value) else value
    return value


def has_traced(value):
    """Does `value` hold a traced number (also inside tuples, lists, dicts, slices)?"""
    t = type(value)
    if t is TracedNumber:
        return True
    if t is tuple or t is list or isinstance(value, tuple):
        return any(has_traced(v) for v in value)
    if t is dict:
        return any(has_traced(v) for v in value.values())
    if t is slice:
        return has_traced(value.start) or has_traced(value.stop) or has_traced(value.step)
    return False


def specialize_all(value, why):
    """`value` with every traced number in it specialized and replaced by its value (for
    what outlives the trace without being a graph node: a view recipe replayed at run time,
    a returned Python number)."""
    t = type(value)
    if t is TracedNumber:
        return _specialized_value(value, why)
    if t is tuple or t is list:
        return t(specialize_all(v, why) for v in value) if has_traced(value) else value
    if isinstance(value, tuple):
        if not has_traced(value):
            return value
        items = [specialize_all(v, why) for v in value]
        return t(*items) if hasattr(value, "_fields") else t(items)
    if t is dict:
        return {k: specialize_all(v, why) for k, v in value.items()} if has_traced(value) else value
    if t is slice and has_traced(value):
        return slice(*(specialize_all(v, why) for v in (value.start, value.stop, value.step)))
    return value


# The parameters of ops other than pointwise ones through which a number cannot change the
# shape of the result (full's fill_value, addmm's alpha, dropout's p ...)
_VALUE_PARAMS = frozenset(("fill_value", "value", "alpha", "beta", "p"))


def specialize_shape_arguments(op, args, kwargs):
    """Specialize the traced numbers in `op`'s arguments that may decide the shape of its
    result (a size, an index, a slice bound): the shapes the trace sees are read as plain
    numbers later on (by derivatives, by the next op's meta, by Python code), so the trace
    holds only for these values. A pointwise op's numbers are operands and stay traced, and
    so do the values of fill_value, alpha, beta and p."""
    from ..ops.registry import INPLACE, POINTWISE
    kind = op.functional.kind if op.kind == INPLACE and op.functional is not None else op.kind
    if kind == POINTWISE:
        return
    why = f"an argument of {op.name} that may decide a tensor's shape"
    params = op.params
    for i, a in enumerate(args):
        if has_traced(a) and not (type(a) is TracedNumber and i < len(params) and params[i] in _VALUE_PARAMS):
            _specialize_non_sizes(a, why)
    for k, a in (kwargs or {}).items():
        if has_traced(a) and not (type(a) is TracedNumber and k in _VALUE_PARAMS):
            _specialize_non_sizes(a, why)


def _specialize_non_sizes(value, why):
    """Specialize the traced numbers in `value` other than the sizes of a symbolic trace."""
    t = type(value)
    if t is TracedNumber:
        if _size_poly(value) is None:
            _specialized_value(value, why)
    elif t is tuple or t is list or isinstance(value, tuple):
        for v in value:
            _specialize_non_sizes(v, why)
    elif t is dict:
        for v in value.values():
            _specialize_non_sizes(v, why)
    elif t is slice:
        for v in (value.start, value.stop, value.step):
            _specialize_non_sizes(v, why)


def _all_sizes(value):
    """Is every traced number in `value` a size of a symbolic trace (an op records it as an
    argument; the symbolic shape of its result says what it decides)?"""
    t = type(value)
    if t is TracedNumber:
        return _size_poly(value) is not None
    if t is tuple or t is list or isinstance(value, tuple):
        return all(_all_sizes(v) for v in value)
    if t is dict:
        return all(_all_sizes(v) for v in value.values())
    if t is slice:
        return all(_all_sizes(v) for v in (value.start, value.stop, value.step))
    return True


def call_op(op, args, kwargs):
    """Run `op` for real on arguments that hold traced numbers: its kernel gets their plain
    values (numpy must see a Python int or float to promote as eager does), the rest of the
    op (meta, autograd node, view recipe) keeps the traced numbers, which act as their values
    while it runs."""
    specialize_shape_arguments(op, args, kwargs)
    targets = [op] if op.functional is None else [op, op.functional]
    swapped = []
    for o in targets:
        kernel = o.__dict__.get("kernel")
        if kernel is not None and not getattr(kernel, "_unwraps_numbers", False):
            o.kernel = _unwrapping(kernel)
            swapped.append((o, kernel))
    _state.in_op += 1
    try:
        return op(*args, **kwargs)
    finally:
        _state.in_op -= 1
        for o, kernel in swapped:
            o.kernel = kernel


def _unwrapping(kernel):
    def unwrapped(*args, **kwargs):
        return kernel(*plain(args), **plain(kwargs))
    unwrapped._unwraps_numbers = True
    unwrapped.__wrapped__ = kernel
    return unwrapped


class acting_as_values:
    """Within this block traced numbers act as their plain values (code that is replayed as
    a whole, such as an op's meta function)."""

    def __enter__(self):
        _state.in_op += 1

    def __exit__(self, *exc):
        _state.in_op -= 1
        return False


def _tensor_type():
    from ..tensor import Tensor
    return Tensor


def _operand(other):
    """(plain value, node or value for the graph) of an arithmetic operand, or None if it is
    not a number the trace can record arithmetic with."""
    t = type(other)
    if t is TracedNumber:
        return other._value, other._node
    if t is int or t is float or t is bool:
        return other, other
    return None


def _fixed_result_type(base, exponent, base_traced, exponent_traced):
    """Does base ** exponent have the same type for every value of its traced operands (so
    that a graph replaying it gives the type the trace saw)? int ** -1 is a float and
    (-8) ** 0.5 a complex; float ** int is always a float, and so are int ** (a constant
    int >= 0) and (a constant >= 0) ** float."""
    if type(exponent) in (int, bool):
        return type(base) is float or (not exponent_traced and exponent >= 0)
    return not base_traced and base >= 0


def _binary(fn, reflected=False):
    name = fn.__name__.strip("_")

    def method(self, other):
        operand = _operand(other)
        if operand is None:
            if isinstance(other, _tensor_type()):
                return NotImplemented       # the tensor's own operator records it with this number
            value = _specialized_value(self, f"{name} with a {type(other).__name__}")
            return fn(other, value) if reflected else fn(value, other)
        other_value, other_arg = operand
        a, b = (other_value, self._value) if reflected else (self._value, other_value)
        live = self._tracing.active and not _state.in_op
        if not live:
            return fn(a, b)
        try:
            result = fn(a, b)
        except Exception:
            self._tracing.specialize(self, f"{name} raised")
            if type(other) is TracedNumber:
                other._tracing.specialize(other, f"{name} raised")
            raise
        other_traced = type(other) is TracedNumber
        fixed = fn is not operator.pow or _fixed_result_type(
            a, b, not reflected or other_traced, reflected or other_traced)
        if type(result) not in _NUMBER_TYPES or not fixed:
            self._tracing.specialize(self, f"{name} gives a {type(result).__name__}")
            if type(other) is TracedNumber:
                other._tracing.specialize(other, f"{name} gives a {type(result).__name__}")
            return result
        args = (other_arg, self._node) if reflected else (self._node, other_arg)
        sources = self._sources | other._sources if type(other) is TracedNumber else self._sources
        return self._tracing.record(fn, args, result, sources)
    method.__name__ = f"__r{name}__" if reflected else f"__{name}__"
    return method


def _unary(fn):
    def method(self):
        if not (self._tracing.active and not _state.in_op):
            return fn(self._value)
        return self._tracing.record(fn, (self._node,), fn(self._value), self._sources)
    method.__name__ = f"__{fn.__name__.strip('_')}__"
    return method


def _specializing(fn, why):
    def method(self, *args):
        value = _specialized_value(self, why)
        return fn(value, *(_specialized_value(a, why) if type(a) is TracedNumber else a for a in args))
    method.__name__ = fn.__name__
    return method


def _comparison(fn):
    def method(self, other):
        if isinstance(other, _tensor_type()):
            return NotImplemented           # the tensor's comparison op records it
        lhs = _size_poly(self)
        if lhs is not None and self._tracing.active and not _state.in_op:
            # sizes compared in a symbolic trace: a guard, not a specialization
            rhs = _size_poly(other) if type(other) is TracedNumber else \
                _int_poly(other) if type(other) is int else None
            if rhs is not None and (type(other) is not TracedNumber or other._tracing is self._tracing):
                return self._tracing.shape_env.guard(fn, lhs, rhs)
        value = _specialized_value(self, "a comparison")
        if type(other) is TracedNumber:
            other = _specialized_value(other, "a comparison")
        return fn(value, other)
    method.__name__ = fn.__name__
    return method


class TracedNumber:
    """An int or float graph input (or a number computed from them) during a trace; see the
    module docstring."""
    __slots__ = ("_value", "_node", "_tracing", "_sources", "__weakref__")

    def __init__(self, value, node, tracing, sources):
        self._value = value
        self._node = node
        self._tracing = tracing
        self._sources = sources

    @property
    def __class__(self):
        return type(self._value)

    def __repr__(self):
        return repr(_specialized_value(self, "repr()"))

    def __str__(self):
        return str(_specialized_value(self, "str()"))

    def __format__(self, spec):
        return format(_specialized_value(self, "formatting"), spec)

    def __hash__(self):
        return hash(_specialized_value(self, "hashing (a dict key or set member)"))

    def __bool__(self):
        p = _size_poly(self)
        if p is not None and self._tracing.active and not _state.in_op:
            return self._tracing.shape_env.guard(operator.ne, p, _int_poly(0))
        return bool(_specialized_value(self, "a truth test (if, and, or, not)"))

    def __index__(self):
        return operator.index(_specialized_value(self, "use as an integer (range, indexing, a size)"))

    def __int__(self):
        return int(_specialized_value(self, "int()"))

    def __float__(self):
        return float(_specialized_value(self, "float() (also math functions, numpy scalars)"))

    def __complex__(self):
        return complex(_specialized_value(self, "complex()"))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce_ex__(self, protocol):
        value = _specialized_value(self, "pickling")
        return type(value), (value,)

    def __getattr__(self, name):
        # a protocol probe (numpy's __array_interface__), or an attribute numbers do not have
        # (`.dtype`, asked of any argument): the answer does not depend on the value
        if name.startswith("__") or not hasattr(self._value, name):
            raise AttributeError(f"{type(self._value).__name__!r} object has no attribute {name!r}")
        return getattr(_specialized_value(self, f".{name}"), name)

    __lt__ = _comparison(operator.lt)
    __le__ = _comparison(operator.le)
    __gt__ = _comparison(operator.gt)
    __ge__ = _comparison(operator.ge)
    __eq__ = _comparison(operator.eq)
    __ne__ = _comparison(operator.ne)

    __round__ = _specializing(round, "round()")
    __trunc__ = _specializing(lambda v: v.__trunc__(), "math.trunc()")
    __floor__ = _specializing(lambda v: v.__floor__(), "math.floor()")
    __ceil__ = _specializing(lambda v: v.__ceil__(), "math.ceil()")
    __divmod__ = _specializing(divmod, "divmod()")
    __rdivmod__ = _specializing(lambda v, o: divmod(o, v), "divmod()")

    __add__, __radd__ = _binary(operator.add), _binary(operator.add, True)
    __sub__, __rsub__ = _binary(operator.sub), _binary(operator.sub, True)
    __mul__, __rmul__ = _binary(operator.mul), _binary(operator.mul, True)
    __truediv__, __rtruediv__ = _binary(operator.truediv), _binary(operator.truediv, True)
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv), _binary(operator.floordiv, True)
    __mod__, __rmod__ = _binary(operator.mod), _binary(operator.mod, True)
    __pow__, __rpow__ = _binary(operator.pow), _binary(operator.pow, True)
    __and__, __rand__ = _binary(operator.and_), _binary(operator.and_, True)
    __or__, __ror__ = _binary(operator.or_), _binary(operator.or_, True)
    __xor__, __rxor__ = _binary(operator.xor), _binary(operator.xor, True)
    __lshift__, __rlshift__ = _binary(operator.lshift), _binary(operator.lshift, True)
    __rshift__, __rrshift__ = _binary(operator.rshift), _binary(operator.rshift, True)
    __neg__ = _unary(operator.neg)
    __pos__ = _unary(operator.pos)
    __abs__ = _unary(operator.abs)
    __invert__ = _unary(operator.invert)



def number_key(value):
    """What a specialized number's value is compared by: -0.0 is not 0.0, a NaN is a NaN."""
    return value.hex() if type(value) is float else value


def check_specialized(value, expected, name, why):
    """A graph's first node for each number input its trace specialized (make_fx)."""
    if type(value) is not type(expected) or number_key(value) != number_key(expected):
        raise RuntimeError(
            f"this graph was traced with {name} = {expected!r} and holds only for that value (the "
            f"trace read it: {why}); it cannot run with {name} = {value!r}. Trace it again for "
            "that value (AOT autograd does so by itself).")


check_specialized._is_impure = True

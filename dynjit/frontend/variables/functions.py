"""Trackers for callables: user functions (inlined), closures made while
tracing, bound methods, builtins (evaluated at trace time), dynjit functions
(recorded into the graph) and grad-mode context managers."""
import abc
import builtins
import operator
import types
from collections import OrderedDict

from ..exc import unimplemented, fold, BreakKind, Unsupported
from ...utils import is_dynjit_module
from .base import VariableTracker, ConstantVariable
from .builder import wraps, wrap
from .. import trace_rules
from ..trace_rules import Action, PURE_BUILTINS, HANDLED_BUILTINS
from ...autograd import grad_mode
from ...autograd.grad_mode import state
from ..source import AttrSource, LocalSource
from .containers import DictVariable, IteratorVariable, ListVariable, TupleVariable, lazy_enumerate, lazy_filter, lazy_map, lazy_reversed, lazy_zip, live_iter
from .tensor import TensorVariable


class FunctionVariable(VariableTracker):
    """A real Python function; calling it inlines its bytecode."""

    def __init__(self, fn, source=None, pinned=True):
        super().__init__(source)
        self.fn = fn
        # False for a function argument guarded by its code only (see _wrap_function): this
        # object may be another call's; pin() guards its identity where the trace needs it
        self.pinned = pinned

    def pin(self, tx):
        if not self.pinned:
            tx.output.guards.identity(self.source, self.fn)
            self.pinned = True

    def describe(self):
        return f"function {self.fn.__qualname__}"

    def python_type(self):
        return types.FunctionType

    def get_code(self):
        return self.fn.__code__

    def call(self, tx, args, kwargs):
        rule = trace_rules.lookup(self.fn)
        if rule.action is Action.BREAK:
            unimplemented(rule.kind, rule.detail)
        traced_as = getattr(self.fn, "_dynjit_traced_as", None)
        if traced_as is not None:       # library code that names what to trace instead of it
            return FunctionVariable(traced_as).call(tx, args, kwargs)
        if rule.why == "allow_in_graph":
            self.pin(tx)                                       # the node calls this very object
            return tx.output.record(self.fn, args, kwargs)     # one opaque node, not traced into
        return tx.inline_call(self, args, kwargs)

    def getattr(self, tx, name):
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.fn, name))
        unimplemented(BreakKind.ATTRIBUTE, f"reading attribute {name!r} of a function")

    def reconstruct(self, cg):
        if self.source is not None:
            return self.source.expr()
        return cg.constant(self.fn)


class CellVariable(VariableTracker):
    """A closure cell created while tracing (its contents are a tracker, None while unbound).

    Rebuilt once as a new cell object at a graph break; every closure and the code after
    the break share that one object."""

    def __init__(self, contents=None):
        super().__init__()
        self.contents = contents

    def describe(self):
        return "a closure cell"

    def load(self, tx, name="a closure variable"):
        if self.contents is None:
            unimplemented(BreakKind.USER_EXCEPTION, f"free variable {name!r} referenced before assignment")
        return self.contents

    def store(self, tx, value):
        self.contents = value

    def getattr(self, tx, name):
        if name == "cell_contents":
            return self.load(tx)
        return super().getattr(tx, name)

    def setattr(self, tx, name, value):
        if name != "cell_contents":
            super().setattr(tx, name, value)
        self.store(tx, value)

    def reconstruct(self, cg):
        return cg.cell(self)


class RealCellVariable(CellVariable):
    """A cell object that existed before the trace (a closure cell of a function, or one
    passed between the functions of a graph break); `source` is the cell itself.

    One tracker per cell object (the builder deduplicates), so a write through one
    reference is seen through every other; reads are guarded on the contents' source,
    writes are replayed after the graph as `cell.cell_contents = value`."""

    def __init__(self, cell, source):
        super().__init__()
        self.source = source
        self.cell = cell

    def load(self, tx, name="a closure variable"):
        if self.contents is None:
            try:
                value = self.cell.cell_contents
            except ValueError:
                unimplemented(BreakKind.USER_EXCEPTION, f"free variable {name!r} referenced before assignment")
            self.contents = wrap(tx, value, AttrSource(self.source, "cell_contents"))
        return self.contents

    def store(self, tx, value):
        self.contents = value
        tx.output.side_effects.write_cell(self)

    def reconstruct(self, cg):
        return self.source.expr()


class NestedFunctionVariable(VariableTracker):
    """A function made by MAKE_FUNCTION while tracing (a nested def, lambda or comprehension)."""

    def __init__(self, code, globals_, name, defaults=None, kwdefaults=None, closure=None):
        super().__init__()
        self.code = code
        self.f_globals = globals_
        self.name = name
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self.closure = closure

    def describe(self):
        return f"nested function {self.name}"

    def python_type(self):
        return types.FunctionType

    def get_code(self):
        return self.code

    def call(self, tx, args, kwargs):
        return tx.inline_call(self, args, kwargs)

    def reconstruct(self, cg):
        return cg.nested_function(self)


class BoundMethodVariable(VariableTracker):
    def __init__(self, func, self_var):
        super().__init__()
        self.func = func
        self.self_var = self_var

    def describe(self):
        return f"bound method {self.func.describe()}"

    def python_type(self):
        return types.MethodType

    def call(self, tx, args, kwargs):
        return self.func.call(tx, [self.self_var] + list(args), kwargs)

    def reconstruct(self, cg):
        return f"K['MethodType']({cg.value(self.func)}, {cg.value(self.self_var)})"


class BuiltinMethodVariable(VariableTracker):
    """A method of a traced container, e.g. `lst.append`."""

    def __init__(self, obj, name):
        super().__init__()
        self.obj = obj
        self.name = name

    def describe(self):
        return f"method {self.name} of {self.obj.describe()}"

    def call(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg):
        return f"{cg.value(self.obj)}.{self.name}"


def _all_constant(args, kwargs):
    return all(a.is_python_constant() for a in args) and all(v.is_python_constant() for v in kwargs.values())


_BINARY = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
           operator.pow, operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift,
           operator.rshift, operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
           operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
           operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor}


# builtins that consume an iterable argument whole
_CONSUMERS = frozenset((sorted, sum, min, max, any, all, set, frozenset, tuple, list, dict))


def _cell_value(tx, cell, name):
    """The contents of a cell tracker, or None for no cell or an empty one (not a local yet)."""
    if not isinstance(cell, CellVariable):
        return None
    try:
        return cell.load(tx, name)
    except Unsupported:
        return None


def _consumes_whole(fn):
    """Whether builtin `fn` reads its first argument to the end (not zip, islice, next)."""
    if fn in _CONSUMERS:
        return True
    return getattr(fn, "__name__", None) == "join" and isinstance(getattr(fn, "__self__", None), (str, bytes))


class BuiltinVariable(VariableTracker):
    SUPPORTED = PURE_BUILTINS | HANDLED_BUILTINS | {print}

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def describe(self):
        return f"builtin {trace_rules.callable_name(self.fn)}"

    def python_type(self):
        return type(self.fn)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.fn

    def reconstruct(self, cg):
        return cg.constant(self.fn)

    def call(self, tx, args, kwargs):
        fn = self.fn
        rule = trace_rules.lookup(fn)
        if rule.action is Action.BREAK and rule.kind is not BreakKind.UNKNOWN_CALLABLE:
            unimplemented(rule.kind, rule.detail)
        if args and isinstance(args[0], IteratorVariable) and _consumes_whole(fn):
            # sorted(generator), sum(map(...)), ", ".join(...): what the iterator yields, read
            # now (consuming it, as the call does), folded if it is all constants
            items = args[0].iterate(tx)
            whole = (ConstantVariable([i.as_python_constant() for i in items])
                     if all(i.is_python_constant() for i in items) else IteratorVariable(items))
            args = [whole] + list(args[1:])
        handler = getattr(self, f"_call_{getattr(fn, '__name__', '')}", None)
        if handler is not None and getattr(builtins, fn.__name__, None) is fn:
            return handler(tx, args, kwargs)
        if fn in _BINARY and len(args) == 2 and not kwargs:
            return tx.binary_op(fn, args[0], args[1])
        if fn is operator.neg or fn is operator.not_ or fn is operator.invert or fn is operator.pos:
            return tx.unary_op(fn, args[0])
        if fn is operator.getitem:
            return tx.getitem(args[0], args[1])
        if fn is operator.contains:
            return tx.contains(args[1], args[0])
        if _all_constant(args, kwargs) and rule.action in (Action.FOLD, Action.HANDLED):
            a = [x.as_python_constant() for x in args]
            k = {n: v.as_python_constant() for n, v in kwargs.items()}
            return wrap(tx, fold(fn, *a, **k))
        unimplemented(BreakKind.UNSUPPORTED_BUILTIN, f"builtin: {getattr(fn, '__name__', fn)} with these arguments "
                      f"({', '.join(a.describe() for a in args)})")

    # -- builtins that see trackers ---------------------------------------------------
    def _call_len(self, tx, args, kwargs):
        return ConstantVariable(args[0].length(tx))

    def _call_isinstance(self, tx, args, kwargs):
        cls = args[1].as_python_constant()
        t = args[0].python_type()
        for c in cls if isinstance(cls, tuple) else (cls,):     # in order, as Python checks them
            if c is t:                   # Python's exact-type fast path: no hook runs
                return ConstantVariable(True)
            _refuse_check_hooks(c, "__instancecheck__", "isinstance")
            if _issubclass(t, c):
                return ConstantVariable(True)
        return ConstantVariable(False)

    def _call_issubclass(self, tx, args, kwargs):
        cls = args[1].as_python_constant()
        _refuse_check_hooks(cls, "__subclasscheck__", "issubclass")
        return wrap(tx, fold(issubclass, args[0].as_python_constant(), cls))

    def _call_type(self, tx, args, kwargs):
        from .objects import ClassVariable
        if len(args) != 1:
            unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "type() with 3 arguments")
        return ClassVariable(args[0].python_type())

    def _call_getattr(self, tx, args, kwargs):
        name = args[1].as_python_constant()
        if len(args) == 3:
            try:
                return tx.getattr(args[0], name)
            except AttributeError:
                return args[2]
        return tx.getattr(args[0], name)

    def _call_hasattr(self, tx, args, kwargs):
        try:
            tx.getattr(args[0], args[1].as_python_constant())
            return ConstantVariable(True)
        except AttributeError:
            return ConstantVariable(False)

    def _call_setattr(self, tx, args, kwargs):
        args[0].setattr(tx, args[1].as_python_constant(), args[2])
        return ConstantVariable(None)

    def _seq(self, tx, args):
        if not args:
            return []
        return args[0].iterate(tx)

    def _call_tuple(self, tx, args, kwargs):
        return TupleVariable(self._seq(tx, args))

    def _call_list(self, tx, args, kwargs):
        return ListVariable(self._seq(tx, args))

    def _call_dict(self, tx, args, kwargs):
        items = {}
        if args:
            src = args[0]
            if isinstance(src, DictVariable):
                items.update(src.items)
            else:
                for pair in src.iterate(tx):
                    k, v = pair.iterate(tx)
                    items[k.as_python_constant()] = v
        items.update(kwargs)
        return DictVariable(items)

    def _call_iter(self, tx, args, kwargs):
        if len(args) != 1 or kwargs:
            unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "iter() with a sentinel")
        return live_iter(tx, args[0])

    def _call_next(self, tx, args, kwargs):
        it = args[0]
        if not isinstance(it, IteratorVariable):
            unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "next() on a non-iterator")
        item = it.next()
        if item is None:
            if len(args) > 1:
                return args[1]
            unimplemented(BreakKind.USER_EXCEPTION, "StopIteration raised while tracing")
        return item

    def _call_reversed(self, tx, args, kwargs):
        return lazy_reversed(tx, args[0])

    def _call_enumerate(self, tx, args, kwargs):
        start = kwargs["start"].as_python_constant() if "start" in kwargs else \
            (args[1].as_python_constant() if len(args) > 1 else 0)
        return lazy_enumerate(tx, args[0], start)

    def _call_zip(self, tx, args, kwargs):
        strict = kwargs.pop("strict", ConstantVariable(False)).as_python_constant()
        if kwargs:
            unimplemented(BreakKind.UNSUPPORTED_BUILTIN, f"zip() with keyword arguments {sorted(kwargs)}")
        return lazy_zip(tx, args, strict)

    def _call_range(self, tx, args, kwargs):
        return ConstantVariable(range(*[a.as_python_constant() for a in args]))

    def _call_map(self, tx, args, kwargs):
        return lazy_map(tx, args[0], args[1:])

    def _call_filter(self, tx, args, kwargs):
        return lazy_filter(tx, args[0], args[1])

    def _call_all(self, tx, args, kwargs):
        for item in args[0].iterate(tx):
            if not tx.truth(item):
                return ConstantVariable(False)
        return ConstantVariable(True)

    def _call_any(self, tx, args, kwargs):
        for item in args[0].iterate(tx):
            if tx.truth(item):
                return ConstantVariable(True)
        return ConstantVariable(False)

    def _call_sum(self, tx, args, kwargs):
        items = args[0].iterate(tx)
        total = args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))
        for item in items:
            total = tx.binary_op(operator.add, total, item)
        return total

    def _minmax(self, tx, args, kwargs, pick):
        if set(kwargs) - {"key", "default"}:
            unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "min()/max() with these keyword arguments")
        items = args[0].iterate(tx) if len(args) == 1 else list(args)
        key = kwargs.get("key")
        if key is not None and not (key.is_python_constant() and key.as_python_constant() is None):
            # a key function: traced on each item, the comparison folded (its results constants)
            keyed = [key.call(tx, [i], {}) for i in items]
            if not all(k.is_python_constant() for k in keyed):
                unimplemented(BreakKind.DATA_DEPENDENT_BRANCH, "min()/max() with a key computed from tensors")
            if not items:
                if "default" in kwargs:
                    return kwargs["default"]
                return ConstantVariable(fold(pick, []))
            best = pick(range(len(items)), key=lambda j: keyed[j].as_python_constant())
            return items[best]
        if all(i.is_python_constant() for i in items) and all(v.is_python_constant() for v in kwargs.values()):
            extra = {k: v.as_python_constant() for k, v in kwargs.items() if k != "key"}
            values = [i.as_python_constant() for i in items]
            return wrap(tx, fold(pick, values, **extra) if len(args) == 1 else fold(pick, *values))
        unimplemented(BreakKind.DATA_DEPENDENT_BRANCH, "min()/max() over tensors (compare values at run time instead: use dynjit.maximum)")

    def _call_max(self, tx, args, kwargs):
        return self._minmax(tx, args, kwargs, max)

    def _call_min(self, tx, args, kwargs):
        return self._minmax(tx, args, kwargs, min)

    def _call_abs(self, tx, args, kwargs):
        return tx.unary_op(operator.abs, args[0])

    def _call_bool(self, tx, args, kwargs):
        return ConstantVariable(tx.truth(args[0]) if args else False)

    def _call_locals(self, tx, args, kwargs):
        """The frame's bound local variables (and closure variables), as a new dict: the names
        of the user's code only (the stack values a resumed frame takes are dynjit's)."""
        if args or kwargs:
            unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "locals() with arguments (raises natively)")
        from ..translator import UNBOUND
        from ..resume import CELL_PREFIX
        code = tx.code
        items = {}
        names = list(code.co_varnames) + [n for n in code.co_cellvars + code.co_freevars if n not in code.co_varnames]
        for name in names:
            if name.startswith(CELL_PREFIX):
                # a resume function takes the frame's cells as arguments: a cell variable
                var = _cell_value(tx, tx.locals.get(name), name[len(CELL_PREFIX):])
                name = name[len(CELL_PREFIX):]
            elif name.startswith("___"):
                continue
            else:
                var = tx.locals.get(name)
                if var is None:
                    var = _cell_value(tx, tx.cells.get(name), name)
            if var is not None and var is not UNBOUND:
                items[name] = var
        return DictVariable(items)

    def _call_vars(self, tx, args, kwargs):
        """vars(): the frame's locals; vars(obj) of a traced object: the frame runs plain (its
        __dict__ and its attributes would be two views the trace keeps apart)."""
        if not args and not kwargs:
            return self._call_locals(tx, args, kwargs)
        from .objects import NewObjectVariable, UserObjectVariable, _instance_dict_read
        if len(args) == 1 and not kwargs and isinstance(args[0], (UserObjectVariable, NewObjectVariable)):
            _instance_dict_read()
        unimplemented(BreakKind.SIDE_EFFECT_CALL, "builtin: vars")

    def _call_super(self, tx, args, kwargs):
        from .objects import SuperVariable
        if args:
            return SuperVariable(args[0].as_python_constant(), args[1])
        return tx.implicit_super()

    def _call_callable(self, tx, args, kwargs):
        v = args[0]
        if isinstance(v, (FunctionVariable, NestedFunctionVariable, BoundMethodVariable, BuiltinVariable,
                          DynjitFunctionVariable)):
            return ConstantVariable(True)
        if isinstance(v, TensorVariable) or v.is_python_constant():
            return ConstantVariable(callable(v.as_python_constant()) if v.is_python_constant() else False)
        return ConstantVariable(callable(v.python_type()))


_STANDARD_CHECKS = {"__instancecheck__": (type.__instancecheck__, abc.ABCMeta.__instancecheck__),
                    "__subclasscheck__": (type.__subclasscheck__, abc.ABCMeta.__subclasscheck__)}


def _refuse_check_hooks(cls, hook, what):
    """A metaclass's own __instancecheck__ / __subclasscheck__ is the user's code, with its own
    answer and effects: the check runs natively (type's and ABCMeta's are traced as issubclass)."""
    for c in cls if isinstance(cls, tuple) else (cls,):
        if isinstance(c, type) and getattr(type(c), hook, None) not in _STANDARD_CHECKS[hook]:
            unimplemented(BreakKind.UNSUPPORTED_BUILTIN, f"{what}() with {c.__name__}, whose metaclass "
                          f"{type(c).__name__} defines {hook} (runs natively)")


def _issubclass(t, cls):
    try:
        return issubclass(t, cls)
    except TypeError:
        unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "isinstance() with an unsupported class argument")


# library code that is Python over tensors, traced into like user code
def is_dynjit_callable(value):
    """Functions of the dynjit library that become graph nodes when called on tensors, or that
    a rule of their own handles (activation checkpoint, is_grad_enabled)."""
    rule = trace_rules.lookup(value)
    return rule.why in ("op", "dynjit function") or (
        rule.action is Action.HANDLED and is_dynjit_module(getattr(value, "__module__", None) or ""))


class DynjitFunctionVariable(VariableTracker):
    """A dynjit function (dynjit.sin, dynjit.nn.functional.relu, an op): calls become graph nodes."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def describe(self):
        return f"dynjit function {trace_rules.callable_name(self.fn)}"

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def reconstruct(self, cg):
        return cg.constant(self.fn)

    def call(self, tx, args, kwargs):
        fn = self.fn
        rule = trace_rules.lookup(fn)
        if rule.action is Action.BREAK:
            unimplemented(rule.kind, rule.detail)
        if fn is grad_mode.is_grad_enabled:
            return ConstantVariable(tx.output.grad_enabled)
        if rule.action is Action.HANDLED and trace_rules._in(fn, trace_rules.checkpoint_functions()):
            return _call_checkpointed(tx, args, kwargs)
        if rule.action is Action.HANDLED:           # no_grad / enable_grad / set_grad_enabled
            return GradModeVariable.create(tx, fn, args)
        return tx.output.record(fn, args, kwargs)


def _call_checkpointed(tx, args, kwargs):
    """checkpoint(function, *args, use_reentrant=..., **kwargs) traced as function(*args,
    **kwargs). Options that change what runs (context_fn, debug), a missing use_reentrant (the
    plain call warns) and keywords the reentrant form refuses run natively instead."""
    options = {k: v for k, v in kwargs.items() if k in trace_rules.CHECKPOINT_OPTIONS}
    rest = {k: v for k, v in kwargs.items() if k not in trace_rules.CHECKPOINT_OPTIONS}
    reentrant = options.get("use_reentrant")
    if not args or reentrant is None or not reentrant.is_python_constant() \
            or reentrant.as_python_constant() not in (True, False) \
            or "context_fn" in options or "debug" in options or (reentrant.as_python_constant() and rest):
        unimplemented(BreakKind.UNKNOWN_CALLABLE, "checkpoint() without use_reentrant=True/False, or with "
                      "context_fn, debug or keywords the reentrant form refuses (runs natively)")
    return args[0].call(tx, list(args[1:]), rest)


class GradModeVariable(VariableTracker):
    """no_grad() / enable_grad() / set_grad_enabled(mode) while tracing."""

    def __init__(self, mode, prev):
        super().__init__()
        self.mode = mode
        self.prev = prev

    @classmethod
    def create(cls, tx, fn, args):
        prev = tx.output.grad_enabled
        if fn is grad_mode.set_grad_enabled:
            mode = args[0].as_python_constant()
            tx.output.set_grad_enabled(mode)    # takes effect at once, like the real one
            return cls(mode, prev)
        return cls(fn is grad_mode.enable_grad, prev)

    def describe(self):
        return "a grad-mode context manager"

    def enter(self, tx):
        self.prev = tx.output.grad_enabled
        tx.output.set_grad_enabled(self.mode)
        return ConstantVariable(None)

    def exit(self, tx):
        tx.output.set_grad_enabled(self.prev)
        return ConstantVariable(None)

    def getattr(self, tx, name):
        if name == "__enter__":
            return _Bound(lambda tx, args, kwargs: self.enter(tx))
        if name == "__exit__":
            return GradModeExitVariable(self.prev)
        unimplemented(BreakKind.GRAD_MODE, f"grad mode attribute {name}")


class GradModeRestorer:
    """The real object a grad-mode `with` block's exit becomes at a graph break."""

    def __init__(self, prev):
        self.prev = prev

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False


class GradModeExitVariable(VariableTracker):
    """The bound __exit__ of a grad-mode block: calling it restores the previous mode."""

    def __init__(self, prev):
        super().__init__()
        self.prev = prev

    def call(self, tx, args, kwargs):
        tx.output.set_grad_enabled(self.prev)
        return ConstantVariable(None)

    def reconstruct(self, cg):
        return f"{cg.constant(GradModeRestorer)}({self.prev!r}).__exit__"


class _Bound(VariableTracker):
    def __init__(self, impl):
        super().__init__()
        self.impl = impl

    def call(self, tx, args, kwargs):
        return self.impl(tx, args, kwargs)


@wraps("cell", types.CellType)
def _wrap_cell(tx, value, source, guards):
    if source is None:
        return NotImplemented
    var = RealCellVariable(value, source)      # one tracker per cell: writes seen through every reference
    tx.output.side_effects.track_existing(value, var)
    return var


@wraps("function", object)
def _wrap_function(tx, value, source, guards):
    if callable(value) and is_dynjit_callable(value):
        guards.identity(source, value)
        return DynjitFunctionVariable(value, source=source)
    if isinstance(value, types.FunctionType) and not isinstance(source, LocalSource):
        guards.identity(source, value)
        return FunctionVariable(value, source=source)
    if isinstance(value, types.FunctionType):
        # an argument: guarded by what the trace reads of it, not by identity, so that a
        # closure or lambda made anew for each call (same code) does not recompile. Its defaults
        # and closure cells are read through their own guarded sources; `is` on it guards
        # identity (translator.is_same).
        guards.type(source, value)
        guards.identity(AttrSource(source, "__code__"), value.__code__)
        guards.identity(AttrSource(source, "__globals__"), value.__globals__)
        guards.dict_keys(AttrSource(source, "__dict__"), value.__dict__)      # markers (dynjit.disable)
        return FunctionVariable(value, source=source, pinned=False)
    return NotImplemented


@wraps("method", types.MethodType, types.BuiltinMethodType)
def _wrap_method(tx, value, source, guards):
    if source is None:
        return NotImplemented
    if isinstance(value, types.MethodType) and isinstance(value.__self__, GradModeRestorer):
        guards.type(source, value)
        return GradModeExitVariable(value.__self__.prev)
    if isinstance(value, types.MethodType):
        guards.type(source, value)
        self_var = wrap(tx, value.__self__, AttrSource(source, "__self__"))
        return BoundMethodVariable(wrap(tx, value.__func__, AttrSource(source, "__func__")), self_var)
    if type(value.__self__) in (list, dict, OrderedDict):
        # e.g. `log.append` left on the stack at a graph break: a method of the (tracked) container
        guards.type(source, value)
        guards.constant(AttrSource(source, "__name__"), value.__name__)
        return BuiltinMethodVariable(wrap(tx, value.__self__, AttrSource(source, "__self__")), value.__name__)
    return NotImplemented


@wraps("builtin", object)
def _wrap_builtin(tx, value, source, guards):
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)) \
            or _in(value, BuiltinVariable.SUPPORTED):
        guards.identity(source, value)
        return BuiltinVariable(value, source=source)
    return NotImplemented


def _in(value, collection):
    return trace_rules._in(value, collection)

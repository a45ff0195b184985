"""wrap(tx, value, source=None): the one way a Python value becomes a tracker.

With a `source` (where the traced program read the value: a local, a global, an
attribute, an item) the trace adds guards that keep it valid only while the value
stays as it was seen, and an object seen twice is one tracker. Without a source (a
constant in the code, a value computed at trace time, a library object dynjit
itself reached) nothing is guarded.

The tracker modules fill the type-dispatch table with `@wraps("rule", types)`;
`RULES` fixes the order in which rules matching one type are tried. A rule's
handler returns NotImplemented to leave the value to the next rule.
"""
import enum
import types
from collections import OrderedDict, defaultdict

from ... import _dtype
from ...tensor import Tensor, device
from ..exc import unimplemented, frame_runs_plain, BreakKind
from ..source import ItemSource
from .base import ConstantVariable
from .symbolic import SymNumberVariable, is_dynamic_number

CONSTANT_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis), type(NotImplemented),
                  _dtype.dtype, range, slice, device)

# the rules, most specific first; each names the tracker module that registers it
RULES = (
    "tensor",               # tensor.py: graph inputs
    "cell",                 # functions.py: closure cells
    "constant",             # base.py (below): numbers, strings, dtypes, enums, constant tuples
    "tuple",                # containers.py: tuples and namedtuples
    "list",                 # containers.py
    "dict",                 # containers.py: dict, OrderedDict, plain subclasses, defaultdict
    "set",                  # containers.py: sets made while tracing
    "autograd_function",    # autograd_function.py: Function classes, F.apply, ctx
    "function",             # functions.py: dynjit functions and Python functions
    "iterator",             # containers.py: list/tuple/range iterators, generators (sourceless)
    "method",               # functions.py: bound methods
    "builtin",              # functions.py: builtins and C functions dynjit models
    "python_module",        # objects.py
    "class",                # objects.py
    "nn_module",            # objects.py
    "object",               # objects.py: every other object
)
_handlers = {}              # rule -> (types, handler)
_dispatch = {}              # type -> the handlers whose types it matches, in RULES order


def wraps(rule, *types_):
    """Register the handler `fn(tx, value, source, guards)` of `rule` for values of `types_`."""
    if rule not in RULES:
        raise ValueError(f"unknown wrap rule {rule!r}: add it to builder.RULES")

    def register(fn):
        _handlers[rule] = (types_, fn)
        _dispatch.clear()
        return fn
    return register


class _NoGuards:
    """What a sourceless value is guarded with: nothing."""

    def __getattr__(self, name):
        return _no_guard


def _no_guard(*args, **kwargs):
    return None


NO_GUARDS = _NoGuards()


def wrap(tx, value, source=None):
    """The tracker for `value`, read by the traced program from `source` (guarded), or, without
    a source, a value that needs no guard."""
    if isinstance(getattr(type(value), "__getattribute__", None), types.FunctionType):
        # every attribute read runs the user's code (counting, logging, computing): the trace
        # and its guards would read attributes plain Python never reads
        frame_runs_plain(BreakKind.ATTRIBUTE, f"a {type(value).__name__} object, whose class defines "
                         "__getattribute__ (the frame runs plain)")
    if source is not None and _may_be_tracked(value):
        known = tx.output.side_effects.existing_object(value)
        if known is not None:      # the same object seen again: the same tracker (and its mutations)
            if known.source is not None and known.source != source:
                tx.output.guards.alias(source, known.source)
            return known
    guards = tx.output.guards if source is not None else NO_GUARDS
    handlers = _dispatch.get(type(value))
    if handlers is None:
        handlers = _dispatch[type(value)] = [
            _handlers[r][1] for r in RULES if r in _handlers and issubclass(type(value), _handlers[r][0])]
    for handler in handlers:
        var = handler(tx, value, source, guards)
        if var is not NotImplemented:
            return var
    unimplemented(BreakKind.UNSUPPORTED_VALUE, f"a value of type {type(value).__name__} that dynjit "
                  "cannot name (no source to guard it by)")


def _may_be_tracked(value):
    cls = type(value)
    return cls in (list, dict, OrderedDict, defaultdict) or plain_dict_subclass(cls) or not (
        isinstance(value, (Tensor, tuple, type, types.FunctionType)) or is_constant_value(value))


def is_constant_value(value):
    if isinstance(value, CONSTANT_TYPES):
        return True
    if isinstance(value, enum.Enum):
        return True
    if isinstance(value, (tuple, frozenset)) and not hasattr(value, "_fields"):
        return all(is_constant_value(v) for v in value)
    return False


@wraps("constant", object)
def _wrap_constant(tx, value, source, guards):
    if source is not None and is_dynamic_number(value) and source.expr() in tx.output.dynamic_scalars:
        return SymNumberVariable.from_source(value, source, guards)
    if type(value) in (int, float) and source is not None:
        # a number only passed along (an argument handed on, a dict entry never read, such as
        # the lr of a param group zero_grad walks) would recompile for every new value if its
        # value were guarded: that guard is installed the first time the trace uses it
        guards.type(source, value)
        return ConstantVariable(value, source, guard_on_use=lambda: guards.constant(source, value))
    if isinstance(value, tuple):
        return NotImplemented
    if is_constant_value(value) and not isinstance(value, frozenset) \
            or source is None and (isinstance(value, types.CodeType) or is_constant_value(value)):
        guards.constant(source, value)
        return ConstantVariable(value, source)
    return NotImplemented


# attributes every class has, or gains (copyreg caches __slotnames__ on a class it copies)
_CLASS_BOOKKEEPING = ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__firstlineno__",
                      "__static_attributes__", "__slotnames__")


def plain_dict_subclass(cls):
    """A dict subclass that only adds attributes (e.g. to be weakly referable): traced as a dict."""
    if not issubclass(cls, dict) or cls in (dict, OrderedDict):
        return False
    for klass in cls.__mro__:
        if klass in (dict, OrderedDict, object):
            continue
        if any(name.startswith("__") and name not in _CLASS_BOOKKEEPING
               or callable(v) for name, v in vars(klass).items()):
            return False
    return True


ITERATOR_TYPES = (type(iter([])), type(iter(())), type(iter(range(0))))


def iterator_items(it):
    """The items a list/tuple/range iterator has left, read without consuming it."""
    reduced = it.__reduce__()
    if len(reduced) < 3:
        return []
    seq, pos = reduced[1][0], reduced[2]
    return list(seq)[pos:]


def item_source(source, key):
    """The source of item `key` of the value read from `source` (None without one)."""
    return None if source is None else ItemSource(source, key)


build = wrap    # the old name, still used by convert_frame

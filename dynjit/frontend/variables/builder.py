"""Wrap a real Python value read from a source into a tracker, adding the
guards that make the trace valid only while the value stays as it was seen."""
import enum
import types
from collections import OrderedDict, defaultdict

from ... import _dtype
from ...tensor import Tensor
from ..exc import unimplemented, BreakKind
from ..source import LocalSource
from .base import ConstantVariable

CONSTANT_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis), type(NotImplemented),
                  _dtype.dtype, range, slice)


def is_constant_value(value):
    if isinstance(value, CONSTANT_TYPES):
        return True
    if isinstance(value, enum.Enum):
        return True
    if isinstance(value, (tuple, frozenset)) and not hasattr(value, "_fields"):
        return all(is_constant_value(v) for v in value)
    return False


def build(tx, value, source):
    """Tracker for `value`, which the traced program read from `source`."""
    from .containers import ListVariable, TupleVariable, DictVariable, NamedTupleVariable
    from .functions import (FunctionVariable, BuiltinVariable, DynjitFunctionVariable,
                            is_dynjit_callable, BoundMethodVariable)
    from .objects import (UserObjectVariable, ClassVariable, PythonModuleVariable, ModuleVariable)
    from .tensor import wrap_input_tensor
    from .functions import GradModeRestorer
    guards = tx.output.guards
    if type(value) in (list, dict, OrderedDict, defaultdict) or _plain_dict_subclass(type(value)) or not (isinstance(value, (Tensor, tuple, type, types.FunctionType))
                                            or is_constant_value(value)):
        known = tx.output.side_effects.existing_object(value)
        if known is not None:      # the same object seen again: the same tracker (and its mutations)
            if known.source is not None and source is not None and known.source != source:
                guards.alias(source, known.source)
            return known
    if isinstance(value, Tensor):
        return wrap_input_tensor(tx, value, source)
    if isinstance(value, types.CellType):     # one tracker per cell: writes seen through every reference
        from .functions import RealCellVariable
        var = RealCellVariable(value, source)
        tx.output.side_effects.track_existing(value, var)
        return var
    if type(value) in (int, float) and isinstance(source, LocalSource):
        guards.type(source, value)
        return ConstantVariable(value, source, guard_on_use=lambda: guards.constant(source, value))
    if is_constant_value(value) and not isinstance(value, (tuple, frozenset)):
        guards.constant(source, value)
        return ConstantVariable(value, source)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        guards.type_and_len(source, value)
        return TupleVariable([build(tx, v, _item(source, i)) for i, v in enumerate(value)], source=source)
    if isinstance(value, tuple):
        guards.type_and_len(source, value)
        return NamedTupleVariable(type(value), [build(tx, v, _item(source, i)) for i, v in enumerate(value)],
                                  source=source)
    if type(value) is list:
        from .containers import ExistingListVariable
        guards.type(source, value)
        var = ExistingListVariable(tx, value, source)
        tx.output.side_effects.track_existing(value, var)
        return var
    if type(value) in (dict, OrderedDict) or _plain_dict_subclass(type(value)) or _traceable_defaultdict(value):
        from .containers import _keyed_by_identity
        from ..source import ObjectKey
        items = {}
        object_keys = False
        for k, v in value.items():
            if not is_constant_value(k):
                if not _keyed_by_identity(type(k)):
                    unimplemented(BreakKind.UNSUPPORTED_VALUE, f"a dict with key {type(k).__name__} (compared by value)")
                k = ObjectKey(k, tx.output.stash(k))
                object_keys = True
            items[k] = build(tx, v, _item(source, k))
        guards.dict_keys(source, value, object_keys)
        var = DictVariable(items, source=source, cls=type(value),
                           default_factory=getattr(value, "default_factory", None))
        tx.output.side_effects.track_existing(value, var)
        return var
    from .autograd_function import build_autograd_function
    special = build_autograd_function(tx, value, source)
    if special is not None:
        return special
    if is_dynjit_callable(value):
        guards.identity(source, value)
        return DynjitFunctionVariable(value, source=source)
    if isinstance(value, types.FunctionType):
        guards.identity(source, value)
        return FunctionVariable(value, source=source)
    if type(value) in ITERATOR_TYPES:
        from .containers import IteratorVariable
        from ..source import CallSource, ItemSource
        remaining = iterator_items(value)
        items_src = CallSource("iter_items", iterator_items, source)
        guards.type(source, value)
        guards.type_and_len(items_src, remaining)
        return IteratorVariable([build(tx, v, ItemSource(items_src, k)) for k, v in enumerate(remaining)])
    if isinstance(value, types.MethodType) and isinstance(value.__self__, GradModeRestorer):
        guards.type(source, value)
        from .functions import GradModeExitVariable
        return GradModeExitVariable(value.__self__.prev)
    if isinstance(value, types.MethodType):
        guards.type(source, value)
        from ..source import AttrSource
        self_var = build(tx, value.__self__, AttrSource(source, "__self__"))
        return BoundMethodVariable(build(tx, value.__func__, AttrSource(source, "__func__")), self_var)
    if isinstance(value, types.BuiltinMethodType) and type(value.__self__) in (list, dict, OrderedDict):
        # e.g. `log.append` left on the stack at a graph break: a method of the (tracked) container
        from .functions import BuiltinMethodVariable
        from ..source import AttrSource
        guards.type(source, value)
        guards.constant(AttrSource(source, "__name__"), value.__name__)
        return BuiltinMethodVariable(build(tx, value.__self__, AttrSource(source, "__self__")), value.__name__)
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)) or _in(value, BuiltinVariable.SUPPORTED):
        guards.identity(source, value)
        return BuiltinVariable(value, source=source)
    if isinstance(value, types.ModuleType):
        guards.identity(source, value)
        return PythonModuleVariable(value, source=source)
    if isinstance(value, type):
        guards.identity(source, value)
        return ClassVariable(value, source=source)
    from ..eval_frame import is_nn_module
    if is_nn_module(value):
        guards.identity(source, value)
        return ModuleVariable(value, source=source)
    guards.type(source, value)
    var = UserObjectVariable(value, source=source)
    tx.output.side_effects.track_existing(value, var)
    return var


def _traceable_defaultdict(value):
    from .containers import DEFAULT_FACTORIES
    return type(value) is defaultdict and value.default_factory in DEFAULT_FACTORIES


# attributes every class has, or gains (copyreg caches __slotnames__ on a class it copies)
_CLASS_BOOKKEEPING = ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__firstlineno__",
                      "__static_attributes__", "__slotnames__")


def _plain_dict_subclass(cls):
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


def _in(value, collection):
    try:
        return value in collection
    except TypeError:     # unhashable
        return False


def _item(source, key):
    from ..source import ItemSource
    return ItemSource(source, key)

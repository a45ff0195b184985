"""Trackers for tuples, lists, dicts, dict views, named tuples and iterators."""
import operator
import sys
import types
from collections import OrderedDict, defaultdict

from ..exc import unimplemented, fold, BreakKind
from ..source import ObjectKey, CallSource, ItemSource
from .base import VariableTracker, ConstantVariable
from .builder import wraps, wrap, item_source, is_constant_value, plain_dict_subclass, ITERATOR_TYPES, iterator_items
from ...tensor import Size, Tensor


def _const_key(tx, key):
    """The Python key a tracker stands for: a constant, or an object read from a source
    (a tensor or module argument), kept by identity."""
    if key.is_python_constant():
        return key.as_python_constant()
    if key.source is not None and key.python_type() is not None and _keyed_by_identity(key.python_type()):
        obj = tx.output.real_value(key.source)
        return ObjectKey(obj, tx.output.stash(obj))
    unimplemented(BreakKind.UNSUPPORTED_VALUE, f"a dict key that is {key.describe()} (only constants and objects from the "
                  "function's arguments can be keys)")


def _keyed_by_identity(cls):
    return issubclass(cls, Tensor) or cls.__hash__ is object.__hash__


class BaseListVariable(VariableTracker):
    python_cls = list

    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = list(items)

    def python_type(self):
        return self.python_cls

    def describe(self):
        return f"a {self.python_cls.__name__}"

    def is_python_constant(self):
        return all(i.is_python_constant() for i in self.items)

    def as_python_constant(self):
        return self.python_cls(i.as_python_constant() for i in self.items)

    def iterate(self, tx):
        return list(self.items)

    def length(self, tx):
        return len(self.items)

    def truth(self, tx):
        return bool(self.items)

    def getitem(self, tx, key):
        k = key.as_python_constant() if key.is_python_constant() else unimplemented(BreakKind.UNSUPPORTED_VALUE, 
            f"indexing a {self.python_cls.__name__} with {key.describe()}")
        if isinstance(k, slice):
            return TupleVariable(self.items[k]) if self.python_cls is tuple else ListVariable(self.items[k])
        try:
            return self.items[k]
        except IndexError:
            unimplemented(BreakKind.USER_EXCEPTION, f"{self.python_cls.__name__} index {k} out of range (IndexError at trace time)")

    def reconstruct(self, cg):
        if self.source is not None and self.python_cls is list:
            return self.source.expr()      # the caller's own list (side effects are replayed into it)
        inner = ", ".join(cg.value(i) for i in self.items)
        if self.python_cls is tuple:
            if self.items and all(isinstance(i, ConstantVariable) for i in self.items):
                # made at run time in the program (d.items(), zip, tuple(...)): a new tuple
                # each time, where a display of literals would compile to one shared constant
                return f"(*[{inner}],)"
            return f"({inner},)" if len(self.items) == 1 else f"({inner})"
        return f"[{inner}]"


class TupleVariable(BaseListVariable):
    python_cls = tuple

    def getattr(self, tx, name):
        if name in ("count", "index"):
            from .functions import BuiltinMethodVariable
            return BuiltinMethodVariable(self, name)
        return super().getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        consts = [i.as_python_constant() for i in self.items]
        if name == "index":
            return ConstantVariable(consts.index(args[0].as_python_constant()))
        if name == "count":
            return ConstantVariable(consts.count(args[0].as_python_constant()))
        return super().call_method(tx, name, args, kwargs)


def rebuild_tuple(cls, values):
    """An instance of the tuple subclass `cls` holding `values`, made as the instance was
    (tuple.__new__, as namedtuple._make does; a structseq such as sys.version_info takes the
    sequence in its own constructor)."""
    try:
        return tuple.__new__(cls, values)
    except TypeError:
        return cls(values)


class NamedTupleVariable(TupleVariable):
    """A tuple of a subclass of tuple: a namedtuple (fields by name), a structseq-like
    result type, or a user's subclass with methods."""

    def __init__(self, cls, items, source=None, original=None):
        super().__init__(items, source)
        self.cls = cls
        self.original = original    # the program's own object, when the trace read one

    def python_type(self):
        return self.cls

    def describe(self):
        return f"a {self.cls.__name__}"

    def as_python_constant(self):
        # the same object the program holds: its class, not a plain tuple (what a builtin
        # folded on constants, such as sorted or max, returns)
        values = [i.as_python_constant() for i in self.items]
        if self.original is not None:      # immutable, and so are the constants it holds
            return self.original
        return rebuild_tuple(self.cls, values)

    def getattr(self, tx, name):
        fields = getattr(self.cls, "_fields", ())
        if name in fields:
            return self.items[fields.index(name)]
        from .objects import class_attribute
        return class_attribute(tx, self, self.cls, name)

    def reconstruct(self, cg):
        if hasattr(self.cls, "_fields"):
            return f"{cg.constant(self.cls)}({', '.join(cg.value(i) for i in self.items)})"
        if self.source is not None:
            return self.source.expr()        # the program's own object (a tuple never changes)
        items = "".join(f"{cg.value(i)}, " for i in self.items)
        return f"{cg.constant(rebuild_tuple)}({cg.constant(self.cls)}, ({items}))"


class ListVariable(BaseListVariable):
    python_cls = list

    def getattr(self, tx, name):
        from .functions import BuiltinMethodVariable
        if hasattr(list, name):
            return BuiltinMethodVariable(self, name)
        return super().getattr(tx, name)

    def _mutate(self, tx):
        tx.output.side_effects.mutated(self)

    def call_method(self, tx, name, args, kwargs):
        if name == "append":
            self._mutate(tx)
            self.items.append(args[0])
            return ConstantVariable(None)
        if name == "extend":
            self._mutate(tx)
            self.items.extend(args[0].iterate(tx))
            return ConstantVariable(None)
        if name == "insert":
            self._mutate(tx)
            self.items.insert(args[0].as_python_constant(), args[1])
            return ConstantVariable(None)
        if name == "pop":
            self._mutate(tx)
            idx = args[0].as_python_constant() if args else -1
            return self.items.pop(idx)
        if name == "clear":
            self._mutate(tx)
            self.items.clear()
            return ConstantVariable(None)
        if name == "reverse":
            self._mutate(tx)
            self.items.reverse()
            return ConstantVariable(None)
        if name == "copy":
            return ListVariable(self.items)
        if name in ("index", "count"):
            consts = [i.as_python_constant() for i in self.items]
            return ConstantVariable(getattr(consts, name)(args[0].as_python_constant()))
        if name == "sort" and self.is_python_constant():
            self._mutate(tx)
            key = kwargs.get("key")
            if key is not None and not (key.is_python_constant() and key.as_python_constant() is None):
                unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "list.sort(key=...) inside a compiled function")
            rev = kwargs.get("reverse", ConstantVariable(False)).as_python_constant()
            self.items = [ConstantVariable(v) for v in sorted(self.as_python_constant(), reverse=rev)]
            return ConstantVariable(None)
        unimplemented(BreakKind.UNSUPPORTED_BUILTIN, f"list.{name}() inside a compiled function")

    def setitem(self, tx, key, value):
        self._mutate(tx)
        k = key.as_python_constant()
        if isinstance(k, slice):
            self.items[k] = value.iterate(tx)
        else:
            self.items[k] = value

    def delitem(self, tx, key):
        self._mutate(tx)
        del self.items[key.as_python_constant()]


class DictVariable(VariableTracker):
    def __init__(self, items, source=None, cls=dict, default_factory=None):
        super().__init__(source)
        self.items = dict(items)     # constant key (or ObjectKey) -> tracker
        self.cls = cls               # dict, OrderedDict, defaultdict, a plain subclass
        self.default_factory = default_factory   # a defaultdict's (dict, list, int, ...)

    def python_type(self):
        return self.cls

    def describe(self):
        return "a dict"

    def truth(self, tx):
        return bool(self.items)

    def length(self, tx):
        return len(self.items)

    def iterate(self, tx):
        return [ConstantVariable(k) for k in self.items]

    def contains(self, tx, key):
        return _const_key(tx, key) in self.items

    def getitem(self, tx, key):
        k = _const_key(tx, key)
        if k not in self.items:
            if self.default_factory is None:
                unimplemented(BreakKind.USER_EXCEPTION, f"dict key {k!r} not present (KeyError at trace time)")
            tx.output.side_effects.mutated(self)     # a defaultdict inserts the default
            self.items[k] = _new_default(self.default_factory)
        return self.items[k]

    def setitem(self, tx, key, value):
        tx.output.side_effects.mutated(self)
        self.items[_const_key(tx, key)] = value

    def delitem(self, tx, key):
        tx.output.side_effects.mutated(self)
        del self.items[_const_key(tx, key)]

    def getattr(self, tx, name):
        from .functions import BuiltinMethodVariable
        if hasattr(self.cls, name):
            return BuiltinMethodVariable(self, name)
        unimplemented(BreakKind.ATTRIBUTE, f"dict attribute {name!r}")

    def call_method(self, tx, name, args, kwargs):
        if name in ("keys", "values", "items") and not args and not kwargs:
            return DictViewVariable(self, name)
        if name == "get":
            k = _const_key(tx, args[0])
            return self.items.get(k, args[1] if len(args) > 1 else ConstantVariable(None))
        if name == "__contains__":
            return ConstantVariable(self.contains(tx, args[0]))
        if name == "pop":
            tx.output.side_effects.mutated(self)
            k = _const_key(tx, args[0])
            if k in self.items:
                return self.items.pop(k)
            if len(args) > 1:
                return args[1]
            unimplemented(BreakKind.USER_EXCEPTION, f"dict.pop of missing key {k!r}")
        if name == "setdefault":
            k = _const_key(tx, args[0])
            if k not in self.items:
                tx.output.side_effects.mutated(self)
                self.items[k] = args[1] if len(args) > 1 else ConstantVariable(None)
            return self.items[k]
        if name == "update":
            tx.output.side_effects.mutated(self)
            other = args[0] if args else None
            if isinstance(other, DictVariable):
                self.items.update(other.items)
            elif other is not None:
                for pair in other.iterate(tx):
                    k, v = pair.iterate(tx)
                    self.items[_const_key(tx, k)] = v
            for k, v in kwargs.items():
                self.items[k] = v
            return ConstantVariable(None)
        if name == "copy":
            return DictVariable(self.items, cls=self.cls, default_factory=self.default_factory)
        if name == "clear":
            tx.output.side_effects.mutated(self)
            self.items.clear()
            return ConstantVariable(None)
        unimplemented(BreakKind.UNSUPPORTED_BUILTIN, f"dict.{name}() inside a compiled function")

    def reconstruct(self, cg):
        if self.source is not None:
            return self.source.expr()
        literal = "{" + ", ".join(f"{cg.constant(k)}: {cg.value(v)}" for k, v in self.items.items()) + "}"
        if self.default_factory is not None:
            return f"{cg.constant(self.cls)}({cg.constant(self.default_factory)}, {literal})"
        return literal if self.cls is dict else f"{cg.constant(self.cls)}({literal})"


class DictViewVariable(VariableTracker):
    """`d.keys()`, `d.values()`, `d.items()`: live views, as Python's are. They read the dict
    tracker as it is when they are used (a key added after the view was made is in it), and
    an iterator over one stops the trace where the dict changes size under it."""

    def __init__(self, dict_var, kind):
        super().__init__()
        self.dict_var = dict_var
        self.kind = kind            # "keys", "values" or "items"

    def python_type(self):
        return type(getattr({}, self.kind)())

    def describe(self):
        return f"a dict_{self.kind} view"

    def iterate(self, tx):
        d = self.dict_var
        if self.kind == "keys":
            return d.iterate(tx)
        if self.kind == "values":
            return list(d.items.values())
        return [TupleVariable([k, v]) for k, v in zip(d.iterate(tx), d.items.values())]

    def length(self, tx):
        return len(self.dict_var.items)

    def truth(self, tx):
        return bool(self.dict_var.items)

    def contains(self, tx, item):
        if self.kind == "keys":
            return self.dict_var.contains(tx, item)
        if self.kind == "items":
            if not isinstance(item, TupleVariable) or len(item.items) != 2:
                return False
            key, value = item.items
            if not self.dict_var.contains(tx, key):
                return False
            return equal_as_contains(tx, self.dict_var.items[_const_key(tx, key)], value)
        return any(equal_as_contains(tx, v, item) for v in self.dict_var.items.values())

    def is_python_constant(self):
        return all(not isinstance(k, ObjectKey) for k in self.dict_var.items) and (
            self.kind == "keys" or all(v.is_python_constant() for v in self.dict_var.items.values()))

    def as_python_constant(self):
        """A real view of the same kind over a copy: set operations, comparisons and repr
        are Python's own."""
        d = self.dict_var
        if not self.is_python_constant():
            return super().as_python_constant()
        if self.kind == "keys":
            return dict.fromkeys(d.items).keys()
        copy = {k: v.as_python_constant() for k, v in d.items.items()}
        return copy.values() if self.kind == "values" else copy.items()

    def getattr(self, tx, name):
        from .functions import BuiltinMethodVariable
        if name in ("isdisjoint", "__len__", "__contains__", "__iter__", "__reversed__", "mapping"):
            if name == "mapping":
                return self.dict_var
            return BuiltinMethodVariable(self, name)
        return super().getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":
            return ConstantVariable(self.length(tx))
        if name == "__contains__":
            return ConstantVariable(self.contains(tx, args[0]))
        if name == "__iter__":
            return live_iter(tx, self)
        if name == "__reversed__":
            return IteratorVariable(list(reversed(self.iterate(tx))))
        if name == "isdisjoint" and self.is_python_constant() and args[0].is_python_constant():
            return ConstantVariable(fold(self.as_python_constant().isdisjoint, args[0].as_python_constant()))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        return f"{cg.value(self.dict_var)}.{self.kind}()"


class SetVariable(VariableTracker):
    """A set made while tracing, of constants. It keeps a real set that every method the
    program calls is applied to, in the program's order, so its contents and iteration order
    are plain Python's; it is rebuilt as a new set where it outlives the trace."""

    MUTATING = frozenset(("add", "discard", "remove", "pop", "clear", "update", "difference_update",
                          "intersection_update", "symmetric_difference_update", "__ior__", "__iand__",
                          "__isub__", "__ixor__"))
    READING = frozenset(("union", "intersection", "difference", "symmetric_difference", "issubset",
                         "issuperset", "isdisjoint", "copy", "__len__", "__contains__", "__or__", "__and__",
                         "__sub__", "__xor__"))

    def __init__(self, value):
        super().__init__()
        self.value = value          # the real set (constants only)

    def python_type(self):
        return set

    def describe(self):
        return "a set"

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.value

    def iterate(self, tx):
        return [ConstantVariable(v) for v in self.value]

    def length(self, tx):
        return len(self.value)

    def truth(self, tx):
        return bool(self.value)

    def contains(self, tx, item):
        return fold(operator.contains, self.value, item.as_python_constant())

    def getattr(self, tx, name):
        from .functions import BuiltinMethodVariable
        if name in self.MUTATING or name in self.READING:
            return BuiltinMethodVariable(self, name)
        return super().getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name in self.MUTATING or name in self.READING:
            values = [a.as_python_constant() for a in args]
            if not all(is_constant_value(v) or isinstance(v, (set, frozenset, list, tuple, dict)) for v in values):
                unimplemented(BreakKind.UNSUPPORTED_VALUE, f"set.{name} with these arguments")
            result = fold(getattr(self.value, name), *values,
                          **{k: v.as_python_constant() for k, v in kwargs.items()})
            return wrap(tx, result)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        return f"set({cg.constant(tuple(self.value))})"


def equal_as_contains(tx, a, b):
    """`a == b` as `in` decides it: the same object is equal without comparing."""
    if tx.is_same(a, b):
        return True
    if a.is_python_constant() and b.is_python_constant():
        return fold(operator.eq, a.as_python_constant(), b.as_python_constant())
    return tx.truth(tx.binary_op(operator.eq, a, b))


def set_of(tx, items):
    """The tracker of a new set of these trackers' values (a set display, set(...))."""
    if not all(i.is_python_constant() for i in items):
        unimplemented(BreakKind.UNSUPPORTED_VALUE, "a set of non-constant values")
    return wrap(tx, {i.as_python_constant() for i in items})


@wraps("set", set)
def _wrap_set(tx, value, source, guards):
    if source is not None or type(value) is not set or not all(is_constant_value(v) for v in value):
        return NotImplemented
    known = tx.output.side_effects.existing_object(value)
    if known is not None:           # the same set again (what `s |= t` returns): one tracker
        return known
    var = SetVariable(value)
    tx.output.side_effects.track_existing(value, var)
    return var


DEFAULT_FACTORIES = (dict, list, int, float)


def _new_default(factory):
    if factory is dict:
        return DictVariable({})
    if factory is list:
        return ListVariable([])
    return ConstantVariable(factory())


class IteratorVariable(VariableTracker):
    """An iterator over items known at trace time (GET_ITER / FOR_ITER)."""

    def __init__(self, items, real_type=None, generator=False):
        super().__init__()
        self.items = list(items)
        self.index = 0
        self.real_type = real_type   # the type the plain program's iterator has, where known
        # a generator run to completion at trace time: only its items can stand in for it
        self.generator = generator

    def describe(self):
        return "a generator" if self.generator else "an iterator"

    def python_type(self):
        if self.generator:
            return types.GeneratorType
        if self.real_type is None:
            return super().python_type()
        return self.real_type

    def next(self):
        if self.index >= len(self.items):
            return None
        item = self.items[self.index]
        self.index += 1
        return item

    def iterate(self, tx):
        rest = self.items[self.index:]
        self.index = len(self.items)
        return rest

    def reconstruct(self, cg):
        if self.generator:
            # a list iterator is no generator (send, throw, close, its frame, its type)
            unimplemented(BreakKind.FRAME_STRUCTURE, "a generator object outlives the trace (returned, "
                          "stored, or live at a graph break): the frame runs plain")
        return "iter([" + ", ".join(cg.value(v) for v in self.items[self.index:]) + "])"


class ExistingIteratorVariable(IteratorVariable):
    """An iterator the function was given (a list, tuple or range iterator): its remaining
    items are guarded, and the items the trace consumed are consumed from the real iterator
    after the graph runs, so the caller sees it advanced as plain Python leaves it."""

    def __init__(self, items, source, effects):
        super().__init__(items)
        self.source = source
        self._effects = effects

    exhausted = False           # the trace saw it end (plain Python's iterator then drops its list)

    def next(self):
        item = super().next()
        self._effects.mutated(self)
        if item is None:
            self.exhausted = True
        return item

    def iterate(self, tx):
        self._effects.mutated(self)
        self.exhausted = True
        return super().iterate(tx)

    def reconstruct(self, cg):
        return self.source.expr()


class ContainerIteratorVariable(IteratorVariable):
    """`iter(list)` / `iter(dict)` while tracing: live over the container, as Python's are.
    Items appended to a list during the loop are visited; a dict whose keys change during
    the loop stops the trace there, and the native loop raises Python's RuntimeError."""

    def __init__(self, container):
        super().__init__([])
        self.container = container
        self.view = container if isinstance(container, DictViewVariable) else None
        if self.view is not None:
            container = self.container = self.view.dict_var
        self.keys = list(container.items) if isinstance(container, DictVariable) else None

    def _current(self):
        if self.keys is None:
            return self.container.items
        if list(self.container.items) != self.keys:
            unimplemented(BreakKind.USER_EXCEPTION, "a dict changed size during iteration (raises natively)")
        return (self.view or self.container).iterate(None)

    @property
    def items(self):
        return self._current() if hasattr(self, "container") else []

    @items.setter
    def items(self, value):
        pass


def live_iter(tx, v):
    """The iterator `iter(v)` gives, as a tracker: over a list or dict, live (it sees the
    container's later changes, as Python's does); over other values, their items now."""
    if isinstance(v, IteratorVariable):
        return v
    if type(v) in (ListVariable, ExistingListVariable, DictVariable, DictViewVariable):
        v.iterate(tx)                   # what iterating it requires (guards, checks)
        return ContainerIteratorVariable(v)
    return IteratorVariable(v.iterate(tx))


class LazyIteratorVariable(IteratorVariable):
    """zip / enumerate / map / filter / reversed while tracing: each item is computed when it
    is asked for, from the underlying iterators, as Python's builtins do, so a list changed
    inside the loop is seen."""

    def __init__(self, step):
        super().__init__([])
        self._step = step               # () -> the next item's tracker, or None when done
        self._done = False

    def next(self):
        if self._done:
            return None
        item = self._step()
        if item is None:
            self._done = True
        return item

    def iterate(self, tx):
        rest = []
        while (item := self.next()) is not None:
            rest.append(item)
        return rest

    def reconstruct(self, cg):
        # a map/filter/zip object is lazy: computing its rest now would run the mapped function
        # before the caller asks (or when it never does), and give a list iterator
        unimplemented(BreakKind.FRAME_STRUCTURE, "a map, filter, zip, enumerate or reversed object outlives the "
                      "trace (returned, stored, or live at a graph break): the frame runs plain")


def lazy_zip(tx, args, strict):
    its = [live_iter(tx, a) for a in args]

    def step():
        items = []
        for i, it in enumerate(its):
            item = it.next()
            if item is None:
                if strict and (i > 0 or any(other.next() is not None for other in its[1:])):
                    unimplemented(BreakKind.USER_EXCEPTION, "zip(strict=True) over iterables of different "
                                  "lengths (raises natively)")
                return None
            items.append(item)
        return TupleVariable(items)
    return LazyIteratorVariable(step)


def lazy_enumerate(tx, arg, start):
    it, count = live_iter(tx, arg), [start]

    def step():
        item = it.next()
        if item is None:
            return None
        count[0] += 1
        return TupleVariable([ConstantVariable(count[0] - 1), item])
    return LazyIteratorVariable(step)


def lazy_map(tx, fn, args):
    zipped = lazy_zip(tx, args, strict=False)

    def step():
        items = zipped.next()
        return None if items is None else fn.call(tx, list(items.items), {})
    return LazyIteratorVariable(step)


def lazy_filter(tx, fn, arg):
    it = live_iter(tx, arg)
    identity = fn.is_python_constant() and fn.as_python_constant() is None

    def step():
        while (item := it.next()) is not None:
            if tx.truth(item if identity else fn.call(tx, [item], {})):
                return item
        return None
    return LazyIteratorVariable(step)


def lazy_reversed(tx, arg):
    if type(arg) not in (ListVariable, ExistingListVariable):
        return IteratorVariable(list(reversed(arg.iterate(tx))))
    arg.iterate(tx)
    index = [len(arg.items) - 1]

    def step():                         # Python's list_reverseiterator: by index, from the end
        items = arg.items
        if 0 <= index[0] < len(items):
            index[0] -= 1
            return items[index[0] + 1]
        index[0] = -1
        return None
    return LazyIteratorVariable(step)


class ExistingListVariable(ListVariable):
    """A list that existed before the call. Its items are read, and guarded,
    only when the trace reads them: a list the function only appends to (a
    log, a history) is guarded by type alone, and the appends replay as
    appends, so a growing list does not recompile the function."""

    def __init__(self, tx, value, source):
        VariableTracker.__init__(self, source)
        self._tx = tx
        self._value = value
        self._items = None
        self.appended = []

    @property
    def append_only(self):
        return self._items is None

    @property
    def items(self):
        if self._items is None:
            self._tx.output.guards.type_and_len(self.source, self._value)
            self._items = [wrap(self._tx, v, item_source(self.source, i)) for i, v in enumerate(self._value)]
            self._items.extend(self.appended)
            self.appended = []
        return self._items

    @items.setter
    def items(self, new_items):
        self.items       # realize first: the old items' guards still hold
        self._items = list(new_items)

    def call_method(self, tx, name, args, kwargs):
        if self._items is None and name in ("append", "extend"):
            new = [args[0]] if name == "append" else list(args[0].iterate(tx))
            self._mutate(tx)
            self.appended.extend(new)
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)


@wraps("tuple", tuple)
def _wrap_tuple(tx, value, source, guards):
    if type(value) is Size and is_constant_value(tuple(value)):
        if source is not None:
            guards.constant(source, value)      # a shape passed in: guarded as its sizes
        return ConstantVariable(value, source)
    cls = type(value)
    if cls is not tuple and getattr(value, "__dict__", None):
        return NotImplemented        # a tuple subclass whose instance holds attributes: an object
    guards.type_and_len(source, value)
    items = [wrap(tx, v, item_source(source, i)) for i, v in enumerate(value)]
    if cls is not tuple:             # namedtuples and other subclasses keep their class
        return NamedTupleVariable(cls, items, source=source, original=value)
    return TupleVariable(items, source=source)


@wraps("list", list)
def _wrap_list(tx, value, source, guards):
    if source is None:
        return ListVariable([wrap(tx, v) for v in value])
    if type(value) is not list:
        return NotImplemented
    guards.type(source, value)
    var = ExistingListVariable(tx, value, source)
    tx.output.side_effects.track_existing(value, var)
    return var


def _is_module_namespace(value):
    """A module's globals dict (what `globals()` or `vars(module)` gives)."""
    name = value.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    return module is not None and getattr(module, "__dict__", None) is value


@wraps("dict", dict)
def _wrap_dict(tx, value, source, guards):
    if type(value) is dict and _is_module_namespace(value):
        # the program's globals as a dict: a write through it must be seen by the next
        # LOAD_GLOBAL, which reads the real dict; it runs natively
        unimplemented(BreakKind.UNSUPPORTED_VALUE, "a module's globals dict as a value (globals(), vars(module))")
    if not (type(value) in (dict, OrderedDict) or plain_dict_subclass(type(value))
            or type(value) is defaultdict and value.default_factory in DEFAULT_FACTORIES):
        return NotImplemented
    if source is None:
        return DictVariable({k: wrap(tx, v) for k, v in value.items()})
    items = {}
    object_keys = False
    for k, v in value.items():
        if not is_constant_value(k):
            if not _keyed_by_identity(type(k)):
                unimplemented(BreakKind.UNSUPPORTED_VALUE, f"a dict with key {type(k).__name__} (compared by value)")
            k = ObjectKey(k, tx.output.stash(k))
            object_keys = True
        items[k] = wrap(tx, v, item_source(source, k))
    guards.dict_keys(source, value, object_keys)
    var = DictVariable(items, source=source, cls=type(value),
                       default_factory=getattr(value, "default_factory", None))
    tx.output.side_effects.track_existing(value, var)
    return var


_LAZY_ITERATORS = (types.GeneratorType, zip, map, enumerate, reversed)


@wraps("iterator", *ITERATOR_TYPES, *_LAZY_ITERATORS)
def _wrap_iterator(tx, value, source, guards):
    if source is None:          # made at trace time (a folded call's result): read it now
        return IteratorVariable([wrap(tx, v) for v in value], type(value),
                                generator=isinstance(value, types.GeneratorType))
    if type(value) not in ITERATOR_TYPES:
        return NotImplemented
    remaining = iterator_items(value)
    items_src = CallSource("iter_items", iterator_items, source)
    guards.type(source, value)
    guards.type_and_len(items_src, remaining)
    var = ExistingIteratorVariable([wrap(tx, v, ItemSource(items_src, k)) for k, v in enumerate(remaining)],
                                   source, tx.output.side_effects)
    tx.output.side_effects.track_existing(value, var)
    return var

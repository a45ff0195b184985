"""Trackers for objects: user-defined instances (existing or created while
tracing), classes, Python modules, nn.Modules and super()."""
import abc
import inspect
import types

from ..exc import unimplemented, fold, frame_runs_plain, BreakKind, Unsupported
from ..guards import module_hooks_present
from ..source import AttrSource, ItemSource, LocalSource
from .base import VariableTracker, ConstantVariable
from .builder import wraps, wrap
from ...autograd.grad_mode import enable_grad, no_grad, set_grad_enabled
from ...nn import Module, Parameter, ModuleList, Sequential
from ...tensor import Size, Tensor, device
from ..source import ConstSource
from .builder import is_constant_value
from .containers import IteratorVariable, NamedTupleVariable, TupleVariable, live_iter
from .functions import BoundMethodVariable, BuiltinVariable, CellVariable, FunctionVariable, GradModeVariable
from .tensor import TensorVariable


def class_attribute(tx, obj_var, cls, name):
    """Look `name` up on `cls` (the MRO) as attribute access on an instance would.

    The entry found is guarded (identity, or value for a constant) where it was
    found, and so is the lookup: `name` absent from the instance's own __dict__
    and from every class before it in the MRO (`GuardBuilder.class_lookup`)."""
    guards = tx.output.guards
    instance = getattr(obj_var, "value", getattr(obj_var, "module", None))
    klass, attr, attr_src = guards.class_lookup(cls, name, obj_var.source, instance)
    if isinstance(attr, (staticmethod, classmethod, types.FunctionType, property)):
        guards.identity(attr_src, attr)     # their __func__ / fget cannot be reassigned
    if isinstance(attr, staticmethod):
        return FunctionVariable(attr.__func__)
    if isinstance(attr, classmethod):
        return BoundMethodVariable(FunctionVariable(attr.__func__), ClassVariable(cls))
    if isinstance(attr, types.FunctionType):
        return BoundMethodVariable(FunctionVariable(attr), obj_var)
    if isinstance(attr, property):
        if attr.fget is None:
            unimplemented(BreakKind.ATTRIBUTE, f"reading write-only property {name}")
        return FunctionVariable(attr.fget).call(tx, [obj_var], {})
    if is_constant_value(attr):
        guards.constant(attr_src, attr)
        return ConstantVariable(attr)
    if hasattr(attr, "__get__") and not isinstance(attr, type):
        unimplemented(BreakKind.ATTRIBUTE, f"attribute {name!r} is a descriptor of type {type(attr).__name__}")
    return wrap(tx, attr, attr_src)


def _plain_class(cls):
    """A user class whose instances the tracer can create (no custom __new__, no slots magic)."""
    return (cls.__new__ is object.__new__ and getattr(cls, "__getattr__", None) is None
            and cls.__getattribute__ is object.__getattribute__ and cls.__setattr__ is object.__setattr__
            and not any(vars(klass).get("__slots__") for klass in cls.__mro__)
            and any("__dict__" in vars(klass) for klass in cls.__mro__[:-1])
            and (type(cls) is type or type(cls) is abc.ABCMeta and not cls.__abstractmethods__))


class UserObjectVariable(VariableTracker):
    """An object that existed before the call (reached through a source)."""

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value
        self.attrs = {}      # attributes read or written while tracing
        self.written = []    # attribute names written (replayed after the graph)

    def python_type(self):
        return type(self.value)

    def describe(self):
        return f"a {type(self.value).__name__} object"

    def getattr(self, tx, name):
        if name == "__dict__":
            _instance_dict_read()
        if name in self.attrs:
            return self.attrs[name]
        cls = type(self.value)
        if cls.__getattribute__ is not object.__getattribute__:
            unimplemented(BreakKind.ATTRIBUTE, f"{cls.__name__} defines __getattribute__")
        d = getattr(self.value, "__dict__", None)
        if d is not None and name in d and not _is_data_descriptor(cls, name):
            var = wrap(tx, d[name], AttrSource(self.source, name))
            self.attrs[name] = var
            return var
        try:
            return class_attribute(tx, self, cls, name)
        except AttributeError:
            if getattr(cls, "__getattr__", None) is not None:
                unimplemented(BreakKind.ATTRIBUTE, f"{cls.__name__} defines __getattr__")
            raise

    def setattr(self, tx, name, value):
        if type(self.value).__setattr__ is not object.__setattr__:
            unimplemented(BreakKind.MUTATION, f"{type(self.value).__name__} defines __setattr__")
        if not store_through_class(tx, self, type(self.value), name, value, self.value):
            return
        tx.output.side_effects.mutated(self)
        if name not in self.written:
            self.written.append(name)
        self.attrs[name] = value

    def truth(self, tx):
        cls = type(self.value)
        if hasattr(cls, "__bool__") or hasattr(cls, "__len__"):
            unimplemented(BreakKind.UNSUPPORTED_VALUE, f"truth value of a {cls.__name__} (it defines __bool__/__len__)")
        return True

    def reconstruct(self, cg):
        return self.source.expr()


def store_through_class(tx, obj_var, cls, name, value, instance=None):
    """`obj.name = value` as Python runs it: a data descriptor found on the class (a property's
    setter, a user descriptor's `__set__`) is called; an object without a `__dict__` raises for
    a name that is not one of its slots. Returns whether the caller stores `value` as the
    instance's own attribute (or slot)."""
    guards = tx.output.guards
    try:
        _, attr, attr_src = guards.class_lookup(cls, name)   # the instance's own value does not matter
    except AttributeError:
        attr = attr_src = None
    if attr is not None and hasattr(type(attr), "__set__"):
        if isinstance(attr, property):
            guards.identity(attr_src, attr)      # its fset cannot be reassigned
            if attr.fset is None:
                unimplemented(BreakKind.USER_EXCEPTION,
                              f"property {name!r} of {cls.__name__} has no setter (it raises natively)")
            FunctionVariable(attr.fset).call(tx, [obj_var, value], {})
            return False
        if isinstance(attr, types.MemberDescriptorType):      # a __slots__ entry
            guards.identity(attr_src, attr)
            return True
        setter = getattr(type(attr), "__set__")
        if not isinstance(setter, types.FunctionType):
            unimplemented(BreakKind.MUTATION, f"setting {name!r} through a {type(attr).__name__} descriptor")
        descriptor = wrap(tx, attr, attr_src)
        method = class_attribute(tx, descriptor, type(attr), "__set__")
        method.call(tx, [obj_var, value], {})
        return False
    if attr is not None:
        guards.identity(attr_src, attr) if not is_constant_value(attr) else guards.constant(attr_src, attr)
    if instance is not None and not isinstance(getattr(instance, "__dict__", None), dict):
        unimplemented(BreakKind.USER_EXCEPTION,
                      f"{cls.__name__} object has no __dict__ and no slot {name!r} (it raises natively)")
    return True


def _instance_dict_read():
    # its writes and the object's attribute reads and writes would be two views of one dict
    # that the trace keeps apart (a write through one not seen by the other)
    frame_runs_plain(BreakKind.UNSUPPORTED_VALUE, "an object's __dict__ as a value (the frame runs plain)")


def _is_data_descriptor(cls, name):
    for klass in cls.__mro__:
        if name in vars(klass):
            attr = vars(klass)[name]
            return hasattr(attr, "__set__") or hasattr(attr, "__delete__")
    return False


class NewObjectVariable(VariableTracker):
    """An instance of a user class created while tracing."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls
        self.attrs = {}

    def python_type(self):
        return self.cls

    def describe(self):
        return f"a new {self.cls.__name__} object"

    def getattr(self, tx, name):
        if name == "__dict__":
            _instance_dict_read()
        if name in self.attrs:
            return self.attrs[name]
        if name == "__class__":
            return ClassVariable(self.cls)
        return class_attribute(tx, self, self.cls, name)

    def setattr(self, tx, name, value):
        if store_through_class(tx, self, self.cls, name, value):
            self.attrs[name] = value

    def truth(self, tx):
        if hasattr(self.cls, "__bool__") or hasattr(self.cls, "__len__"):
            unimplemented(BreakKind.UNSUPPORTED_VALUE, f"truth value of a {self.cls.__name__} (it defines __bool__/__len__)")
        return True

    def reconstruct(self, cg):
        return cg.new_object(self)


class ClassVariable(VariableTracker):
    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def describe(self):
        return f"class {self.cls.__name__}"

    def python_type(self):
        return type(self.cls)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.cls

    def make_source(self, tx):
        return self.source or ConstSource(tx.output.stash(self.cls))

    def reconstruct(self, cg):
        return cg.constant(self.cls)

    def getattr(self, tx, name):
        for klass in self.cls.__mro__:
            if name in vars(klass):
                attr = vars(klass)[name]
                if isinstance(attr, (staticmethod, classmethod)):
                    _, attr, attr_src = tx.output.guards.class_lookup(self.cls, name)
                    tx.output.guards.identity(attr_src, attr)
                if isinstance(attr, staticmethod):
                    return FunctionVariable(attr.__func__)
                if isinstance(attr, classmethod):
                    return BoundMethodVariable(FunctionVariable(attr.__func__), self)
                return wrap(tx, attr, AttrSource(self.make_source(tx), name))
        if name in ("__name__", "__qualname__", "__module__"):
            return ConstantVariable(getattr(self.cls, name))
        raise AttributeError(f"type object '{self.cls.__name__}' has no attribute '{name}'")

    def call(self, tx, args, kwargs):
        cls = self.cls
        if cls in VALUE_CLASSES and all(a.is_python_constant() for a in list(args) + list(kwargs.values())):
            # an immutable library value (dynjit.device("cpu")): made at trace time, a constant
            return wrap(tx, fold(cls, *[a.as_python_constant() for a in args],
                                 **{k: v.as_python_constant() for k, v in kwargs.items()}))
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            return _make_namedtuple(tx, cls, args, kwargs)
        if cls is Size and len(args) <= 1 and not kwargs:
            from .tensor import SizeVariable
            from .symbolic import SymNumberVariable
            items = args[0].iterate(tx) if args else []
            if not any(isinstance(i, SymNumberVariable) for i in items):
                return wrap(tx, fold(Size, [i.as_python_constant() for i in items]))
            return SizeVariable(items)      # dynamic sizes
        if cls is types.CellType and not kwargs and len(args) <= 1:   # a new cell (resume code's MAKE_CELL)
            return CellVariable(args[0] if args else None)
        if issubclass(cls, BaseException):
            unimplemented(BreakKind.UNSUPPORTED_VALUE, f"creating or raising an exception ({cls.__name__}) inside a compiled function")
        if cls in BuiltinVariable.SUPPORTED or getattr(cls, "__module__", None) == "builtins":
            return BuiltinVariable(cls).call(tx, args, kwargs)
        if cls in (no_grad, enable_grad, set_grad_enabled):
            return GradModeVariable.create(tx, cls, args)
        if cls is Tensor:                   # Tensor(data): a constant tensor, as dynjit.tensor(data)
            return tx.output.record(cls, args, kwargs)
        if issubclass(cls, Tensor):
            unimplemented(BreakKind.UNSUPPORTED_VALUE, f"constructing an instance of the Tensor subclass "
                          f"{cls.__name__} inside a compiled function")
        if not _plain_class(cls):
            unimplemented(BreakKind.UNSUPPORTED_VALUE, f"creating an instance of {cls.__name__} (custom __new__/__setattr__/__slots__ "
                          "or metaclass)")
        obj = NewObjectVariable(cls)
        init = getattr(cls, "__init__")
        if init is not object.__init__:
            if not isinstance(init, types.FunctionType):
                unimplemented(BreakKind.UNKNOWN_CALLABLE, f"{cls.__name__}.__init__ is not a Python function")
            result = FunctionVariable(init).call(tx, [obj] + list(args), kwargs)
            if not (result.is_python_constant() and result.as_python_constant() is None):
                unimplemented(BreakKind.USER_EXCEPTION, "__init__ returned a value")
        elif args or kwargs:
            unimplemented(BreakKind.USER_EXCEPTION, f"{cls.__name__}() takes no arguments")
        return obj


def _make_namedtuple(tx, cls, args, kwargs):
    fields = cls._fields
    values = list(args)
    defaults = getattr(cls, "_field_defaults", {})
    for f in fields[len(values):]:
        if f in kwargs:
            values.append(kwargs[f])
        elif f in defaults:
            values.append(ConstantVariable(defaults[f]))
        else:
            unimplemented(BreakKind.USER_EXCEPTION, f"{cls.__name__}() missing field {f!r}")
    return NamedTupleVariable(cls, values)


class PythonModuleVariable(VariableTracker):
    def __init__(self, module, source=None):
        super().__init__(source)
        self.module = module

    def describe(self):
        return f"module {self.module.__name__}"

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.module

    def getattr(self, tx, name):
        # a global the trace assigned in this module (an inlined function's `global N; N += 1`)
        pending = tx.output.side_effects.global_overrides(self.module.__dict__)
        if name in pending:
            return pending[name]
        value = getattr(self.module, name)
        mod = self.module.__name__
        if mod.split(".")[0] in ("dynjit", "math", "operator", "builtins", "functools", "itertools"):
            return wrap(tx, value)   # library attributes are not guarded
        return wrap(tx, value, AttrSource(self.source, name))

    def reconstruct(self, cg):
        return cg.constant(self.module)


_SLICED_BY_POSITION = (ModuleList, Sequential)
# immutable library value classes whose instances are constants of the trace
VALUE_CLASSES = (device,)


class ModuleVariable(VariableTracker):
    """An nn.Module instance: attribute reads are guarded, calls inline forward."""

    def __init__(self, module, source=None):
        super().__init__(source)
        self.module = module
        self.attrs = {}      # plain attributes written while tracing (replayed after the graph)
        self.written = []

    def python_type(self):
        return type(self.module)

    def describe(self):
        return f"module {type(self.module).__name__}"

    def getattr(self, tx, name):
        if name == "__dict__":
            _instance_dict_read()
        if name in self.attrs:
            return self.attrs[name]
        mod = self.module
        if name not in mod.__dict__ and not hasattr(type(mod), name):
            # parameters, buffers and submodules: their source reads the dict directly, so the
            # guards do not go through Module.__getattr__ on every call
            for store in ("_parameters", "_buffers", "_modules"):
                entries = mod.__dict__.get(store)
                if entries is None:
                    continue
                tracked = tx.output.side_effects.existing_object(entries)
                if tracked is not None:
                    # the trace read this dict (and may have written it: `_parameters[n] = w`):
                    # its entries as the trace left them
                    if name in tracked.items:
                        return tracked.items[name]
                elif name in entries:
                    return wrap(tx, entries[name], ItemSource(AttrSource(self.source, store), name))
        try:
            value = getattr(self.module, name)
        except AttributeError:
            if self.source is not None:       # hasattr / getattr with a default: it must stay absent
                guards = tx.output.guards
                for store in ("_parameters", "_buffers", "_modules"):
                    if isinstance(mod.__dict__.get(store), dict):
                        guards.absent_key(AttrSource(self.source, store), name)
                try:
                    guards.class_lookup(type(mod), name, self.source, mod)
                except AttributeError:
                    pass
            raise
        if isinstance(value, types.MethodType) and value.__self__ is self.module and name not in mod.__dict__:
            if name in MEMBER_ITERATORS and value.__func__ is _library_method(name):
                _, attr, attr_src = tx.output.guards.class_lookup(type(mod), name, self.source, mod)
                tx.output.guards.identity(attr_src, attr)
                return ModuleMembersVariable(self, name)
            return class_attribute(tx, self, type(mod), name)
        return wrap(tx, value, AttrSource(self.source, name))

    def call(self, tx, args, kwargs):
        mod = self.module
        guards = tx.output.guards
        _, call, call_src = guards.class_lookup(type(mod), "__call__")
        guards.identity(call_src, call)
        if call is not Module.__call__ or type(mod)._call_impl is not Module._call_impl:
            unimplemented(BreakKind.UNKNOWN_CALLABLE, f"calling a module whose class overrides __call__ ({type(mod).__name__})")
        hooks = module_hooks_present(mod)
        if hooks:
            unimplemented(BreakKind.UNKNOWN_CALLABLE, f"calling a module with {', '.join(h.lstrip('_') for h in hooks)} registered "
                          "inside a compiled function")
        if self.source is not None:
            guards.no_module_hooks(self.source)     # hooks registered later: recompile
        # what Module.__call__ runs: self.forward (an instance attribute first)
        return self.getattr(tx, "forward").call(tx, list(args), kwargs)

    def setattr(self, tx, name, value):
        """`self.name = value` in forward, for a value Module.__setattr__ stores as a plain
        attribute or a buffer; it is replayed (through Module.__setattr__) after the graph."""
        mod, cls = self.module, type(self.module)
        if cls.__setattr__ is not Module.__setattr__ or self.source is None:
            unimplemented(BreakKind.MUTATION, f"setting attribute {name!r} on {self.describe()} (custom __setattr__)")
        try:
            value_type = value.python_type()
        except Unsupported:
            value_type = None
        if value_type is not None and issubclass(value_type, (Module, Parameter)):
            unimplemented(BreakKind.MUTATION, f"registering {value_type.__name__} {name!r} on an nn.Module inside "
                          "a compiled function")
        guards = tx.output.guards
        for store in ("_parameters", "_modules", "_buffers"):
            entries = mod.__dict__.get(store)
            if not isinstance(entries, dict):
                unimplemented(BreakKind.MUTATION, f"setting attribute {name!r} on a module before Module.__init__()")
            if name in entries:
                if store != "_buffers" or not (isinstance(value, TensorVariable) or value.is_python_constant()
                                               and value.as_python_constant() is None):
                    unimplemented(BreakKind.MUTATION, f"assigning to {store[1:-1]} {name!r} of an nn.Module "
                                  "inside a compiled function")
                guards.dict_keys(AttrSource(self.source, store), entries)
            else:
                guards.absent_key(AttrSource(self.source, store), name)
        if _is_data_descriptor(cls, name):
            unimplemented(BreakKind.MUTATION, f"setting {cls.__name__}.{name} (a property or descriptor)")
        tx.output.side_effects.mutated(self)
        if name not in self.written:
            self.written.append(name)
        self.attrs[name] = value

    # the container protocol (ModuleList, Sequential, ModuleDict, ParameterList, a user's own
    # __iter__/__len__/__getitem__): the class's method, inlined, as Python's implicit call runs it
    def _dunder(self, tx, name, args):
        cls = type(self.module)
        try:
            _, fn, fn_src = tx.output.guards.class_lookup(cls, name)
        except AttributeError:
            unimplemented(BreakKind.USER_EXCEPTION, f"module {cls.__name__} has no {name} (a TypeError natively)")
        if not isinstance(fn, types.FunctionType):
            unimplemented(BreakKind.UNKNOWN_CALLABLE, f"{cls.__name__}.{name} is not a Python function")
        tx.output.guards.identity(fn_src, fn)
        return FunctionVariable(fn).call(tx, [self] + list(args), {})

    def iterate(self, tx):
        return live_iter(tx, self._dunder(tx, "__iter__", [])).iterate(tx)

    def length(self, tx):
        return self._dunder(tx, "__len__", []).as_python_constant()

    def getitem(self, tx, key):
        if type(self.module) in _SLICED_BY_POSITION and key.is_python_constant() \
                and isinstance(key.as_python_constant(), slice):
            # `self.blocks[1:]` builds a new container natively; traced, it holds the same children
            cls = type(self.module)
            _, fn, fn_src = tx.output.guards.class_lookup(cls, "__getitem__")
            tx.output.guards.identity(fn_src, fn)
            return ModuleSliceVariable(cls, self.iterate(tx)[key.as_python_constant()])
        return self._dunder(tx, "__getitem__", [key])

    def contains(self, tx, item):
        return tx.truth(self._dunder(tx, "__contains__", [item]))

    def reconstruct(self, cg):
        return self.source.expr()


class ModuleSliceVariable(VariableTracker):
    """A slice of a ModuleList or Sequential made while tracing (`self.layers[:-1]`): the
    children it holds, each guarded where it lives in the original container."""

    def __init__(self, cls, items):
        super().__init__()
        self.cls = cls
        self.items = list(items)

    def python_type(self):
        return self.cls

    def describe(self):
        return f"a slice of a {self.cls.__name__}"

    def iterate(self, tx):
        return list(self.items)

    def length(self, tx):
        return len(self.items)

    def truth(self, tx):
        return True

    def getitem(self, tx, key):
        index = key.as_python_constant()
        if isinstance(index, slice):
            return ModuleSliceVariable(self.cls, self.items[index])
        if not -len(self.items) <= index < len(self.items):
            unimplemented(BreakKind.USER_EXCEPTION, f"index {index} out of range for {self.describe()} (raises natively)")
        return self.items[index]

    def call(self, tx, args, kwargs):
        if not issubclass(self.cls, Sequential) or len(args) != 1 or kwargs:
            unimplemented(BreakKind.UNKNOWN_CALLABLE, f"calling {self.describe()}")
        value = args[0]
        for module in self.items:        # Sequential.forward
            value = module.call(tx, [value], {})
        return value


MEMBER_ITERATORS = ("parameters", "named_parameters", "buffers", "named_buffers", "children",
                    "named_children", "modules", "named_modules")


def _library_method(name):
    return getattr(Module, name)


class ModuleMembersVariable(VariableTracker):
    """`module.parameters()` and its kin, read from the real module at trace time.

    Each item gets a source through the `_modules` / `_parameters` /
    `_buffers` dicts; the guards are the keys of every dict walked and one
    check that the items are still distinct objects (eager drops duplicates)."""

    def __init__(self, module_var, name):
        super().__init__()
        self.module_var = module_var
        self.name = name

    def describe(self):
        return f"module method {self.name}"

    def call(self, tx, args, kwargs):
        try:
            bound = inspect.signature(getattr(self.module_var.module, self.name)).bind(
                *[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
        except TypeError as e:
            unimplemented(BreakKind.USER_EXCEPTION, f"{self.name}() called with {e}")
        options = bound.arguments
        recurse = options.get("recurse", True)
        prefix = options.get("prefix", "")
        guards = tx.output.guards
        walked = self._modules(tx, self.module_var.module, self.module_var.source, prefix,
                               recurse or self.name in ("modules", "named_modules"))
        if self.name in ("children", "named_children"):
            root = self.module_var.module
            walked = [(n, m, src) for n, m, src in walked if m is not root and "." not in n[len(prefix):].lstrip(".")]
        if self.name in ("modules", "named_modules", "children", "named_children"):
            members = [(n, m, src) for n, m, src in walked]
        else:
            store = "_parameters" if "parameters" in self.name else "_buffers"
            members = []
            for mod_name, mod, mod_src in walked:
                store_src = AttrSource(mod_src, store)
                guards.dict_keys(store_src, getattr(mod, store))
                for key, value in getattr(mod, store).items():
                    if value is not None:
                        members.append((f"{mod_name}.{key}" if mod_name else key, value, ItemSource(store_src, key)))
        seen, unique = set(), []
        for entry in members:
            if id(entry[1]) not in seen:
                seen.add(id(entry[1]))
                unique.append(entry)
        if unique:
            guards.distinct([src for _, _, src in members], len(unique))
        items = [wrap(tx, value, src) for _, value, src in unique]
        if self.name.startswith("named_"):
            items = [TupleVariable([ConstantVariable(n), v]) for (n, _, _), v in zip(unique, items)]
        # the library methods return generators without running them: their type, for isinstance
        real_type = type(getattr(self.module_var.module, self.name)(*bound.args, **bound.kwargs))
        return IteratorVariable(items, real_type)

    @staticmethod
    def _modules(tx, module, source, prefix, recurse):
        """(qualified name, module, source) for module and, if recurse, every submodule."""
        out = [(prefix, module, source)]
        if not recurse:
            return out
        modules_src = AttrSource(source, "_modules")
        tx.output.guards.dict_keys(modules_src, module._modules)
        for name, child in module._modules.items():
            if child is not None:
                child_src = ItemSource(modules_src, name)
                tx.output.guards.identity(child_src, child)
                out += ModuleMembersVariable._modules(tx, child, child_src, f"{prefix}.{name}" if prefix else name,
                                                      True)
        return out


class SuperVariable(VariableTracker):
    def __init__(self, cls, obj):
        super().__init__()
        self.cls = cls
        self.obj = obj

    def getattr(self, tx, name):
        # super(C, obj) looks after C in type(obj)'s MRO; super(C, cls) (in a classmethod, or
        # super(C, C2) for a subclass C2) in cls's own MRO, binding as the class would
        on_class = isinstance(self.obj, ClassVariable)
        owner = self.obj.cls if on_class else self.obj.python_type()
        mro = owner.__mro__
        if self.cls not in mro:
            unimplemented(BreakKind.USER_EXCEPTION, "super(type, obj): obj must be an instance or subtype "
                          "of type (raises natively)")
        start = mro.index(self.cls) + 1
        guards = tx.output.guards
        for klass in mro[start:]:
            if name in vars(klass):
                attr = vars(klass)[name]
                guards.identity(ItemSource(guards.class_dict(klass), name), attr)
                if isinstance(attr, staticmethod):
                    return FunctionVariable(attr.__func__)
                if isinstance(attr, classmethod):
                    return BoundMethodVariable(FunctionVariable(attr.__func__),
                                               self.obj if on_class else ClassVariable(owner))
                if isinstance(attr, types.FunctionType):
                    return FunctionVariable(attr) if on_class else BoundMethodVariable(FunctionVariable(attr), self.obj)
                if isinstance(attr, property) and not on_class and attr.fget is not None:
                    return FunctionVariable(attr.fget).call(tx, [self.obj], {})
                if attr is object.__init__ and not on_class:
                    return _NoOp()
                unimplemented(BreakKind.ATTRIBUTE, f"super().{name} of kind {type(attr).__name__}")
            guards.absent_key(guards.class_dict(klass), name)
        raise AttributeError(name)


class _NoOp(VariableTracker):
    def call(self, tx, args, kwargs):
        return ConstantVariable(None)


@wraps("python_module", types.ModuleType)
def _wrap_python_module(tx, value, source, guards):
    guards.identity(source, value)
    if source is None:
        source = ConstSource(tx.output.stash(value))
    return PythonModuleVariable(value, source=source)


@wraps("class", type)
def _wrap_class(tx, value, source, guards):
    guards.identity(source, value)
    return ClassVariable(value, source=source)


def _in_resumed_code(tx):
    from ..resume import origin
    return origin(tx.output.fn.__code__)[1] is not None


@wraps("nn_module", object)
def _wrap_nn_module(tx, value, source, guards):
    from ..eval_frame import is_nn_module
    if source is None or not is_nn_module(value):
        return NotImplemented
    if isinstance(source, LocalSource) and _in_resumed_code(tx):
        # what code resumed after a graph break is handed may be made anew on every call (a
        # loss module built just before the break, `nn.MSELoss()(x, y)`): an identity guard
        # would fail on each call. Every read from the module is guarded through its source.
        guards.type(source, value)
    else:
        guards.identity(source, value)
    var = ModuleVariable(value, source=source)
    tx.output.side_effects.track_existing(value, var)
    return var


@wraps("object", object)
def _wrap_object(tx, value, source, guards):
    if source is None:
        if callable(value):         # a library callable dynjit reached itself: called as a builtin
            return BuiltinVariable(value)
        unimplemented(BreakKind.UNSUPPORTED_VALUE, f"a constant of type {type(value).__name__}")
    guards.type(source, value)
    var = UserObjectVariable(value, source=source)
    tx.output.side_effects.track_existing(value, var)
    return var

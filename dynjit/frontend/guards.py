"""Guards as data. Every assumption a trace makes is a record
`Guard(source, kind, expected)` built by the one GuardBuilder; kinds come from
the closed set `Kind`. From a record are derived, by one template per kind:
  - its code (a Python expression over the compiled function's arguments),
    all of a cache entry's guards compiled into one function with the
    compiled function's own signature (`guard.source` prints it);
  - its readable text (the same template rendered with constants written
    out), and the explanation of a failure (`failure_reason`), which reads
    the current value at the record's source and says how it differs from
    the record's `expected`.
No guard is ever parsed back from its text.

What a cache entry keeps alive: a guard that checks the identity of a user's
object (an instance, a module, a function or class defined inside a function)
holds it weakly: its code compares `id(value)` with the id the trace saw, and
when the object dies every such check is made to fail for good and the entry
is dropped (`EntryLife`). Objects that live as long as their module (classes
and functions defined at module level, modules, builtins) and values that
cannot be weakly referenced (ints, strings, tuples) are held as they are.
Tensors are never kept: a tensor guard records metadata (`TensorSpec`)."""
import contextlib
import enum
import sys
import types
import weakref
from collections import OrderedDict, defaultdict, namedtuple

from .. import _dtype, _jit_callback
from ..autograd.grad_mode import state as _grad_state
from ..tensor import Tensor
from .variables.symbolic import is_dynamic_number
from .dynamic_marks import ConstraintViolationError
from .source import local_name
from .source import (Source, LocalSource, GlobalSource, ConstSource, AttrSource, ItemSource,
                     ClosureCellSource, DefaultSource, CallSource, ObjectKey)


class Kind(enum.Enum):
    TYPE = "type"                          # type(source) is expected
    IDENTITY = "identity"                  # source is expected
    CONSTANT = "constant value"            # same type, equal value (identity for singletons, NaN)
    TYPE_LEN = "type and length"           # expected = (type, len)
    DICT_KEYS = "dict keys"                # expected = (type, keys, keys compared by identity)
    TENSOR = "tensor"                      # expected = TensorSpec; dtype, sizes, strides, requires_grad
    TENSOR_DYNAMIC = "tensor (dynamic sizes)"   # expected = TensorSpec; dtype, rank, requires_grad
    ALIAS = "alias"                        # source is expected (another Source)
    DISTINCT = "distinct objects"          # source = tuple of sources; expected = number of distinct ids
    GRAD_MODE = "grad mode"                # source None; expected = grad enabled
    DEFAULT_DTYPE = "default dtype"        # source None; expected = dynjit.get_default_dtype()
    NO_KEY = "key absent"                  # expected not in source (a __dict__: an attribute not set there)
    NO_MODULE_HOOKS = "no hooks on the module"  # source = an nn.Module; expected None
    NO_GLOBAL_MODULE_HOOKS = "no global module hooks"  # source None; expected = the global hook dicts


class Guard(namedtuple("Guard", "source kind expected")):
    """One assumption: the value at `source` is as `kind` and `expected` say."""
    __slots__ = ()

    def __repr__(self):
        return f"Guard({self.source!r}, {self.kind.name}, {_short(self.expected)})"


TensorSpec = namedtuple("TensorSpec", "cls np_dtype shape strides requires_grad inference")


class ClassDictSource(Source):
    """A class's own namespace (`vars(cls)`, a live mappingproxy), stashed once: lookups in it
    cost a dict lookup, not an attribute read. A cache entry's copy holds the class weakly
    when the class is a user's local one (`weakened`)."""

    def __init__(self, cls, key, proxy_key):
        self._cls = cls
        self.key = key              # stash key of the class
        self.proxy_key = proxy_key  # stash key of vars(cls)
        self.name = cls.__qualname__

    @property
    def cls(self):
        cls = self._cls
        return cls() if isinstance(cls, weakref.ref) else cls

    def weakened(self):
        copy = ClassDictSource.__new__(ClassDictSource)
        copy.__dict__.update(self.__dict__)
        copy._cls = weakref.ref(self.cls)
        return copy

    def expr(self):
        return f"K[{self.proxy_key!r}]"


# hooks every module call consults (attribute names on the module, as Module._call_impl reads them)
MODULE_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def _global_hook_dicts():
    from ..nn.modules import module as _m
    return (_m._global_forward_hooks, _m._global_forward_pre_hooks, _m._global_backward_hooks,
            _m._global_backward_pre_hooks)


def module_hooks_present(mod):
    """The names of hook dicts (of `mod`, or global) that are not empty."""
    names = [h for h in MODULE_HOOK_DICTS if getattr(mod, h, None)]
    if any(_global_hook_dicts()):
        names.append("global module hooks")
    return names


_SINGLETON_TYPES = (type(None), bool, _dtype.dtype, type(Ellipsis), type(NotImplemented))


# -- what a cache entry holds weakly -----------------------------------------------------------
def _module_level(obj):
    """`obj` is what its module's namespace names it (a class or function defined at module
    level): it lives as long as its module, so holding it costs nothing."""
    mod = sys.modules.get(getattr(obj, "__module__", None) or "")
    qualname = getattr(obj, "__qualname__", None)
    if mod is None or not isinstance(qualname, str) or "<" in qualname:
        return False
    found = mod
    for part in qualname.split("."):
        # namespaces' own dicts, not getattr: an attribute lookup would intern the name for good
        namespace = getattr(found, "__dict__", None)
        if not isinstance(namespace, (dict, types.MappingProxyType)):
            return False
        found = namespace.get(part)
        if isinstance(found, (staticmethod, classmethod)):
            found = found.__func__
        if found is None:
            return False
    return found is obj


_MODULE_LEVEL = {}      # id -> a class or function found at module level (held: they live on)


def weakly_held(obj):
    """Whether a cache entry that guards `obj`'s identity holds it weakly: a user's object
    (an instance, a function or class defined inside a function). Modules, code, builtins,
    module-level classes and functions, and values that cannot be weakly referenced are
    held as they are."""
    if _MODULE_LEVEL.get(id(obj)) is obj:
        return False
    if isinstance(obj, (types.ModuleType, types.CodeType, types.BuiltinFunctionType, types.MethodType,
                        types.MethodWrapperType, types.WrapperDescriptorType, _dtype.dtype)):
        return False
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    if isinstance(obj, (type, types.FunctionType)):
        if _module_level(obj):
            _MODULE_LEVEL[id(obj)] = obj
            return False
        return True
    if isinstance(obj, enum.Enum):
        return not _module_level(type(obj))
    return True


class Weak:
    """A guard record's expected object, held weakly (call it for the object, or None)."""
    __slots__ = ("ref", "text", "__weakref__")

    def __init__(self, obj):
        self.ref = weakref.ref(obj)
        self.text = _short(obj)

    def __call__(self):
        return self.ref()

    def __repr__(self):
        return self.text


def strong(value):
    """The object behind a record's expected value (None if it died)."""
    return value() if isinstance(value, Weak) else value


class _WeakObjectKey(ObjectKey):
    """An ObjectKey of a cache entry's guard record: the object held weakly."""

    def __init__(self, key):
        self._ref = weakref.ref(key.obj)
        self.name = key.name
        self._hash = id(key.obj)

    @property
    def obj(self):
        return self._ref()

    def __hash__(self):
        return self._hash


def weaken_source(source, weak_ids):
    """`source` with the objects it names (dict keys, classes) held weakly if they are in
    `weak_ids`; the same object when it names none."""
    if isinstance(source, ClassDictSource):
        return source.weakened() if id(source.cls) in weak_ids else source
    if isinstance(source, ObjectKey):
        return _WeakObjectKey(source) if id(source.obj) in weak_ids else source
    if isinstance(source, tuple):
        items = tuple(weaken_source(s, weak_ids) for s in source)
        return source if all(a is b for a, b in zip(items, source)) else items
    base = getattr(source, "base", None)
    key = getattr(source, "key", None)
    new_base = weaken_source(base, weak_ids) if isinstance(base, Source) else base
    new_key = weaken_source(key, weak_ids) if isinstance(key, ObjectKey) else key
    if new_base is base and new_key is key:
        return source
    copy = object.__new__(type(source))
    copy.__dict__.update(source.__dict__)
    copy.base = new_base
    if isinstance(source, ItemSource):
        copy.key = new_key
    return copy


def _source_objects(source):
    """The objects a source names (dict keys that are objects, classes whose namespace it reads)."""
    if isinstance(source, ClassDictSource):
        yield source.cls
    elif isinstance(source, tuple):
        for s in source:
            yield from _source_objects(s)
    elif isinstance(source, Source):
        if isinstance(source, ItemSource) and isinstance(source.key, ObjectKey):
            yield source.key.obj
        base = getattr(source, "base", None)
        if isinstance(base, Source):
            yield from _source_objects(base)


class GuardConsts(dict):
    """`K`, the constants a cache entry's generated code reads: held strongly, or weakly (in
    `weak`: read through `__missing__`) for the user's objects whose identity its guard
    checks, or computed (`vars` of a weakly held class)."""

    def __init__(self):
        super().__init__()
        self.weak = {}            # key -> weakref.ref
        self.class_dicts = {}     # key of vars(cls) -> key of cls

    def __missing__(self, key):
        ref = self.weak.get(key)
        if ref is not None:
            obj = ref()
            if obj is None:
                raise ReferenceError(f"dynjit: an object a cache entry was compiled for ({key}) no "
                                     "longer exists")
            return obj
        cls_key = self.class_dicts.get(key)
        if cls_key is not None:
            return vars(self[cls_key])
        raise KeyError(key)

    def lookup(self, key, default=None):
        try:
            return self[key]
        except (KeyError, ReferenceError):
            return default


class EntryLife:
    """A cache entry's life: when an object it holds weakly dies (the weak references'
    callback), every identity check of its guard is made to fail for good (its id cells get
    a value no object has) and `on_death` (set by the compiled function: drop the entry)
    runs."""

    def __init__(self):
        self.dead = False
        self.id_cells = []        # the guard's closure cells holding ids
        self.on_death = None
        self.names = {}           # id(weak reference) -> what it refers to, for the user
        self.cause = None         # after death: what died

    def hold(self, value):
        """A weak reference to `value` whose death ends this life."""
        ref = weakref.ref(value, self)
        name = getattr(value, "__qualname__", None)
        self.names[id(ref)] = name if isinstance(name, str) else f"a {type(value).__name__} object"
        return ref

    def __call__(self, ref=None):
        if self.dead:
            return
        self.dead = True
        self.cause = self.names.get(id(ref), "an object")
        for cell in self.id_cells:
            cell.cell_contents = (-1,) if isinstance(cell.cell_contents, tuple) else -1
        on_death, self.on_death = self.on_death, None
        if on_death is not None:
            on_death()


# -- rendering: one template per kind, two renderers ----------------------------------------------
_MISSING = object()


_SHAREABLE = (GlobalSource, AttrSource, ItemSource, ClosureCellSource, DefaultSource, CallSource)


class _CodeRenderer:
    """Renders sources and constants as the guard function's code; constants are closure
    cells: the object (`___k_<key>`), a weak reference called to read it (`___w_<key>()`), or
    for an identity check of a weakly held object its id (`___i_<key>`)."""

    def __init__(self, consts, stash=None, weak_ids=frozenset()):
        self.consts = consts
        self._stash = stash
        self.weak_ids = weak_ids
        self._any_weak = bool(weak_ids) or isinstance(consts, GuardConsts)
        self.cells = {}           # cell name -> stash key
        self.weak_cells = {}      # cell name -> stash key (a weak reference)
        self.id_cells = {}        # cell name -> id, or tuple of ids

    @classmethod
    def of(cls, output, weak_ids=frozenset()):
        return cls(output.consts, output.stash, weak_ids)

    def _weak_key(self, key):
        if not self._any_weak:
            return False
        weak = getattr(self.consts, "weak", None)
        if weak is not None:
            return key in weak
        value = self.consts.get(key, _MISSING)
        return value is not _MISSING and id(value) in self.weak_ids

    def k(self, value):
        return self.cell(self._stash(value))

    def is_(self, expr, value):
        """`expr is value`; for a weakly held value, its id is compared."""
        if id(value) in self.weak_ids:
            name = f"___i_{self._stash(value)}"
            self.id_cells[name] = id(value)
            return f"id({expr}) == {name}"
        return f"{expr} is {self.k(value)}"

    def ids(self, expr, values):
        """The items of `expr` are `values`, by identity."""
        if any(id(v) in self.weak_ids for v in values):
            kept = [v for v in values if id(v) not in self.weak_ids]
            if kept:        # the others' ids must stay theirs: keep them alive
                self.k(tuple(kept))
            name = f"___i_ids{len(self.id_cells)}"
            self.id_cells[name] = tuple(id(v) for v in values)
            return f"tuple(map(id, {expr})) == {name}"
        return f"all(a is b for a, b in zip({expr}, {self.k(values)}))"

    def cell(self, key):
        if self._weak_key(key):
            name = f"___w_{key}"
            self.weak_cells[name] = key
            return f"{name}()"
        name = f"___k_{key}"
        self.cells[name] = key
        return name

    def lit(self, value):
        return repr(value)

    def share(self, guards):
        """From now on, render each source that `guards` reach more than once (the source of a
        guard, or a prefix of one: `G['opt'].param_groups[0]` of every parameter's check) as an
        assignment expression where it is first evaluated and as that name after, so the guard
        function looks every object up once."""
        uses = {}
        for g in guards:
            for source in _guard_sources(g):
                seen = set()
                while isinstance(source, _SHAREABLE) and source not in seen:
                    seen.add(source)
                    uses[source] = uses.get(source, 0) + 1
                    source = source.base if hasattr(source, "base") else None
        self._shared = {s for s, n in uses.items() if n > 1}
        self._bound = {}

    @contextlib.contextmanager
    def unshared(self):
        """Render without binding new names (inside a comprehension's iterable, where an
        assignment expression is not allowed); names bound before may still be read."""
        saved, self._shared = self._shared, frozenset()
        try:
            yield
        finally:
            self._shared = saved

    _shared = frozenset()
    _bound = None

    def src(self, source):
        bound = self._bound
        if bound is not None:
            name = bound.get(source)
            if name is not None:
                return name
            if source in self._shared:
                name = bound[source] = f"___s{len(bound)}"
                return f"({name} := {self._src(source)})"
        return self._src(source)

    def _src(self, source):
        if isinstance(source, LocalSource):
            return source.expr()
        if isinstance(source, ClassDictSource):
            if self._weak_key(source.key):
                return f"vars({self.cell(source.key)})"
            return self.cell(source.proxy_key)
        if isinstance(source, ConstSource):
            return self.cell(source.key)
        if isinstance(source, GlobalSource):
            return f"G[{source.name!r}]"
        if isinstance(source, AttrSource):
            if source.attr.isidentifier():       # no name mangling outside a class body
                return f"{self.src(source.base)}.{source.attr}"
            return f"getattr({self.src(source.base)}, {source.attr!r})"
        if isinstance(source, ItemSource):
            key = self.cell(source.key.name) if isinstance(source.key, ObjectKey) else repr(source.key)
            return f"{self.src(source.base)}[{key}]"
        if isinstance(source, ClosureCellSource):
            return f"{self.src(source.base)}.__closure__[{source.index}]"
        if isinstance(source, DefaultSource):
            if source.kw:
                return f"{self.src(source.base)}.__kwdefaults__[{source.index!r}]"
            return f"{self.src(source.base)}.__defaults__[{source.index}]"
        if isinstance(source, CallSource):
            self.consts[source.key] = source.fn
            return f"{self.cell(source.key)}({self.src(source.base)})"
        return source.expr()          # an unknown source: its own expression (K, G in scope)


class _ReadableRenderer(_CodeRenderer):
    """Renders the same templates for people: constants written out, classes by name."""

    def __init__(self, consts):
        super().__init__(consts)

    def k(self, value):
        return _short(value)

    def is_(self, expr, value):
        return f"{expr} is {_short(value)}"

    def ids(self, expr, values):
        return f"all(a is b for a, b in zip({expr}, {_short(values)}))"

    def cell(self, key):
        if isinstance(self.consts, GuardConsts):
            value = self.consts.lookup(key, _MISSING)
        else:
            value = self.consts.get(key, _MISSING)
        return _short(value) if value is not _MISSING else f"K[{key!r}]"

    def src(self, source):
        if isinstance(source, ClassDictSource):
            return f"{source.name}.__dict__"
        return super().src(source)


def _short(value):
    if isinstance(value, Weak):
        return value.text
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        text = repr(type(value)(_Text(_short(v)) for v in value))
    elif isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
        text = getattr(value, "__qualname__", repr(value))
    elif isinstance(value, Source):
        text = value.expr()
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Text(str):
    def __repr__(self):
        return str(self)


def _name(cls):
    return cls.text if isinstance(cls, Weak) else cls.__qualname__


def _template(g, r):
    """The check of guard record `g`, rendered by `r` (code or readable text)."""
    if not isinstance(g.source, Source) or r._bound is None or r._bound.get(g.source):
        return _render(g, r, None)
    e = r.src(g.source)
    if g.source not in r._bound:
        return _render(g, r, e)
    # the template may name its source several times: bind it at the first (the first
    # evaluated: templates are conjunctions read left to right) and read the name after
    code = _render(g, r, e)
    i = code.index(e) + len(e)
    return code[:i] + code[i:].replace(e, r._bound[g.source])


def _guard_sources(g):
    if isinstance(g.source, Source):
        yield g.source
    elif g.kind is Kind.DISTINCT:
        yield from g.source
    if g.kind is Kind.ALIAS:
        yield g.expected


def _render(g, r, e):
    kind, exp = g.kind, g.expected
    if e is None:
        e = r.src(g.source) if isinstance(g.source, Source) else None
    if kind is Kind.TYPE:
        return r.is_(f"type({e})", exp)
    if kind is Kind.IDENTITY:
        return r.is_(e, exp)
    if kind is Kind.CONSTANT:
        if isinstance(exp, _SINGLETON_TYPES) or isinstance(exp, enum.Enum):
            return r.is_(e, exp)
        if isinstance(exp, float) and exp != exp:
            return f"type({e}) is float and {e} != {e}"
        if isinstance(exp, float) and exp == 0.0:     # 0.0 == -0.0, but copysign and str differ
            return f"type({e}) is float and {e} == 0.0 and str({e}) == {str(exp)!r}"
        return f"{r.is_(f'type({e})', type(exp))} and {e} == {r.k(exp)}"
    if kind is Kind.TYPE_LEN:
        cls, n = exp
        return f"{r.is_(f'type({e})', cls)} and len({e}) == {n}"
    if kind is Kind.DICT_KEYS:
        cls, keys, object_keys = exp
        t = f"type({e}) is dict" if cls is dict else r.is_(f"type({e})", cls)
        if object_keys:       # identity: `==` on tensors is elementwise
            return f"{t} and len({e}) == {len(keys)} and {r.ids(e, keys)}"
        return f"{t} and list({e}) == {r.k(keys)}"
    if kind is Kind.TENSOR or kind is Kind.TENSOR_DYNAMIC:
        if isinstance(r, _ReadableRenderer):
            sizes = (f"shape {exp.shape}, strides {exp.strides}" if kind is Kind.TENSOR
                     else f"{len(exp.shape)} dimensions")
            return (f"{e}: a {_name(exp.cls)} of dtype {exp.np_dtype}, {sizes}, "
                    f"requires_grad={exp.requires_grad}" + (", an inference tensor" if exp.inference else ""))
        # inlined (a guard checks many tensors: a call each would cost more than the checks);
        # dtype by identity first (numpy's builtin dtypes are singletons), equality if not
        dt = r.k(exp.np_dtype)
        head = (f"{r.is_(f'type(___t := {e})', exp.cls)} and "
                f"((___d := (___a := ___t._data).dtype) is {dt} or ___d == {dt})")
        if kind is Kind.TENSOR:
            sizes = f"___a.shape == {exp.shape!r} and ___a.strides == {exp.strides!r}"
        else:
            sizes = f"___a.ndim == {len(exp.shape)}"
        return (f"{head} and {sizes} and ___t._requires_grad is {exp.requires_grad!r} "
                f"and ___t._is_inference is {exp.inference!r}")
    if kind is Kind.ALIAS:
        return f"{e} is {r.src(exp)}"
    if kind is Kind.DISTINCT:
        with r.unshared():      # the items are a comprehension's iterable
            items = ", ".join(r.src(s) for s in g.source)
        return f"len({{id(v) for v in ({items},)}}) == {exp}"
    if kind is Kind.GRAD_MODE:
        return f"___grad_state.enabled is {exp!r}"
    if kind is Kind.DEFAULT_DTYPE:
        return f"___default_dtype[0] is {r.k(exp)}"
    if kind is Kind.NO_KEY:
        return f"{exp!r} not in {e}"
    if kind is Kind.NO_MODULE_HOOKS:
        return "not (" + " or ".join(f"{e}.{h}" for h in MODULE_HOOK_DICTS) + ")"
    if kind is Kind.NO_GLOBAL_MODULE_HOOKS:
        if isinstance(r, _ReadableRenderer):
            return "no global module hooks registered"
        return "not (" + " or ".join(r.k(d) for d in exp) + ")"
    raise AssertionError(f"unknown guard kind {kind}")


class GuardBuilder:
    def __init__(self, output):
        self.output = output
        self.guards = []
        self._seen = set()
        self._class_dicts = {}
        # library code reads the default dtype while tracing (factories, type promotion)
        self.default_dtype()

    # -- building ---------------------------------------------------------------------------------
    def add(self, guard):
        assert isinstance(guard, Guard) and isinstance(guard.kind, Kind), guard
        key = self._key(guard)
        if key not in self._seen:
            self._seen.add(key)
            self.guards.append(guard)

    def _key(self, g):
        if g.kind is Kind.TENSOR:
            return (Kind.TENSOR, g.source)
        return _template(g, _CodeRenderer.of(self.output))

    def type(self, source, value):
        self.add(Guard(source, Kind.TYPE, type(value)))

    def identity(self, source, value):
        self.add(Guard(source, Kind.IDENTITY, value))

    def constant(self, source, value):
        self.add(Guard(source, Kind.CONSTANT, value))

    def type_and_len(self, source, value):
        self.add(Guard(source, Kind.TYPE_LEN, (type(value), len(value))))

    def dict_keys(self, source, value, object_keys=False):
        self.add(Guard(source, Kind.DICT_KEYS, (type(value), list(value), object_keys)))
        if isinstance(value, defaultdict):
            self.identity(AttrSource(source, "default_factory"), value.default_factory)

    def tensor(self, source, t):
        # sizes static or dynamic: decided at compile time (finalize)
        self.add(Guard(source, Kind.TENSOR, TensorSpec(type(t), t._data.dtype, t._data.shape, t._data.strides,
                                                       t._requires_grad, t._is_inference)))

    def alias(self, source, other):
        """`source` is the same object as `other` (one object reached two ways)."""
        self.add(Guard(source, Kind.ALIAS, other))

    def distinct(self, sources, count):
        self.add(Guard(tuple(sources), Kind.DISTINCT, count))

    def grad_mode(self, enabled):
        self.add(Guard(None, Kind.GRAD_MODE, enabled))

    def default_dtype(self):
        self.add(Guard(None, Kind.DEFAULT_DTYPE, _dtype.get_default_dtype()))

    def absent_attr(self, source, name):
        """`name` is not in the object's own `__dict__` (an attribute the trace read from its class)."""
        self.absent_key(AttrSource(source, "__dict__"), name)

    def absent_key(self, source, key):
        """`key` is not in the mapping at `source` (a class's namespace, a module's _parameters)."""
        self.add(Guard(source, Kind.NO_KEY, key))

    def no_module_hooks(self, source):
        """The module at `source` has no hooks, nor are there global module hooks."""
        self.add(Guard(source, Kind.NO_MODULE_HOOKS, None))
        self.add(Guard(None, Kind.NO_GLOBAL_MODULE_HOOKS, _global_hook_dicts()))

    def class_dict(self, cls):
        """The (guard-ready) source of `vars(cls)`."""
        source = self._class_dicts.get(cls)
        if source is None:     # one per class: vars(cls) is a new proxy each time
            source = self._class_dicts[cls] = ClassDictSource(cls, self.output.stash(cls),
                                                              self.output.stash(vars(cls)))
        return source

    def class_lookup(self, cls, name, instance_source=None, instance=None):
        """Look `name` up the MRO of `cls` as an attribute read through an instance does, without
        running descriptors; guards that the lookup finds the same entry: `name` absent from the
        instance's own __dict__ (when `instance_source` is given and the entry is no data
        descriptor) and from every class before the one it is found in. Returns (class, raw
        attribute, source of the raw attribute); the caller guards the value itself. Raises
        AttributeError if no class has it."""
        has_dict = instance_source is not None and isinstance(getattr(instance, "__dict__", None), dict)
        for klass in cls.__mro__:
            if name in vars(klass):
                attr = vars(klass)[name]
                break
        else:
            # absent everywhere (hasattr / getattr with a default): guard that it stays absent
            if has_dict:
                self.absent_attr(instance_source, name)
            for klass in cls.__mro__:
                self.absent_key(self.class_dict(klass), name)
            raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
        if has_dict and not (hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__")):
            self.absent_attr(instance_source, name)
        for before in cls.__mro__:
            if before is klass:
                break
            self.absent_key(self.class_dict(before), name)
        return klass, attr, ItemSource(self.class_dict(klass), name)

    # -- compiling --------------------------------------------------------------------------------
    def finalize(self):
        """Resolve tensor guards: dynamic sizes if asked for and the trace never read a size."""
        effects = self.output.side_effects
        if effects.count:
            # the trace mutated objects it kept one tracker each for: two of them that are one
            # object at run time would see each other's writes, which the trace did not
            sources = [var.source for _, var in effects._objects.values() if var.source is not None]
            if len(sources) > 1:
                self.distinct(sources, len(sources))
        specialized = self.output.shape_specialized
        dynamic = self.output.dynamic and not specialized
        marked = self.output.tensor_marks
        if specialized:
            strict = [src for src, marks in marked.items() if "dynamic" in marks.values()]
            if strict:
                raise ConstraintViolationError(
                    f"{strict[0]} has a dimension marked dynamic (dynjit.mark_dynamic), but the compiled "
                    "code read a size of a tensor computed inside it, which makes every size static. Use "
                    "dynjit.maybe_mark_dynamic to allow specializing it.")
        if dynamic or (marked and not specialized):
            # marked tensors: the sizes not marked dynamic are guarded one dimension at a time
            self.guards = [Guard(g.source, Kind.TENSOR_DYNAMIC, g.expected)
                           if g.kind is Kind.TENSOR and (dynamic or g.source.expr() in marked) else g
                           for g in self.guards]
        return dynamic

    def compile(self, signature, fn):
        """The guard function of this trace. `guard.consts` is `K` for the entry's generated
        code (user objects whose identity is guarded held weakly), `guard.life` the entry's
        EntryLife, `guard.guards` the records (their objects held weakly too)."""
        # the compiled function's own defaults are bound by the guard's signature: a new tuple
        # (or kwdefaults dict) assigned to the function must recompile
        fn_src = ConstSource(self.output.stash(fn))
        if fn.__defaults__ is not None:
            self.identity(AttrSource(fn_src, "__defaults__"), fn.__defaults__)
        if fn.__kwdefaults__ is not None:
            self.identity(AttrSource(fn_src, "__kwdefaults__"), fn.__kwdefaults__)
        self.finalize()
        weak_ids = self._weak_ids()
        r = _CodeRenderer.of(self.output, weak_ids)
        codes = [_template(g, r) for g in self.guards]      # each alone: for failure reasons
        r.share(self.guards)
        body = " and ".join(f"({_template(g, r)})" for g in self.guards) or "True"
        # constants are closure cells of the guard (a cell read is cheaper than K['c3'])
        bind = "".join(f"    {name} = K[{key!r}]\n" for name, key in sorted(r.cells.items()))
        bind += "".join(f"    {name} = W[{key!r}]\n" for name, key in sorted(r.weak_cells.items()))
        bind += "".join(f"    {name} = I[{name!r}]\n" for name in sorted(r.id_cells))
        src = (f"def ___make_guard():\n{bind}"
               f"    def ___guard({signature}):\n"
               f"        try:\n            return {body}\n"
               f"        except Exception:\n            return False\n"
               f"    return ___guard\n")
        life = EntryLife()
        consts = self._freeze(weak_ids, life)
        ns = namespace(fn, consts)
        ns["W"], ns["I"] = consts.weak, r.id_cells
        exec(compile(src, "<dynjit-guard>", "exec"), ns)
        guard = ns["___make_guard"]()
        del ns["W"], ns["I"], ns["___make_guard"]
        life.id_cells = [cell for name, cell in zip(guard.__code__.co_freevars, guard.__closure__ or ())
                         if name.startswith("___i_")]
        guard.__defaults__ = fn.__defaults__
        guard.__kwdefaults__ = fn.__kwdefaults__
        guard.source = src
        guard.guards = [_weaken(g, weak_ids) for g in self.guards] if weak_ids else list(self.guards)
        guard.exprs = codes
        guard.consts = consts
        guard.life = life
        return guard

    def _weak_ids(self):
        """ids of the objects whose identity the guards check and that the entry holds weakly."""
        objs = list(self._class_dicts)
        for g in self.guards:
            kind, exp = g.kind, g.expected
            if kind is Kind.TYPE or kind is Kind.IDENTITY:
                objs.append(exp)
            elif kind is Kind.TENSOR or kind is Kind.TENSOR_DYNAMIC:
                objs.append(exp.cls)
            elif kind is Kind.CONSTANT:
                if isinstance(exp, enum.Enum):
                    objs.append(exp)
            elif kind is Kind.TYPE_LEN:
                objs.append(exp[0])
            elif kind is Kind.DICT_KEYS:
                objs.append(exp[0])
                if exp[2]:
                    objs.extend(exp[1])
            elif kind is Kind.ALIAS:
                objs.extend(_source_objects(exp))
            if g.source is not None:
                objs.extend(_source_objects(g.source))
        seen, weak = set(), set()
        for o in objs:
            if id(o) not in seen:
                seen.add(id(o))
                if weakly_held(o):
                    weak.add(id(o))
        weak.update(getattr(self.output, "extra_weak_ids", ()))   # set by codegen's callers
        return frozenset(weak)

    def _freeze(self, weak_ids, life):
        """`K` for the entry: the trace's constants, those in `weak_ids` held weakly (their
        death ends the entry's life), a weakly held class's namespace computed when read."""
        consts = GuardConsts()
        if not weak_ids:
            dict.update(consts, self.output.consts)
            return consts
        weak_classes = {src.proxy_key: src.key for cls, src in self._class_dicts.items()
                        if id(cls) in weak_ids}
        for key, value in self.output.consts.items():
            if id(value) in weak_ids:
                consts.weak[key] = life.hold(value)
            elif key in weak_classes:
                consts.class_dicts[key] = weak_classes[key]
            else:
                dict.__setitem__(consts, key, value)
        return consts

    def namespace(self, fn):
        return namespace(fn, self.output.consts)

    def readable(self, g):
        return readable(g, self.output.consts)


def namespace(fn, consts):
    """What generated guard and transformed functions see as their globals."""
    from .codegen import rerun_plain
    return {"K": consts, "G": fn.__globals__, "___grad_state": _grad_state,
            "___default_dtype": _dtype._default_float, "___jit_state": _jit_callback._state,
            "___rerun_plain": rerun_plain}


def _weaken(g, weak_ids):
    """Record `g` as a cache entry keeps it: the objects in `weak_ids` it names held weakly."""
    kind, exp = g.kind, g.expected

    def w(obj):
        return Weak(obj) if id(obj) in weak_ids else obj
    if kind is Kind.TYPE or kind is Kind.IDENTITY or kind is Kind.CONSTANT and isinstance(exp, enum.Enum):
        exp = w(exp)
    elif kind is Kind.TENSOR or kind is Kind.TENSOR_DYNAMIC:
        if id(exp.cls) in weak_ids:
            exp = exp._replace(cls=Weak(exp.cls))
    elif kind is Kind.TYPE_LEN:
        exp = (w(exp[0]), exp[1])
    elif kind is Kind.DICT_KEYS:
        exp = (w(exp[0]), [w(k) for k in exp[1]] if exp[2] else exp[1], exp[2])
    elif kind is Kind.ALIAS:
        exp = weaken_source(exp, weak_ids)
    source = weaken_source(g.source, weak_ids) if g.source is not None else None
    return Guard(source, kind, exp)


def readable(g, consts):
    """Record `g` as text for people."""
    return _template(g, _ReadableRenderer(consts))


def failure_reason(guard, fn, args, kwargs):
    """The first record of cache entry guard `guard` (of function `fn`) that fails for these
    arguments, in the user's terms (None if none fails)."""
    import inspect
    consts = guard.consts
    try:
        bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
        bound.apply_defaults()
    except TypeError as e:
        return GuardFailure(f"arguments do not bind: {e}")
    ns = namespace(fn, consts)
    ns.update(zip(guard.__code__.co_freevars, (c.cell_contents for c in guard.__closure__ or ())))
    ns.update({local_name(k): v for k, v in bound.arguments.items()})
    r = _CodeRenderer(consts)
    for g, code in zip(guard.guards, guard.exprs):
        try:
            ok = eval(code, ns)
        except Exception as err:
            return GuardFailure(f"{readable(g, consts)} (raised {type(err).__name__})",
                                tensor=g.kind in (Kind.TENSOR, Kind.TENSOR_DYNAMIC))
        if not ok:
            reason = _explain(g, ns, r, consts)
            reason.scalars = [reason.scalar] if reason.scalar else []
            reason.scalars += _changed_numbers(guard, g, ns)
            return reason
    return None


def _changed_numbers(guard, failed, ns):
    """The sources (expressions) of the other guarded numbers whose value changed too, so that
    automatic dynamic makes them all symbolic in one recompile."""
    changed = []
    for g, code in zip(guard.guards, guard.exprs):
        if g is failed or g.kind is not Kind.CONSTANT or not is_dynamic_number(g.expected):
            continue
        try:
            if not eval(code, ns):
                changed.append(g.source.expr())
        except Exception:
            continue
    return changed


def _explain(g, ns, r, consts):
    """Why record `g` failed: its source's current value against what the trace saw."""
    kind, exp = g.kind, g.expected

    def current(source):
        return eval(r.src(source), ns)

    def readable_source(source):
        return _ReadableRenderer(consts).src(source)
    if kind in (Kind.TENSOR, Kind.TENSOR_DYNAMIC):
        name = readable_source(g.source)
        t = current(g.source)
        if not isinstance(t, Tensor):
            return GuardFailure(f"{name}: expected a tensor, got {type(t).__name__}", tensor=True)
        got = []
        if t._data.dtype != exp.np_dtype:
            got.append(f"dtype {t._data.dtype} (compiled for {exp.np_dtype})")
        if kind is Kind.TENSOR:
            if t._data.shape != exp.shape:
                got.append(f"size {tuple(t._data.shape)} (compiled for {exp.shape})")
            elif t._data.strides != exp.strides:
                item = t._data.itemsize
                got.append(f"stride {t.stride()} (compiled for "
                           f"{tuple(s // item for s in exp.strides)})")
        elif t._data.ndim != len(exp.shape):
            got.append(f"{t._data.ndim} dimensions (compiled for {len(exp.shape)})")
        if t._requires_grad is not exp.requires_grad:
            got.append(f"requires_grad={t._requires_grad} (compiled for {exp.requires_grad})")
        if t._is_inference is not exp.inference:
            got.append(f"is_inference={t._is_inference} (compiled for {exp.inference})")
        return GuardFailure(f"{name}: " + ", ".join(got or ["tensor type changed"]), tensor=True)
    if kind is Kind.CONSTANT and is_dynamic_number(exp):
        now = current(g.source)
        if is_dynamic_number(now):
            return GuardFailure(f"{readable_source(g.source)} changed from {exp!r} to {now!r}",
                                scalar=g.source.expr())
    if kind is Kind.DISTINCT:
        names = ", ".join(readable_source(s) for s in g.source)
        return GuardFailure(f"some of ({names}) are one object (compiled for {exp} distinct objects)")
    if kind is Kind.GRAD_MODE:
        return GuardFailure(f"grad mode is {'enabled' if not exp else 'disabled'} "
                            f"(compiled with grad {'enabled' if exp else 'disabled'})")
    if kind is Kind.DEFAULT_DTYPE:
        return GuardFailure(f"default dtype is {_dtype.get_default_dtype()} (compiled for {exp})")
    if kind is Kind.NO_KEY:
        if isinstance(g.source, ClassDictSource):
            return GuardFailure(f"{g.source.name}.{exp} was defined (compiled without it)")
        if isinstance(g.source, AttrSource) and g.source.attr == "__dict__":
            return GuardFailure(f"{readable_source(g.source.base)}.{exp} was set on the instance "
                                f"(compiled without it)")
        return GuardFailure(f"{exp!r} is in {readable_source(g.source)} (compiled without it)")
    if kind is Kind.NO_MODULE_HOOKS:
        mod = current(g.source)
        which = [h[1:] for h in MODULE_HOOK_DICTS if getattr(mod, h, None)]
        return GuardFailure(f"{readable_source(g.source)}: {', '.join(which) or 'hooks'} registered "
                            f"(compiled without hooks)")
    if kind is Kind.NO_GLOBAL_MODULE_HOOKS:
        return GuardFailure("global module hooks registered (compiled without hooks)")
    if kind is Kind.IDENTITY and isinstance(g.source, ItemSource) and isinstance(g.source.base, ClassDictSource):
        return GuardFailure(f"{g.source.base.name}.{g.source.key} changed "
                            f"(compiled for {_short(exp)})")
    return GuardFailure(readable(g, consts))


class GuardFailure(str):
    """Why a cache entry's guard failed; `tensor` says a tensor's metadata changed, `scalar`
    names (as a source expression) a number whose value changed."""

    def __new__(cls, text, tensor=False, scalar=None):
        self = super().__new__(cls, text)
        self.tensor = tensor
        self.scalar = scalar
        self.scalars = [scalar] if scalar else []
        return self


_ = (OrderedDict, Tensor)

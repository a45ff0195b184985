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
No guard is ever parsed back from its text."""
import enum
from collections import OrderedDict, defaultdict, namedtuple

from .. import _dtype
from ..autograd.grad_mode import state as _grad_state
from ..tensor import Tensor
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


TensorSpec = namedtuple("TensorSpec", "cls np_dtype shape strides requires_grad")


class ClassDictSource(Source):
    """A class's own namespace (`vars(cls)`, a live mappingproxy), stashed once: lookups in it
    cost a dict lookup, not an attribute read."""

    def __init__(self, cls, key, proxy_key):
        self.cls = cls
        self.key = key              # stash key of the class
        self.proxy_key = proxy_key  # stash key of vars(cls)

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


# -- rendering: one template per kind, two renderers ----------------------------------------------
class _CodeRenderer:
    """Renders sources and constants as the guard function's code; constants are closure cells."""

    def __init__(self, output):
        self.output = output
        self.cells = {}           # cell name -> stash key

    def k(self, value):
        return self.cell(self.output.stash(value))

    def cell(self, key):
        name = f"___k_{key}"
        self.cells[name] = key
        return name

    def lit(self, value):
        return repr(value)

    def src(self, source):
        if isinstance(source, LocalSource):
            return source.expr()
        if isinstance(source, ClassDictSource):
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
            self.output.consts[source.key] = source.fn
            return f"{self.cell(source.key)}({self.src(source.base)})"
        return source.expr()          # an unknown source: its own expression (K, G in scope)


class _ReadableRenderer(_CodeRenderer):
    """Renders the same templates for people: constants written out, classes by name."""

    def __init__(self, output):
        super().__init__(output)
        self.consts = output.consts

    def k(self, value):
        return _short(value)

    def cell(self, key):
        return _short(self.consts[key]) if key in self.consts else f"K[{key!r}]"

    def src(self, source):
        if isinstance(source, ClassDictSource):
            return f"{source.cls.__qualname__}.__dict__"
        return super().src(source)


def _short(value):
    if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
        text = getattr(value, "__qualname__", repr(value))
    elif isinstance(value, Source):
        text = value.expr()
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _template(g, r):
    """The check of guard record `g`, rendered by `r` (code or readable text)."""
    kind, exp = g.kind, g.expected
    e = r.src(g.source) if isinstance(g.source, Source) else None
    if kind is Kind.TYPE:
        return f"type({e}) is {r.k(exp)}"
    if kind is Kind.IDENTITY:
        return f"{e} is {r.k(exp)}"
    if kind is Kind.CONSTANT:
        if isinstance(exp, _SINGLETON_TYPES) or isinstance(exp, enum.Enum):
            return f"{e} is {r.k(exp)}"
        if isinstance(exp, float) and exp != exp:
            return f"type({e}) is float and {e} != {e}"
        return f"type({e}) is {r.k(type(exp))} and {e} == {r.k(exp)}"
    if kind is Kind.TYPE_LEN:
        cls, n = exp
        return f"type({e}) is {r.k(cls)} and len({e}) == {n}"
    if kind is Kind.DICT_KEYS:
        cls, keys, object_keys = exp
        t = "dict" if cls is dict else r.k(cls)
        if object_keys:       # identity: `==` on tensors is elementwise
            return (f"type({e}) is {t} and len({e}) == {len(keys)} and "
                    f"all(a is b for a, b in zip({e}, {r.k(keys)}))")
        return f"type({e}) is {t} and list({e}) == {r.k(keys)}"
    if kind is Kind.TENSOR or kind is Kind.TENSOR_DYNAMIC:
        if isinstance(r, _ReadableRenderer):
            sizes = (f"shape {exp.shape}, strides {exp.strides}" if kind is Kind.TENSOR
                     else f"{len(exp.shape)} dimensions")
            return (f"{e}: a {exp.cls.__qualname__} of dtype {exp.np_dtype}, {sizes}, "
                    f"requires_grad={exp.requires_grad}")
        # inlined (a guard checks many tensors: a call each would cost more than the checks);
        # dtype by identity first (numpy's builtin dtypes are singletons), equality if not
        dt = r.k(exp.np_dtype)
        head = (f"type(___t := {e}) is {r.k(exp.cls)} and "
                f"((___d := (___a := ___t._data).dtype) is {dt} or ___d == {dt})")
        if kind is Kind.TENSOR:
            sizes = f"___a.shape == {exp.shape!r} and ___a.strides == {exp.strides!r}"
        else:
            sizes = f"___a.ndim == {len(exp.shape)}"
        return f"{head} and {sizes} and ___t._requires_grad is {exp.requires_grad!r}"
    if kind is Kind.ALIAS:
        return f"{e} is {r.src(exp)}"
    if kind is Kind.DISTINCT:
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
        return _template(g, _CodeRenderer(self.output))

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
                                                       t._requires_grad)))

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
        dynamic = self.output.dynamic and not self.output.shape_specialized
        if dynamic:
            self.guards = [Guard(g.source, Kind.TENSOR_DYNAMIC, g.expected) if g.kind is Kind.TENSOR else g
                           for g in self.guards]
        return dynamic

    def compile(self, signature, fn):
        # the compiled function's own defaults are bound by the guard's signature: a new tuple
        # (or kwdefaults dict) assigned to the function must recompile
        fn_src = ConstSource(self.output.stash(fn))
        if fn.__defaults__ is not None:
            self.identity(AttrSource(fn_src, "__defaults__"), fn.__defaults__)
        if fn.__kwdefaults__ is not None:
            self.identity(AttrSource(fn_src, "__kwdefaults__"), fn.__kwdefaults__)
        self.finalize()
        r = _CodeRenderer(self.output)
        codes = [_template(g, r) for g in self.guards]
        body = " and ".join(f"({c})" for c in codes) or "True"
        # constants are closure cells of the guard (a cell read is cheaper than K['c3'])
        bind = "".join(f"    {name} = K[{key!r}]\n" for name, key in sorted(r.cells.items()))
        src = (f"def ___make_guard():\n{bind}"
               f"    def ___guard({signature}):\n"
               f"        try:\n            return {body}\n"
               f"        except Exception:\n            return False\n"
               f"    return ___guard\n")
        ns = self.namespace(fn)
        exec(compile(src, "<dynjit-guard>", "exec"), ns)
        guard = ns["___make_guard"]()
        guard.__defaults__ = fn.__defaults__
        guard.__kwdefaults__ = fn.__kwdefaults__
        guard.source = src
        guard.guards = list(self.guards)
        guard.exprs = codes
        return guard

    def namespace(self, fn):
        return {"K": self.output.consts, "G": fn.__globals__, "___grad_state": _grad_state,
                "___default_dtype": _dtype._default_float}

    # -- explaining -------------------------------------------------------------------------------
    def readable(self, g):
        return _template(g, _ReadableRenderer(self.output))

    def failure_reason(self, guard, args, kwargs):
        """The first guard record that fails for these arguments, in the user's terms."""
        import inspect
        ns = self.namespace(self.output.fn)
        try:
            bound = inspect.signature(self.output.fn, follow_wrapped=False).bind(*args, **kwargs)
            bound.apply_defaults()
        except TypeError as e:
            return GuardFailure(f"arguments do not bind: {e}")
        ns.update({local_name(k): v for k, v in bound.arguments.items()})
        r = _CodeRenderer(self.output)
        for g in getattr(guard, "guards", self.guards):
            code = _template(g, r)
            ns.update({name: self.output.consts[key] for name, key in r.cells.items()})
            try:
                ok = eval(code, ns)
            except Exception as err:
                return GuardFailure(f"{self.readable(g)} (raised {type(err).__name__})",
                                    tensor=g.kind in (Kind.TENSOR, Kind.TENSOR_DYNAMIC))
            if not ok:
                return self.explain(g, ns, r)
        return None

    def explain(self, g, ns, r):
        """Why record `g` failed: its source's current value against what the trace saw."""
        kind, exp = g.kind, g.expected

        def current(source):
            return eval(r.src(source), ns)
        if kind in (Kind.TENSOR, Kind.TENSOR_DYNAMIC):
            name = self.readable_source(g.source)
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
            return GuardFailure(f"{name}: " + ", ".join(got or ["tensor type changed"]), tensor=True)
        if kind is Kind.DISTINCT:
            names = ", ".join(self.readable_source(s) for s in g.source)
            return GuardFailure(f"some of ({names}) are one object (compiled for {exp} distinct objects)")
        if kind is Kind.GRAD_MODE:
            return GuardFailure(f"grad mode is {'enabled' if not exp else 'disabled'} "
                                f"(compiled with grad {'enabled' if exp else 'disabled'})")
        if kind is Kind.DEFAULT_DTYPE:
            return GuardFailure(f"default dtype is {_dtype.get_default_dtype()} (compiled for {exp})")
        if kind is Kind.NO_KEY:
            if isinstance(g.source, ClassDictSource):
                return GuardFailure(f"{g.source.cls.__qualname__}.{exp} was defined (compiled without it)")
            if isinstance(g.source, AttrSource) and g.source.attr == "__dict__":
                return GuardFailure(f"{self.readable_source(g.source.base)}.{exp} was set on the instance "
                                    f"(compiled without it)")
            return GuardFailure(f"{exp!r} is in {self.readable_source(g.source)} (compiled without it)")
        if kind is Kind.NO_MODULE_HOOKS:
            mod = current(g.source)
            which = [h[1:] for h in MODULE_HOOK_DICTS if getattr(mod, h, None)]
            return GuardFailure(f"{self.readable_source(g.source)}: {', '.join(which) or 'hooks'} registered "
                                f"(compiled without hooks)")
        if kind is Kind.NO_GLOBAL_MODULE_HOOKS:
            return GuardFailure("global module hooks registered (compiled without hooks)")
        if kind is Kind.IDENTITY and isinstance(g.source, ItemSource) and isinstance(g.source.base, ClassDictSource):
            return GuardFailure(f"{g.source.base.cls.__qualname__}.{g.source.key} changed "
                                f"(compiled for {_short(exp)})")
        return GuardFailure(self.readable(g))

    def readable_source(self, source):
        return _ReadableRenderer(self.output).src(source)


class GuardFailure(str):
    """Why a cache entry's guard failed; `tensor` says a tensor's metadata changed."""

    def __new__(cls, text, tensor=False):
        self = super().__new__(cls, text)
        self.tensor = tensor
        return self


_ = (OrderedDict, Tensor)

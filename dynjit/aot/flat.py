"""The cache key that says which compiled graph fits a call (its arguments
flattened with dynjit._pytree).

A compiled graph is specialized on everything that tracing read: each
tensor's shape, dtype, strides and requires_grad, the values of non-tensor
arguments, the nesting of containers, grad mode, and which tensor arguments
share memory. An int or float argument is a graph input (a traced number, see
dynjit.fx.traced_number): the key holds only its type, and a trace that read
its value (specialized it) is found under `specialized_key`, which adds the
values of the arguments it specialized. A trace with symbolic sizes is found by
`dynjit.aot.symbolic.symbolic_key` (this key with those sizes left out) and its
guards. `call_key` builds that key on every call, so it is written for
speed: the common call (tensors and scalars, no kwargs, no aliasing) takes
one pass over the arguments.
"""
from .._pytree import flatten_into
from ..autograd.grad_mode import state as _grad_state
from ..fx.traced_number import number_key
from ..tensor import Tensor
import weakref

_CONTAINERS = (list, tuple, dict)


class _Identity:
    """Keys an unhashable argument by identity without keeping it alive.

    A bare id() would be reused by the next object allocated at the same
    address, which would then be served the trace of a dead object (a silent
    wrong answer); a key whose object died equals nothing. An object that
    takes no weak reference is held, the one safe choice for it."""

    __slots__ = ("ident", "ref", "strong")

    def __init__(self, v):
        self.ident = id(v)
        try:
            self.ref, self.strong = weakref.ref(v), None
        except TypeError:
            self.ref, self.strong = None, v

    def get(self):
        return self.strong if self.ref is None else self.ref()

    def __hash__(self):
        return self.ident

    def __eq__(self, other):
        if not isinstance(other, _Identity) or other.ident != self.ident:
            return False
        obj = self.get()
        return obj is not None and obj is other.get()


def _const_key(v):
    try:
        hash(v)
    except TypeError:
        return (type(v), _Identity(v))
    return (type(v), v)


def specialized_key(key, indices, leaves):
    """The key of a trace that specialized the number arguments at `indices` (leaf positions)."""
    return key, indices, tuple(number_key(leaves[i]) for i in indices)


def call_key(args, kwargs):
    """(key, leaves, spec): the cache key of a call, its flat leaves and their structure.

    spec is None for the flat case (leaves == args)."""
    key = [_grad_state.enabled]
    append = key.append
    roots = None
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            append((d.shape, d.dtype, d.strides, a._requires_grad))
            b = a._base
            r = id(b if b is not None else a)
            if roots is None:
                roots = [r]
            else:
                roots.append(r)
        elif isinstance(a, _CONTAINERS):
            return _nested_key(args, kwargs)
        else:
            t = type(a)
            append(t if t is int or t is float else _const_key(a))
    if kwargs:
        return _nested_key(args, kwargs)
    if roots is not None and len(roots) > 1 and len(set(roots)) != len(roots):
        key.append(alias_key(args))
    return tuple(key), args, None


def _nested_key(args, kwargs):
    leaves = []
    spec = flatten_into((args, kwargs), leaves)
    key = [_grad_state.enabled, spec]
    tensors = []
    for a in leaves:
        if isinstance(a, Tensor):
            d = a._data
            key.append((d.shape, d.dtype, d.strides, a._requires_grad))
            tensors.append(a)
        else:
            t = type(a)
            key.append(t if t is int or t is float else _const_key(a))
    roots = [id(t._base if t._base is not None else t) for t in tensors]
    if len(set(roots)) != len(roots):
        key.append(alias_key(leaves))
    return tuple(key), leaves, spec


def alias_key(leaves):
    """For tensors that share a base: which ones, and how each is viewed from that base."""
    from ..autograd.graph import view_chain
    groups = {}
    first = {}
    parts = []
    for i, t in enumerate(leaves):
        if not isinstance(t, Tensor):
            continue
        root = t._base if t._base is not None else t
        chain = "root" if t._base is None else \
            repr([(op.name, rest, index) for op, rest, index in view_chain(t)])
        parts.append((i, groups.setdefault(id(root), len(groups)), first.setdefault(id(t), i), chain))
    return tuple(parts)

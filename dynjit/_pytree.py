"""Pytrees: nested tuples, lists, dicts, namedtuples (and registered node types)
taken apart into their leaves and a spec, and put back together.

The one implementation for every layer (func's transforms, make_fx, AOT's call
keys and outputs, and whatever the frontend needs); it imports nothing from
dynjit.

A spec is None for a leaf, else `(node type, context, child specs)`:

    tuple       (tuple, None, (...))        a tuple subclass that is not a
    list        (list, None, (...))         namedtuple comes back a tuple,
    dict        (dict, keys, (...))         a list or dict subclass a list
    namedtuple  (its class, None, (...))    or dict
    registered  (its class, context, (...))

Specs are hashable (a registered type's context must be too), so a spec can be
part of a cache key, and two specs are equal when the structures are.
"""

_NODES = {}     # type -> (flatten(x) -> (children, context), unflatten(children, context) -> x)


def register_pytree_node(cls, flatten_fn, unflatten_fn):
    """Make instances of `cls` pytree nodes: flatten_fn(x) -> (children, context) with a
    hashable context, unflatten_fn(children, context) -> x."""
    if cls in (tuple, list, dict) or cls in _NODES:
        raise ValueError(f"{cls.__name__} is already a pytree node type")
    _NODES[cls] = (flatten_fn, unflatten_fn)


def flatten_into(tree, leaves):
    """Append the leaves of `tree` to the list `leaves`, in order; return its spec."""
    cls = type(tree)
    if cls is tuple:
        return (tuple, None, tuple([flatten_into(v, leaves) for v in tree]))
    if cls is list:
        return (list, None, tuple([flatten_into(v, leaves) for v in tree]))
    if cls is dict:
        return (dict, tuple(tree), tuple([flatten_into(v, leaves) for v in tree.values()]))
    node = _NODES.get(cls)
    if node is not None:
        children, context = node[0](tree)
        return (cls, context, tuple([flatten_into(v, leaves) for v in children]))
    if isinstance(tree, tuple):
        kind = cls if hasattr(tree, "_fields") else tuple
        return (kind, None, tuple([flatten_into(v, leaves) for v in tree]))
    if isinstance(tree, list):
        return (list, None, tuple([flatten_into(v, leaves) for v in tree]))
    if isinstance(tree, dict):
        return (dict, tuple(tree), tuple([flatten_into(v, leaves) for v in tree.values()]))
    leaves.append(tree)
    return None


def tree_flatten(tree):
    """(leaves, spec): the leaves of `tree` in order, and the spec that rebuilds it."""
    leaves = []
    return leaves, flatten_into(tree, leaves)


def tree_leaves(tree):
    leaves = []
    flatten_into(tree, leaves)
    return leaves


def tree_structure(tree):
    return flatten_into(tree, [])


def tree_unflatten(spec, leaves):
    """The structure of `spec` with its leaves taken, in order, from `leaves` (an iterable;
    an iterator is consumed only as far as this structure needs)."""
    return _build(spec, iter(leaves))


def _build(spec, leaves):
    if spec is None:
        return next(leaves)
    cls, context, children = spec
    items = [_build(s, leaves) for s in children]
    if cls is tuple:
        return tuple(items)
    if cls is list:
        return items
    if cls is dict:
        return dict(zip(context, items))
    node = _NODES.get(cls)
    if node is not None:
        return node[1](items, context)
    return cls(*items)      # a namedtuple


def tree_map(fn, tree):
    """`tree` with every leaf x replaced by fn(x)."""
    leaves, spec = tree_flatten(tree)
    return _build(spec, map(fn, leaves))


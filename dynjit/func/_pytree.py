"""Flattening nested tuples / lists / dicts of values into leaves, and back."""


def tree_flatten(tree):
    """(leaves, spec): the leaves in order, and a spec for tree_unflatten."""
    leaves = []

    def rec(x):
        if isinstance(x, (tuple, list)):
            kind = list if isinstance(x, list) else (type(x) if hasattr(x, "_fields") else tuple)
            return (kind, [rec(v) for v in x])
        if isinstance(x, dict):
            return (dict, list(x), [rec(v) for v in x.values()])
        leaves.append(x)
        return None
    return leaves, rec(tree)


def tree_unflatten(spec, leaves):
    """The structure of `spec` with its leaves taken from the iterator `leaves`."""
    if spec is None:
        return next(leaves)
    kind = spec[0]
    if kind is dict:
        return dict(zip(spec[1], [tree_unflatten(s, leaves) for s in spec[2]]))
    items = [tree_unflatten(s, leaves) for s in spec[1]]
    if kind is list or kind is tuple:
        return kind(items)
    return kind(*items)

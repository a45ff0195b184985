"""torch.func.functional_call: call a module with its parameters and buffers replaced by
given tensors (MAML's fast weights, per-example gradients with grad/vmap, ensembling), with
PyTorch's signature and errors: several dictionaries with distinct keys, `tie_weights`
(a value given for one of tied tensors replaces all of them) and `strict` (the given names
must be exactly the module's parameters and buffers). The module is restored afterwards."""
from collections.abc import Sequence

from ..tensor import Tensor


def _named_tensors(module):
    """Every parameter and buffer name of `module` -> its tensor, tied names included."""
    named = {}
    for prefix, sub in module.named_modules(remove_duplicate=False):
        for store in (sub._parameters, sub._buffers):
            for leaf, value in store.items():
                if value is not None:
                    named[f"{prefix}.{leaf}" if prefix else leaf] = value
    return named


def _untie(module, values):
    """`values` with every name tied to a given one added (same value); PyTorch's error when
    tied names get different values."""
    groups = []         # (tensor, its names): by identity, without id() (a break when traced)
    for name, tensor in _named_tensors(module).items():
        for known, names in groups:
            if known is tensor:
                names.add(name)
                break
        else:
            groups.append((tensor, {name}))
    tied = {name: names for _, names in groups if len(names) > 1 for name in names}
    given_tied = [name for name in values if name in tied]
    untied = dict(values)
    for name in given_tied:
        group = tied[name]
        given_in_group = group.intersection(given_tied)
        first = values[name]
        if any(values[n] is not first for n in given_in_group):
            raise ValueError(f"functional_call got multiple values for keys {sorted(group)}, "
                             f"which are tied. Consider using tie_weights=False")
        for other in group:
            untied[other] = values[name]
    return untied


def _check_keys(module, values):
    expected = set(_named_tensors(module))
    unexpected = sorted(set(values) - expected)
    missing = sorted(expected - set(values))
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                              "\n\t".join(errors)))


_ABSENT = object()


def _swap_in(module, values):
    """Put `values` into `module`; returns what restores it."""
    restore = []
    for name, value in values.items():
        *path, leaf = name.split(".")
        owner = module
        for part in path:
            owner = getattr(owner, part)
        if leaf in owner._parameters:
            store = owner._parameters
        elif leaf in owner._buffers:
            store = owner._buffers
        else:   # a plain attribute (or a new one), as PyTorch's NamedMemberAccessor allows
            store = owner.__dict__
        restore.append((store, leaf, store.get(leaf, _ABSENT)))
        store[leaf] = value
    return restore


def _restore(restore):
    for store, leaf, old in reversed(restore):
        if old is _ABSENT:
            store.pop(leaf)
        else:
            store[leaf] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """module(*args, **kwargs) with the parameters and buffers named in
    `parameter_and_buffer_dicts` (a dict, or a sequence of dicts with distinct keys) replaced
    by the given tensors; gradients flow to those tensors, not to the module's own."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for key in d:
                counts[key] = counts.get(key, 0) + 1
        repeated = [key for key, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
                         f"but got {type(parameter_and_buffer_dicts)}")
    for name, value in values.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"functional_call: the value for {name!r} must be a Tensor, got {type(value).__name__}")
    if tie_weights:
        values = _untie(module, values)
    if strict:
        _check_keys(module, values)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    restore = _swap_in(module, values)
    try:
        return module(*args, **kwargs)
    finally:
        _restore(restore)



# compiled code traces into these (the module call inside is user code), as torch.compile
# inlines torch.func.functional_call, rather than taking functional_call for one graph op
for _fn in (functional_call, _named_tensors, _untie, _check_keys, _swap_in, _restore):
    _fn._dynjit_trace_into = True

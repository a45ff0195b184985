"""Call a module with some of its parameters and buffers replaced by given tensors."""
import contextlib


@contextlib.contextmanager
def _swapped(module, values):
    saved = []
    try:
        for name, value in values.items():
            *path, leaf = name.split(".")
            owner = module
            for p in path:
                owner = getattr(owner, p)
            store = None
            for attr in ("_parameters", "_buffers"):
                d = getattr(owner, attr, None)
                if isinstance(d, dict) and leaf in d:
                    store = d
                    break
            if store is None:
                raise KeyError(f"{type(module).__name__} has no parameter or buffer named {name!r}")
            saved.append((store, leaf, store[leaf]))
            store[leaf] = value
        yield
    finally:
        for store, leaf, old in reversed(saved):
            store[leaf] = old


def functional_call(module, parameters_and_buffers, args=(), kwargs=None):
    """module(*args, **kwargs) with the named parameters/buffers swapped for the given tensors."""
    if not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, parameters_and_buffers):
        return module(*args, **(kwargs or {}))

"""The `flags(...)` context manager that torch.backends.cudnn/mkldnn offer: set a module's
flags inside a block and put the previous values back after it."""
import contextlib


@contextlib.contextmanager
def set_flags(module, **values):
    names = [n for n, v in values.items() if v is not None]
    for n in names:
        if not hasattr(module, n):
            raise TypeError(f"{module.__name__}.flags() got an unexpected flag {n!r}")
    old = {n: getattr(module, n) for n in names}
    try:
        for n in names:
            setattr(module, n, values[n])
        yield
    finally:
        for n, v in old.items():
            setattr(module, n, v)

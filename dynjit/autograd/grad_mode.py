"""Grad mode: whether ops record autograd history (thread-local, like PyTorch).

`no_grad`, `enable_grad`, `set_grad_enabled` and `inference_mode` work both as
context managers and as decorators (on functions, methods and generators;
`no_grad` and `enable_grad` also without parentheses).
"""
import functools
import inspect
import warnings

# the switches' state lives with the dispatcher, which reads it on every op
from ..ops.dispatch import grad_state as state


def is_grad_enabled():
    return state.enabled


def is_inference_mode_enabled():
    return state.inference


class _DecoratorContextManager:
    """Base for grad-mode context managers that also decorate functions.

    A decorated function runs inside a fresh copy of the context manager; a
    decorated generator (or generator-based coroutine) runs in the mode only
    while its own code runs, and values, thrown exceptions and close() are
    forwarded to it, so the caller keeps its own mode between steps.
    """

    def __call__(self, fn):
        if inspect.isclass(fn):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You "
                "should only decorate functions or methods. To preserve the current behavior of "
                "class decoration, you can directly decorate the `__init__` method and nothing else.",
                FutureWarning, stacklevel=2)
            fn.__init__ = self(fn.__init__)
            return fn
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:    # thrown in by our caller: pass it on
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as done:
                return done.value
        return gen_wrapper

    def clone(self):
        return type(self)()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """A grad-mode manager without arguments, so that it also decorates without
    parentheses: `@no_grad` as well as `@no_grad()`."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording inside the block."""

    def __init__(self):
        self.prev = None

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = False
        return None

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording inside the block (even within no_grad)."""

    def __init__(self):
        self.prev = None

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = True
        return None

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to `mode`. Takes effect immediately when called, like PyTorch,
    and restores the previous mode when used as a context manager."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled expects a bool, got {type(mode).__name__}")
        self.prev = state.enabled
        self.mode = mode
        state.enabled = mode

    def __enter__(self):
        state.enabled = self.mode
        return None

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False

    def clone(self):
        # The constructor flips the mode eagerly; undo that for the clone.
        prev = state.enabled
        c = set_grad_enabled(self.mode)
        state.enabled = prev
        c.prev = prev
        return c

    def __call__(self, fn):
        # Used as @set_grad_enabled(False): the eager flip must not leak.
        state.enabled = self.prev
        return super().__call__(fn)


def is_inference(tensor):
    """Whether `tensor` was made in inference mode (an inference tensor)."""
    return tensor._is_inference


class inference_mode(_DecoratorContextManager):
    """Like no_grad; tensors made inside are inference tensors (never require grad).

    `inference_mode(False)` turns it off again inside an inference-mode block.
    Used as `@inference_mode` (or `inference_mode(mode=fn)`) it decorates fn directly."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        if not callable(mode):
            raise TypeError(f"inference_mode expects a bool (or a function to decorate), "
                            f"got {type(mode).__name__}")
        return cls()(mode)

    def __init__(self, mode=True):
        self.mode = mode
        self.prev = None

    def __enter__(self):
        self.prev = (state.enabled, state.inference)
        # like PyTorch: inference mode implies grad mode off, leaving it turns grad mode on
        state.enabled = not self.mode
        state.inference = self.mode
        return None

    def __exit__(self, *exc):
        state.enabled, state.inference = self.prev
        return False

    def clone(self):
        return type(self)(self.mode)


def is_view_replay_enabled():
    """Whether a view's regenerated grad_fn replays its view ops (ViewBackward0, ...)
    rather than being one AsStridedBackward0 node."""
    return state.view_replay


class _force_original_view_tracking(_DecoratorContextManager):
    """Set view replay on or off; takes effect when called (like set_grad_enabled) and
    restores the previous setting when used as a context manager."""

    def __init__(self, mode):
        self.prev = state.view_replay
        self.mode = bool(mode)
        state.view_replay = self.mode

    def __enter__(self):
        state.view_replay = self.mode

    def __exit__(self, *exc):
        state.view_replay = self.prev
        return False

    def clone(self):
        prev = state.view_replay
        c = type(self)(self.mode)
        state.view_replay = prev
        c.prev = prev
        return c

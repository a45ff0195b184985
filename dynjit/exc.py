"""dynjit's exceptions."""


class DynjitError(RuntimeError):
    """Base of dynjit's own errors."""


class Unsupported(DynjitError):
    """The JIT met something it cannot trace (raised under fullgraph=True)."""


class InvalidBackend(DynjitError):
    pass


class BackendCompilerFailed(DynjitError):
    """A backend raised while compiling a graph."""

    def __init__(self, backend_name, inner_exception):
        self.backend_name = backend_name
        self.inner_exception = inner_exception
        super().__init__(f"backend={backend_name!r} raised:\n{type(inner_exception).__name__}: {inner_exception}")

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


class InternalError(DynjitError):
    """A bug inside dynjit met while compiling a frame (not a graph break: nothing the user wrote
    is unsupported). The frame runs plain unless `dynjit.config.strict_internal_errors` is set."""

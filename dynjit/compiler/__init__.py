"""dynjit.compiler: the compiler-backend registry and the built-in backends (torch.compiler's
home for `list_backends` and the like; torch._dynamo's `register_backend`/`lookup_backend`).

A backend turns a captured graph into a callable (docs/backends.md). Plugins register through
the entry-point group `dynjit.backends`, a name kept from before the registry moved here."""
from .registry import (register_backend, lookup_backend, list_backends, call_backend,
                       ENTRY_POINT_GROUP)
from . import builtin  # noqa: F401  (registers eager, aot_eager)

__all__ = ["register_backend", "lookup_backend", "list_backends", "call_backend"]

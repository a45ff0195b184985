"""dynjit.backends: the backend registry and the built-in backends."""
from .registry import register_backend, lookup_backend, list_backends, call_backend, ENTRY_POINT_GROUP
from . import builtin  # noqa: F401  (registers eager, aot_eager)

__all__ = ["register_backend", "lookup_backend", "list_backends", "call_backend"]

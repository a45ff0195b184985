"""Internal re-export of dynjit.compiler.registry (the registry's old home): the frontend and
older code import `dynjit.backends.registry`; the objects are the same as dynjit.compiler's."""
from ..compiler.registry import (register_backend, lookup_backend, list_backends, call_backend,  # noqa: F401
                                 backend_name, contract_error, ENTRY_POINT_GROUP)

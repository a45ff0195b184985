"""Internal re-export of dynjit.compiler.builtin (the built-in backends' old home)."""
from ..compiler.builtin import eager, aot_eager, aot_eager_default_partitioner  # noqa: F401

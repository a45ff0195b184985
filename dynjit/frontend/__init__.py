"""dynjit's frontend: the bytecode JIT (entry points, translator, guards, code generation)."""
from .eval_frame import (compile, optimize, optimize_assert, disable, reset, graph_break, CompiledFunction,
                         allow_in_graph)
from .explain import explain, ExplainOutput
from .dynamic_marks import mark_dynamic, maybe_mark_dynamic, mark_static, ConstraintViolationError

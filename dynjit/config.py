"""dynjit.config: settings of the JIT (change them as module attributes)."""

# Cache entries per code object before the frame runs eagerly (with one warning).
cache_size_limit = 8
# Give up on inlining past this call depth (deep recursion runs eagerly).
max_inline_depth = 32
# Unroll at most this many loop iterations while tracing.
max_loop_unroll = 10000
# A generator called in a compiled function is run to completion at trace time; past this many
# items (an endless generator?) the call is a graph break instead.
max_generator_items = 10000
# An exception inside dynjit itself while tracing or generating code is an InternalError. By
# default the frame then runs plain (the user's program stays correct) and the error is logged
# (DYNJIT_LOGS=internal_errors) and counted in counters["internal_error"]; strict mode raises it
# instead. Tests and CI run strict. Environment: DYNJIT_STRICT=1.
import os as _os
strict_internal_errors = _os.environ.get("DYNJIT_STRICT", "") not in ("", "0")
# Tracebacks of exceptions leaving a compiled function omit the frontend's own frames (the
# compiled wrapper, transformed function, graph-break glue) so they read as if the code ran
# plain. True keeps every frame (for debugging dynjit). Environment: DYNJIT_VERBOSE_TRACEBACKS=1.
verbose_tracebacks = _os.environ.get("DYNJIT_VERBOSE_TRACEBACKS", "") not in ("", "0")

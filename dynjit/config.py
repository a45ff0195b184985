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

"""The words an op declaration uses (see registry.py): kinds, dtype rules, variants, tags."""

POINTWISE = "pointwise"
REDUCTION = "reduction"
VIEW = "view"
INPLACE = "inplace"
EXTERN = "extern"
FACTORY = "factory"
OTHER = "other"
KINDS = (POINTWISE, REDUCTION, VIEW, INPLACE, EXTERN, FACTORY, OTHER)

# dtype rules for pointwise ops
PROMOTE = "promote"          # PyTorch promotion of all operands
FLOAT = "float"              # promote, then integers/bool become the default float
BOOL = "bool"                # comparisons and logical ops
KEEP = "keep"                # dtype of the first tensor argument
REAL = "real"                # promote; a complex result is its real dtype (abs)
REAL_FLOAT = "real_float"    # as FLOAT; a complex result is its real dtype (angle)

# variants: the public entries generated from an op
FUNCTION = "function"        # dynjit.<name>
METHOD = "method"            # Tensor.<name>
VARIANTS = (FUNCTION, METHOD)

# tags: facts about an op that passes read
RANDOM = "random"            # draws from the RNG: never dropped as dead code nor recomputed
NONE_DIM_REDUCES_ALL = "none_dim_reduces_all"   # a reduction whose dim=None means every dim
COMPUTE_BOUND = "compute_bound"  # costs far more than reading its result: saved, never recomputed
# autocast's cast policy (PyTorch's CPU lists): computed in autocast's lower-precision dtype
# (matrix products, convolution) or in float32 (losses, prod)
AUTOCAST_LOWER_PRECISION = "autocast_lower_precision"
AUTOCAST_FP32 = "autocast_fp32"
# every tensor argument is a batch of matrices (or vectors) whose leading dims broadcast, and
# every output carries that batch in front (the linalg decompositions and solvers): vmap batches it
BATCHED_MATRICES = "batched_matrices"
TAGS = (RANDOM, NONE_DIM_REDUCES_ALL, COMPUTE_BOUND, AUTOCAST_LOWER_PRECISION, AUTOCAST_FP32, BATCHED_MATRICES)

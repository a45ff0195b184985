"""dynjit: a bytecode-level JIT for numerical Python, with its own numpy-backed
tensor library and autograd engine. Public names follow PyTorch's."""
from ._dtype import (dtype, float16, float32, float64, half, float, double, int8, int16, int32,
                     int64, uint8, long, int, get_default_dtype, set_default_dtype,
                     bfloat16, complex64, complex128, cfloat, cdouble, finfo, iinfo)
from ._dtype import bool_ as bool  # noqa: A001  (PyTorch's name)
from . import ops
from .tensor import (Tensor, Size, tensor, as_tensor, from_numpy, is_tensor, device,
                     get_default_device, set_default_device)
from . import autograd
# ops imports nothing above it: hand the dispatcher the tensor class and autograd's entry
# points, once, before any op runs (docs/architecture.md)
ops.dispatch.install_tensor_class(Tensor)
ops.dispatch.install_autograd(autograd.graph.make_backward_class, autograd.graph.rebase_view)
from . import _methods  # noqa: F401,E402  (binds Tensor's op and autograd methods)
from .functional import *  # noqa: F401,F403
from .functional import (max, min, var, std, norm, split, chunk, flatten, reshape, permute, flip,
                         squeeze, zeros, ones, empty, full, arange, linspace, eye, rand, randn,
                         randint, randperm, zeros_like, ones_like, empty_like, full_like,
                         rand_like, randn_like, allclose, isclose, equal, einsum, dropout,
                         broadcast_tensors, broadcast_shapes, result_type, promote_types, clone,
                         detach, clamp_min, clamp_max, movedim, swapaxes, numel, bernoulli,
                         is_floating_point, is_nonzero)
from .autograd import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                       is_inference_mode_enabled, is_inference)
from .random import manual_seed, seed, initial_seed, get_rng_state, set_rng_state, Generator
from . import random

from math import inf, nan, pi, e  # noqa: E402
__version__ = "0.1.0"
from . import exc, utils, config  # noqa: E402
from . import fx, compiler, backends  # noqa: E402
from . import nn, optim  # noqa: E402
from . import cuda, accelerator, amp  # noqa: E402,F401  (CPU-only device queries, torch's names)
from .amp import autocast, is_autocast_enabled  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from . import func  # noqa: E402,F401  (torch.func: vmap, grad, jacrev, functionalize)
from . import profiler  # noqa: E402,F401
from . import library  # noqa: E402,F401  (torch.library: custom_op, register_fake, register_autograd)
from . import distributions  # noqa: E402,F401  (torch.distributions: Categorical, Normal, Bernoulli)
from . import linalg  # noqa: E402,F401  (torch.linalg)
from .linalg._aliases import (det, logdet, slogdet, inverse, cholesky, cholesky_solve,  # noqa: E402,F401
                              cholesky_inverse, triangular_solve, svd, qr, pinverse, matrix_exp,
                              matrix_power, cross, lu_unpack)
from ._pairwise import cdist  # noqa: E402,F401
from . import sparse  # noqa: E402,F401  (torch.sparse: sparse COO tensors, docs/sparse.md)
from .sparse import (sparse_coo_tensor, layout, strided, sparse_coo, sparse_csr, sparse_csc,  # noqa: E402,F401
                     sparse_bsr, sparse_bsc)
from . import compiled_autograd  # noqa: E402,F401
from .control_flow import cond  # noqa: E402,F401  (torch.cond; map is dynjit.control_flow.map)
from .frontend import (compile, optimize, optimize_assert, disable, reset, graph_break, explain,  # noqa: E402
                       allow_in_graph, mark_dynamic, maybe_mark_dynamic, mark_static)
from ._logging import set_logs, init_from_env as _init_logs  # noqa: E402
_init_logs()

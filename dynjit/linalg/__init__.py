"""`dynjit.linalg`: torch.linalg under its names, signatures, defaults and return types.

- Decompositions: `svd` (full_matrices), `svdvals`, `eigh`, `eigvalsh`, `eig`, `eigvals`
  (complex results), `qr` (mode 'reduced', 'complete', 'r'), `cholesky`, `cholesky_ex`, `lu`,
  `lu_factor`, `lu_factor_ex`.
- Solvers and inverses: `solve` (left=), `solve_ex`, `solve_triangular`, `lu_solve`, `lstsq`,
  `inv`, `inv_ex`, `pinv`, `tensorinv`, `tensorsolve`, `householder_product`.
- Scalars of a matrix: `det`, `slogdet`, `matrix_rank`, `cond`, and the norms `vector_norm`,
  `matrix_norm` (ord 'fro', 'nuc', 2, -2, 1, -1, inf, -inf) and `norm`.
- Functions of a matrix and products: `matrix_power`, `matrix_exp`, `multi_dot`, `cross`,
  `vecdot`, `matmul`, `diagonal`, `vander`.

Every function batches over leading dims and returns torch.return_types' named tuples
(`svd(A).U`, `.S`, `.Vh`). The decompositions and solvers are registry ops
(dynjit/ops/linalg_decomp.py, linalg_solve.py, linalg_lu.py: numpy kernels, meta functions,
PyTorch's derivatives written with registered ops, so gradients differentiate again and
everything traces under dynjit.compile); the rest are composites of them. A failure that
depends on the values (a singular matrix, one that is not positive-definite) raises
`dynjit.linalg.LinAlgError` with PyTorch's message. The functions live in _decompositions.py,
_solvers.py, _scalars.py and _products.py; the torch.* aliases (`dynjit.det`, `dynjit.svd` with V,
`dynjit.triangular_solve`, ...) and Tensor methods in _aliases.py.
"""
from ..ops.linalg_common import LinAlgError  # noqa: F401
from ._decompositions import (svd, svdvals, eigh, eigvalsh, eig, eigvals, qr, cholesky,  # noqa: F401
                              cholesky_ex, lu, lu_factor, lu_factor_ex)
from ._solvers import (inv, inv_ex, solve, solve_ex, solve_triangular, lu_solve, lstsq, pinv,  # noqa: F401
                       tensorinv, tensorsolve, householder_product)
from ._scalars import det, slogdet, matrix_rank, cond, vector_norm, matrix_norm, norm  # noqa: F401
from ._products import (matrix_power, matrix_exp, multi_dot, cross, vecdot, matmul, diagonal,  # noqa: F401
                        vander)

__all__ = ["LinAlgError", "svd", "svdvals", "eigh", "eigvalsh", "eig", "eigvals", "qr", "cholesky",
           "cholesky_ex", "inv", "inv_ex", "solve", "solve_triangular", "lstsq", "pinv", "det", "slogdet",
           "matrix_rank", "cond", "vector_norm", "matrix_norm", "norm", "matrix_power", "matrix_exp",
           "multi_dot", "cross", "vecdot", "matmul", "diagonal", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "solve_ex", "tensorinv", "tensorsolve", "vander", "householder_product"]


from . import _aliases  # noqa: E402,F401  (the torch.* aliases and Tensor methods)

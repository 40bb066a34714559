"""torch.linalg: factorizations and solves (LAPACK primitives in ir/linalg_ops.py) and norms."""
from ..ir.linalg_ops import LinAlgError  # noqa: F401
from ..tracer.functional import matmul  # noqa: F401  (torch.linalg.matmul)
from .decompositions import (cholesky, cross, det, eigh, eigvalsh, inv, matrix_power, pinv,  # noqa
                             qr, slogdet, solve, svd, svdvals)
from .norms import matrix_norm, norm, vector_norm  # noqa: F401
from .compositions import (cholesky_ex, cond, diagonal, householder_product, inv_ex,  # noqa
                           matrix_rank, multi_dot, solve_ex, tensorinv, tensorsolve, vander,
                           vecdot)
from .factorizations import (ldl_factor, ldl_factor_ex, ldl_solve, lstsq, lu, lu_factor,  # noqa
                             lu_factor_ex, lu_solve, matrix_exp, solve_triangular)
from . import decompositions as _d, factorizations as _f, norms as _n
from .lowrank import lobpcg as _lobpcg, pca_lowrank as _pca_lowrank, svd_lowrank as _svd_lowrank

# torch.<name> spellings outside torch.linalg (PyTorch 2.13 still has all of these)
TORCH_PUBLIC = {"det": det, "inverse": inv, "slogdet": slogdet, "logdet": _d.logdet,
                "cholesky": _d.torch_cholesky, "qr": _d.torch_qr, "svd": _d.torch_svd,
                "pinverse": _d.pinverse,
                "matrix_power": matrix_power, "cross": _d.torch_cross, "norm": _n.torch_norm,
                "dist": _n.dist, "cdist": _n.cdist,
                "lu": _f.torch_lu, "lu_solve": _f.torch_lu_solve, "lu_unpack": _f.lu_unpack,
                "triangular_solve": _f.triangular_solve, "cholesky_solve": _f.cholesky_solve,
                "cholesky_inverse": _f.cholesky_inverse, "geqrf": _f.geqrf, "orgqr": _f.orgqr,
                "ormqr": _f.ormqr, "matrix_exp": matrix_exp, "svd_lowrank": _svd_lowrank,
                "pca_lowrank": _pca_lowrank, "lobpcg": _lobpcg}
# Tensor.<name> methods among them
METHODS = ("det", "inverse", "slogdet", "logdet", "cholesky", "qr", "svd", "pinverse",
           "matrix_power", "cross", "norm", "dist", "lu", "lu_solve", "triangular_solve",
           "cholesky_solve", "cholesky_inverse", "geqrf", "orgqr", "ormqr", "matrix_exp")

# bound here, not in tracer/methods.py: the tracer imports nothing from linalg
from ..tracer.methods import _method as _as_method  # noqa: E402
from ..tracer.tensor import Tensor as _Tensor  # noqa: E402
for _name in METHODS:
    setattr(_Tensor, _name, _as_method(TORCH_PUBLIC[_name]))


# torch.linalg names fusetorch does not have: complex results are out of scope
_COMPLEX = ("eig", "eigvals")


def __getattr__(name: str):
    from .._out_of_scope import COMPLEX, OutOfScopeError
    if name in _COMPLEX:
        raise OutOfScopeError(f"fusetorch does not implement torch.linalg.{name}: its results "
                              f"are complex, and {COMPLEX} are out of scope (see README)")
    raise AttributeError(f"module 'fusetorch.linalg' has no attribute '{name}'", name=name)

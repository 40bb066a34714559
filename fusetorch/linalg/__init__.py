"""torch.linalg: factorizations and solves (LAPACK primitives in ir/linalg_ops.py) and norms."""
from ..ir.linalg_ops import LinAlgError  # noqa: F401
from ..tracer.functional import matmul  # noqa: F401  (torch.linalg.matmul)
from .decompositions import (cholesky, cross, det, eigh, eigvalsh, inv, matrix_power, pinv,  # noqa
                             qr, slogdet, solve, svd, svdvals)
from .norms import matrix_norm, norm, vector_norm  # noqa: F401
from . import decompositions as _d, norms as _n

# torch.<name> spellings outside torch.linalg (PyTorch 2.13 still has all of these)
TORCH_PUBLIC = {"det": det, "inverse": inv, "slogdet": slogdet, "logdet": _d.logdet,
                "cholesky": _d.torch_cholesky, "qr": _d.torch_qr, "svd": _d.torch_svd,
                "pinverse": _d.pinverse,
                "matrix_power": matrix_power, "cross": _d.torch_cross, "norm": _n.torch_norm,
                "dist": _n.dist, "cdist": _n.cdist}
# Tensor.<name> methods among them
METHODS = ("det", "inverse", "slogdet", "logdet", "cholesky", "qr", "svd", "pinverse",
           "matrix_power", "cross", "norm", "dist")

# bound here, not in tracer/methods.py: the tracer imports nothing from linalg
from ..tracer.methods import _method as _as_method  # noqa: E402
from ..tracer.tensor import Tensor as _Tensor  # noqa: E402
for _name in METHODS:
    setattr(_Tensor, _name, _as_method(TORCH_PUBLIC[_name]))

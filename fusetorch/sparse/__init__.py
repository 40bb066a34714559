"""`torch.sparse`: the sparse COO subset (fusetorch/sparse/coo.py): `torch.sparse_coo_tensor`,
`Tensor.to_sparse`, `to_dense`, `coalesce`, `indices`/`values`, and sparse @ dense
(`torch.sparse.mm`, `torch.spmm`, `torch.mm`, `torch.matmul`, `@`) with gradients for the values
and the dense operand. The rest of sparse raises fusetorch's out-of-scope error."""
from ..tracer import dispatch as _D
from ..tracer.tensor import Tensor as _Tensor
from .coo import (SparseCOOTensor, _dense_to_dense, _no_kernel, _not_sparse, layout, mm,
                  sparse_coo, sparse_coo_tensor, strided, to_sparse)

__all__ = ["mm", "SparseCOOTensor"]


def __getattr__(name: str):
    from .._out_of_scope import SPARSE, missing
    raise missing("module 'fusetorch.sparse'", "torch.sparse", name, {name: SPARSE})


# bound here, as linalg binds its methods: the tracer imports nothing from sparse
_Tensor.to_sparse = to_sparse
_Tensor.to_sparse_coo = lambda self: to_sparse(self)
_Tensor.to_dense = _dense_to_dense
_Tensor.layout = strided
for _name in ("indices", "values", "coalesce", "is_coalesced"):
    setattr(_Tensor, _name, _not_sparse(_name))
for _name in ("_indices", "_values"):
    setattr(_Tensor, _name, _no_kernel(_name))
_D.SPARSE_MM = mm
_Tensor.sparse_dim = lambda self: 0
_Tensor.dense_dim = lambda self: self.ndim

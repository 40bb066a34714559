"""`torch.sparse`: the sparse COO subset (fusetorch/sparse/coo.py): `torch.sparse_coo_tensor`,
`Tensor.to_sparse`, `to_dense`, `coalesce`, `indices`/`values`, products with dense matrices on
either side and with sparse ones (`torch.sparse.mm`, `torch.spmm`, `torch.mm`, `torch.matmul`,
`@`, `torch.sparse.addmm`), sums and differences, scaling, `t`/`transpose` and
`torch.sparse.sum` (arith.py), with gradients for the values and the dense operands; the legacy
constructors `torch.sparse.FloatTensor(indices, values, size)` and kin. The rest of sparse
raises fusetorch's out-of-scope error."""
from ..tracer import dispatch as _D
from ..tracer.tensor import Tensor as _Tensor
from ..ir import dtypes as _dt
from . import arith as _arith
from .arith import addmm, sum, zeros_sparse as _zeros_sparse
from .coo import (SparseCOOTensor, _dense_to_dense, _no_kernel, _not_sparse, layout, mm,
                  sparse_coo, sparse_coo_tensor, strided, to_sparse)

__all__ = ["mm", "addmm", "sum", "SparseCOOTensor"]


class _LegacySparse(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, SparseCOOTensor) and obj.dtype is cls._dtype

    def __repr__(cls) -> str:
        return f"<class 'torch.sparse.{cls.__name__}'>"


def _legacy(name: str, dtype):
    """torch.sparse.FloatTensor and kin: (indices, values[, size]) as sparse_coo_tensor (the
    values keep their dtype, as PyTorch's do), or (*sizes) for an empty one of the dtype."""
    def __new__(cls, *args, device=None):
        if args and all(isinstance(a, int) for a in args):
            return _zeros_sparse(tuple(args), dtype)
        if len(args) == 1 and isinstance(args[0], tuple):
            return _zeros_sparse(tuple(args[0]), dtype)
        if len(args) in (2, 3):
            return sparse_coo_tensor(*args, device=device)
        raise TypeError(f"{name}(): expected (indices, values[, size]) or sizes")
    return _LegacySparse(name, (), {"__new__": __new__, "_dtype": dtype,
                                    "__module__": "torch.sparse"})


FloatTensor = _legacy("FloatTensor", _dt.float32)
DoubleTensor = _legacy("DoubleTensor", _dt.float64)
HalfTensor = _legacy("HalfTensor", _dt.float16)
LongTensor = _legacy("LongTensor", _dt.int64)
IntTensor = _legacy("IntTensor", _dt.int32)
ByteTensor = _legacy("ByteTensor", _dt.uint8)
BoolTensor = _legacy("BoolTensor", _dt.bool_)


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
_D.SPARSE_BINARY = _arith.dense_op
_Tensor.sparse_dim = lambda self: 0
_Tensor.dense_dim = lambda self: self.ndim

"""nn.Linear as one primitive (issue 28): y = x @ W^T (+ b).

    linear(x [..., in], W [out, in][, b [out]])  -> [..., out]   (float32, float64)

Composed it was permute, matmul and add, each a dispatch and an autograd record, and ONNX
export had to recognise the three again to write Gemm. As one primitive eager makes one call
(runtime/eager.py: the product on the BLAS threads matmul runs on, the bias added into it in
place) and one record. Its VJP is matmul's on W^T and the bias's sum, the very nodes the
composition differentiates into, so gradients are the composed form's bit for bit. Compiled
graphs run the composition (`passes.decompose`): the product stays a library call apart from
the bias add, which fuses with what follows (an activation). ONNX writes Gemm for a 2-d x
(onnx/ops.py), MatMul and Add otherwise.
"""
from __future__ import annotations

from .ops import _def, arg, matmul_grads
from . import dtypes as dt

_T = (1, 0)


def _shape(shapes, _a):
    x, w = shapes[0], shapes[1]
    if len(x) < 2 or len(w) != 2 or x[-1] != w[1] or (len(shapes) == 3 and
                                                       tuple(shapes[2]) != (w[0],)):
        raise RuntimeError(f"linear's primitive takes x [..., in], W [out, in] and b [out], got "
                           f"{[list(s) for s in shapes]}")
    return tuple(x[:-1]) + (w[0],)


def _dtype(dtypes, _a):
    d = dtypes[0]
    if d not in (dt.float32, dt.float64) or any(o is not d for o in dtypes):
        raise TypeError(f"linear's primitive takes float32 or float64 operands of one dtype, got "
                        f"{list(dtypes)}")
    return d


def _composition(n, make):
    wt = make("permute", [arg(n, 1)], {"perm": _T}, n.meta)
    out = make("matmul", [arg(n, 0), wt], {}, n.meta)
    return make("add", [out, arg(n, 2)], {}, n.meta) if len(n.inputs) == 3 else out


def _vjp(b, n, g):
    wt = b.op("permute", b.value(arg(n, 1)), perm=_T)
    gx, gwt = matmul_grads(b, b.value(arg(n, 0)), wt, g)
    grads = (gx, b.op("permute", gwt, perm=_T))
    return grads + (b.sum_to(g, arg(n, 2).shape),) if len(n.inputs) == 3 else grads


def _grad_name(n) -> str:
    # PyTorch's for a matrix input (addmm, mm), else those of the composed form's last node
    if len(n.inputs[0].shape) == 2:
        return "AddmmBackward0" if len(n.inputs) == 3 else "MmBackward0"
    return "AddBackward0" if len(n.inputs) == 3 else "BmmBackward0"


_def("linear", "extern", None, _shape, _dtype, vjp=_vjp, saves=(0, 1),
     saves_for=((1,), (0,), ()), grad_name=_grad_name, composition=_composition,
     doc="x @ W^T (+ b) for x [..., in], W [out, in], b [out] (nn.Linear); inputs x, W[, b]")

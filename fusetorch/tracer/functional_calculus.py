"""Numerical derivatives and integrals of PyTorch's catalogue (issue 27), composed from
primitives: `gradient` (numpy.gradient's second-order central differences, first- or
second-order edges, uniform or coordinate spacing) and `trapezoid trapz cumulative_trapezoid`
(PyTorch's own formulas, so the rounding is its)."""
from __future__ import annotations

from ..ir import dtypes as dt
from ..ir.shapes import norm_dim
from . import dispatch as D
from . import functional as F
from .dispatch import binary, cast
from .tensor import Tensor
from .numpy_names import numpy_names


def _float(x: Tensor) -> Tensor:
    return x if x._dtype.is_floating_point else cast(x, dt.default_float())


def _along(v: Tensor, d: int, ndim: int) -> Tensor:
    """A 1-d tensor shaped to broadcast along dim d of an ndim-d tensor."""
    return F.reshape(v, tuple(-1 if i == d else 1 for i in range(ndim)))


def _part(f: Tensor, d: int, lo: int, hi: int) -> Tensor:
    """f[lo:hi] along dim d."""
    return F.narrow(f, d, lo, hi - lo)


def _add3(a, fa, b, fb, c, fc):
    return binary("add", binary("add", binary("mul", a, fa), binary("mul", b, fb)),
                  binary("mul", c, fc))


def _ends(f: Tensor, d: int, order: int) -> tuple:
    """The slices one-sided differences read: f[0], f[1], f[-2], f[-1]; or f[2], f[-3]."""
    n = f.shape[d]
    if order == 1:
        return tuple(_part(f, d, i, i + 1) for i in (0, 1, n - 2, n - 1))
    return _part(f, d, 2, 3), _part(f, d, n - 3, n - 2)


def _uniform(f: Tensor, d: int, h: float, edge_order: int) -> Tensor:
    n = f.shape[d]
    inner = binary("div", binary("sub", _part(f, d, 2, n), _part(f, d, 0, n - 2)), 2.0 * h)
    f0, f1, g2, g3 = _ends(f, d, 1)
    if edge_order == 1:
        first = binary("div", binary("sub", f1, f0), h)
        last = binary("div", binary("sub", g3, g2), h)
    else:
        f2, g1 = _ends(f, d, 2)
        first = binary("div", _add3(-1.5, f0, 2.0, f1, -0.5, f2), h)
        last = binary("div", _add3(0.5, g1, -2.0, g2, 1.5, g3), h)
    return F.cat([first, inner, last], d)


def _coordinates(f: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    n, nd = f.shape[d], f.ndim
    x = cast(x, f._dtype) if x._dtype is not f._dtype else x
    dx = binary("sub", F.narrow(x, 0, 1, n - 1), F.narrow(x, 0, 0, n - 1))
    d1, d2 = F.narrow(dx, 0, 0, n - 2), F.narrow(dx, 0, 1, n - 2)
    s = binary("add", d1, d2)
    a = binary("div", F.neg(d2), binary("mul", d1, s))
    b = binary("div", binary("sub", d2, d1), binary("mul", d1, d2))
    c = binary("div", d1, binary("mul", d2, s))
    inner = _add3(_along(a, d, nd), _part(f, d, 0, n - 2), _along(b, d, nd),
                  _part(f, d, 1, n - 1), _along(c, d, nd), _part(f, d, 2, n))
    f0, f1, g2, g3 = _ends(f, d, 1)
    h0, hl = F.narrow(dx, 0, 0, 1), F.narrow(dx, 0, n - 2, 1)
    if edge_order == 1:
        first = binary("div", binary("sub", f1, f0), _along(h0, d, nd))
        last = binary("div", binary("sub", g3, g2), _along(hl, d, nd))
    else:
        f2, g1 = _ends(f, d, 2)
        e1, e2 = h0, F.narrow(dx, 0, 1, 1)
        es = binary("add", e1, e2)
        a0 = binary("div", F.neg(binary("add", binary("mul", 2.0, e1), e2)), binary("mul", e1, es))
        b0 = binary("div", es, binary("mul", e1, e2))
        c0 = binary("div", F.neg(e1), binary("mul", e2, es))
        first = _add3(_along(a0, d, nd), f0, _along(b0, d, nd), f1, _along(c0, d, nd), f2)
        l1, l2 = F.narrow(dx, 0, n - 3, 1), hl
        ls = binary("add", l1, l2)
        a1 = binary("div", l2, binary("mul", l1, ls))
        b1 = binary("div", F.neg(ls), binary("mul", l1, l2))
        c1 = binary("div", binary("add", binary("mul", 2.0, l2), l1), binary("mul", l2, ls))
        last = _add3(_along(a1, d, nd), g1, _along(b1, d, nd), g2, _along(c1, d, nd), g3)
    return F.cat([first, inner, last], d)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """The derivative estimated along each dim of `dim` (every dim by default), one tensor
    each: central differences inside, one-sided differences of order `edge_order` at the
    ends; `spacing` is one step for all dims, one step per dim, or one coordinate tensor per
    dim."""
    D.check_tensor(input, "gradient", "input", 1)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if spacing is None:  # PyTorch's default, spelled out
        spacing = 1
    dims = tuple(range(input.ndim)) if dim is None else (
        (dim,) if isinstance(dim, int) else tuple(dim))
    dims = tuple(norm_dim(d, input.ndim) for d in dims)
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar "
                               f"or it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.")
        steps = list(spacing)
    else:
        steps = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = _float(input)
    out = []
    for d, h in zip(dims, steps):
        if isinstance(h, Tensor):
            if h.ndim != 1 or h.shape[0] != f.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                   f"device and to have the size of the dim {d} of the input")
            out.append(_coordinates(f, d, h, edge_order))
        else:
            out.append(_uniform(f, d, float(h), edge_order))
    return tuple(out)


def _trapezoid_args(fn: str, y: Tensor, x, dx, dim: int) -> int:
    D.check_tensor(y, fn, "y", 1)
    if x is not None and dx is not None:
        raise TypeError(f"{fn}() received an invalid combination of arguments: x and dx")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return norm_dim(dim, y.ndim)


def _no_bool(fn: str, y: Tensor, x) -> None:
    if isinstance(x, Tensor) and dt.bool_ in (x._dtype, y._dtype):
        raise RuntimeError(f"{fn}: received a bool input for `x` or `y`, but bool is not "
                           f"supported")
    if y._dtype is dt.bool_:
        raise RuntimeError(f"{fn}: received a bool input for `y`, but bool is not supported")


def _x_steps(y: Tensor, x: Tensor, d: int) -> Tensor:
    """diff(x) broadcast along dim d of y (x 1-d, or of y's rank), in x's own dtype."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        return _along(_diff1(x), d, y.ndim)
    return _diff1(x, d)


def _diff1(x: Tensor, d: int = 0) -> Tensor:
    n = x.shape[d]
    return binary("sub", F.narrow(x, d, 1, n - 1), F.narrow(x, d, 0, n - 1))


def _left_right(y: Tensor, d: int) -> Tensor:
    n = y.shape[d]
    return binary("add", F.narrow(y, d, 1, n - 1), F.narrow(y, d, 0, n - 1))


def _step(x, dx) -> float:
    """The constant spacing: `dx`, or a number passed as x (the legacy trapz(y, dx))."""
    h = dx if dx is not None else (x if x is not None else 1.0)
    if isinstance(h, bool) or not isinstance(h, (int, float)):
        raise TypeError(f"trapezoid(): argument 'dx' must be Number, not {type(h).__name__}")
    return float(h)


@numpy_names
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoid rule along `dim`: with sample points `x`, or a constant spacing `dx`.
    Sums and differences stay in the inputs' dtypes until the halving, as ATen's (an integer
    y's neighbours' sums and x's steps wrap around in its width)."""
    d = _trapezoid_args("trapezoid", y, x, dx, dim)
    if y.shape[d] == 0:  # zeros in y's own dtype, before any dtype check, as ATen's
        total = F.sum(y, d)
        return cast(total, y._dtype) if total._dtype is not y._dtype else total
    _no_bool("trapezoid", y, x)
    if x is not None and isinstance(x, Tensor):
        steps = _x_steps(y, x, d)
        return binary("div", F.sum(binary("mul", _left_right(y, d), steps), d), 2.0)
    h = _step(x, dx)
    n = y.shape[d]
    ends = binary("add", _part(y, d, 0, 1), _part(y, d, n - 1, n))
    ends = F.squeeze(ends, d)
    return binary("mul", binary("sub", F.sum(y, d), binary("mul", ends, 0.5)), h)


def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Alias of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None,
                         dim: int = -1) -> Tensor:
    """The running trapezoid rule along `dim` (one element fewer than y there), in the dtypes
    trapezoid's formulas keep."""
    from .functional_scan import cumsum
    d = _trapezoid_args("cumulative_trapezoid", y, x, dx, dim)
    _no_bool("cumulative_trapezoid", y, x)
    if y.shape[d] == 0:
        return _float(y)
    if x is not None and isinstance(x, Tensor):
        areas = binary("div", binary("mul", _x_steps(y, x, d), _left_right(y, d)), 2.0)
    else:
        h = _step(x, dx)
        areas = binary("mul", h / 2.0, _left_right(y, d))
    return cumsum(areas, d)


PUBLIC = ("gradient", "trapezoid", "trapz", "cumulative_trapezoid")

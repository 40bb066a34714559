"""torch.signal.windows and the torch.*_window functions (issue 27), computed as PyTorch
computes them: tensor ops in the requested dtype on a `linspace` of the window's points
(`sym=True` symmetric windows for filter design, `sym=False` / `periodic=True` for spectral
analysis, one point longer with the last dropped)."""
from __future__ import annotations

import math
from collections.abc import Iterable

from ..ir import dtypes as dt
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.dispatch import binary, unary
from ..tracer.tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype) -> dt.DType:
    if not isinstance(M, int) or isinstance(M, bool):
        raise TypeError(f"{name}(): argument 'M' must be int, not {type(M).__name__}")
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    d = dt.default_float() if dtype is None else dt.to_dtype(dtype, name)
    if d not in (dt.float32, dt.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {d}")
    return d


def _done(w: Tensor, requires_grad: bool) -> Tensor:
    return w.requires_grad_() if requires_grad else w


def _trivial(M: int, d: dt.DType, device, requires_grad: bool) -> Tensor | None:
    """The empty window (M = 0) and the single point (M = 1), or None."""
    if M == 0:
        return _done(C.empty(0, dtype=d, device=device), requires_grad)
    if M == 1:
        return _done(C.ones(1, dtype=d, device=device), requires_grad)
    return None


def _points(start, end, M: int, d: dt.DType, device) -> Tensor:
    return C.linspace(start, end, M, dtype=d, device=device)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """exp(-|n - center| / tau)."""
    d = _checks("exponential", M, dtype)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _done(C.empty(0, dtype=d, device=device), requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _points(-center / tau, (-center + (M - 1)) / tau, M, d, device)
    return _done(unary("exp", unary("neg", unary("abs", k))), requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """sin(pi (n + 1/2) / M) (the sine window)."""
    d = _checks("cosine", M, dtype)
    if M == 0:
        return _done(C.empty(0, dtype=d, device=device), requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _points(0.5 * step, (0.5 + (M - 1)) * step, M, d, device)
    return _done(unary("sin", k), requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=None,
             device=None, requires_grad: bool = False) -> Tensor:
    """exp(-(n - (M - 1) / 2)^2 / (2 std^2))."""
    d = _checks("gaussian", M, dtype)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _done(C.empty(0, dtype=d, device=device), requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    c = 1 / (std * math.sqrt(2))
    k = _points(start * c, (start + (M - 1)) * c, M, d, device)
    return _done(unary("exp", unary("neg", binary("mul", k, k))), requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=None,
           device=None, requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    d = _checks("kaiser", M, dtype)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    small = _trivial(M, d, device, requires_grad)
    if small is not None:
        return small
    b = C.tensor(float(beta), dtype=d, device=device)
    step = 2.0 * beta / (M if not sym else M - 1)
    end = min(beta, -beta + (M - 1) * step)  # (the last point never passes beta)
    k = _points(-beta, end, M, d, device)
    arg = unary("sqrt", binary("sub", binary("mul", b, b), binary("mul", k, k)))
    return _done(binary("div", unary("i0", arg), unary("i0", b)), requires_grad)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=None,
                   device=None, requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    d = _checks("general_cosine", M, dtype)
    small = _trivial(M, d, device, requires_grad)
    if small is not None:
        return small
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0, (M - 1) * step, M, d, device)
    coef = C.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=d, device=device)
    i = C.arange(len(a), dtype=d, device=device)
    terms = binary("mul", F.unsqueeze(coef, -1), unary("cos", binary("mul", F.unsqueeze(i, -1),
                                                                        k)))
    return _done(F.sum(terms, 0), requires_grad)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    return general_hamming(M, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
         requires_grad: bool = False) -> Tensor:
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """1 - |2n / (M - 1) - 1| (the triangle)."""
    d = _checks("bartlett", M, dtype)
    small = _trivial(M, d, device, requires_grad)
    if small is not None:
        return small
    step = 2 / (M if not sym else M - 1)
    k = _points(-1, -1 + (M - 1) * step, M, d, device)
    return _done(binary("sub", 1.0, unary("abs", k)), requires_grad)


# ---------------------------------------------------------------- torch.*_window

def _torch_window(name: str, length, periodic: bool, dtype, device, requires_grad, make):
    """ATen's window functions: `make(N, d)` on N = length (+1 when periodic), the last point
    dropped when periodic."""
    if not isinstance(length, int) or isinstance(length, bool):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(length).__name__}")
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={length}")
    d = dt.default_float() if dtype is None else dt.to_dtype(dtype, name)
    if not d.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if length <= 1:
        w = C.ones(length, dtype=d, device=device)
        return w.requires_grad_() if requires_grad else w
    n = length + 1 if periodic else length
    w = make(C.arange(n, dtype=d, device=device), n)
    if periodic:
        w = F.narrow(w, 0, 0, length)
    w = F.contiguous(w)
    return w.requires_grad_() if requires_grad else w


def _cos(n: Tensor, scale: float) -> Tensor:
    return unary("cos", binary("mul", n, scale))


def _hamming(alpha: float, beta: float):
    def make(n: Tensor, N: int) -> Tensor:  # ATen's order: cos(...) * -beta + alpha
        return binary("add", binary("mul", _cos(n, 2 * math.pi / (N - 1)), -beta), alpha)
    return make


def _blackman(n: Tensor, N: int) -> Tensor:  # 0.08 cos(4 pi n / (N-1)) - 0.5 cos(...) + 0.42
    w = binary("sub", binary("mul", _cos(n, 4 * math.pi / (N - 1)), 0.08),
               binary("mul", _cos(n, 2 * math.pi / (N - 1)), 0.5))
    return binary("add", w, 0.42)


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, requires_grad: bool = False) -> Tensor:
    return _torch_window("hann_window", window_length, periodic, dtype, device, requires_grad,
                         _hamming(0.5, 0.5))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False) -> Tensor:
    return _torch_window("hamming_window", window_length, periodic, dtype, device,
                         requires_grad, _hamming(alpha, beta))


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    return _torch_window("blackman_window", window_length, periodic, dtype, device,
                         requires_grad, _blackman)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    def make(n: Tensor, N: int) -> Tensor:  # ATen's halves: 2n / (N-1), then 2 - 2n / (N-1)
        ramp = binary("mul", n, 2.0 / (N - 1))
        half = ((N - 1) >> 1) + 1
        return F.cat([F.narrow(ramp, 0, 0, half),
                      binary("sub", 2.0, F.narrow(ramp, 0, half, N - half))], 0)
    return _torch_window("bartlett_window", window_length, periodic, dtype, device,
                         requires_grad, make)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None,
                  layout=None, device=None, requires_grad: bool = False) -> Tensor:
    def make(n: Tensor, N: int) -> Tensor:
        alpha = (N - 1) / 2.0
        r = binary("div", binary("sub", n, alpha), alpha)
        arg = binary("mul", beta, unary("sqrt", binary("sub", 1.0, binary("mul", r, r))))
        return binary("div", unary("i0", arg), unary("i0", C.tensor(float(beta), dtype=n.dtype)))
    return _torch_window("kaiser_window", window_length, periodic, dtype, device,
                         requires_grad, make)


TORCH_PUBLIC = ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                "kaiser_window")

"""`gradcheck` / `gradgradcheck`: analytical gradients against central finite differences.

The analytical Jacobian comes from one `autograd.grad` call per output element; the numerical
one from perturbing each input element by +-eps in place (float64 inputs, as PyTorch asks).
"""
from __future__ import annotations

import warnings

import numpy as np

from .autograd import enable_grad, grad, no_grad
from .tensor import Tensor


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs) -> list:
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)
            and o.dtype.is_floating_point]


def _numerical(func, inputs, diff, eps) -> list:
    """J[out][in] as (out.numel, in.numel) arrays by central differences."""
    with no_grad():
        n_out = [o.numel() for o in _outputs(func, inputs)]
        jac = [[np.zeros((m, x.numel())) for x in diff] for m in n_out]
        for j, x in enumerate(diff):
            flat = x._data.reshape(-1)  # a view: x is contiguous (checked by the caller)
            for k in range(flat.size):
                orig = flat[k].item()
                flat[k] = orig + eps
                plus = [o._host().astype(np.float64).reshape(-1) for o in _outputs(func, inputs)]
                flat[k] = orig - eps
                minus = [o._host().astype(np.float64).reshape(-1) for o in _outputs(func, inputs)]
                flat[k] = orig
                for i, (p, m) in enumerate(zip(plus, minus)):
                    jac[i][j][:, k] = (p - m) / (2 * eps)
    return jac


def _analytical(func, inputs, diff) -> list:
    outs = _outputs(func, inputs)
    jac = [[np.zeros((o.numel(), x.numel())) for x in diff] for o in outs]
    for i, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for r in range(o.numel()):
            seed = np.zeros(o.numel(), dtype=o._data.dtype)
            seed[r] = 1
            g = Tensor._make(seed.reshape(o._data.shape), o.dtype, o._be)
            gs = grad(o, diff, g, retain_graph=True, allow_unused=True)
            for j, gj in enumerate(gs):
                if gj is not None:
                    jac[i][j][r, :] = gj._host().astype(np.float64).reshape(-1)
    return jac


def _forward_analytical(func, inputs, diff) -> list:
    """J[out][in] by forward-mode AD: one dual pass per input element (a one-hot tangent)."""
    from . import forward_ad as fw
    outs = _outputs(func, inputs)
    jac = [[np.zeros((o.numel(), x.numel())) for x in diff] for o in outs]
    for j, x in enumerate(diff):
        for k in range(x.numel()):
            seed = np.zeros(x.numel(), dtype=x._data.dtype)
            seed[k] = 1
            tangent = Tensor._make(seed.reshape(x._data.shape), x.dtype, x._be)
            fw.enter()
            try:
                dual = fw.make_dual(x, tangent)
                args = tuple(dual if a is x else a for a in inputs)
                for i, o in enumerate(_outputs(func, args)):
                    t = fw.tangent_of(o)[1]
                    if t is not None:
                        jac[i][j][:, k] = t._host().astype(np.float64).reshape(-1)
            finally:
                fw.exit_level()
    return jac


def _compare(analytical, numerical, atol, rtol, raise_exception, mode: str = "") -> bool:
    for i, (arow, nrow) in enumerate(zip(analytical, numerical)):
        for j, (a, n) in enumerate(zip(arow, nrow)):
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                msg = (f"Jacobian {mode}mismatch for output {i} with respect to input {j},\n"
                       f"numerical:{n}\nanalytical:{a}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, check_backward_ad: bool = True,
              check_forward_ad: bool = False, **_ignored) -> bool:
    """True if `func`'s gradients match finite differences at `inputs` (float64 advised).

    >>> x = fusetorch.randn(3, dtype=fusetorch.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    for k, x in enumerate(diff):
        if x.dtype.name != "float64":
            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of "
                          "double precision floating point. ", UserWarning, stacklevel=2)
        if not x._data.flags.c_contiguous:
            raise ValueError("gradcheck expects contiguous inputs")
    if not (check_backward_ad or check_forward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to "
                             "be True")
    numerical = _numerical(func, inputs, diff, eps)
    if check_backward_ad and not _compare(_analytical(func, inputs, diff), numerical, atol, rtol,
                                          raise_exception):
        return False
    return not check_forward_ad or _compare(_forward_analytical(func, inputs, diff), numerical,
                                            atol, rtol, raise_exception,
                                            "computed with forward mode ")


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, **_ignored) -> bool:
    """gradcheck of the first derivative: second derivatives through create_graph=True."""
    inputs = _as_tuple(inputs)
    diff_pos = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        from .creation import randn
        grad_outputs = [randn(tuple(o.shape), dtype=o.dtype, requires_grad=True) for o in outs]
    grad_outputs = list(_as_tuple(grad_outputs))
    n = len(inputs)

    def first_derivative(*args):
        xs, gos = args[:n], args[n:]
        with enable_grad():  # the numerical pass calls this under no_grad
            ys = _outputs(func, xs)
            gs = grad(ys, [xs[i] for i in diff_pos], list(gos), create_graph=True,
                      allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)

"""`torch.autograd.functional`: Jacobians, Hessians and their products with vectors, built on
`fusetorch.autograd.grad` (reverse mode; fusetorch's backward graphs are themselves recorded
when `create_graph=True`, so second derivatives are gradients of gradients).

Return structures follow PyTorch: a function of one Tensor returning one Tensor gives one
Tensor; a tuple of inputs or outputs gives tuples (`jacobian(f, (x, y))[i][j]` is output i
w.r.t. input j, of shape `out_i.shape + in_j.shape`). `jvp` and `hvp` use the double-backward
trick as PyTorch does. Not as PyTorch: there is no vmap, so `vectorize=True` computes the same
rows one at a time, and `strategy="forward-mode"` (which PyTorch allows only with
`vectorize=True`) computes each column with the double-backward trick instead of dual numbers;
the values are the same.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Sequence

from ..tracer.autograd import enable_grad, grad, is_grad_enabled, set_grad_enabled
from ..tracer.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

Tensors = Tensor | tuple[Tensor, ...]


def _torch():
    return sys.modules["fusetorch"]


# ------------------------------------------------------------------------------- helpers

def _as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple[Tensor, ...]]:
    """(was it a tuple, the tensors as a tuple), with PyTorch's TypeError otherwise."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the {where} has type {type(el)}.")
    return is_tuple, items


def _unpack(res, to_unpack: bool | tuple[bool, bool]):
    """Undo `_as_tuple` on a result (for nested results, both levels)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
        return res
    return res if to_unpack else res[0]


def _prepare(inputs: tuple[Tensor, ...], create_graph: bool,
             need_graph: bool) -> tuple[Tensor, ...]:
    """New tensor objects for the inputs (so that the function's uses of them are told apart
    from the same tensors captured by closure): differentiable views when the caller wants
    gradients to flow back to inputs that require them, detached leaves otherwise."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(need_graph) for t in inputs)


def _finish(values, create_graph: bool):
    """Detach results unless the caller asked for a differentiable graph (nested tuples)."""
    if isinstance(values[0], Tensor):
        return values if create_graph else tuple(t.detach() for t in values)
    return tuple(_finish(v, create_graph) for v in values)


def _validate_v(v: tuple[Tensor, ...], other: tuple[Tensor, ...], other_is_tuple: bool):
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.size() != b.size():
            prefix = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.size()} but got "
                               f"{a.size()}.")


def _check_requires_grad(values: Sequence[Tensor | None], kind: str, strict: bool) -> None:
    """strict mode's errors, in PyTorch's words."""
    if not strict:
        return
    for i, t in enumerate(values):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if t.requires_grad:
            continue
        if kind == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs.")
        if kind == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).")
        if kind == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients. The outputs "
            "must be computed in a differentiable manner from the input when running in "
            "strict mode.")


def _grad(outputs: Sequence[Tensor | None], inputs: tuple[Tensor, ...], grad_outputs=None,
          create_graph: bool = False, retain_graph: bool | None = None) -> tuple:
    """`autograd.grad` over the outputs that require grad (None for an input nothing reaches;
    all None when no output requires grad)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for o, g in zip(outputs, grad_outputs):
        if o is not None and o.requires_grad:
            outs.append(o)
            gos.append(g)
    if not outs:
        return (None,) * len(inputs)
    return grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph,
                allow_unused=True)


_ZERO_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple[Tensor, ...], strict: bool, create_graph: bool,
                   stage: str) -> tuple[Tensor, ...]:
    """Zeros shaped like `refs` for the None gradients (an error in strict mode)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_MESSAGES[stage].format(i=i))
            g = _torch().zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _v_or_one(v, inputs: tuple[Tensor, ...], inputs_tuple: bool, fn_name: str,
              create_graph: bool, none_message: str):
    if v is None:
        if len(inputs) != 1 or inputs[0].nelement() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _validate_v(v, inputs, inputs_tuple)
    return v


_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is "
                 "a single Tensor with a single element.")


# ------------------------------------------------------------------------------- public

def vjp(func: Callable[..., Tensors], inputs: Tensors, v: Tensors | None = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensors, Tensors]:
    """`(func(*inputs), v^T J)`: the vector-Jacobian product, shaped like the inputs. `v` is
    shaped like the outputs; it may be left out when `func` returns one single-element
    Tensor. `create_graph=True` makes both results differentiable; `strict=True` raises where
    an input does not influence the outputs (else its product is zeros)."""
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                           "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _prepare(v, create_graph, need_graph=False)
            _validate_v(v, outputs, outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(res, create_graph), inputs_tuple))


def jvp(func: Callable[..., Tensors], inputs: Tensors, v: Tensors | None = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensors, Tensors]:
    """`(func(*inputs), J v)`: the Jacobian-vector product, shaped like the outputs. `v` is
    shaped like the inputs; it may be left out when the input is one single-element Tensor.
    Computed with the double-backward trick: the gradient w.r.t. a cotangent `u` of
    `(J^T u) . v`, as PyTorch's does."""
    torch = _torch()
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _v_or_one(v, inputs, inputs_tuple, "jvp", create_graph,
                      "The vector v can only be None if the input to the user-provided "
                      "function is a single Tensor with a single element.")
        outputs = func(*inputs)
        outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                           "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # J^T u is linear in u, so u's value does not matter (zeros: no inf or nan)
        us = tuple(torch.zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, us, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True) if create_graph else contextlib.nullcontext():
        res = _grad(grad_inputs, us, v, create_graph=create_graph)
        res = _fill_in_zeros(res, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(res, create_graph), outputs_tuple))


def _jacobian_rows(func, inputs, create_graph: bool, strict: bool):
    """The reverse-mode Jacobian: one `grad` call per output element."""
    torch = _torch()
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                           "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        jac = []
        for i, out in enumerate(outputs):
            rows: list[list[Tensor]] = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.nelement()):
                vj = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(vj, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {j}. This is not "
                                               "allowed in strict mode.")
                        g = torch.zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError("The jacobian of the user-provided function is "
                                           f"independent of input {i}. This is not allowed in "
                                           "strict mode when create_graph=True.")
                    rows[j].append(g)
            jac.append(tuple(
                _stack_rows(r, out.shape, inputs[j]) for j, r in enumerate(rows)))
    return _unpack(_finish(tuple(jac), create_graph), (outputs_tuple, inputs_tuple))


def _stack_rows(rows: list[Tensor], out_shape, inp: Tensor) -> Tensor:
    torch = _torch()
    if not rows:  # an empty output: no rows
        return torch.zeros(tuple(out_shape) + tuple(inp.shape), dtype=inp.dtype,
                           device=inp.device)
    return torch.stack(rows, dim=0).view(tuple(out_shape) + tuple(inp.shape))


def _jacobian_columns(func, inputs):
    """The Jacobian one input element at a time (`jvp` with each basis vector): what
    `strategy="forward-mode"` gives, computed without dual numbers."""
    torch = _torch()
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    cols: list[list[list[Tensor]]] | None = None
    outputs = outputs_tuple = None
    for j, inp in enumerate(inputs):
        for k in range(inp.nelement()):
            basis = tuple(torch.zeros_like(t) for t in inputs)
            basis[j].view(-1)[k] = 1
            out, col = jvp(func, inputs, basis)
            outputs_tuple = isinstance(out, tuple)
            outputs = out if outputs_tuple else (out,)
            col = col if outputs_tuple else (col,)
            if cols is None:
                cols = [[[] for _ in inputs] for _ in outputs]
            for i, c in enumerate(col):
                cols[i][j].append(c)
    if outputs is None:  # every input is empty: run the function once for the outputs
        with enable_grad():
            out = func(*_prepare(inputs, False, True))
        outputs_tuple, outputs = _as_tuple(out, "outputs of the user-provided function",
                                           "jacobian")
        cols = [[[] for _ in inputs] for _ in outputs]
    jac = []
    for i, o in enumerate(outputs):
        row = []
        for j, inp in enumerate(inputs):
            shape = tuple(o.shape) + tuple(inp.shape)
            if cols[i][j]:
                t = torch.stack(cols[i][j], dim=-1).reshape(shape)
            else:
                t = torch.zeros(shape, dtype=o.dtype, device=o.device)
            row.append(t)
        jac.append(tuple(row))
    return _unpack(tuple(jac), (outputs_tuple, inputs_tuple))


def jacobian(func: Callable[..., Tensors], inputs: Tensors, create_graph: bool = False,
             strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Tensors | tuple[tuple[Tensor, ...], ...]:
    """The Jacobian of `func` at `inputs`. One Tensor in and out gives a Tensor of shape
    `out.shape + in.shape`; a tuple of outputs (inputs) gives a tuple over outputs (inputs),
    so `jac[i][j]` is output i w.r.t. input j. `create_graph=True` makes it differentiable;
    `strict=True` raises where an output does not depend on an input (else zeros).
    `vectorize` changes nothing here (no vmap: same values, one row at a time);
    `strategy="forward-mode"` needs `vectorize=True` as in PyTorch and computes columns."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode". Hint: If your function has more outputs than '
                             'inputs, "forward-mode" tends to be more performant. Otherwise, '
                             'prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                               '`strategy="forward-mode"` are not supported together (yet). '
                               'Please either set `strict=False` or `strategy="reverse-mode"`.')
        _as_tuple(inputs, "inputs", "jacobian")
        if not vectorize:
            raise NotImplementedError(  # (PyTorch's words, missing space included)
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                "only implemented for `vectorize=True`.")
        return _jacobian_columns(func, inputs)
    if vectorize and strict:
        with enable_grad():  # PyTorch checks this after running the function
            _, ins = _as_tuple(inputs, "inputs", "jacobian")
            _, outs = _as_tuple(func(*_prepare(ins, create_graph, True)),
                                "outputs of the user-provided function", "jacobian")
            _check_requires_grad(outs, "outputs", strict)
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")
    return _jacobian_rows(func, inputs, create_graph, strict)


def hessian(func: Callable[..., Tensor], inputs: Tensors, create_graph: bool = False,
            strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"
            ) -> Tensor | tuple[tuple[Tensor, ...], ...]:
    """The Hessian of a scalar `func` (one single-element Tensor out) at `inputs`: a Tensor of
    shape `in.shape + in.shape` for one input, else `hess[i][j]` of shape `in_i.shape +
    in_j.shape`. The Jacobian of the Jacobian, as PyTorch computes it."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*inp):
        out = func(*inp)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack(res, (inputs_tuple, inputs_tuple))


def _scalar_output(func, inputs, fn_name: str, strict: bool) -> tuple[bool, tuple[Tensor, ...]]:
    outputs = func(*inputs)
    outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                       fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    return outputs_tuple, outputs


def vhp(func: Callable[..., Tensor], inputs: Tensors, v: Tensors | None = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensor, Tensors]:
    """`(func(*inputs), v^T H)` for a scalar `func`: shaped like the inputs (the gradient of
    `grad(func) . v`)."""
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _v_or_one(v, inputs, inputs_tuple, "vhp", create_graph, _V_NONE_INPUT)
        outputs_tuple, outputs = _scalar_output(func, inputs, "vhp", strict)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(res, create_graph), inputs_tuple))


def hvp(func: Callable[..., Tensor], inputs: Tensors, v: Tensors | None = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensor, Tensors]:
    """`(func(*inputs), H v)` for a scalar `func`: shaped like the inputs, with the
    double-backward trick (equal to `vhp` when the Hessian is symmetric)."""
    torch = _torch()
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _v_or_one(v, inputs, inputs_tuple, "hvp", create_graph, _V_NONE_INPUT)
        outputs_tuple, outputs = _scalar_output(func, inputs, "hvp", strict)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(torch.zeros_like(t, requires_grad=True) for t in inputs)
        double_back = _grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(res, create_graph), inputs_tuple))

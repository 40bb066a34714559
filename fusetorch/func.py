"""`torch.func`: function transforms over fusetorch's autograd. `grad`, `grad_and_value`,
`vjp`, `jvp`, `jacrev`/`jacfwd`, `hessian` and `functional_call` are real; `vmap` maps the
function over the batch dim with a Python loop (one call per sample, results stacked), which
is PyTorch's meaning at a loop's cost. Others (`functionalize`, `linearize`, ...) raise
OutOfScopeError."""
from __future__ import annotations

import contextlib
from typing import Any, Callable

from . import _out_of_scope
from .autograd import functional as _AF
from .tracer import autograd as A
from .tracer import functional as F
from .tracer.tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "vjp", "vmap"]


def _prepare(x: Tensor) -> tuple:
    """x as an input to differentiate: itself when it already requires grad (a transform
    nested in another), else a detached leaf that does."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"grad(f)(*args): Expected args[argnums] to be Tensors, got "
                           f"{type(x).__name__}")
    if x.requires_grad:
        return x, True
    return x.detach().requires_grad_(True), False


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """`f -> (x -> (df/dx, f(x)))` for f returning a one-element tensor (and aux with
    has_aux)."""
    def wrapper(*args, **kwargs):
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        args = list(args)
        nested = False
        with A.enable_grad():
            for k in nums:
                args[k], outer = _prepare(args[k])
                nested = nested or outer
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should "
                                       "be a tuple: (output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor) or out.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   "scalar Tensor, got tensor with "
                                   f"{getattr(out, 'ndim', 0)} dims. Maybe you wanted to use "
                                   "the vjp or jacrev APIs instead?")
            gs = A.grad(out, [args[k] for k in nums], create_graph=nested, allow_unused=True)
        gs = tuple(F.zeros_like(args[k]) if g is None else g for k, g in zip(nums, gs))
        g = gs[0] if isinstance(argnums, int) else gs
        value = out if nested else out.detach()
        return (g, (value, aux)) if has_aux else (g, value)
    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """`f -> (x -> df/dx)`."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False):
    """(func(*primals), vjp_fn): vjp_fn(cotangent) gives the cotangent's pullback to each
    primal."""
    with A.enable_grad():
        ins = [_prepare(p)[0] for p in primals]
        out = func(*ins)
        aux = None
        if has_aux:
            out, aux = out

    def vjp_fn(*cotangents):
        outs = out if isinstance(out, (tuple, list)) else (out,)
        cots = cotangents if len(cotangents) == len(outs) else cotangents[0]
        gs = A.grad(list(outs), ins, list(cots) if isinstance(cots, (tuple, list)) else [cots],
                    retain_graph=True, allow_unused=True)
        return tuple(F.zeros_like(i) if g is None else g for i, g in zip(ins, gs))
    value = tuple(o.detach() for o in out) if isinstance(out, (tuple, list)) else out.detach()
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jvp(func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False,
        has_aux: bool = False):
    """(func(*primals), the directional derivative along `tangents`)."""
    if has_aux:
        raise NotImplementedError("fusetorch: torch.func.jvp(has_aux=True) is not supported")
    return _AF.jvp(func, tuple(primals), tuple(tangents))


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size=None) -> Callable:
    """`f -> (x -> the Jacobian of f at x)` (with respect to the args in `argnums`)."""
    if has_aux:
        raise NotImplementedError("fusetorch: torch.func.jacrev(has_aux=True) is not supported")

    def wrapper(*args):
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

        def of(*picked):
            full = list(args)
            for k, v in zip(nums, picked):
                full[k] = v
            return func(*full)
        jac = _AF.jacobian(of, tuple(args[k] for k in nums))
        return jac[0] if isinstance(argnums, int) else tuple(jac)
    return wrapper


jacfwd = jacrev  # (the same Jacobian; computed in reverse mode)


def hessian(func: Callable, argnums=0) -> Callable:
    def wrapper(*args):
        if not isinstance(argnums, int):
            raise NotImplementedError("fusetorch: torch.func.hessian over several argnums")

        def of(x):
            full = list(args)
            full[argnums] = x
            return func(*full)
        return _AF.hessian(of, args[argnums])
    return wrapper


def _moved(x, dim, size: int):
    return [x.select(dim, i) for i in range(size)] if dim is not None else [x] * size


def _sample_of(x, dim: int):
    """Zeros of one sample's shape: `x` without its (empty) mapped dim."""
    shape = tuple(x.shape)
    return x.new_zeros(shape[:dim % x.ndim] + shape[dim % x.ndim + 1:])


def _empty_batch(probe, out_dims):
    if isinstance(probe, tuple):
        ods = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(probe)
        return tuple(_empty_batch(p, od) for p, od in zip(probe, ods))
    return F.stack([probe], out_dims).narrow(out_dims, 0, 0)


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size=None) -> Callable:
    """func mapped over dim `in_dims` of its tensor arguments (None: not mapped), results
    stacked along `out_dims`."""
    def wrapper(*args):
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap(func, in_dims={in_dims})(<inputs>): in_dims is not "
                             f"compatible with the structure of `inputs`. in_dims has "
                             f"{len(dims)} elements, but inputs has {len(args)} elements.")
        for a, d in zip(args, dims):
            if d is not None and isinstance(a, Tensor) and not -a.ndim <= d < a.ndim:
                raise ValueError(f"vmap({getattr(func, '__name__', 'func')}, in_dims={in_dims}, "
                                 f"...)(<inputs>): Got in_dim={d} for some input, but that input "
                                 f"is a Tensor of dimensionality {a.ndim} so expected in_dim to "
                                 f"satisfy -{a.ndim} <= in_dim < {a.ndim}.")
        sizes = {a.shape[d] for a, d in zip(args, dims) if d is not None and
                 isinstance(a, Tensor)}
        if not sizes:
            raise ValueError("vmap(func, in_dims)(<inputs>): at least one input must be a "
                             "Tensor mapped over a dim")
        if len(sizes) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sorted(sizes)} for the mapped dimension")
        (n,) = sizes
        if n == 0:  # no samples: one call on a zero sample finds the results' shapes
            probe = func(*[_sample_of(a, d)
                           if isinstance(a, Tensor) and d is not None else a
                           for a, d in zip(args, dims)])
            return _empty_batch(probe, out_dims)
        per = [_moved(a, d, n) if isinstance(a, Tensor) else [a] * n
               for a, d in zip(args, dims)]
        results = [func(*[p[i] for p in per]) for i in range(n)]
        if isinstance(results[0], tuple):
            ods = out_dims if isinstance(out_dims, (tuple, list)) else \
                (out_dims,) * len(results[0])
            return tuple(F.stack([r[k] for r in results], od)
                         for k, od in enumerate(ods))
        return F.stack(results, out_dims)
    return wrapper


@contextlib.contextmanager
def _swapped(module, tensors: dict):
    saved = []
    try:
        for name, t in tensors.items():
            owner = module
            *path, leaf = name.split(".")
            for p in path:
                owner = getattr(owner, p)
            table = owner._parameters if leaf in owner._parameters else \
                owner._buffers if leaf in owner._buffers else None
            if table is None:
                raise ValueError(f"functional_call: '{name}' is not a parameter or buffer of "
                                 f"the module")
            saved.append((table, leaf, table[leaf]))
            table[leaf] = t
        yield
    finally:
        for table, leaf, old in reversed(saved):
            table[leaf] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """module(*args, **kwargs) with some of its parameters and buffers replaced by the given
    tensors for the call (differentiable with respect to them)."""
    dicts = parameter_and_buffer_dicts
    merged = {}
    for d in (dicts if isinstance(dicts, (tuple, list)) else (dicts,)):
        merged.update(d)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, merged):
        return module(*args, **(kwargs or {}))


def __getattr__(name: str):
    if name in ("functionalize", "linearize", "stack_module_state",
                "replace_all_batch_norm_modules_", "debug_unwrap"):
        raise _out_of_scope.OutOfScopeError(
            f"fusetorch does not implement torch.func.{name}: PyTorch's other compilers and "
            "graph capture (FX, export, dynamo, inductor; fusetorch.compile is fusetorch's own) "
            "are out of scope (see README)")
    raise AttributeError(f"module 'fusetorch.func' has no attribute '{name}'")

"""`torch.func`: function transforms over fusetorch's autograd. `grad`, `grad_and_value`,
`vjp`, `jvp`, `jacrev`/`jacfwd`, `hessian`, `functional_call` and `stack_module_state` are
real, over pytrees of tensors (utils/_pytree.py) as PyTorch's; `vmap` maps the function over
the batch dim with a Python loop (one call per sample, results stacked), which is PyTorch's
meaning at a loop's cost. Others (`functionalize`, `linearize`, ...) raise
OutOfScopeError."""
from __future__ import annotations

import contextlib
from typing import Any, Callable

from . import _out_of_scope
from .autograd import functional as _AF
from .tracer import autograd as A
from .tracer import functional as F
from .tracer.creation import eye
from .tracer.tensor import Tensor
from .utils import _pytree as pytree

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "stack_module_state", "vjp", "vmap"]


def _prepare(x: Tensor) -> tuple:
    """x as an input to differentiate: itself when it already requires grad (a transform
    nested in another), else a detached leaf that does."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if x.requires_grad:
        return x, True
    return x.detach().requires_grad_(True), False


def _argnums(argnums, n_args: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for k in nums:
        if not -n_args <= k < n_args:
            raise RuntimeError(f"Got argnum={k}, but only {n_args} positional inputs")
    return tuple(k % n_args for k in nums)


class _Inputs:
    """The differentiated arguments of one transform call: each argument in `nums` is a
    pytree whose tensor leaves become inputs to differentiate (`flat`); `regroup` gives a
    flat list of per-leaf results back the arguments' structure."""

    def __init__(self, args: list, nums: tuple[int, ...]):
        self.nums, self.specs, self.flat, self.nested = nums, [], [], False
        for k in nums:
            leaves, spec = pytree.tree_flatten(args[k])
            prepared = []
            for leaf in leaves:
                x, outer = _prepare(leaf)
                prepared.append(x)
                self.nested = self.nested or outer
            args[k] = pytree.tree_unflatten(prepared, spec)
            self.specs.append((spec, len(prepared)))
            self.flat.extend(prepared)

    def regroup(self, per_leaf: list, single: bool):
        out, at = [], 0
        for spec, n in self.specs:
            out.append(pytree.tree_unflatten(per_leaf[at:at + n], spec))
            at += n
        return out[0] if single else tuple(out)


def _split_aux(out, has_aux: bool, name: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}(f)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return out


def _grads(outs: list, inputs: list, cotangents, create_graph: bool) -> list:
    """Gradients of `outs` with respect to each input, zeros where one is unused."""
    gs = A.grad(outs, inputs, cotangents, retain_graph=True, create_graph=create_graph,
                allow_unused=True)
    return [F.zeros_like(i) if g is None else g for i, g in zip(inputs, gs)]


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """`f -> (x -> (df/dx, f(x)))` for f returning a one-element tensor (and aux with
    has_aux); an argument may be a pytree (a dict of parameters), its gradient the same
    tree."""
    def wrapper(*args, **kwargs):
        args = list(args)
        with A.enable_grad():
            ins = _Inputs(args, _argnums(argnums, len(args)))
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, Tensor) or out.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   "scalar Tensor, got tensor with "
                                   f"{getattr(out, 'ndim', 0)} dims. Maybe you wanted to use "
                                   "the vjp or jacrev APIs instead?")
            gs = _grads([out], ins.flat, None, ins.nested)
        g = ins.regroup(gs, isinstance(argnums, int))
        value = out if ins.nested else out.detach()
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
    """(func(*primals), vjp_fn): vjp_fn(cotangents) gives the cotangents' pullback to each
    primal (pytrees of tensors, as the primals and outputs are)."""
    args = list(primals)
    with A.enable_grad():
        ins = _Inputs(args, tuple(range(len(args))))
        out, aux = _split_aux(func(*args), has_aux, "vjp")
    outs, out_spec = pytree.tree_flatten(out)

    def vjp_fn(cotangents):
        cots, spec = pytree.tree_flatten(cotangents)
        if spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{spec}, primal output: {out_spec}")
        with A.enable_grad():
            gs = _grads(outs, ins.flat, cots, ins.nested)
        return ins.regroup(gs, False)
    value = out if ins.nested else pytree.tree_map(lambda t: t.detach(), out)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jvp(func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False,
        has_aux: bool = False):
    """(func(*primals), the directional derivative along `tangents`): primals and tangents
    are tuples of pytrees of the same structure, the derivative the structure of the output;
    has_aux: func returns (output, aux) and jvp (output, derivative, aux)."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    flat_p, p_spec = pytree.tree_flatten(primals)
    flat_t, t_spec = pytree.tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure. For example, if primals is a tuple of "
                           "3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    for p, t in zip(flat_p, flat_t):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than "
                               "that of the original Tensor, this is not supported. Tensor is "
                               f"of size {list(p.shape)} while the given forward gradient is "
                               f"of size {list(t.shape)}.")
    seen: dict = {}

    def flat_func(*leaves):
        out, aux = _split_aux(func(*pytree.tree_unflatten(list(leaves), p_spec)), has_aux,
                              "jvp")
        outs, seen["spec"] = pytree.tree_flatten(out)
        seen["aux"] = aux
        return tuple(outs)
    out, tangent_out = _AF.jvp(flat_func, tuple(flat_p), tuple(flat_t), strict=strict)
    out = pytree.tree_unflatten(list(out), seen["spec"])
    tangent_out = pytree.tree_unflatten(list(tangent_out), seen["spec"])
    if has_aux:
        aux = pytree.tree_map(lambda a: a.detach() if isinstance(a, Tensor) else a, seen["aux"])
        return out, tangent_out, aux
    return out, tangent_out


def _jacobian_rows(out: Tensor, ins: _Inputs) -> list:
    """d out / d input for every flat input, shaped out.shape + input.shape: one backward
    per element of `out` (reverse mode)."""
    # (a unit cotangent per row over one output: the same backward graph each time, so its
    # plan is built once, where out.reshape(-1)[i] made a new graph per row)
    n = out.numel()
    units = eye(n, dtype=out.dtype, device=out.device).reshape((n,) + tuple(out.shape))
    with A.same_graph():
        rows = [_grads([out], ins.flat, [units[i]], ins.nested) for i in range(n)]
    jacs = []
    for j, x in enumerate(ins.flat):
        if rows:
            jac = F.stack([r[j] for r in rows])
        else:
            jac = x.new_zeros((0,) + tuple(x.shape))
        jacs.append(jac.reshape(tuple(out.shape) + tuple(x.shape)))
    return jacs


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size=None,
           _preallocate_and_copy: bool = False) -> Callable:
    """`f -> (x -> the Jacobian of f at x)` with respect to the args in `argnums`: for each
    output leaf, the arguments' structure holding d output / d leaf."""
    def wrapper(*args, **kwargs):
        args = list(args)
        with A.enable_grad():
            ins = _Inputs(args, _argnums(argnums, len(args)))
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "jacrev")
            outs, out_spec = pytree.tree_flatten(out)
            jac = pytree.tree_unflatten(
                [ins.regroup(_jacobian_rows(o, ins), isinstance(argnums, int)) for o in outs],
                out_spec)
        if not ins.nested:
            jac = pytree.tree_map(lambda t: t.detach(), jac)
        return (jac, aux) if has_aux else jac
    return wrapper


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The same Jacobian as jacrev (computed in reverse mode)."""
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func: Callable, argnums=0) -> Callable:
    """`f -> (x -> its matrix of second derivatives)`: jacfwd(jacrev(f)), as PyTorch."""
    return jacfwd(jacrev(func, argnums), argnums)


def _in_dims_of(in_dims, args: tuple, name: str) -> list:
    """One mapped dim (or None) per leaf of `args`: `in_dims` is a prefix of their tree."""
    if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
                         "to be int or a (potentially nested) tuple matching the structure of "
                         f"inputs, got: {type(in_dims)}.")
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    if len(dims) != len(args):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has "
                         f"{len(dims)} elements, but inputs has {len(args)} elements.")
    flat = pytree._broadcast_to_and_flatten(dims, pytree.tree_structure(args))
    if flat is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"{pytree.tree_structure(dims)} but inputs has structure "
                         f"{pytree.tree_structure(args)}.")
    return flat


def _batch_size(leaves: list, dims: list, in_dims, name: str) -> int:
    sizes = set()
    for a, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(a, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for an input but the input is of type {type(a)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the "
                             "respective in_dim")
        if not -a.ndim <= d < a.ndim:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for some input, but that input is a Tensor of dimensionality "
                             f"{a.ndim} so expected in_dim to satisfy -{a.ndim} <= in_dim < "
                             f"{a.ndim}.")
        sizes.add(a.shape[d])
    if not sizes:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input "
                         "must be a Tensor mapped over a dim")
    if len(sizes) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sorted(sizes)} for the mapped dimension")
    return sizes.pop()


def _sample_of(x, dim: int):
    """Zeros of one sample's shape: `x` without its (empty) mapped dim."""
    shape = tuple(x.shape)
    return x.new_zeros(shape[:dim % x.ndim] + shape[dim % x.ndim + 1:])


def _stacked(results: list, out_dims, name: str, empty: bool):
    """The per-sample results (pytrees of tensors) as one tree of tensors stacked along
    `out_dims` (a prefix of the results' tree; None: the result is not mapped)."""
    leaves0, spec = pytree.tree_flatten(results[0])
    dims = pytree._broadcast_to_and_flatten(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{pytree.tree_structure(out_dims)} but outputs has structure {spec}.")
    per_leaf = list(zip(*[pytree.tree_flatten(r)[0] for r in results]))
    out = []
    for column, d in zip(per_leaf, dims):
        if d is None:
            out.append(column[0])
            continue
        if not isinstance(column[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(column[0])}. Did you mean to set out_dims= to None for "
                             "output?")
        stacked = F.stack(list(column), d)
        out.append(stacked.narrow(d, 0, 0) if empty else stacked)
    return pytree.tree_unflatten(out, spec)


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size=None) -> Callable:
    """func mapped over dim `in_dims` of its tensor arguments (None: not mapped; a tuple: a
    prefix of the arguments' pytrees), results stacked along `out_dims`: one call per sample,
    PyTorch's meaning at a loop's cost. Keyword arguments are passed unmapped."""
    name = getattr(func, "__name__", "func")

    def wrapper(*args, **kwargs):
        dims = _in_dims_of(in_dims, args, name)
        leaves, spec = pytree.tree_flatten(args)
        n = _batch_size(leaves, dims, in_dims, name)
        if n == 0:  # no samples: one call on a zero sample finds the results' shapes
            sample = [_sample_of(a, d) if d is not None else a for a, d in zip(leaves, dims)]
            probe = func(*pytree.tree_unflatten(sample, spec), **kwargs)
            return _stacked([probe], out_dims, name, empty=True)
        results = []
        for i in range(n):
            sample = [a.select(d, i) if d is not None else a for a, d in zip(leaves, dims)]
            results.append(func(*pytree.tree_unflatten(sample, spec), **kwargs))
        return _stacked(results, out_dims, name, empty=False)
    return wrapper


def _stacked_leaf(tensors: tuple, name: str) -> Tensor:
    needs = [t.requires_grad for t in tensors]
    if any(needs) and not all(needs):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = F.stack(list(tensors))
    return result.detach().requires_grad_() if all(needs) else result


def stack_module_state(models) -> tuple[dict, dict]:
    """(params, buffers): each name's tensors of the models stacked along a new first dim,
    for vmap over functional_call (model ensembling); stacked parameters are new leaves."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


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
    if name in ("functionalize", "linearize",
                "replace_all_batch_norm_modules_", "debug_unwrap"):
        raise _out_of_scope.OutOfScopeError(
            f"fusetorch does not implement torch.func.{name}: PyTorch's other compilers and "
            "graph capture (FX, export, dynamo, inductor; fusetorch.compile is fusetorch's own) "
            "are out of scope (see README)")
    raise AttributeError(f"module 'fusetorch.func' has no attribute '{name}'")

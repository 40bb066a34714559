"""Fused eager optimizer steps (issue 13): one C kernel call updates every parameter of a
parameter group, and its state, in place, instead of a dozen numpy ops per parameter.

An optimizer's `step()` asks `step_group(opt, group, kind)` first, per group; when that returns
False the group runs the optimizer's Python loop, which stays the reference. The kernel is
`templates/c/optim.c.j2` rendered for the group's structure (which options are on: momentum,
Nesterov, weight decay, maximize, AMSGrad, ...) and the parameters' dtype, built through
`runtime.cbuild` (disk cache) once per structure; hyperparameters (lr from a scheduler, the
momentum, betas, eps) and step-dependent factors (Adam's bias corrections, one per parameter)
are arguments of every call, computed in Python exactly as the loop computes them. Each
element then goes through the loop's own float operations in the loop's order: results are
the loop's bit for bit.

A group runs fused from the second step with the same parameters (those with a gradient) and
the same structure: the first one is the loop's, which also creates the state. Everything else
stays with the loop: parameters, gradients or state that are not C-contiguous float32/float64
CPU arrays of the parameter's shape, memory shared between them, groups with
`foreach=False`, a traced step (`fusetorch.compile` records the loop's ops), and everything
under `FUSETORCH_EAGER_COMPILE=0` or when no C compiler works (one warning).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from .._policy import POLICY
from ..codegen import environment
from ..runtime.device import C_ARRAY_TYPES
from ..tracer import dispatch as D
from .optimizer import _to_scalar

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # the dtypes the kernels are built for
_FUNCS: dict = {}  # (kind, flags, ctype) -> (ffi, kernel function)
_compiler = True  # False once a build found no working C compiler


class _Kind(NamedTuple):
    """What the kernel of one optimizer family needs from a group. `flags(group)`: the
    structure, as (name, bool) pairs the template branches on (None: not fusable, e.g. tensor
    betas); `state(flags)`: the per-parameter state tensors it updates, in kernel order;
    `scalars(group, flags)`: the group's scalar arguments, named by `scalar_names(flags)`;
    `per_step(group, step)`: per-parameter arguments from the incremented step count, named
    by `per_step_names` (None when the family keeps no step count); or, with `stateful`,
    `per_step(group, step, state)`, called for each parameter (never shared between equal
    steps) and free to update its scalar state as the loop does (NAdam's `mu_product`), which
    `ready(state)` checks before a fused step."""
    module: str
    title: str
    flags: Callable
    state: Callable
    scalar_names: Callable
    scalars: Callable
    per_step_names: tuple = ()
    per_step: Callable | None = None
    stateful: bool = False
    ready: Callable | None = None


def _sgd_flags(group: dict):
    momentum = group["momentum"] != 0
    return (("maximize", bool(group["maximize"])),
            ("weight_decay", group["weight_decay"] != 0), ("momentum", momentum),
            ("nesterov", momentum and bool(group["nesterov"])))


def _sgd_scalars(group: dict, flags: dict) -> tuple:
    return (-_to_scalar(group["lr"]), group["weight_decay"], group["momentum"],
            1 - group["dampening"])


def _betas_flags(group: dict, decoupled: bool = False, amsgrad: bool = False):
    """The structure of the Adam family (Adam, AdamW, Adamax, RAdam, NAdam): None when betas,
    eps or weight decay are not numbers (tensors: the loop's ops); which weight decay; and
    lerp's branch for the first moment."""
    beta1, beta2 = group["betas"]
    if not all(isinstance(b, (int, float)) for b in (beta1, beta2, group["eps"],
                                                     group["weight_decay"])):
        return None
    decay = group["weight_decay"] != 0
    flags = [("maximize", bool(group["maximize"])), ("weight_decay", decay)]
    if decoupled:
        flags.append(("decoupled", decay and bool(group["decoupled_weight_decay"])))
    if amsgrad:
        flags.append(("amsgrad", bool(group["amsgrad"])))
    # lerp(m, g, w) computes m + (g - m) * w for |w| < 0.5, else g - (g - m) * (1 - w)
    flags.append(("lerp_from_end", not abs(1 - beta1) < 0.5))
    return tuple(flags)


def _adam_flags(group: dict):
    return _betas_flags(group, decoupled=True, amsgrad=True)


def _adam_scalars(group: dict, flags: dict) -> tuple:
    lr = _to_scalar(group["lr"])
    beta1, beta2 = group["betas"]
    wd = group["weight_decay"]
    weight = 1 - beta1
    return (1 - lr * wd if flags["decoupled"] else wd,
            1 - weight if flags["lerp_from_end"] else weight, beta2, 1 - beta2, group["eps"])


def _adam_per_step(group: dict, step: float) -> tuple:
    lr = _to_scalar(group["lr"])
    beta1, beta2 = group["betas"]
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    return (-step_size, bias_correction2_sqrt)


def _rmsprop_flags(group: dict):
    return (("maximize", bool(group["maximize"])),
            ("weight_decay", group["weight_decay"] != 0),
            ("centered", bool(group["centered"])), ("momentum", group["momentum"] > 0),
            ("lerp_from_end", bool(group["centered"]) and not abs(1 - group["alpha"]) < 0.5))


def _rmsprop_scalars(group: dict, flags: dict) -> tuple:
    alpha = group["alpha"]
    weight = 1 - alpha
    return (-_to_scalar(group["lr"]), group["weight_decay"], alpha, weight,
            1 - weight if flags["lerp_from_end"] else weight, group["eps"], group["momentum"])


def _adagrad_flags(group: dict):
    return (("maximize", bool(group["maximize"])),
            ("weight_decay", group["weight_decay"] != 0))


def _adagrad_per_step(group: dict, step: float) -> tuple:
    return (-(_to_scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])),)


def _adadelta_flags(group: dict):
    return (("maximize", bool(group["maximize"])),
            ("weight_decay", group["weight_decay"] != 0))


def _adadelta_scalars(group: dict, flags: dict) -> tuple:
    rho = group["rho"]
    return (-_to_scalar(group["lr"]), group["weight_decay"], rho, 1 - rho, group["eps"])


def _adamax_scalars(group: dict, flags: dict) -> tuple:
    beta1, beta2 = group["betas"]
    weight = 1 - beta1
    return (group["weight_decay"], 1 - weight if flags["lerp_from_end"] else weight, beta2,
            group["eps"])


def _adamax_per_step(group: dict, step: float) -> tuple:
    return _adam_per_step(group, step)[:1]  # (Adam's step size: Adamax's clr)


def _radam_scalars(group: dict, flags: dict) -> tuple:
    return _adam_scalars(group, flags) + (_to_scalar(group["lr"]),)


def _radam_per_step(group: dict, step: float) -> tuple:
    """The loop's Python floats for this step: bias corrections, and whether (1.0) the
    variance is rectified, by how much."""
    beta1, beta2 = group["betas"]
    rho_inf = 2 / (1 - beta2) - 1
    pow1, pow2 = beta1 ** step, beta2 ** step
    bias_correction1, bias_correction2 = 1 - pow1, 1 - pow2
    rho_t = rho_inf - 2 * step * pow2 / bias_correction2
    if not rho_t > 5.0:
        return (bias_correction1, 0.0, 0.0, 0.0)
    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
    return (bias_correction1, bias_correction2 ** 0.5, rect, 1.0)


def _nadam_flags(group: dict):
    if not isinstance(group["momentum_decay"], (int, float)):
        return None
    return _betas_flags(group, decoupled=True)


def _nadam_per_step(group: dict, step: float, state: dict) -> tuple:
    """The loop's Python floats for this step, after it multiplies `mu_product` by this step's
    momentum in the tensor's own dtype."""
    lr = _to_scalar(group["lr"])
    beta1, beta2 = group["betas"]
    md = group["momentum_decay"]
    bias_correction2 = 1 - beta2 ** step
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
    product = state["mu_product"]
    a = product._data
    np.multiply(a, mu, out=a)  # the loop's `mu_product.mul_(mu)`
    product._bump_version()
    prod = float(a)
    return (bias_correction2, -lr * (1.0 - mu) / (1.0 - prod),
            -lr * mu_next / (1.0 - prod * mu_next))


def _nadam_ready(state: dict) -> bool:
    """Whether `mu_product` is what the loop would update as `_nadam_per_step` does: a
    writeable floating 0-d CPU tensor (else the loop runs, and raises where it raises)."""
    a = getattr(state.get("mu_product"), "_data", None)
    return a.__class__ is np.ndarray and a.ndim == 0 and a.dtype.kind == "f" and \
        a.flags.writeable


def _rprop_flags(group: dict):
    if not all(isinstance(x, (int, float)) for x in tuple(group["etas"]) +
               tuple(group["step_sizes"])):
        return None
    return (("maximize", bool(group["maximize"])),)


def _rprop_scalars(group: dict, flags: dict) -> tuple:
    (etaminus, etaplus), (lo, hi) = group["etas"], group["step_sizes"]
    return (etaminus, etaplus, lo, hi)


def _count_steps(group: dict, step: float) -> tuple:
    """For a family that keeps a step count (PyTorch's state) and reads nothing from it."""
    return ()


KINDS = {
    "sgd": _Kind("sgd", "SGD", _sgd_flags,
                 lambda f: ("momentum_buffer",) if f["momentum"] else (),
                 lambda f: ("neg_lr", "weight_decay", "momentum", "one_minus_dampening"),
                 _sgd_scalars),
    "adam": _Kind("adam", "Adam", _adam_flags,
                  lambda f: ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if f["amsgrad"]
                                                         else ()),
                  lambda f: ("decay_factor" if f["decoupled"] else "weight_decay",
                             "lerp_weight", "beta2", "one_minus_beta2", "eps"),
                  _adam_scalars, ("neg_step_size", "bias_correction2_sqrt"), _adam_per_step),
    "rmsprop": _Kind("rmsprop", "RMSprop", _rmsprop_flags,
                     lambda f: ("square_avg",) + (("momentum_buffer",) if f["momentum"]
                                                  else ()) + (("grad_avg",) if f["centered"]
                                                              else ()),
                     lambda f: ("neg_lr", "weight_decay", "alpha", "one_minus_alpha",
                                "lerp_weight", "eps", "momentum"),
                     _rmsprop_scalars, (), _count_steps),
    "adagrad": _Kind("adagrad", "Adagrad", _adagrad_flags, lambda f: ("sum",),
                     lambda f: ("weight_decay", "eps"),
                     lambda group, flags: (group["weight_decay"], group["eps"]),
                     ("neg_clr",), _adagrad_per_step),
    "adamax": _Kind("adamax", "Adamax", _betas_flags, lambda f: ("exp_avg", "exp_inf"),
                    lambda f: ("weight_decay", "lerp_weight", "beta2", "eps"),
                    _adamax_scalars, ("neg_clr",), _adamax_per_step),
    "radam": _Kind("radam", "RAdam", lambda group: _betas_flags(group, decoupled=True),
                   lambda f: ("exp_avg", "exp_avg_sq"),
                   lambda f: ("decay_factor" if f["decoupled"] else "weight_decay",
                              "lerp_weight", "beta2", "one_minus_beta2", "eps", "lr"),
                   _radam_scalars,
                   ("bias_correction1", "bias_correction2_sqrt", "rect", "rectified"),
                   _radam_per_step),
    "nadam": _Kind("nadam", "NAdam", _nadam_flags, lambda f: ("exp_avg", "exp_avg_sq"),
                   lambda f: ("decay_factor" if f["decoupled"] else "weight_decay",
                              "lerp_weight", "beta2", "one_minus_beta2", "eps"),
                   _adam_scalars, ("bias_correction2", "grad_coef", "avg_coef"),
                   _nadam_per_step, stateful=True, ready=_nadam_ready),
    "rprop": _Kind("rprop", "Rprop", _rprop_flags, lambda f: ("prev", "step_size"),
                   lambda f: ("etaminus", "etaplus", "step_size_min", "step_size_max"),
                   _rprop_scalars, (), _count_steps),
    "adadelta": _Kind("adadelta", "Adadelta", _adadelta_flags,
                      lambda f: ("square_avg", "acc_delta"),
                      lambda f: ("neg_lr", "weight_decay", "rho", "one_minus_rho", "eps"),
                      _adadelta_scalars, (), _count_steps),
}


class _Batch:
    """The parameters of one dtype in a group, with what the kernel call needs that stays
    the same from step to step: the arrays it was prepared for, their pointer tables."""

    __slots__ = ("params", "arrays", "states", "steps", "ctype", "func", "ffi", "tables",
                 "numel")

    def __init__(self, params, arrays, states, steps, ctype, func, ffi):
        self.params, self.arrays, self.states, self.steps = params, arrays, states, steps
        self.ctype, self.func, self.ffi = ctype, func, ffi
        fb = ffi.from_buffer
        ptr = ctype + " *[]"
        # one table per array role (param, then each state entry): kernel arguments
        self.tables = [ffi.new(ptr, [fb(ctype + "[]", a) for a in column])
                       for column in zip(*arrays)]
        self.numel = ffi.new("int64_t[]", [a[0].size for a in arrays])

    def current(self, opt, keys: tuple) -> bool:
        """Whether the params and their state still hold the arrays the tables point to."""
        state = opt.state
        for p, arrays, step in zip(self.params, self.arrays, self.steps):
            if p._data is not arrays[0]:
                return False
            st = state.get(p)
            if st is None:
                if keys or step is not None:
                    return False
                continue  # (plain SGD keeps no state)
            if step is not None and st.get("step") is not step:
                return False
            for k, a in zip(keys, arrays[1:]):
                t = st.get(k)
                if t is None or t._data is not a:
                    return False
        return True


class _Plan:
    """One group's fused step: the structure it was seen with, and its batches once built
    (None: not yet; False: this group cannot run fused with these tensors)."""

    __slots__ = ("group", "key", "batches")

    def __init__(self, group: dict, key: tuple):
        self.group, self.key, self.batches = group, key, None


def step_group(opt, group: dict, kind: str) -> bool:
    """Update `group` with one fused kernel call per dtype; False when the caller's Python
    loop must do it (see the module docstring)."""
    if not (POLICY.fused_optimizers and _compiler) or D.RECORDER is not None or group.get("foreach") is False:
        return False
    spec = KINDS[kind]
    flags = spec.flags(group)
    if flags is None:
        return False
    params, grads = [], []
    for p in group["params"]:
        g = p.grad
        if g is not None:
            params.append(p)
            grads.append(g)
    if not params:
        return False
    plans = opt.__dict__.setdefault("_fused_plans", {})
    key = (kind, flags, tuple(map(id, params)))
    plan = plans.get(id(group))
    if plan is None or plan.group is not group or plan.key != key:
        plans[id(group)] = _Plan(group, key)  # first sight: the loop's step
        return False
    flags = dict(flags)
    scalars = spec.scalars(group, flags)
    if not all(isinstance(x, (int, float)) for x in scalars):
        return False  # (a hyperparameter set to a tensor or another type: the loop's ops)
    keys = spec.state(flags)
    if plan.batches is None or (plan.batches and not all(
            b.current(opt, keys) for b in plan.batches)):
        plan.batches = _prepare(opt, spec, kind, flags, params, keys)
        if plan.batches is None:
            return False  # state missing (a cleared optimizer): the loop creates it
    if plan.batches is False:
        return False
    grad_arrays = _grad_arrays(plan.batches, params, grads)
    if grad_arrays is None:
        return False
    if spec.ready is not None and not all(spec.ready(opt.state[p]) for p in params):
        return False
    for batch, garrays in zip(plan.batches, grad_arrays):
        _run(batch, spec, group, garrays, scalars, opt.state)
    return True


def _run(batch: _Batch, spec: _Kind, group: dict, garrays: list, scalars: list,
         state: dict) -> None:
    ffi, ctype = batch.ffi, batch.ctype
    fb = ffi.from_buffer
    args = [len(batch.params), batch.numel, batch.tables[0],
            ffi.new(ctype + " *[]", [fb(ctype + "[]", g) for g in garrays])]
    args += batch.tables[1:]
    if spec.per_step is not None:
        per, memo = [], {}
        for p, st in zip(batch.params, batch.steps):
            a = st._data
            a += 1  # the loop's `step_t += 1`, in the counter's own dtype
            st._bump_version()
            s = float(a)
            if spec.stateful:
                per.append(spec.per_step(group, s, state[p]))
                continue
            values = memo.get(s)
            if values is None:
                values = memo[s] = spec.per_step(group, s)
            per.append(values)
        args += [ffi.new(ctype + "[]", column) for column in zip(*per)]
    batch.func(*args, *scalars)
    for p, st in zip(batch.params, batch.states):
        p._bump_version()
        for t in st:
            t._bump_version()


def _grad_arrays(batches: list, params: list, grads: list):
    """Per batch, the gradients' arrays, or None when one cannot be read by the kernel."""
    where = {id(p): g for p, g in zip(params, grads)}
    out = []
    for b in batches:
        column = []
        for p, arrays in zip(b.params, b.arrays):
            g = where[id(p)]
            a, pa = g._data, arrays[0]
            if a.__class__ is not np.ndarray or a.dtype != pa.dtype or a.shape != pa.shape:
                return None
            f = a.flags
            if not (f.c_contiguous and f.aligned):
                return None
            if a.base is not None and any(np.may_share_memory(a, w) for arrs in b.arrays
                                          for w in arrs):
                return None  # a gradient in memory the step writes: the loop's order decides
            column.append(a)
        out.append(column)
    return out


def _prepare(opt, spec: _Kind, kind: str, flags: dict, params: list, keys: tuple):
    """The group's batches (one per dtype), None when some state is missing, False when the
    tensors cannot go through the kernel."""
    by_dtype: dict = {}
    for p in params:
        st = opt.state.get(p)
        states = [st.get(k) if st else None for k in keys]
        step = st.get("step") if st and spec.per_step is not None else None
        if any(t is None for t in states) or (spec.per_step is not None and step is None):
            return None
        a = p._data
        if a.__class__ is not np.ndarray or a.dtype not in _FLOATS or p._be.device.type != "cpu":
            return False
        arrays = [a] + [t._data for t in states]
        for x in arrays:
            if x.__class__ is not np.ndarray or x.dtype != a.dtype or x.shape != a.shape:
                return False
            f = x.flags
            if not (f.c_contiguous and f.aligned and f.writeable):
                return False
        if step is not None and not (step._data.__class__ is np.ndarray and step._data.ndim == 0
                                     and step._data.dtype.kind == "f"
                                     and step._data.flags.writeable):
            return False
        entry = by_dtype.setdefault(C_ARRAY_TYPES[a.dtype], ([], [], [], []))
        entry[0].append(p)
        entry[1].append(arrays)
        entry[2].append(states)
        entry[3].append(step)
    written = [x for entry in by_dtype.values() for arrays in entry[1] for x in arrays]
    if _overlap(written):
        return False
    batches = []
    for ctype, (ps, arrays, states, steps) in by_dtype.items():
        built = _kernel(spec, kind, flags, ctype)
        if built is None:
            return False
        ffi, func = built
        batches.append(_Batch(ps, arrays, states, steps, ctype, func, ffi))
    return batches


def _overlap(arrays: list) -> bool:
    """Whether two of the arrays the step writes share memory (arrays owning their memory
    never do, so only views are compared)."""
    views = [a for a in arrays if a.base is not None]
    return any(a is not b and np.may_share_memory(a, b) for a in views for b in arrays)


def _kernel(spec: _Kind, kind: str, flags: dict, ctype: str):
    """(ffi, function) of the kernel for this structure and dtype, built once; None when no
    C compiler works (said once)."""
    global _compiler
    key = (kind, tuple(flags.items()), ctype)
    hit = _FUNCS.get(key)
    if hit is not None:
        return hit
    source, name, signature = render(kind, flags, ctype)
    from ..runtime.build import cannot_build
    from ..runtime.cbuild import CompilerUnavailable, build
    try:
        lib = build(source, f"void {name}({signature});")
    except CompilerUnavailable as e:
        _compiler = False
        cannot_build(e)  # the one warning, whichever compiled path met it first
        return None
    hit = _FUNCS[key] = (lib.ffi, lib.function(name))
    return hit


def render(kind: str, flags: dict, ctype: str) -> tuple[str, str, str]:
    """(C source, function name, signature) of the fused step for this structure and dtype."""
    spec = KINDS[kind]
    on = [k for k, v in flags.items() if v]
    name = "_".join(["ft", kind, "f32" if ctype == "float" else "f64"] + on)
    keys = spec.state(flags)
    params = ["int64_t n_tensors", "const int64_t *numel", f"{ctype} *const *param",
              f"const {ctype} *const *grad"] + [f"{ctype} *const *{k}" for k in keys]
    params += [f"const {ctype} *{n}" for n in spec.per_step_names]
    params += [f"{ctype} {n}" for n in spec.scalar_names(flags)]
    source = environment("c").get_template("optim.c.j2").render(
        kind=kind, title=spec.title, module=spec.module, ctype=ctype, name=name,
        signature=",\n        ".join(params), sqrt="sqrtf" if ctype == "float" else "sqrt",
        fabs="fabsf" if ctype == "float" else "fabs",
        **flags)
    return source, name, ", ".join(params)


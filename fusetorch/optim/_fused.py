"""Fused eager optimizer steps: one generated kernel call updates every parameter of a group
of one dtype, and its state, in place, instead of a dozen numpy ops per parameter.

Each optimizer writes its update once, as a `Rule` beside its class: `update(p, grad, states,
s, f)` is the per-parameter tensor ops (in place on the parameter and its state tensors), with
every hyperparameter and step-dependent factor taken from `s` (name -> value) and every
structural choice (maximize, weight decay on, AMSGrad, ...) from `f`; `scalars(group, f,
step)` computes `s` in Python, as PyTorch's loops do. The optimizer's Python loop calls both
with Python numbers, and stays the reference; a traced step (`fusetorch.compile`) calls them
with the step count a tensor, so the step-dependent scalars are tensor ops (PyTorch's
capturable form). An update may read a scalar only as an operand of a tensor op (never as
`alpha=`/`value=`, which branch on its value, nor through `lerp_`: `optimizer.lerp_into`,
`select` and `clamp_into` spell those so that a 0-d tensor and a Python number compute alike). This module traces `update` once per
structure and dtype on stand-in tensors of one dimension with each scalar a 0-d input
(`kernel_for`), fuses the recording into one pointwise group (`codegen/fuse.py`) whose outputs
overwrite the parameter and state inputs (`runtime/in_place.py`), and lowers it as a batched
kernel (`LoopKernel.batched`: a table of pointers per operand, a length per parameter), built
through the kernel cache (`runtime/build.py`). Its statements are the eager ops' own C
expressions on the scalars rounded to the parameter dtype as eager mode rounds a Python number
operand, in the order the loop runs them: the results are the loop's bit for bit.

A group runs fused from its `POLICY.fused_step_at`-th step (the second) with the same parameters (those with a gradient) and
the same structure: the first one is the loop's, which also creates the state. Everything else
stays with the loop: parameters, gradients or state that are not C-contiguous float32/float64
CPU arrays of the parameter's shape, memory shared between them, a hyperparameter that is a
tensor (lr aside, read as a number), groups with `foreach=False`, a traced step
(`fusetorch.compile` records the loop's ops), and everything under `FUSETORCH_EAGER_COMPILE=0`
or when no C compiler works or the kernel cache fails (one warning).
"""
from __future__ import annotations

import os
import struct
from typing import Callable, NamedTuple

import numpy as np

from .._policy import POLICY, note
from ..runtime.device import C_ARRAY_TYPES
from ..tracer import dispatch as D
from ..tracer.tensor import Tensor

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # the dtypes the kernels are built for
_FUNCS: dict = {}  # (rule name, flags, dtype) -> _Kernel, or None where the rule does not fuse
_compiler = True  # False once a build found no working C compiler (or no usable cache)


class Rule(NamedTuple):
    """One optimizer family's update, for its loop and for the fused step (module docstring).
    `flags(group)`: the structure, as (name, value) pairs of Python bools and numbers that
    `update` branches on; `state(f)`: the per-parameter state tensors `update` writes, in
    order; `names(f)`: the keys of `s`, in the order `scalars` gives them; `scalars(group, f,
    step)`: their values at a step count (the count after this step's increment, None where
    the family keeps none), shared by the parameters at that count; `per_param(row, state)`:
    `names`' values for one parameter from that row (which may hold other values for it) and
    scalar state it updates as the loop does (NAdam's `mu_product`), once `ready(state)` says
    it may. `switches`: the names whose
    values are truth values (0-d bool tensors in the trace, for `optimizer.select`: RAdam's
    rectification, which a step turns on)."""
    name: str
    flags: Callable
    state: Callable
    names: Callable
    scalars: Callable
    update: Callable
    counts_steps: bool = True
    per_param: Callable | None = None
    ready: Callable | None = None
    switches: tuple = ()


def scalars_of(rule: Rule, group: dict, f: dict, step, state) -> dict:
    """`s` for the loop's call of `rule.update`: the scalars by name."""
    row = rule.scalars(group, f, step)
    if rule.per_param is not None:
        row = rule.per_param(row, state)
    return dict(zip(rule.names(f), row))


class _Kernel(NamedTuple):
    """A built batched update: its function, the FFI its pointers are made with, and per
    kernel parameter its operand: ("tensor", j) (0 the parameter, 1 the gradient, 2 + k
    state k) or ("scalar", j) (the j-th of `names`)."""
    ffi: object
    func: object
    roles: tuple


class _Batch:
    """The parameters of one dtype in a group, with what the kernel call needs that stays
    the same from step to step: the arrays it was prepared for, their pointer tables, the
    scalars' array (a row per parameter) and its tables."""

    __slots__ = ("params", "arrays", "states", "steps", "kernel", "tables", "numel", "values",
                 "truths", "switch_cols", "last", "pack", "ctype", "grad_at")

    def __init__(self, params, arrays, states, steps, kernel: _Kernel, names: tuple,
                 switches: tuple):
        self.params, self.arrays, self.states, self.steps = params, arrays, states, steps
        self.kernel = kernel
        ffi = kernel.ffi
        a0 = arrays[0][0]
        self.ctype = ctype = C_ARRAY_TYPES[a0.dtype]
        # the scalars, a row per parameter: numbers in the parameters' dtype (rounded as eager
        # mode rounds a Python number operand), switches as bytes
        self.values = np.zeros((len(params), len(names)), a0.dtype)
        self.truths = np.zeros((len(params), len(names)), np.uint8)
        self.switch_cols = [j for j, n in enumerate(names) if n in switches]
        self.last = None  # the rows last written into `values`
        self.pack = struct.Struct(f"={self.values.size}{'f' if ctype == 'float' else 'd'}")
        width = len(names)
        bases = {}
        for array, t in ((self.values, ctype), (self.truths, "uint8_t")):
            if array.size:
                bases[t] = ffi.cast(t + " *", ffi.from_buffer(t + "[]", array))
        fb = ffi.from_buffer
        tables, self.grad_at = [], None
        for k, (kind, j) in enumerate(kernel.roles):
            if kind == "scalar":
                t = "uint8_t" if names[j] in switches else ctype
                cells = [bases[t] + (row * width + j) for row in range(len(params))]
                tables.append(ffi.new(t + " *[]", cells))
                continue
            if j == 1:
                self.grad_at, cells = k, None  # (made per step: gradients are new arrays)
            else:
                cells = [fb(ctype + "[]", a[0 if j == 0 else j - 1]) for a in arrays]
            tables.append(None if cells is None else ffi.new(ctype + " *[]", cells))
        self.tables = tables
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

    __slots__ = ("group", "key", "batches", "why", "steps")

    def __init__(self, group: dict, key: tuple):
        self.group, self.key, self.batches = group, key, None
        self.steps = 0  # steps seen with this structure (fused from POLICY.fused_step_at)
        self.why = None  # the decision last noted for `fusetorch.compiler.explain`


def step_group(opt, group: dict, rule: Rule) -> bool:
    """Update `group` with one fused kernel call per dtype; False when the caller's Python
    loop must do it (see the module docstring)."""
    if not (POLICY.fused_optimizers and _compiler) or D.RECORDER is not None or \
            group.get("foreach") is False or not _numbers(group):
        if D.RECORDER is None:  # (a compile trace records the loop's tensor ops instead)
            _decide(opt, group, None, *_why_not(group))
        return False
    flags = rule.flags(group)  # (Python values: the group holds no tensor but lr)
    params, grads = [], []
    for p in group["params"]:
        g = p.grad
        if g is not None:
            params.append(p)
            grads.append(g)
    if not params:
        return False
    plans = opt.__dict__.setdefault("_fused_plans", {})
    key = (rule.name, flags, tuple(map(id, params)))
    plan = plans.get(id(group))
    if plan is None or plan.group is not group or plan.key != key:
        plan = plans[id(group)] = _Plan(group, key)
    if plan.steps < POLICY.fused_step_at:
        plan.steps += 1
        if plan.steps < POLICY.fused_step_at:  # the loop's step (the first makes the state)
            plan.why = None  # (noted at each such step: its count is in the reason)
            _decide(opt, group, plan, "first_step", plan.steps, POLICY.fused_step_at)
            return False
    f = dict(flags)
    keys = rule.state(f)
    if plan.batches is None or (plan.batches and not all(
            b.current(opt, keys) for b in plan.batches)):
        plan.batches = _prepare(opt, rule, flags, params, keys)
        if plan.batches is None:  # state missing (a cleared optimizer): the loop creates it
            _decide(opt, group, plan, "python_loop", "its state is missing (the loop "
                    "creates it)")
            return False
    if plan.batches is False:
        _decide(opt, group, plan, *(("no_compiler", _unavailable())
                                    if not _compiler else
                                    ("python_loop", "a parameter or its state cannot go "
                                     "through one kernel (dtype, device, layout, memory "
                                     "shared) or the update does not fuse")))
        return False
    grad_arrays = _grad_arrays(plan.batches, params, grads)
    if grad_arrays is None:
        _decide(opt, group, plan, "python_loop", "a gradient the kernel cannot read (dtype, "
                "layout, or memory the step writes)")
        return False
    if rule.ready is not None and not all(rule.ready(opt.state[p]) for p in params):
        _decide(opt, group, plan, "python_loop", "the rule's state is not ready yet")
        return False
    for batch, garrays in zip(plan.batches, grad_arrays):
        _run(batch, rule, group, f, garrays, opt.state)
    if plan.why != "fused":
        _decide(opt, group, plan, "fused")
    return True


def _why_not(group: dict) -> tuple:
    if not POLICY.fused_optimizers:
        return ("off", "fused_optimizers")
    if not _compiler:
        return ("no_compiler", _unavailable())
    if group.get("foreach") is False:
        return ("python_loop", "foreach=False")
    return ("python_loop", "a hyperparameter is a tensor (the loop's tensor ops read it)")


def _decide(opt, group: dict, plan, code: str, *args) -> None:
    """Note the group's decision where it changed (kept on its plan, or on the optimizer
    before a plan exists)."""
    if plan is not None:
        if plan.why == code:
            return
        plan.why = code
    else:
        whys = opt.__dict__.setdefault("_fused_why", {})
        if whys.get(id(group)) == code:
            return
        whys[id(group)] = code
    index = next((i for i, g in enumerate(opt.param_groups) if g is group), "?")
    note("fused_optimizer", (type(opt).__name__, f"param group {index}"), code, *args)


def _unavailable() -> str | None:
    from ..runtime import build
    return build.last_unavailable


_PLAIN = frozenset({bool, int, float, str, list, type(None)})


def _numbers(group: dict) -> bool:
    """Whether the group's hyperparameters are Python numbers (lr may be a 1-element tensor,
    which the loop reads as one too): a tensor elsewhere is for the loop's tensor ops."""
    for k, v in group.items():
        c = v.__class__
        if c in _PLAIN:
            continue
        if c is tuple:
            if any(isinstance(x, Tensor) for x in v):
                return False
        elif isinstance(v, Tensor) and k != "lr":
            return False
    return True


def _run(batch: _Batch, rule: Rule, group: dict, f: dict, garrays: list, state: dict) -> None:
    k = batch.kernel
    ffi = k.ffi
    rows, memo = [], {}
    per_param = rule.per_param
    for p, st in zip(batch.params, batch.steps):
        s = None
        if st is not None:
            a = st._data
            a += 1  # the loop's `step_t += 1`, in the counter's own dtype
            st._bump_version()
            s = float(a)
        row = memo.get(s)
        if row is None:
            row = memo[s] = rule.scalars(group, f, s)
        rows.append(row if per_param is None else per_param(row, state[p]))
    one = per_param is None and len(memo) == 1  # (every parameter at one step count)
    if one:
        rows = rows[0]
    if rows != batch.last:  # (SGD's, Adadelta's, Rprop's stay the same from step to step)
        flat = rows * len(batch.params) if one else [x for r in rows for x in r]
        try:
            batch.pack.pack_into(batch.values, 0, *flat)  # (numpy took 2 us a parameter)
        except (OverflowError, struct.error):  # (a float32 overflow: numpy's inf)
            batch.values[...] = rows
        for j in batch.switch_cols:
            batch.truths[:, j] = rows[j] != 0 if one else [r[j] != 0 for r in rows]
        batch.last = rows
    args = list(batch.tables)
    if batch.grad_at is not None:
        fb = ffi.from_buffer
        ptr = batch.ctype + "[]"
        args[batch.grad_at] = ffi.new(batch.ctype + " *[]", [fb(ptr, g) for g in garrays])
    k.func(len(batch.params), batch.numel, *args)
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


def _prepare(opt, rule: Rule, flags: tuple, params: list, keys: tuple):
    """The group's batches (one per dtype), None when some state is missing, False when the
    tensors cannot go through the kernel."""
    by_dtype: dict = {}
    for p in params:
        st = opt.state.get(p)
        states = [st.get(k) if st else None for k in keys]
        step = st.get("step") if st and rule.counts_steps else None
        if any(t is None for t in states) or (rule.counts_steps and step is None):
            return None
        a = p._data
        if a.__class__ is not np.ndarray or a.dtype not in _FLOATS or p._be.device.type != "cpu":
            return False
        arrays = [a] + [t._data for t in states]
        for x in arrays:
            if x.__class__ is not np.ndarray or x.dtype != a.dtype or x.shape != a.shape:
                return False
            fl = x.flags
            if not (fl.c_contiguous and fl.aligned and fl.writeable):
                return False
        if step is not None and not (step._data.__class__ is np.ndarray and step._data.ndim == 0
                                     and step._data.dtype.kind == "f"
                                     and step._data.flags.writeable):
            return False
        entry = by_dtype.setdefault(a.dtype, ([], [], [], []))
        entry[0].append(p)
        entry[1].append(arrays)
        entry[2].append(states)
        entry[3].append(step)
    written = [x for entry in by_dtype.values() for arrays in entry[1] for x in arrays]
    if _overlap(written):
        return False
    f = dict(flags)
    batches = []
    for dtype, (ps, arrays, states, steps) in by_dtype.items():
        kernel = _kernel(rule, flags, dtype)
        if kernel is None:
            return False
        batches.append(_Batch(ps, arrays, states, steps, kernel, rule.names(f), rule.switches))
    return batches


def _overlap(arrays: list) -> bool:
    """Whether two of the arrays the step writes share memory (arrays owning their memory
    never do, so only views are compared)."""
    views = [a for a in arrays if a.base is not None]
    return any(a is not b and np.may_share_memory(a, b) for a in views for b in arrays)


def _kernel(rule: Rule, flags: tuple, dtype: np.dtype) -> _Kernel | None:
    """The built kernel of this structure and dtype, built once; None when no C compiler
    works (said once) or the update does not fuse into one in-place kernel."""
    global _compiler
    key = (rule.name, flags, dtype)
    if key in _FUNCS:
        return _FUNCS[key]
    made = kernel_for(rule, dict(flags), dtype)
    if made is None:
        _FUNCS[key] = None
        return None
    from ..runtime import build
    from ..runtime.cbuild import CompilerUnavailable
    loop_kernel, roles = made
    try:
        built = build.build([loop_kernel], "cpu")
    except CompilerUnavailable as e:  # (no compiler, a kernel cache that failed)
        _compiler = False
        build.cannot_build(e)  # the one warning, whichever compiled path met it first
        return None
    hit = _FUNCS[key] = _Kernel(built.ffi, built.functions[0], roles)
    return hit


def kernel_for(rule: Rule, f: dict, dtype) -> tuple | None:
    """(LoopKernel, roles) of `rule.update` traced for structure `f` and `dtype`: pure data,
    nothing built; None where the recording is not one pointwise group that writes every
    update over its input (see `_Kernel` for the roles)."""
    from ..codegen import fuse, lower
    from ..ir import dtypes as dt
    from ..runtime import in_place
    from ..runtime.device import FROM_NP
    from ..tracer import creation as C
    from ..tracer.autograd import no_grad
    from ..tracer.trace import trace
    d = FROM_NP[np.dtype(dtype)]
    n_states = len(rule.state(f))
    names = rule.names(f)
    # stand-ins of length 2 (a dim of 1 would read as broadcast): the kernel takes its
    # lengths per call
    tensors = [C.zeros(2, dtype=d) for _ in range(2 + n_states)]
    scalars = [C.zeros((), dtype=dt.bool_ if n in rule.switches else d) for n in names]
    # (the stand-ins' values are zeros: their 0 / 0 is nobody's business)
    with no_grad(), np.errstate(all="ignore"), trace(*tensors, *scalars) as rec:
        p, g, *states = tensors
        rule.update(p, g, states, dict(zip(names, scalars)), f)
        graph = rec.graph(p, *states)
    # the kernel's comments name the rule, not the line that called `step` (so every caller
    # builds the same source: one cache entry)
    code = rule.update.__code__
    where = {"source": f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"}
    for n in graph.nodes:
        if n.op != "input":
            n.meta = dict(where)
    plan = fuse.partition(graph, cpu=True)
    if len(plan.steps) != 1 or not isinstance(plan.steps[0], fuse.Group) or \
            plan.steps[0].kind != "pointwise":
        return None
    group = plan.steps[0]
    layouts = {id(n): lower.Layout(n.shape, (1,) * len(n.shape)) for n in graph.inputs}
    updates = {k: 0 if k == 0 else k + 1 for k in range(len(graph.outputs))}
    chosen = in_place.choose(graph, plan, updates, layouts)
    if len(chosen) != len(graph.outputs):
        return None
    text_names = {id(n): f"%{i}" for i, n in enumerate(graph.nodes)}
    # (the kernel's comments name its inputs: the parameter, its gradient, state, scalars)
    roles_named = ("param", "grad") + tuple(rule.state(f)) + tuple(names)
    text_names.update((id(n), r) for n, r in zip(graph.inputs, roles_named))
    kernel = lower.lower(group, layouts, text_names, chosen, batched=True)
    position = {id(n): i for i, n in enumerate(graph.inputs)}
    roles = []
    for prm in kernel.params:
        i = position[id(prm.node)]
        roles.append(("tensor", i) if i < len(tensors) else ("scalar", i - len(tensors)))
    if any(prm.output for prm in kernel.params):
        return None
    return kernel, tuple(roles)


def source(rule: Rule, f: dict, dtype) -> str:
    """The C source of the fused update for structure `f` and `dtype` (what is built)."""
    from ..codegen import render
    made = kernel_for(rule, f, dtype)
    if made is None:
        raise ValueError(f"the {rule.name} update with {f} is not one in-place pointwise "
                         f"kernel: it runs as the Python loop")
    return render.render_kernel(made[0])

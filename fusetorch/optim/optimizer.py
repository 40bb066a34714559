"""`Optimizer`: the base class of every optimizer, with PyTorch's parameter groups, per-parameter
state, `zero_grad`, step hooks and `state_dict` / `load_state_dict` format.

Subclasses implement `step(closure=None)`. Their updates are ordinary in-place tensor ops run
under `no_grad` (see `_no_grad_step`), so version counters and recordings see every write.
A family whose per-parameter update is elementwise writes it once as an `_fused.Rule` (see
sgd.py, adam.py): `step` offers each group to `_fused.step_group` (one compiled kernel call
from the second step) and otherwise runs the rule's `update` per parameter. The helpers below
(`lerp_into`, `select`, `clamp_into`) spell lerp, a per-step branch and clamp so that a rule's
scalars may be Python numbers (the loop) or 0-d tensors (the fused step's trace) alike.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain
from typing import Any, Callable

from .. import ir
from .._hooks import RemovableHandle
from ..tracer import creation as C
from ..tracer import dispatch as D
from ..tracer.autograd import enable_grad, no_grad
from ..tracer.typename import typename
from ..tracer.tensor import Tensor
from ..tracer.trace import recording_phase

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton marking a default that every parameter group must give itself."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_optimizer_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_optimizer_post_hooks: "OrderedDict[int, Callable]" = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register `hook(optimizer, args, kwargs)` to run before every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register `hook(optimizer, args, kwargs)` to run after every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _to_scalar(x):
    """A 1-element tensor hyperparameter (lr as a Tensor) as a Python number."""
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        return x.item()
    return x


def _scalar_dtype() -> ir.dtypes.DType:
    """dtype of the `step` counters: float64 when that is the default dtype, like PyTorch."""
    return ir.dtypes.float64 if ir.dtypes.default_float() is ir.dtypes.float64 \
        else ir.dtypes.float32


def _new_step() -> Tensor:
    return C.tensor(0.0, dtype=_scalar_dtype())


def _no_grad_step(step: Callable) -> Callable:
    """Run an optimizer's `step` under no_grad (PyTorch's `_use_grad_for_differentiable` with
    differentiable=False): the updates are not part of any autograd graph."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        _uses_python_state(self)
        with no_grad(), recording_phase("update"):  # (a compiled step labels its kernels)
            return step(self, *args, **kwargs)
    return wrapper


def _check_differentiable(defaults: dict) -> None:
    if defaults.get("differentiable"):
        if defaults.get("fused"):
            raise RuntimeError("`fused` does not support `differentiable`")
        raise NotImplementedError("fusetorch optimizers do not support differentiable=True "
                                  "(the update would be an in-place op on a leaf that requires "
                                  "grad)")


def _group_defaults_and_tensor_state(opt: "Optimizer", defaults: tuple,
                                     keys: tuple = ("step",)) -> None:
    """`__setstate__` of an optimizer: option defaults for groups saved by older versions,
    and state scalars saved as Python numbers (`keys`) turned into 0-d tensors, as PyTorch."""
    for group in opt.param_groups:
        for key, default in defaults:
            group.setdefault(key, default)
        for p in group["params"]:
            p_state = opt.state.get(p, {})
            if len(p_state) == 0:
                continue
            for key in keys:
                if key in p_state and not isinstance(p_state[key], Tensor):
                    p_state[key] = C.tensor(float(p_state[key]), dtype=_scalar_dtype())


def _traced() -> bool:
    """Whether a compiled step is being traced: optimizers then keep step-dependent scalars as
    tensor ops (PyTorch's capturable form) so one graph serves every step."""
    return D.RECORDER is not None


# lerp as the updates' rules spell it: written out, so that a fused step's trace, whose weight
# is a 0-d tensor, records the ops the loop runs with a Python weight (optim/_fused.py)

def lerp_from_end(beta) -> bool:
    """Which of lerp's two forms `lerp(m, g, 1 - beta)` takes (tracer/functional.py `lerp`):
    `m + (g - m) * w` for |w| < 0.5, else `g - (g - m) * (1 - w)`."""
    return not abs(1 - beta) < 0.5


def lerp_weight(beta, from_end: bool):
    """The weight lerp multiplies by in that form, computed in Python as lerp computes it."""
    weight = 1 - beta
    return 1 - weight if from_end else weight


def lerp_into(m: Tensor, g: Tensor, weight, from_end: bool) -> None:
    """`m.lerp_(g, 1 - beta)` as lerp computes it, with `weight = lerp_weight(beta, from_end)`
    (a tensor while a fused step is traced)."""
    diff = g - m
    if from_end:
        m.copy_(g - diff * weight)
    else:
        m.add_(diff * weight)


def select(on, then: Callable, otherwise):
    """`then()` if `on` else `otherwise`, for an update's per-step branch; with `on` a 0-d
    bool tensor (a fused step's trace: a `Rule.switches` scalar, or a compiled step's),
    elementwise, both computed."""
    if isinstance(on, Tensor):
        from ..tracer import functional as F
        return F.where(on, then(), otherwise)
    return then() if on else otherwise


def clamp_into(x: Tensor, lo, hi) -> None:
    """`x.clamp_(lo, hi)`; with 0-d tensor bounds (a fused step's trace) as min(max(x, lo),
    hi), the same values (NaN passes), without clamp's checks of lo against hi, which are
    ops on the bounds alone."""
    if isinstance(lo, Tensor):
        from ..tracer import functional as F
        F.minimum(F.maximum(x, lo), hi, out=x)
    else:
        x.clamp_(lo, hi)


_SCALARS = (bool, int, float, str, type(None))


def _uses_python_state(opt: "Optimizer") -> None:
    """Under a trace (a compiled function's first call), tell the recording that `opt`'s
    Python-side state takes part: a replay reruns its tensor updates but no Python, so
    `compile` guards the compiled call on `opt._python_state()`."""
    if D.RECORDER is not None:
        D.RECORDER.uses_python_state(opt)


class Optimizer:
    """Base class for all optimizers.

    Args:
        params: an iterable of Tensors, of (name, Tensor) pairs, or of dicts (parameter groups,
            each with a "params" entry and its own options).
        defaults: values of the options for groups that do not specify them.
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._patch_step_function()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # ------------------------------------------------------------ pickling and printing

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def _python_state(self) -> tuple:
        """What of this optimizer's state lives in Python, as a comparable snapshot: its
        groups' scalar options, which state entries exist, non-tensor state values, and which
        tensor objects hold the tensor state (see `_uses_python_state`)."""
        groups = tuple(tuple((k, v) for k, v in g.items() if isinstance(v, _SCALARS) or
                             (isinstance(v, tuple) and all(isinstance(x, _SCALARS) for x in v)))
                       for g in self.param_groups)
        state = tuple((id(p), tuple((k, id(v) if isinstance(v, Tensor) else
                                     v if isinstance(v, _SCALARS) else id(v))
                                    for k, v in st.items()))
                      for p, st in self.state.items())
        return groups, state

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # ------------------------------------------------------------ step hooks

    def _patch_step_function(self) -> None:
        """Wrap the class's `step` once so that step hooks run around every call."""
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = self._hook_step(cls.step)
            cls.step.hooked = True

    @staticmethod
    def _hook_step(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self = args[0]
            if D.PROFILE is not None and D.PROFILE.enter():  # PyTorch's event name
                name = type(self).__name__
                return D.PROFILE.call(wrapper, args, f"Optimizer.step#{name}.step",
                                      kwargs=kwargs, cat="user_annotation", reentrant=True)
            for pre_hook in chain(_global_optimizer_pre_hooks.values(),
                                  self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{func} must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
            out = func(*args, **kwargs)
            for post_hook in chain(self._optimizer_step_post_hooks.values(),
                                   _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
        return wrapper

    def _register(self, table: OrderedDict, hook: Callable, prepend: bool = False):
        handle = RemovableHandle(table)
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)` before step."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs) -> None` after step."""
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------ state dict

    def state_dict(self) -> dict[str, Any]:
        """`{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`: params are
        numbered in group order; the state's tensors are the optimizer's own (not copies), as
        in PyTorch."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack_group(group: dict) -> dict:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _cast_state(param: Tensor, value, key=None):
        """Copy a saved state value for `param`: floating tensors take the param's dtype and
        device (except the `step` counter). Unlike PyTorch, tensors are always copied, so a
        loaded optimizer never shares buffers with the state dict it came from."""
        if isinstance(value, Tensor):
            if key != "step" and param.is_floating_point():
                v = value.to(dtype=param.dtype, device=param.device)
            else:
                v = value.to(device=param.device)
            return v.clone() if v is value else v
        if isinstance(value, dict):
            return {k: Optimizer._cast_state(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast_state(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict made by `state_dict()` (of an optimizer over the same number of
        groups and parameters). Groups' options come from the state dict."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast_state(param, v)
            else:
                state[k] = v

        def update_group(group: dict, new_group: dict) -> dict:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ------------------------------------------------------------ gradients and groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients: to None (default), or to zeros in place."""
        if D.PROFILE is not None and D.PROFILE.enter():
            name = type(self).__name__
            return D.PROFILE.call(Optimizer.zero_grad, (self, set_to_none),
                                  f"Optimizer.zero_grad#{name}.zero_grad",
                                  cat="user_annotation", reentrant=True)
        with recording_phase("update"):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        if set_to_none:
                            p.grad = None
                        else:
                            if p.grad.grad_fn is not None:
                                p.grad.detach_()
                            else:
                                p.grad.requires_grad_(False)
                            p.grad.zero_()

    def step(self, closure: Callable | None = None):
        """Perform one optimization step (subclasses implement it)."""
        raise NotImplementedError

    def _closure_loss(self, closure: Callable | None):
        """Evaluate the closure with gradients on (step itself runs under no_grad)."""
        if closure is None:
            return None
        with enable_grad(), recording_phase(None):  # the closure's forward is a forward
            return closure()

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to optimize."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

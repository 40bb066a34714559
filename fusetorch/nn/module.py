"""`nn.Module`: the base of every layer and model.

Attributes that are Parameters, Modules or registered buffers are kept in `_parameters`,
`_modules` and `_buffers`, which is what `parameters()`, `state_dict()`, `to()` and `repr` walk.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Callable, Iterator

from .._hooks import RemovableHandle  # noqa: F401  (nn.RemovableHandle, as before)
from ..tracer.autograd import no_grad
from ..tracer.tensor import Tensor
from ..tracer.typename import typename
from . import _backward_hooks
from . import _state_dict as _state
from .parameter import Buffer, Parameter, is_lazy

_IncompatibleKeys = namedtuple("_IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _IncompatibleKeysRepr(_IncompatibleKeys):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")


def _check_name(name, kind: str) -> None:
    """PyTorch's checks of a parameter or buffer name, in its order."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


class Module:
    """Base class for all neural network modules. Subclasses define `forward` and assign their
    parameters and submodules as attributes in `__init__` (after `super().__init__()`)."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_state_dict_hooks", OrderedDict())
        object.__setattr__(self, "_state_dict_pre_hooks", OrderedDict())
        object.__setattr__(self, "_load_state_dict_pre_hooks", OrderedDict())
        object.__setattr__(self, "_load_state_dict_post_hooks", OrderedDict())

    forward: Callable

    def forward(self, *input):  # noqa: F811
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        # (each kind of hook asked by one dict read: a model's step calls many modules, and
        # most have no hooks)
        d = self.__dict__
        hooks = d.get("_forward_pre_hooks")
        if hooks:
            args, kwargs = self._call_pre_hooks(hooks, args, kwargs)
        backward_hooks = None
        if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
            backward_hooks = _backward_hooks.start(self, args)
            if backward_hooks is not None:
                args = backward_hooks.inputs(args)
        hooks = d.get("_forward_hooks")
        if hooks and d.get("_forward_hooks_always_called"):
            out = self._forward_always_calling(hooks, args, kwargs)
        else:
            out = self.forward(*args, **kwargs)
            if hooks:
                out = self._call_forward_hooks(hooks, args, kwargs, out, [])
        if backward_hooks is not None:
            out = backward_hooks.output(out)
        return out

    def _call_pre_hooks(self, hooks, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        with_kwargs = self.__dict__.get("_forward_pre_hooks_with_kwargs", ())
        for hook_id, hook in list(hooks.items()):
            if hook_id in with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        return args, kwargs

    def _call_forward_hooks(self, hooks, args: tuple, kwargs: dict, out, called: list):
        with_kwargs = self.__dict__.get("_forward_hooks_with_kwargs", ())
        for hook_id, hook in list(hooks.items()):
            called.append(hook_id)
            r = self._forward_hook(hook_id, hook, with_kwargs, args, kwargs, out)
            if r is not None:
                out = r
        return out

    def _forward_hook(self, hook_id, hook, with_kwargs, args: tuple, kwargs: dict, out):
        return hook(self, args, kwargs, out) if hook_id in with_kwargs else hook(self, args, out)

    def _forward_always_calling(self, hooks, args: tuple, kwargs: dict):
        """forward and its hooks; where either raises, the `always_call` hooks that have not
        run yet still run (with the output so far), as PyTorch's, then the error goes on."""
        d = self.__dict__
        called: list = []
        out = None
        try:
            out = self.forward(*args, **kwargs)
            return self._call_forward_hooks(hooks, args, kwargs, out, called)
        except Exception:
            with_kwargs = d.get("_forward_hooks_with_kwargs", ())
            for hook_id, hook in list(hooks.items()):
                if hook_id not in d["_forward_hooks_always_called"] or hook_id in called:
                    continue
                try:
                    r = self._forward_hook(hook_id, hook, with_kwargs, args, kwargs, out)
                except Exception as e:  # noqa: BLE001  (the forward's error is the one raised)
                    warnings.warn("module forward hook with ``always_call=True`` raised an "
                                  "exception that was silenced as another error was raised in "
                                  f"forward: {e}")
                    continue
                if r is not None:
                    out = r
            raise

    # ------------------------------------------------------------ attributes

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        if "_parameters" not in d:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError("cannot assign parameters or modules before "
                                     "Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        params, modules, buffers = d["_parameters"], d["_modules"], d["_buffers"]
        if isinstance(value, Parameter):
            self._discard(name, keep="_parameters")
            self.register_parameter(name, value)
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            self._discard(name, keep="_modules")
            modules[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            modules[name] = None
        elif isinstance(value, Buffer):
            self._discard(name, keep="_buffers")
            self.register_buffer(name, value, persistent=value.persistent)
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _discard(self, name: str, keep: str | None = None) -> None:
        # a member replaced by one of its kind keeps its place (`seq[0] = Linear(...)`, a new
        # weight): the order of forward, parameters() and state_dict() stays PyTorch's
        for dname in ("_parameters", "_modules", "_buffers"):
            if dname != keep:
                self.__dict__[dname].pop(name, None)
        self.__dict__.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for dname in ("_parameters", "_buffers", "_modules"):
            if dname in d and name in d[dname]:
                return d[dname][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for dname in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[dname]:
                del self.__dict__[dname][name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(name, "parameter")
        if hasattr(type(self), name) or (name in self.__dict__ and name not in self._parameters):
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(name, "buffer")
        if name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer "
                            f"'{name}' (torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        if hasattr(type(self), name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        mod = self
        for part in target.split(".") if target else ():
            if part not in mod._modules:
                raise AttributeError(f"{mod._get_name()} has no attribute `{part}`")
            mod = mod._modules[part]
        return mod

    def get_parameter(self, target: str) -> Parameter:
        return self._get_member(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        return self._get_member(target, "_buffers", "a buffer")

    def _get_member(self, target: str, table: str, what: str):
        """`target` ('sub.name') from the submodule's `table`, with PyTorch's two errors."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        members = getattr(mod, table)
        if name not in members:
            raise AttributeError(f"`{name}` is not {what}")
        return members[name]

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Replace (or, unless `strict`, add) the submodule at dotted path `target`."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        mod_path, _, name = target.rpartition(".")
        parent = self.get_submodule(mod_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    # ------------------------------------------------------------ walking

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                           remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator["Module"]:
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, attr: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, v in getattr(mod, attr).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + name, v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes and grads

    _compile_in_place: Callable | None = None  # (set by fusetorch.compile, a layer above)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's forward in place with `torch.compile(*args, **kwargs)`'s
        options; calling the module then runs the compiled forward."""
        Module._compile_in_place(self, *args, **kwargs)

    def __getstate__(self) -> dict:
        # a copy or a saved module is not compiled (PyTorch drops _compiled_call_impl too)
        state = self.__dict__.copy()
        compiled = state.pop("_compiled_call_impl", None)
        if compiled is not None and state.get("forward") is compiled:
            del state["forward"]
        return state

    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_()
                p.grad.zero_()

    # ------------------------------------------------------------ devices and dtypes

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> "Module":
        for m in self.children():
            m._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                new = fn(p)
                if new is not p:
                    p.data = new  # the Parameter object stays: optimizers keep working
                if p._grad is not None:
                    g = fn(p._grad)
                    if g is not p._grad:
                        p._grad = g
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """to(device), to(dtype) (floating parameters only), to(device, dtype), to(tensor);
        memory_format= lays out the 4-d (5-d) tensors, as PyTorch's."""
        from ..tracer.methods import _parse_to
        dtype, dev, _, fmt = _parse_to(args, dict(kwargs))
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            d = dtype if t.is_floating_point() else None
            if fmt is not None and t.ndim == {"channels_last": 4,
                                              "channels_last_3d": 5}.get(fmt._name, t.ndim):
                return t.to(dev, d, memory_format=fmt)
            return t.to(dev, d)
        return self._apply(convert)

    def cuda(self, device=None) -> "Module":
        return self._apply(lambda t: t.cuda(device))

    def share_memory(self) -> "Module":
        """Move parameters, their gradients and buffers into shared memory (in place), so
        processes this module is sent to train the same tensors."""
        return self._apply(lambda t: t.share_memory_())

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type) -> "Module":
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> "Module":
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Parameters and buffers moved to `device` as uninitialised storage."""
        from ..tracer.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device))

    # ------------------------------------------------------------ state

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters, persistent buffers and extra state by dotted name (sharing memory with
        the module), each module's `_version` in `._metadata`."""
        if args:  # the legacy positional form state_dict(destination, prefix, keep_vars)
            destination = args[0]
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        return _state.state_dict(self, destination, prefix, keep_vars)

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        _state.save_to(self, destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        _state.load_from(self, state_dict, prefix, local_metadata, strict, missing_keys,
                         unexpected_keys, error_msgs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy `state_dict`'s tensors into this module's parameters and buffers (`assign`:
        take them as they are), module by module through `_load_from_state_dict`."""
        return _state.load_state_dict(self, state_dict, strict, assign, _IncompatibleKeysRepr)

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    def _state_hooks(self, name: str) -> OrderedDict:
        hooks = self.__dict__.get(name)
        if hooks is None:  # (made without __init__: an unpickled module)
            hooks = OrderedDict()
            object.__setattr__(self, name, hooks)
        return hooks

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, prefix, keep_vars)` before this module's entries are saved."""
        return self._add_hook(self._state_hooks("_state_dict_pre_hooks"), hook, False)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata)` after them (returns None)."""
        def public(module, state_dict, prefix, local_metadata):
            if hook(module, state_dict, prefix, local_metadata) is not None:
                raise RuntimeError("state_dict post-hook must return None")

        return self._add_hook(self._state_hooks("_state_dict_hooks"), public, False)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        # (the private form: a returned dict replaces the state dict)
        return self._add_hook(self._state_hooks("_state_dict_hooks"), hook, False)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False
                                           ) -> RemovableHandle:
        if with_module:
            import functools
            hook = functools.partial(hook, self)
        return self._add_hook(self._state_hooks("_load_state_dict_pre_hooks"), hook, False)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, incompatible_keys)` after this module and its children loaded; it
        may edit the key lists in place."""
        return self._add_hook(self._state_hooks("_load_state_dict_post_hooks"), hook, False)

    # ------------------------------------------------------------ hooks

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False
                              ) -> RemovableHandle:
        """`hook(module, args, output)` (with_kwargs: `hook(module, args, kwargs, output)`)
        after each forward; a non-None result replaces output. `prepend` runs it before the
        hooks already registered; `always_call` runs it even where forward raises."""
        h = self._add_hook(self._forward_hooks, hook, prepend)
        if with_kwargs:
            self._hook_flags(h, "_forward_hooks_with_kwargs")
        if always_call:
            self._hook_flags(h, "_forward_hooks_always_called")
        return h

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """`hook(module, args)` before each forward; a non-None result replaces the args.
        With `with_kwargs`, `hook(module, args, kwargs)` returning None or (args, kwargs)."""
        h = self._add_hook(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            self._hook_flags(h, "_forward_pre_hooks_with_kwargs")
        return h

    def _hook_flags(self, handle: RemovableHandle, table: str) -> None:
        """Marks the handle's hook in one of PyTorch's id tables (created at first use, so a
        module without such hooks has none); removing the handle unmarks it."""
        flags = self.__dict__.get(table)
        if flags is None:
            flags = OrderedDict()
            object.__setattr__(self, table, flags)
        flags[handle.id] = True
        handle.extra_dicts.append(flags)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False
                                    ) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` once the gradients of the module's positional
        inputs are computed (None for arguments that are not tensors requiring grad); a
        non-None result replaces grad_input. Modules whose forward returns one Tensor."""
        return self._add_hook(self.__dict__.setdefault("_backward_hooks", OrderedDict()), hook,
                              prepend)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> RemovableHandle:
        """`hook(module, grad_output)` when the gradient of the module's output arrives; a
        non-None result replaces grad_output."""
        return self._add_hook(self.__dict__.setdefault("_backward_pre_hooks", OrderedDict()),
                              hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        raise NotImplementedError(
            "fusetorch does not implement the deprecated Module.register_backward_hook (its "
            "grad_input is that of the module's last operation): use "
            "register_full_backward_hook")

    @staticmethod
    def _add_hook(hooks: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        h = RemovableHandle(hooks)
        hooks[h.id] = hook
        if prepend:
            hooks.move_to_end(h.id, last=False)
        return h

    # ------------------------------------------------------------ printing

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            mod = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {mod}")
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

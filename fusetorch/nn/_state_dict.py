"""`Module.state_dict` / `load_state_dict` as PyTorch's protocol: per module
`_save_to_state_dict` and `_load_from_state_dict` (which subclasses override, as detectron2's
FrozenBatchNorm2d and torchvision's layers do, calling super()), extra state through
`get_extra_state`/`set_extra_state` under `<prefix>_extra_state`, each module's version in
`state_dict._metadata`, and the state-dict hooks in PyTorch's places and order."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from ..tracer.autograd import no_grad
from ..tracer.tensor import Tensor
from .parameter import Parameter, is_lazy

EXTRA_STATE = "_extra_state"


def _hooks(module, name: str) -> dict:
    # (a module made without __init__, as an unpickled one, has none)
    return module.__dict__.get(name) or {}


def has_extra_state(module) -> bool:
    from .module import Module
    return type(module).get_extra_state is not Module.get_extra_state


def state_dict(module, destination, prefix: str, keep_vars: bool):
    """The module's entries under `prefix`, its children's after them, into `destination`."""
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()
    local_metadata = {"version": module._version}
    if hasattr(destination, "_metadata"):
        destination._metadata[prefix[:-1]] = local_metadata
    for hook in _hooks(module, "_state_dict_pre_hooks").values():
        hook(module, prefix, keep_vars)
    module._save_to_state_dict(destination, prefix, keep_vars)
    for name, m in module._modules.items():
        if m is not None:
            m.state_dict(destination=destination, prefix=prefix + name + ".",
                         keep_vars=keep_vars)
    for hook in _hooks(module, "_state_dict_hooks").values():
        result = hook(module, destination, prefix, local_metadata)
        if result is not None:  # (the private form's hooks may replace it)
            destination = result
    return destination


def save_to(module, destination, prefix: str, keep_vars: bool) -> None:
    """`Module._save_to_state_dict`: parameters, persistent buffers, extra state."""
    for name, p in module._parameters.items():
        if p is not None:
            destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers:
            destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()
    if has_extra_state(module):
        destination[prefix + EXTRA_STATE] = module.get_extra_state()


def load_from(module, sd, prefix: str, local_metadata: dict, strict: bool, missing: list,
              unexpected: list, errors: list) -> None:
    """`Module._load_from_state_dict`: this module's own entries of `sd` (keys under
    `prefix`), PyTorch's messages appended to `errors`."""
    for hook in _hooks(module, "_load_state_dict_pre_hooks").values():
        hook(sd, prefix, local_metadata, strict, missing, unexpected, errors)
    local = {k: v for k, v in module._parameters.items() if v is not None}
    local.update((k, v) for k, v in module._buffers.items()
                 if v is not None and k not in module._non_persistent_buffers)
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, target in local.items():
        key = prefix + name
        if key not in sd:
            if strict:
                missing.append(key)
            continue
        src = sd[key]
        if is_lazy(target):  # a lazy module takes its shapes from the checkpoint
            if isinstance(src, Tensor) and not is_lazy(src):
                target.materialize(src.shape)
            else:
                continue
        if not isinstance(src, Tensor):
            errors.append(f'While copying the parameter named "{key}", expected torch.Tensor '
                          f"or Tensor-like object from checkpoint but received {type(src)}")
            continue
        if tuple(src.shape) != tuple(target.shape):
            errors.append(f"size mismatch for {key}: copying a param with shape {src.shape} "
                          f"from checkpoint, the shape in current model is {target.shape}.")
            continue
        try:
            with no_grad():
                if assign:
                    if isinstance(target, Parameter):
                        src = src if isinstance(src, Parameter) else \
                            Parameter(src, requires_grad=target.requires_grad)
                        src.requires_grad_(target.requires_grad)
                    setattr(module, name, src)
                else:
                    target.copy_(src)
        except Exception as ex:  # noqa: BLE001  (PyTorch reports any failure of the copy)
            errors.append(f'While copying the parameter named "{key}", whose dimensions in '
                          f"the model are {target.size()} and whose dimensions in the "
                          f"checkpoint are {src.size()}, an exception occurred : {ex.args}.")
    extra = prefix + EXTRA_STATE
    from .module import Module
    if type(module).set_extra_state is not Module.set_extra_state:
        if extra in sd:
            module.set_extra_state(sd[extra])
        elif strict:
            missing.append(extra)
    elif strict and extra in sd:
        unexpected.append(extra)
    if strict:
        for key in sd:
            if key.startswith(prefix) and key != extra:
                head = key[len(prefix):].split(".", 1)
                if len(head) > 1:
                    if head[0] not in module._modules:
                        unexpected.append(key)
                elif head[0] not in local:
                    unexpected.append(key)


def load_state_dict(module, sd, strict: bool, assign: bool, keys_type):
    if not isinstance(sd, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(sd)}.")
    missing: list = []
    unexpected: list = []
    errors: list = []
    metadata = getattr(sd, "_metadata", None)
    sd = OrderedDict(sd)

    def load(m, local_sd: dict, prefix: str = "") -> None:
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        m._load_from_state_dict(local_sd, prefix, local_metadata, True, missing, unexpected,
                                errors)
        for name, child in m._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                load(child, {k: v for k, v in local_sd.items() if k.startswith(child_prefix)},
                     child_prefix)
        keys = keys_type(missing, unexpected)
        for hook in _hooks(m, "_load_state_dict_post_hooks").values():
            if hook(m, keys) is not None:
                raise AssertionError("Hooks registered with ``register_load_state_dict_post_"
                                     "hook`` are not expected to return new values, if "
                                     "incompatible_keys need to be modified, it should be done "
                                     "inplace.")

    load(module, sd)
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in missing) + ". ")
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {module._get_name()}:\n\t"
                           + "\n\t".join(errors))
    return keys_type(missing, unexpected)

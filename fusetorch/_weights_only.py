"""Which classes and functions a checkpoint may name, and PyTorch's words for refusing one.

PyTorch 2.6+ loads with `weights_only=True` by default: its unpickler refuses every global
outside a fixed allowlist unless the user adds it with `torch.serialization.add_safe_globals`
or the `safe_globals` context manager. fusetorch keeps that interface (the registry below is
`fusetorch.serialization`'s) for both formats it reads:

- fusetorch's own files name a class for each stored object (an `nn.Module` and whatever the
  user allowlisted) and may name functions and classes as attribute values (`F.relu` as a
  transformer layer's activation). `resolve` decides what each name may become.
- PyTorch zip checkpoints name globals in their pickle (`checkpoint_formats.torch_zip`).

A name is allowed when it is in the user's safe globals (matched by path, nothing imported)
or, with `weights_only=False` only, when it imports to an `nn.Module` subclass or to one of
fusetorch's public tensor functions. Nothing a file names is ever called during a load
except a safe-global class's `__new__` and `__setstate__` (and, for PyTorch files, a
safe-global function the user listed): with `weights_only=False` PyTorch would run whatever
the pickle says; fusetorch still refuses anything else (`os.system`, `builtins.eval`, ...).
"""
from __future__ import annotations

import importlib
import pickle
import re
from typing import Any, Callable

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
           "WeightsOnlyError"]

# modules PyTorch never allows, even if the user allowlists something from them
BLOCKED_MODULES = ("sys", "os", "posix", "nt")

_SAFE: set = set()  # what the user added: callables, or (callable, "full.path") pairs

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = re.compile(rf"^{_IDENT}(\.{_IDENT})*$", re.ASCII)
MAX_NAME = 1000


# ----------------------------------------------------------------------- the user's registry

def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Mark globals (classes or functions) as safe for `load(..., weights_only=True)`: a
    listed class may be created (`cls.__new__`, then its state set, never its `__init__`) and
    a listed function may be referred to. Each item is the object, or `(object, "full.path")`
    where the path is how the file names it (default `obj.__module__ + "." +
    obj.__qualname__`). For PyTorch zip files, a fusetorch class also matches the `torch.`
    spelling of its path (`fusetorch.nn.modules.linear.Linear` allows
    `torch.nn.modules.linear.Linear`)."""
    global _SAFE
    _SAFE = _SAFE.union(set(safe_globals))


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """The globals the user has marked safe (`add_safe_globals`, open `safe_globals`
    contexts), in no particular order."""
    return list(_SAFE)


def clear_safe_globals() -> None:
    """Forget every global marked safe."""
    global _SAFE
    _SAFE = set()


class safe_globals:
    """Context manager that marks `safe_globals` safe inside its block and removes them after
    (also ones that were already listed, as PyTorch does)."""

    def __init__(self, safe_globals: list[Callable | tuple[Callable, str]]):
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: Any) -> None:
        global _SAFE
        _SAFE = _SAFE - set(self.safe_globals)


def path_of(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def user_allowed() -> dict[str, Any]:
    """Full path -> object for every safe global, with PyTorch's errors for a bad entry."""
    out: dict[str, Any] = {}
    for f in _SAFE:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full "
                                 f"path), but got tuple of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full "
                                f"path, but got: {type(f[1])}")
            out[f[1]] = f[0]
        else:
            out[path_of(f)] = f
    return out


# ------------------------------------------------------------------------ PyTorch's messages

_UNSAFE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
    "`torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to "
    "`False` will likely succeed, but it can result in arbitrary code execution. Do it only if "
    "you got the file from a trusted source.")
_DOCS = ("\n\nCheck the documentation of torch.load to learn more about types accepted by "
         "default with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


class WeightsOnlyError(pickle.UnpicklingError, RuntimeError):
    """A refused checkpoint. PyTorch raises `_pickle.UnpicklingError` for a refused pickle; it
    is also a RuntimeError, as every other damaged or hostile file `fusetorch.load`
    refuses."""


def refuse(detail: str, kind: str = "other") -> WeightsOnlyError:
    """PyTorch 2.13's error (torch/serialization.py): `kind` is "blocked" (a global of a
    blocklisted module), "global" (a global not on the allowlist) or "other" (anything else
    its unpickler refuses)."""
    if kind == "blocked":
        text = f"Weights only load failed. {_UNSAFE}\n\n\n{detail}"
    elif kind == "global":
        text = ("Weights only load failed. This file can still be loaded, to do so you have two "
                "options, \033[1mdo those steps only if you trust the source of the "
                f"checkpoint\033[0m. \n\t(1) {_UNSAFE}\n\t(2) Alternatively, to load with "
                "`weights_only=True` please check the recommended steps in the following error "
                f"message.\n\tWeightsUnpickler error: {detail}")
    else:
        text = (f"Weights only load failed. {_UNSAFE}\nPlease file an issue with the following "
                "so that we can make `weights_only=True` compatible with your use case: "
                f"WeightsUnpickler error: \n\n{detail}")
    return WeightsOnlyError(text + _DOCS)


def blocked(module: str, name: str) -> WeightsOnlyError:
    return refuse(f"Trying to load unsupported GLOBAL {module}.{name} whose module {module} is "
                  "blocked.", "blocked")


def not_allowed(path: str) -> WeightsOnlyError:
    """PyTorch's "Unsupported global" refusal (builtins are named bare, as it does)."""
    if path.startswith("builtins."):
        path = path[len("builtins."):]
    return refuse(f"Unsupported global: GLOBAL {path} was not an allowed global by default. "
                  f"Please use `torch.serialization.add_safe_globals([{path}])` or the "
                  f"`torch.serialization.safe_globals([{path}])` context manager to allowlist "
                  "this global if you trust this class/function.", "global")


def not_rebuildable(path: str, what: str) -> WeightsOnlyError:
    """fusetorch's refusal under `weights_only=False`: PyTorch would unpickle anything; a
    fusetorch file can only name classes and functions, and fusetorch uses only safe ones."""
    return WeightsOnlyError(
        f"fusetorch.load refused {path} ({what}): even with weights_only=False, fusetorch "
        "creates only nn.Module subclasses (through __new__, never __init__) and refers only to "
        "its own tensor functions, so that a file can never make it call anything else. If you "
        f"trust {path}, allowlist it: `torch.serialization.add_safe_globals([{path}])` or the "
        f"`torch.serialization.safe_globals([{path}])` context manager.")


# --------------------------------------------------------------------------------- resolving

def tensor_function(obj: Any) -> bool:
    """One of fusetorch's public tensor functions (`torch.tanh`, `F.relu`, `torch.linalg.*`):
    the values modules keep as attributes (a transformer layer's activation)."""
    import fusetorch
    from fusetorch import linalg
    from fusetorch.nn import functional
    mod = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__name__", None)
    if not (callable(obj) and not isinstance(obj, type) and type(name) is str
            and mod.startswith(("fusetorch.tracer.functional", "fusetorch.nn._functional",
                                "fusetorch.linalg"))):
        return False
    return any(vars(ns).get(name) is obj for ns in (fusetorch, functional, linalg))


def is_module_class(obj: Any) -> bool:
    from fusetorch.nn.module import Module
    return isinstance(obj, type) and issubclass(obj, Module)


def import_path(module: str, qualname: str) -> Any:
    """`module.qualname`, importing `module` (which runs its top-level code if it was not
    imported yet, as `import` would). Raises WeightsOnlyError when it is not there."""
    try:
        obj = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001  (ImportError, or whatever its top level raised)
        raise WeightsOnlyError(f"fusetorch.load: the file names {module}.{qualname}, but "
                               f"module {module!r} cannot be imported ({e})") from None
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:  # noqa: BLE001  (AttributeError, or a module __getattr__'s error)
            raise WeightsOnlyError(f"fusetorch.load: the file names {module}.{qualname}, but "
                                   f"module {module!r} has no such attribute (Can't get "
                                   f"attribute {qualname!r} on {module!r})") from None
    return obj


def check_name(module: Any, qualname: Any) -> bool:
    return (type(module) is str and type(qualname) is str and len(module) <= MAX_NAME
            and len(qualname) <= MAX_NAME and _DOTTED.match(module) is not None
            and _DOTTED.match(qualname) is not None)


def resolve(module: str, qualname: str, weights_only: bool, allowed: dict[str, Any], *,
            construct: bool) -> Any:
    """What `module.qualname` (a checked dotted name) stands for in a fusetorch file: the
    class of an object to create (`construct`), or a value (a function or class) a stored
    object refers to. Safe globals first (by path: nothing is imported); then, only with
    `weights_only=False`, an importable nn.Module subclass, or (values only) one of
    fusetorch's tensor functions. Anything else raises PyTorch's (or, with
    weights_only=False, fusetorch's) refusal."""
    path = f"{module}.{qualname}"
    if module in BLOCKED_MODULES:
        raise blocked(module, qualname)
    if path in allowed:
        obj = allowed[path]
        if construct and not isinstance(obj, type):
            raise refuse(f"Can only create new object for nn.Parameter or classes allowlisted "
                         f"via `add_safe_globals` but got {obj!r:.200}")
        return obj
    if weights_only:
        raise not_allowed(path)
    obj = import_path(module, qualname)
    if is_module_class(obj) or (not construct and tensor_function(obj)):
        return obj
    raise not_rebuildable(path, "the class of a stored object" if construct
                          else "a value a stored object refers to")

"""`torch.hub`: its cache directory is real (`get_dir`, `set_dir`, `$TORCH_HOME/hub`);
downloading models or checkpoints (`load`, `list`, `help`, `load_state_dict_from_url`,
`download_url_to_file`) is out of scope and raises OutOfScopeError."""
from __future__ import annotations

import os

from . import _out_of_scope

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

_hub_dir: str | None = None


def get_dir() -> str:
    """`set_dir`'s directory, else $TORCH_HOME/hub, else $XDG_CACHE_HOME/torch/hub (PyTorch's
    order)."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(
        os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")))
    return os.path.join(home, "hub")


def set_dir(d) -> None:
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _refuse(name: str):
    raise _out_of_scope.OutOfScopeError(
        f"fusetorch does not implement torch.hub.{name}: model hubs and downloads are out of "
        "scope (see README)")


def load(repo_or_dir, model, *args, **kwargs):
    _refuse("load")


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True):  # noqa: A001
    _refuse("list")


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):  # noqa: A001
    _refuse("help")


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    _refuse("load_state_dict_from_url")


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    _refuse("download_url_to_file")

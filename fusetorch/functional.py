"""`torch.functional`: the module PyTorch defines its Python-level tensor functions in
(`torch.functional.einsum`, `.norm`, `.split`, ...): the same functions as `torch.*`."""
from __future__ import annotations

import importlib

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "meshgrid",
           "norm", "split", "tensordot", "unique", "unique_consecutive", "unravel_index", "lu",
           "istft", "stft", "pca_lowrank", "svd_lowrank", "align_tensors"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("fusetorch"), name)  # (torch.<name>, its errors)
    raise AttributeError(f"module 'fusetorch.functional' has no attribute '{name}'")


def __dir__() -> list:
    return sorted(__all__)

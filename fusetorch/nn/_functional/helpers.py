"""nn.functional's helpers and tables that PyTorch exposes beside the ops: `boolean_dispatch`,
`assert_int_or_pair`, grid_sample's mode codes, the documentation notes, the
`__torch_function__` probes, and the `_with_indices` pooling spellings."""
from __future__ import annotations

from typing import Callable

from ...overrides import (handle_torch_function, has_torch_function,  # noqa: F401
                          has_torch_function_unary, has_torch_function_variadic)
from ...tracer.tensor import Tensor
from . import pooling as _pooling

__all__ = ["boolean_dispatch", "assert_int_or_pair", "GRID_SAMPLE_INTERPOLATION_MODES",
           "GRID_SAMPLE_PADDING_MODES", "reproducibility_notes", "sparse_support_notes",
           "tf32_notes", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "BroadcastingList1", "BroadcastingList2", "BroadcastingList3"]

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

# the notes PyTorch's docstrings include (its keys; fusetorch's wording)
reproducibility_notes = {
    "forward_reproducibility_note": "fusetorch's CPU kernels are deterministic: a fixed "
                                    "reduction order whatever the thread count.",
    "backward_reproducibility_note": "fusetorch's backward kernels are deterministic too.",
    "cudnn_reproducibility_note": "fusetorch does not use cuDNN.",
}
sparse_support_notes = {"sparse_beta_warning": "Sparse support is the COO subset of "
                                               "fusetorch.sparse."}
tf32_notes = {"tf32_note": "fusetorch computes float32 products in float32 (no TF32)."}


class _BroadcastingList:
    """`BroadcastingList2[int]`: in annotations, an int or a list of them (TorchScript's)."""

    def __getitem__(self, types):
        return list


BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = _BroadcastingList()


def boolean_dispatch(arg_name: str, arg_index: int, default: bool, if_true: Callable,
                     if_false: Callable, module_name: str | None, func_name: str | None):
    """A function that calls `if_true` or `if_false` by the boolean argument `arg_name`
    (keyword, else position `arg_index`, else `default`): how `max_pool2d` dispatches on
    `return_indices`."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else \
            args[arg_index] if arg_index < len(args) else default
        return (if_true if flag else if_false)(*args, **kwargs)
    if if_true.__doc__ is not None and if_false.__doc__ is not None:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = if_true.__doc__ or if_false.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    return fn


def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def adaptive_max_pool1d_with_indices(input: Tensor, output_size,
                                     return_indices: bool = False) -> tuple:
    """(values, indices) whatever `return_indices` says (PyTorch's)."""
    return _pooling.adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size,
                                     return_indices: bool = False) -> tuple:
    return _pooling.adaptive_max_pool2d(input, output_size, return_indices=True)

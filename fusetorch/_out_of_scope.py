"""PyTorch names fusetorch leaves out on purpose, and the error a script gets when it asks for one.

`fusetorch`, `fusetorch.nn`, `fusetorch.nn.functional` look a missing name up here (their module
`__getattr__`; `Tensor` has a descriptor per listed name instead, tracer/tensor.py): a known out-of-scope name raises `OutOfScopeError`, which says so and
why; any other missing name raises the AttributeError Python (and PyTorch) would. The error
subclasses both NotImplementedError and AttributeError, so `hasattr(torch, "fft")` and
`getattr(torch, "complex64", None)` still answer False / None, as feature probes expect.

The categories are README.md's "Out of scope" list; keep the two equal.
"""
from __future__ import annotations


class OutOfScopeError(NotImplementedError, AttributeError):
    """A PyTorch name fusetorch does not implement by design (see README's "Out of scope")."""


COMPLEX = "complex numbers"
SPARSE = "sparse tensors beyond the COO subset (fusetorch/sparse)"
QUANTIZATION = "quantized tensors and quantization"
FFT = "FFTs and spectral functions"
DTYPES = "dtypes other than fusetorch's ten (float8, wide unsigned integers)"
NESTED = "nested tensors"
DEVICES = "devices other than CPU and CUDA"
COMPILER = ("PyTorch's other compilers and graph capture (FX, export, dynamo, inductor; "
            "fusetorch.compile is fusetorch's own)")
HUB = "model hubs and downloads"
PACKAGE = "torch.package archives"


def _table(**groups: str) -> dict[str, str]:
    return {name: category for category, names in groups.items() for name in names.split()}


# `fusetorch.<name>`
TORCH = {
    **_table(**{
        COMPLEX: "complex view_as_complex view_as_real polar",
        SPARSE: "sparse_csr_tensor sparse_csc_tensor sparse_bsr_tensor sparse_bsc_tensor "
                "sparse_compressed_tensor sparse_csr sparse_csc sparse_bsr sparse_bsc smm hspmm",
        QUANTIZATION: "quantize_per_tensor quantize_per_tensor_dynamic quantize_per_channel "
                      "dequantize per_tensor_affine "
                      "per_channel_affine per_tensor_symmetric per_channel_symmetric ao "
                      "quantization fake_quantize_per_tensor_affine "
                      "fake_quantize_per_channel_affine",
        FFT: "fft stft istft",
        DTYPES: "hash_tensor",  # its result is uint64
        NESTED: "nested",
        COMPILER: "fx export",
        PACKAGE: "package",
    }),
}

# `fusetorch.nn.<name>`
NN = _table(**{QUANTIZATION: "quantized qat intrinsic quantizable"})

# `fusetorch.nn.functional.<name>`: nothing yet, the table is where one would go
FUNCTIONAL: dict[str, str] = {}

# `Tensor.<name>`
TENSOR = _table(**{
    SPARSE: "to_sparse_csr to_sparse_csc to_sparse_bsr to_sparse_bsc crow_indices col_indices "
            "ccol_indices row_indices sparse_mask",
    QUANTIZATION: "q_scale q_zero_point q_per_channel_scales q_per_channel_zero_points "
                  "q_per_channel_axis int_repr dequantize qscheme",
})


def missing(owner: str, shown: str, name: str, table: dict[str, str], obj=None) -> AttributeError:
    """The error for `owner.name` not found: `OutOfScopeError` when `table` lists `name` (the
    message names it as `shown.name`, PyTorch's spelling), else Python's own AttributeError text.
    `owner` is how Python names the object: "module 'fusetorch'" or "'Tensor' object"."""
    category = table.get(name)
    if category is None:
        return AttributeError(f"{owner} has no attribute '{name}'", name=name, obj=obj)
    err = OutOfScopeError(f"fusetorch does not implement {shown}.{name}: {category} are out of "
                          "scope (see README)")
    err.name, err.obj = name, obj  # AttributeError's fields (its keywords do not reach here)
    return err

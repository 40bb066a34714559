"""PyTorch names fusetorch leaves out on purpose raise an error that says so (and is both a
NotImplementedError and an AttributeError, so feature probes keep working); any other
missing name is Python's own AttributeError, worded as PyTorch's."""
import re

import pytest

import fusetorch as torch
from fusetorch import nn
from fusetorch._out_of_scope import NN, TENSOR, TORCH, OutOfScopeError
from fusetorch.nn import functional as F


@pytest.mark.parametrize("name, category", [
    ("complex", "complex numbers"),
    ("view_as_real", "complex numbers"), ("polar", "complex numbers"),
    ("sparse_csr_tensor", "sparse tensors"), ("sparse_bsr", "sparse tensors"),
    ("quantize_per_tensor", "quantized tensors and quantization"),
    ("ao", "quantized tensors and quantization"),
    ("fft", "FFTs and spectral functions"), ("stft", "FFTs and spectral functions"),
    ("nested", "nested tensors"),
    ("package", "torch.package archives"),
    ("fx", "PyTorch's other compilers and graph capture")])
def test_out_of_scope_torch_names_say_so(name, category):
    with pytest.raises(OutOfScopeError) as info:
        getattr(torch, name)
    msg = str(info.value)
    assert msg.startswith(f"fusetorch does not implement torch.{name}: {category}"), msg
    assert msg.endswith("are out of scope (see README)")
    assert isinstance(info.value, NotImplementedError) and isinstance(info.value, AttributeError)
    assert info.value.name == name
    assert not hasattr(torch, name) and getattr(torch, name, None) is None


def test_every_listed_name_is_really_missing_and_raises():
    for owner, table in ((torch, TORCH), (nn, NN), (torch.tensor([1.0]), TENSOR)):
        for name in table:
            with pytest.raises(OutOfScopeError):
                getattr(owner, name)


def test_other_missing_names_are_pythons_attribute_error():
    cases = [(torch, "module 'fusetorch' has no attribute 'no_such_thing'"),
             (nn, "module 'fusetorch.nn' has no attribute 'no_such_thing'"),
             (F, "module 'fusetorch.nn.functional' has no attribute 'no_such_thing'"),
             (torch.ones(1), "'Tensor' object has no attribute 'no_such_thing'"),
             (nn.Parameter(torch.ones(1)), "'Parameter' object has no attribute 'no_such_thing'")]
    for owner, msg in cases:
        with pytest.raises(AttributeError, match="^" + re.escape(msg) + "$") as info:
            owner.no_such_thing
        assert type(info.value) is AttributeError
    with pytest.raises(ImportError):
        from fusetorch import no_such_thing  # noqa: F401
    with pytest.raises(ImportError):
        from fusetorch import fft  # noqa: F401


def test_tensor_and_nn_names():
    x = torch.ones(2)
    with pytest.raises(NotImplementedError, match=re.escape(
            "fusetorch does not implement torch.Tensor.to_sparse_csr: sparse tensors beyond the "
            "COO subset (fusetorch/sparse) are out of scope (see README)")):
        x.to_sparse_csr()
    with pytest.raises(NotImplementedError, match="torch.Tensor.q_scale: quantized tensors"):
        x.q_scale()
    with pytest.raises(NotImplementedError, match="torch.nn.quantized: quantized tensors"):
        nn.quantized
    # what a fusetorch tensor is never: these answer False rather than raise
    assert (x.is_sparse, x.is_quantized, x.is_nested, x.is_complex()) == (False,) * 4
    assert torch.is_complex(x) is False


def test_importing_fx_says_it_is_out_of_scope():
    import importlib
    import sys
    for stmt in ("import fusetorch.fx", "from fusetorch.fx import symbolic_trace",
                 "from fusetorch import fx"):
        with pytest.raises(OutOfScopeError, match=re.escape(
                "fusetorch does not implement torch.fx: PyTorch's other compilers and graph "
                "capture")):
            exec(stmt, {})
        assert "fusetorch.fx" not in sys.modules
    with pytest.raises(OutOfScopeError):
        importlib.import_module("fusetorch.fx")
    assert not hasattr(torch, "fx")


@pytest.mark.parametrize("name, category", [
    ("complex64", "complex numbers"), ("cfloat", "complex numbers"),
    ("float8_e4m3fn", "dtypes other than fusetorch's ten"), ("uint16", "dtypes other than"),
    ("int4", "sub-byte and bits dtypes"), ("bits8", "sub-byte and bits dtypes"),
    ("quint8", "quantized tensors and quantization")])
def test_out_of_scope_dtypes_exist_and_refuse_every_use(name, category):
    d = getattr(torch, name)
    assert isinstance(d, torch.dtype) and repr(d).startswith("torch.")
    x = torch.ones(2)
    for use in (lambda: torch.zeros(2, dtype=d), lambda: x.to(d), lambda: x.type(d),
                lambda: torch.tensor([1.0], dtype=d), lambda: x.sum(dtype=d),
                lambda: torch.promote_types(torch.float32, d), lambda: x.view(d),
                lambda: torch.nn.Linear(2, 2, dtype=d)):
        with pytest.raises(OutOfScopeError, match=re.escape(
                f"fusetorch does not implement {d!r} (asked for by ") + ".*" + re.escape(
                category)):
            use()
    assert torch.cfloat is torch.complex64 and torch.cdouble is torch.complex128
    assert torch.complex64.is_complex and not torch.complex64.is_floating_point
    assert torch.float8_e4m3fn.is_floating_point and torch.float8_e4m3fn.itemsize == 1
    assert not torch.uint16.is_signed and torch.int4.is_signed
    with pytest.raises(RuntimeError, match="Bits types are undefined"):
        torch.bits8.is_signed


def test_importing_quantization_says_it_is_out_of_scope():
    # the quantization tutorials start with `import torch.ao.quantization` or
    # `from torch.quantization import QuantStub`
    import sys
    for stmt in ("import fusetorch.ao.quantization", "from fusetorch.ao.quantization import "
                 "QuantStub", "import fusetorch.quantization", "from fusetorch import ao"):
        with pytest.raises(OutOfScopeError, match="quantized tensors and quantization are out "
                                                  "of scope"):
            exec(stmt, {})
        assert "fusetorch.ao" not in sys.modules and "fusetorch.quantization" not in sys.modules

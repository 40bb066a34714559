"""The flags PyTorch tensors carry (`is_<device>`, layout and representation checks), which
scripts read to pick a code path (the DCGAN example reads `is_xpu`). Expected values are
PyTorch 2.13's for a CPU float tensor, read by hand."""
import pytest

import fusetorch as torch

NEVER = ["is_cuda", "is_mps", "is_xpu", "is_meta", "is_mkldnn", "is_vulkan", "is_ipu", "is_xla",
         "is_mtia", "is_maia", "is_sparse", "is_sparse_csr", "is_quantized", "is_nested"]


@pytest.mark.parametrize("name", NEVER)
def test_device_and_layout_flags_are_false_properties(name):
    x = torch.ones(2, 3)
    assert getattr(x, name) is False
    assert getattr(x.t(), name) is False


def test_is_cpu():
    assert torch.ones(2).is_cpu is True
    assert torch.tensor(1.0).is_cpu is True


def test_representation_checks():
    x = torch.ones(2)
    assert (x.is_conj(), x.is_neg(), x.is_pinned(), x.is_distributed()) == (False,) * 4
    signed = {torch.float32: True, torch.int8: True, torch.int64: True, torch.uint8: False,
              torch.bool: False, torch.bfloat16: True}
    for dtype, want in signed.items():
        assert torch.zeros(1, dtype=dtype).is_signed() is want, dtype
    assert x.is_same_size(torch.zeros(2)) and not x.is_same_size(torch.zeros(1, 2))
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        x.is_same_size(3)


def test_is_nonzero():
    assert torch.tensor(3).is_nonzero() is True
    assert torch.tensor([0.0]).is_nonzero() is False
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        torch.ones(2).is_nonzero()
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        torch.ones(0).is_nonzero()

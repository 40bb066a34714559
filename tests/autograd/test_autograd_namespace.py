"""torch.autograd's module-level helpers scripts call, with PyTorch's defaults (checked by hand
against torch 2.13)."""
import fusetorch as torch


def test_module_level_helpers():
    assert torch.autograd.is_multithreading_enabled() is True
    with torch.autograd.set_multithreading_enabled(False):
        x = torch.ones(2, requires_grad=True)
        (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    assert torch.autograd.is_view_replay_enabled() is False
    assert torch.autograd.kineto_available() is False
    assert torch.autograd.is_tensor_like(torch.ones(1)) and not torch.autograd.is_tensor_like(1)
    assert torch.autograd.has_torch_function((torch.ones(1),)) is False
    assert torch.autograd.handle_torch_function is torch.overrides.handle_torch_function

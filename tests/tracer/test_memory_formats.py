"""torch.memory_format (issue 26): the four formats, and the strides and answers of
contiguous/to/clone/is_contiguous/empty/*_like with memory_format=, as PyTorch 2.13 gives them
(checked by hand). A layout is the array's strides; values never change."""
import pickle

import numpy as np
import pytest

import fusetorch as torch


def _x():
    return torch.arange(24.0).reshape(1, 2, 3, 4)


def test_formats_print_and_pickle_as_pytorchs():
    assert [repr(f) for f in (torch.contiguous_format, torch.preserve_format,
                              torch.channels_last, torch.channels_last_3d)] == \
        ["torch.contiguous_format", "torch.preserve_format", "torch.channels_last",
         "torch.channels_last_3d"]
    assert str(torch.channels_last) == "torch.channels_last"
    assert isinstance(torch.channels_last, torch.memory_format)
    assert pickle.loads(pickle.dumps(torch.channels_last)) is torch.channels_last


def test_channels_last_strides_values_and_gradients():
    x = _x().requires_grad_()
    y = x.contiguous(memory_format=torch.channels_last)
    assert y.stride() == (24, 1, 8, 2)  # N, H, W, C in memory
    assert not y.is_contiguous() and y.is_contiguous(memory_format=torch.channels_last)
    assert not x.is_contiguous(memory_format=torch.channels_last)
    np.testing.assert_array_equal(y.detach().numpy(), np.arange(24.0).reshape(1, 2, 3, 4))
    assert type(y.grad_fn).__name__ == "CloneBackward0"
    w = torch.arange(24.0).reshape(1, 2, 3, 4)
    (y * w).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), w.numpy())
    assert y.contiguous().stride() == (24, 12, 4, 1)
    assert y.contiguous(memory_format=torch.channels_last) is y
    # one channel: already both, returned as it is
    z = torch.ones(2, 1, 3, 4)
    assert z.is_contiguous(memory_format=torch.channels_last)
    assert z.contiguous(memory_format=torch.channels_last).stride() == (12, 12, 4, 1)
    five = torch.ones(1, 2, 3, 4, 5).contiguous(memory_format=torch.channels_last_3d)
    assert five.stride() == (120, 1, 40, 10, 2)


def test_to_clone_and_like_follow_the_format():
    x = _x()
    cl = x.to(memory_format=torch.channels_last)
    assert cl.stride() == (24, 1, 8, 2)
    assert x.to(torch.float64, memory_format=torch.channels_last).stride() == (24, 1, 8, 2)
    assert cl.to(torch.float64).stride() == (24, 1, 8, 2)  # preserve_format
    assert x.clone(memory_format=torch.channels_last).stride() == (24, 1, 8, 2)
    assert cl.clone().stride() == (24, 1, 8, 2)
    assert cl.clone(memory_format=torch.contiguous_format).stride() == (24, 12, 4, 1)
    for like in (torch.empty_like, torch.zeros_like, torch.ones_like, torch.rand_like):
        assert like(cl).stride() == (24, 1, 8, 2)
    assert torch.zeros_like(x, memory_format=torch.channels_last).stride() == (24, 1, 8, 2)
    assert torch.full_like(cl, 2.0).stride() == (24, 1, 8, 2)
    assert torch.full_like(cl, 2.0).tolist() == torch.full((1, 2, 3, 4), 2.0).tolist()
    # preserve_format keeps any dense layout (a transposed one too); tests/tracer/
    # test_modcheck_preserve_format.py holds PyTorch's strides for the other cases
    assert torch.empty_like(torch.ones(3, 4)[:, ::2]).stride() == (2, 1)
    assert torch.ones(3, 4).t().clone().stride() == (1, 4)
    assert torch.empty(1, 2, 3, 4, memory_format=torch.channels_last).stride() == (24, 1, 8, 2)
    m = torch.nn.Conv2d(2, 3, 3).to(memory_format=torch.channels_last)
    assert m.weight.is_contiguous(memory_format=torch.channels_last)
    assert m.bias.stride() == (1,)


def test_compiled_channels_last_matches_eager():
    f = torch.compile(lambda a: (a.contiguous(memory_format=torch.channels_last) * 2).sum(1))
    x = _x()
    np.testing.assert_array_equal(f(x).numpy(), (np.arange(24.0).reshape(1, 2, 3, 4) * 2).sum(1))


@pytest.mark.parametrize("call, err, msg", [
    (lambda: torch.ones(2, 3, 4).contiguous(memory_format=torch.channels_last), RuntimeError,
     "required rank 4 tensor to use channels_last format"),
    (lambda: torch.ones(2, 3, 4, 5).contiguous(memory_format=torch.channels_last_3d),
     RuntimeError, "required rank 5 tensor to use channels_last_3d format"),
    (lambda: _x().to(memory_format=torch.channels_last).contiguous(
        memory_format=torch.preserve_format), RuntimeError,
     "preserve memory format is unsupported by the contiguous operator"),
    (lambda: _x().contiguous(memory_format="channels_last"), TypeError,
     "argument 'memory_format' must be torch.memory_format, not str"),
    (lambda: torch.empty(1, 2, memory_format=torch.preserve_format), RuntimeError,
     "unsupported memory format Preserve"),
])
def test_memory_format_errors_are_pytorchs(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_is_contiguous_of_other_ranks():
    assert _x().contiguous(memory_format=torch.preserve_format).is_contiguous()
    assert not torch.ones(2, 3, 4).is_contiguous(memory_format=torch.channels_last)
    assert _x().is_contiguous(memory_format=torch.preserve_format)

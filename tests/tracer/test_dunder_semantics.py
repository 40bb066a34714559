"""Python-level operators as PyTorch's Tensor defines them (checked by hand in PyTorch 2.13)."""
import numpy as np
import pytest

import fusetorch as torch


def test_reversed_is_a_flip_along_dim_0_not_an_iterator():
    x = torch.arange(6).reshape(3, 2)
    r = reversed(x)
    assert isinstance(r, torch.Tensor)
    np.testing.assert_array_equal(r.numpy(), np.arange(6).reshape(3, 2)[::-1])
    z = torch.tensor(3.0)
    assert reversed(z) is z


@pytest.mark.parametrize("call", [torch.abs, torch.absolute, abs, lambda t: t.abs(),
                                  lambda t: t.abs_()])
def test_abs_of_bool_is_refused_as_pytorch_does(call):
    with pytest.raises(NotImplementedError, match="\"abs_cpu\" not implemented for 'Bool'"):
        call(torch.tensor([True, False]))

"""torch.segment_reduce against numpy float64 loops over the segments (ATen's rule: `initial`
takes part in every segment; an empty one is `initial`, else the identity or NaN for mean),
its gradients by central differences, and PyTorch 2.13's errors, checked by hand."""
import numpy as np
import pytest

import fusetorch as torch

_NP = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}
_EMPTY = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf, "mean": np.nan}


def _ref(a, lengths, reduce, initial):
    out, start = [], 0
    for n in lengths:
        seg = a[start:start + n]
        start += n
        if n == 0:
            out.append(np.full(a.shape[1:], _EMPTY[reduce] if initial is None else initial))
        elif initial is None:
            out.append(_NP[reduce](seg, 0))
        elif reduce == "mean":
            out.append((seg.sum(0) + initial) / n)
        else:
            out.append(_NP[reduce](np.concatenate([seg, np.full((1,) + seg.shape[1:], initial)]),
                                   0))
    return np.array(out)


@pytest.mark.parametrize("reduce", ["sum", "prod", "max", "min", "mean"])
@pytest.mark.parametrize("initial", [None, 0.25])
def test_segment_reduce_matches_numpy(reduce, initial):
    a = np.random.default_rng(0).standard_normal((7, 2))
    lengths = [2, 0, 4, 1, 0]  # (a trailing empty segment too)
    got = torch.segment_reduce(torch.tensor(a), reduce, lengths=torch.tensor(lengths),
                               initial=initial)
    np.testing.assert_allclose(got.numpy(), _ref(a, lengths, reduce, initial), rtol=1e-12)
    off = torch.tensor(np.concatenate([[0], np.cumsum(lengths)]))
    np.testing.assert_allclose(torch.segment_reduce(torch.tensor(a), reduce, offsets=off,
                                                    initial=initial).numpy(),
                               _ref(a, lengths, reduce, initial), rtol=1e-12)
    x = torch.tensor(a, requires_grad=True)  # (an empty max segment is -inf: no differences)
    assert torch.autograd.gradcheck(lambda x: torch.segment_reduce(
        x, reduce, lengths=torch.tensor([2, 1, 4]), initial=initial), (x,))


def test_segment_reduce_axis_and_errors():
    a = np.arange(12.0).reshape(2, 6)
    got = torch.segment_reduce(torch.tensor(a), "sum", lengths=torch.tensor([[2, 4], [3, 3]]),
                               axis=1)
    np.testing.assert_array_equal(got.numpy(), [[1, 14], [21, 30]])
    d = torch.ones(6)
    with pytest.raises(RuntimeError, match="sum to data.size"):
        torch.segment_reduce(d, "sum", lengths=torch.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="negative value"):
        torch.segment_reduce(d, "sum", lengths=torch.tensor([-1, 7]))
    with pytest.raises(RuntimeError, match="got foo"):
        torch.segment_reduce(d, "foo", lengths=torch.tensor([6]))
    with pytest.raises(RuntimeError, match="Either lengths or offsets"):
        torch.segment_reduce(d, "sum")
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.segment_reduce(d.long(), "sum", lengths=torch.tensor([6]))


def test_tied_extremes_share_the_gradient_among_the_data_only():
    x = torch.tensor([1.0, 1.0, 2.0], requires_grad=True)
    torch.segment_reduce(x, "min", lengths=torch.tensor([2, 1]), initial=1.0).sum().backward()
    assert x.grad.tolist() == [0.5, 0.5, 0.0]  # PyTorch's: the initial value takes no share

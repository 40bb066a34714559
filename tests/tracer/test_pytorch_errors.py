"""Bad inputs get PyTorch's exception type and message (issue 26, "Wrong errors"), each
checked by hand against PyTorch 2.13; most were a bare StopIteration, an IndexError or
numpy's own message, or no error at all."""
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F


def _ones(*shape):
    return torch.ones(*shape)


CASES = [
    (lambda: torch.diag_embed(_ones(2, 3), dim1=1, dim2=1), RuntimeError,
     "diagonal dimensions cannot be identical 1, 1"),
    (lambda: torch.movedim(_ones(2, 3, 4), (0, 1), (1, 1)), RuntimeError,
     r"movedim: repeated dim in `destination` \(\[1, 1\]\)"),
    (lambda: torch.movedim(_ones(2, 3, 4), (0, -3), (1, 2)), RuntimeError,
     r"movedim: repeated dim in `source` \(\[0, -3\]\)"),
    (lambda: torch.tensor(1.0).narrow(0, 0, 1), RuntimeError,
     r"narrow\(\) cannot be applied to a 0-dim tensor."),
    (lambda: torch.rot90(_ones(3)), RuntimeError, "expected total dims >= 2, but got total dims = 1"),
    (lambda: torch.hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
    (lambda: torch.vstack([]), RuntimeError, "vstack expects a non-empty TensorList"),
    (lambda: torch.row_stack([]), RuntimeError, "vstack expects a non-empty TensorList"),
    (lambda: torch.dstack([]), RuntimeError, "dstack expects a non-empty TensorList"),
    (lambda: torch.column_stack([]), RuntimeError, "column_stack expects a non-empty TensorList"),
    (lambda: F.max_pool1d(_ones(1, 1, 4), 2, padding=-1), RuntimeError,
     r"max_pool1d\(\) padding must be non-negative, but got -1"),
    (lambda: F.max_pool1d(_ones(1, 1, 4), 2, dilation=0), RuntimeError,
     r"max_pool1d\(\) dilation must be greater than zero, but got 0"),
    (lambda: F.max_pool1d(_ones(1, 1, 4), 2, stride=0), RuntimeError,
     r"max_pool1d\(\) stride must be greater than zero, but got 0"),
    (lambda: F.max_pool1d(_ones(1, 1, 4), 0), RuntimeError,
     r"max_pool1d\(\) kernel_size must be greater than zero, but got 0"),
    (lambda: F.avg_pool1d(_ones(1, 1, 4), 2, padding=-1), RuntimeError,
     "pad must be non-negative, but got pad: -1"),
    (lambda: F.max_pool2d(_ones(1, 1, 4, 4), 2, padding=-1), RuntimeError,
     "pad must be non-negative, but got pad: -1"),
    (lambda: F.max_pool2d(_ones(1, 1, 4, 4), 2, dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
    (lambda: F.adaptive_avg_pool2d(_ones(2, 2), (2, 2)), ValueError,
     "Input dimension should be at least 3"),
    (lambda: F.adaptive_max_pool2d(_ones(2, 2), (2, 2)), ValueError,
     "Input dimension should be at least 3"),
    (lambda: F.adaptive_avg_pool2d(_ones(1, 1, 1, 1), (-1, 0)), RuntimeError,
     r"elements of output_size must be greater than or equal to 0 but received \{-1, 0\}"),
    (lambda: F.adaptive_max_pool2d(_ones(1, 1, 1, 1), (-1, 0)), RuntimeError,
     r"Trying to create tensor with negative dimension -1: \[1, 1, -1, 0\]"),
    (lambda: F.multi_margin_loss(_ones(5, 4), torch.ones(5), reduction="abc"), ValueError,
     "abc is not a valid value for reduction"),
    (lambda: F.multilabel_margin_loss(_ones(5, 4), _ones(5, 4), reduction="abc"), ValueError,
     "abc is not a valid value for reduction"),
    (lambda: F.multilabel_margin_loss(_ones(5, 0), torch.zeros(5, 0, dtype=torch.long)),
     RuntimeError, r"Expected non-empty vector or matrix with optional 0-dim batch size, but "
                   r"got: \[5, 0\]"),
    (lambda: F.rrelu(_ones(3), lower=0.5, upper=0.1), RuntimeError,
     "Lower bound should be less than or equal to the upper bound"),
    (lambda: F.rrelu(_ones(3), lower=0.5, upper=0.1, training=True), RuntimeError,
     "Lower bound should be less than or equal to the upper bound"),
    (lambda: F.triplet_margin_loss(_ones(2, 3), _ones(2, 3), _ones(2, 3), margin=-1), ValueError,
     "margin must be greater than 0, got -1"),
    (lambda: F.rms_norm(_ones(2, 3), ()), RuntimeError,
     "Expected normalized_shape to be at least 1-dimensional"),
    (lambda: torch.linspace(torch.tensor([0.0]), torch.tensor([1.0]), 3), RuntimeError,
     r"linspace only supports 0-dimensional start and end tensors, but got start with 1 "
     r"dimension\(s\) and end with 1 dimension\(s\)."),
    (lambda: torch.logspace(torch.tensor(0.0), torch.tensor([1.0]), 3), RuntimeError,
     "logspace only supports 0-dimensional start and end tensors"),
    (lambda: _ones(2).masked_fill(torch.tensor(False), 1j), RuntimeError,
     "value cannot be converted to type float without overflow"),
    (lambda: F.nll_loss(_ones(2, 3), torch.tensor([0, 1]),
                        weight=torch.ones(3, dtype=torch.float16)), RuntimeError,
     "expected scalar type Float but found Half"),
]


@pytest.mark.parametrize("call, err, msg", CASES)
def test_bad_input_raises_pytorchs_error(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_no_stop_iteration_escapes_into_a_generator():
    def gen():
        yield torch.movedim(_ones(2, 3), (0, 1), (0, 0))
    with pytest.raises(RuntimeError):
        list(gen())


def test_the_valid_neighbours_still_work():
    assert torch.diag_embed(_ones(2, 3), dim1=0, dim2=2).shape == (3, 2, 3)
    assert torch.movedim(torch.zeros(2, 3, 4), (0, 1), (2, 0)).shape == (3, 4, 2)
    assert torch.linspace(torch.tensor(0.0), torch.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    assert F.rrelu(_ones(3), lower=0.2, upper=0.2).tolist() == [1.0, 1.0, 1.0]
    assert F.max_pool1d(torch.arange(4.0).reshape(1, 1, 4), 2, padding=1).tolist() == \
        [[[0.0, 2.0, 3.0]]]

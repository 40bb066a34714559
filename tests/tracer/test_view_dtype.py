"""`Tensor.view(dtype)`: the same bytes read as another dtype (llm.c writes bfloat16 weights
so). Values are numpy's own reinterpretation of the same bytes (an independent reference);
shapes, strides, offsets and errors are PyTorch 2.13's, read by hand."""
import ml_dtypes
import numpy as np
import pytest

import fusetorch as torch

HOW = " to view Float as Double (different element sizes)"


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("dtype,np_dtype", [
    (torch.int32, np.int32), (torch.uint8, np.uint8), (torch.bfloat16, ml_dtypes.bfloat16),
    (torch.int16, np.int16), (torch.float64, np.float64), (torch.int64, np.int64),
    (torch.bool, np.bool_)])
def test_values_are_the_same_bytes(dtype, np_dtype):
    a = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
    if dtype is torch.bool:
        a = np.array([[0, 1], [1, 0]], dtype=np.uint8)
    x = torch.from_numpy(a.copy())
    got = x.view(dtype)
    assert got.dtype is dtype
    want = a.view(np_dtype)
    if dtype is torch.bfloat16:  # no numpy() for bfloat16 (as in PyTorch): compare in float32
        got, want = got.float(), want.astype(np.float32)
    np.testing.assert_array_equal(_np(got), want)


def test_bfloat16_bits_of_one():
    # 1.0f is 0x3F800000: little-endian, its low half 0x0000 (0.0) comes first, then 0x3F80 (1.0)
    assert torch.ones(2).view(torch.bfloat16).float().tolist() == [0.0, 1.0, 0.0, 1.0]
    assert torch.ones(1).view(torch.int32).item() == 0x3F800000


def test_shapes_strides_and_offsets():
    y = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    assert (y.view(torch.float64).shape, y.view(torch.float64).stride()) == ((2, 2), (2, 1))
    assert y.view(torch.uint8).shape == (2, 16)
    v = y[:, :2].view(torch.float64)  # strides (4, 1) -> (2, 1)
    assert (v.shape, v.stride()) == ((2, 1), (2, 1))
    np.testing.assert_array_equal(_np(v), _np(y)[:, :2].copy().view(np.float64))
    t = y.t().view(torch.int32)  # same element size: any strides
    assert (t.shape, t.stride()) == ((4, 2), (1, 4))
    np.testing.assert_array_equal(_np(t), _np(y).T.view(np.int32))
    x = torch.arange(8.0)
    assert (x[2:].view(torch.float64).storage_offset(), x[2:].view(torch.float64).shape) == (1, (3,))
    h = x[1:].view(torch.float16)
    assert (h.storage_offset(), h.shape) == (2, (14,))
    col = torch.zeros(2, 4)[:, :1]  # a size-1 last dim: stride 1
    assert (col.view(torch.float16).shape, col.view(torch.float16).stride()) == ((2, 2), (8, 1))
    assert torch.tensor(1.0).view(torch.int32).shape == ()  # 0-d, same element size
    assert torch.ones(0).view(torch.float64).shape == (0,)
    assert torch.ones(0, 4).view(torch.float64).shape == (0, 2)


def test_shares_memory_and_version():
    x = torch.zeros(4)
    v = x.view(torch.int32)
    v[1] = 0x3F800000
    assert x.tolist() == [0.0, 1.0, 0.0, 0.0] and x._version == v._version == 1
    x[2] = 2.0
    assert v[2].item() == 0x40000000


def test_not_differentiable():
    x = torch.ones(3, requires_grad=True)
    for d in (torch.int32, torch.float32, torch.bfloat16):
        v = x.view(d)
        assert (v.requires_grad, v.is_leaf, v.grad_fn) == (False, True, None)


def test_keywords_and_errors():
    x = torch.arange(4.0)
    assert x.view(dtype=torch.int32).dtype is torch.int32
    assert x.view(size=(2, 2)).shape == (2, 2)
    with pytest.raises(TypeError, match=r"view\(\) received an invalid combination of arguments "
                                        r"- got \(torch.dtype, int\)"):
        x.view(torch.int32, 2)
    y = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    cases = [
        (lambda: torch.arange(6.0).reshape(2, 3).view(torch.float64),
         f"self.size(-1) must be divisible by 2{HOW}, but got 3"),
        (lambda: y[:, 1:3].view(torch.float64),
         f"self.storage_offset() must be divisible by 2{HOW}, but got 1"),
        (lambda: y.t().view(torch.float64), f"self.stride(-1) must be 1{HOW}, but got 4"),
        (lambda: torch.ones(2, 0).view(torch.float64),
         f"self.stride(0) must be divisible by 2{HOW}, but got 1"),
        (lambda: torch.arange(6.0).reshape(2, 3).t().view(torch.float16),
         "self.stride(-1) must be 1 to view Float as Half (different element sizes), but got 3"),
        (lambda: torch.tensor(1.0).view(torch.float16),
         "self.dim() cannot be 0 to view Float as Half (different element sizes)"),
    ]
    for fn, message in cases:
        with pytest.raises(RuntimeError) as e:
            fn()
        assert str(e.value) == message


def test_compile_runs_it_eagerly():
    import warnings
    f = torch.compile(lambda t: t.view(torch.int32) + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            assert f(torch.ones(2)).tolist() == [0x3F800001] * 2


def test_as_strided_of_a_dtype_view_reads_its_storage_in_its_dtype():
    x = torch.arange(1.0, 5.0)
    v = x[1:].view(torch.int16)
    assert v.storage_offset() == 2
    want = np.arange(1.0, 5.0, dtype=np.float32).view(np.int16)
    assert v.as_strided((3,), (2,), 1).tolist() == want[1::2][:3].tolist()

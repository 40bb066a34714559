"""The doors that take strides from outside (from_numpy, as_tensor, tensor, frombuffer,
as_strided) refuse strides kernels cannot index (not a multiple of the item size, negative) and
memory outside the storage, with PyTorch 2.13's errors; what they accept shares memory."""
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.tracer import user_warning

STRUCT = np.zeros(3, dtype=[("a", "u1"), ("b", "<f4")])  # field 'b': byte stride 5
NOT_MULTIPLE = "given numpy array strides not a multiple of the element byte size"
NEGATIVE = "At least one stride in the given numpy array is negative"


@pytest.mark.parametrize("door", [torch.from_numpy, torch.as_tensor, torch.tensor],
                         ids=["from_numpy", "as_tensor", "tensor"])
@pytest.mark.parametrize("array,message", [
    (STRUCT["b"], NOT_MULTIPLE),
    (np.arange(6.0)[::-1], NEGATIVE),
    (np.arange(12.0).reshape(3, 4)[:, ::-2], NEGATIVE),
], ids=["field", "reversed", "reversed_cols"])
def test_numpy_doors_refuse_odd_strides(door, array, message):
    with pytest.raises(ValueError, match=message):
        door(array)


def test_from_numpy_keeps_regular_strides_and_shares_memory(monkeypatch):
    monkeypatch.setattr(user_warning, "_WARNED_ONCE", set())
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    t = torch.from_numpy(a)
    assert t.stride() == (4, 2)
    a[1, 1] = -1.0
    assert t[1, 1].item() == -1.0
    # a stride-0 (broadcast) array is fine: 0 is a multiple of the item size
    with pytest.warns(UserWarning, match="not writable"):
        assert torch.from_numpy(np.broadcast_to(np.arange(3.0), (2, 3))).stride() == (0, 1)


def test_nested_arrays_are_copied_whatever_their_strides():
    t = torch.tensor([STRUCT["b"] + 1])
    assert t.tolist() == [[1.0, 1.0, 1.0]]


def test_read_only_memory_warns_once_per_process_at_the_users_line(monkeypatch):
    # TORCH_WARN_ONCE: PyTorch's text, then silence whatever the filters say
    monkeypatch.setattr(user_warning, "_WARNED_ONCE", set())
    a = np.ones(3)
    a.flags.writeable = False
    for door, text in ((torch.as_tensor, "The given NumPy array is not writable, and PyTorch "
                        "does not support non-writable tensors. This means writing to this "
                        "tensor will result in undefined behavior."),
                       (lambda b: torch.frombuffer(b, dtype=torch.float32), "The given buffer "
                        "is not writable, and PyTorch does not support non-writable tensors. "
                        "This means you can write to the underlying (supposedly non-writable) "
                        "buffer using the tensor.")):
        arg = a if door is torch.as_tensor else bytes(8)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            door(arg)
            door(arg)
            torch.from_numpy(a)
        assert len(seen) == 1 and str(seen[0].message).startswith(text)
        assert str(seen[0].message).endswith("This type of warning will be suppressed for the "
                                             "rest of this program.")
        assert seen[0].filename == __file__


# ---------------------------------------------------------------- frombuffer

def test_frombuffer_shares_the_buffer():
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    t = torch.frombuffer(buf, dtype=torch.float32)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    t[0] = 7.0
    assert np.frombuffer(buf, dtype=np.float32)[0] == 7.0
    assert torch.frombuffer(buf, dtype=torch.float32, count=2, offset=4).tolist() == [1.0, 2.0]
    # a negative count means "all that is left", as in PyTorch
    assert torch.frombuffer(buf, dtype=torch.float32, count=-2).shape == (4,)
    # Python types name dtypes: float is float64 (the 16 bytes are two doubles)
    assert torch.frombuffer(buf, dtype=float).shape == (2,)


def test_frombuffer_requires_grad_only_for_floats():
    buf = bytearray(8)
    assert torch.frombuffer(buf, dtype=torch.float32, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        torch.frombuffer(buf, dtype=torch.int32, requires_grad=True)


@pytest.mark.parametrize("kw,exc,message", [
    (dict(offset=2), ValueError, "buffer length (14 bytes) after offset (2 bytes) must be a "
                                 "multiple of element size (4)"),
    (dict(count=5), ValueError, "requested buffer length (5 * 4 bytes) after offset (0 bytes) "
                                "must not be greater than actual buffer length (16 bytes)"),
    (dict(offset=16), ValueError, "offset (16 bytes) must be non-negative and no greater than "
                                  "buffer length (16 bytes) minus 1"),
    (dict(offset=-1), ValueError, "offset (-1 bytes) must be non-negative"),
    (dict(count=0), ValueError, "both buffer length (16) and count (0) must not be 0"),
    (dict(dtype="float32"), TypeError, "must be torch.dtype, not str"),
])
def test_frombuffer_checks(kw, exc, message):
    buf = bytearray(16)
    kw = {"dtype": torch.float32, **kw}
    with pytest.raises(exc) as info:
        torch.frombuffer(buf, **kw)
    assert message in str(info.value)


def test_frombuffer_refuses_non_buffers_and_strided_buffers():
    with pytest.raises(ValueError, match="does not implement Python buffer protocol"):
        torch.frombuffer([1, 2], dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="could not retrieve buffer"):
        torch.frombuffer(np.arange(8, dtype=np.float32)[::2], dtype=torch.float32)
    with pytest.raises(ValueError, match=r"both buffer length \(0\)"):
        torch.frombuffer(bytearray(), dtype=torch.float32)


# ---------------------------------------------------------------- as_strided

def _reference(storage: np.ndarray, size, stride, offset) -> np.ndarray:
    """Element-by-element: out[i] = storage[offset + sum(i_k * stride_k)]."""
    out = np.empty(size, dtype=storage.dtype)
    for idx in np.ndindex(*size):
        out[idx] = storage[offset + sum(i * s for i, s in zip(idx, stride))]
    return out


@pytest.mark.parametrize("size,stride,offset", [
    ((2, 2), (1, 2), 0), ((2, 2), (1, 2), 1), ((3, 3), (1, 1), 0), ((3,), (2,), 0),
    ((2, 3), (0, 1), 3), ((0,), (100,), 6), ((), (), 5)])
def test_as_strided_values(size, stride, offset):
    storage = np.arange(6.0)
    x = torch.tensor(storage)
    got = torch.as_strided(x, size, stride, offset)
    np.testing.assert_array_equal(got.numpy(), _reference(storage, size, stride, offset))
    assert got.stride() == stride or got.numel() == 0
    assert x.as_strided(size, stride, offset).tolist() == got.tolist()


def test_as_strided_is_a_view_and_offsets_count_from_the_storage():
    x = torch.arange(6.0)
    y = torch.as_strided(x, (2, 2), (1, 2))
    y[0, 0] = 100.0
    assert x[0].item() == 100.0
    v = x[2:]
    assert v.storage_offset() == 2
    # the default offset is the input's own; an explicit one counts from the storage's start
    assert torch.as_strided(v, (2,), (1,)).tolist() == [2.0, 3.0]
    assert torch.as_strided(v, (2,), (1,), 0).tolist() == [100.0, 1.0]


def test_as_strided_over_a_strided_numpy_array():
    """The storage of from_numpy(a[::2]) is the span of its elements (9 doubles for 5)."""
    t = torch.from_numpy(np.arange(10.0)[::2])
    assert torch.as_strided(t, (9,), (1,)).tolist() == list(range(9))
    with pytest.raises(RuntimeError, match="storage size of 80 are out of bounds for storage "
                                           "of size 72"):
        torch.as_strided(t, (10,), (1,))


@pytest.mark.parametrize("args,exc,message", [
    (((2, 2), (-1, 2)), RuntimeError, "as_strided: Negative strides are not supported at the "
                                      "moment, got strides: [-1, 2]"),
    (((3, 3), (3, 1)), RuntimeError, "setStorage: sizes [3, 3], strides [3, 1], storage offset "
     "0, and itemsize 4 requiring a storage size of 36 are out of bounds for storage of size 24"),
    (((2,), (1,), 5), RuntimeError, "storage offset 5, and itemsize 4 requiring a storage size "
                                    "of 28 are out of bounds for storage of size 24"),
    (((2,), (1,), -1), RuntimeError, "Tensor: invalid storage offset -1"),
    (((2, 2), (1,)), RuntimeError, "mismatch in length of strides and shape"),
    (((-1,), (1,)), RuntimeError, "Storage size calculation overflowed with sizes=[-1] and "
                                  "strides=[1]"),
    (((2.0,), (1,)), TypeError, "found element of type float at pos 0"),
    (((2,), (1,), 1.0), TypeError, "argument 'storage_offset' (position 4) must be int, not "
                                   "float"),
])
def test_as_strided_checks(args, exc, message):
    x = torch.arange(6.0, dtype=torch.float32)
    with pytest.raises(exc) as info:
        torch.as_strided(x, *args)
    assert message in str(info.value)


def test_as_strided_needs_a_tensor():
    with pytest.raises(TypeError, match="argument 'input' \\(position 1\\) must be Tensor, "
                                        "not list"):
        torch.as_strided([1.0], (1,), (1,))


def test_as_strided_aliasing_view_refuses_in_place_writes():
    y = torch.as_strided(torch.zeros(3), (2, 3), (0, 1))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        y.add_(1.0)


def _grad_reference(n, size, stride, offset, weights, positions=None):
    """d(sum(out * weights))/d(input): each output element adds its weight to the input element
    at its storage position (if the input holds that position)."""
    positions = list(range(n)) if positions is None else positions
    g = np.zeros(len(positions))
    for idx in np.ndindex(*size):
        p = offset + sum(i * s for i, s in zip(idx, stride))
        if p in positions:
            g[positions.index(p)] += weights[idx]
    return g


@pytest.mark.parametrize("size,stride,offset", [
    ((3, 3), (1, 1), 0), ((2, 2), (1, 2), 1), ((2, 3), (0, 1), 2)])
def test_as_strided_gradient_accumulates_overlaps(size, stride, offset):
    a = torch.arange(6.0, requires_grad=True)
    w = np.random.default_rng(0).standard_normal(size)
    out = torch.as_strided(a, size, stride, offset)
    assert type(out.grad_fn).__name__ == "AsStridedBackward0"
    (out * torch.tensor(w, dtype=torch.float32)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), _grad_reference(6, size, stride, offset, w),
                               rtol=1e-6)


def test_as_strided_gradient_of_non_contiguous_and_offset_inputs():
    a = torch.arange(6.0, requires_grad=True)
    v = a.view(2, 3).t()  # storage positions [[0, 3], [1, 4], [2, 5]]
    torch.as_strided(v, (2, 2), (1, 2), 1).sum().backward()
    # reads positions 1, 2, 3, 4; v holds all six, so each of a[1..4] gets 1
    np.testing.assert_array_equal(a.grad.numpy(), [0, 1, 1, 1, 1, 0])
    a.grad = None
    # v = a[1:] does not hold position 0: that element reads a[0] but sends it no gradient
    torch.as_strided(a[1:], (2,), (2,), 0).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0, 0, 1, 0, 0, 0])


def test_as_strided_gradient_of_an_expanded_input_is_not_supported():
    a = torch.ones(1, 3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="overlap in memory"):
        torch.as_strided(a.expand(2, 3), (3,), (1,))

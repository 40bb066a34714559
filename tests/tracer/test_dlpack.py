"""DLPack against numpy's own implementation: memory shared both ways (a write through one side
is seen by the other), every dtype, non-contiguous and 0-d layouts, bfloat16 (which numpy's
DLPack refuses: carried with the capsule's dtype rewritten), and PyTorch's refusals. PyTorch
2.13 was used by hand to check the same calls and messages; these tests never import it."""
import gc
import warnings

import ml_dtypes
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.tracer import dlpack_capsule as cap
from fusetorch.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack

DTYPES = [(np.bool_, torch.bool), (np.uint8, torch.uint8), (np.int8, torch.int8),
          (np.int16, torch.int16), (np.int32, torch.int32), (np.int64, torch.int64),
          (np.float16, torch.float16), (np.float32, torch.float32),
          (np.float64, torch.float64)]


def _values(np_dtype, shape=(3, 4)):
    return (np.arange(int(np.prod(shape))) % 2).astype(np_dtype).reshape(shape)


@pytest.mark.parametrize("np_dtype,dtype", DTYPES, ids=[str(d) for _, d in DTYPES])
def test_numpy_to_fusetorch_shares_memory(np_dtype, dtype):
    a = _values(np_dtype)
    t = torch.from_dlpack(a)
    assert t.dtype is dtype and tuple(t.shape) == a.shape
    t[1, 2] = 1
    assert a[1, 2] == 1
    a[0, 0] = 1
    assert t[0, 0].item() == 1
    t.zero_()  # an in-place op writes the numpy array's memory
    assert not a.any()


@pytest.mark.parametrize("np_dtype,dtype", DTYPES, ids=[str(d) for _, d in DTYPES])
def test_fusetorch_to_numpy_shares_memory(np_dtype, dtype):
    t = torch.zeros(3, 4, dtype=dtype)
    a = np.from_dlpack(t)
    assert a.dtype == np_dtype and a.shape == (3, 4)
    a[2, 3] = 1
    assert t[2, 3].item() == 1
    t[0, 1] = 1
    assert a[0, 1] == 1


def test_from_dlpack_of_a_fusetorch_tensor_and_of_a_capsule_share_memory():
    t = torch.arange(6.0)
    u = torch.from_dlpack(t)
    v = from_dlpack(to_dlpack(t))
    u[0], v[1] = 10, 20
    assert t.tolist()[:2] == [10.0, 20.0]
    assert t.__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    assert isinstance(t.__dlpack_device__()[0], DLDeviceType)


def test_non_contiguous_layouts_keep_their_strides():
    a = np.arange(24.0).reshape(4, 6)
    for view in (a.T, a[::2, 1::3], a[:, 2]):
        t = torch.from_dlpack(view)
        assert t.stride() == tuple(s // view.itemsize for s in view.strides)
        assert np.shares_memory(t.numpy(), a)
        np.testing.assert_array_equal(t.numpy(), view)
    t = torch.arange(24.0).reshape(4, 6)
    for view in (t.t(), t[::2, 1::3], t.permute(1, 0)[1:]):
        b = np.from_dlpack(view)
        assert tuple(s // b.itemsize for s in b.strides) == view.stride()
        b[0, 0] = -1
        assert view[0, 0].item() == -1


def test_zero_dimensional_both_ways():
    t = torch.from_dlpack(np.array(2.5, dtype=np.float32))
    assert t.shape == () and t.item() == 2.5
    b = np.from_dlpack(torch.tensor(7))
    assert b.shape == () and b.dtype == np.int64 and b == 7


def test_bfloat16_travels_with_the_capsules_dtype_rewritten():
    t = torch.tensor([1.5, -2.0, 3.0], dtype=torch.bfloat16)
    for capsule in (t.__dlpack__(), t.__dlpack__(max_version=(1, 0)), to_dlpack(t)):
        assert cap.dtype_of(capsule) == (cap.BFLOAT, 16, 1)  # kDLBfloat, as PyTorch exports
    u = torch.from_dlpack(to_dlpack(t))
    assert u.dtype is torch.bfloat16 and u.tolist() == [1.5, -2.0, 3.0]
    u[0] = 4.0
    assert t[0].item() == 4.0
    w = torch.from_dlpack(t[::2])
    assert w.tolist() == [4.0, 3.0] and w.stride() == (2,)
    # numpy has no bfloat16 in DLPack: its error, as for a PyTorch bfloat16 tensor
    with pytest.raises(RuntimeError, match="Unsupported dtype in DLTensor"):
        np.from_dlpack(t)
    with pytest.raises(BufferError, match="DLPack only supports"):
        torch.from_dlpack(np.ones(3, dtype=ml_dtypes.bfloat16))


def test_a_tensor_that_requires_grad_is_not_exported():
    x = torch.ones(3, requires_grad=True)
    msg = r"Can't export tensors that require gradient, use tensor.detach\(\)"
    with pytest.raises(BufferError, match=msg):
        x.__dlpack__()
    with pytest.raises(BufferError, match=msg):
        np.from_dlpack(x)
    with pytest.raises(BufferError, match=msg):
        torch.from_dlpack(x * 2)  # a non-leaf too
    b = np.from_dlpack(x.detach())
    b[0] = 5
    assert x[0].item() == 5


def test_stream_rules_on_the_cpu_are_pytorchs():
    t = torch.ones(2)
    with pytest.raises(AssertionError, match="stream should be None on cpu."):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError, match="stream must be ``int`` or ``none``"):
        t.__dlpack__(stream="default")
    t.__dlpack__(stream=-1)
    t.__dlpack__(stream=None)


def test_negative_strides_are_refused_unless_copied():
    a = np.arange(5.0)[::-1]
    with pytest.raises(ValueError, match="negative, and tensors with negative strides"):
        torch.from_dlpack(a)
    t = torch.from_dlpack(a, copy=True)
    assert t.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0] and not np.shares_memory(t.numpy(), a)


def test_copy_and_device_arguments():
    a = np.arange(4.0)
    t = torch.from_dlpack(a, copy=True)
    t[0] = 9
    assert a[0] == 0
    u = torch.from_dlpack(a, copy=False, device="cpu")
    u[0] = 9
    assert a[0] == 9
    c = torch.from_dlpack(to_dlpack(torch.ones(2)), copy=True)  # a capsule, copied after
    assert c.tolist() == [1.0, 1.0]


def test_capsules_are_consumed_once_and_keep_memory_alive():
    t = torch.arange(1000.0)
    capsule = to_dlpack(t)
    u = torch.from_dlpack(capsule)
    with pytest.raises(RuntimeError, match="can be consumed only once"):
        torch.from_dlpack(capsule)
    del t, capsule
    gc.collect()
    assert u.sum().item() == sum(range(1000))  # the producer's memory lives on in u
    a = np.arange(10.0)
    t = torch.from_dlpack(a)
    del a
    gc.collect()
    assert t.tolist() == [float(i) for i in range(10)]


def test_legacy_and_versioned_capsules():
    t = torch.ones(2, 3)
    assert not cap.is_legacy(t.__dlpack__(max_version=(1, 0)))
    assert cap.is_legacy(t.__dlpack__())
    # an expanded view is read-only memory: DLPack 1.0 says so, the legacy format cannot
    e = t[0].expand(4, 3)
    with pytest.raises(BufferError, match="readonly"):
        e.__dlpack__()
    b = np.from_dlpack(e)
    assert not b.flags.writeable and b.strides == (0, 4)
    with pytest.warns(UserWarning, match="read-only"):
        r = torch.from_dlpack(e)
    assert r.stride() == (0, 1)
    # a legacy capsule (PyTorch's to_dlpack) is writable memory: imported writable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = torch.from_dlpack(to_dlpack(t))
    w[0, 0] = 3
    assert t[0, 0].item() == 3


def test_what_cannot_be_imported():
    with pytest.raises(TypeError, match="no dtype for the DLPack tensor's uint16"):
        torch.from_dlpack(np.ones(2, dtype=np.uint16))
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        torch.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="must be Tensor"):
        to_dlpack(np.ones(2))


def test_export_inside_a_compiled_function_is_a_graph_break():
    def f(t):
        return torch.from_dlpack(np.from_dlpack(t * 2)) + 1
    cf = torch.compile(f)
    with pytest.warns(UserWarning, match="graph break.*__dlpack__"):
        out = cf(torch.ones(3))
    assert out.tolist() == [3.0, 3.0, 3.0]

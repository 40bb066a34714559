"""fusetorch.load on hostile files that carry a valid checksum (an attacker recomputes it):
layouts are checked in whole elements against their storage, storage entries may not overlap
(so load allocates about what the file holds), tensors describing far more elements than their
storage are refused unless asked, and bool bytes load as 0 or 1."""
import hashlib
import io
import json
import struct
import tracemalloc
import zlib

import numpy as np
import pytest

import fusetorch as torch
from fusetorch import _load_checks as checks
from fusetorch import serialization as ser

CORRUPT = "^fusetorch.load: .* is corrupted or not a valid fusetorch file"


def forge(header: dict, data: bytes = b"") -> bytes:
    """A file with a correct checksum around an arbitrary header: what an attacker can write."""
    h = json.dumps(header).encode()
    body = ser.MAGIC + struct.pack("<IQQ", ser.VERSION, len(h), len(data)) + h + data
    return body + hashlib.sha256(body).digest()


def entry(**fields) -> dict:
    e = {"kind": "tensor", "dtype": "float32", "device": "cpu", "requires_grad": False,
         "shape": [2], "storage": 0, "offset": 0, "strides": [4]}
    e.update(fields)
    return e


def header(entries: list, storages: list, root=None) -> dict:
    if root is None:
        root = {"list": [{"tensor": i} for i in range(len(entries))]}
    return {"format": "fusetorch", "version": 1, "storages": storages, "tensors": entries,
            "root": root}


def one(data: bytes, **fields) -> bytes:
    """A file holding one tensor over all of `data`."""
    return forge(header([entry(**fields)], [{"offset": 0, "nbytes": len(data)}],
                        root={"tensor": 0}), data)


def load_bytes(blob: bytes):
    return torch.load(io.BytesIO(blob))


def compiled_sum_plus_one(t):
    """(t + 1).sum() through a compiled kernel: the second call runs the C kernel, which is
    what an out-of-bounds layout crashes (the first call traces eagerly)."""
    f = torch.compile(lambda x: (x + 1).sum())
    f(t)
    return f(t).item()


# ------------------------------------------------------------------------------ layouts

F32 = np.arange(16, dtype=np.float32)


@pytest.mark.parametrize("fields, why", [
    # The case: byte extent inside the storage, but a kernel steps -1 element = -4 bytes
    (dict(shape=[16], strides=[-1], offset=15), "not whole elements"),
    (dict(shape=[13], strides=[1], offset=0), "not whole elements"),
    (dict(shape=[2], strides=[6], offset=0), "not whole elements"),
    (dict(shape=[3], strides=[4], offset=2), "not a whole number"),  # misaligned start
    (dict(shape=[], strides=[], offset=61), "not a whole number"),
    (dict(shape=[4], strides=[-4], offset=12), "negative strides"),  # tensors have none
    (dict(shape=[16], strides=[4], offset=4), "reaches elements 1 to 16"),  # one past the end
    (dict(shape=[2, 2], strides=[2 ** 40, 4]), "reaches elements"),  # huge stride
    (dict(shape=[2 ** 32, 2 ** 32], strides=[2 ** 34, 4]), "reaches elements"),  # overflows int64
    (dict(shape=[2], strides=[2 ** 63]), "bad tensor layout"),  # does not fit int64
    (dict(shape=[2 ** 63], strides=[0]), "bad tensor layout"),
    (dict(shape=[2], strides=[4], offset=2 ** 64), "bad tensor layout"),
])
def test_layouts_a_kernel_would_read_outside_of_are_refused(fields, why):
    with pytest.raises(RuntimeError, match=CORRUPT) as e:
        load_bytes(one(F32.tobytes(), **fields))
    assert why in str(e.value)


def test_ndarray_layouts_are_checked_in_elements_too():
    for fields in (dict(shape=[16], strides=[-1], offset=15),  # the case, as numpy
                   dict(shape=[4], strides=[-4], offset=8),    # reaches element -1
                   dict(shape=[2], strides=[8], offset=3)):
        with pytest.raises(RuntimeError, match=CORRUPT):
            load_bytes(one(F32.tobytes(), kind="ndarray", dtype="<f4", **fields))


@pytest.mark.parametrize("fields, reference", [
    (dict(shape=[16], strides=[4]), F32),
    (dict(shape=[4, 3], strides=[16, 4], offset=4), F32.reshape(4, 4)[:, 1:]),
    (dict(shape=[3, 4], strides=[4, 12]), F32[:12].reshape(4, 3).T),
    (dict(shape=[5, 3], strides=[0, 8], offset=40), np.broadcast_to(F32[10::2], (5, 3))),
    (dict(shape=[1, 16], strides=[2 ** 40, 4]), F32[None]),  # a size-1 dim's stride is unused
    (dict(shape=[], strides=[], offset=60), F32[15]),
    (dict(shape=[16], strides=[8], offset=0, dtype="float64"),  # 64 bytes: 8 float64
     None),
])
def test_layouts_on_the_edge_load_and_compiled_kernels_read_them_correctly(fields, reference):
    if reference is None:
        with pytest.raises(RuntimeError, match="reaches elements 0 to 15 of a storage holding 8"):
            load_bytes(one(F32.tobytes(), **fields))
        return
    t = load_bytes(one(F32.tobytes(), **fields))
    np.testing.assert_array_equal(t.numpy(), reference)
    assert compiled_sum_plus_one(t) == float((reference + 1).sum())
    np.testing.assert_array_equal(t.contiguous().numpy(), reference)
    np.testing.assert_array_equal((t + 1).numpy(), reference + 1)


def test_negative_strides_are_kept_for_numpy_arrays():
    a = np.arange(12.0).reshape(3, 4)[::-1, ::-2]
    buf = io.BytesIO()
    torch.save({"a": a}, buf)
    out = load_bytes(buf.getvalue())["a"]
    assert out.strides == a.strides
    np.testing.assert_array_equal(out, a)
    blob = one(F32.tobytes(), kind="ndarray", dtype="<f4", shape=[16], strides=[-4], offset=60)
    np.testing.assert_array_equal(load_bytes(blob), F32[::-1])


def test_numpy_views_that_are_not_whole_elements_save_as_copies():
    base = np.arange(40, dtype=np.uint8)
    odd = [base[1:9].view(np.float32),                        # starts between elements
           base[:15].reshape(3, 5)[:, :4].view(np.float32),    # byte stride 5
           np.array(1.5, dtype=">f8")]                         # 0-d big-endian
    out = load_bytes(_saved(odd))
    for a, b in zip(out, odd):
        assert a.dtype == b.dtype.newbyteorder("=") and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def _saved(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


# ------------------------------------------------------------------------------ allocation

def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def overlapping(n: int, nbytes: int = 1 << 20) -> bytes:
    """n storage entries over the same bytes, each with a tensor over all of it."""
    entries = [entry(dtype="uint8", shape=[nbytes], strides=[1], storage=i) for i in range(n)]
    return forge(header(entries, [{"offset": 0, "nbytes": nbytes}] * n), bytes(nbytes))


def test_overlapping_storage_entries_are_refused_within_the_files_memory():
    blob = overlapping(300)  # loading each entry as a copy took 300 MiB

    def attempt():
        with pytest.raises(RuntimeError, match="storages 0 and 1 overlap"):
            load_bytes(blob)
    assert _peak(attempt) < 3 * len(blob)
    partly = forge(header([entry(), entry(storage=1)],
                          [{"offset": 0, "nbytes": 8}, {"offset": 4, "nbytes": 8}]), bytes(12))
    with pytest.raises(RuntimeError, match="storages 0 and 1 overlap"):
        load_bytes(partly)


def test_empty_storages_and_adjacent_ones_do_not_overlap():
    blob = forge(header([entry(), entry(storage=1), entry(shape=[0], storage=2)],
                        [{"offset": 0, "nbytes": 8}, {"offset": 8, "nbytes": 8},
                         {"offset": 8, "nbytes": 0}]), np.arange(4, dtype=np.float32).tobytes())
    a, b, c = load_bytes(blob)
    assert a.tolist() == [0.0, 1.0] and b.tolist() == [2.0, 3.0] and c.shape == (0,)


def test_many_views_of_one_storage_load_as_views_of_one_buffer():
    x = torch.arange(float(1 << 18))  # 1 MiB
    views = [x[i:] for i in range(300)]
    blob = _saved(views)
    out = []
    assert _peak(lambda: out.append(load_bytes(blob))) < 3 * len(blob)
    loaded = out[0]
    loaded[0][5] = -1.0
    assert all(v[5 - i].item() == -1.0 for i, v in enumerate(loaded[:6]))


def test_a_small_file_describing_huge_tensors_is_refused_unless_asked(monkeypatch):
    # 10**12 float32 elements from one: every reduction over it would run for hours
    blob = one(bytes(4), shape=[10 ** 6, 10 ** 6], strides=[0, 0])
    assert len(blob) < 400
    with pytest.raises(RuntimeError, match="refused the file: tensor 0 has shape .* 1000000000000 "
                                           "elements, .* FUSETORCH_LOAD_MAX_ELEMENTS"):
        load_bytes(blob)
    monkeypatch.setenv(checks.MAX_ELEMENTS_ENV, str(10 ** 12))
    t = load_bytes(blob)
    assert t.shape == (10 ** 6, 10 ** 6) and t.stride() == (0, 0)
    assert t[123, 456].item() == 0.0
    monkeypatch.setenv(checks.MAX_ELEMENTS_ENV, "lots")
    with pytest.raises(ValueError, match="FUSETORCH_LOAD_MAX_ELEMENTS"):
        load_bytes(blob)


def test_element_limit_counts_past_the_storage_and_empty_tensors_largest_slice(monkeypatch):
    monkeypatch.setenv(checks.MAX_ELEMENTS_ENV, "100")
    assert load_bytes(one(bytes(4), shape=[10, 10], strides=[0, 0])).shape == (10, 10)
    with pytest.raises(RuntimeError, match="101 elements"):
        load_bytes(one(bytes(4), shape=[101], strides=[0]))
    big = np.arange(1000, dtype=np.float32)  # more elements than the limit, all in the file
    np.testing.assert_array_equal(load_bytes(_saved(torch.from_numpy(big))).numpy(), big)
    with pytest.raises(RuntimeError, match="1000000 elements"):  # a sum(0) would fill 10**6
        load_bytes(one(b"", shape=[0, 10 ** 6], strides=[4, 4]))


# ------------------------------------------------------------------------------ bool bytes

def test_bool_bytes_other_than_0_and_1_load_as_true():
    raw = bytes([0, 1, 2, 254, 255, 0, 128, 1])
    t = load_bytes(one(raw, dtype="bool", shape=[8], strides=[1]))
    assert t.tolist() == [False, True, True, True, True, False, True, True]
    assert t.numpy().view(np.uint8).tolist() == [0, 1, 1, 1, 1, 0, 1, 1]
    assert t.sum().item() == 6 and compiled_sum_plus_one(t.float()) == 14.0
    assert compiled_sum_plus_one(t) == 14
    a = load_bytes(one(raw, kind="ndarray", dtype="|b1", shape=[8], strides=[1]))
    assert a.view(np.uint8).tolist() == [0, 1, 1, 1, 1, 0, 1, 1]


def test_a_bool_view_sharing_bytes_with_another_dtype_leaves_that_dtype_alone():
    raw = bytes([0, 1, 2, 254])
    entries = [entry(dtype="uint8", shape=[4], strides=[1]),
               entry(dtype="bool", shape=[4], strides=[1])]
    u, b = load_bytes(forge(header(entries, [{"offset": 0, "nbytes": 4}]), raw))
    assert u.tolist() == [0, 1, 2, 254] and b.tolist() == [False, True, True, True]
    assert b.numpy().view(np.uint8).tolist() == [0, 1, 1, 1]
    # when the bool view's bytes are already 0 or 1 the two stay views of one buffer
    u, b = load_bytes(forge(header(entries, [{"offset": 0, "nbytes": 4}]), bytes([0, 1, 1, 0])))
    u[0] = 1
    assert b[0].item() is True


def test_saved_bool_tensors_and_numpy_bool_views_round_trip():
    t = torch.tensor([True, False, True])
    u8 = np.array([0, 1, 2], dtype=np.uint8)
    out = load_bytes(_saved({"t": t, "v": u8.view(np.bool_), "u": u8}))
    assert out["t"].tolist() == [True, False, True]
    assert out["u"].tolist() == [0, 1, 2] and out["v"].tolist() == [False, True, True]


# ------------------------------------------------------------------------------ time

def test_keys_flooding_one_hash_are_refused():
    # ints hash to themselves modulo 2**61 - 1: these 20,000 distinct keys share one hash, so
    # building the dict compared each new key with all before it (seconds; hours for big files)
    m = 2 ** 61 - 1
    keys = [i * m for i in range(20_000)]
    assert len({hash(k) for k in keys}) == 1
    for root in ({"dict": [[k, 0] for k in keys]}, {"set": keys},
                 {"odict": [[k, 0] for k in keys[:100]]},
                 {"frozenset": [2.0 ** (61 * j) for j in range(-16, 17)]}):  # floats too
        with pytest.raises(RuntimeError, match="keys share one hash"):
            load_bytes(forge(header([], [], root=root)))
    few = {"dict": [[k, i] for i, k in enumerate(keys[:checks.MAX_SAME_HASH])]}
    assert load_bytes(forge(header([], [], root=few))) == {
        k: i for i, k in enumerate(keys[:checks.MAX_SAME_HASH])}


# ------------------------------------------------------------------------------ PyTorch zips

def _zip_header(name: bytes, crc: int, size: int) -> bytes:
    return struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, size, size,
                       len(name), 0) + name


def _zip_central(name: bytes, crc: int, size: int, offset: int) -> bytes:
    return struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, size, size,
                       len(name), 0, 0, 0, 0, 0, offset) + name


def _storage_pickle(numels: list) -> bytes:
    """A protocol-2 data.pkl: a list of uint8 tensors, tensor i over all of storage `0000i`."""
    out = [b"\x80\x02]("]
    for i, n in enumerate(numels):
        key, size = f"{i:05d}".encode(), struct.pack("<i", n)
        out.append(b"ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
                   b"ctorch\nByteStorage\nX\x05\x00\x00\x00" + key + b"X\x03\x00\x00\x00cpuJ" +
                   size + b"tQK\x00J" + size + b"\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR")
    return b"".join(out) + b"e."


def overlapping_zip(n: int, nbytes: int) -> bytes:
    """A PyTorch zip checkpoint whose n storage records overlap: record i's data is the local
    headers of records i+1.. and then `nbytes` shared bytes, each with a correct CRC. Read one
    by one, the records take about n times the file."""
    names = [f"a/data/{i:05d}".encode() for i in range(n)]
    tail, headers = bytes(nbytes), []
    for name in reversed(names):
        headers.insert(0, _zip_header(name, zlib.crc32(tail), len(tail)))
        tail = headers[0] + tail
    blob, entries, sizes, offset = bytearray(tail), [], [], 0
    for name, h in zip(names, headers):
        data = tail[offset + len(h):]
        entries.append(_zip_central(name, zlib.crc32(data), len(data), offset))
        sizes.append(len(data))
        offset += len(h)
    for name, data in ((b"a/data.pkl", _storage_pickle(sizes)), (b"a/byteorder", b"little")):
        entries.append(_zip_central(name, zlib.crc32(data), len(data), len(blob)))
        blob += _zip_header(name, zlib.crc32(data), len(data)) + data
    start = len(blob)
    blob += b"".join(entries)
    blob += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                        len(blob) - start, start, 0)
    return bytes(blob)


def test_pytorch_zip_records_sharing_bytes_are_refused_within_the_files_memory():
    blob = overlapping_zip(300, 1 << 20)  # each record read as its own copy took 303 MiB

    def attempt():
        with pytest.raises(RuntimeError, match="overlaps the next one"):
            load_bytes(blob)
    assert _peak(attempt) < 3 * len(blob)
    # the same builder without overlaps (one record) is a valid checkpoint
    t, = load_bytes(overlapping_zip(1, 1000))
    assert t.shape == (1000,) and t.sum().item() == 0


def test_damaged_pytorch_zip_records_raise_runtime_error():
    buf = io.BytesIO()
    torch.save({"w": torch.arange(6.0)}, buf, format="torch")
    blob = buf.getvalue()
    pkl = blob.find(b"_rebuild_tensor_v2")
    bad_crc = blob[:pkl] + b"X" + blob[pkl + 1:]  # data.pkl's bytes no longer match its CRC
    name = blob.find(b"data.pkl")
    bad_name = blob[:name] + b"x" + blob[name + 1:]  # local header's name differs
    for damaged in (bad_crc, bad_name):
        with pytest.raises(RuntimeError, match="PytorchStreamReader failed reading file"):
            load_bytes(damaged)


def test_safetensors_empty_tensors_count_their_largest_slice(monkeypatch):
    def file(shape):
        text = json.dumps({"e": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}})
        return len(text).to_bytes(8, "little") + text.encode()
    with pytest.raises(RuntimeError, match="1099511627776 elements, .* FUSETORCH_LOAD_MAX"):
        load_bytes(file([0, 2 ** 40]))  # `sum(0)` would fill 2**40 elements
    assert load_bytes(file([0, 3]))["e"].shape == (0, 3)
    monkeypatch.setenv(checks.MAX_ELEMENTS_ENV, str(2 ** 40))
    assert load_bytes(file([0, 2 ** 40]))["e"].shape == (0, 2 ** 40)

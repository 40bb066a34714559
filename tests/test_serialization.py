"""fusetorch.save / fusetorch.load: exact round trips, shared storage, and files that are
truncated, damaged, foreign or hostile raising RuntimeError (the format holds no code)."""
import collections
import hashlib
import io
import json
import math
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fusetorch as torch
from fusetorch import serialization as ser

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.float32, torch.float64]


def roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kw)


def saved_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def load_bytes(data: bytes):
    return torch.load(io.BytesIO(data))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes (so nan payloads and -0.0 count)."""
    return a.dtype == b.dtype and a.shape == b.shape \
        and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def sample(dtype, shape, rng):
    npdt = np.dtype(dtype.name if dtype is not torch.bool else "bool")
    if dtype is torch.bool:
        a = rng.random(shape) < 0.5
    elif npdt.kind in "iu":
        info = np.iinfo(npdt)
        a = rng.integers(info.min, info.max, size=shape, dtype=npdt, endpoint=True)
        if a.size >= 2:
            a.flat[0], a.flat[1] = info.min, info.max
    else:
        a = rng.standard_normal(shape).astype(npdt)
        if a.size >= 4:
            a.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return torch.from_numpy(np.asarray(a, dtype=npdt))


# ------------------------------------------------------------------------------ round trips

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4), (3, 0, 2)], ids=str)
def test_every_dtype_and_shape_round_trips_bit_exactly(dtype, shape):
    t = sample(dtype, shape, np.random.default_rng(len(shape)))
    out = roundtrip(t)
    assert type(out) is torch.Tensor
    assert out.dtype == dtype and tuple(out.shape) == shape and not out.requires_grad
    assert same_bits(out.numpy(), t.numpy())
    out.numpy()[...] = 0  # loaded memory is owned and writable


def test_views_keep_layout_and_share_one_storage():
    x = torch.arange(24.).reshape(4, 6)
    views = [x, x.t(), x[1], x[:, ::2], x[2:, 1:4], x[0].unsqueeze(0).expand(3, 6), x]
    out = roundtrip(views)
    for a, b in zip(out, views):
        assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert out[0] is out[6]  # the same tensor twice loads as one object
    out[0][1, 2] = -1.0  # and the views see writes through the base, as before saving
    assert out[1][2, 1].item() == -1.0 and out[2][2].item() == -1.0
    assert out[3][1, 1].item() == -1.0


def test_a_small_view_saves_only_the_bytes_it_covers():
    big = torch.zeros(100_000)
    assert len(saved_bytes(big[10:20])) < 2_000


def test_parameters_and_requires_grad():
    p = torch.nn.Parameter(torch.randn(3, 2))
    frozen = torch.nn.Parameter(torch.randn(2), requires_grad=False)
    leaf = torch.randn(4, requires_grad=True)
    nonleaf = leaf * 2
    out = roundtrip({"p": p, "frozen": frozen, "leaf": leaf, "nonleaf": nonleaf,
                     "ints": torch.arange(3)})
    assert type(out["p"]) is torch.nn.Parameter and out["p"].requires_grad
    assert type(out["frozen"]) is torch.nn.Parameter and not out["frozen"].requires_grad
    assert type(out["leaf"]) is torch.Tensor and out["leaf"].requires_grad
    assert out["nonleaf"].requires_grad and out["nonleaf"].is_leaf  # as PyTorch loads it
    assert not out["ints"].requires_grad
    np.testing.assert_array_equal(out["p"].detach().numpy(), p.detach().numpy())


class Small(torch.nn.Module):
    """A model built from parameters, a buffer and a submodule (no library layers needed)."""

    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(3, 5))
        self.b1 = torch.nn.Parameter(torch.randn(5))
        self.register_buffer("scale", torch.rand(5) + 0.5)
        self.head = Head()

    def forward(self, x):
        return self.head(torch.tanh(x @ self.w1 + self.b1) * self.scale)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5, 2, dtype=torch.float64))
        self.register_buffer("steps", torch.tensor(7))

    def forward(self, x):
        return x.double() @ self.w


def test_state_dict_round_trip_reproduces_outputs_exactly(tmp_path):
    torch.manual_seed(1)
    m = Small()
    x = torch.randn(8, 3)
    want = m(x).detach().numpy()
    path = tmp_path / "model.pt"
    torch.save(m.state_dict(), path)
    torch.manual_seed(2)
    fresh = Small()
    assert not np.array_equal(fresh(x).detach().numpy(), want)
    sd = torch.load(path)
    assert type(sd) is collections.OrderedDict
    assert list(sd) == ["w1", "b1", "scale", "head.w", "head.steps"]
    assert sd["head.steps"].dtype == torch.int64 and sd["head.w"].dtype == torch.float64
    fresh.load_state_dict(sd)
    assert np.array_equal(fresh(x).detach().numpy(), want)
    assert fresh.head.steps.item() == 7


def test_optimizer_like_state_round_trips():
    state = {
        "state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.randn(3, 2),
                      "exp_avg_sq": torch.rand(3, 2), "momentum_buffer": None},
                  1: {"step": torch.tensor(3.0), "exp_avg": torch.randn(2)}},
        "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08,
                          "weight_decay": 0, "amsgrad": False, "maximize": False,
                          "foreach": None, "capturable": False, "differentiable": False,
                          "fused": None, "params": [0, 1], "name": "encoder"}],
    }
    out = roundtrip(state)
    assert list(out["state"]) == [0, 1] and all(type(k) is int for k in out["state"])
    g = out["param_groups"][0]
    assert g == {k: v for k, v in state["param_groups"][0].items()}
    assert type(g["betas"]) is tuple and type(g["weight_decay"]) is int
    assert type(g["amsgrad"]) is bool and g["eps"] == 1e-08
    for k in (0, 1):
        for name, t in state["state"][k].items():
            if t is None:
                assert out["state"][k][name] is None
            else:
                assert same_bits(out["state"][k][name].numpy(), t.numpy())


def test_python_values_and_torch_objects():
    obj = {"big": 2 ** 100, "neg": -7, "nan": math.nan, "inf": -math.inf, "negzero": -0.0,
           "tiny": 5e-324, "text": "ünï 😀 \u2028", "bytes": b"\x00\xff",
           "ba": bytearray(b"ab"), "c": 1 + 2j, "set": {3, 1, 2}, "fs": frozenset({"a"}),
           "none": None, "t": True,
           "dtype": torch.float16, "dev": torch.device("cpu"), "size": torch.Size([2, 3]),
           "np": np.arange(6, dtype=np.int16).reshape(2, 3), "npf": np.float32(1.5),
           ("tuple", 1): [[], (), {}], None: 0, 3.5: "float key",
           "dd": collections.defaultdict(list, {"a": [1]})}
    out = roundtrip(obj)
    assert list(out) == list(obj)
    for k, v in obj.items():
        got = out[k]
        assert type(got) is type(v), k
        if k == "nan":
            assert math.isnan(got)
        elif k == "negzero":
            assert math.copysign(1.0, got) == -1.0
        elif k == "np":
            assert got.dtype == np.int16 and np.array_equal(got, v)
        else:
            assert got == v, k
    assert out["dd"].default_factory is list


def test_paths_file_objects_and_map_location(tmp_path):
    t = torch.arange(5.)
    torch.save(t, str(tmp_path / "a.pt"))
    torch.save(t, Path(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as f:
        torch.save(t, f)
    for name in ("a.pt", "b.pt", "c.pt"):
        for loc in (None, "cpu", torch.device("cpu"), {"cpu": "cpu"},
                    lambda tensor, where: tensor):
            out = torch.load(tmp_path / name, map_location=loc)
            assert out.device == torch.device("cpu") and out.tolist() == t.tolist()
    assert torch.load(tmp_path / "a.pt", weights_only=False).tolist() == t.tolist()
    with open(tmp_path / "a.pt", "rb") as f:
        assert torch.load(f).tolist() == t.tolist()
    with pytest.raises(TypeError, match="map_location should be"):
        torch.load(tmp_path / "a.pt", map_location=3)


def test_two_objects_in_one_stream():
    buf = io.BytesIO()
    torch.save(torch.tensor([1]), buf)
    torch.save({"b": 2}, buf)
    buf.seek(0)
    assert torch.load(buf).tolist() == [1] and torch.load(buf) == {"b": 2}


# ------------------------------------------------------------------------------ what is refused

class Point(collections.namedtuple("Point", "x y")):
    pass


@pytest.mark.parametrize("bad, type_name", [
    (lambda: 1, "builtins.function"),
    (object(), "builtins.object"),
    (Point(1, 2), "test_serialization.Point"),
    (print, "builtins.builtin_function_or_method"),
    (np.array(["a"]), None),
    (np.array([object()]), None),
])
def test_unsupported_objects_raise_at_save_naming_the_type(bad, type_name):
    with pytest.raises(TypeError) as e:
        torch.save({"a": [1, bad]}, io.BytesIO())
    text = str(e.value)
    assert "obj['a'][1]" in text
    if type_name is not None:
        assert f"'{type_name}'" in text


def test_cycles_and_odd_defaultdicts_are_refused():
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="reference cycle"):
        torch.save({"x": loop}, io.BytesIO())
    with pytest.raises(TypeError, match="default_factory"):
        torch.save(collections.defaultdict(lambda: 0), io.BytesIO())


# ------------------------------------------------------------------------------ damaged files

SAMPLE = {"w": torch.randn(4, 3), "b": torch.arange(3), "meta": {"lr": 0.1, "name": "x"}}


def test_truncated_files_raise():
    data = saved_bytes(SAMPLE)
    for n in sorted({0, 1, 5, 13, 14, 20, 33, 34, 100, len(data) // 2, len(data) - 33,
                     len(data) - 1}):
        with pytest.raises(RuntimeError, match="^fusetorch.load: "):
            load_bytes(data[:n])


def test_one_flipped_byte_in_each_part_raises():
    data = saved_bytes(SAMPLE)
    hlen = struct.unpack_from("<Q", data, 18)[0]
    for pos in (0, 13, 14, 18, 26, 34, 34 + hlen // 2, 34 + hlen + 5, len(data) - 40,
                len(data) - 1):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        with pytest.raises(RuntimeError, match="^fusetorch.load: "):
            load_bytes(bytes(bad))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_single_byte_change_raises(data_st):
    data = saved_bytes(SAMPLE)
    pos = data_st.draw(st.integers(0, len(data) - 1))
    value = data_st.draw(st.integers(0, 255).filter(lambda v: v != data[pos]))
    bad = bytearray(data)
    bad[pos] = value
    with pytest.raises(RuntimeError, match="^fusetorch.load: "):
        load_bytes(bytes(bad))


def test_random_empty_zip_and_padded_files_raise(tmp_path):
    rng = np.random.default_rng(0)
    for blob in (rng.bytes(1000), b"", b"PK\x03\x04" + rng.bytes(60), ser.MAGIC[:5]):
        with pytest.raises(RuntimeError, match="^fusetorch.load: "):
            load_bytes(blob)
    with pytest.raises(RuntimeError, match="zip archive"):
        load_bytes(b"PK\x03\x04" + rng.bytes(60))
    path = tmp_path / "padded.pt"
    path.write_bytes(saved_bytes(SAMPLE) + b"\x00")
    with pytest.raises(RuntimeError, match="unexpected bytes after the end"):
        torch.load(path)
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        data = bytearray(saved_bytes(SAMPLE))
        data[-40] ^= 1
        load_bytes(bytes(data))


def forge(header: dict, data: bytes = b"") -> bytes:
    """A file with a correct checksum around an arbitrary header: what an attacker can write."""
    h = json.dumps(header).encode()
    body = ser.MAGIC + struct.pack("<IQQ", ser.VERSION, len(h), len(data)) + h + data
    return body + hashlib.sha256(body).digest()


def tensor_header(**entry):
    e = {"kind": "tensor", "dtype": "float32", "device": "cpu", "requires_grad": False,
         "shape": [2], "storage": 0, "offset": 0, "strides": [4]}
    e.update(entry)
    return {"format": "fusetorch", "version": 1, "storages": [{"offset": 0, "nbytes": 8}],
            "tensors": [e], "root": {"tensor": 0}}


def test_forged_files_are_checked_field_by_field():
    assert load_bytes(forge(tensor_header(), bytes(8))).tolist() == [0.0, 0.0]
    bad_headers = [
        tensor_header(offset=4),  # reads past its storage
        tensor_header(strides=[-4]),
        tensor_header(shape=[2 ** 40], strides=[4]),
        tensor_header(dtype="object"),
        tensor_header(kind="ndarray", dtype="|O8"),
        tensor_header(kind="pickle"),
        tensor_header(requires_grad=True, dtype="int32"),
        tensor_header(storage=3),
        tensor_header(shape=[2, 1], strides=[4]),
        dict(tensor_header(), storages=[{"offset": 0, "nbytes": 9}]),
        dict(tensor_header(), root={"__reduce__": ["os.system", ["echo hi"]]}),
        dict(tensor_header(), root={"dict": [[[1], 2]]}),  # an unhashable key
        dict(tensor_header(), format="other"),
        [1, 2, 3],
    ]
    for header in bad_headers:
        with pytest.raises(RuntimeError, match="^fusetorch.load: .* is corrupted or not a "
                                               "valid fusetorch file"):
            load_bytes(forge(header, bytes(8)))


def test_forged_deep_nesting_and_bad_utf8_raise():
    deep = {"format": "fusetorch", "version": 1, "storages": [], "tensors": []}
    root = 0
    for _ in range(100_000):
        root = {"list": [root]}
    with pytest.raises(RecursionError):
        json.dumps(root)  # too deep even to write with json: build the text by hand
    text = json.dumps(deep)[:-1] + ', "root": ' + '{"list": [' * 100_000 + "0" \
        + "]}" * 100_000 + "}"
    body = ser.MAGIC + struct.pack("<IQQ", 1, len(text), 0) + text.encode()
    with pytest.raises(RuntimeError, match="^fusetorch.load: "):
        load_bytes(body + hashlib.sha256(body).digest())
    body = ser.MAGIC + struct.pack("<IQQ", 1, 2, 0) + b"\xff\xfe"
    with pytest.raises(RuntimeError, match="^fusetorch.load: "):
        load_bytes(body + hashlib.sha256(body).digest())


def test_load_a_missing_file():
    with pytest.raises(FileNotFoundError):
        torch.load(os.path.join("no", "such", "file.pt"))


def test_optimizer_state_round_trip_resumes_identically(tmp_path):
    """Save model + Adam/SGD-momentum state mid-training, load into fresh objects, and the next
    steps match an uninterrupted run exactly."""
    import fusetorch.nn as nn

    def make(seed):
        torch.manual_seed(seed)
        m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        return m, [torch.optim.Adam(m[0].parameters(), lr=1e-2),
                   torch.optim.SGD(m[2].parameters(), lr=1e-2, momentum=0.9)]

    x, y = torch.randn(16, 4), torch.randn(16, 1)

    def train(m, opts, steps):
        for _ in range(steps):
            loss = ((m(x) - y) ** 2).mean()
            for o in opts:
                o.zero_grad()
            loss.backward()
            for o in opts:
                o.step()

    m1, o1 = make(0)
    train(m1, o1, 3)
    path = tmp_path / "ckpt.ft"
    torch.save({"model": m1.state_dict(), "opts": [o.state_dict() for o in o1]}, path)
    train(m1, o1, 3)

    m2, o2 = make(1)  # different initial weights: everything must come from the file
    ck = torch.load(path)
    m2.load_state_dict(ck["model"])
    for o, sd in zip(o2, ck["opts"]):
        o.load_state_dict(sd)
    train(m2, o2, 3)
    for a, b in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())

"""PyTorch zip checkpoints and safetensors files: loading the fixtures a real PyTorch 2.13 wrote
(tests/fixtures/make_fixtures.py), refusing hostile and damaged files without running anything,
and writing files in both formats (checked by hand to open in PyTorch; here by re-reading them
and, for safetensors, with the package's own numpy reader)."""
import collections
import io
import json
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.checkpoint_formats import WeightsOnlyError
from fusetorch.utils import safetensors as st

FIX = os.path.join(os.path.dirname(__file__), "fixtures")


def fixture(name: str) -> str:
    return os.path.join(FIX, name)


def host(t) -> np.ndarray:
    return t._host()


# The values make_fixtures.py put in, derived independently of the files
BASE = np.arange(12, dtype=np.float64) * 0.5
VIEW = BASE[2:].reshape(2, 5).T
HALF = np.array([1.5, -2.25, 65504.0])
MASK = np.array([True, False, True, True])


def check_extra_entries(sd) -> None:
    assert sd["half"].dtype == torch.float16 and np.array_equal(host(sd["half"]), HALF)
    assert sd["mask"].dtype == torch.bool and np.array_equal(host(sd["mask"]), MASK)
    assert sd["base"].dtype == torch.float32 and np.array_equal(host(sd["base"]), BASE)
    assert sd["1.num_batches_tracked"].dtype == torch.int64
    assert sd["1.num_batches_tracked"].shape == () and sd["1.num_batches_tracked"].item() == 1
    assert sd["0.weight"].shape == (2, 3) and sd["0.bias"].shape == (2,)
    # one training step of BatchNorm from its defaults moves the running stats
    assert not np.array_equal(host(sd["1.running_var"]), np.ones(2))


# ---------------------------------------------------------------------- PyTorch checkpoints

def test_loads_a_pytorch_state_dict():
    sd = torch.load(fixture("torch_state_dict.pt"))
    assert type(sd) is collections.OrderedDict
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                        "1.running_var", "1.num_batches_tracked", "half", "mask", "base",
                        "view"]
    assert sd._metadata == {"": {"version": 1}, "0": {"version": 1}, "1": {"version": 2}}
    check_extra_entries(sd)
    assert np.array_equal(host(sd["view"]), VIEW)
    # the view and its base share one storage again, as they did in PyTorch
    assert np.shares_memory(host(sd["view"]), host(sd["base"]))
    sd["base"][2] = 100.0
    assert sd["view"][0, 0].item() == 100.0
    assert all(not t.requires_grad for t in sd.values())


def test_state_dict_loads_into_a_module():
    sd = torch.load(fixture("torch_state_dict.pt"))
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m.load_state_dict({k: v for k, v in sd.items() if k[0] in "01"})
    m.eval()
    x = np.array([[1.0, -2.0, 0.5]])
    w, b = host(sd["0.weight"]).astype(np.float64), host(sd["0.bias"]).astype(np.float64)
    h = x @ w.T + b
    mean, var = host(sd["1.running_mean"]), host(sd["1.running_var"])
    want = (h - mean) / np.sqrt(var + 1e-5) * host(sd["1.weight"]) + host(sd["1.bias"])
    got = host(m(torch.tensor(x, dtype=torch.float32)).detach())
    assert np.allclose(got, want, atol=1e-5)


def test_loads_tensors_parameters_and_plain_values():
    t = torch.load(fixture("torch_tensor.pt"))
    assert t.dtype == torch.int32 and np.array_equal(host(t), [[1, 2], [3, 4]])
    mixed = torch.load(fixture("torch_mixed.pt"))
    assert isinstance(mixed["weight"], nn.Parameter) and mixed["weight"].requires_grad
    assert np.array_equal(host(mixed["weight"]), [0.25, -1.0])
    assert mixed["step"] == 3 and mixed["names"] == ["a", "b"] and mixed["pair"] == (1.5, None)


def test_map_location_applies():
    seen = []

    def where(t, loc):
        seen.append(loc)
        return t
    torch.load(fixture("torch_tensor.pt"), map_location=where)
    assert seen == ["cpu"]
    with open(fixture("torch_tensor.pt"), "rb") as fh:  # a file object works too
        assert torch.load(fh, map_location="cpu").shape == (2, 2)


def test_a_legacy_pytorch_checkpoint_is_named_and_refused():
    """torch_legacy.pt: PyTorch 2.13's torch.save(..., _use_new_zipfile_serialization=False),
    the pre-1.6 pickle format: the error says what the file is and that it is not read, from
    a path and from a file object alike; a bare pickle is named too."""
    path = fixture("torch_legacy.pt")
    with open(path, "rb") as fh:
        sources = [(path, repr(path)), (fh, "the file")]
        for src, name in sources:
            with pytest.raises(RuntimeError) as e:
                torch.load(src)
            msg = str(e.value)
            assert msg.startswith(f"fusetorch.load: {name} is a PyTorch checkpoint in the "
                                  "legacy format"), msg
            assert "before PyTorch 1.6" in msg and "does not read" in msg
            assert "bad magic number" not in msg
    for protocol in (2, 4, 5):
        with pytest.raises(RuntimeError, match="is a Python pickle, not a checkpoint"):
            torch.load(io.BytesIO(pickle.dumps({"w": [1.0]}, protocol=protocol)))


def test_the_fixture_with_a_reduce_payload_runs_nothing():
    # torch_hostile.pt pickles an object whose __reduce__ is os.system("echo pwned > ...")
    marker = "/tmp/fusetorch-pwned"
    if os.path.exists(marker):
        os.remove(marker)
    with pytest.raises(pickle.UnpicklingError) as e:
        torch.load(fixture("torch_hostile.pt"))
    assert isinstance(e.value, RuntimeError)
    # PyTorch 2.13's exact words for this file
    assert str(e.value).startswith("Weights only load failed. In PyTorch 2.6, we changed")
    assert "Trying to load unsupported GLOBAL posix.system whose module posix is blocked." \
        in str(e.value)
    assert not os.path.exists(marker)


def rewrite(src: str, dst, pkl: bytes | None = None, records: dict | None = None,
            compress: bool = False) -> None:
    """A copy of a fixture with its data.pkl and/or some records replaced."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(
            dst, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            base = info.filename.split("/", 1)[1]
            if base == "data.pkl" and pkl is not None:
                data = pkl
            if records and base in records:
                data = records[base]
            zout.writestr(info.filename, data)


def hostile(tmp_path, pkl: bytes, **kw) -> str:
    path = str(tmp_path / "bad.pt")
    rewrite(fixture("torch_tensor.pt"), path, pkl, **kw)
    return path


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


@pytest.mark.parametrize("protocol", [2, 4])
def test_pickled_code_never_runs(tmp_path, protocol):
    marker = str(tmp_path / "ran")
    path = hostile(tmp_path, pickle.dumps({"x": Payload(marker)}, protocol=protocol))
    with pytest.raises(WeightsOnlyError, match="Weights only load failed"):
        torch.load(path)
    assert not os.path.exists(marker)
    pickle.loads(pickle.dumps(Payload(marker)))  # the payload is live: plain pickle runs it
    assert os.path.exists(marker)


TENSOR_PKL = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(("
              b"X\x07\x00\x00\x00storagectorch\nIntStorage\nX\x01\x00\x00\x000"
              b"X\x03\x00\x00\x00cpuK\x04tQ")


def tensor_pickle(offset: int, size: tuple, stride: tuple, storage_class=b"IntStorage",
                  numel: int = 4, tail: bytes = b"") -> bytes:
    """A data.pkl rebuilding one tensor of storage '0' with this layout (hand-written, so
    any layout can be described)."""
    head = TENSOR_PKL.replace(b"IntStorage", storage_class)
    head = head.replace(b"K\x04tQ", b"J" + struct.pack("<i", numel) + b"tQ")
    args = b"".join(pickle.dumps(v, protocol=2)[2:-1]
                    for v in (offset, size, stride, False, collections.OrderedDict()))
    return head + args + b"tR" + tail + b"."


def test_hand_written_tensor_pickle_is_sound(tmp_path):
    t = torch.load(hostile(tmp_path, tensor_pickle(1, (3,), (1,))))
    assert np.array_equal(host(t), [2, 3, 4])


@pytest.mark.parametrize("offset,size,stride", [
    (0, (5,), (1,)),          # one element past the storage
    (2, (2, 2), (1, 1)),      # reaches element 4 of 4
    (0, (2,), (-1,)),         # negative stride
    (4, (1,), (1,)),          # offset past the end
    (-1, (1,), (1,)),         # negative offset
    (0, (2, -1), (1, 1)),     # negative size
])
def test_bad_layouts_are_refused(tmp_path, offset, size, stride):
    with pytest.raises(RuntimeError):
        torch.load(hostile(tmp_path, tensor_pickle(offset, size, stride)))


def test_huge_expanded_tensor_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_LOAD_MAX_ELEMENTS", "1000")
    with pytest.raises(RuntimeError, match="FUSETORCH_LOAD_MAX_ELEMENTS"):
        torch.load(hostile(tmp_path, tensor_pickle(0, (100, 100), (0, 0))))
    assert torch.load(hostile(tmp_path, tensor_pickle(0, (10, 10), (0, 0)))).shape == (10, 10)


def test_storage_size_must_match_the_record(tmp_path):
    with pytest.raises(RuntimeError, match="bytes"):  # claims 5 ints, the record holds 4
        torch.load(hostile(tmp_path, tensor_pickle(0, (4,), (1,), numel=5)))


def test_bool_storage_bytes_are_normalised(tmp_path):
    path = hostile(tmp_path, tensor_pickle(0, (4,), (1,), b"BoolStorage", numel=4),
                   records={"data/0": bytes([0, 2, 255, 1])})
    t = torch.load(path)
    assert np.array_equal(host(t).view(np.uint8), [0, 1, 1, 1])
    assert t.sum().item() == 3


@pytest.mark.parametrize("pkl", [
    b"\x80\x02c__builtin__\neval\nX\x01\x00\x00\x001\x85R.",        # a builtin callable
    b"\x80\x02cnumpy\nndarray\n)R.",                               # a harmless-looking class
    b"\x80\x02ccollections\nOrderedDict\n(K\x01K\x02\x86]\x85R.",    # OrderedDict with args
    b"\x80\x02]}b.",                                               # BUILD on a list
    b"\x80\x02(cbuiltins\nbytearray\no.",                           # OBJ opcode
    b"\x80\x04\x8c\x02os\x8c\x06system\x93.",                       # STACK_GLOBAL
])
def test_forbidden_pickles_are_refused(tmp_path, pkl):
    with pytest.raises(WeightsOnlyError, match="Weights only load failed"):
        torch.load(hostile(tmp_path, pkl))


def test_hash_flooding_keys_are_refused(tmp_path):
    flood = [k * (2 ** 61 - 1) for k in range(1, 40)]  # distinct ints, all hashing to 0
    for obj in ({k: 0 for k in flood}, set(flood), frozenset(flood)):
        with pytest.raises(WeightsOnlyError, match="hash"):
            torch.load(hostile(tmp_path, pickle.dumps(obj, protocol=2)))
    ok = {k: 0 for k in flood[:10]}
    assert torch.load(hostile(tmp_path, pickle.dumps(ok, protocol=2))) == ok


def test_setitem_on_a_tensor_is_refused(tmp_path):
    # SETITEM would run the tensor's __setitem__ with values the file chooses
    pkl = tensor_pickle(0, (4,), (1,), tail=b"K\x00K\x09s")
    with pytest.raises(WeightsOnlyError):
        torch.load(hostile(tmp_path, pkl))


def test_refusals_use_pytorchs_words(tmp_path):
    # PyTorch 2.13's messages for these pickles, checked by hand
    with pytest.raises(WeightsOnlyError) as e:
        torch.load(hostile(tmp_path, b"\x80\x02cnumpy\nndarray\n)R."))
    assert "This file can still be loaded, to do so you have two options" in str(e.value)
    assert "WeightsUnpickler error: Unsupported global: GLOBAL numpy.ndarray was not an " \
        "allowed global by default. Please use `torch.serialization.add_safe_globals(" \
        "[numpy.ndarray])`" in str(e.value)
    with pytest.raises(WeightsOnlyError) as e:
        torch.load(hostile(tmp_path, b"\x80\x02c__builtin__\neval\nX\x01\x00\x00\x001\x85R."))
    assert "GLOBAL eval was not an allowed global" in str(e.value)
    with pytest.raises(WeightsOnlyError) as e:
        torch.load(hostile(tmp_path, b"\x80\x02]}b."))
    assert "Can only build Tensor, Parameter, OrderedDict or types allowlisted via " \
        "`add_safe_globals`, but got <class 'list'>" in str(e.value)
    assert "Please file an issue" in str(e.value)


def test_build_on_a_tensor_is_refused(tmp_path):
    # BUILD would set the tensor's internals (its array) to whatever the file says
    pkl = tensor_pickle(0, (4,), (1,), tail=b"}X\x05\x00\x00\x00_dataK\x01sb")
    with pytest.raises(WeightsOnlyError):
        torch.load(hostile(tmp_path, pkl))


def test_damaged_archives_raise_runtime_error(tmp_path):
    raw = open(fixture("torch_tensor.pt"), "rb").read()
    for cut in (10, len(raw) // 2, len(raw) - 30):
        with pytest.raises(RuntimeError):
            torch.load(io.BytesIO(raw[:cut]))
    with pytest.raises(RuntimeError, match="compressed"):
        path = str(tmp_path / "z.pt")
        rewrite(fixture("torch_tensor.pt"), path, compress=True)
        torch.load(path)
    with pytest.raises(RuntimeError):
        torch.load(hostile(tmp_path, b"\x80\x02K"))  # a truncated pickle
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("x.txt", b"hi")
    with pytest.raises(RuntimeError, match="not a PyTorch checkpoint"):
        torch.load(io.BytesIO(buf.getvalue()))


# ---------------------------------------------------------------------- saving PyTorch's format

def test_save_torch_format_round_trips(tmp_path):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    sd = m.state_dict()
    b = torch.arange(12.0).reshape(3, 4)
    sd.update(half=torch.tensor([1.5, 2.0], dtype=torch.float16),
              bf=torch.tensor([1.5, -3.0], dtype=torch.bfloat16),
              mask=torch.tensor([True, False]), b=b, bt=b.t(), bs=b[1:, 2:])
    path = str(tmp_path / "m.pt")
    torch.save(sd, path, format="torch")
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert "m/data.pkl" in names and z.read("m/byteorder") == b"little"
        # b, bt and bs are one storage, as PyTorch writes them
        assert sum(n.startswith("m/data/") for n in names) == len(sd) - 2
        for info in z.infolist():  # records start 64-byte aligned (PyTorch's mmap needs it)
            assert info.compress_type == zipfile.ZIP_STORED
            assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0
    back = torch.load(path)
    assert list(back) == list(sd)
    for k in sd:
        assert back[k].dtype == sd[k].dtype and back[k].shape == sd[k].shape
        assert np.array_equal(host(back[k]).astype(np.float64), host(sd[k]).astype(np.float64))
    assert np.shares_memory(host(back["bs"]), host(back["b"]))


def test_save_torch_format_values(tmp_path):
    obj = {"p": nn.Parameter(torch.ones(2)), "frozen": nn.Parameter(torch.ones(1), False),
           "n": 3, "dtype": torch.float16, "size": torch.Size([2, 3]), "raw": b"xy",
           "rg": torch.ones(2, requires_grad=True), "set": {1, 2}, "c": 1 + 2j,
           "scalar": torch.tensor(7), "empty": torch.zeros(0, 3)}
    path = str(tmp_path / "o.pt")
    torch.save(obj, path, format="torch")
    back = torch.load(path)
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert isinstance(back["frozen"], nn.Parameter) and not back["frozen"].requires_grad
    assert back["rg"].requires_grad and not isinstance(back["rg"], nn.Parameter)
    assert (back["n"], back["dtype"], back["size"], back["raw"], back["set"], back["c"]) == \
        (3, torch.float16, torch.Size([2, 3]), b"xy", {1, 2}, 1 + 2j)
    assert back["scalar"].shape == () and back["scalar"].item() == 7
    assert back["empty"].shape == (0, 3)


def test_save_torch_format_refuses_other_objects(tmp_path):
    with pytest.raises(TypeError, match="PyTorch's format"):
        torch.save({"m": nn.Linear(1, 1)}, str(tmp_path / "x.pt"), format="torch")
    with pytest.raises(ValueError, match="unknown format"):
        torch.save({}, str(tmp_path / "x.pt"), format="onnx")


# ---------------------------------------------------------------------- safetensors

def test_loads_a_huggingface_safetensors_file():
    for sd in (torch.load(fixture("hf_state_dict.safetensors")),
               st.load_file(fixture("hf_state_dict.safetensors"))):
        check_extra_entries(sd)
        pt = torch.load(fixture("torch_state_dict.pt"))
        for k, v in sd.items():  # the same state_dict PyTorch wrote in its own format
            assert v.dtype == pt[k].dtype and np.array_equal(host(v), host(pt[k]))


def test_safetensors_load_is_zero_copy():
    sd = st.load_file(fixture("hf_state_dict.safetensors"))
    roots = set()
    for k, v in sd.items():
        if k == "mask":
            continue  # bools are normalised into their own 0/1 array
        a = host(v)
        while isinstance(a.base, np.ndarray):
            a = a.base
        roots.add(id(a))
    assert len(roots) == 1


def st_file(header: dict, data: bytes, hlen: int | None = None) -> io.BytesIO:
    h = json.dumps(header).encode()
    return io.BytesIO(struct.pack("<Q", len(h) if hlen is None else hlen) + h + data)


def test_safetensors_hand_written_and_bool_normalised():
    f = st_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                 "m": {"dtype": "BOOL", "shape": [3], "data_offsets": [8, 11]},
                 "__metadata__": {"k": "v"}},
                np.array([1.5, -2], "<f4").tobytes() + bytes([0, 7, 1]))
    out = torch.load(f)
    assert np.array_equal(host(out["a"]), [1.5, -2.0])
    assert np.array_equal(host(out["m"]).view(np.uint8), [0, 1, 1])


@pytest.mark.parametrize("header,data", [
    ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8)),   # count
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}}, bytes(8)),  # outside
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8)),   # overlap
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8)),   # gap
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(8)),   # trailing
    ({"a": {"dtype": "X9", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)),    # dtype
    ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4)),  # shape
    ({"a": [1]}, b""),
])
def test_bad_safetensors_files_are_refused(header, data):
    with pytest.raises(RuntimeError):
        torch.load(st_file(header, data))


def test_safetensors_bad_header_length():
    with pytest.raises(RuntimeError):
        torch.load(st_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
                           bytes(4), hlen=10 ** 6))
    with pytest.raises(RuntimeError):
        st.load(b"\x05\x00\x00\x00\x00\x00\x00\x00{\"a\":")


def test_safetensors_save_round_trips(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    tensors = {"w": torch.arange(6.0).reshape(2, 3).t(), "i": torch.tensor(5),
               "h": torch.tensor([0.5], dtype=torch.float16),
               "bf": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
               "m": torch.tensor([True, False])}
    path = str(tmp_path / "t.safetensors")
    st.save_file(tensors, path, metadata={"format": "pt"})
    back = st.load_file(path)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape
        assert np.array_equal(host(back[k]).astype(np.float64), host(v).astype(np.float64))
    ref = safetensors_numpy.load(st.save({k: v for k, v in tensors.items() if k != "bf"}))
    assert np.array_equal(ref["w"], np.arange(6.0).reshape(2, 3).T)
    assert ref["i"].shape == () and ref["i"] == 5
    with pytest.raises(TypeError):
        st.save_file({"x": 1}, path)

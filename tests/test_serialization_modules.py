"""torch.save(model, f) / torch.load(f) of whole modules: the class path and the attributes
are stored (no code), and load rebuilds an object only when its class is a safe global or,
with weights_only=False, an nn.Module subclass; PyTorch 2.13's refusals otherwise. Also the
safe-globals registry, files naming dangerous globals, and whole-module PyTorch checkpoints
(tests/fixtures/torch_module.pt, written by PyTorch 2.13)."""
import hashlib
import io
import json
import os
import struct
import sys
import textwrap
import types
import zipfile

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch import serialization as ser
from fusetorch.serialization import WeightsOnlyError

FIX = os.path.join(os.path.dirname(__file__), "fixtures")


@pytest.fixture(autouse=True)
def _no_safe_globals():
    ser.clear_safe_globals()
    yield
    ser.clear_safe_globals()


class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.norm = nn.LayerNorm(n)
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("scratch", torch.ones(n), persistent=False)

    def forward(self, x):
        self.count += 1
        return self.norm(F.relu(self.lin(x))) * self.scratch


INITS = []


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        INITS.append(1)
        self.embed = nn.Embedding(5, 4)
        self.blocks = nn.ModuleList([Block(4), Block(4)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 5, bias=False), "b": nn.Linear(4, 2)})
        self.heads["a"].weight = self.embed.weight  # tied: the same Parameter twice
        self.shared = self.blocks[0]  # the same submodule twice
        self.frozen = nn.Parameter(torch.randn(2), requires_grad=False)
        self.register_buffer("table", torch.arange(6.0).reshape(2, 3))
        self.config = {"depth": 2, "name": "net", "sizes": (4, 4), "dropout": None,
                       "tags": ["x", "y"], "dtype": torch.float64, "device": torch.device("cpu")}
        self.scale = 0.5
        self.activation = F.gelu
        self.norm_cls = nn.LayerNorm

    def forward(self, idx):
        h = self.embed(idx)
        for b in self.blocks:
            h = b(h)
        return self.heads["a"](self.activation(h)) * self.scale


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **kw)


def saved(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def edit(blob: bytes, change) -> bytes:
    """The file with its JSON header changed by `change(header)` and re-signed (what an
    attacker can write: the checksum is no defence)."""
    pre = len(ser.MAGIC) + 20
    _, hlen, dlen = struct.unpack("<IQQ", blob[len(ser.MAGIC):pre])
    header = json.loads(blob[pre:pre + hlen])
    change(header)
    h = json.dumps(header).encode()
    body = ser.MAGIC + struct.pack("<IQQ", ser.VERSION, len(h), dlen) + h \
        + blob[pre + hlen:pre + hlen + dlen]
    return body + hashlib.sha256(body).digest()


def load_bytes(blob: bytes, **kw):
    return torch.load(io.BytesIO(blob), **kw)


# ------------------------------------------------------------------------------ round trips

def test_whole_model_round_trip_with_weights_only_false():
    torch.manual_seed(0)
    net = Net()
    net.blocks[1].eval()
    idx = torch.tensor([[0, 1, 4], [2, 3, 3]])
    expected = net(idx)
    INITS.clear()
    got = roundtrip(net, weights_only=False)
    assert INITS == []  # __init__ never ran
    assert type(got) is Net and type(got.blocks) is nn.ModuleList
    assert [type(m) for m in got.modules()] == [type(m) for m in net.modules()]
    # the same Parameter twice, the same submodule twice
    assert got.heads["a"].weight is got.embed.weight
    assert got.shared is got.blocks[0]
    for name, p in net.named_parameters():
        q = dict(got.named_parameters())[name]
        assert type(q) is nn.Parameter and q.requires_grad == p.requires_grad
        assert np.array_equal(q.detach().numpy(), p.detach().numpy())
    assert type(got.frozen) is nn.Parameter and not got.frozen.requires_grad
    assert got.blocks[0].count.item() == 1 and got.blocks[0].count.dtype == torch.int64
    assert "scratch" not in got.blocks[0].state_dict()  # non-persistent stays so
    assert np.array_equal(got.blocks[0].scratch.numpy(), np.ones(4))
    assert got.config == net.config and got.scale == 0.5
    assert got.activation is F.gelu and got.norm_cls is nn.LayerNorm
    assert got.training and not got.blocks[1].training
    assert np.allclose(got(idx).detach().numpy(), expected.detach().numpy(), atol=1e-6)
    # it trains: gradients reach the tied weight through both uses
    got(idx).sum().backward()
    assert got.embed.weight.grad is not None and got.frozen.grad is None
    assert got.state_dict().keys() == net.state_dict().keys()


def test_safe_globals_allow_a_model_without_weights_only_false():
    net = Net()
    classes = [Net, Block, nn.Embedding, nn.ModuleList, nn.ModuleDict, nn.Linear,
               nn.LayerNorm]
    with ser.safe_globals(classes):
        assert set(ser.get_safe_globals()) == set(classes)
        # a function kept as an attribute is a global too
        with pytest.raises(WeightsOnlyError, match="GLOBAL fusetorch.nn._functional.activation."
                                                   "gelu was not an allowed global"):
            roundtrip(net)
    assert ser.get_safe_globals() == []
    ser.add_safe_globals(classes + [F.gelu])
    ser.add_safe_globals([(nn.LayerNorm, "fusetorch.nn.modules.normalization.LayerNorm")])
    got = roundtrip(net)
    assert type(got) is Net and got.heads["a"].weight is got.embed.weight
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []


def test_refused_by_default_with_pytorchs_words():
    blob = saved(Net())
    with pytest.raises(WeightsOnlyError) as e:
        load_bytes(blob)
    # PyTorch 2.13's message for a whole model (checked by hand in a real PyTorch)
    path = f"{__name__}.Net"
    assert str(e.value) == (
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, \x1b[1mdo those steps only if you trust the source of the checkpoint\x1b[0m. "
        "\n\t(1) In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
        "`torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set "
        "to `False` will likely succeed, but it can result in arbitrary code execution. Do it "
        "only if you got the file from a trusted source.\n\t(2) Alternatively, to load with "
        "`weights_only=True` please check the recommended steps in the following error "
        f"message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL {path} was not an "
        f"allowed global by default. Please use `torch.serialization.add_safe_globals([{path}])` "
        f"or the `torch.serialization.safe_globals([{path}])` context manager to allowlist this "
        "global if you trust this class/function.\n\nCheck the documentation of torch.load to "
        "learn more about types accepted by default with weights_only "
        "https://pytorch.org/docs/stable/generated/torch.load.html.")
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(WeightsOnlyError, match="Net was not an allowed global"):
        load_bytes(blob, weights_only=True)
    # next refusal names the next class met, as PyTorch's does
    with ser.safe_globals([Net]):
        with pytest.raises(WeightsOnlyError,
                           match="GLOBAL fusetorch.nn.modules.sparse.Embedding was not"):
            load_bytes(blob)


def test_pickle_module_and_weights_only():
    blob = saved(Net())
    with pytest.raises(RuntimeError, match="^Can not safely load weights when explicit "
                                           "pickle_module is specified$"):
        load_bytes(blob, pickle_module=object(), weights_only=True)
    import pickle
    assert type(load_bytes(blob, pickle_module=pickle)) is Net  # weights_only defaults False


def test_safe_globals_entries_are_checked_as_pytorch_does():
    ser.add_safe_globals([(nn.Linear,)])
    with pytest.raises(ValueError, match="Expected tuple of length 2"):
        roundtrip(nn.Linear(1, 1))
    ser.clear_safe_globals()
    ser.add_safe_globals([(nn.Linear, 3)])
    with pytest.raises(TypeError, match="Expected second item in tuple to be str"):
        roundtrip(nn.Linear(1, 1))


class Config:  # a plain object: rebuilt only when allowlisted, even with weights_only=False
    def __init__(self, width):
        self.width = width


class WithState(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = Config(3)
        self.cache = "dropped"

    def __getstate__(self):
        d = dict(self.__dict__)
        d.pop("cache")
        return d

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.cache = "rebuilt"


def test_plain_objects_getstate_setstate_and_cycles():
    m = WithState()
    m.me = m  # a cycle through the module
    with pytest.raises(WeightsOnlyError, match="Config"):
        roundtrip(m, weights_only=False)
    with ser.safe_globals([Config]):
        got = roundtrip(m, weights_only=False)
    assert got.cfg.width == 3 and type(got.cfg) is Config
    assert got.cache == "rebuilt" and got.me is got
    with ser.safe_globals([Config, WithState]):
        assert roundtrip(m).cfg.width == 3


def test_what_save_cannot_refer_to():
    def local_fn(x):
        return x

    class Local(nn.Module):
        pass

    m = nn.Linear(1, 1)
    m.fn = local_fn
    with pytest.raises(TypeError, match="cannot be found again"):
        torch.save(m, io.BytesIO())
    with pytest.raises(TypeError, match=r"at obj\): its class cannot be found again"):
        torch.save(Local(), io.BytesIO())
    m = nn.Linear(1, 1)
    m.fn = lambda x: x
    with pytest.raises(TypeError, match=r"'builtins.function' \(at obj.fn\)"):
        torch.save(m, io.BytesIO())


def test_weights_only_false_imports_the_class_module_by_name(tmp_path, monkeypatch):
    (tmp_path / "ft_saved_model_mod.py").write_text(textwrap.dedent("""
        import fusetorch.nn as nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import ft_saved_model_mod
    blob = saved(ft_saved_model_mod.M())
    monkeypatch.delitem(sys.modules, "ft_saved_model_mod")
    got = load_bytes(blob, weights_only=False)
    assert type(got).__name__ == "M" and "ft_saved_model_mod" in sys.modules


# ------------------------------------------------------------------------ hostile files

def _set_class(path):
    module, _, name = path.rpartition(".")

    def change(h):
        h["root"]["object"] = [module, name]
    return change


@pytest.mark.parametrize("weights_only", [True, False])
def test_files_naming_dangerous_classes_are_refused(weights_only, tmp_path):
    blob = saved(nn.Linear(2, 2))
    marker = tmp_path / "ran"
    with pytest.raises(WeightsOnlyError, match="whose module os is blocked"):
        load_bytes(edit(blob, _set_class("os.system")), weights_only=weights_only)
    with pytest.raises(WeightsOnlyError, match="whose module posix is blocked"):
        load_bytes(edit(blob, _set_class("posix.system")), weights_only=weights_only)
    for path in ("builtins.eval", "subprocess.Popen", "builtins.object",
                 "fusetorch.serialization.save", "collections.OrderedDict"):
        with pytest.raises(WeightsOnlyError) as e:
            load_bytes(edit(blob, _set_class(path)), weights_only=weights_only)
        if weights_only:
            assert "was not an allowed global by default" in str(e.value)
        else:
            assert "fusetorch creates only nn.Module subclasses" in str(e.value)
    assert not marker.exists()


def test_function_values_are_limited_to_fusetorchs_tensor_functions():
    m = nn.Linear(2, 2)
    m.act = F.relu
    blob = saved(m)
    assert load_bytes(blob, weights_only=False).act is F.relu
    for path in (["builtins", "exec"], ["fusetorch.serialization", "save"],
                 ["os.path", "join"], ["importlib", "import_module"]):
        def change(h, path=path):
            for pair in h["root"]["state"]:
                if pair[0] == "act":
                    pair[1] = {"global": path}
        with pytest.raises(WeightsOnlyError):
            load_bytes(edit(blob, change), weights_only=False)
    # a hook slot holding a forged function is refused the same way
    def hook(h):
        for pair in h["root"]["state"]:
            if pair[0] == "_forward_pre_hooks":
                pair[1] = {"odict": [[0, {"global": ["fusetorch.serialization", "load"]}]]}
    with pytest.raises(WeightsOnlyError, match="fusetorch.serialization.load"):
        load_bytes(edit(blob, hook), weights_only=False)


@pytest.mark.parametrize("change", [
    lambda h: h["root"].update(id=3),  # ids count up from 0
    lambda h: h["root"].update(object=["fusetorch.nn.modules.linear", "Linear; x"]),
    lambda h: h["root"].update(object=["", "Linear"]),
    lambda h: h["root"].update(object="Linear"),
    lambda h: h["root"].update(state={"a": 1}),
    lambda h: h["root"].update(state=[[1, 2]]),
    lambda h: h["root"]["state"].append(["me", {"ref": 1}]),  # refers ahead
    lambda h: h["root"]["state"].append(["g", {"global": ["builtins", "a b"]}]),
])
def test_malformed_object_nodes_are_corrupt(change):
    blob = saved(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="is corrupted or not a valid fusetorch file"):
        load_bytes(edit(blob, change), weights_only=False)


def test_fusetorch_modules_class_code_errors_pass_through():
    class Boom(Exception):
        pass

    class Bad(nn.Module):
        def __setstate__(self, state):
            raise Boom("setstate")
    Bad.__qualname__ = "Bad"
    mod = types.ModuleType("ft_bad_mod")
    Bad.__module__ = "ft_bad_mod"
    mod.Bad = Bad
    sys.modules["ft_bad_mod"] = mod
    try:
        blob = saved(Bad())
        with pytest.raises(Boom):
            load_bytes(blob, weights_only=False)
    finally:
        del sys.modules["ft_bad_mod"]


# ------------------------------------------------------------ whole-model PyTorch checkpoints

MODELS = "fusetorch_fixture_models"  # tests/fixtures/make_fixtures.py's module name


@pytest.fixture
def tiny_net(monkeypatch):
    """The fusetorch twin of make_fixtures.py's TinyNet, in a module of the same name."""
    module = types.ModuleType(MODELS)

    class TinyNet(nn.Module):
        def forward(self, x):
            return self.out(self.act(self.head(self.body(x)))) * self.scale

    TinyNet.__module__, TinyNet.__qualname__ = MODELS, "TinyNet"
    module.TinyNet = TinyNet
    monkeypatch.setitem(sys.modules, MODELS, module)
    return TinyNet


def check_tiny(model, cls):
    assert type(model) is cls and not model.training
    assert model.out.weight is model.head.weight and type(model.head.weight) is nn.Parameter
    assert model.steps == 7 and model.name == "tiny" and model.act is F.relu
    assert model.scale.tolist() == [2.0, 0.5, 1.0, 3.0]
    assert type(model.body) is nn.Sequential and type(model.body[1]) is nn.ReLU
    with open(os.path.join(FIX, "torch_module_output.txt")) as fh:
        expected = np.array(eval(fh.read()))  # a list of floats PyTorch printed  # noqa: S307
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    assert np.allclose(model(x).detach().numpy(), expected, atol=1e-6)
    assert set(model.state_dict()) == {"body.0.weight", "body.0.bias", "head.weight",
                                       "head.bias", "out.weight", "scale"}


def test_pytorch_whole_model_with_weights_only_false(tiny_net):
    check_tiny(torch.load(os.path.join(FIX, "torch_module.pt"), weights_only=False), tiny_net)


def test_pytorch_whole_model_with_safe_globals(tiny_net):
    path = os.path.join(FIX, "torch_module.pt")
    with pytest.raises(WeightsOnlyError) as e:
        torch.load(path)
    assert f"GLOBAL {MODELS}.TinyNet was not an allowed global by default. Please use " \
        f"`torch.serialization.add_safe_globals([{MODELS}.TinyNet])`" in str(e.value)
    with ser.safe_globals([tiny_net]):  # PyTorch's next refusal, in its words
        with pytest.raises(WeightsOnlyError, match="GLOBAL torch.nn.modules.container."
                                                   "Sequential was not an allowed global"):
            torch.load(path)
    # fusetorch's classes and F.relu allow the torch spellings of their names
    with ser.safe_globals([tiny_net, nn.Sequential, nn.Linear, nn.ReLU, F.relu]):
        check_tiny(torch.load(path), tiny_net)


def test_pytorch_whole_model_refuses_what_fusetorch_would(tiny_net):
    # weights_only=False still never calls a class the pickle names
    from fusetorch.checkpoint_formats import torch_zip
    for pkl, words in [
        (b"\x80\x02c" + MODELS.encode() + b"\nTinyNet\n)R.", "unrecognized function"),
        (b"\x80\x02csubprocess\nPopen\n)\x81.", "fusetorch creates only nn.Module"),
        (b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.", "fusetorch creates only"),
        (b"\x80\x02cos\nsystem\nX\x01\x00\x00\x001\x85R.", "whose module os is blocked"),
    ]:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("archive/data.pkl", pkl)
        buf.seek(0)
        with pytest.raises(WeightsOnlyError, match=words):
            torch.load(buf, weights_only=False)
    assert torch_zip.WeightsOnlyError is WeightsOnlyError  # one error class for both formats

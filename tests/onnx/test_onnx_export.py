"""fusetorch.onnx.export: models through onnx.checker and onnxruntime against fusetorch's own
outputs (MLP, LeNet, LSTM, a Transformer encoder layer and a hand-written attention block),
dynamic axes run at other sizes, the API's options, and the errors."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fusetorch as torch  # noqa: E402
import fusetorch.nn as nn  # noqa: E402
import fusetorch.nn.functional as F  # noqa: E402
from fusetorch.ir.ops import OPS  # noqa: E402
from fusetorch.onnx import (OnnxExporterError, TrainingMode,  # noqa: E402
                            UnsupportedOperatorError)
from fusetorch.onnx import ops as onnx_ops  # noqa: E402

RTOL, ATOL = 1e-5, 1e-5


def _flat(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    return [t for v in x for t in _flat(v)] if isinstance(x, (tuple, list)) else []


def export(model, args, **kw):
    """(ModelProto, InferenceSession) of the export, after onnx.checker's full check."""
    buf = io.BytesIO()
    torch.onnx.export(model, args, buf, **kw)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return proto, ort.InferenceSession(buf.getvalue(), opts,
                                       providers=["CPUExecutionProvider"])


def run_and_compare(sess, model, *args, rtol=RTOL, atol=ATOL):
    flat = _flat(args)
    got = sess.run(None, {i.name: t.numpy() for i, t in zip(sess.get_inputs(), flat)})
    with torch.no_grad():
        want = _flat(model(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape) and g.dtype == w.numpy().dtype
        np.testing.assert_allclose(g, w.numpy(), rtol=rtol, atol=atol)
    return got


def ops_of(proto) -> list[str]:
    return [n.op_type for n in proto.graph.node]


def dims_of(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


# ----------------------------------------------------------------------------- models

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(10, 32), nn.Linear(32, 16), nn.Linear(16, 3)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(F.relu(self.fc1(x)))))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc3(F.relu(self.fc2(F.relu(self.fc1(x))))), dim=1)


class Attention(nn.Module):
    """A hand-written pre-norm attention block: layer_norm, softmax, gelu."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


# ----------------------------------------------------------------------------- the four models

def test_mlp():
    model = MLP()
    x = torch.randn(4, 10)
    proto, sess = export(model, (x,), input_names=["x"], output_names=["y"],
                         dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert ops_of(proto).count("Gemm") == 3
    assert [i.name for i in proto.graph.initializer] == [
        "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"]
    assert dims_of(proto.graph.input[0]) == ["batch", 10]
    assert dims_of(proto.graph.output[0]) == ["batch", 3]
    run_and_compare(sess, model, x)
    run_and_compare(sess, model, torch.randn(11, 10))


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "primitives"])
def test_lenet(whole, monkeypatch):
    if not whole:  # (linear, conv2d, pooling as their compositions, not Gemm, Conv, MaxPool)
        monkeypatch.setattr(onnx_ops, "WHOLE", {})
    model = LeNet()
    x = torch.randn(2, 1, 28, 28)
    proto, sess = export(model, (x,), input_names=["image"], dynamic_axes={"image": [0]})
    ops = ops_of(proto)
    if whole:
        assert ops.count("Conv") == 2 and ops.count("MaxPool") == 2 and "LogSoftmax" in ops
        assert "ArgMax" not in ops and "Slice" not in ops
    else:  # unfold2d as strided slices, max pooling as argmax + gather
        assert "Conv" not in ops and "ArgMax" in ops and "Slice" in ops
    assert dims_of(proto.graph.input[0]) == ["image_dynamic_axes_1", 1, 28, 28]
    run_and_compare(sess, model, x)
    run_and_compare(sess, model, torch.randn(5, 1, 28, 28))


class _PoolHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 3)

    def forward(self, x):  # [N, 2, 6, 6] -> pooled to [N, 2, 3, 3] ... -> rows of 3 x 12
        p = F.avg_pool2d(x, 2) + F.avg_pool2d(x, 3, stride=1, padding=1)[:, :, ::2, ::2]
        return self.fc(p.reshape(x.shape[0], 3, 6).repeat(1, 1, 2))


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "primitives"])
def test_linear_and_avg_pool_are_their_operators(whole, monkeypatch):
    # the linear and avg_pool2d nodes themselves become Gemm and AveragePool (ops.WHOLE); a
    # stack of rows is MatMul and Add (Gemm multiplies matrices)
    if not whole:
        monkeypatch.setattr(onnx_ops, "WHOLE", {})
    model, x = _PoolHead(), torch.randn(2, 2, 6, 6)
    proto, sess = export(model, (x,))
    ops = ops_of(proto)
    if whole:
        assert ops.count("AveragePool") == 2 and "Gemm" not in ops and "MatMul" in ops
    else:
        assert "AveragePool" not in ops and "Slice" in ops
    run_and_compare(sess, model, x)
    mlp = nn.Linear(4, 5)
    proto, sess = export(mlp, (torch.randn(3, 4),))
    assert (ops_of(proto) == ["Gemm"]) == whole
    run_and_compare(sess, mlp, torch.randn(3, 4))


def test_lstm():
    torch.manual_seed(0)
    model = nn.LSTM(8, 16, num_layers=2, batch_first=True)
    x = torch.randn(3, 5, 8)
    # each layer is one lstm_scan, one ONNX LSTM
    proto, sess = export(model, (x,), input_names=["x"], output_names=["out", "h", "c"],
                         dynamic_axes={"x": {0: "batch"}})
    assert ops_of(proto).count("LSTM") == 2 and "Sigmoid" not in ops_of(proto)
    assert dims_of(proto.graph.output[0]) == ["batch", 5, 16]
    assert dims_of(proto.graph.output[1]) == [2, "batch", 16]
    assert {i.name for i in proto.graph.initializer} >= {
        "weight_ih_l0", "weight_hh_l0", "weight_ih_l1", "weight_hh_l1"}
    run_and_compare(sess, model, x)
    run_and_compare(sess, model, torch.randn(7, 5, 8))


def test_lstm_with_initial_state():
    model = nn.LSTM(4, 6)
    x, h0, c0 = torch.randn(3, 2, 4), torch.randn(1, 2, 6), torch.randn(1, 2, 6)
    proto, sess = export(model, (x, (h0, c0)))
    assert [i.name for i in proto.graph.input] == ["input", "hx_0", "hx_1"]
    run_and_compare(sess, model, x, (h0, c0))


def test_transformer_encoder_layer():
    torch.manual_seed(0)
    model = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True,
                                       activation="gelu")
    x = torch.randn(2, 6, 16)
    proto, sess = export(model, (x,), input_names=["src"],
                         dynamic_axes={"src": {0: "batch", 1: "seq"}})
    assert {"Softmax", "LayerNormalization", "Gelu", "Gemm"} <= set(ops_of(proto))
    assert model.training  # exported in eval mode (dropout off), then put back
    model.eval()
    run_and_compare(sess, model, x)
    run_and_compare(sess, model, torch.randn(3, 9, 16))
    run_and_compare(sess, model, torch.randn(1, 1, 16))


@pytest.mark.parametrize("opset", [13, 17, 20, 23])
def test_attention_block(opset):
    model = Attention()
    x = torch.randn(2, 5, 16)
    proto, sess = export(model, (x,), opset_version=opset,
                         dynamic_axes={"x": {0: "batch", 1: "seq"}})
    assert proto.opset_import[0].version == opset
    ops = ops_of(proto)
    assert "Softmax" in ops
    assert ("LayerNormalization" in ops) == (opset >= 17)  # else mean/sub/mul/sqrt/div
    assert ("Gelu" in ops) == (opset >= 20)  # else erf/mul/add
    run_and_compare(sess, model, x)
    run_and_compare(sess, model, torch.randn(4, 3, 16))


# ----------------------------------------------------------------------------- the API

def test_path_program_and_saving(tmp_path):
    model = MLP()
    x = torch.randn(3, 10)
    path = tmp_path / "mlp.onnx"
    program = torch.onnx.export(model, (x,), str(path))
    assert path.read_bytes() == program.model_proto.SerializeToString()
    (y,) = program(x)
    np.testing.assert_allclose(y.numpy(), model(x).detach().numpy(), rtol=RTOL, atol=ATOL)
    program.save(tmp_path / "again.onnx")
    assert (tmp_path / "again.onnx").read_bytes() == path.read_bytes()
    assert torch.onnx.export(model, x, None, verify=True).model_proto.graph.node


def test_is_in_onnx_export():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(torch.onnx.is_in_onnx_export())
            return x * 2

    assert not torch.onnx.is_in_onnx_export()
    torch.onnx.export(Probe(), torch.ones(2), io.BytesIO())
    assert seen == [True] and not torch.onnx.is_in_onnx_export()


def test_training_modes():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    proto, _ = export(model, (torch.ones(2, 4),))
    assert "RandomUniform" not in ops_of(proto)  # eval: dropout is the identity
    assert model.training
    buf = io.BytesIO()
    torch.onnx.export(model, torch.ones(2, 4), buf, training=TrainingMode.TRAINING)
    ops = ops_of(onnx.load_from_string(buf.getvalue()))
    assert "RandomUniform" in ops or "RandomUniformLike" in ops


def test_export_params_false_and_initializers_as_inputs():
    model = MLP()
    x = torch.randn(2, 10)
    proto, sess = export(model, (x,), export_params=False)
    assert not proto.graph.initializer
    names = [i.name for i in proto.graph.input]
    assert names[0] == "x" and "fc1.weight" in names
    params = dict(model.state_dict())
    feeds = {n: (x if n == "x" else params[n]).numpy() for n in names}
    np.testing.assert_allclose(sess.run(None, feeds)[0], model(x).detach().numpy(), rtol=RTOL,
                               atol=ATOL)
    proto, _ = export(model, (x,), keep_initializers_as_inputs=True)
    assert {i.name for i in proto.graph.initializer} <= {i.name for i in proto.graph.input}


def test_constant_folding():
    # the LSTM's two biases add up once at export time; folding off keeps the Add in the graph
    model = nn.LSTM(3, 4)
    x = torch.randn(2, 1, 3)
    folded, sess = export(model, (x,))
    plain, sess2 = export(model, (x,), do_constant_folding=False)
    assert any(i.name.startswith("folded_") for i in folded.graph.initializer)
    assert not any(i.name.startswith("folded_") for i in plain.graph.initializer)
    assert len(folded.graph.node) < len(plain.graph.node)
    run_and_compare(sess, model, x)
    run_and_compare(sess2, model, x)


def test_kwargs_and_non_tensor_args():
    def f(x, scale, y=None):
        return x * scale + y

    x, y = torch.randn(3), torch.randn(3)
    proto, sess = export(f, (x, 2.5), kwargs={"y": y})
    assert [i.name for i in proto.graph.input] == ["x", "y"]
    got = sess.run(None, {"x": x.numpy(), "y": y.numpy()})[0]
    np.testing.assert_allclose(got, (x * 2.5 + y).numpy(), rtol=RTOL)


def test_output_is_an_input_or_a_parameter():
    lin = nn.Linear(2, 2)
    proto, sess = export(lambda x: (x, lin.weight, x + 1), (torch.ones(2),))
    got = sess.run(None, {"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(got[0], np.ones(2))
    np.testing.assert_array_equal(got[1], lin.weight.detach().numpy())


def test_every_primitive_is_exported_or_refused():
    composed = {n for n, d in OPS.items() if d.composition is not None}  # (capture expands them)
    missing = set(OPS) - set(onnx_ops.EMIT) - set(onnx_ops.UNSUPPORTED) - onnx_ops.STRUCTURAL - \
        composed
    assert not missing, f"IR primitives with no ONNX translation and no stated reason: {missing}"


def test_bad_options():
    with pytest.raises(ValueError, match="opset"):
        torch.onnx.export(MLP(), torch.ones(1, 10), io.BytesIO(), opset_version=9)
    with pytest.raises(ValueError, match="input_names"):
        torch.onnx.export(MLP(), torch.ones(1, 10), io.BytesIO(), input_names=["a", "b"])
    with pytest.raises(NotImplementedError, match="dynamic_axes"):
        torch.onnx.export(MLP(), torch.ones(1, 10), io.BytesIO(), dynamic_shapes={"x": {}})


# ----------------------------------------------------------------------------- errors

def test_unsupported_operator_names_the_primitive_and_line():
    with pytest.raises(UnsupportedOperatorError, match=r"'linalg_inv'.*matrix inverse.*"
                                                       r"test_onnx_export.py:\d+"):
        torch.onnx.export(lambda a: torch.linalg.inv(a), torch.eye(3) * 2, io.BytesIO())


def test_custom_function_forward_is_inlined():
    # export traces without gradients: an autograd.Function's forward records its own ops
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    f = lambda x: Twice.apply(x) + 1  # noqa: E731
    _, sess = export(f, (torch.ones(2),))
    run_and_compare(sess, f, torch.tensor([1.0, -3.0]))


def test_opset_too_low_names_the_version():
    with pytest.raises(UnsupportedOperatorError, match="added in version 18"):
        torch.onnx.export(lambda a, b: a & b, (torch.tensor([3]), torch.tensor([5])),
                          io.BytesIO(), opset_version=17)


def test_dynamic_axis_over_a_python_loop_is_refused():
    def f(x):  # one traced step per time index
        h = x[0]
        for t in range(1, x.shape[0]):
            h = torch.tanh(h + x[t])
        return h

    with pytest.raises(OnnxExporterError, match="changes the number of traced operations"):
        torch.onnx.export(f, torch.randn(5, 2, 3), io.BytesIO(),
                          input_names=["x"], dynamic_axes={"x": {0: "time"}})


@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
def test_lstm_time_axis_is_dynamic(bidirectional):
    # one LSTM operator per layer and direction follows any sequence length
    torch.manual_seed(0)
    model = nn.LSTM(3, 4, num_layers=2, bidirectional=bidirectional)
    proto, sess = export(model, (torch.randn(5, 2, 3),), input_names=["x"],
                         dynamic_axes={"x": {0: "time", 1: "batch"}})
    assert ops_of(proto).count("LSTM") == 2 * (1 + bidirectional)
    for shape in [(5, 2, 3), (9, 3, 3), (1, 1, 3)]:
        run_and_compare(sess, model, torch.randn(*shape))


def test_lstm_float64_exports_its_steps():
    # onnxruntime has no float64 LSTM: the layer exports as its composition, step by step
    model = nn.LSTM(3, 4, bidirectional=True).double()
    x = torch.randn(4, 2, 3, dtype=torch.float64)
    proto, sess = export(model, (x,))
    assert "LSTM" not in ops_of(proto) and "Sigmoid" in ops_of(proto)
    run_and_compare(sess, model, x, rtol=1e-10, atol=1e-12)


def test_lstm_cell_and_packed_sequences():
    torch.manual_seed(0)
    cell = nn.LSTMCell(3, 4)
    x, h, c = torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 4)
    proto, sess = export(cell, (x, (h, c)))
    assert "LSTM" in ops_of(proto)
    run_and_compare(sess, cell, x, (h, c))
    lstm = nn.LSTM(3, 4, bidirectional=True)

    def packed(x):
        p = nn.utils.rnn.pack_padded_sequence(x, [4, 2, 1], enforce_sorted=True)
        out, (hn, cn) = lstm(p)
        return out.data, hn, cn
    x = torch.randn(4, 3, 3)
    proto, sess = export(packed, (x,))
    assert "LSTM" in ops_of(proto)
    run_and_compare(sess, packed, x)


def test_dynamic_size_no_shape_can_follow():
    # stride 2 halves a dynamic size with a floor: Conv follows it, and so does a flatten
    # (Reshape infers the one size it cannot compute); a reshape to two such sizes cannot
    conv = nn.Conv2d(1, 2, 3, stride=2)
    with pytest.raises(OnnxExporterError, match="dynamic_axes: .*no c0 \\+ c1.*reshape"):
        torch.onnx.export(lambda x: conv(x).flatten(0, 2), torch.randn(1, 1, 9, 9),
                          io.BytesIO(), input_names=["x"], dynamic_axes={"x": {2: "h", 3: "w"}})
    f = lambda x: conv(x).flatten(1)  # noqa: E731
    proto, sess = export(f, (torch.randn(1, 1, 9, 9),), input_names=["x"],
                         dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}})
    run_and_compare(sess, f, torch.randn(2, 1, 12, 7))


def test_a_write_through_a_view_exports_as_its_bases_new_value():
    # the recording follows a write through a view to its base (an index_put of the region)
    def f(x):
        y = x.clone()
        y[0:1].mul_(2)
        return y

    buf = io.BytesIO()
    torch.onnx.export(f, torch.ones(3, 2), buf)
    session = ort.InferenceSession(buf.getvalue())
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_array_equal(got, [[0, 2], [2, 3], [4, 5]])


# ----------------------------------------------------------------------------- dynamic sizes

def test_dynamic_sizes_in_index_mean_and_iota():
    def f(x):
        last = x[:, -1]  # an index at seq - 1
        pos = torch.arange(x.shape[1], dtype=torch.float32)  # iota of seq
        return last + x.mean(1) * 2 + (x * pos[None, :, None]).sum(1), x[:, 1:].sum((1, 2))

    x = torch.randn(2, 4, 3)
    proto, sess = export(f, (x,), dynamic_axes={"x": {0: "b", 1: "s"}})
    for shape in [(2, 4, 3), (5, 7, 3), (1, 2, 3)]:
        run_and_compare(sess, f, torch.randn(*shape))


def test_boolean_mask_has_a_dynamic_length():
    f = lambda x: x[x > 0] * 2  # noqa: E731
    x = torch.randn(4, 5)
    proto, sess = export(f, (x,))
    dim = proto.graph.output[0].type.tensor_type.shape.dim[0]
    assert not dim.dim_param and not dim.dim_value  # unknown: it depends on the values
    run_and_compare(sess, f, x)
    y = torch.randn(4, 5)
    got = sess.run(None, {"x": y.numpy()})[0]
    np.testing.assert_allclose(got, (y[y > 0] * 2).numpy(), rtol=RTOL)


def test_same_name_shares_a_size():
    f = lambda a, b: a @ b.T  # noqa: E731
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    proto, sess = export(f, (a, b), dynamic_axes={"a": {0: "n"}, "b": {0: "n"}})
    run_and_compare(sess, f, torch.randn(6, 4), torch.randn(6, 4))


# ----------------------------------------------------------------------------- primitives the
# registry leaves out, and edge values

def _values_match(f, *args, rtol=RTOL, atol=1e-6):
    _, sess = export(f, args)
    run_and_compare(sess, f, *args, rtol=rtol, atol=atol)


def test_integer_primitives():
    a = torch.tensor([[-7, 5, 0, 12], [3, -2, -9, 1]])
    s = torch.tensor([[1, 2, 0, 3], [2, 1, 3, 0]])
    _values_match(lambda a, s: (a >> s, a << s, a ^ s, a // s.clamp(min=1),
                                a % s.clamp(min=1), a.argmin(1), torch.cummin(a, 1)[1]), a, s)
    _values_match(lambda a: (a.to(torch.int8) * 100, a.to(torch.uint8) + 250), a)


def test_float_edge_values():
    x = torch.tensor([1e-10, -1e-9, 0.5, -0.25, 3.0, 0.0, -0.0])
    _values_match(lambda x: (torch.log1p(x), torch.expm1(x), torch.trunc(x * 7),
                             torch.round(x * 7)), x)
    y = torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 2.0, -3.0])
    z = torch.tensor([0.0, 0.0, -0.0, -0.0, -2.0, -2.0, 0.0, 0.0])
    _values_match(lambda y, z: torch.atan2(y, z), y, z)
    a = torch.tensor([7.5, -7.5, 7.5, -7.5, 1e30, 0.3])
    b = torch.tensor([2.0, 2.0, -2.0, -2.0, 3.0, 0.1])
    _values_match(lambda a, b: (torch.remainder(a, b), torch.fmod(a, b), a // b,
                                torch.hypot(a, b), torch.logaddexp(a, b)), a, b)


def test_linalg_det_and_scans():
    m = torch.randn(2, 3, 3)
    _values_match(lambda m: (torch.linalg.det(m), torch.linalg.slogdet(m)[0],
                             torch.linalg.slogdet(m)[1]), m, rtol=1e-4)
    x = torch.tensor([[3.0, 1.0, 3.0, 0.5, 4.0], [2.0, 2.0, 1.0, 1.0, 0.0]])
    _values_match(lambda x: (torch.cumprod(x, 1), torch.cummax(x, 1)[1], torch.cummin(x, 1)[1],
                             torch.logcumsumexp(x, 1), torch.sort(x, 1, descending=True)[1]), x)


def test_random_draws_have_the_right_shape_and_range():
    f = lambda x: x + torch.rand(3, 4)  # noqa: E731
    _, sess = export(f, (torch.zeros(3, 4),))
    r = sess.run(None, {"x": np.zeros((3, 4), np.float32)})[0]
    assert r.shape == (3, 4) and (r >= 0).all() and (r < 1).all()


def test_index_put_forms():
    i = torch.tensor([0, 2, 0])

    def f(x, v):
        y = x.clone()
        y[1:, 0] = v[:2]
        y[i, 1] += v  # repeated index: each occurrence adds
        y[:, 2:] = 7.0
        return y

    _values_match(f, torch.zeros(3, 4), torch.tensor([1.0, 2.0, 3.0]))


def test_import_fusetorch_does_not_import_onnx():
    import subprocess
    import sys
    code = ("import sys, fusetorch; fusetorch.onnx.is_in_onnx_export(); "
            "print(sorted(m for m in ('onnx', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_patch_embedding_with_dynamic_image_size():
    class Patches(nn.Module):
        def __init__(self, pool):
            super().__init__()
            self.proj, self.head, self.pool = nn.Conv2d(3, 8, 4, stride=4), nn.Linear(8, 2), pool

        def forward(self, x):
            tokens = self.proj(x).flatten(2).transpose(1, 2)  # [B, H/4 * W/4, 8]
            return self.head(tokens.mean(1) if self.pool else tokens)

    axes = {"x": {0: "b", 2: "h", 3: "w"}}
    model = Patches(pool=False)
    proto, sess = export(model, (torch.randn(2, 3, 32, 32),), input_names=["x"],
                         dynamic_axes=axes)
    for shape in [(1, 3, 16, 48), (3, 3, 64, 8)]:
        run_and_compare(sess, model, torch.randn(*shape))
    # the mean divides by the constant H/4 * W/4: not an integer multiple of h * w
    with pytest.raises(OnnxExporterError, match="no c0 \\+ c1\\*h\\*w"):
        torch.onnx.export(Patches(pool=True), torch.randn(2, 3, 32, 32), io.BytesIO(),
                          input_names=["x"], dynamic_axes=axes)

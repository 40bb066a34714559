"""torch.autocast on the CPU: which ops cast to what (PyTorch 2.13's CPU lists, observed by
hand with torch 2.13.0 on float32, bfloat16 and float64 inputs), the state API, warnings and
errors, gradients, compile guards; CUDA's lists on the stand-in cuda:0 over numpy."""
import re
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch import nn
from fusetorch.nn import functional as F

BF16, F32, F64 = torch.bfloat16, torch.float32, torch.float64


def x(dtype, *shape):
    return torch.randn(*shape).to(dtype)


# op -> (dtype out for float32 inputs, for bfloat16 inputs); float64 inputs stay float64
CASES = {
    "mm": (lambda d: torch.mm(x(d, 2, 3), x(d, 3, 2)), BF16, BF16),
    "matmul": (lambda d: torch.matmul(x(d, 2, 3), x(d, 3, 2)), BF16, BF16),
    "@": (lambda d: x(d, 2, 3) @ x(d, 3, 2), BF16, BF16),
    "bmm": (lambda d: torch.bmm(x(d, 1, 2, 3), x(d, 1, 3, 2)), BF16, BF16),
    "linear": (lambda d: F.linear(x(d, 2, 3), x(d, 4, 3), x(d, 4)), BF16, BF16),
    "conv1d": (lambda d: F.conv1d(x(d, 1, 1, 4), x(d, 1, 1, 3)), BF16, BF16),
    "conv2d": (lambda d: F.conv2d(x(d, 1, 1, 4, 4), x(d, 1, 1, 3, 3), x(d, 1)), BF16, BF16),
    "conv_transpose2d": (lambda d: F.conv_transpose2d(x(d, 1, 1, 4, 4), x(d, 1, 1, 3, 3)),
                         BF16, BF16),
    "addmm": (lambda d: torch.addmm(x(d, 2, 2), x(d, 2, 3), x(d, 3, 2)), BF16, BF16),
    "baddbmm": (lambda d: torch.baddbmm(x(d, 1, 2, 2), x(d, 1, 2, 3), x(d, 1, 3, 2)), BF16, BF16),
    "prelu": (lambda d: F.prelu(x(d, 2, 3), x(d, 1)), BF16, BF16),
    "sdpa": (lambda d: F.scaled_dot_product_attention(x(d, 1, 2, 3), x(d, 1, 2, 3),
                                                      x(d, 1, 2, 3)), BF16, BF16),
    "einsum": (lambda d: torch.einsum("ij,jk->ik", x(d, 2, 3), x(d, 3, 2)), BF16, BF16),
    "einsum i,i->i": (lambda d: torch.einsum("i,i->i", x(d, 3), x(d, 3)), F32, BF16),
    "einsum i,i->": (lambda d: torch.einsum("i,i->", x(d, 3), x(d, 3)), BF16, BF16),
    "einsum ij->j": (lambda d: torch.einsum("ij->j", x(d, 2, 3)), F32, BF16),
    "tensordot": (lambda d: torch.tensordot(x(d, 2, 3), x(d, 3, 2), 1), BF16, BF16),
    "tensordot outer": (lambda d: torch.tensordot(x(d, 3), x(d, 3), 0), BF16, BF16),
    "inner": (lambda d: torch.inner(x(d, 3), x(d, 3)), F32, BF16),
    "outer": (lambda d: torch.outer(x(d, 3), x(d, 3)), F32, BF16),
    "pinverse": (lambda d: torch.pinverse(torch.eye(3).to(d)), F32, F32),
    "linalg.cholesky": (lambda d: torch.linalg.cholesky(torch.eye(3).to(d)), F32, F32),
    "dot": (lambda d: torch.dot(x(d, 3), x(d, 3)), F32, BF16),
    "mv": (lambda d: torch.mv(x(d, 2, 3), x(d, 3)), F32, BF16),
    "cross_entropy": (lambda d: F.cross_entropy(x(d, 2, 3), torch.tensor([0, 1])), F32, F32),
    "nll_loss": (lambda d: F.nll_loss(x(d, 2, 3), torch.tensor([0, 1])), F32, F32),
    "mse_loss": (lambda d: F.mse_loss(x(d, 2, 3), x(d, 2, 3)), F32, F32),
    "l1_loss": (lambda d: F.l1_loss(x(d, 2, 3), x(d, 2, 3)), F32, F32),
    "smooth_l1_loss": (lambda d: F.smooth_l1_loss(x(d, 2, 3), x(d, 2, 3)), F32, F32),
    "bce": (lambda d: F.binary_cross_entropy(torch.rand(2, 3).to(d), torch.rand(2, 3).to(d)),
            F32, F32),
    "bce_logits": (lambda d: F.binary_cross_entropy_with_logits(x(d, 2, 3),
                                                                torch.rand(2, 3).to(d)), F32, F32),
    "margin_ranking": (lambda d: F.margin_ranking_loss(x(d, 3), x(d, 3),
                                                       torch.tensor([1.0, -1, 1])), F32, F32),
    "triplet": (lambda d: F.triplet_margin_loss(x(d, 2, 3), x(d, 2, 3), x(d, 2, 3)), F32, F32),
    "softmax": (lambda d: F.softmax(x(d, 2, 3), -1), F32, BF16),
    "log_softmax": (lambda d: F.log_softmax(x(d, 2, 3), -1), F32, BF16),
    "layer_norm": (lambda d: F.layer_norm(x(d, 2, 3), (3,)), F32, BF16),
    "group_norm": (lambda d: F.group_norm(x(d, 2, 4), 2), F32, BF16),
    "sum": (lambda d: x(d, 2, 3).sum(), F32, BF16),
    "prod": (lambda d: x(d, 2, 3).prod(), F32, F32),
    "exp": (lambda d: x(d, 2, 3).exp(), F32, BF16),
    "cdist": (lambda d: torch.cdist(x(d, 2, 3), x(d, 2, 3)), F32, F32),
    "trace": (lambda d: torch.trace(x(d, 3, 3)), F32, F32),
    "inverse": (lambda d: torch.inverse(torch.eye(3).to(d) * 2), F32, F32),
    "linalg.solve": (lambda d: torch.linalg.solve(torch.eye(3).to(d), x(d, 3)), F32, F32),
    "linalg.vector_norm": (lambda d: torch.linalg.vector_norm(x(d, 3, 3)), F32, BF16),
    "quantile": (lambda d: torch.quantile(x(d, 3), 0.5), F32, F32),
    "grid_sample": (lambda d: F.grid_sample(x(d, 1, 1, 3, 3), x(d, 1, 2, 2, 2),
                                            align_corners=False), F32, F32),
    "pad reflect": (lambda d: F.pad(x(d, 1, 1, 4), (1, 1), mode="reflect"), F32, F32),
    "pad replicate": (lambda d: F.pad(x(d, 1, 1, 4), (1, 1), mode="replicate"), F32, F32),
    "pad constant": (lambda d: F.pad(x(d, 1, 1, 4), (1, 1)), F32, BF16),
    "avg_pool2d": (lambda d: F.avg_pool2d(x(d, 1, 1, 2, 2), 2), F32, BF16),
    "cat": (lambda d: torch.cat([x(d, 2), x(BF16, 2)]), F32, BF16),
    "embedding": (lambda d: F.embedding(torch.tensor([0]), x(d, 3, 2)), F32, BF16),
    "LSTM": (lambda d: nn.LSTM(3, 4, num_layers=2).to(d)(x(d, 2, 1, 3))[1][1], BF16, BF16),
    "GRU": (lambda d: nn.GRU(3, 4).to(d)(x(d, 2, 1, 3))[0], F32, BF16),
    "MultiheadAttention": (lambda d: nn.MultiheadAttention(4, 2).to(d)(*[x(d, 2, 1, 4)] * 3)[0],
                           BF16, BF16),
}


@pytest.mark.parametrize("name", list(CASES))
def test_cpu_autocast_output_dtypes_are_pytorchs(name):
    fn, want_f32, want_bf16 = CASES[name]
    got = []
    for d in (F32, BF16, F64):
        with torch.autocast("cpu"):
            got.append(fn(d).dtype)
    assert got == [want_f32, want_bf16, F64]
    assert fn(F32).dtype is F32  # outside the block nothing changes


def test_lower_precision_values_are_the_op_on_cast_inputs():
    a, w, b = torch.randn(4, 8), torch.randn(5, 8), torch.randn(5)
    with torch.autocast("cpu"):
        got = F.linear(a, w, b)
    want = F.linear(a.bfloat16(), w.bfloat16(), b.bfloat16())
    assert got.dtype is BF16 and torch.equal(got.float(), want.float())


def test_gradients_reach_float32_parameters_in_float32():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    xb, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(xb)
        loss = F.cross_entropy(logits, y)
    assert logits.dtype is BF16 and loss.dtype is F32
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g.dtype is F32 for g in grads)
    ref = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    ref.load_state_dict(model.state_dict())
    F.cross_entropy(ref(xb), y).backward()
    for g, r in zip(grads, (p.grad for p in ref.parameters())):
        np.testing.assert_allclose(g.numpy(), r.numpy(), atol=3e-2, rtol=5e-2)  # bfloat16


def test_state_api_nesting_dtype_and_decorator():
    assert not torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") is BF16
    assert torch.get_autocast_dtype("cuda") is torch.float16
    with torch.autocast("cpu"):
        assert torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled()
        with torch.autocast("cpu", enabled=False):
            assert not torch.is_autocast_enabled("cpu")
            assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype is F32
        with torch.autocast("cpu", dtype=torch.float16):
            assert torch.get_autocast_dtype("cpu") is torch.float16
            assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype is torch.float16
        assert torch.get_autocast_dtype("cpu") is BF16
    with pytest.raises(ZeroDivisionError):
        with torch.autocast("cpu"):
            1 / 0
    assert not torch.is_autocast_enabled("cpu")  # restored after an exception too

    @torch.autocast("cpu")
    def f(a):
        return a @ a
    assert f(torch.ones(2, 2)).dtype is BF16 and not torch.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning, match=re.escape(
            "`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cpu', args...)` instead.")):
        ctx = torch.cpu.amp.autocast()
    with ctx:
        assert torch.is_autocast_enabled("cpu")
    with torch.amp.autocast("cpu"):
        assert torch.is_autocast_enabled("cpu")
    assert torch.amp.is_autocast_available("cpu") and not torch.amp.is_autocast_available("meta")


def test_warnings_and_errors_as_pytorch():
    if not torch.cuda.is_available():
        with pytest.warns(UserWarning, match="^CUDA is not available or torch_xla is imported. "
                                             "Disabling autocast.$"):
            with torch.autocast("cuda"):
                assert not torch.is_autocast_enabled("cuda")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            torch.cuda.amp.autocast()
        assert [w.category for w in seen] == [FutureWarning, UserWarning]
    with pytest.warns(UserWarning, match=re.escape(
            "In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU "
            "Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.")):
        with torch.autocast("cpu", dtype=torch.float32):
            assert not torch.is_autocast_enabled("cpu")
    expected = ("Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, "
                "fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type "
                "at start of device string: foo")
    for call in (lambda: torch.autocast("foo"), lambda: torch.get_autocast_dtype("foo")):
        with pytest.raises(RuntimeError, match="^" + re.escape(expected) + "$"):
            call()
    with pytest.raises(RuntimeError, match="^unsupported scalarType$"):
        torch.autocast("meta")
    with pytest.raises(ValueError, match=re.escape("Expected `device_type` of type `str`, got: "
                                                   "`<class 'fusetorch.runtime.device.device'>`")):
        torch.autocast(torch.device("cpu"))
    with pytest.raises(TypeError, match=re.escape("autocast()(func) requires a callable, but got "
                                                  "int.")):
        torch.autocast("cpu")(3)


def test_compiled_function_retraces_when_autocast_changes():
    f = torch.compile(lambda a, b: torch.relu(a @ b) + 1)
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    assert f(a, b).dtype is F32
    with torch.autocast("cpu"):
        out = f(a, b)
    assert out.dtype is BF16
    assert f(a, b).dtype is F32


def test_custom_fwd_casts_inputs_and_custom_bwd_replays_the_state():
    seen = {}

    class Square(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
        def forward(ctx, t):
            seen["fwd"] = (t.dtype, torch.is_autocast_enabled("cpu"))
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = torch.is_autocast_enabled("cpu")
            (t,) = ctx.saved_tensors
            return 2 * t * g

    t = torch.ones(3, dtype=BF16, requires_grad=True)
    with torch.autocast("cpu"):
        out = Square.apply(t)
    assert seen["fwd"] == (F32, False) and out.dtype is F32
    out.sum().backward()
    assert seen["bwd"] is False and t.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.fixture
def stand_in_cuda(monkeypatch):
    """tests/runtime's stand-in cuda:0 over numpy, and fusetorch.cuda saying a GPU is there."""
    from fusetorch.runtime import device as D
    from fusetorch.runtime.eager import CUDA_GENERATOR, make_table
    if D._cupy() is not None:
        yield
        return
    D.register_backend("cuda:0", D.Backend(D.device("cuda", 0), np,
                                           make_table(np, CUDA_GENERATOR)))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    try:
        yield
    finally:
        D.register_backend("cuda:0", None)


def test_cuda_lists_on_a_stand_in_device(stand_in_cuda):
    a = torch.randn(2, 3, device="cuda")
    w = torch.randn(4, 3, device="cuda")
    with torch.autocast("cuda"):
        h = F.linear(a, w)
        assert h.dtype is torch.float16 and h.device.type == "cuda"
        assert torch.mv(w, a[0]).dtype is torch.float16  # on CUDA's list, not on the CPU's
        assert F.softmax(h, -1).dtype is F32 and F.layer_norm(h, (4,)).dtype is F32
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype is F32  # CPU tensors: no autocast
        assert F.mse_loss(h, torch.zeros(2, 4, device="cuda", dtype=torch.float16)).dtype is F32


def test_cuda_bfloat16_needs_a_device_that_has_it(stand_in_cuda):
    if torch.cuda.is_bf16_supported():
        pytest.skip("this GPU computes in bfloat16")
    with pytest.raises(RuntimeError, match="^Current CUDA Device does not support bfloat16. "
                                           "Please switch dtype to float16.$"):
        torch.autocast("cuda", dtype=torch.bfloat16)

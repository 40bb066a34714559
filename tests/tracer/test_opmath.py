"""tracer/opmath.py: float16/bfloat16 composites computed in float32 and rounded once, as
ATen's CPU kernels compute them. References: numpy float64 of the same (rounded) half inputs;
one rounding puts a result within half an ulp of it (float32's own error is far below)."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.tracer.opmath import half_dtype, in_float32


def _ulps(got, want, dtype):
    """|got - want| in units of the dtype's spacing at want (float16: 10 bits, bfloat16: 7)."""
    bits, tiny = (10, 2.0 ** -24) if dtype == "float16" else (7, 2.0 ** -133)
    spacing = np.maximum(2.0 ** (np.floor(np.log2(np.maximum(np.abs(want), tiny))) - bits), tiny)
    return np.abs(got - want) / spacing


def test_in_float32_casts_half_tensors_and_rounds_results_once():
    x = torch.tensor([1.0, 2049.0], dtype=torch.float16)  # 2049 rounds to 2048 in float16
    f = torch.tensor([0.5, 0.5])
    assert half_dtype(f, [x]) is torch.float16 and half_dtype(f, 3) is None
    seen = []

    def fn(a, b):
        seen.append((a.dtype, b.dtype))
        return a + b, a.sum(), 7
    s, total, k = in_float32(fn, x, f)
    assert seen == [(torch.float32, torch.float32)] and k == 7
    assert s.dtype == total.dtype == torch.float16
    # 1 + 2048 = 2049 exactly in float32, then one rounding (a tie: to even, 2048)
    assert s.tolist() == [1.5, 2048.0] and total.item() == 2048.0
    assert in_float32(lambda a: a * 2, f).dtype == torch.float32  # no half tensor: as it is


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_lerp_in_half_precision_rounds_once(dtype):
    d = getattr(torch, dtype)
    r = np.random.default_rng(12)
    a, e = (torch.tensor(r.standard_normal(200), dtype=d) for _ in range(2))
    wt = torch.tensor(r.uniform(-1, 2, 200), dtype=d)
    a64, e64, w64 = (t.double().numpy() for t in (a, e, wt))
    for w, want in ((0.4, a64 + 0.4 * (e64 - a64)), (0.75, a64 + 0.75 * (e64 - a64)),
                    (wt, a64 + w64 * (e64 - a64))):
        got = torch.lerp(a, e, w)
        assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_convolutions_and_addbmm_in_half_precision_round_once(dtype):
    # the float32 products, sums and bias rounded once (ATen's CPU kernels); the bias added
    # after a half product rounded twice, 1 ulp off and in bfloat16 more
    import fusetorch.nn.functional as F
    d = getattr(torch, dtype)
    r = np.random.default_rng(13)
    h = lambda a: torch.tensor(a, dtype=d)  # noqa: E731
    x, w, b = h(r.standard_normal((2, 3, 7, 6))), h(r.standard_normal((4, 3, 3, 2))), \
        h(r.standard_normal(4))
    x64, w64, b64 = (t.double().numpy() for t in (x, w, b))
    win = np.lib.stride_tricks.sliding_window_view(x64, (3, 2), axis=(2, 3))  # n c oh ow kh kw
    want = np.einsum("ncijkl,ockl->noij", win, w64) + b64[:, None, None]
    got = F.conv2d(x, w, b)
    assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6
    # conv_transpose1d of a length-1 kernel is a channel mix: x^T w + b at every position
    x1, w1 = h(r.standard_normal((2, 3, 5))), h(r.standard_normal((3, 4, 1)))
    want = np.einsum("ncl,co->nol", x1.double().numpy(), w1.double().numpy()[:, :, 0]) \
        + b64[:, None]
    got = F.conv_transpose1d(x1, w1, b)
    assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6
    # addbmm: ATen's loop of addmm, each batch's float32 gemm added and rounded once
    inp, b1, b2 = h(r.standard_normal((3, 4))), h(r.standard_normal((2, 3, 5))), \
        h(r.standard_normal((2, 5, 4)))
    i64, p64, q64 = (t.double().numpy() for t in (inp, b1, b2))
    acc = torch.tensor(0.6 * i64 + 0.2 * p64[0] @ q64[0]).to(d).double().numpy()
    want = acc + 0.2 * p64[1] @ q64[1]  # the second step's exact value
    got = torch.addbmm(inp, b1, b2, beta=0.6, alpha=0.2)
    assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_logsigmoid_and_huber_loss_in_half_precision_round_once(dtype):
    import fusetorch.nn.functional as F
    d = getattr(torch, dtype)
    r = np.random.default_rng(14)
    x, y = (torch.tensor(r.uniform(-9, 9, 300), dtype=d) for _ in range(2))
    x64, y64 = x.double().numpy(), y.double().numpy()
    want = -np.logaddexp(0.0, -x64)  # log(sigmoid(x)), exactly
    got = F.logsigmoid(x)
    assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6
    z = np.abs(x64 - y64)  # the kernel's z is not rounded to half before squaring
    want = np.where(z < 4.3, 0.5 * z * z, 4.3 * (z - 0.5 * 4.3))
    got = F.huber_loss(x, y, reduction="none", delta=4.3)
    assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_attention_bilinear_and_weighted_bags_in_half_precision_round_once(dtype):
    import fusetorch.nn.functional as F
    d = getattr(torch, dtype)
    r = np.random.default_rng(15)
    h = lambda *s: torch.tensor(r.standard_normal(s), dtype=d)  # noqa: E731
    q, k, v = h(2, 3, 8), h(2, 6, 8), h(2, 6, 8)
    q64, k64, v64 = (t.double().numpy() for t in (q, k, v))
    s = q64 @ k64.transpose(0, 2, 1) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v64  # PyTorch's math path: float32 inside
    got = F.scaled_dot_product_attention(q, k, v)
    assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6
    x1, x2, w = h(4, 3), h(4, 5), h(2, 3, 5)
    want = np.einsum("ni,oij,nj->no", x1.double().numpy(), w.double().numpy(),
                     x2.double().numpy())
    got = F.bilinear(x1, x2, w)
    assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6
    table, psw = h(10, 4), h(6)
    idx = torch.tensor([1, 2, 2, 7, 0, 9])
    t64, w64 = table.double().numpy(), psw.double().numpy()
    rows = t64[[1, 2, 2, 7, 0, 9]] * w64[:, None]
    want = np.stack([rows[:4].sum(0), rows[4:].sum(0)])
    got = F.embedding_bag(idx, table, torch.tensor([0, 4]), mode="sum", per_sample_weights=psw)
    assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6

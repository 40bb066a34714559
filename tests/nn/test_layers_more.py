"""The further layers: PReLU/GLU/RReLU/shrinks/Softmax2d, gumbel_softmax, InstanceNorm,
RMSNorm, LocalResponseNorm, distances, EmbeddingBag, parametrizations, and the
`nn.modules.<file>` import paths scripts use.

Values against numpy float64 references written here from PyTorch's documented formulas,
gradients by `gradcheck` in float64. Reprs, parameter names, state_dict keys and messages were
observed by hand in PyTorch 2.13.0 (CPU) and are written literally.
"""
import importlib
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck
from fusetorch.nn.utils import parametrizations as P
from fusetorch.nn.utils import parametrize

F64 = torch.float64
RNG = np.random.default_rng(7)


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


def np_(t):
    return t.detach().numpy()


def rnd(*shape, grad=False):
    return t64(RNG.standard_normal(shape), grad)


# ---------------------------------------------------------------- activations

def test_activation_values_and_gradients():
    x = rnd(2, 3, 4, grad=True)
    a = np_(x)
    w = t64([0.1, -0.2, 0.3], grad=True)
    np.testing.assert_allclose(np_(F.prelu(x, w)), np.where(a > 0, a, np_(w)[:, None] * a))
    np.testing.assert_allclose(np_(nn.PReLU()(x)), np.where(a > 0, a, 0.25 * a))
    x4 = rnd(2, 4, 3, grad=True)
    b = np_(x4)
    np.testing.assert_allclose(np_(F.glu(x4, 1)), b[:, :2] / (1 + np.exp(-b[:, 2:])))
    np.testing.assert_allclose(np_(nn.Hardshrink(0.4)(x)), np.where(np.abs(a) > 0.4, a, 0))
    np.testing.assert_allclose(np_(nn.Softshrink(0.4)(x)),
                               np.where(a > 0.4, a - 0.4, np.where(a < -0.4, a + 0.4, 0)))
    r = nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_allclose(np_(r(x)), np.where(a >= 0, a, 0.2 * a))
    e = np.exp(a - a.max(0))
    np.testing.assert_allclose(np_(nn.Softmax2d()(x)), e / e.sum(0))
    assert gradcheck(F.prelu, (x, w))
    assert gradcheck(lambda v: F.glu(v, -1), (x4[..., :2].detach().clone().requires_grad_(),))
    assert gradcheck(lambda v: F.softshrink(v, 0.3), (x,))


def test_rrelu_training_slopes_are_random_in_range():
    x = -t64(RNG.uniform(0.5, 2, (200,)))
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = np_(y) / np_(x)
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.03
    pos = t64([1.0, 2.0])
    np.testing.assert_allclose(np_(F.rrelu(pos, training=True)), [1.0, 2.0])


def test_gumbel_softmax():
    logits = rnd(5, 6, grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(np_(soft).sum(-1), 1.0)
    hard = F.gumbel_softmax(logits, hard=True)
    h = np_(hard)
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(-1) == 1)
    # straight-through: the gradient is the soft sample's (sums to 0 over each row)
    (hard * t64(np.arange(6.0))).sum().backward()
    assert np.abs(np_(logits.grad)).sum() > 0
    np.testing.assert_allclose(np_(logits.grad).sum(-1), 0, atol=1e-12)


def test_activation_errors_and_reprs():
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is "
                                           "size 3"):
        F.glu(torch.zeros(3, 3), 1)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel "
                                           "size. Found parameter numbers = 2 and channel size "
                                           "= 3."):
        F.prelu(torch.zeros(2, 3), torch.zeros(2))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 1D"):
        nn.Softmax2d()(torch.zeros(2))
    assert [repr(m) for m in (nn.PReLU(), nn.PReLU(3), nn.GLU(), nn.RReLU(),
                              nn.RReLU(0.1, 0.3, True), nn.Hardshrink(), nn.Softshrink(0.3),
                              nn.Softmax2d())] == [
        "PReLU(num_parameters=1)", "PReLU(num_parameters=3)", "GLU(dim=-1)",
        "RReLU(lower=0.125, upper=0.3333333333333333)",
        "RReLU(lower=0.1, upper=0.3, inplace=True)", "Hardshrink(0.5)", "Softshrink(0.3)",
        "Softmax2d()"]
    assert [n for n, _ in nn.PReLU().named_parameters()] == ["weight"]


# ---------------------------------------------------------------- normalisation

def test_instance_norm_values_and_running_stats():
    x = rnd(3, 2, 5)
    a = np_(x)
    m = nn.InstanceNorm1d(2, affine=True, track_running_stats=True).double()
    with torch.no_grad():
        m.weight.copy_(t64([1.5, -0.5]))
        m.bias.copy_(t64([0.1, 0.2]))
    mean, var = a.mean(2, keepdims=True), a.var(2, keepdims=True)
    ref = (a - mean) / np.sqrt(var + 1e-5) * np.array([1.5, -0.5])[:, None] + \
        np.array([0.1, 0.2])[:, None]
    np.testing.assert_allclose(np_(m(x)), ref, rtol=1e-10)
    np.testing.assert_allclose(np_(m.running_mean), 0.1 * a.mean(2).mean(0))
    np.testing.assert_allclose(np_(m.running_var), 0.9 + 0.1 * a.var(2, ddof=1).mean(0))
    m.eval()
    rm, rv = np_(m.running_mean)[:, None], np_(m.running_var)[:, None]
    np.testing.assert_allclose(np_(m(x)), (a - rm) / np.sqrt(rv + 1e-5) * np.array(
        [1.5, -0.5])[:, None] + np.array([0.1, 0.2])[:, None], rtol=1e-10)
    # unbatched input, default (no affine, no stats)
    np.testing.assert_allclose(np_(nn.InstanceNorm1d(2)(x[0])), ref[0] * 0 + (
        (a[0] - a[0].mean(1, keepdims=True)) / np.sqrt(a[0].var(1, keepdims=True) + 1e-5)),
        rtol=1e-10)
    x2 = rnd(2, 3, 4, 4, grad=True)
    assert gradcheck(lambda v: F.instance_norm(v), (x2,))
    assert list(nn.InstanceNorm2d(4).state_dict()) == []
    assert list(nn.InstanceNorm2d(4, affine=True, track_running_stats=True).state_dict()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked"]


def test_instance_norm_errors_warning_reprs():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.InstanceNorm1d(3)(torch.zeros(2, 3, 4, 5))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training, "
                                         r"got input size torch.Size\(\[2, 3, 1\]\)"):
        F.instance_norm(torch.zeros(2, 3, 1))
    with pytest.raises(ValueError, match="expected input's size at dim=1 to match num_features "
                                         r"\(4\), but got: 3."):
        nn.InstanceNorm1d(4, affine=True)(torch.zeros(2, 3, 4))
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm1d(4)(torch.zeros(2, 3, 4))
    assert repr(nn.InstanceNorm1d(3)) == ("InstanceNorm1d(3, eps=1e-05, momentum=0.1, "
                                          "affine=False, bias=False, track_running_stats=False)")
    assert repr(nn.InstanceNorm2d(4, affine=True, track_running_stats=True)) == (
        "InstanceNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, "
        "track_running_stats=True)")


def test_rms_norm_and_local_response_norm():
    x = rnd(2, 3, 4, grad=True)
    a = np_(x)
    w = t64(RNG.uniform(0.5, 2, (3, 4)), grad=True)
    ref = a / np.sqrt((a * a).mean((1, 2), keepdims=True) + 1e-3) * np_(w)
    np.testing.assert_allclose(np_(F.rms_norm(x, (3, 4), w, 1e-3)), ref, rtol=1e-10)
    # eps None: the dtype's machine epsilon
    tiny = t64(np.full((1, 2), 1e-9))
    np.testing.assert_allclose(np_(nn.RMSNorm(2).double()(tiny)),
                               1e-9 / np.sqrt(1e-18 + np.finfo(np.float64).eps))
    assert gradcheck(lambda v, u: F.rms_norm(v, (4,), u[0]), (x, w))
    size, alpha, beta, k = 3, 0.1, 0.75, 2.0
    x4 = rnd(2, 5, 3, 2, grad=True)
    b = np_(x4)
    sq = np.pad(b * b, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
    div = (k + alpha * sum(sq[:, i:i + 5] for i in range(size)) / size) ** beta
    np.testing.assert_allclose(np_(nn.LocalResponseNorm(size, alpha, beta, k)(x4)), b / div,
                               rtol=1e-10)
    assert gradcheck(lambda v: F.local_response_norm(v, 2, 0.5, 0.5, 1.0), (x4,))
    assert repr(nn.RMSNorm(4)) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
    assert repr(nn.RMSNorm([2, 3], eps=1e-3, elementwise_affine=False)) == \
        "RMSNorm((2, 3), eps=0.001, elementwise_affine=False)"
    assert repr(nn.LocalResponseNorm(3)) == "LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)"
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with "
                                           r"shape \[\*4\], but got input of size\[2, 3\]"):
        F.rms_norm(torch.zeros(2, 3), (4,))


def test_rms_norm_half_computes_in_float32():
    # 400 ** 2 overflows float16: the squares are float32's, the result rounded once to half
    a = np.array([[43.25, 463.25, 671.0], [396.5, 20.23, 0.0]], dtype=np.float16)
    w = np.array([0.5, -2.0, 1.5], dtype=np.float16)
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    ref = a64 / np.sqrt((a64 * a64).mean(1, keepdims=True) + 0.5) * w64
    for d, nd in ((torch.float16, np.float16), (torch.bfloat16, None)):
        x = torch.tensor(a, dtype=torch.float32).to(d)
        out = F.rms_norm(x, (3,), torch.tensor(w, dtype=torch.float32).to(d), eps=0.5)
        assert out.dtype is d
        np.testing.assert_allclose(out.float().numpy(), ref, rtol=1e-2 if nd is None else 2e-3)
    # eps None for a half input is float32's epsilon (the computation's dtype), not float16's
    v = float(np.float16(1e-2))
    small = torch.tensor(np.full((1, 4), v, dtype=np.float16))
    np.testing.assert_allclose(F.rms_norm(small, (4,)).float().numpy(),
                               np.full((1, 4), v / np.sqrt(v * v + np.finfo(np.float32).eps)),
                               rtol=2e-3)
    assert F.rms_norm(torch.zeros(0, 3, dtype=torch.float16), (3,)).shape == (0, 3)


# ---------------------------------------------------------------- distances

def test_distances():
    a, b = rnd(4, 5, grad=True), rnd(4, 5, grad=True)
    x, y = np_(a), np_(b)
    n1 = np.maximum(np.linalg.norm(x, axis=1), 1e-8)
    n2 = np.maximum(np.linalg.norm(y, axis=1), 1e-8)
    np.testing.assert_allclose(np_(nn.CosineSimilarity()(a, b)), (x * y).sum(1) / n1 / n2)
    for p in (2, 1, 3, float("inf")):
        d = np.abs(x - y + 1e-6)
        ref = d.max(1) if p == float("inf") else (d ** p).sum(1) ** (1 / p)
        np.testing.assert_allclose(np_(nn.PairwiseDistance(p)(a, b)), ref, rtol=1e-10)
        nrm = np.abs(x).max(0) if p == float("inf") else (np.abs(x) ** p).sum(0) ** (1 / p)
        np.testing.assert_allclose(np_(F.normalize(a, p, 0)), x / nrm, rtol=1e-10)
    pd = np_(F.pdist(a, 1.5))
    ref = [(np.abs(x[i] - x[j]) ** 1.5).sum() ** (1 / 1.5) for i in range(4)
           for j in range(i + 1, 4)]
    np.testing.assert_allclose(pd, ref, rtol=1e-10)
    assert gradcheck(lambda u, v: F.cosine_similarity(u, v, dim=0), (a, b))
    assert gradcheck(lambda u, v: F.pairwise_distance(u, v, 3.0, keepdim=True), (a, b))
    assert gradcheck(lambda u: F.pdist(u), (a,))
    assert gradcheck(lambda u: F.normalize(u, 2, 1), (a,))
    # zero vectors: PyTorch's gradients (norm's gradient 0 at 0; eps clamps)
    z = torch.zeros(3, 4, dtype=F64, requires_grad=True)
    F.normalize(z).sum().backward()
    np.testing.assert_allclose(np_(z.grad), 1e12)
    z = torch.zeros(3, 4, dtype=F64, requires_grad=True)
    F.cosine_similarity(z, torch.ones(3, 4, dtype=F64)).sum().backward()
    np.testing.assert_allclose(np_(z.grad), 5e7)
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet "
                                           "common dtype is Long"):
        F.cosine_similarity(torch.ones(3, 4, dtype=torch.int64), torch.ones(3, 4,
                                                                            dtype=torch.int64))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        F.pdist(torch.ones(3))


# ---------------------------------------------------------------- EmbeddingBag

def bag_np(w, idx, bags, mode, psw=None, pad=None):
    out = []
    for bag in bags:
        rows = [w[idx[i]] * (1 if psw is None else psw[i]) for i in bag if idx[i] != pad]
        if not rows:
            out.append(np.zeros(w.shape[1]))
        elif mode == "sum":
            out.append(np.sum(rows, 0))
        elif mode == "mean":
            out.append(np.mean(rows, 0))
        else:
            out.append(np.max(rows, 0))
    return np.array(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    w = RNG.standard_normal((6, 3))
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 0])
    offsets = [0, 3, 3, 6]
    bags = [range(0, 3), range(3, 3), range(3, 6), range(6, 8)]
    wt = t64(w, grad=True)
    got = F.embedding_bag(torch.tensor(idx), wt, torch.tensor(offsets), mode=mode)
    np.testing.assert_allclose(np_(got), bag_np(w, idx, bags, mode), rtol=1e-10)
    got = F.embedding_bag(torch.tensor(idx), wt, torch.tensor(offsets + [8]), mode=mode,
                          include_last_offset=True, padding_idx=4)
    np.testing.assert_allclose(np_(got), bag_np(w, idx, bags, mode, pad=4), rtol=1e-10)
    got = F.embedding_bag(torch.tensor(idx.reshape(2, 4)), wt, mode=mode)
    np.testing.assert_allclose(np_(got), bag_np(w, idx, [range(4), range(4, 8)], mode),
                               rtol=1e-10)
    psw = RNG.standard_normal(8)
    if mode == "sum":
        got = F.embedding_bag(torch.tensor(idx), wt, torch.tensor(offsets),
                              per_sample_weights=t64(psw), mode="sum")
        np.testing.assert_allclose(np_(got), bag_np(w, idx, bags, mode, psw), rtol=1e-10)
    assert gradcheck(lambda v: F.embedding_bag(torch.tensor(idx), v, torch.tensor([0, 2, 5]),
                                               mode=mode, padding_idx=2), (wt,))
    bag = nn.EmbeddingBag(6, 3, mode=mode).double()
    with torch.no_grad():
        bag.weight.copy_(wt)
    np.testing.assert_allclose(np_(bag(torch.tensor(idx), torch.tensor(offsets))),
                               bag_np(w, idx, bags, mode), rtol=1e-10)


def test_embedding_bag_errors_and_reprs():
    w = torch.zeros(6, 2)
    i = torch.tensor([1, 2, 4])
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0, i.e., the first "
                                           "sequence in the mini-batch has to start from "
                                           "position 0. However, got 1"):
        F.embedding_bag(i, w, torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="offsets\\[-1\\] can not be greater than input's "
                                           "length 3 but got offsets\\[-1\\] of 4"):
        F.embedding_bag(i, w, torch.tensor([0, 4]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(i, w)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for "
                                                  "mode='sum' \\(got mode='mean'\\)"):
        F.embedding_bag(i, w, torch.tensor([0]), per_sample_weights=torch.ones(3))
    assert repr(nn.EmbeddingBag(5, 3)) == "EmbeddingBag(5, 3, mode='mean')"
    assert repr(nn.EmbeddingBag(5, 3, mode="max", padding_idx=0)) == \
        "EmbeddingBag(5, 3, mode='max', padding_idx=0)"
    assert repr(nn.EmbeddingBag(5, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True,
                                mode="sum")) == ("EmbeddingBag(5, 3, max_norm=1.0, norm_type=1.0,"
                                                 " scale_grad_by_freq=True, mode='sum')")


# ---------------------------------------------------------------- parametrizations

def test_weight_norm_parametrization():
    lin = nn.Linear(3, 2).double()
    with torch.no_grad():
        lin.weight.copy_(t64([[1.0, 2, 2], [0, 3, 4]]))
    w0 = lin.weight
    P.weight_norm(lin)
    assert type(lin).__name__ == "ParametrizedLinear" and isinstance(lin, nn.Linear)
    assert list(lin.state_dict()) == ["bias", "parametrizations.weight.original0",
                                      "parametrizations.weight.original1"]
    g, v = lin.parametrizations.weight.original0, lin.parametrizations.weight.original1
    assert v is w0 and tuple(g.shape) == (2, 1)
    np.testing.assert_allclose(np_(g), [[3.0], [5.0]])
    np.testing.assert_allclose(np_(lin.weight), [[1.0, 2, 2], [0, 3, 4]])
    assert repr(lin) == (
        "ParametrizedLinear(\n  in_features=3, out_features=2, bias=True\n"
        "  (parametrizations): ModuleDict(\n    (weight): ParametrizationList(\n"
        "      (0): _WeightNorm()\n    )\n  )\n)")
    assert gradcheck(lambda gg, vv: P._weight_norm(vv, gg, 0), (
        g.detach().clone().requires_grad_(), v.detach().clone().requires_grad_()))
    # setting the weight goes through right_inverse
    lin.weight = t64([[0.0, 0, 2], [6, 0, 8]])
    np.testing.assert_allclose(np_(g), [[2.0], [10.0]])
    assert tuple(P.weight_norm(nn.Conv1d(2, 3, 2), dim=None)
                 .parametrizations.weight.original0.shape) == ()
    parametrize.remove_parametrizations(lin, "weight")
    assert type(lin) is nn.Linear and list(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(np_(lin.weight), [[0.0, 0, 2], [6, 0, 8]])


def test_spectral_norm_and_custom_parametrization():
    lin = nn.Linear(2, 3).double()
    with torch.no_grad():
        lin.weight.copy_(t64([[3.0, 0], [0, 1], [0, 0]]))
    P.spectral_norm(lin, n_power_iterations=5)
    assert list(lin.state_dict()) == ["bias", "parametrizations.weight.original",
                                      "parametrizations.weight.0._u",
                                      "parametrizations.weight.0._v"]
    np.testing.assert_allclose(np_(lin.weight), [[1.0, 0], [0, 1 / 3], [0, 0]], rtol=1e-6)
    w = RNG.standard_normal((4, 3))
    m = nn.Linear(3, 4).double()
    with torch.no_grad():
        m.weight.copy_(t64(w))
    P.spectral_norm(m, n_power_iterations=30)
    np.testing.assert_allclose(np_(m.weight), w / np.linalg.svd(w, compute_uv=False)[0],
                               rtol=1e-6)

    class Sym(nn.Module):
        def forward(self, x):
            return x + x.t()
    m = nn.Linear(3, 3).double()
    parametrize.register_parametrization(m, "weight", Sym())
    assert parametrize.is_parametrized(m) and not parametrize.is_parametrized(m, "bias")
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    orig = np_(m.parametrizations.weight.original)
    np.testing.assert_allclose(np_(m.weight), orig + orig.T)
    out = m(torch.ones(1, 3, dtype=F64)).sum()
    out.backward()
    assert m.parametrizations.weight.original.grad is not None
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(nn.Linear(2, 2), "weight")


def test_legacy_weight_norm():
    lin = nn.Linear(3, 2).double()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        nn.utils.weight_norm(lin)
    assert any(issubclass(r.category, FutureWarning) for r in rec)
    assert list(lin.state_dict()) == ["bias", "weight_g", "weight_v"]
    with torch.no_grad():
        lin.weight_g.mul_(2.0)
    x = torch.ones(1, 3, dtype=F64)
    v = np_(lin.weight_v)
    ref = v * (2 * np.linalg.norm(v, axis=1, keepdims=True) / np.linalg.norm(v, axis=1,
                                                                                keepdims=True))
    np.testing.assert_allclose(np_(lin(x)), x.numpy() @ ref.T + np_(lin.bias))
    nn.utils.remove_weight_norm(lin)
    assert list(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(np_(lin.weight), ref)


# ---------------------------------------------------------------- import paths

@pytest.mark.parametrize("name,classes", [
    ("linear", ["Identity", "Linear", "Bilinear", "LazyLinear"]),
    ("container", ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]),
    ("conv", ["Conv1d", "Conv2d"]),
    ("activation", ["ReLU", "PReLU", "GLU", "RReLU", "Softmax2d", "Hardshrink", "Softshrink",
                    "Softmin", "LogSoftmax", "SiLU", "Mish", "Tanhshrink", "CELU", "Threshold"]),
    ("batchnorm", ["_NormBase", "_BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]),
    ("instancenorm", ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]),
    ("normalization", ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]),
    ("dropout", ["Dropout"]), ("loss", ["_Loss", "_WeightedLoss", "CTCLoss", "MSELoss"]),
    ("pooling", ["MaxPool2d"]), ("rnn", ["LSTM", "RNNBase"]),
    ("sparse", ["Embedding", "EmbeddingBag"]), ("flatten", ["Flatten", "Unflatten"]),
    ("module", ["Module"]), ("distance", ["PairwiseDistance", "CosineSimilarity"])])
def test_module_import_paths(name, classes):
    mod = importlib.import_module(f"fusetorch.nn.modules.{name}")
    for c in classes:
        assert getattr(mod, c) is getattr(nn, c, getattr(mod, c))
    assert importlib.import_module("fusetorch.nn.modules.module").Module is nn.Module


def test_prelu_keeps_a_0d_input_0d():
    """A single slope (shape [1] or 0-d) leaves a 0-d input 0-d, value and gradient; the
    slope's gradient has the slope's shape (issue 26: both came back [1])."""
    for w in (torch.tensor([0.25], dtype=torch.float64), torch.tensor(0.25, dtype=torch.float64)):
        x = torch.tensor(-3.0, dtype=torch.float64, requires_grad=True)
        w.requires_grad_()
        r = F.prelu(x, w)
        assert r.shape == () and r.item() == -0.75
        r.backward()
        assert x.grad.shape == () and x.grad.item() == 0.25
        assert w.grad.shape == w.shape and w.grad.sum().item() == -3.0
    assert nn.PReLU()(torch.tensor(-2.0)).shape == ()


@pytest.mark.parametrize("shape,orthogonal_map", [
    ((4, 4), None), ((4, 4), "cayley"), ((5, 3), None), ((3, 5), "householder"),
    ((5, 3), "matrix_exp"), ((2, 4, 4), None),
])
def test_orthogonal_parametrization_gives_orthonormal_columns_or_rows(shape, orthogonal_map):
    from fusetorch.nn.utils import parametrizations
    torch.manual_seed(0)
    m = torch.nn.Module()
    m.weight = torch.nn.Parameter(torch.randn(*shape, dtype=torch.float64))
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
    Q = m.weight.detach().numpy()
    small = min(shape[-2:])
    gram = Q.swapaxes(-1, -2) @ Q if shape[-2] >= shape[-1] else Q @ Q.swapaxes(-1, -2)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-10)
    # trained through the parametrization, it stays orthogonal
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    target = torch.randn(*shape, dtype=torch.float64)
    before = ((m.weight - target) ** 2).sum().item()
    for _ in range(3):
        opt.zero_grad()
        ((m.weight - target) ** 2).sum().backward()
        opt.step()
    Q = m.weight.detach().numpy()
    gram = Q.swapaxes(-1, -2) @ Q if shape[-2] >= shape[-1] else Q @ Q.swapaxes(-1, -2)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-10)
    assert ((m.weight - target) ** 2).sum().item() < before


def test_orthogonal_parametrization_keeps_an_orthogonal_weight_and_refuses_bad_input():
    from fusetorch.nn.utils import parametrizations
    lin = torch.nn.Linear(3, 3, dtype=torch.float64)
    rot = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(rot))
    parametrizations.orthogonal(lin)
    # an orthogonal weight is kept as it is (its base), the original holds -Id
    np.testing.assert_allclose(lin.weight.detach().numpy(), rot, atol=1e-12)
    orig = lin.parametrizations.weight.original.detach().numpy()
    np.testing.assert_allclose(orig, -np.eye(3))
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor "
                                         "of 1 dimensions."):
        parametrizations.orthogonal(torch.nn.Linear(3, 3), "bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", '
                                         '"cayley", "householder". Got: qr'):
        parametrizations.orthogonal(torch.nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
        parametrizations.orthogonal(torch.nn.Linear(3, 3), "w")
    fixed = torch.nn.Linear(3, 3)
    parametrizations.orthogonal(fixed, use_trivialization=False)
    with pytest.raises(NotImplementedError, match="not possible to assign to the matrix "
                                                  "exponential"):
        fixed.weight = torch.eye(3)


def test_dist_grad_fn_is_pytorchs():
    d = torch.dist(torch.ones(3, requires_grad=True), torch.zeros(3))
    assert type(d.grad_fn).__name__ == "DistBackward0" or d.grad_fn.name() == "DistBackward0"


def test_householder_without_trivialization_round_trips_an_assigned_orthogonal_matrix():
    from fusetorch.nn.utils import parametrizations
    lin = torch.nn.Linear(3, 5, dtype=torch.float64)  # weight 5 x 3, a tall matrix
    parametrizations.orthogonal(lin, orthogonal_map="householder", use_trivialization=False)
    q = np.linalg.qr(np.random.default_rng(1).standard_normal((5, 3)))[0]
    lin.weight = torch.tensor(q)
    np.testing.assert_allclose(lin.weight.detach().numpy(), q, atol=1e-12)
    assert not hasattr(lin.parametrizations.weight[0], "base")

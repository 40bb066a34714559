"""Normalization layers (batch_norm, layer_norm, group_norm and their modules) and Embedding.

Forward values against numpy float64 references written here; BatchNorm's running statistics
over several steps against the update rule in PyTorch's docs (running = (1 - momentum) * running
+ momentum * batch statistic, the variance stored unbiased; momentum=None: cumulative average);
gradients through `gradcheck` in float64. Reprs, defaults and error messages were observed by
hand in PyTorch 2.13.0 (CPU) and are written literally; torch is not imported here.
"""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck

F64 = torch.float64
RNG = np.random.default_rng(7)


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


def np_(t):
    return t.detach().numpy()


def bn_np(x, mean, var, w, b, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


def batch_stats(x):
    axes = (0,) + tuple(range(2, x.ndim))
    return x.mean(axis=axes), x.var(axis=axes), x.var(axis=axes, ddof=1)


# ---------------------------------------------------------------- batch_norm

@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (2, 3, 4, 5), (2, 3, 2, 2, 3)])
def test_batch_norm_training_values_and_running_update(shape):
    x = RNG.standard_normal(shape) * 2 + 1
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)
    rm_t, rv_t = t64(rm), t64(rv)
    out = F.batch_norm(t64(x), rm_t, rv_t, t64(w), t64(b), training=True, momentum=0.3,
                       eps=1e-3)
    mean, var, uvar = batch_stats(x)
    np.testing.assert_allclose(np_(out), bn_np(x, mean, var, w, b, 1e-3), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(np_(rm_t), 0.7 * rm + 0.3 * mean, rtol=1e-12)
    np.testing.assert_allclose(np_(rv_t), 0.7 * rv + 0.3 * uvar, rtol=1e-12)


def test_batch_norm_eval_uses_running_stats():
    x = RNG.standard_normal((4, 3, 2))
    rm, rv = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)
    rm_t, rv_t = t64(rm), t64(rv)
    out = F.batch_norm(t64(x), rm_t, rv_t, training=False)
    np.testing.assert_allclose(np_(out), bn_np(x, rm, rv, None, None, 1e-5), rtol=1e-12)
    np.testing.assert_array_equal(np_(rm_t), rm)  # not updated in eval
    out = F.batch_norm(t64(x), None, None, training=True)  # no buffers: batch stats only
    mean, var, _ = batch_stats(x)
    np.testing.assert_allclose(np_(out), bn_np(x, mean, var, None, None, 1e-5), rtol=1e-12)


def test_batchnorm_module_running_stats_over_steps():
    bn = nn.BatchNorm2d(3).double()
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(4):
        x = RNG.standard_normal((4, 3, 2, 3)) * (step + 1) + step
        out = bn(t64(x))
        mean, var, uvar = batch_stats(x)
        np.testing.assert_allclose(np_(out), bn_np(x, mean, var, np.ones(3), np.zeros(3), 1e-5),
                                   rtol=1e-12, atol=1e-12)
        rm = 0.9 * rm + 0.1 * mean
        rv = 0.9 * rv + 0.1 * uvar
        np.testing.assert_allclose(np_(bn.running_mean), rm, rtol=1e-12)
        np.testing.assert_allclose(np_(bn.running_var), rv, rtol=1e-12)
        assert bn.num_batches_tracked.item() == step + 1
    assert bn.num_batches_tracked.dtype == torch.int64
    # eval: the running statistics, and the buffers stay put
    bn.eval()
    x = RNG.standard_normal((2, 3, 2, 2))
    np.testing.assert_allclose(np_(bn(t64(x))), bn_np(x, rm, rv, np.ones(3), np.zeros(3), 1e-5),
                               rtol=1e-12)
    np.testing.assert_allclose(np_(bn.running_mean), rm, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 4


def test_batchnorm_cumulative_average_when_momentum_is_none():
    bn = nn.BatchNorm1d(2, momentum=None).double()
    xs = [RNG.standard_normal((5, 2)) * (k + 1) for k in range(3)]
    for x in xs:
        bn(t64(x))
    np.testing.assert_allclose(np_(bn.running_mean), np.mean([x.mean(0) for x in xs], 0),
                               rtol=1e-12)
    # cumulative: starts from running_var = 1 with factor 1/1, so the initial value drops out
    np.testing.assert_allclose(np_(bn.running_var),
                               np.mean([x.var(0, ddof=1) for x in xs], 0), rtol=1e-12)


def test_batchnorm_train_and_eval_differ_and_no_tracking():
    x = t64(RNG.standard_normal((6, 3)) * 3 + 2)
    bn = nn.BatchNorm1d(3).double()
    train_out = np_(bn(x))
    bn.eval()
    assert not np.allclose(train_out, np_(bn(x)))
    # track_running_stats=False: no buffers, batch statistics in eval too
    nt = nn.BatchNorm1d(3, track_running_stats=False).double().eval()
    assert nt.running_mean is None and list(nt.state_dict()) == ["weight", "bias"]
    np.testing.assert_allclose(np_(nt(x)), train_out, rtol=1e-12)
    na = nn.BatchNorm1d(3, affine=False)
    assert na.weight is None and na.bias is None and list(na.parameters()) == []


def test_batchnorm_defaults_reprs_and_buffers():
    bn = nn.BatchNorm2d(6)
    assert repr(bn) == ("BatchNorm2d(6, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                        "track_running_stats=True)")
    assert repr(nn.BatchNorm1d(6, affine=False, momentum=None)) == (
        "BatchNorm1d(6, eps=1e-05, momentum=None, affine=False, bias=False, "
        "track_running_stats=True)")
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    np.testing.assert_array_equal(np_(bn.weight), np.ones(6))
    np.testing.assert_array_equal(np_(bn.bias), np.zeros(6))
    np.testing.assert_array_equal(np_(bn.running_var), np.ones(6))
    assert bn.weight.dtype == torch.float32 and bn.num_batches_tracked.shape == ()
    assert nn.BatchNorm1d(4, bias=False).bias is None
    bn2 = nn.BatchNorm1d(3).double()
    assert bn2.running_mean.dtype == F64 and bn2.num_batches_tracked.dtype == torch.int64


def test_batchnorm_float32_forward():
    x = RNG.standard_normal((8, 4, 3)).astype(np.float32)
    out = nn.BatchNorm1d(4)(torch.tensor(x))
    assert out.dtype == torch.float32
    mean, var, _ = batch_stats(x.astype(np.float64))
    np.testing.assert_allclose(np_(out), bn_np(x.astype(np.float64), mean, var, None, None,
                                               1e-5), atol=2e-5)


BN_ERRORS = [
    (lambda: F.batch_norm(torch.zeros(1, 3), None, None, training=True), ValueError,
     "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])"),
    (lambda: F.batch_norm(torch.zeros(1, 3, 1), None, None, training=True), ValueError,
     "Expected more than 1 value per channel when training, got input size "
     "torch.Size([1, 3, 1])"),
    (lambda: F.batch_norm(torch.zeros(2, 3), None, None, training=False), RuntimeError,
     "running_mean must be defined in evaluation mode"),
    (lambda: F.batch_norm(torch.zeros(2, 3), torch.zeros(3), None), RuntimeError,
     "running_var must be defined in evaluation mode"),
    (lambda: F.batch_norm(torch.zeros(2, 3), torch.zeros(4), torch.ones(4), training=True),
     RuntimeError, "running_mean should contain 3 elements not 4"),
    (lambda: F.batch_norm(torch.zeros(2, 3), None, None, torch.ones(4), training=True),
     RuntimeError, "weight should contain 3 elements not 4"),
    (lambda: F.batch_norm(torch.zeros(2, 3), None, None, training=True, eps=0), ValueError,
     "batch_norm eps must be positive during training, but got 0"),
    (lambda: nn.BatchNorm1d(3)(torch.zeros(2, 3, 4, 5)), ValueError,
     "expected 2D or 3D input (got 4D input)"),
    (lambda: nn.BatchNorm2d(3)(torch.zeros(2, 3, 4)), ValueError,
     "expected 4D input (got 3D input)"),
    (lambda: nn.BatchNorm2d(3)(torch.zeros(2, 4, 4, 4)), RuntimeError,
     "running_mean should contain 4 elements not 3"),
]


@pytest.mark.parametrize("fn,exc,msg", BN_ERRORS, ids=[e[2][:40] for e in BN_ERRORS])
def test_batchnorm_errors(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg


def test_gradcheck_batch_norm():
    x = t64(RNG.standard_normal((4, 3, 2)), grad=True)
    w = t64(RNG.standard_normal(3), grad=True)
    b = t64(RNG.standard_normal(3), grad=True)
    assert gradcheck(lambda a, c, d: F.batch_norm(a, None, None, c, d, training=True), (x, w, b))
    rm, rv = t64(RNG.standard_normal(3)), t64(RNG.uniform(0.5, 2, 3))
    assert gradcheck(lambda a, c, d: F.batch_norm(a, t64(np_(rm)), t64(np_(rv)), c, d,
                                                  training=True), (x, w, b))
    assert gradcheck(lambda a, c, d: F.batch_norm(a, rm, rv, c, d, training=False), (x, w, b))
    bn = nn.BatchNorm2d(2).double()
    x4 = t64(RNG.standard_normal((3, 2, 2, 2)), grad=True)
    assert gradcheck(lambda a, c, d: bn(a), (x4, bn.weight, bn.bias))


# ---------------------------------------------------------------- layer_norm / group_norm

def ln_np(x, k, w, b, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def test_layer_norm_values():
    x = RNG.standard_normal((2, 3, 4, 5)) * 3 + 1
    for ns in ((5,), (4, 5), (3, 4, 5)):
        w = RNG.standard_normal(ns)
        b = RNG.standard_normal(ns)
        got = F.layer_norm(t64(x), ns, t64(w), t64(b), eps=1e-4)
        np.testing.assert_allclose(np_(got), ln_np(x, len(ns), w, b, 1e-4), rtol=1e-11,
                                   atol=1e-12)
    m = nn.LayerNorm(5).double()
    np.testing.assert_allclose(np_(m(t64(x))), ln_np(x, 1, None, None, 1e-5), rtol=1e-11,
                               atol=1e-12)
    m = nn.LayerNorm([4, 5], elementwise_affine=False).double()
    np.testing.assert_allclose(np_(m(t64(x))), ln_np(x, 2, None, None, 1e-5), rtol=1e-11,
                               atol=1e-12)


def test_layer_norm_module_defaults_and_repr():
    m = nn.LayerNorm(5)
    assert repr(m) == "LayerNorm((5,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.LayerNorm((5, 4), eps=1e-3, elementwise_affine=False)) == \
        "LayerNorm((5, 4), eps=0.001, elementwise_affine=False, bias=False)"
    assert repr(nn.LayerNorm(5, bias=False)) == \
        "LayerNorm((5,), eps=1e-05, elementwise_affine=True, bias=False)"
    assert m.normalized_shape == (5,) and m.eps == 1e-5
    np.testing.assert_array_equal(np_(m.weight), np.ones(5))
    np.testing.assert_array_equal(np_(m.bias), np.zeros(5))
    assert nn.LayerNorm(3, elementwise_affine=False).weight is None


def test_group_norm_values_and_module():
    x = RNG.standard_normal((2, 6, 3, 2)) * 2
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    got = F.group_norm(t64(x), 3, t64(w), t64(b), eps=1e-4)
    g = x.reshape(2, 3, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-4))
    ref = ref.reshape(x.shape) * w.reshape(1, 6, 1, 1) + b.reshape(1, 6, 1, 1)
    np.testing.assert_allclose(np_(got), ref, rtol=1e-11, atol=1e-12)
    m = nn.GroupNorm(2, 4)
    assert repr(m) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    with pytest.raises(ValueError, match=r"^num_channels \(4\) must be divisible by "
                                         r"num_groups \(3\)$"):
        nn.GroupNorm(3, 4)


def test_gradcheck_layer_and_group_norm():
    x = t64(RNG.standard_normal((2, 3, 4)), grad=True)
    w = t64(RNG.standard_normal((3, 4)), grad=True)
    b = t64(RNG.standard_normal((3, 4)), grad=True)
    assert gradcheck(lambda a, c, d: F.layer_norm(a, (3, 4), c, d), (x, w, b))
    assert gradcheck(lambda a: F.layer_norm(a, (4,)), (x,))
    wg = t64(RNG.standard_normal(4), grad=True)
    bg = t64(RNG.standard_normal(4), grad=True)
    xg = t64(RNG.standard_normal((2, 4, 3)), grad=True)
    assert gradcheck(lambda a, c, d: F.group_norm(a, 2, c, d), (xg, wg, bg))


NORM_ERRORS = [
    (lambda: F.layer_norm(torch.zeros(2, 4), (5,)), RuntimeError,
     "Given normalized_shape=[5], expected input with shape [*, 5], but got input of "
     "size[2, 4]"),
    (lambda: F.layer_norm(torch.zeros(2, 4), [2, 5]), RuntimeError,
     "Given normalized_shape=[2, 5], expected input with shape [*, 2, 5], but got input of "
     "size[2, 4]"),
    (lambda: F.layer_norm(torch.zeros(2, 4), (4,), weight=torch.ones(3)), RuntimeError,
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and "
     "normalized_shape = [4]"),
    (lambda: F.layer_norm(torch.zeros(2, 4), 4), TypeError,
     "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int"),
    (lambda: nn.LayerNorm(4)(torch.zeros(2, 5)), RuntimeError,
     "Given normalized_shape=[4], expected input with shape [*, 4], but got input of "
     "size[2, 5]"),
    (lambda: F.group_norm(torch.zeros(2, 4, 3), 3), RuntimeError,
     "Expected number of channels in input to be divisible by num_groups, but got input of "
     "shape [2, 4, 3] and num_groups=3"),
    (lambda: F.group_norm(torch.zeros(1, 4), 4), ValueError,
     "Expected more than 1 value per channel when training, got input size [1, 4]"),
    (lambda: F.group_norm(torch.zeros(2, 4, 3), 2, weight=torch.ones(3)), RuntimeError,
     "Expected weight to be a vector of size equal to the number of channels in input, but got "
     "weight of shape [3] and input of shape [2, 4, 3]"),
]


@pytest.mark.parametrize("fn,exc,msg", NORM_ERRORS, ids=[e[2][:40] for e in NORM_ERRORS])
def test_norm_errors(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg


def test_norm_grad_fn_names():
    x = torch.randn(4, 3, requires_grad=True)
    assert nn.BatchNorm1d(3)(x).grad_fn.name() == "NativeBatchNormBackward0"
    assert F.layer_norm(x, (3,)).grad_fn.name() == "NativeLayerNormBackward0"


# ---------------------------------------------------------------- embedding

IDX = np.array([[0, 2, 2, 4], [1, 2, 0, 0]])


def test_embedding_forward_and_gradient():
    w = RNG.standard_normal((5, 3))
    wt = t64(w, grad=True)
    out = F.embedding(torch.tensor(IDX), wt)
    assert out.shape == (2, 4, 3)
    np.testing.assert_array_equal(np_(out), w[IDX])
    g = RNG.standard_normal((2, 4, 3))
    out.backward(t64(g))
    want = np.zeros((5, 3))
    np.add.at(want, IDX.reshape(-1), g.reshape(-1, 3))  # repeated rows accumulate
    np.testing.assert_allclose(np_(wt.grad), want, rtol=1e-12)
    out32 = F.embedding(torch.tensor(IDX, dtype=torch.int32), wt)
    np.testing.assert_array_equal(np_(out32), w[IDX])


def test_embedding_padding_idx_gets_no_gradient():
    emb = nn.Embedding(5, 3, padding_idx=2).double()
    np.testing.assert_array_equal(np_(emb.weight)[2], np.zeros(3))  # initialised to zero
    with torch.no_grad():
        emb.weight[2] = torch.ones(3, dtype=F64)  # a non-zero padding row is still returned
    out = emb(torch.tensor(IDX))
    np.testing.assert_array_equal(np_(out)[0, 1], np.ones(3))
    g = RNG.standard_normal((2, 4, 3))
    out.backward(t64(g))
    want = np.zeros((5, 3))
    np.add.at(want, IDX.reshape(-1), g.reshape(-1, 3))
    want[2] = 0
    np.testing.assert_allclose(np_(emb.weight.grad), want, rtol=1e-12)
    assert nn.Embedding(5, 3, padding_idx=-1).padding_idx == 4


def test_embedding_scale_grad_by_freq():
    w = t64(RNG.standard_normal((5, 3)), grad=True)
    out = F.embedding(torch.tensor(IDX), w, scale_grad_by_freq=True, padding_idx=4)
    out.sum().backward()
    counts = np.bincount(IDX.reshape(-1), minlength=5)
    want = np.where(counts[:, None] > 0, 1.0, 0.0).repeat(3, 1)  # count * (1 / count)
    want[4] = 0
    np.testing.assert_allclose(np_(w.grad), want, rtol=1e-12)


def test_embedding_max_norm_renormalises_rows_in_place():
    w = RNG.standard_normal((5, 3)) * 2
    w[3] = [0.1, 0.2, 0.0]  # small row: untouched
    wt = t64(w.copy(), grad=True)
    out = F.embedding(torch.tensor([1, 3, 1]), wt, max_norm=1.0)
    norms = np.linalg.norm(np_(wt), axis=1)
    np.testing.assert_allclose(norms[1], 1.0, rtol=1e-6)
    np.testing.assert_allclose(np_(wt)[3], w[3])
    np.testing.assert_array_equal(np_(wt)[[0, 2, 4]], w[[0, 2, 4]])  # not looked up
    np.testing.assert_allclose(np_(out)[0], w[1] * (1.0 / (np.linalg.norm(w[1]) + 1e-7)),
                               rtol=1e-12)


def test_embedding_module_init_repr_and_pretrained():
    torch.manual_seed(0)
    emb = nn.Embedding(1000, 50)
    w = np_(emb.weight)
    assert emb.weight.dtype == torch.float32 and w.shape == (1000, 50)
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1.0) < 0.02  # init.normal_: N(0, 1)
    assert repr(nn.Embedding(10, 3)) == "Embedding(10, 3)"
    assert repr(nn.Embedding(10, 3, padding_idx=0, max_norm=1.0, scale_grad_by_freq=True)) == \
        "Embedding(10, 3, padding_idx=0, max_norm=1.0, scale_grad_by_freq=True)"
    pre = t64(RNG.standard_normal((4, 2)))
    e = nn.Embedding.from_pretrained(pre)
    assert not e.weight.requires_grad and (e.num_embeddings, e.embedding_dim) == (4, 2)
    np.testing.assert_array_equal(np_(e(torch.tensor([3, 1]))), np_(pre)[[3, 1]])
    assert nn.Embedding.from_pretrained(pre, freeze=False).weight.requires_grad


def test_gradcheck_embedding():
    w = t64(RNG.standard_normal((5, 3)), grad=True)
    idx = torch.tensor(IDX)
    assert gradcheck(lambda a: F.embedding(idx, a), (w,))
    # padding_idx / scale_grad_by_freq change the gradient on purpose (not a derivative of the
    # value), so finite differences cannot check them: the tests above write them out


EMB_ERRORS = [
    (lambda: F.embedding(torch.tensor([1.0, 2.0]), torch.zeros(4, 3)), RuntimeError,
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
     "Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)"),
    (lambda: F.embedding(torch.tensor([1, 2], dtype=torch.uint8), torch.zeros(4, 3)),
     RuntimeError, "Expected tensor for argument #1 'indices' to have one of the following "
     "scalar types: Long, Int; but got torch.ByteTensor instead (while checking arguments for "
     "embedding)"),
    (lambda: F.embedding(torch.tensor([1, 5]), torch.zeros(4, 3)), IndexError,
     "index out of range in self"),
    (lambda: F.embedding(torch.tensor([1, -1]), torch.zeros(4, 3)), IndexError,
     "index out of range in self"),
    (lambda: F.embedding(torch.tensor([1, 2]), torch.zeros(4, 3), padding_idx=4),
     AssertionError, "Padding_idx must be within num_embeddings"),
    (lambda: F.embedding(torch.tensor([1, 2]), torch.zeros(4)), RuntimeError,
     "'weight' must be 2-D"),
    (lambda: nn.Embedding(4, 3, padding_idx=-5), AssertionError,
     "Padding_idx must be within num_embeddings"),
    (lambda: F.one_hot(torch.tensor([1, 2]), 2), RuntimeError,
     "Class values must be smaller than num_classes."),
    (lambda: F.one_hot(torch.tensor([1, -1]), 3), RuntimeError,
     "Class values must be non-negative."),
    (lambda: F.one_hot(torch.tensor([1.0, 2.0]), 3), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor."),
    (lambda: F.one_hot(torch.tensor([], dtype=torch.long)), RuntimeError,
     "Can not infer total number of classes from empty tensor."),
]


@pytest.mark.parametrize("fn,exc,msg", EMB_ERRORS, ids=[e[2][:40] for e in EMB_ERRORS])
def test_embedding_errors(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg


def test_one_hot():
    got = F.one_hot(torch.tensor([[0, 2], [1, 1]]))
    assert got.dtype == torch.int64 and got.shape == (2, 2, 3)
    np.testing.assert_array_equal(np_(got), np.eye(3, dtype=np.int64)[[[0, 2], [1, 1]]])
    assert F.one_hot(torch.tensor([1]), 4).tolist() == [[0, 1, 0, 0]]
    assert F.one_hot(torch.tensor([], dtype=torch.long), 4).shape == (0, 4)


@pytest.mark.parametrize("module,shape", [(nn.BatchNorm1d, (0, 3)), (nn.BatchNorm1d, (0, 3, 4)),
                                          (nn.BatchNorm2d, (0, 3, 2, 2)),
                                          (nn.BatchNorm3d, (0, 3, 1, 1, 1)),
                                          (nn.BatchNorm2d, (2, 3, 0, 2))])
def test_batch_norm_on_an_empty_batch_keeps_the_running_stats(module, shape):
    """No elements, no statistics: PyTorch leaves running_mean/var alone (they became NaN);
    the output is empty and the affine parameters get zero gradients."""
    m = module(3)
    m.running_mean.fill_(0.5)
    x = torch.zeros(*shape, requires_grad=True)
    y = m(x)
    y.sum().backward()
    assert tuple(y.shape) == shape
    assert m.running_mean.tolist() == [0.5] * 3 and m.running_var.tolist() == [1.0] * 3
    assert m.num_batches_tracked.item() == 1
    assert m.weight.grad.tolist() == [0.0] * 3 and x.grad.shape == shape


@pytest.mark.parametrize("size,alpha,beta,k", [(2, 1e-4, 0.75, 1.0), (3, 1e-2, 0.75, 2.0),
                                               (5, 0.1, 0.75, 1.0)])
def test_local_response_norm_of_integers_pools_in_integers(size, alpha, beta, k):
    """PyTorch averages the squares with avg_pool, which divides integers by truncation, then
    scales in float32: x / (k + alpha * (sum // size)) ** beta (numpy float64 reference)."""
    x = np.arange(-20, 28, dtype=np.int64).reshape(2, 4, 3, 2)
    sq = np.pad(x * x, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
    total = sum(sq[:, s:s + 4] for s in range(size))
    want = x / (k + alpha * (total // size)) ** beta
    for shape in ((2, 4, 3, 2), (2, 4, 6)):
        got = F.local_response_norm(torch.tensor(x.reshape(shape)), size, alpha, beta, k)
        assert got.dtype == torch.float32
        np.testing.assert_allclose(got.numpy(), want.reshape(shape), rtol=1e-6)


def _ulps(got, want, dtype):
    """|got - want| in units of the dtype's spacing at want (float16: 10 bits, bfloat16: 7)."""
    bits, tiny = (10, 2.0 ** -24) if dtype == "float16" else (7, 2.0 ** -133)
    spacing = np.maximum(2.0 ** (np.floor(np.log2(np.maximum(np.abs(want), tiny))) - bits), tiny)
    return np.abs(got - want) / spacing


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_norms_in_half_precision_compute_in_float32_and_round_once(dtype):
    # ATen's CPU norms load half values into float32 and round each result once: within one
    # rounding (0.5 ulp, plus float32's own) of the float64 value of the same half inputs.
    # Composed in half, every step rounded, they were 2-3 ulps off
    d = getattr(torch, dtype)
    r = np.random.default_rng(11)
    h = lambda a: torch.tensor(a, dtype=d)  # noqa: E731
    x = h(r.standard_normal((6, 4, 5)) * 3 + 1)
    w, b = h(r.standard_normal(4)), h(r.standard_normal(4))
    xs, ws, bs = (t.double().numpy() for t in (x, w, b))
    rm, rv = h(r.standard_normal(4)), h(r.uniform(0.5, 2, 4))
    rm0, rv0 = rm.double().numpy(), rv.double().numpy()
    mean, var = xs.mean((0, 2)), xs.var((0, 2))
    cases = [
        (F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3, eps=0.5),
         bn_np(xs, mean, var, ws, bs, 0.5)),
        (F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=False, eps=0.5),
         None),  # (the eval statistics moved above: compared through rm/rv below)
        (F.layer_norm(x, (5,)), (xs - xs.mean(-1, keepdims=True)) /
         np.sqrt(xs.var(-1, keepdims=True) + 1e-5)),
        (F.instance_norm(x, weight=w, bias=b),
         (xs - xs.mean(-1, keepdims=True)) / np.sqrt(xs.var(-1, keepdims=True) + 1e-5)
         * ws[:, None] + bs[:, None]),
    ]
    g = xs.reshape(6, 2, 10)
    gn = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    cases.append((F.group_norm(x, 2, w, b), gn.reshape(6, 4, 5) * ws[:, None] + bs[:, None]))
    for got, want in cases:
        assert got.dtype == d
        if want is not None:
            assert _ulps(got.double().numpy(), want, dtype).max() <= 0.6
    n = xs.size // 4  # the running statistics: updated in float32, stored rounded once
    for got, want in ((rm, 0.7 * rm0 + 0.3 * mean), (rv, 0.7 * rv0 + 0.3 * var * n / (n - 1))):
        assert got.dtype == d and _ulps(got.double().numpy(), want, dtype).max() <= 0.6
    _, m, rstd = torch.native_layer_norm(h([-8.5]), [1], None, None, 1e-5)
    assert m.item() == -8.5  # rstd: 1 / sqrt(1e-5) = 316.23 rounded once (in half: 316)
    assert rstd.item() == torch.tensor(316.22776601683796).to(d).item()


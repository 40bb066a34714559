"""torch.bernoulli / normal / poisson / multinomial, the Tensor in-place samplers, default dtype
and device. Statistics use large seeded samples and loose tolerances (several standard errors);
error messages are PyTorch 2.13's, copied from a run of PyTorch."""
import math
import warnings

import numpy as np
import pytest

import fusetorch as torch

N = 20000


def sample_stats(x):
    a = x.double().numpy()
    return a.mean(), a.std()


# ---------------------------------------------------------------- bernoulli

def test_bernoulli_frequencies_follow_probs_and_keep_dtype():
    torch.manual_seed(0)
    p = torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64).expand(N, 3)
    b = torch.bernoulli(p)
    assert b.dtype is torch.float64 and b.shape == (N, 3)
    a = b.numpy()
    assert set(np.unique(a)) <= {0.0, 1.0}
    np.testing.assert_allclose(a.mean(0), [0.1, 0.5, 0.9], atol=0.015)
    ends = torch.bernoulli(torch.tensor([0.0, 1.0]).expand(1000, 2)).numpy()
    assert (ends[:, 0] == 0).all() and (ends[:, 1] == 1).all()


def test_bernoulli_scalar_p_overload_and_methods():
    torch.manual_seed(1)
    b = torch.bernoulli(torch.zeros(N, dtype=torch.int64), 0.25)
    assert b.dtype is torch.int64
    assert abs(b.double().mean().item() - 0.25) < 0.015
    x = torch.zeros(N).bernoulli_(0.7)
    assert abs(x.mean().item() - 0.7) < 0.015
    y = torch.zeros(2, N).bernoulli_(torch.tensor([[0.2], [0.8]]))
    np.testing.assert_allclose(y.numpy().mean(1), [0.2, 0.8], atol=0.015)
    assert set(np.unique(torch.full((50,), 0.5).bernoulli().numpy())) <= {0.0, 1.0}


def test_bernoulli_errors():
    p_in = r"Expected p_in >= 0 && p_in <= 1 to be true, but got false\."
    with pytest.raises(RuntimeError, match=p_in):
        torch.bernoulli(torch.tensor([-0.5, 2.0]))
    with pytest.raises(RuntimeError, match=p_in):
        torch.bernoulli(torch.tensor([float("nan")]))
    with pytest.raises(RuntimeError, match=p_in):
        torch.zeros(3).bernoulli_(torch.tensor([0.1, 0.2, 3.0]))
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=2$"):
        torch.bernoulli(torch.tensor([0.5, 1.0]), 2.0)
    with pytest.raises(RuntimeError, match=r"but got p=1.5$"):
        torch.zeros(3).bernoulli_(1.5)
    with pytest.raises(NotImplementedError,
                       match="\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"):
        torch.bernoulli(torch.tensor([1, 0]))


def test_samplers_pass_zero_gradients_like_pytorch():
    m = torch.zeros(3, requires_grad=True)
    s = torch.ones(3, requires_grad=True)
    out = torch.normal(m, s)
    assert type(out.grad_fn).__name__ == "NormalBackward3"
    assert type(torch.normal(m, 1.0).grad_fn).__name__ == "NormalBackward1"
    assert type(torch.normal(0.0, s).grad_fn).__name__ == "NormalBackward2"
    out.sum().backward()
    np.testing.assert_array_equal(m.grad.numpy(), 0)
    np.testing.assert_array_equal(s.grad.numpy(), 0)
    p = torch.full((3,), 0.5, requires_grad=True)
    b = torch.bernoulli(p)
    assert type(b.grad_fn).__name__ == "BernoulliBackward0"
    r = torch.ones(3, requires_grad=True)
    q = torch.poisson(r)
    assert type(q.grad_fn).__name__ == "PoissonBackward0"
    (b.sum() + q.sum()).backward()
    np.testing.assert_array_equal(p.grad.numpy(), 0)
    np.testing.assert_array_equal(r.grad.numpy(), 0)


# ---------------------------------------------------------------- normal

def test_normal_overloads_shapes_dtypes_and_moments():
    torch.manual_seed(2)
    mean = torch.tensor([[-1.0], [3.0]], dtype=torch.float64)
    std = torch.tensor([0.5, 2.0], dtype=torch.float32)
    a = torch.normal(mean.expand(2, N).contiguous(), std.repeat(N // 2)[None].expand(2, N))
    assert a.dtype is torch.float64 and a.shape == (2, N)
    x = a.numpy()
    # columns alternate std 0.5 and 2
    for row, mu in enumerate((-1.0, 3.0)):
        for col, sd in ((0, 0.5), (1, 2.0)):
            v = x[row, col::2]
            assert abs(v.mean() - mu) < 5 * sd / math.sqrt(v.size)
            assert abs(v.std() - sd) < 0.05 * sd
    assert torch.normal(torch.zeros(2), torch.ones(2, 1)).shape == (2, 2)
    b = torch.normal(torch.full((N,), 4.0), 0.5)
    assert b.dtype is torch.float32
    mu, sd = sample_stats(b)
    assert abs(mu - 4.0) < 0.02 and abs(sd - 0.5) < 0.02
    c = torch.normal(-2.0, torch.full((N,), 3.0, dtype=torch.float64))
    assert c.dtype is torch.float64
    mu, sd = sample_stats(c)
    assert abs(mu + 2.0) < 0.1 and abs(sd - 3.0) < 0.1
    d = torch.normal(1.0, 2.0, size=(N,))
    assert d.dtype is torch.float32 and d.shape == (N,)
    mu, sd = sample_stats(d)
    assert abs(mu - 1.0) < 0.06 and abs(sd - 2.0) < 0.06
    assert torch.normal(0.0, 1.0, (2, 3), dtype=torch.float64).dtype is torch.float64
    np.testing.assert_array_equal(torch.normal(torch.arange(3.0), 0.0).numpy(), [0, 1, 2])


def test_normal_errors():
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        torch.normal(torch.zeros(2), torch.tensor([1.0, -1.0]))
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        torch.normal(0.0, torch.tensor([-1.0, 1.0]))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1$"):
        torch.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1$"):
        torch.normal(torch.zeros(2), -1.0)
    with pytest.raises(TypeError, match=r"normal\(\) received an invalid combination of "
                                        r"arguments - got \(float, float\)"):
        torch.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match"):
        torch.normal(torch.zeros(2), torch.ones(3))
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for "
                                                  "'Long'"):
        torch.normal(torch.zeros(2, dtype=torch.int64), 1.0)


# ---------------------------------------------------------------- poisson

def test_poisson_moments_and_errors():
    torch.manual_seed(3)
    rates = torch.tensor([0.0, 0.5, 4.0, 30.0], dtype=torch.float64)
    x = torch.poisson(rates.expand(N, 4)).numpy()
    assert (x == np.round(x)).all() and (x[:, 0] == 0).all()
    np.testing.assert_allclose(x.mean(0)[1:], [0.5, 4.0, 30.0], rtol=0.03)
    np.testing.assert_allclose(x.var(0)[1:], [0.5, 4.0, 30.0], rtol=0.06)
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be "
                                           "non-negative"):
        torch.poisson(torch.tensor([-1.0, 2.0]))
    with pytest.raises(NotImplementedError, match="\"poisson_cpu\" not implemented for 'Long'"):
        torch.poisson(torch.tensor([1, 2]))


# ---------------------------------------------------------------- multinomial

def test_multinomial_with_replacement_frequencies():
    torch.manual_seed(4)
    w = torch.tensor([[0.0, 1.0, 3.0, 0.0, 4.0], [5.0, 0.0, 0.0, 0.0, 5.0]])
    idx = torch.multinomial(w, N, replacement=True)
    assert idx.dtype is torch.int64 and idx.shape == (2, N)
    for row, weights in zip(idx.numpy(), w.numpy()):
        freq = np.bincount(row, minlength=5) / N
        np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.015)
        assert (freq[weights == 0] == 0).all()  # a zero weight is never drawn
    one = torch.multinomial(torch.tensor([1.0, 2.0]), 7, True)
    assert one.shape == (7,)
    assert torch.tensor([1.0, 2.0]).multinomial(3, True).shape == (3,)


def test_multinomial_without_replacement():
    torch.manual_seed(5)
    w = torch.tensor([1.0, 2.0, 3.0, 4.0])
    draws = np.stack([torch.multinomial(w, 4).numpy() for _ in range(400)])
    assert all(sorted(r) == [0, 1, 2, 3] for r in draws)
    # the first draw follows the weights
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=4) / 400,
                               [0.1, 0.2, 0.3, 0.4], atol=0.08)
    # zero weights come after every positive one (PyTorch draws them last)
    z = torch.multinomial(torch.tensor([[0.0, 1.0, 0.0, 1.0]]), 3).numpy()[0]
    assert sorted(z[:2]) == [1, 3] and z[2] in (0, 2)


def test_multinomial_errors():
    cases = [
        ((torch.tensor([0.0, 0.0]), 1), r"invalid multinomial distribution \(sum of "
                                        r"probabilities <= 0\)"),
        ((torch.tensor([[1.0, 2.0], [0.0, 0.0]]), 1), r"sum of probabilities <= 0"),
        ((torch.tensor([-1.0, 2.0]), 1), "probability tensor contains either `inf`, `nan` or "
                                         "element < 0"),
        ((torch.tensor([float("nan"), 2.0]), 1), "contains either `inf`, `nan`"),
        ((torch.tensor([float("inf"), 2.0]), 1), "contains either `inf`, `nan`"),
        ((torch.tensor([1.0, 2.0]), 3), r"cannot sample n_sample > prob_dist.size\(-1\) "
                                        "samples without replacement"),
        ((torch.tensor([1.0, 2.0]), 0), "cannot sample n_sample <= 0 samples"),
        ((torch.tensor(1.0), 1), "prob_dist must be 1 or 2 dim"),
        ((torch.ones(2, 2, 2), 1), "prob_dist must be 1 or 2 dim"),
        ((torch.tensor([1, 2]), 1), "multinomial only supports floating-point dtypes for "
                                    "input, got: Long"),
    ]
    for args, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            torch.multinomial(*args)


# ---------------------------------------------------------------- in-place samplers

@pytest.mark.parametrize("dtype,lo,hi", [(torch.uint8, 0, 255), (torch.int8, 0, 127),
                                         (torch.bool, 0, 1)])
def test_random_default_range_is_the_dtype(dtype, lo, hi):
    torch.manual_seed(6)
    x = torch.zeros(N, dtype=dtype).random_().numpy().astype(np.int64)
    assert x.min() == lo and x.max() == hi


def test_random_ranges_and_float_limits():
    torch.manual_seed(7)
    f = torch.zeros(N).random_().numpy()
    assert (f == np.round(f)).all() and f.min() >= 0 and f.max() <= 2 ** 24
    assert f.max() > 2 ** 23  # spread over [0, 2**24]
    x = torch.zeros(N, dtype=torch.int64).random_(-3, 4).numpy()
    assert x.min() == -3 and x.max() == 3
    np.testing.assert_allclose(np.bincount(x + 3) / N, np.full(7, 1 / 7), atol=0.015)
    y = torch.zeros(N, dtype=torch.float64).random_(5).numpy()
    assert set(np.unique(y)) == {0.0, 1.0, 2.0, 3.0, 4.0}
    assert set(np.unique(torch.zeros(500).random_(to=3).numpy())) == {0.0, 1.0, 2.0}
    z = torch.zeros(N, dtype=torch.int8).random_(120, None).numpy()
    assert z.min() == 120 and z.max() == 127
    assert torch.zeros(3, dtype=torch.int64).random_().min().item() >= 0
    s = torch.zeros(N, dtype=torch.int16).random_().numpy()
    assert s.min() >= 0 and 32000 < s.max() <= 32767


def test_random_errors_and_warning():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but "
                                           "got from=5 >= to=2"):
        torch.zeros(3).random_(5, 2)
    with pytest.raises(RuntimeError, match="from=0 >= to=-5"):
        torch.zeros(3).random_(-5)
    with pytest.raises(RuntimeError, match="from is out of bounds for unsigned char"):
        torch.zeros(3, dtype=torch.uint8).random_(-1, 5)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        torch.zeros(3, dtype=torch.uint8).random_(0, 300)
    with pytest.raises(RuntimeError, match="from is out of bounds for signed char"):
        torch.zeros(3, dtype=torch.int8).random_(-129, 0)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        torch.zeros(3, dtype=torch.bool).random_(0, 3)
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]\. Due "
                                         "to precision limitations float can support"):
        torch.zeros(3).random_(0, 2 ** 25)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.zeros(3).random_(0, 2 ** 24 + 1)  # to - 1 == 2**24 is still exact


def test_exponential_geometric_log_normal_cauchy_moments():
    torch.manual_seed(8)
    e = torch.empty(N, dtype=torch.float64).exponential_(2.0).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.02 and abs(e.std() - 0.5) < 0.02
    g = torch.empty(N, dtype=torch.int64).geometric_(0.25).numpy()
    assert g.min() == 1 and abs(g.mean() - 4.0) < 0.12  # mean 1/p, var (1-p)/p^2 = 12
    np.testing.assert_allclose((np.bincount(g)[1:4] / N), [0.25, 0.1875, 0.140625], atol=0.015)
    gf = torch.empty(N).geometric_(0.9).numpy()
    assert (gf == np.round(gf)).all() and gf.min() == 1
    ln = torch.empty(N, dtype=torch.float64).log_normal_(1.0, 0.5).numpy()
    assert ln.min() > 0
    assert abs(np.log(ln).mean() - 1.0) < 0.02 and abs(np.log(ln).std() - 0.5) < 0.02
    assert abs(np.mean(torch.empty(N).log_normal_().log().numpy()) - 1.0) < 0.06  # (1, 2)
    c = torch.empty(N, dtype=torch.float64).cauchy_(3.0, 2.0).numpy()
    q1, med, q3 = np.percentile(c, [25, 50, 75])  # quartiles of Cauchy: median -+ sigma
    assert abs(med - 3.0) < 0.1 and abs(q1 - 1.0) < 0.15 and abs(q3 - 5.0) < 0.15


def test_in_place_sampler_errors():
    cases = [
        (lambda: torch.zeros(3).exponential_(-1.0), RuntimeError,
         "exponential_ expects lambda > 0.0, but found lambda=-1$"),
        (lambda: torch.zeros(3).exponential_(0.0), RuntimeError, "found lambda=0$"),
        (lambda: torch.zeros(3, dtype=torch.int64).exponential_(), RuntimeError,
         "Exponential distribution is a continuous probability distribution. dtype must be a "
         "floating point but you specified Long"),
        (lambda: torch.zeros(3).geometric_(0.0), RuntimeError,
         r"geometric_ expects p to be in \(0, 1\), but got p=0$"),
        (lambda: torch.zeros(3).geometric_(1.0), RuntimeError, "but got p=1$"),
        (lambda: torch.zeros(3).log_normal_(0.0, -1.0), RuntimeError,
         "log_normal_ expects std > 0.0, but found std=-1$"),
        (lambda: torch.zeros(3, dtype=torch.int64).log_normal_(), NotImplementedError,
         "\"log_normal_cpu\" not implemented for 'Long'"),
        (lambda: torch.zeros(3).cauchy_(0.0, 0.0), RuntimeError,
         "cauchy_ expects sigma > 0.0, but found sigma=0$"),
        (lambda: torch.zeros(3, dtype=torch.int64).cauchy_(), RuntimeError,
         "Cauchy distribution is a continuous probability distribution. dtype must be a "
         "floating point but you specified long int"),
        (lambda: torch.zeros(3).normal_(0, -1), RuntimeError,
         "normal expects std >= 0.0, but found std -1"),
    ]
    for fn, err, msg in cases:
        with pytest.raises(err, match=msg):
            fn()


# ---------------------------------------------------------------- seeds and generators

SAMPLERS = {
    "bernoulli": lambda g: torch.bernoulli(torch.full((64,), 0.5), generator=g),
    "normal": lambda g: torch.normal(torch.zeros(64), 1.0, generator=g),
    "normal_size": lambda g: torch.normal(0.0, 1.0, (64,), generator=g),
    "poisson": lambda g: torch.poisson(torch.full((64,), 3.0), generator=g),
    "multinomial": lambda g: torch.multinomial(torch.ones(9), 5, generator=g),
    "multinomial_r": lambda g: torch.multinomial(torch.ones(9), 50, True, generator=g),
    "random_": lambda g: torch.zeros(64).random_(0, 1000, generator=g),
    "exponential_": lambda g: torch.zeros(64).exponential_(generator=g),
    "geometric_": lambda g: torch.zeros(64).geometric_(0.2, generator=g),
    "log_normal_": lambda g: torch.zeros(64).log_normal_(generator=g),
    "cauchy_": lambda g: torch.zeros(64).cauchy_(generator=g),
    "bernoulli_": lambda g: torch.zeros(64).bernoulli_(0.5, generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_manual_seed_and_generators_repeat_draws(name):
    fn = SAMPLERS[name]
    torch.manual_seed(11)
    a = fn(None).numpy().copy()
    b = fn(None).numpy().copy()
    torch.manual_seed(11)
    np.testing.assert_array_equal(fn(None).numpy(), a)
    assert not np.array_equal(a, b)  # the stream moves on
    g = torch.Generator().manual_seed(5)
    c = fn(g).numpy().copy()
    torch.manual_seed(11)  # the global stream does not affect a generator's draws
    np.testing.assert_array_equal(fn(torch.Generator().manual_seed(5)).numpy(), c)


# ---------------------------------------------------------------- compile

def test_uniform_and_normal_transforms_compile_and_replays_draw_anew():
    def f(t):
        return (torch.bernoulli(t * 0.5) + torch.normal(t, 2.0)
                + torch.empty(4, 3).exponential_(2.0) + torch.empty(4, 3).geometric_(0.3)
                + torch.empty(4, 3).cauchy_() + torch.empty(4, 3).log_normal_()
                + torch.empty(4, 3, dtype=torch.int64).random_(0, 10)
                + torch.empty(4, 3).bernoulli_(0.3) + torch.normal(0.0, 1.0, (4, 3)))

    x = torch.ones(4, 3)
    cf = torch.compile(f, fullgraph=True)  # no graph break
    cf(x)
    r2, r3 = cf(x), cf(x)
    assert not np.array_equal(r2.numpy(), r3.numpy())
    torch.manual_seed(0)
    eager = f(x)
    torch.manual_seed(0)
    np.testing.assert_allclose(cf(x).numpy(), eager.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [lambda t: torch.poisson(t), lambda t: torch.multinomial(t, 2),
                                lambda t: torch.bernoulli(t, generator=torch.Generator()),
                                lambda t: torch.randperm(4) + t])
def test_host_draws_are_graph_breaks(fn):
    with pytest.raises(RuntimeError, match="graph break .*draws on the host"):
        torch.compile(fn, fullgraph=True)(torch.ones(4))
    with pytest.warns(UserWarning, match="graph break"):
        cf = torch.compile(fn)
        a = cf(torch.ones(4))
    assert a.shape == fn(torch.ones(4)).shape


# ---------------------------------------------------------------- default dtype and device

def test_set_default_dtype_float64_reaches_creation_and_layers():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.tensor([1.0]).dtype is torch.float64
        assert torch.tensor(1.5).dtype is torch.float64
        assert torch.randn(2).dtype is torch.float64
        assert torch.rand(2).dtype is torch.float64
        assert torch.zeros(2).dtype is torch.float64
        assert torch.arange(0.5, 2).dtype is torch.float64
        assert torch.arange(3).dtype is torch.int64
        assert (torch.tensor([1, 2]) / 2).dtype is torch.float64
        lin = torch.nn.Linear(2, 2)
        assert lin.weight.dtype is torch.float64 and lin.bias.dtype is torch.float64
        assert torch.normal(0.0, 1.0, (2,)).dtype is torch.float64
    finally:
        torch.set_default_dtype(old)
    assert torch.tensor([1.0]).dtype is torch.float32


def test_default_device():
    assert torch.get_default_device() == torch.device("cpu")
    torch.set_default_device("cpu")
    try:
        assert torch.zeros(2).device == torch.device("cpu")
        assert torch.get_default_device() == torch.device("cpu")
    finally:
        torch.set_default_device(None)
    if torch.cuda.is_available():
        return
    torch.set_default_device("cuda")  # accepted: only creating a tensor needs the GPU
    try:
        assert torch.get_default_device().type == "cuda"
        for make in (lambda: torch.zeros(2), lambda: torch.tensor([1.0]),
                     lambda: torch.randn(2), lambda: torch.nn.Linear(2, 2)):
            with pytest.raises(RuntimeError, match="Found no NVIDIA driver"):
                make()
        assert torch.from_numpy(np.zeros(2)).device.type == "cpu"
    finally:
        torch.set_default_device(None)
    assert torch.get_default_device() == torch.device("cpu")
    assert torch.zeros(2).device.type == "cpu"
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is "
                                           "available."):
        torch.set_default_device(0)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        torch.set_default_device("foo")
    assert torch.get_default_device() == torch.device("cpu")

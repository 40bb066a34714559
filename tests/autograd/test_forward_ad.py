"""torch.autograd.forward_ad: tangents against central differences in float64, the API's
errors and printed forms as PyTorch 2.13 shows them (checked by hand)."""
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.autograd.forward_ad as fwAD

F = torch.nn.functional
X = np.array([[0.7, -1.2, 2.0], [0.3, 1.5, -0.4]])
T = np.array([[1.0, 0.5, -2.0], [0.25, 0.0, 1.5]])
W = np.arange(12.0).reshape(3, 4) / 7

FUNCTIONS = {
    "elementwise": lambda d: (d.exp() * d.sin() + d ** 3 / (1 + d * d)).tanh(),
    "where_maximum": lambda d: torch.where(d > 0, d.sqrt().abs(), torch.maximum(d, -d * 2)),
    "matmul": lambda d: d @ torch.tensor(W) + d.t().t().sum(0, keepdim=True) @ torch.tensor(W),
    "reductions": lambda d: torch.stack([d.sum(), d.mean(), d.var(), d.amax(), d.norm(),
                                         d.prod(), d.logsumexp((0, 1))]),
    "views": lambda d: d.t()[1:, ::2].flip(0).reshape(-1).expand(2, 2)[
        :, torch.tensor([0, 1, 1])],
    "softmax_cat": lambda d: torch.cat([d.softmax(-1), F.log_softmax(d, 0), d.cumsum(1)]),
    "repeated": lambda d: d * d + d[0] * d,  # one input used twice by one op
    "layer": lambda d: F.layer_norm(F.gelu(d), (3,)),
    "to_float32": lambda d: d.float().double() * 2,
}


def _fd(f, h=1e-6):
    x, t = torch.tensor(X), torch.tensor(T)
    return ((f(x + h * t) - f(x - h * t)) / (2 * h)).numpy()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_tangents_are_the_directional_derivative(name):
    f = FUNCTIONS[name]
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.tensor(X), torch.tensor(T))
        primal, tangent = fwAD.unpack_dual(f(d))
    np.testing.assert_allclose(primal.numpy(), f(torch.tensor(X)).numpy(), rtol=1e-15)
    coarse = name == "to_float32"  # (a linear map; float32 rounding needs a wide step)
    np.testing.assert_allclose(tangent.numpy(), _fd(f, 1e-2 if coarse else 1e-6),
                               rtol=1e-4 if coarse else 1e-6, atol=1e-8)
    assert not primal.requires_grad


def test_two_duals_add_their_tangents_and_plain_tensors_have_none():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, -1.0])
    with fwAD.dual_level():
        da = fwAD.make_dual(a, torch.tensor([1.0, 0.0]))
        db = fwAD.make_dual(b, torch.tensor([0.0, 2.0]))
        y = da * db  # d(ab) = b da + a db
        assert fwAD.unpack_dual(y).tangent.tolist() == [3.0, 4.0]
        u = fwAD.unpack_dual(a)
        assert type(u).__name__ == "UnpackedDualTensor" and u.tangent is None
        assert u.primal is a
    assert fwAD.unpack_dual(y).tangent is None  # the level is gone


def test_forward_and_reverse_mode_together():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, torch.tensor([1.0, 0.0, 2.0]))
        y = (d * d).sum()
        assert fwAD.unpack_dual(y).tangent.item() == 14.0  # 2 x . t
        y.backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_a_compiled_function_runs_eagerly_inside_a_level():
    f = torch.compile(lambda x: (x * x).sin())
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    f(x), f(x)  # compiled outside
    with fwAD.dual_level():
        for _ in range(2):
            tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, torch.ones_like(x)))).tangent
            np.testing.assert_allclose(tangent.numpy(), 2 * x.numpy() * np.cos(x.numpy() ** 2))


def test_no_grad_inside_a_level_warns_that_tangents_stop():
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.ones(2))
        with pytest.warns(UserWarning, match="carry no tangent"):
            with torch.no_grad():
                y = d * 2
        assert fwAD.unpack_dual(y).tangent is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():  # outside a level: nothing to say
            pass


def test_api_errors_are_pytorchs():
    x = torch.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(x, torch.ones(3))
    with fwAD.dual_level() as level:
        assert level == 0
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[3\] while the given forward "
                                               r"gradient is of size \[2\]"):
            fwAD.make_dual(x, torch.ones(2))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, "
                                             "but got: torch.int64"):
            fwAD.make_dual(torch.tensor([1, 2]), torch.tensor([1, 1]))
    level = fwAD.enter_dual_level()
    fwAD.exit_dual_level(level=level)


def test_an_op_without_a_jvp_raises_naming_it():
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    lstm = torch.nn.LSTM(3, 2).double()
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.tensor(X), torch.tensor(T))
        with pytest.raises(NotImplementedError, match="You must implement the jvp function for "
                                                      "custom autograd.Function"):
            Double.apply(d)
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with "
                                                      "MkldnnRnnLayer that does not support it"):
            lstm(d.reshape(2, 1, 3))


def test_tangents_through_replayed_composites():
    # from their third call with one key composites replay what they captured (an interpreting Runner at
    # this size): the records replayed carry tangents as the plain call's did
    rng = np.random.default_rng(3)
    x, t, w = (torch.tensor(rng.standard_normal(s)) for s in ((8, 16), (8, 16), (16, 16)))

    def f(v):
        return F.layer_norm(F.linear(v, w), (16,)).softmax(-1)
    h = 1e-6
    fd = ((f(x + h * t) - f(x - h * t)) / (2 * h)).numpy()
    for _ in range(4):
        with fwAD.dual_level():
            tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, t))).tangent
        np.testing.assert_allclose(tangent.numpy(), fd, rtol=1e-5, atol=1e-8)


class _ScaledExp(torch.autograd.Function):
    """exp(x) * k and x * y, with a user jvp (and no backward: forward mode alone)."""

    @staticmethod
    def forward(ctx, x, k, y):
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x.exp() * k, x * y

    @staticmethod
    def jvp(ctx, gx, gk, gy):
        x, y = ctx.saved_tensors
        assert gk is None  # a non-tensor argument
        return gx * x.exp() * ctx.k, gx * y + x * gy


def test_a_custom_function_with_jvp_gives_its_tangents():
    x, y = torch.tensor(X), torch.tensor(X[::-1].copy())
    with fwAD.dual_level():
        d = fwAD.make_dual(x, torch.tensor(T))
        a, b = _ScaledExp.apply(d, 3.0, y)  # y has no tangent: jvp gets zeros for it
        ta, tb = fwAD.unpack_dual(a).tangent, fwAD.unpack_dual(b).tangent
        # a later op reads the tangent of a custom output too
        tc = fwAD.unpack_dual((a * b).sum()).tangent
    np.testing.assert_allclose(ta.numpy(), 3.0 * np.exp(X) * T, rtol=1e-12)
    np.testing.assert_allclose(tb.numpy(), T * X[::-1], rtol=1e-12)
    expect = (3 * np.exp(X) * T * X * X[::-1] + 3 * np.exp(X) * T * X[::-1]).sum()
    np.testing.assert_allclose(tc.item(), expect, rtol=1e-12)


def test_a_custom_function_jvp_of_one_output_and_of_a_zero_size_input():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x * x

        @staticmethod
        def jvp(ctx, g):
            return 2 * ctx.x * g

    for shape in [(), (0, 3), (2, 3)]:
        x = np.full(shape, 1.5)
        t = np.full(shape, -0.5)
        with fwAD.dual_level():
            out = fwAD.unpack_dual(Square.apply(fwAD.make_dual(torch.tensor(x),
                                                               torch.tensor(t))))
        assert out.tangent.shape == shape
        np.testing.assert_allclose(out.tangent.numpy(), 2 * x * t)


def test_gradcheck_checks_forward_mode_and_can_skip_backward():
    x = torch.tensor(X, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: _ScaledExp.apply(v, 2.0, v.sin())[1], (x,),
                                    check_forward_ad=True, check_backward_ad=False)
    assert torch.autograd.gradcheck(lambda v: (v.exp() * v).sum(1), (x,), check_forward_ad=True)

    class WrongJvp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v * 2

        @staticmethod
        def jvp(ctx, g):
            return g * 3

        @staticmethod
        def backward(ctx, g):
            return g * 2

    assert torch.autograd.gradcheck(WrongJvp.apply, (x,))  # backward alone is right
    with pytest.raises(RuntimeError, match="Jacobian computed with forward mode mismatch for output 0 with respect to "
                  "input 0"):
        torch.autograd.gradcheck(WrongJvp.apply, (x,), check_forward_ad=True)
    assert not torch.autograd.gradcheck(WrongJvp.apply, (x,), check_forward_ad=True,
                                        raise_exception=False)
    with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or "
                                             "check_backward_ad to be True"):
        torch.autograd.gradcheck(WrongJvp.apply, (x,), check_backward_ad=False)

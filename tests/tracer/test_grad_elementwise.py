"""Gradients of the elementwise, reduction and matmul ops against central finite differences.

Every differentiable primitive and user-level op goes through `fusetorch.autograd.gradcheck` on
float64 inputs over hypothesis-drawn shapes (0-d tensors, size-1 dims, broadcasting pairs),
dims (negative, tuples) and keepdim; a representative set also goes through `gradgradcheck`.
Values at ties and edges (relu'(0), clamp at its bounds, max ties, pow with exponent 0, prod
with zeros, sqrt at 0, std of a constant) were observed by hand in PyTorch 2.13.0 (CPU) and are
written literally; torch is not imported here. Movement and indexing ops: test_grad_movement.py.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import fusetorch as torch
from fusetorch.autograd import GradcheckError, gradcheck, gradgradcheck

F64 = torch.float64
SET = settings(max_examples=6, deadline=None)
SEEDS = st.integers(0, 2**32 - 1)
SHAPES = array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
PAIRS = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


def leaf(a, dtype=F64):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, requires_grad=True)


def away(a, kinks, gap=0.05):
    """`a` with every value moved at least 2*gap away from each kink (finite differences
    across a kink measure the average of two slopes)."""
    a = np.array(a, dtype=np.float64)
    for p in kinks:
        a = np.where(np.abs(a - p) < gap, p + np.where(a >= p, 2 * gap, -2 * gap), a)
    return a


def values(rng, shape, domain="any"):
    if domain == "pos":
        return rng.uniform(0.3, 2.5, shape)
    if domain == "nonzero":
        return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return rng.uniform(-2.0, 2.0, shape)


def distinct(rng, shape):
    """Values that are pairwise at least 0.1 apart (no ties in max/min/maximum)."""
    n = int(np.prod(shape, dtype=np.int64))
    return (rng.permutation(n) * 0.3 - 0.15 * n + rng.uniform(0, 0.1, n)).reshape(shape)


def check(fn, *arrays, **kw):
    assert gradcheck(fn, tuple(leaf(a) for a in arrays), **kw)


def grads(fn, *arrays, dtype=F64):
    xs = [leaf(a, dtype) for a in arrays]
    fn(*xs).sum().backward()
    return [x.grad for x in xs]


def same(t, expected):
    """t equals `expected` exactly (values written from PyTorch), with its dtype and shape."""
    expected = np.asarray(expected, dtype=np.float64)
    assert tuple(t.shape) == expected.shape, (tuple(t.shape), expected.shape)
    np.testing.assert_allclose(t.numpy().astype(np.float64), expected, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- the harness itself

def test_gradcheck_catches_a_wrong_gradient():
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # should be 2 * g * x

    x = leaf([0.5, -1.0, 2.0])
    with pytest.raises(GradcheckError):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    assert gradcheck(lambda t: t * t, (x,))


# ---------------------------------------------------------------- unary

UNARY = {  # name: (fn, domain, kinks)
    "neg": (lambda x: -x, "any", ()),
    "neg_fn": (torch.neg, "any", ()),
    "exp": (torch.exp, "any", ()),
    "log": (torch.log, "pos", ()),
    "sqrt": (torch.sqrt, "pos", ()),
    "sin": (torch.sin, "any", ()),
    "cos": (lambda x: x.cos(), "any", ()),
    "tanh": (torch.tanh, "any", ()),
    "sigmoid": (lambda x: x.sigmoid(), "any", ()),
    "abs": (torch.abs, "any", (0.0,)),
    "relu": (torch.relu, "any", (0.0,)),
    "clamp_min": (lambda x: x.clamp(min=-0.5), "any", (-0.5,)),
    "clamp_max": (lambda x: torch.clamp(x, max=0.5), "any", (0.5,)),
    "clamp_both": (lambda x: x.clamp(-0.5, 0.7), "any", (-0.5, 0.7)),
    "clip": (lambda x: torch.clip(x, -1, 1), "any", (-1.0, 1.0)),
    "square": (torch.square, "any", ()),
    "rsqrt": (torch.rsqrt, "pos", ()),
    "reciprocal": (torch.reciprocal, "nonzero", ()),
    "add_scalar": (lambda x: x + 1.5, "any", ()),
    "radd_scalar": (lambda x: 2 + x, "any", ()),
    "sub_scalar": (lambda x: x - 0.25, "any", ()),
    "rsub_scalar": (lambda x: 3 - x, "any", ()),
    "mul_scalar": (lambda x: x * -2.5, "any", ()),
    "div_scalar": (lambda x: x / 4, "any", ()),
    "rdiv_scalar": (lambda x: 2 / x, "nonzero", ()),
    "pow_int": (lambda x: x ** 3, "any", ()),
    "pow_2": (lambda x: x.pow(2), "any", ()),
    "pow_float": (lambda x: x ** 2.5, "pos", ()),
    "pow_neg": (lambda x: torch.pow(x, -1.5), "pos", ()),
    "rpow_2": (lambda x: 2 ** x, "any", ()),
    "rpow_float": (lambda x: 0.5 ** x, "any", ()),
    "add_alpha": (lambda x: torch.add(x, x.exp(), alpha=0.5), "any", ()),
}


@pytest.mark.parametrize("name", list(UNARY))
@SET
@given(shape=SHAPES, seed=SEEDS)
def test_unary_gradcheck(name, shape, seed):
    fn, domain, kinks = UNARY[name]
    a = away(values(np.random.default_rng(seed), shape, domain), kinks)
    check(fn, a)


# ---------------------------------------------------------------- binary, broadcasting

def _pair(seed, shapes, dom_x="any", dom_y="any"):
    rng = np.random.default_rng(seed)
    return values(rng, shapes.input_shapes[0], dom_x), values(rng, shapes.input_shapes[1], dom_y)


BINARY = {  # name: (fn, domain of x, domain of y)
    "add": (lambda x, y: x + y, "any", "any"),
    "add_fn": (torch.add, "any", "any"),
    "sub": (lambda x, y: x - y, "any", "any"),
    "sub_alpha": (lambda x, y: torch.sub(x, y, alpha=2), "any", "any"),
    "mul": (lambda x, y: x * y, "any", "any"),
    "div": (lambda x, y: x / y, "any", "nonzero"),
    "div_fn": (torch.div, "any", "nonzero"),
    "pow": (lambda x, y: x ** y, "pos", "any"),
    "pow_fn": (torch.pow, "pos", "any"),
}


@pytest.mark.parametrize("name", list(BINARY))
@SET
@given(shapes=PAIRS, seed=SEEDS)
def test_binary_broadcast_gradcheck(name, shapes, seed):
    fn, dx, dy = BINARY[name]
    check(fn, *_pair(seed, shapes, dx, dy))


@pytest.mark.parametrize("fn", [torch.maximum, torch.minimum, torch.max, torch.min,
                                lambda x, y: torch.clamp(x, min=y),
                                lambda x, y: torch.clamp(x, max=y)],
                         ids=["maximum", "minimum", "max2", "min2", "clamp_tmin", "clamp_tmax"])
@SET
@given(shapes=PAIRS, seed=SEEDS)
def test_maximum_minimum_gradcheck(fn, shapes, seed):
    rng = np.random.default_rng(seed)
    sx, sy = shapes.input_shapes
    x, y = values(rng, sx), values(rng, sy)
    gap = np.abs(np.broadcast_to(x, shapes.result_shape) - np.broadcast_to(y, shapes.result_shape))
    if gap.size and gap.min() < 1e-3:  # a near-tie: nudge y off it
        y = y + 0.0123
    check(fn, x, y)


@SET
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3),
       seed=SEEDS)
def test_where_gradcheck(shapes, seed):
    rng = np.random.default_rng(seed)
    sc, sx, sy = shapes.input_shapes
    cond = torch.tensor(rng.random(sc) < 0.5)
    x, y = values(rng, sx), values(rng, sy)
    check(lambda a, b: torch.where(cond, a, b), x, y)
    check(lambda a, b: torch.where(cond, a * b, b.exp()), x, y)  # both branches use b
    check(lambda a: torch.where(cond, a, 0.0), x)  # scalar branches
    check(lambda b: torch.where(cond, 2.5, b), y)
    check(lambda a: a.where(cond, -1.0), x)


def test_where_gradient_values():
    cond = torch.tensor([True, False, True])
    gx, gy = grads(lambda x, y: torch.where(cond, x, y), [1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    same(gx, [1.0, 0.0, 1.0])
    same(gy, [0.0, 1.0, 0.0])
    # the condition broadcast against a [1] input: its gradient sums over the True positions
    gx, gy = grads(lambda x, y: torch.where(cond, x, y), [1.0], [4.0, 5.0, 6.0])
    same(gx, [2.0])
    same(gy, [0.0, 1.0, 0.0])
    (g,) = grads(lambda x: torch.where(x > 0, x, 0.0), [-1.0, 1.0])  # PyTorch: [0., 1.]
    same(g, [0.0, 1.0])
    (g,) = grads(lambda x: torch.where(x > 0, 1.0, x * 2), [-1.0, 1.0])  # PyTorch: [2., 0.]
    same(g, [2.0, 0.0])


# ---------------------------------------------------------------- reductions

@st.composite
def shape_and_dims(draw, tuples=True, none=True, min_side=1):
    shape = draw(array_shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=3))
    nd = max(len(shape), 1)  # a 0-d tensor takes dim 0 and -1
    kinds = (["none"] if none else []) + ["int"] + (["tuple"] if tuples and shape else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        dim = None
    elif kind == "int":
        dim = draw(st.integers(-nd, nd - 1))
    else:
        picked = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape),
                               unique=True))
        dim = tuple(d - len(shape) if draw(st.booleans()) else d for d in picked)
    return shape, dim, draw(st.booleans())


def _reduced_count(shape, dim):
    if dim is None or not shape:
        return int(np.prod(shape, dtype=np.int64))
    dims = dim if isinstance(dim, tuple) else (dim,)
    return int(np.prod([shape[d] for d in dims], dtype=np.int64))


@SET
@given(sdk=shape_and_dims(), seed=SEEDS)
def test_sum_mean_gradcheck(sdk, seed):
    shape, dim, keep = sdk
    a = values(np.random.default_rng(seed), shape)
    if dim is None:
        check(torch.sum, a)
        check(lambda x: x.mean(), a)
    check(lambda x: x.sum(dim, keepdim=keep), a)
    check(lambda x: torch.mean(x, dim, keepdim=keep), a)
    check(lambda x: (x * x).sum(dim=dim, keepdim=keep).exp(), a)


@SET
@given(sdk=shape_and_dims(tuples=False), seed=SEEDS)
def test_prod_gradcheck(sdk, seed):
    shape, dim, keep = sdk
    rng = np.random.default_rng(seed)
    a = values(rng, shape, "nonzero") * 0.8
    f = (lambda x: x.prod()) if dim is None else (lambda x: x.prod(dim, keepdim=keep))
    check(f, a)
    flat = a.reshape(-1).copy()
    flat[rng.integers(flat.size)] = 0.0  # one zero somewhere
    check(f, flat.reshape(shape))
    if flat.size > 1:
        flat[rng.permutation(flat.size)[:2]] = 0.0  # two zeros (maybe in one slice)
        check(f, flat.reshape(shape))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_prod_gradcheck_zeros_in_one_slice(dim):
    a = np.array([[0.0, 1.5, 0.0, 2.0], [1.2, 0.0, -0.7, 0.9], [0.8, -1.1, 1.3, 0.6]])
    check(lambda x: x.prod(dim), a)
    check(lambda x: x.prod(dim, keepdim=True), a)
    check(lambda x: x.prod(), a)


def test_prod_gradient_values_with_zeros():
    # observed in PyTorch 2.13
    same(grads(lambda x: x.prod(), [2.0, 0.0, 3.0])[0], [0.0, 6.0, 0.0])
    same(grads(lambda x: x.prod(), [2.0, 0.0, 0.0])[0], [0.0, 0.0, 0.0])
    same(grads(lambda x: x.prod(), [2.0, 4.0, 3.0])[0], [12.0, 6.0, 8.0])
    same(grads(lambda x: x.prod(1), [[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 3.0]])[0],
         [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]])


@SET
@given(sdk=shape_and_dims(tuples=False, none=False), seed=SEEDS)
def test_max_min_dim_gradcheck(sdk, seed):
    shape, dim, keep = sdk
    a = distinct(np.random.default_rng(seed), shape)
    check(lambda x: x.max(dim, keepdim=keep)[0], a)
    check(lambda x: torch.min(x, dim, keep).values, a)
    check(lambda x: torch.max(x, dim=dim).values * 2, a)


@SET
@given(sdk=shape_and_dims(), seed=SEEDS)
def test_max_min_full_and_amax_amin_gradcheck(sdk, seed):
    shape, dim, keep = sdk
    a = distinct(np.random.default_rng(seed), shape)
    check(lambda x: x.max(), a)
    check(torch.min, a)
    d = () if dim is None else dim
    check(lambda x: x.amax(d, keepdim=keep), a)
    check(lambda x: torch.amin(x, dim=d, keepdim=keep), a)


@SET
@given(sdk=shape_and_dims(), correction=st.sampled_from([0, 1]), seed=SEEDS)
def test_var_std_gradcheck(sdk, correction, seed):
    shape, dim, keep = sdk
    if _reduced_count(shape, dim) <= correction:
        return  # the unbiased estimate of one value is nan (division by 0)
    a = values(np.random.default_rng(seed), shape)
    check(lambda x: x.var(dim, keepdim=keep, correction=correction), a)
    check(lambda x: torch.std(x, dim, correction=correction, keepdim=keep), a)
    if dim is not None:
        check(lambda x: x.var(dim, unbiased=bool(correction), keepdim=keep), a)
    else:
        check(lambda x: x.std(unbiased=bool(correction)), a)


def test_std_of_a_constant_has_zero_gradient():
    # PyTorch 2.13: std([1., 1., 1.]).backward() gives [0., 0., 0.] (not sqrt's inf * 0 = nan)
    same(grads(lambda x: x.std(), [1.0, 1.0, 1.0])[0], [0.0, 0.0, 0.0])
    # [[1, 1, 1], [1, 2, 4]].std(1, keepdim=True).sum() -> PyTorch's gradient:
    g = grads(lambda x: x.std(1, keepdim=True), [[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]],
              dtype=torch.float32)[0]
    assert g.dtype is torch.float32
    same(g, [[0.0, 0.0, 0.0], [-0.4364, -0.1091, 0.5455]])
    same(grads(lambda x: x.var(), [1.0, 1.0, 1.0])[0], [0.0, 0.0, 0.0])


# ---------------------------------------------------------------- matmul family

SIDES = st.integers(1, 3)


@SET
@given(b=SIDES, n=SIDES, k=SIDES, m=SIDES, seed=SEEDS)
def test_matmul_family_gradcheck(b, n, k, m, seed):
    rng = np.random.default_rng(seed)
    r = lambda *s: values(rng, s)  # noqa: E731
    check(torch.mm, r(n, k), r(k, m))
    check(torch.bmm, r(b, n, k), r(b, k, m))
    check(torch.mv, r(n, k), r(k))
    check(torch.dot, r(k), r(k))
    check(lambda x, y: x @ y, r(n, k), r(k, m))
    for sa, sb in [((k,), (k,)), ((k,), (k, m)), ((n, k), (k,)), ((b, n, k), (k,)),
                   ((k,), (b, k, m)), ((b, n, k), (k, m)), ((n, k), (b, k, m)),
                   ((b, 1, n, k), (2, k, m)), ((1, n, k), (b, 1, k, m)),
                   ((2, b, n, k), (b, k, m))]:
        check(torch.matmul, r(*sa), r(*sb))


def test_matmul_gradient_values():
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]])
    ga, gb = grads(torch.mm, a, b)
    same(ga, np.ones((2, 3)) @ b.T)
    same(gb, a.T @ np.ones((2, 3)))
    gv, gw = grads(torch.dot, [1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    same(gv, [4.0, 5.0, 6.0])
    same(gw, [1.0, 2.0, 3.0])


# ---------------------------------------------------------------- PyTorch's values at edges

def test_relu_abs_sign_at_zero():
    same(grads(torch.relu, [-1.0, 0.0, 1.0])[0], [0.0, 0.0, 1.0])
    same(grads(torch.abs, [-1.0, 0.0, 1.0])[0], [-1.0, 0.0, 1.0])
    same(grads(torch.sign, [-1.0, 0.0, 1.0])[0], [0.0, 0.0, 0.0])


def test_clamp_passes_the_gradient_at_both_bounds():
    x = [-2.0, -1.0, 0.0, 1.0, 2.0]
    same(grads(lambda t: t.clamp(-1, 1), x)[0], [0.0, 1.0, 1.0, 1.0, 0.0])
    same(grads(lambda t: t.clamp(min=-1), x)[0], [0.0, 1.0, 1.0, 1.0, 1.0])
    same(grads(lambda t: t.clamp(max=1), x)[0], [1.0, 1.0, 1.0, 1.0, 0.0])
    same(grads(lambda t: t.clamp(0.0, 0.0), [-2.0, 0.0, 2.0])[0], [0.0, 1.0, 0.0])
    # min > max: every value becomes max, and no element passes the gradient
    same(grads(lambda t: t.clamp(1, -1), x)[0], [0.0] * 5)


def test_sqrt_log_and_pow_at_zero():
    same(grads(torch.sqrt, [0.0, 4.0])[0], [np.inf, 0.25])
    same(grads(torch.log, [0.0])[0], [np.inf])
    same(grads(lambda t: t ** 2, [0.0])[0], [0.0])
    same(grads(lambda t: t ** 0.5, [0.0])[0], [np.inf])
    same(grads(lambda t: t ** 1, [0.0])[0], [1.0])
    same(grads(lambda t: t ** -1.0, [0.0])[0], [-np.inf])


def test_pow_with_exponent_zero_and_base_zero():
    same(grads(lambda t: t ** 0, [0.0, 2.0, -1.0])[0], [0.0, 0.0, 0.0])
    gx, ge = grads(lambda t, e: t ** e, [0.0, 2.0, -1.0], [0.0, 0.0, 0.0])
    same(gx, [0.0, 0.0, 0.0])
    same(ge, [0.0, np.log(2.0), np.nan])
    gx, ge = grads(lambda t, e: t ** e, [0.0, 0.0, 0.0, 0.0], [2.0, 1.0, 0.5, -1.0])
    same(gx, [0.0, 1.0, np.inf, -np.inf])
    same(ge, [0.0, 0.0, 0.0, -np.inf])
    same(grads(lambda t: 2 ** t, [0.0, 1.0, -1.0])[0], np.log(2) * np.array([1.0, 2.0, 0.5]))
    same(grads(lambda t: 0 ** t, [0.0, 1.0, 2.0])[0], [0.0, 0.0, 0.0])


def test_max_dim_sends_the_gradient_to_the_returned_index():
    # ties: the first index (PyTorch: indices [1, 0] for max(1), [2, 1] for min(0))
    x = [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]
    same(grads(lambda t: t.max(1)[0], x)[0], [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    same(grads(lambda t: t.max(1, keepdim=True).values, x)[0], [[0, 1, 0], [1, 0, 0]])
    y = [[1.0, 3.0], [1.0, 2.0], [0.5, 2.0]]
    same(grads(lambda t: t.min(0)[0], y)[0], [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    same(grads(lambda t: t.max(0)[0], 3.0)[0], 1.0)  # 0-d


def test_full_max_and_amax_split_ties_evenly():
    third = 1 / 3
    same(grads(torch.max, [[1.0, 3.0, 3.0], [2.0, 3.0, 2.0]])[0],
         [[0.0, third, third], [0.0, third, 0.0]])
    same(grads(torch.min, [[1.0, 3.0, 1.0], [2.0, 3.0, 2.0]])[0],
         [[0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])
    x = [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]
    same(grads(lambda t: t.amax(1), x)[0], [[0.0, 0.5, 0.5], [third, third, third]])
    same(grads(lambda t: t.amax(), x)[0], [[0.0, 0.5, 0.5], [0.0, 0.0, 0.0]])
    same(grads(lambda t: t.amin((0, 1)), [[1.0, 3.0, 1.0], [2.0, 1.0, 2.0]])[0],
         [[third, 0.0, third], [0.0, third, 0.0]])
    same(grads(torch.max, 3.0)[0], 1.0)


def test_maximum_minimum_ties_give_half_to_each():
    gx, gy = grads(torch.maximum, [1.0, 2.0, 3.0], [1.0, 1.0, 4.0])
    same(gx, [0.5, 1.0, 0.0])
    same(gy, [0.5, 0.0, 1.0])
    gx, gy = grads(torch.minimum, [1.0, 2.0, 3.0], [1.0, 1.0, 4.0])
    same(gx, [0.5, 0.0, 1.0])
    same(gy, [0.5, 1.0, 0.0])
    gx, gy = grads(torch.max, [1.0, 2.0, 3.0], [1.0, 1.0, 4.0])
    same(gx, [0.5, 1.0, 0.0])
    gx, gy = grads(torch.maximum, [1.0, 2.0, 1.0], [1.0])  # broadcast: halves add up
    same(gx, [0.5, 1.0, 0.5])
    same(gy, [1.0])


# ---------------------------------------------------------------- second derivatives

SECOND = {  # name: (fn, domains)
    "mul": (lambda x, y: x * y, ("any", "any")),
    "mul_self": (lambda x, y: x * x * y, ("any", "any")),
    "div": (lambda x, y: x / y, ("any", "nonzero")),
    "pow": (lambda x, y: x ** y, ("pos", "any")),
    "pow_scalar": (lambda x, y: x ** 3 + y ** 2.5, ("any", "pos")),
    "rpow": (lambda x, y: 2 ** x * y, ("any", "any")),
    "exp": (lambda x, y: (x * y).exp(), ("any", "any")),
    "log": (lambda x, y: x.log() * y, ("pos", "any")),
    "sqrt": (lambda x, y: x.sqrt() + y, ("pos", "any")),
    "sin_cos": (lambda x, y: x.sin() * y.cos(), ("any", "any")),
    "tanh": (lambda x, y: torch.tanh(x * y), ("any", "any")),
    "sigmoid": (lambda x, y: torch.sigmoid(x) * y, ("any", "any")),
    "matmul": (lambda x, y: x @ y.t(), ("any", "any")),
    "sum": (lambda x, y: (x * y).sum(1), ("any", "any")),
    "mean": (lambda x, y: (x.exp() * y).mean(0, keepdim=True), ("any", "any")),
    "var": (lambda x, y: (x * y).var(1), ("any", "any")),
    "prod": (lambda x, y: (x * y).prod(1), ("any", "any")),
    "max_dim": (lambda x, y: (x * y).max(1)[0] ** 2, ("distinct", "pos")),
    "amax": (lambda x, y: (x * y).amax(0) * x.amax(1).sum(), ("distinct", "pos")),
    "max_full": (lambda x, y: x.max() * y, ("distinct", "any")),
    "maximum": (lambda x, y: torch.maximum(x * x, y), ("distinct", "distinct")),
    "index": (lambda x, y: x[torch.tensor([0, 1, 0])] ** 2 * y[1:2], ("any", "any")),
    "where": (lambda x, y: torch.where(x > 0, x * y, y.exp()), ("nonzero", "any")),
    "relu": (lambda x, y: x.relu() * y + x.relu() ** 2, ("nonzero", "any")),
    "clamp": (lambda x, y: x.clamp(-0.5, 0.5) * y * x, ("any", "any")),
    "abs": (lambda x, y: x.abs() * y ** 2, ("nonzero", "any")),
}


@pytest.mark.parametrize("name", list(SECOND))
@settings(max_examples=3, deadline=None)
@given(seed=SEEDS)
def test_gradgradcheck(name, seed):
    fn, doms = SECOND[name]
    rng = np.random.default_rng(seed)
    arrays = [distinct(rng, (2, 3)) if d == "distinct" else values(rng, (2, 3), d)
              for d in doms]
    if name == "clamp":
        arrays[0] = away(arrays[0], (-0.5, 0.5))
    if name == "maximum":  # no ties between x*x and y
        arrays[1] = np.where(np.abs(arrays[0] ** 2 - arrays[1]) < 0.05, arrays[1] + 0.1,
                             arrays[1])
    assert gradgradcheck(fn, tuple(leaf(a) for a in arrays))


def test_second_and_third_derivative_of_a_cube():
    x = leaf([-1.5, 0.0, 0.5, 2.0])
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([-1.5, 0.0, 0.5, 2.0]) ** 2)
    assert g.requires_grad
    (gg,) = torch.autograd.grad(g.sum(), x, create_graph=True)
    np.testing.assert_allclose(gg.detach().numpy(), 6 * np.array([-1.5, 0.0, 0.5, 2.0]))
    (ggg,) = torch.autograd.grad(gg.sum(), x)
    np.testing.assert_allclose(ggg.numpy(), [6.0, 6.0, 6.0, 6.0])
    # the same through backward(create_graph=True) into .grad
    y = leaf([0.5, 2.0])
    (y ** 3).sum().backward(create_graph=True)
    first = y.grad
    np.testing.assert_allclose(first.detach().numpy(), [0.75, 12.0])
    (second,) = torch.autograd.grad(first.sum(), y)
    np.testing.assert_allclose(second.numpy(), [3.0, 12.0])


def test_hessian_vector_product_of_a_quadratic_form():
    rng = np.random.default_rng(3)
    A, b = rng.standard_normal((4, 4)), rng.standard_normal(4)
    x0, v0 = rng.standard_normal(4), rng.standard_normal(4)
    At, bt = torch.tensor(A), torch.tensor(b)
    x = leaf(x0)
    f = 0.5 * (x @ At @ x) + bt @ x + (x * x).sum()
    (g,) = torch.autograd.grad(f, x, create_graph=True)
    H = 0.5 * (A + A.T) + 2 * np.eye(4)  # closed form
    np.testing.assert_allclose(g.detach().numpy(), H @ x0 + b, rtol=1e-12, atol=1e-12)
    (hv,) = torch.autograd.grad(g, x, grad_outputs=torch.tensor(v0), retain_graph=True)
    np.testing.assert_allclose(hv.numpy(), H @ v0, rtol=1e-12, atol=1e-12)
    (hv2,) = torch.autograd.grad((g * torch.tensor(v0)).sum(), x)
    np.testing.assert_allclose(hv2.numpy(), H @ v0, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- leaf gradients: shape, dtype

@SET
@given(shapes=PAIRS, seed=SEEDS)
def test_leaf_grads_have_the_leaf_shape_and_dtype(shapes, seed):
    rng = np.random.default_rng(seed)
    sx, sy = shapes.input_shapes
    x = torch.tensor(values(rng, sx), dtype=torch.float32, requires_grad=True)
    y = torch.tensor(values(rng, sy), dtype=torch.float64, requires_grad=True)
    w = values(rng, shapes.result_shape)
    (x * y * torch.tensor(w)).sum().backward()
    assert x.grad.dtype is torch.float32 and y.grad.dtype is torch.float64
    assert tuple(x.grad.shape) == sx and tuple(y.grad.shape) == sy
    xb = np.broadcast_to(x.detach().numpy().astype(np.float64), shapes.result_shape)
    yb = np.broadcast_to(y.detach().numpy(), shapes.result_shape)
    np.testing.assert_allclose(x.grad.numpy(), unbroadcast(w * yb, sx), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), unbroadcast(w * xb, sy), rtol=1e-5, atol=1e-5)


def unbroadcast(g, shape):
    """Sum a broadcast gradient back to `shape` (numpy, written independently of fusetorch)."""
    lead = g.ndim - len(shape)
    axes = tuple(i for i in range(g.ndim) if i < lead or shape[i - lead] == 1)
    return np.sum(g, axis=axes, keepdims=True).reshape(shape)


def test_float32_leaves_get_float32_grads_through_casts():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)  # float32
    (x.double() ** 2).sum().backward()
    assert x.grad.dtype is torch.float32
    same(x.grad, [2.0, 4.0, 6.0])
    h = torch.tensor([0.5, -1.0], dtype=torch.float16, requires_grad=True)
    (h.float() * 3).sum().backward()
    assert h.grad.dtype is torch.float16
    same(h.grad, [3.0, 3.0])
    z = torch.tensor(2.0, requires_grad=True)
    (z * torch.ones(3, dtype=torch.float64)).sum().backward()  # 0-d leaf, promoted
    assert z.grad.dtype is torch.float32 and z.grad.shape == ()
    same(z.grad, 3.0)

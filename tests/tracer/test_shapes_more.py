"""functional_shape.py: triangles, diagonals, rolls, stacking, products, einsum, scatters and
windows against numpy float64 references (PyTorch's semantics checked by hand against 2.13.0),
gradients by gradcheck, and eager against compile."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

R = np.random.default_rng(3)


def T(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def close(t, want):
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12, atol=1e-12)


def test_triangles_and_diagonals():
    a = R.standard_normal((2, 3, 4))
    for k in (-1, 0, 2):
        close(torch.tril(T(a), k), np.tril(a, k))
        close(T(a).triu(diagonal=k), np.triu(a, k))
        close(torch.diagonal(T(a), k, 1, 2), np.diagonal(a, k, 1, 2))
    close(torch.diagonal(T(a), -1, 2, 0), np.diagonal(a, -1, 2, 0))
    close(torch.diag(T(a[0]), 1), np.diag(a[0], 1))
    close(torch.diag(T(a[0, 0]), -1), np.diag(a[0, 0], -1))
    close(torch.trace(T(a[0])), np.trace(a[0]))
    v = R.standard_normal((2, 3))
    close(torch.diag_embed(T(v), 1), np.stack([np.diag(r, 1) for r in v]))
    assert torch.tril_indices(3, 4, 1).tolist() == list(map(list, np.tril_indices(3, 1, 4)))
    assert torch.triu_indices(4, 3, -1).tolist() == list(map(list, np.triu_indices(4, -1, 3)))
    x = T(a.copy())
    x.tril_(1)
    close(x, np.tril(a, 1))


def test_rearranging():
    a = R.standard_normal((2, 3, 4))
    close(torch.roll(T(a), 1), np.roll(a, 1))
    close(torch.roll(T(a), (2, -1), (2, 0)), np.roll(a, (2, -1), (2, 0)))
    for k in (-1, 1, 2, 3):
        close(torch.rot90(T(a), k, (1, 2)), np.rot90(a, k, (1, 2)))
    close(torch.fliplr(T(a)), np.fliplr(a))
    close(torch.flipud(T(a)), np.flipud(a))
    close(torch.movedim(T(a), (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)))
    close(T(a).moveaxis(-1, 0), np.moveaxis(a, -1, 0))
    close(torch.tile(T(a), (2, 1)), np.tile(a, (2, 1)))
    close(torch.broadcast_to(T(a[0, 0]), (3, 4)), np.broadcast_to(a[0, 0], (3, 4)))
    x, y = torch.broadcast_tensors(T(a[:, :1]), T(a[0]))
    assert x.shape == y.shape == (2, 3, 4)
    close(torch.select(T(a), 1, -1), a[:, -1])
    p, q = R.standard_normal(3), R.standard_normal((2, 3))
    close(torch.vstack([T(p), T(q)]), np.vstack([p, q]))
    close(torch.hstack([T(q), T(q)]), np.hstack([q, q]))
    close(torch.dstack([T(q), T(q)]), np.dstack([q, q]))
    close(torch.column_stack([T(p), T(q.T)]), np.column_stack([p, q.T]))
    close(torch.row_stack([T(q), T(p)]), np.vstack([q, p]))
    for ix in ("ij", "xy"):
        for got, want in zip(torch.meshgrid(T(p), T(q[0, :2]), indexing=ix),
                             np.meshgrid(p, q[0, :2], indexing=ix)):
            close(got, want)
    close(T(a).unfold(2, 2, 1), np.lib.stride_tricks.sliding_window_view(a, 2, 2))
    close(T(a).unfold(1, 2, 2), np.moveaxis(np.stack([a[:, s:s + 2] for s in range(0, 2, 2)],
                                                     1), 2, -1))
    close(torch.repeat_interleave(T(q), 2, 1), np.repeat(q, 2, 1))
    close(torch.repeat_interleave(T(q), 3), np.repeat(q, 3))
    close(torch.repeat_interleave(T(q), torch.tensor([1, 0, 2]), dim=1), np.repeat(q, [1, 0, 2], 1))
    assert torch.repeat_interleave(torch.tensor([2, 1])).tolist() == [0, 0, 1]


def test_products():
    a, b = R.standard_normal((2, 3)), R.standard_normal((3, 4))
    close(torch.outer(T(a[0]), T(b[0])), np.outer(a[0], b[0]))
    close(torch.ger(T(a[0]), T(b[0])), np.outer(a[0], b[0]))
    close(torch.inner(T(a), T(b.T)), np.inner(a, b.T))
    close(torch.kron(T(a), T(b)), np.kron(a, b))
    close(torch.kron(T(a[0]), T(b)), np.kron(a[0], b))
    c = R.standard_normal((3, 4, 5))
    close(torch.tensordot(T(c), T(c), ([1, 0], [1, 0])), np.tensordot(c, c, ([1, 0], [1, 0])))
    close(torch.tensordot(T(a), T(c), 1), np.tensordot(a, c, 1))
    i = R.standard_normal((2, 4))
    close(torch.addmm(T(i), T(a), T(b), beta=0.5, alpha=2), 0.5 * i + 2 * a @ b)
    close(torch.addmm(T(np.full((2, 4), np.nan)), T(a), T(b), beta=0), a @ b)
    close(torch.addmv(T(i[0, :2]), T(a), T(b[:, 0])), i[0, :2] + a @ b[:, 0])
    bb = R.standard_normal((2, 3, 4))
    aa = R.standard_normal((2, 4, 5))
    close(torch.baddbmm(T(np.ones((2, 3, 5))), T(bb), T(aa), alpha=3), 1 + 3 * bb @ aa)
    close(torch.addbmm(T(np.ones((3, 5))), T(bb), T(aa)), 1 + (bb @ aa).sum(0))
    for eq, ops in [("ij,jk->ik", (a, b)), ("ij,jk", (a, b)), ("ii->i", (b[:3, :3],)),
                    ("ii", (b[:3, :3],)), ("...ij,...jk->...ik", (bb, aa)),
                    ("bij,bjk", (bb, aa)), ("i,j->ij", (a[0], b[0])), ("ij->", (a,)),
                    ("ij,jk,kl->il", (a, b, aa[0])), ("i...->...", (c,)), ("ba", (a,))]:
        close(torch.einsum(eq, *[T(o) for o in ops]), np.einsum(eq, *ops))


def test_scatters_and_index_writes():
    x = R.standard_normal((3, 4))
    idx = np.array([[0, 2, 1, 2], [1, 0, 0, 1]])
    src = R.standard_normal((2, 4))
    want = x.copy()
    for i in range(2):
        for j in range(4):
            want[idx[i, j], j] = src[i, j]
    close(torch.scatter(T(x), 0, torch.tensor([[0, 2, 1, 2], [1, 0, 0, 1]]), T(src)),
          np.where(np.arange(3)[:, None] == 9, 0, want))
    add = x.copy()
    np.add.at(add, (idx, np.arange(4)[None].repeat(2, 0)), src)
    close(T(x).scatter(0, torch.tensor(idx), T(src), reduce="add"), add)
    close(torch.scatter_reduce(T(x), 0, torch.tensor(idx), T(src), "sum"), add)
    cnt = np.ones_like(x)
    np.add.at(cnt, (idx, np.arange(4)[None].repeat(2, 0)), 1)
    close(torch.scatter_reduce(T(x), 0, torch.tensor(idx), T(src), "mean"), add / cnt)
    filled = T(x).scatter(1, torch.tensor([[3], [0], [1]]), 7.0)
    w = x.copy()
    w[0, 3] = w[1, 0] = w[2, 1] = 7.0
    close(filled, w)
    i = torch.tensor([2, 0, 2])
    s = R.standard_normal((3, 4))
    w = x.copy()
    np.add.at(w, [2, 0, 2], 2 * s)
    close(torch.index_add(T(x), 0, i, T(s), alpha=2), w)
    y = T(x.copy())
    y.index_add_(1, torch.tensor([1, 1]), T(np.ones((3, 2))))
    close(y, x + np.array([0, 2, 0, 0]))
    w = x.copy()
    w[:, [3, 0]] = s[:, :2]
    close(T(x).index_copy(1, torch.tensor([3, 0]), T(s[:, :2])), w)
    w = x.copy()
    w[[1]] = -1
    close(T(x).index_fill(0, torch.tensor([1]), -1), w)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        torch.scatter(T(x), 0, torch.tensor([[5]]), T(src))


@pytest.mark.parametrize("fn", [
    lambda x: torch.tril(x, -1) + x.triu(1) * 2,
    lambda x: torch.diagonal(x, 1) * torch.trace(x),
    lambda x: torch.diag_embed(x[0], -1),
    lambda x: torch.roll(x, (1, 2), (0, 1)) * torch.rot90(x, 1),
    lambda x: torch.kron(x, x[:2, :2]),
    lambda x: torch.einsum("ij,jk,ik->i", x, x, x),
    lambda x: torch.tensordot(x, x, ([0], [1])),
    lambda x: torch.baddbmm(x, x[None], x[None], beta=0.5, alpha=2),
    lambda x: torch.scatter(x, 0, torch.tensor([[1, 2, 0], [0, 0, 1]]), x * 3),
    lambda x: torch.index_add(x, 1, torch.tensor([2, 2]), x[:, :2]),
    lambda x: x.unfold(1, 2, 1) * 2,
    lambda x: torch.repeat_interleave(x, 2, 0),
])
def test_gradients(fn):
    assert gradcheck(fn, (T(R.standard_normal((3, 3)), grad=True),))


def test_compiled_matches_eager():
    def f(x):
        return (torch.einsum("ij,jk->ik", torch.tril(x), x.roll(1, 0)) +
                torch.scatter(x, 0, torch.tensor([[2, 1, 0]]), x[:1] * 2) +
                x.unfold(0, 3, 1)[0] + torch.diag_embed(torch.diagonal(x))).sum()
    x = T(R.standard_normal((3, 3)))
    np.testing.assert_allclose(torch.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-12)


@pytest.mark.parametrize("index", [[0, 0, 2], [2], [], [3, 1, 3, 3]])
def test_index_fill_tensor_value_repeated_index(index):
    """A repeated index fills its position once, so the value's gradient sums the output
    gradient over the filled positions once each (PyTorch: 4 for index [0, 0, 2] of a [2, 4]
    input, not 6), eager and compiled; out-of-range indices name the dim filled."""
    x, g = R.standard_normal((2, 4)), R.standard_normal((2, 4))
    filled = sorted(set(index))
    want = x.copy()
    want[:, filled] = 1.5
    for fn in (lambda a, v: a.index_fill(1, torch.tensor(index, dtype=torch.int64), v),
               torch.compile(lambda a, v: torch.index_fill(
                   a, 1, torch.tensor(index, dtype=torch.int64), v))):
        a, v = T(x, grad=True), T(1.5, grad=True)
        y = fn(a, v)
        close(y.detach(), want)
        (y * T(g)).sum().backward()
        close(v.grad, g[:, filled].sum())
        gx = g.copy()
        gx[:, filled] = 0
        close(a.grad, gx)
    assert gradcheck(lambda v: T(x).index_fill(1, torch.tensor(index, dtype=torch.int64), v),
                     (T(0.5, grad=True),))
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        T(x).index_fill(1, torch.tensor([4]), 1.0)
    with pytest.raises(RuntimeError, match="Index has to be a vector/scalar"):
        T(x).index_fill(1, torch.tensor([[0]]), T(1.0))


def _ints(*shape):
    return np.arange(1, 1 + int(np.prod(shape)), dtype=np.int64).reshape(shape)


@pytest.mark.parametrize("beta,alpha", [(1.5, 2.0), (0.5, 0.5), (-1.7, 2), (0, 1.5), (2, 3)])
def test_integer_matrix_products_truncate_float_scales(beta, alpha):
    """addmm/addmv/addbmm/baddbmm/addr of int64 stay int64 with float alpha/beta: PyTorch reads
    the scales as int64 (truncated toward zero), in place too; addr refuses float scales."""
    b, a = int(beta), int(alpha)  # C++'s conversion of a double to int64
    m, v = _ints(2, 3), _ints(3)
    b1, b2 = _ints(2, 2, 3), _ints(2, 3, 2)
    cases = [("addmm", _ints(2, 2), (m, _ints(3, 2)), m @ _ints(3, 2)),
             ("addmv", _ints(2), (m, v), m @ v),
             ("addbmm", _ints(2, 2), (b1, b2), (b1 @ b2).sum(0)),
             ("baddbmm", _ints(2, 2, 2), (b1, b2), b1 @ b2)]
    for name, inp, args, prod in cases:
        want = (b * inp if b else 0) + a * prod
        ts = [torch.tensor(x) for x in args]
        r = getattr(torch, name)(torch.tensor(inp), *ts, beta=beta, alpha=alpha)
        assert r.dtype == torch.int64 and r.tolist() == want.tolist()
        t = torch.tensor(inp)
        assert getattr(t, name + "_")(*ts, beta=beta, alpha=alpha) is t
        assert t.tolist() == want.tolist()
    assert torch.addcmul(torch.tensor([1, 2]), torch.tensor([1, 2]), torch.tensor([1, 2]),
                         value=alpha).tolist() == [1 + a, 2 + 4 * a]
    with pytest.raises(RuntimeError, match="For integral input tensors, argument beta must not "
                                           "be a floating point number."):
        torch.addr(torch.tensor(m), torch.tensor([1, 2]), torch.tensor(v), beta=1.5)


def test_addr():
    """beta * input + alpha * outer(vec1, vec2) (float64 reference), in place too."""
    x, u, w = R.standard_normal((2, 3)), R.standard_normal(2), R.standard_normal(3)
    close(torch.addr(T(x), T(u), T(w), beta=0.5, alpha=-2.0), 0.5 * x - 2.0 * np.outer(u, w))
    t = T(x)
    close(t.addr_(T(u), T(w)), x + np.outer(u, w))
    assert torch.addr(torch.tensor(_ints(2, 3)), torch.tensor([1, 2]), torch.tensor([1, 2, 3]),
                      beta=2, alpha=3).tolist() == (2 * _ints(2, 3) + 3 * np.outer(
                          [1, 2], [1, 2, 3])).tolist()
    with pytest.raises(RuntimeError, match="addr: Expected 1-D argument vec1, but got 2-D"):
        torch.addr(T(x), T(x), T(w))
    with pytest.raises(RuntimeError, match="Boolean beta only supported for Boolean results."):
        torch.addr(torch.tensor(_ints(2, 3)), torch.tensor([1, 2]), torch.tensor([1, 2, 3]),
                   beta=True)
    assert gradcheck(lambda a, b: torch.addr(T(x), a, b, alpha=0.5),
                     (T(u, grad=True), T(w, grad=True)))


def test_einsum_sublist_form_against_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    ta, tb = torch.tensor(a), torch.tensor(b)
    np.testing.assert_allclose(torch.einsum(ta, [0, 1], tb, [1, 2], [0, 2]).numpy(), a @ b)
    np.testing.assert_allclose(torch.einsum(ta, [0, 1], tb, [1, 2]).numpy(),
                               np.einsum(a, [0, 1], b, [1, 2]))
    np.testing.assert_allclose(torch.einsum(ta, [Ellipsis, 30], [30]).numpy(), a.sum(0))
    np.testing.assert_allclose(torch.einsum(ta.t(), [51, 0], [0, 51]).numpy(), a)
    with pytest.raises(ValueError, match=r"subscript in subscript list is not within the valid "
                                         r"range \[0, 52\)"):
        torch.einsum(ta, [0, 52])


def test_half_addmm_family_rounds_once():
    # ATen's CPU gemm adds beta * input to its float sums before the one store: the float64
    # value of the half operands, rounded to half, is within half an ulp of it
    r = np.random.default_rng(3)
    m1 = r.uniform(-3, 3, (5, 6)).astype(np.float16)
    m2 = r.uniform(-3, 3, (6, 4)).astype(np.float16)
    inp = r.uniform(-3, 3, (5, 4)).astype(np.float16)
    b1, b2 = r.uniform(-3, 3, (2, 5, 6)).astype(np.float16), r.uniform(-3, 3, (2, 6, 4)).astype(
        np.float16)
    vec = r.uniform(-3, 3, 6).astype(np.float16)
    for d, eps in ((torch.float16, 2.0 ** -11), (torch.bfloat16, 2.0 ** -8)):
        T = lambda a: torch.tensor(a).to(d)  # noqa: E731
        h = lambda t: t.double().numpy()  # noqa: E731
        ti, t1, t2 = T(inp), T(m1), T(m2)
        cases = [
            (torch.addmm(ti, t1, t2, beta=0.6, alpha=0.2),
             0.6 * h(ti) + 0.2 * h(t1) @ h(t2)),
            (torch.addmm(ti, t1, t2), h(ti) + h(t1) @ h(t2)),
            (torch.addmv(ti[:, 0], t1, T(vec), beta=0.5), 0.5 * h(ti)[:, 0] + h(t1) @ h(T(vec))),
            (torch.baddbmm(ti, T(b1), T(b2), alpha=2), h(ti) + 2 * h(T(b1)) @ h(T(b2))),
            (torch.addmm(ti.t().contiguous().t(), t1, t2, beta=0), h(t1) @ h(t2)),
        ]
        for got, ref in cases:
            assert got.dtype is d
            np.testing.assert_allclose(h(got), ref, rtol=eps * 1.01, atol=2.0 ** -14)
    z = torch.addmm(torch.zeros(0, 4, dtype=torch.float16),
                    torch.zeros(0, 3, dtype=torch.float16), torch.zeros(3, 4, dtype=torch.float16))
    assert z.shape == (0, 4)

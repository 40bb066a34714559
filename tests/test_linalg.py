"""torch.linalg (fusetorch/linalg, ir/linalg_ops.py): values against numpy float64, the
reconstruction identities, gradients by central differences (gradcheck) on small
well-conditioned float64 matrices, and PyTorch's errors (messages checked by hand against
PyTorch 2.13.0)."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.linalg as LA
from fusetorch.autograd import gradcheck

R = np.random.default_rng(7)


def T(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def well(*shape):
    """Well-conditioned: identity-dominated."""
    a = R.standard_normal(shape) * 0.3
    return a + 2 * np.eye(shape[-1]) if shape[-1] == shape[-2] else a


def spd(*shape):
    a = R.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def sym(x):
    return (x + x.transpose(-1, -2)) * 0.5


def test_values_match_numpy():
    a, b = well(2, 3, 3), R.standard_normal((2, 3, 2))
    np.testing.assert_allclose(LA.inv(T(a)).numpy(), np.linalg.inv(a), rtol=1e-12)
    np.testing.assert_allclose(LA.solve(T(a), T(b)).numpy(), np.linalg.solve(a, b), rtol=1e-12)
    v = R.standard_normal(3)
    np.testing.assert_allclose(LA.solve(T(a[0]), T(v)).numpy(), np.linalg.solve(a[0], v))
    np.testing.assert_allclose(LA.det(T(a)).numpy(), np.linalg.det(a), rtol=1e-12)
    s, l = LA.slogdet(T(a))
    np.testing.assert_allclose(s.numpy(), np.linalg.slogdet(a)[0])
    np.testing.assert_allclose(l.numpy(), np.linalg.slogdet(a)[1])
    p = spd(3, 3)
    np.testing.assert_allclose(LA.cholesky(T(p)).numpy(), np.linalg.cholesky(p))
    np.testing.assert_allclose(LA.cholesky(T(p), upper=True).numpy(), np.linalg.cholesky(p).T)
    np.testing.assert_allclose(LA.eigvalsh(T(p)).numpy(), np.linalg.eigvalsh(p))
    m = R.standard_normal((4, 3))
    np.testing.assert_allclose(LA.svdvals(T(m)).numpy(), np.linalg.svd(m, compute_uv=False))
    np.testing.assert_allclose(LA.pinv(T(m)).numpy(), np.linalg.pinv(m), atol=1e-12)
    np.testing.assert_allclose(LA.matrix_power(T(a[0]), 3).numpy(),
                               np.linalg.matrix_power(a[0], 3), rtol=1e-12)
    np.testing.assert_allclose(LA.matrix_power(T(a[0]), -2).numpy(),
                               np.linalg.matrix_power(a[0], -2), rtol=1e-12)
    np.testing.assert_allclose(LA.matrix_power(T(a[0]), 0).numpy(), np.eye(3))
    x, y = R.standard_normal((4, 3)), R.standard_normal((4, 3))
    np.testing.assert_allclose(LA.cross(T(x), T(y)).numpy(), np.cross(x, y))
    assert LA.inv(T(a).float()).dtype == torch.float32


def test_reconstructions():
    for shape in ((4, 3), (3, 4), (2, 3, 3)):
        a = R.standard_normal(shape)
        q, r = LA.qr(T(a))
        np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-12)
        np.testing.assert_allclose(np.triu(r.numpy()), r.numpy())
        u, s, vh = LA.svd(T(a), full_matrices=False)
        np.testing.assert_allclose(((u * s.unsqueeze(-2)) @ vh).numpy(), a, atol=1e-12)
        u, s, vh = LA.svd(T(a))
        assert u.shape[-1] == a.shape[-2] and vh.shape[-2] == a.shape[-1]
    q, r = LA.qr(T(R.standard_normal((4, 3))), mode="complete")
    assert q.shape == (4, 4) and r.shape == (4, 3)
    p = spd(2, 3, 3)
    w, v = LA.eigh(T(p))
    np.testing.assert_allclose((v @ torch.diag_embed(w) @ v.mT).numpy(), p, atol=1e-12)
    L = LA.cholesky(T(p))
    np.testing.assert_allclose((L @ L.mT).numpy(), p, atol=1e-12)
    u, s, v = torch.svd(T(p[0]))  # the old API returns V
    np.testing.assert_allclose((u @ torch.diag(s) @ v.T).numpy(), p[0], atol=1e-12)


def test_norms_match_numpy():
    a = R.standard_normal((2, 3, 4))
    m = a[0]
    for o in (None, 1, 2, 3.5, np.inf, -np.inf, 0):
        if o is None:
            continue
        np.testing.assert_allclose(LA.vector_norm(T(a), o).numpy(),
                                   np.linalg.norm(a.ravel(), o), rtol=1e-12)
    np.testing.assert_allclose(LA.vector_norm(T(a), 2, dim=(0, 2), keepdim=True).numpy(),
                               np.sqrt((a ** 2).sum((0, 2), keepdims=True)), rtol=1e-12)
    for o in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
        np.testing.assert_allclose(LA.matrix_norm(T(m), o).numpy(), np.linalg.norm(m, o),
                                   rtol=1e-12)
        np.testing.assert_allclose(LA.norm(T(m), o).numpy(), np.linalg.norm(m, o), rtol=1e-12)
    np.testing.assert_allclose(LA.matrix_norm(T(a), 1, dim=(0, 2)).numpy(),
                               np.linalg.norm(np.moveaxis(a, 1, 0), 1, axis=(1, 2)), rtol=1e-12)
    np.testing.assert_allclose(torch.norm(T(a)).numpy(), np.sqrt((a ** 2).sum()))
    np.testing.assert_allclose(T(a).norm(1, dim=1).numpy(), np.abs(a).sum(1))
    np.testing.assert_allclose(torch.dist(T(a), T(a * 0.5), 3).numpy(),
                               (np.abs(a * 0.5) ** 3).sum() ** (1 / 3))
    x1, x2 = R.standard_normal((2, 4, 3)), R.standard_normal((2, 5, 3))
    want = np.sqrt(((x1[:, :, None] - x2[:, None]) ** 2).sum(-1))
    np.testing.assert_allclose(torch.cdist(T(x1), T(x2)).numpy(), want, rtol=1e-12)


_A, _B = T(well(3, 3)), T(R.standard_normal((3, 2)))


@pytest.mark.parametrize("name,fn,make", [
    ("inv", LA.inv, lambda: well(2, 3, 3)),
    ("det", LA.det, lambda: well(3, 3)),
    ("logabsdet", lambda a: LA.slogdet(a)[1], lambda: well(2, 3, 3)),
    ("solve_A", lambda a: LA.solve(a, _B), lambda: well(3, 3)),
    ("solve_B", lambda b: LA.solve(_A, b), lambda: R.standard_normal((2, 3, 2))),
    ("cholesky", lambda x: LA.cholesky(x @ x.mT + 3 * torch.eye(3, dtype=torch.float64)),
     lambda: R.standard_normal((3, 3))),
    ("qr_q", lambda a: LA.qr(a)[0], lambda: R.standard_normal((4, 3))),
    ("qr_r", lambda a: LA.qr(a)[1], lambda: R.standard_normal((2, 3, 3))),
    ("qr_both", lambda a: sum(t.sin().sum() for t in LA.qr(a)), lambda: R.standard_normal((4, 3))),
    # wide (nrows < ncols, issue 26): Q, R, both, complete, batched
    ("qr_wide_q", lambda a: LA.qr(a)[0], lambda: R.standard_normal((2, 4))),
    ("qr_wide_r", lambda a: LA.qr(a)[1], lambda: R.standard_normal((2, 3, 5))),
    ("qr_wide_both", lambda a: sum(t.sin().sum() for t in LA.qr(a, "complete")),
     lambda: R.standard_normal((3, 4))),
    ("qr_wide_r_only_q", lambda a: LA.qr(a)[1][..., :2], lambda: R.standard_normal((2, 5))),
    ("eigh_values", lambda x: LA.eigvalsh(sym(x)), lambda: spd(3, 3)),
    ("eigh_both", lambda x: sum((t * t.detach().sign()).sin().sum() for t in LA.eigh(sym(x))),
     lambda: spd(2, 3, 3)),
    ("svd_s", LA.svdvals, lambda: R.standard_normal((4, 3))),
    # products invariant to the signs of singular vectors
    ("svd_tall", lambda a: (lambda u, s, vh: ((u * s.cos().unsqueeze(-2)) @ vh))(
        *LA.svd(a, full_matrices=False)), lambda: R.standard_normal((4, 3))),
    ("svd_wide", lambda a: (lambda u, s, vh: (u @ u.mT).sum() + (vh.mT * s) @ vh)(
        *LA.svd(a, full_matrices=False)), lambda: R.standard_normal((3, 4))),
    ("pinv", LA.pinv, lambda: R.standard_normal((4, 3))),
    ("matrix_norm_nuc", lambda a: LA.matrix_norm(a, "nuc"), lambda: R.standard_normal((3, 4))),
    ("matrix_power", lambda a: LA.matrix_power(a, -2), lambda: well(3, 3)),
    ("cross", lambda a: LA.cross(a, a.flip(0)), lambda: R.standard_normal((2, 3))),
])
def test_gradients(name, fn, make):
    assert gradcheck(fn, (T(make(), grad=True),))


def test_errors():
    sing = np.diag([1.0, 1.0, 0.0])
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: The diagonal element 3 is zero, the "
                       r"inversion could not be completed because the input matrix is "
                       r"singular.$"):
        LA.inv(T(sing))
    with pytest.raises(RuntimeError, match=r"linalg.inv: \(Batch element 1\): The diagonal "
                       r"element 3 is zero"):
        LA.inv(T(np.stack([np.eye(3), sing])))
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(LA.LinAlgError, match="torch.linalg.solve: The solver failed because "
                       "the input matrix is singular."):
        LA.solve(T(sing), T(np.ones(3)))
    with pytest.raises(LA.LinAlgError, match=r"linalg.cholesky: \(Batch element 1\): The "
                       r"factorization could not be completed because the input is not "
                       r"positive-definite \(the leading minor of order 1 is not "
                       r"positive-definite\)."):
        LA.cholesky(T(np.stack([np.eye(3), -np.eye(3)])))
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, "
                       "but they are 2 by 3 matrices"):
        LA.inv(torch.zeros(2, 3))
    with pytest.raises(RuntimeError, match="linalg.inv: The input tensor A must have at least 2 "
                       "dimensions."):
        LA.inv(torch.zeros(3))
    with pytest.raises(RuntimeError, match="linalg.det: Expected a floating point or complex "
                       "tensor as input. Got Long"):
        LA.det(torch.eye(3, dtype=torch.int64))
    with pytest.raises(RuntimeError, match=r"linalg.solve: Incompatible shapes of A and B for "
                       r"the equation AX = B \(3x3 and 2x1\)"):
        LA.solve(torch.eye(3), torch.ones(2))
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'x'"):
        LA.qr(torch.zeros(3, 3), mode="x")
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(torch.eye(3), UPLO="X")
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length "
                       "3. Got 2 and 2"):
        LA.cross(torch.ones(3, 2), torch.ones(3, 2))
    with pytest.raises(TypeError, match="must be Number, not str"):
        LA.vector_norm(torch.ones(3), "fro")
    a = T(R.standard_normal((4, 3)), grad=True)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > "
                       "ncols"):
        LA.qr(a, mode="complete")[0].sum().backward()
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        LA.qr(a, mode="r")[1].sum().backward()
    s, l = LA.slogdet(T(sing))
    assert s.item() == 0 and l.item() == -np.inf
    assert np.isnan(torch.logdet(T(-np.eye(3))).item())


def test_compiled_matches_eager():
    a = T(well(2, 3, 3))
    p = T(spd(3, 3))

    def f(a, p):
        w, v = LA.eigh(p)
        return LA.inv(a).sum() + LA.det(a).sum() + LA.cholesky(p).sum() + w.sum() + \
            (v @ v.mT).sum() + LA.svdvals(a).sum() + LA.qr(a)[1].abs().sum()
    np.testing.assert_allclose(torch.compile(f)(a, p).numpy(), f(a, p).numpy(), rtol=1e-12)
    sing = T(np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])]))
    g = torch.compile(lambda a: LA.inv(a) * 2)
    g(a)
    with pytest.raises(LA.LinAlgError, match="Batch element 1"):
        g(sing)


def _norm_grad(x, p):
    """d||x||_p / dx in float64 from the textbook formula sign(x) |x|^(p-1) / ||x||^(p-1),
    with PyTorch's subgradient 0 where that is 0/0 or 0 * inf (an all-zero x; a zero element
    for p < 1; every element for p < 0 once one is zero, the norm being 0 there)."""
    a = np.abs(x)
    if p == np.inf or p == -np.inf:
        pick = a == (a.max() if p > 0 else a.min())
        return np.sign(x) * pick / pick.sum()
    n = (a[a > 0] ** p).sum() ** (1 / p) if (p > 0 or (a > 0).all()) else 0.0
    if n == 0:
        return np.zeros_like(x)
    with np.errstate(divide="ignore"):
        g = np.sign(x) * np.where(a > 0, a, 1.0) ** (p - 1) / n ** (p - 1)
    return np.where(a > 0, g, 0.0)


@pytest.mark.parametrize("p", [2, 1, 3, 1.5, 0.5, -1, -0.5, np.inf, -np.inf])
@pytest.mark.parametrize("x", [[0.0, 0.0, 0.0], [0.0, 1.0, -2.0], [3.0, -1.0, 2.0]])
def test_vector_norm_subgradient_at_zero(p, x):
    """PyTorch's norm backward masks its 0/0: the gradient at a zero vector (and, for p < 1, at
    a zero element) is 0, not NaN (issue 26)."""
    x = np.array(x)
    want = _norm_grad(x, p)
    for f in (lambda t: LA.vector_norm(t, p), lambda t: LA.norm(t, p), lambda t: t.norm(p),
              lambda t: torch.dist(t, torch.zeros(3, dtype=torch.float64), p)):
        t = T(x, grad=True)
        f(t).backward()
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12, atol=1e-15)


def test_norm_subgradient_siblings_at_zero():
    """The same 0/0 in the ops built on the p-norm: the Frobenius norm, torch.norm over a dim,
    cdist (p = 2 and 3) and a compiled norm all give 0 at a zero input."""
    z = np.zeros((2, 3))
    fns = [lambda t: LA.matrix_norm(t), lambda t: LA.norm(t), lambda t: torch.norm(t, dim=1),
           lambda t: torch.cdist(t, torch.zeros(1, 3, dtype=torch.float64)),
           lambda t: torch.cdist(t, torch.zeros(1, 3, dtype=torch.float64), p=3),
           torch.compile(lambda t: LA.vector_norm(t, 2, dim=1).sum())]
    for f in fns:
        t = T(z, grad=True)
        f(t).sum().backward()
        assert t.grad.numpy().tolist() == z.tolist()


def test_norm_of_0d_is_0d():
    """A 0-d input's norm is 0-d with keepdim=True too, as in PyTorch; dim must be 0 or -1."""
    x = T(-3.0)
    assert torch.norm(x, 2, 0, True).shape == ()
    assert LA.vector_norm(x, dim=0, keepdim=True).shape == ()
    assert LA.vector_norm(x, 3, dim=-1).item() == pytest.approx(3.0, rel=1e-15)
    with pytest.raises(IndexError, match="Dimension out of range"):
        LA.vector_norm(x, dim=1)


def test_pinv_gradient_of_rank_deficient_matrices():
    """pinv(a @ b^T) with a, b [3, 2] (rank 2 of 3): central differences in float64 through a
    and b, whose perturbations keep the rank, where the SVD's VJP was off by up to 100%;
    the gradient at A itself is Golub-Pereyra's (PyTorch's), computed here with numpy."""
    a, b = R.standard_normal((3, 2)), R.standard_normal((3, 2))
    assert gradcheck(lambda x, y: LA.pinv(x @ y.mT), (T(a, grad=True), T(b, grad=True)))
    assert gradcheck(lambda x: LA.pinv(x @ x.mT), (T(a, grad=True),))
    # exactly repeated singular values (two zeros; 2, 2; all zero): the SVD's VJP gave NaN
    for A in (a @ b.T, np.diag([3.0, 2.0, 0.0, 0.0]), np.diag([2.0, 2.0, 1.0]), np.zeros((2, 3)),
              np.ones((3, 3))):
        g = R.standard_normal(A.shape[::-1])
        P, em, en = np.linalg.pinv(A), np.eye(A.shape[0]), np.eye(A.shape[1])
        want = -P.T @ g @ P.T + (em - A @ P) @ g.T @ P @ P.T + P.T @ P @ g.T @ (en - P @ A)
        t = T(A, grad=True)
        (LA.pinv(t) * T(g)).sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-8, atol=1e-10)
    A, g = a @ b.T, R.standard_normal((3, 3))
    t = T(A, grad=True)
    (LA.pinv(t) * T(g)).sum().backward()
    c = torch.compile(lambda x: (LA.pinv(x) * T(g)).sum())
    t2 = T(A, grad=True)
    c(t2).backward()
    np.testing.assert_allclose(t2.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_pinv_hermitian_reads_the_lower_triangle():
    """hermitian=True ignores the upper triangle, as PyTorch (an eigendecomposition of the
    symmetric matrix the lower triangle describes); tolerances as tensors broadcast with the
    batch; zero-size inputs give the transposed empty shape."""
    s = R.standard_normal((2, 3, 3))
    s = s + np.swapaxes(s, -1, -2)
    x = s.copy()
    x[:, 0, 2], x[:, 1, 2] = 100.0, -7.0
    np.testing.assert_allclose(LA.pinv(T(x), hermitian=True).numpy(), np.linalg.pinv(s),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(LA.pinv(T(x[0]), hermitian=True, atol=0.5).numpy(),
                               np.linalg.pinv(s[0], hermitian=True, rtol=0.5 / np.abs(
                                   np.linalg.eigvalsh(s[0])).max()), rtol=1e-10, atol=1e-12)
    # (a symmetric parametrization: the upper triangle alone is not read)
    assert gradcheck(lambda t: LA.pinv(t + t.mT, hermitian=True), (T(x[0], grad=True),))
    ones = LA.pinv(torch.ones(2, 2, dtype=torch.float64), atol=torch.tensor([0.5, 3.0]))
    np.testing.assert_allclose(ones.numpy(), [np.full((2, 2), 0.25), np.zeros((2, 2))])
    assert LA.pinv(torch.zeros(2, 0, 3)).shape == (2, 3, 0)
    with pytest.raises(RuntimeError, match="linalg.eigh: A must be batches of square matrices"):
        LA.pinv(torch.ones(2, 3), hermitian=True)

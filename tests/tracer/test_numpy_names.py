"""NumPy's `axis=` and `keepdims=` on the reductions, as PyTorch's argument parser takes them
(checked by hand in PyTorch 2.13: `x.sum(1, keepdims=True)`, `torch.mean(x, axis=(0, 1))`;
both spellings at once is a TypeError). Values against numpy in float64."""
import numpy as np
import pytest

import fusetorch as torch

A = np.random.default_rng(0).standard_normal((3, 4))


@pytest.mark.parametrize("name, ref", [("sum", np.sum), ("mean", np.mean), ("prod", np.prod),
                                       ("amax", np.amax), ("amin", np.amin),
                                       ("logsumexp", None)])
def test_reductions_take_numpy_names(name, ref):
    x = torch.tensor(A, requires_grad=True)
    got = getattr(x, name)(axis=1, keepdims=True)
    want = (np.log(np.exp(A).sum(1, keepdims=True)) if ref is None
            else ref(A, axis=1, keepdims=True))
    assert got.shape == (3, 1)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(getattr(torch, name)(x, 1, keepdims=True).detach().numpy(), want,
                               rtol=1e-12)
    got.sum().backward()
    assert x.grad.shape == (3, 4)


def test_numpy_names_on_the_other_reductions():
    x = torch.tensor(A)
    v = x.max(axis=0, keepdims=True)
    np.testing.assert_array_equal(v.values.numpy(), A.max(0, keepdims=True))
    np.testing.assert_array_equal(v.indices.numpy(), A.argmax(0)[None])
    assert x.argmax(axis=1).tolist() == A.argmax(1).tolist()
    np.testing.assert_allclose(torch.std(x, axis=0, keepdims=True).numpy(),
                               A.std(0, ddof=1, keepdims=True), rtol=1e-12)
    s, m = torch.var_mean(x, axis=1)
    np.testing.assert_allclose(s.numpy(), A.var(1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(m.numpy(), A.mean(1), rtol=1e-12)
    np.testing.assert_allclose(torch.quantile(x, 0.5, axis=1, keepdims=True).numpy(),
                               np.quantile(A, 0.5, axis=1, keepdims=True), rtol=1e-12)
    assert (x > 0).any(axis=1).tolist() == (A > 0).any(1).tolist()
    assert torch.count_nonzero(x > 0, axis=0).tolist() == (A > 0).sum(0).tolist()
    assert x.sum(axis=(0, 1)).item() == pytest.approx(A.sum(), rel=1e-12)


def test_both_spellings_is_a_type_error_and_methods_stay_the_functions():
    x = torch.tensor(A)
    with pytest.raises(TypeError, match="sum\\(\\) got an unexpected keyword argument 'keepdims'"):
        x.sum(1, keepdim=True, keepdims=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        torch.mean(x, dim=0, axis=1)
    assert torch.sum is torch.Tensor.sum and torch.amax is torch.Tensor.amax


# every reduction PyTorch gives a `keepdim` in C++ (torch.norm, written in Python, takes neither)
KEEPDIM = ("all", "any", "argmax", "argmin", "nansum", "amax", "amin", "max", "mean", "min",
           "prod", "std", "sum", "var", "logsumexp", "nanmean", "median", "nanmedian", "mode")


@pytest.mark.parametrize("name", KEEPDIM)
def test_every_keepdim_reduction_takes_keepdims(name):
    x = torch.tensor(A)
    r = getattr(torch, name)(x, axis=1, keepdims=True)
    r = r[0] if isinstance(r, tuple) else r
    assert r.shape == (3, 1)
    m = getattr(x, name)(axis=0, keepdims=False)
    assert (m[0] if isinstance(m, tuple) else m).shape == (4,)


B = np.arange(12.0).reshape(3, 4) / 5 - 1
IDX = np.array([[0, 3], [1, 1], [2, 0]])
# the other native functions with a `dim` (checked by hand in PyTorch 2.13: each takes `axis=`;
# its Python-level functions, Tensor.split, torch.norm and F.softmax, take no `axis`)
AXIS_CALLS = {
    "cumsum": (lambda t: torch.cumsum(t, axis=1), lambda a: np.cumsum(a, 1)),
    "cumprod": (lambda t: t.cumprod(axis=0), lambda a: np.cumprod(a, 0)),
    "cumsum_": (lambda t: t.clone().cumsum_(axis=1), lambda a: np.cumsum(a, 1)),
    "cummax": (lambda t: t.cummax(axis=1).values, lambda a: np.maximum.accumulate(a, 1)),
    "logcumsumexp": (lambda t: t.logcumsumexp(axis=1), lambda a: np.log(np.cumsum(np.exp(a), 1))),
    "softmax": (lambda t: torch.softmax(t, axis=1),
                lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    "method_softmax": (lambda t: t.softmax(axis=0),
                       lambda a: np.exp(a) / np.exp(a).sum(0, keepdims=True)),
    "log_softmax": (lambda t: torch.log_softmax(t, axis=1),
                    lambda a: a - np.log(np.exp(a).sum(1, keepdims=True))),
    "cat": (lambda t: torch.cat([t, t], axis=1), lambda a: np.concatenate([a, a], 1)),
    "concat": (lambda t: torch.concat([t, t], axis=0), lambda a: np.concatenate([a, a], 0)),
    "stack": (lambda t: torch.stack([t, t], axis=2), lambda a: np.stack([a, a], 2)),
    "squeeze": (lambda t: t[None].squeeze(axis=0), lambda a: a),
    "unsqueeze": (lambda t: t.unsqueeze(axis=1), lambda a: a[:, None]),
    "sort": (lambda t: t.sort(axis=0, descending=True).values, lambda a: -np.sort(-a, 0)),
    "argsort": (lambda t: t.argsort(axis=1), lambda a: np.argsort(a, 1)),
    "topk": (lambda t: t.topk(2, axis=1).values, lambda a: -np.sort(-a, 1)[:, :2]),
    "gather": (lambda t: t.gather(axis=1, index=torch.tensor(IDX)),
               lambda a: np.take_along_axis(a, IDX, 1)),
    "take_along_dim": (lambda t: torch.take_along_dim(t, torch.tensor(IDX), axis=1),
                       lambda a: np.take_along_axis(a, IDX, 1)),
    "index_select": (lambda t: t.index_select(axis=1, index=torch.tensor([3, 0])),
                     lambda a: a[:, [3, 0]]),
    "narrow": (lambda t: t.narrow(axis=1, start=1, length=2), lambda a: a[:, 1:3]),
    "select": (lambda t: t.select(axis=1, index=2), lambda a: a[:, 2]),
    "chunk": (lambda t: t.chunk(2, axis=1)[1], lambda a: a[:, 2:]),
    "tensor_split": (lambda t: torch.tensor_split(t, 2, axis=1)[0], lambda a: a[:, :2]),
    "unbind": (lambda t: t.unbind(axis=1)[3], lambda a: a[:, 3]),
    "diff": (lambda t: torch.diff(t, axis=0), lambda a: np.diff(a, axis=0)),
    "repeat_interleave": (lambda t: t.repeat_interleave(2, axis=0), lambda a: np.repeat(a, 2, 0)),
    "index_add": (lambda t: t.index_add(axis=0, index=torch.tensor([2]),
                                        source=torch.ones(1, 4, dtype=torch.float64)),
                  lambda a: a + np.array([[0.0], [0.0], [1.0]])),
    "scatter": (lambda t: t.scatter(axis=1, index=torch.tensor(IDX[:, :1]), value=9.0),
                lambda a: np.where(np.arange(4) == IDX[:, :1], 9.0, a)),
    "cosine_similarity": (lambda t: torch.nn.functional.cosine_similarity(t, t + 1, axis=0),
                          lambda a: (a * (a + 1)).sum(0) / np.linalg.norm(a, axis=0)
                          / np.linalg.norm(a + 1, axis=0)),
    "trapezoid": (lambda t: torch.trapezoid(t, axis=0), lambda a: np.trapezoid(a, axis=0)
                  if hasattr(np, "trapezoid") else np.trapz(a, axis=0)),
    "swapaxes": (lambda t: t.swapaxes(axis0=0, axis1=1), lambda a: a.T),
    "index_fill_": (lambda t: t.clone().index_fill_(axis=1, index=torch.tensor([0]), value=2.0),
                    lambda a: np.concatenate([np.full((3, 1), 2.0), a[:, 1:]], 1)),
    "scatter_add_": (lambda t: t.clone().scatter_add_(axis=0, index=torch.tensor([[1, 1, 1, 1]]),
                                                      src=torch.ones(1, 4, dtype=torch.float64)),
                     lambda a: a + np.array([[0.0], [1.0], [0.0]])),
}


@pytest.mark.parametrize("name", sorted(AXIS_CALLS))
def test_native_functions_with_a_dim_take_axis(name):
    call, ref = AXIS_CALLS[name]
    np.testing.assert_allclose(call(torch.tensor(B)).numpy(), ref(B), rtol=1e-12, atol=1e-12)


def test_python_level_functions_take_no_axis():
    x = torch.tensor(B)
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        x.split(1, axis=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        torch.nn.functional.softmax(x, axis=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        torch.cat([x], dim=0, axis=0)

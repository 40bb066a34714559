"""In the style of deep-spin/entmax (activations.py: sparsemax and entmax15 as
autograd.Functions): `_make_ix_like` from torch.arange with view/transpose, the threshold and
support from `torch.sort(X, dim=dim, descending=True)`, cumsum, `support.sum(dim=dim)
.unsqueeze(dim)` and `tau.gather(dim, support_size - 1)`, `torch.clamp(X - tau, min=0)`,
ctx.save_for_backward of the support size and output, the backward with masked_fill_ and a
gathered correction; entmax15's bisection-free sort form with `_entmax_threshold_and_support`
and `delta_nz = torch.clamp(delta, 0)`; the outputs sum to one, equal a numpy projection onto
the simplex, pass gradcheck in float64, and drive a small attention classifier."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.autograd import Function


def _make_ix_like(X, dim):
    d = X.size(dim)
    rho = torch.arange(1, d + 1, device=X.device, dtype=X.dtype)
    view = [1] * X.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


def _roll_last(X, dim):
    """Move dimension dim to the last position"""
    if dim == -1:
        return X
    elif dim < 0:
        dim = X.dim() - dim
    perm = [i for i in range(X.dim()) if i != dim] + [dim]
    return X.permute(perm)


def _sparsemax_threshold_and_support(X, dim=-1, k=None):
    if k is None or k >= X.shape[dim]:  # do full sort
        topk, _ = torch.sort(X, dim=dim, descending=True)
    else:
        topk, _ = torch.topk(X, k=k, dim=dim)
    topk_cumsum = topk.cumsum(dim) - 1
    rhos = _make_ix_like(topk, dim)
    support = rhos * topk > topk_cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = topk_cumsum.gather(dim, support_size - 1)
    tau /= support_size.to(X.dtype)
    return tau, support_size


def _entmax_threshold_and_support(X, dim=-1, k=None):
    if k is None or k >= X.shape[dim]:  # do full sort
        Xsrt, _ = torch.sort(X, dim=dim, descending=True)
    else:
        Xsrt, _ = torch.topk(X, k=k, dim=dim)
    rho = _make_ix_like(Xsrt, dim)
    mean = Xsrt.cumsum(dim) / rho
    mean_sq = (Xsrt ** 2).cumsum(dim) / rho
    ss = rho * (mean_sq - mean ** 2)
    delta = (1 - ss) / rho
    # NOTE this is not exactly the same as in reference algo
    # Fortunately it seems the clamped values never wrongly
    # get selected by tau <= sorted_z. Prove this!
    delta_nz = torch.clamp(delta, 0)
    tau = mean - torch.sqrt(delta_nz)
    support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
    tau_star = tau.gather(dim, support_size - 1)
    return tau_star, support_size


class SparsemaxFunction(Function):
    @classmethod
    def forward(cls, ctx, X, dim=-1, k=None):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = X - max_val  # same numerical stability trick as softmax
        tau, supp_size = _sparsemax_threshold_and_support(X, dim=dim, k=k)
        output = torch.clamp(X - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @classmethod
    def backward(cls, ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze(dim)
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None, None


class Entmax15Function(Function):
    @classmethod
    def forward(cls, ctx, X, dim=0, k=None):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = X - max_val  # same numerical stability trick as for softmax
        X = X / 2  # divide by 2 to solve actual Entmax
        tau_star, _ = _entmax_threshold_and_support(X, dim=dim, k=k)
        Y = torch.clamp(X - tau_star, min=0) ** 2
        ctx.save_for_backward(Y)
        return Y

    @classmethod
    def backward(cls, ctx, dY):
        Y, = ctx.saved_tensors
        gppr = Y.sqrt()  # = 1 / g'' (Y)
        dX = dY * gppr
        q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
        q = q.unsqueeze(ctx.dim)
        dX -= q * gppr
        return dX, None, None


def sparsemax(X, dim=-1, k=None):
    return SparsemaxFunction.apply(X, dim, k)


def entmax15(X, dim=-1, k=None):
    return Entmax15Function.apply(X, dim, k)


class Sparsemax(nn.Module):
    def __init__(self, dim=-1, k=None):
        self.dim = dim
        self.k = k
        super(Sparsemax, self).__init__()

    def forward(self, X):
        return sparsemax(X, dim=self.dim, k=self.k)


def simplex_projection(z):
    """Euclidean projection onto the simplex (Duchi et al.), in numpy float64."""
    u = np.sort(z)[::-1]
    css = np.cumsum(u)
    rho = np.nonzero(u * np.arange(1, len(z) + 1) > (css - 1))[0][-1]
    theta = (css[rho] - 1) / (rho + 1.0)
    return np.maximum(z - theta, 0)


class AttnClassifier(nn.Module):
    def __init__(self, dim=8, classes=3):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.out = nn.Linear(dim, classes)
        self.attn = Sparsemax(dim=1)

    def forward(self, x):  # x: batch, tokens, dim
        weights = self.attn(self.score(x).squeeze(-1))
        return self.out((weights.unsqueeze(-1) * x).sum(1)), weights


def main():
    torch.manual_seed(0)
    X = torch.randn(4, 6, dtype=torch.float64) * 2
    P = sparsemax(X, dim=1)
    assert torch.allclose(P.sum(1), torch.ones(4, dtype=torch.float64))
    for row, p in zip(X.numpy(), P.numpy()):
        assert np.allclose(p, simplex_projection(row))
    assert (P == 0).any()  # sparse
    Pk = sparsemax(X, dim=1, k=3)
    assert torch.allclose(Pk.sum(1), torch.ones(4, dtype=torch.float64))
    E = entmax15(X, dim=1)
    assert torch.allclose(E.sum(1), torch.ones(4, dtype=torch.float64), atol=1e-10)
    Xg = X.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: sparsemax(t, 1), (Xg,))
    assert torch.autograd.gradcheck(lambda t: entmax15(t, 1), (Xg,))
    assert torch.allclose(sparsemax(X.t(), dim=0), P.t())

    model = AttnClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(5, 7, 8), torch.tensor([0, 2, 1, 1, 0])
    for _ in range(3):
        logits, weights = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert torch.allclose(weights.sum(1), torch.ones(5), atol=1e-6)
    return loss.item()

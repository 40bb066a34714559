"""In the style of einsum-heavy model code (Rogozhnikov's "einsum is all you need" examples,
the einsum attention of many transformer repositories): multi-head attention written with
torch.einsum ('bhid,bhjd->bhij', 'bhij,bhjd->bhid'), projections by 'bnd,hde->bhne', a
bilinear form 'bi,ij,bj->b', batch traces 'bii->b', outer products 'i,j->ij', ellipsis
('...ij,...jk->...ik'), implicit output ('ij,jk'), and sublist arguments; each einsum checked
against numpy's einsum in float64, then a tiny einsum-attention regressor trained with AdamW."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn


class EinsumAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.dk = heads, dim // heads
        self.wq = nn.Parameter(torch.randn(heads, dim, self.dk) / dim ** 0.5)
        self.wk = nn.Parameter(torch.randn(heads, dim, self.dk) / dim ** 0.5)
        self.wv = nn.Parameter(torch.randn(heads, dim, self.dk) / dim ** 0.5)
        self.wo = nn.Parameter(torch.randn(heads, self.dk, dim) / dim ** 0.5)

    def forward(self, x, mask=None):
        q = torch.einsum('bnd,hde->bhne', x, self.wq)
        k = torch.einsum('bnd,hde->bhne', x, self.wk)
        v = torch.einsum('bnd,hde->bhne', x, self.wv)
        scores = torch.einsum('bhid,bhjd->bhij', q, k) / self.dk ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float('-inf'))
        attn = scores.softmax(dim=-1)
        out = torch.einsum('bhij,bhjd->bhid', attn, v)
        return torch.einsum('bhnd,hde->bne', out, self.wo)


def check(eq, *operands):
    got = torch.einsum(eq, *operands)
    want = np.einsum(eq, *[o.double().numpy() for o in operands])
    np.testing.assert_allclose(got.double().numpy(), want, rtol=1e-5, atol=1e-5)
    return got


def main():
    torch.manual_seed(0)
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    check('ij,jk->ik', a, b)
    check('ij,jk', a, b)
    check('ij->ji', a)
    check('ij->', a)
    check('i,j->ij', torch.randn(3), torch.randn(4))
    check('bii->b', torch.randn(2, 3, 3))
    check('bi,ij,bj->b', torch.randn(2, 3), torch.randn(3, 3), torch.randn(2, 3))
    check('...ij,...jk->...ik', torch.randn(2, 2, 3, 4), torch.randn(2, 2, 4, 2))
    check('b h i d, b h j d -> b h i j', torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4))
    check('ii', torch.randn(4, 4))
    check('i,i->', torch.randn(0), torch.randn(0))  # zero-size: the empty sum
    check('ij,jk->ik', a.t().contiguous().t(), b.t().contiguous().t())  # non-contiguous
    sub = torch.einsum(a, [0, 1], b, [1, 2], [0, 2])
    assert torch.allclose(sub, a @ b, atol=1e-6)
    assert torch.allclose(torch.einsum('ij,jk->ik', [a, b]), a @ b, atol=1e-6)

    x = torch.randn(4, 6, 8)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    model = EinsumAttention(8, 2)
    ref = nn.functional.scaled_dot_product_attention(
        torch.einsum('bnd,hde->bhne', x, model.wq), torch.einsum('bnd,hde->bhne', x, model.wk),
        torch.einsum('bnd,hde->bhne', x, model.wv), attn_mask=causal)
    ref = torch.einsum('bhnd,hde->bne', ref, model.wo)
    assert torch.allclose(model(x, causal), ref, atol=1e-5)

    target = x.cumsum(1) / torch.arange(1, 7).view(1, 6, 1)  # the running mean: causal
    opt = torch.optim.AdamW(model.parameters(), lr=0.02)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x, causal), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("losses", losses[0], "->", losses[-1])
    assert losses[-1] < losses[0]
    return losses[-1]


if __name__ == "__main__":
    main()

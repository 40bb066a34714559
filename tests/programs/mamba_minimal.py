"""In the style of johnma2006/mamba-minimal (model.py): ModelArgs as a dataclass with
__post_init__ (math.ceil of d_model / 16, vocab padding), ResidualBlock with a hand-written
RMSNorm (`x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight`),
MambaBlock with in_proj split by `x_and_res.split(split_size=[...], dim=-1)`, a causal
depthwise Conv1d (padding d_conv - 1, then `[:, :, :l]`), F.silu, the selective SSM with
`A = -torch.exp(self.A_log.float())`, `F.softplus(self.dt_proj(delta))`, the discretisation
through torch.einsum (einops' "b l d_in, d_in n -> b l d_in n"), the sequential scan loop with
torch.stack, `A_log` from `repeat`-free `torch.arange(1, n + 1).repeat(d_inner, 1)`, tied
embedding/lm_head weights; the scan is checked against a numpy recurrence."""
import math
from dataclasses import dataclass
from typing import Union

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


@dataclass
class ModelArgs:
    d_model: int
    n_layer: int
    vocab_size: int
    d_state: int = 16
    expand: int = 2
    dt_rank: Union[int, str] = "auto"
    d_conv: int = 4
    pad_vocab_size_multiple: int = 8
    conv_bias: bool = True
    bias: bool = False

    def __post_init__(self):
        self.d_inner = int(self.expand * self.d_model)
        if self.dt_rank == "auto":
            self.dt_rank = math.ceil(self.d_model / 16)
        if self.vocab_size % self.pad_vocab_size_multiple != 0:
            self.vocab_size += (self.pad_vocab_size_multiple
                                - self.vocab_size % self.pad_vocab_size_multiple)


class Mamba(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.embedding = nn.Embedding(args.vocab_size, args.d_model)
        self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
        self.norm_f = RMSNorm(args.d_model)
        self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight  # Tie output projection to embedding weights.

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        x = self.norm_f(x)
        logits = self.lm_head(x)
        return logits


class ResidualBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.mixer = MambaBlock(args)
        self.norm = RMSNorm(args.d_model)

    def forward(self, x):
        output = self.mixer(self.norm(x)) + x
        return output


class MambaBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)
        self.conv1d = nn.Conv1d(in_channels=args.d_inner, out_channels=args.d_inner,
                                bias=args.conv_bias, kernel_size=args.d_conv,
                                groups=args.d_inner, padding=args.d_conv - 1)
        # x_proj takes in `x` and outputs the input-specific Δ, B, C
        self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)
        # dt_proj projects Δ from dt_rank to d_in
        self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)
        A = torch.arange(1, args.d_state + 1).repeat(args.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(args.d_inner))
        self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

    def forward(self, x):
        (b, l, d) = x.shape
        x_and_res = self.in_proj(x)  # shape (b, l, 2 * d_in)
        (x, res) = x_and_res.split(split_size=[self.args.d_inner, self.args.d_inner], dim=-1)
        x = x.transpose(1, 2)
        x = self.conv1d(x)[:, :, :l]
        x = x.transpose(1, 2)
        x = F.silu(x)
        y = self.ssm(x)
        y = y * F.silu(res)
        output = self.out_proj(y)
        return output

    def ssm(self, x):
        (d_in, n) = self.A_log.shape
        # Compute ∆ A B C D, the state space parameters.
        A = -torch.exp(self.A_log.float())  # shape (d_in, n)
        D = self.D.float()
        x_dbl = self.x_proj(x)  # (b, l, dt_rank + 2*n)
        (delta, B, C) = x_dbl.split(split_size=[self.args.dt_rank, n, n], dim=-1)
        delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)
        y = self.selective_scan(x, delta, A, B, C, D)
        return y

    def selective_scan(self, u, delta, A, B, C, D):
        (b, l, d_in) = u.shape
        n = A.shape[1]
        # Discretize continuous parameters (A, B)
        # (the original's einops.einsum "b l d_in, d_in n -> b l d_in n", as torch.einsum)
        deltaA = torch.exp(torch.einsum("bld,dn->bldn", delta, A))
        deltaB_u = torch.einsum("bld,bln,bld->bldn", delta, B, u)
        # Perform selective scan (see scan_SSM() in The Annotated S4 [2])
        x = torch.zeros((b, d_in, n), device=deltaA.device)
        ys = []
        for i in range(l):
            x = deltaA[:, i] * x + deltaB_u[:, i]
            y = torch.einsum("bdn,bn->bd", x, C[:, i, :])
            ys.append(y)
        y = torch.stack(ys, dim=1)  # shape (b, l, d_in)
        y = y + u * D
        return y


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return output


def main():
    torch.manual_seed(0)
    args = ModelArgs(d_model=16, n_layer=2, vocab_size=30)
    assert args.vocab_size == 32 and args.dt_rank == 1 and args.d_inner == 32
    model = Mamba(args)
    assert model.lm_head.weight is model.embedding.weight
    block = model.layers[0].mixer
    # the scan against a numpy recurrence
    b, l, d, n = 2, 5, args.d_inner, args.d_state
    u, delta = torch.randn(b, l, d), F.softplus(torch.randn(b, l, d))
    Bm, Cm = torch.randn(b, l, n), torch.randn(b, l, n)
    A = -torch.exp(block.A_log.float())
    with torch.no_grad():
        y = block.selective_scan(u, delta, A, Bm, Cm, block.D)
    un, dn, An, Bn, Cn = (t.detach().double().numpy() for t in (u, delta, A, Bm, Cm))
    state = np.zeros((b, d, n))
    ref = np.zeros((b, l, d))
    for i in range(l):
        state = np.exp(dn[:, i, :, None] * An) * state + \
            dn[:, i, :, None] * Bn[:, i, None, :] * un[:, i, :, None]
        ref[:, i] = (state * Cn[:, i, None, :]).sum(-1) + un[:, i]
    assert np.allclose(y.numpy(), ref, atol=1e-4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 30, (2, 8))
    for _ in range(2):
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab_size), idx[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert block.A_log.grad is not None
    return loss.item()

"""In the style of common training-loop recipes: gradient accumulation over micro-batches
(loss / accumulation_steps, step every N), nn.utils.clip_grad_norm_ with the returned total
norm logged and error_if_nonfinite, clip_grad_value_, get_total_norm + clip_grads_with_norm_
(the 2.6 split API), parameters_to_vector / vector_to_parameters for a flat view of the model,
torch.utils.checkpoint.checkpoint (use_reentrant=False) around blocks and checkpoint_sequential
over an nn.Sequential, whose gradients must equal the plain run's."""
import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.nn.utils import (clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                                get_total_norm, parameters_to_vector, vector_to_parameters)
from fusetorch.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return x + self.drop(self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x)))))


class Model(nn.Module):
    def __init__(self, d=16, n=3, use_checkpoint=False):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.head = nn.Linear(d, 1)
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for block in self.blocks:
            if self.use_checkpoint and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(x).squeeze(-1)


def grads(model):
    return [p.grad.clone() for p in model.parameters()]


def main():
    torch.manual_seed(0)
    x = torch.randn(32, 16)
    y = torch.randn(32)
    model = Model()
    ckpt = Model(use_checkpoint=True)
    ckpt.load_state_dict(model.state_dict())
    for m in (model, ckpt):
        nn.functional.mse_loss(m(x), y).backward()
    for a, b in zip(grads(model), grads(ckpt)):
        assert torch.allclose(a, b, atol=1e-6)

    seq = nn.Sequential(*[Block(16) for _ in range(4)], nn.Linear(16, 1))
    inp = x.clone().requires_grad_()
    out = checkpoint_sequential(seq, 2, inp, use_reentrant=False)
    out.sum().backward()
    g_ckpt = [p.grad.clone() for p in seq.parameters()] + [inp.grad.clone()]
    seq.zero_grad()
    inp.grad = None
    seq(inp).sum().backward()
    for a, b in zip(g_ckpt, [p.grad for p in seq.parameters()] + [inp.grad]):
        assert torch.allclose(a, b, atol=1e-6)

    # accumulation with clipping
    accumulation_steps = 4
    optimizer = torch.optim.AdamW(ckpt.parameters(), lr=1e-3)
    optimizer.zero_grad()
    norms = []
    for i, (xb, yb) in enumerate(zip(x.split(8), y.split(8))):
        loss = nn.functional.mse_loss(ckpt(xb), yb) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            total_norm = clip_grad_norm_(ckpt.parameters(), max_norm=0.5, norm_type=2.0,
                                         error_if_nonfinite=True)
            norms.append(total_norm.item())
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    assert all(p.grad is None for p in ckpt.parameters())

    nn.functional.mse_loss(model(x), y).backward()
    clip_grad_value_(model.parameters(), clip_value=0.01)
    assert max(p.grad.abs().max().item() for p in model.parameters()) <= 0.01
    model.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    gs = [p.grad for p in model.parameters()]
    total = get_total_norm(gs, norm_type=2.0)
    manual = torch.sqrt(sum((g.double() ** 2).sum() for g in gs))
    assert torch.allclose(total.double(), manual, rtol=1e-5)
    clip_grads_with_norm_(model.parameters(), max_norm=0.1, total_norm=total)
    assert torch.allclose(get_total_norm([p.grad for p in model.parameters()]),
                          torch.tensor(0.1), rtol=1e-4)
    inf_norm = clip_grad_norm_(model.parameters(), 1.0, norm_type='inf')

    vec = parameters_to_vector(model.parameters())
    print(vec.shape, norms, inf_norm)
    vector_to_parameters(torch.zeros_like(vec), model.parameters())
    assert all((p == 0).all() for p in model.parameters())
    return loss.item()


if __name__ == "__main__":
    main()

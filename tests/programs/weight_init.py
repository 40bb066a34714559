"""In the style of the common weight-initialisation helpers (`def init_weights(m)` applied with
model.apply, as in many tutorials and DCGAN-like repositories): nn.init.xavier_uniform_ with
calculate_gain('tanh'), kaiming_normal_(mode='fan_out', nonlinearity='relu'),
kaiming_uniform_(a=math.sqrt(5)) as nn.Linear's own reset_parameters, trunc_normal_(std=.02)
as ViT's, orthogonal_(gain) for an RNN's hidden weights, zeros_/ones_/constant_, eye_ and
dirac_; then inference under torch.inference_mode (no grad_fn). Each check is
the documented formula: calculate_gain's table, bounds gain*sqrt(6/(fan_in+fan_out)) and
1/sqrt(fan_in), std gain/sqrt(fan), truncation at [a, b], orthogonality."""
import math

import fusetorch as torch
import fusetorch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 64, 3)
        self.rnn = nn.GRU(16, 32, batch_first=True)
        self.embed = nn.Linear(64, 16)
        self.head = nn.Linear(32, 10)
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        h = self.conv(x).mean((2, 3))
        h = self.norm(torch.tanh(self.embed(h))).unsqueeze(1).expand(-1, 4, -1)
        out, _ = self.rnn(h)
        return self.head(out[:, -1])


def init_weights(m):
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight, gain=nn.init.calculate_gain('tanh'))
        nn.init.constant_(m.bias, 0.01)
    elif isinstance(m, nn.GRU):
        for name, param in m.named_parameters():
            if 'weight_hh' in name:
                for chunk in param.data.chunk(3, 0):
                    nn.init.orthogonal_(chunk)
            elif 'weight_ih' in name:
                nn.init.trunc_normal_(param, std=.02)
            elif 'bias' in name:
                param.data.fill_(0)
    elif isinstance(m, nn.LayerNorm):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


def main():
    torch.manual_seed(0)
    assert nn.init.calculate_gain('relu') == math.sqrt(2.0)
    assert nn.init.calculate_gain('tanh') == 5.0 / 3
    assert nn.init.calculate_gain('leaky_relu', 0.2) == math.sqrt(2.0 / (1 + 0.2 ** 2))
    assert nn.init.calculate_gain('selu') == 3.0 / 4
    assert nn.init.calculate_gain('conv2d') == 1 and nn.init.calculate_gain('sigmoid') == 1

    model = Model()
    # nn.Linear's default: kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    bound = 1 / math.sqrt(32)
    assert model.head.weight.abs().max() <= bound and model.head.weight.abs().max() > 0.8 * bound
    model.apply(init_weights)

    w = model.conv.weight  # fan_out = 64 * 3 * 3
    std = w.std().item()
    assert abs(std - math.sqrt(2.0) / math.sqrt(64 * 9)) < 0.1 * std, std
    assert torch.count_nonzero(model.conv.bias) == 0
    limit = 5.0 / 3 * math.sqrt(6.0 / (64 + 16))
    assert model.embed.weight.abs().max() <= limit and model.embed.weight.abs().max() > 0.9 * limit
    assert torch.all(model.head.bias == 0.01)
    for chunk in model.rnn.weight_hh_l0.detach().chunk(3, 0):
        assert torch.allclose(chunk @ chunk.T, torch.eye(32), atol=1e-5)
    wih = model.rnn.weight_ih_l0
    assert wih.abs().max() <= 2.0  # trunc_normal_'s default [a, b] = [-2, 2]
    assert abs(wih.std().item() - 0.02) < 0.004

    t = torch.empty(2000)
    nn.init.trunc_normal_(t, mean=0.0, std=1.0, a=-0.5, b=1.0)
    assert t.min() >= -0.5 and t.max() <= 1.0 and t.min() < -0.45 and t.max() > 0.95
    e = torch.empty(3, 5)
    nn.init.eye_(e)
    assert torch.equal(e, torch.eye(3, 5))
    d = torch.empty(4, 2, 3, 3)
    nn.init.dirac_(d, groups=2)
    x = torch.randn(1, 2, 5, 5)
    # a dirac kernel copies its input channel through (per group)
    assert torch.allclose(nn.functional.conv2d(x, d, padding=1)[:, :2], x)
    assert torch.allclose(nn.functional.conv2d(x, d, padding=1)[:, 2:], x)
    s = torch.empty(10, 6)
    nn.init.sparse_(s, sparsity=0.3)
    assert all((s[:, j] == 0).sum() == 3 for j in range(6))

    x = torch.randn(4, 3, 8, 8)
    target = torch.randint(0, 10, (4,))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    with torch.inference_mode():
        out = model(x)
    assert torch.is_inference_mode_enabled() is False
    assert out.grad_fn is None and not out.requires_grad
    return losses[-1]


if __name__ == "__main__":
    main()

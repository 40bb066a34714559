"""In the style of the "Introduction to torch.compile" tutorial (intermediate/torch_compile
_tutorial): `opt_foo1 = torch.compile(foo)` and the `@torch.compile` decorator on a function
of sin/cos, compiling an nn.Module (`torch.compile(mod)`) and a method-level
`Module.compile()`, a function with a data-dependent branch (`if b.sum() < 0`: a graph break)
compared against eager, `torch._dynamo.reset()`, `torch._dynamo.config` and
`torch._logging.set_logs` knobs, `fullgraph=True` raising on the break, and the training-loop
timing helper (`timed`) with mode="reduce-overhead" on a small model, compiled against eager
values."""
import time

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


@torch.compile
def opt_foo2(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(100, 10)

    def forward(self, x):
        return torch.nn.functional.relu(self.lin(x))


def bar(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def generate_data(b):
    return (torch.randn(b, 3, 16, 16).to(torch.float32), torch.randint(10, (b,)))


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(torch.flatten(x, 1))


def main():
    torch.manual_seed(0)
    opt_foo1 = torch.compile(foo)
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    assert torch.allclose(opt_foo1(x, y), foo(x, y), atol=1e-6)
    assert torch.allclose(opt_foo2(x, y), foo(x, y), atol=1e-6)

    mod = MyModule()
    opt_mod = torch.compile(mod)
    t = torch.randn(10, 100)
    assert torch.allclose(opt_mod(t), mod(t), atol=1e-6)
    mod2 = MyModule()
    mod2.compile()
    assert torch.allclose(mod2(t), F.relu(mod2.lin(t)), atol=1e-6)

    torch._dynamo.reset()
    torch._logging.set_logs(graph_breaks=False)
    opt_bar = torch.compile(bar)
    inp1, inp2 = torch.randn(10), torch.randn(10)
    for _ in range(2):
        assert torch.allclose(opt_bar(inp1, inp2), bar(inp1, inp2))
        assert torch.allclose(opt_bar(inp1, -inp2), bar(inp1, -inp2))
    torch._dynamo.reset()  # (else PyTorch reuses the frame compiled above)
    try:
        torch.compile(bar, fullgraph=True)(inp1, inp2)
        raise AssertionError("fullgraph=True must refuse the data-dependent branch")
    except Exception as e:  # PyTorch raises torch._dynamo.exc.Unsupported
        assert "AssertionError" not in type(e).__name__

    model = SmallNet()
    opt = torch.optim.Adam(model.parameters())

    def train(mod, data):
        opt.zero_grad(True)
        pred = mod(data[0])
        loss = torch.nn.CrossEntropyLoss()(pred, data[1])
        loss.backward()
        opt.step()
        return loss

    train_opt = torch.compile(train, mode="reduce-overhead")
    inp = generate_data(8)
    with torch.no_grad():
        eager_out, _ = timed(lambda: model(inp[0]))
        comp_out, _ = timed(lambda: torch.compile(model, mode="reduce-overhead")(inp[0]))
    assert torch.allclose(eager_out, comp_out, atol=1e-5)
    losses = []
    for i in range(3):
        loss, _ = timed(lambda: train_opt(model, generate_data(8)))
        losses.append(loss.item())
    return losses[-1]

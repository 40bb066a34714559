"""Reading what `compile` built: every program's kernels (forward, backward, and a training
step's update), labelled; the C of all of them; and graph()/backward_graph()/kernels()
describing one variant, the one the last compiled call ran."""
import re

import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


def _labels(lines: list) -> list:
    return [re.match(r"ft_\w+ \(([a-z+]+)\): ", k).group(1) for k in lines]


def _training_step(momentum: float = 0.9):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=momentum)

    @torch.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    x, y = torch.randn(8, 20), torch.randn(8, 3)
    for _ in range(3):
        step(x, y)
    return step


def test_a_training_steps_kernels_are_labelled_forward_backward_and_update():
    step = _training_step()
    lines = step.kernels()
    labels = _labels(lines)
    parts = {p for label in labels for p in label.split("+")}
    assert parts == {"forward", "backward", "update"}, lines
    # SGD with momentum: each parameter's update (buffer * momentum + grad, then the step) is
    # one pointwise kernel of the update alone
    updates = [k for k, label in zip(lines, labels) if label == "update"]
    assert len(updates) == 4 and all("[mul, add, mul, add]" in k for k in updates), lines
    assert any(label == "forward" and "sum]" in k for k, label in zip(lines, labels)), lines


def test_a_training_steps_source_shows_every_kernel_with_its_label():
    step = _training_step()
    src = step.source()
    banner = "/* ===== forward program (forward + backward + update): 9 kernel(s) ===== */"
    assert src.splitlines()[0] == banner, src.splitlines()[0]
    for line in step.kernels():
        name, label = re.match(r"(ft_\w+) \(([a-z+]+)\)", line).groups()
        assert f"/* {name} ({label}): " in src, name
        assert f"void {name}(" in src


def test_a_hand_written_update_after_backward_is_labelled_update():
    w = torch.randn(16, 20, requires_grad=True)

    @torch.compile
    def step(x):
        loss = (x @ w.t()).tanh().sum()
        loss.backward()
        with torch.no_grad():
            w.sub_(0.1 * w.grad)
            w.grad = None
        return loss
    x = torch.randn(8, 20)
    for _ in range(2):
        step(x)
    labels = _labels(step.kernels())
    assert "update" in labels and "forward" in "".join(labels), step.kernels()


def test_backward_programs_kernels_are_listed_after_the_first_backward():
    x = torch.randn(64, 32, requires_grad=True)
    f = torch.compile(lambda t: (torch.tanh(t) * torch.sigmoid(t)).sum())
    f(x)
    f(x)  # runs the forward program's kernels; no backward yet
    assert set(_labels(f.kernels())) == {"forward"}
    assert "/* ===== backward program: not built yet" in f.source()
    f(x).backward()
    f(x).backward()
    labels = _labels(f.kernels())
    assert "forward" in labels and "backward" in labels, f.kernels()
    assert labels.index("backward") > labels.index("forward")  # forward program first
    src = f.source()
    banners = re.findall(r"/\* ===== (\w+) program: (\d+) kernel", src)
    assert [b[0] for b in banners] == ["forward", "backward"], banners
    assert sum(int(n) for _, n in banners) == len(set(f.kernels()))
    assert [r for r, _ in f.programs()] == ["forward", "backward"]


def test_inspection_describes_the_variant_the_last_call_ran():
    """graph() used to follow the last call and backward_graph() the last variant compiled:
    after f(a); f(b); f(a) they described different shapes."""
    a = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(5, 4, requires_grad=True)
    f = torch.compile(lambda t: (torch.exp(t) * 2).sum())
    for t in (a, b, a):
        f(t).backward()
    for text in (f.graph(), f.backward_graph(), "\n".join(f.kernels()), f.source()):
        assert "[3,4]" in text or "[3, 4]" in text, text
        assert "[5,4]" not in text and "[5, 4]" not in text, text
    f(b).backward()
    assert "f32[5,4]" in f.graph() and "f32[5,4]" in f.backward_graph()


def test_an_eager_call_leaves_the_last_compiled_variant_described():
    f = torch.compile(lambda t: t.exp() + 1)
    f(torch.randn(4))
    with pytest.warns(UserWarning, match="graph break"):
        g = torch.compile(lambda t: t.exp() + float(t.sum()))
        g(torch.randn(4))
    assert g.graph() == "" and g.kernels() == [] and g.source() == ""
    assert "f32[4]" in f.graph()


def test_format_must_be_text_or_dot():
    f = torch.compile(lambda t: t.exp())
    f(torch.randn(3))
    with pytest.raises(ValueError, match="format must be 'text' or 'dot'"):
        f.graph(format="svg")
    assert f.graph(format="text") == f.graph()

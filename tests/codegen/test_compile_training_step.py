"""Compiling a whole training step (forward, loss, backward, optimizer update) against the same
step run eagerly on an identical copy of the model: parameters, gradients and optimizer state
must agree after every step."""
import copy
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


def _two_layer():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 3))


def _pair(make_model, make_opt):
    m1 = make_model()
    m2 = copy.deepcopy(m1)
    return (m1, make_opt(m1)), (m2, make_opt(m2))


def _assert_same(m1, m2, rtol=1e-5, atol=1e-6):
    for (n, p), q in zip(m1.named_parameters(), m2.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=rtol, atol=atol,
                                   err_msg=n)
        assert (p.grad is None) == (q.grad is None), n
        if p.grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                       err_msg=n)
    for b, c in zip(m1.buffers(), m2.buffers()):
        np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=rtol, atol=atol)


def _run(step_of, make_model=_two_layer, make_opt=lambda m: torch.optim.SGD(m.parameters(), lr=0.05),
         steps=5, x=None, y=None):
    (m1, o1), (m2, o2) = _pair(make_model, make_opt)
    x = torch.randn(8, 20) if x is None else x
    y = torch.randn(8, 3) if y is None else y
    eager, compiled = step_of(m1, o1), torch.compile(step_of(m2, o2))
    for _ in range(steps):
        l1, l2 = eager(x, y), compiled(x, y)
        np.testing.assert_allclose(l2.item(), l1.item(), rtol=1e-5)
        _assert_same(m1, m2)
    return compiled


def _standard(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def test_sgd_step_compiles_to_kernels_and_matches_eager():
    compiled = _run(_standard)
    assert compiled.kernels(), "the step should run compiled kernels"
    assert "matmul" in compiled.graph()  # forward and backward are in the one program


@pytest.mark.parametrize("opts", [dict(momentum=0.9), dict(momentum=0.9, nesterov=True),
                                  dict(momentum=0.5, dampening=0.1, weight_decay=0.01),
                                  dict(maximize=True, weight_decay=0.1)])
def test_sgd_variants(opts):
    _run(_standard, make_opt=lambda m: torch.optim.SGD(m.parameters(), lr=0.02, **opts), steps=6)


def test_gradients_accumulate_without_zero_grad():
    def step_of(model, opt):
        def step(x, y):
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss
        return step
    _run(step_of, steps=4)


def test_zero_grad_at_the_end_and_to_zeros():
    def step_of(model, opt):
        def step(x, y):
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
            return loss
        return step
    _run(step_of, steps=4)


def test_batchnorm_running_stats_are_updated_in_place():
    def make():
        torch.manual_seed(1)
        return nn.Sequential(nn.Linear(20, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    m = _run(_standard, make_model=make, steps=4)
    assert m.kernels()


def test_a_changed_learning_rate_is_seen():
    (m1, o1), (m2, o2) = _pair(_two_layer, lambda m: torch.optim.SGD(m.parameters(), lr=0.1))
    s1 = torch.optim.lr_scheduler.StepLR(o1, step_size=2, gamma=0.5)
    s2 = torch.optim.lr_scheduler.StepLR(o2, step_size=2, gamma=0.5)
    x, y = torch.randn(8, 20), torch.randn(8, 3)
    eager, compiled = _standard(m1, o1), torch.compile(_standard(m2, o2))
    for _ in range(7):
        eager(x, y)
        compiled(x, y)
        s1.step()
        s2.step()
        _assert_same(m1, m2)


@pytest.mark.parametrize("make_opt", [
    lambda m: torch.optim.Adam(m.parameters(), lr=0.01),
    lambda m: torch.optim.Adam(m.parameters(), lr=0.01, amsgrad=True, weight_decay=0.01),
    lambda m: torch.optim.AdamW(m.parameters(), lr=0.01),
    lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01, momentum=0.5, centered=True)])
def test_adam_compiles_with_its_step_count_as_a_tensor(make_opt):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        compiled = _run(_standard, make_opt=make_opt, steps=5)
    assert compiled.kernels()


def test_adagrad_reads_its_step_count_and_runs_eagerly_with_one_warning():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        _run(_standard, make_opt=lambda m: torch.optim.Adagrad(m.parameters(), lr=0.1), steps=3)
    breaks = [x for x in w if "graph break" in str(x.message)]
    assert len(breaks) == 1 and "item" in str(breaks[0].message)


def test_a_graph_break_in_a_step_runs_the_step_once():
    # a data read mid-step (after backward, before the update) must not run the step twice
    (m1, o1), (m2, o2) = _pair(_two_layer, lambda m: torch.optim.SGD(m.parameters(), lr=0.1))
    x, y = torch.randn(8, 20), torch.randn(8, 3)
    seen = []

    def step_of(model, opt):
        def step(a, b):
            opt.zero_grad()
            loss = F.mse_loss(model(a), b)
            loss.backward()
            seen.append(loss.item())  # a graph break
            opt.step()
            return loss
        return step
    eager, compiled = step_of(m1, o1), torch.compile(step_of(m2, o2))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            eager(x, y)
            compiled(x, y)
            _assert_same(m1, m2)
    assert len(seen) == 6
    assert sum("graph break" in str(x.message) for x in w) == 1


def test_classifier_step_with_cross_entropy():
    torch.manual_seed(3)
    x, y = torch.randn(16, 20), torch.randint(0, 3, (16,))

    def step_of(model, opt):
        def step(a, b):
            opt.zero_grad()
            loss = F.cross_entropy(model(a), b)
            loss.backward()
            opt.step()
            return loss
        return step
    _run(step_of, x=x, y=y, steps=4,
         make_opt=lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9))


def test_parameters_keep_their_identity_and_buffers():
    (m1, o1), (m2, o2) = _pair(_two_layer, lambda m: torch.optim.SGD(m.parameters(), lr=0.05))
    data = lambda m: [(id(p), p.detach().numpy().__array_interface__["data"][0])
                      for p in m.parameters()]
    before = data(m2)
    compiled = torch.compile(_standard(m2, o2))
    x, y = torch.randn(8, 20), torch.randn(8, 3)
    view = m2[0].weight.detach().numpy()
    versions = []
    for _ in range(3):
        w0 = view.copy()
        compiled(x, y)
        assert not np.array_equal(view, w0)  # a numpy view of the parameter sees the update
        versions.append(m2[0].weight._version)
    assert data(m2) == before
    assert versions[0] < versions[1] < versions[2]  # saved-tensor checks see the writes


def _in_place_params(compiled) -> int:
    """Kernel parameters that are read and written (an update written over its input)."""
    import re
    return len(re.findall(r"(?<!const )float\* restrict in\d", compiled.source()))


def test_parameter_updates_are_written_in_place_by_the_kernels():
    compiled = _run(lambda m, o: _standard(m, o), make_opt=lambda m: torch.optim.SGD(
        m.parameters(), lr=0.05, momentum=0.9))
    # four parameters and four momentum buffers, each overwritten by the kernel computing it
    assert _in_place_params(compiled) == 8, compiled.source()


def test_an_old_value_read_after_the_update_is_not_overwritten():
    w = torch.randn(6, 5)
    w2 = w.clone()

    def step(x, w):
        old = w * 1  # simplified to w itself: the program returns its input
        w.mul_(0.5)
        return old + x, (w * 3).sum()

    cf = torch.compile(lambda x: step(x, w))
    for _ in range(3):
        x = torch.randn(6, 5)
        a, s = cf(x)
        b, t = step(x, w2)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_allclose(float(s), float(t), rtol=1e-6)
        np.testing.assert_array_equal(w.numpy(), w2.numpy())


def test_an_update_of_memory_an_argument_views_runs_right():
    """The parameter is overwritten in place only when no other input shares its memory: an
    argument that is a view of it gets the eager order of reads and writes."""
    torch.manual_seed(0)
    w = torch.randn(4, 5)
    ref = w.clone()

    def step(x, w):
        w.sub_(x * 0.5)
        return (w * x).sum()

    cf = torch.compile(lambda x: step(x, w))
    for k in range(4):
        x_c = torch.randn(4, 5) if k < 2 else w[:, :]  # later calls: a view of w itself
        x_e = x_c.clone() if k < 2 else ref[:, :]
        got, want = cf(x_c), step(x_e, ref)
        np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
        np.testing.assert_allclose(w.numpy(), ref.numpy(), rtol=1e-6)


def test_module_compile_in_place_trains_as_eager():
    # the torch.compile tutorial's `model.compile()`: the module itself runs compiled, its
    # parameters read afresh each call (an optimizer's updates are seen), hooks around it
    rng = np.random.RandomState(0)
    x, y = rng.standard_normal((6, 3)), rng.standard_normal((6, 1))

    def make():
        m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).double()
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
        return m

    eager = make()
    compiled = copy.deepcopy(eager)
    assert compiled.compile() is None
    seen = []
    compiled.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    losses = []
    for model in (eager, compiled):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss = F.mse_loss(model(torch.tensor(x)), torch.tensor(y))
            loss.backward()
            opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(losses[1], rel=1e-12)
    assert seen == [(6, 1)] * 3
    for a, b in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    assert list(compiled.state_dict()) == list(eager.state_dict())
    # a copy, or a saved and loaded module, is the module uncompiled (as PyTorch drops its
    # compiled call), with the same parameters
    plain = make()  # (no hooks: a lambda hook is not something torch.save can store)
    plain.compile()
    for original, other in ((compiled, copy.deepcopy(compiled)), (plain, _saved_and_loaded(plain))):
        assert "forward" not in other.__dict__ and "forward" in original.__dict__
        np.testing.assert_allclose(other(torch.tensor(x)).detach().numpy(),
                                   original(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def _saved_and_loaded(module):
    import io
    buf = io.BytesIO()
    torch.save(module, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def test_a_step_that_reads_only_globals_compiles_over_them():
    """`train_step()` with no arguments (model, optimizer and batch are globals, as scripts
    write it) is traced over the tensors it reads, not run eagerly; its losses and parameters
    follow the eager step's. A function that reads no tensor at all runs eagerly."""
    from fusetorch import _policy, compiler
    (m1, o1), (m2, o2) = _pair(_two_layer, lambda m: torch.optim.SGD(m.parameters(), lr=0.05))
    x, y = torch.randn(8, 20), torch.randn(8, 3)

    def step_of(model, opt):
        def train_step():
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return train_step

    _policy.clear_decisions()
    eager, compiled = step_of(m1, o1), torch.compile(step_of(m2, o2))
    for _ in range(4):
        np.testing.assert_allclose(compiled().item(), eager().item(), rtol=1e-5)
        _assert_same(m1, m2)
    said = compiler.explain("compile")
    assert "train_step" in said and "(): compiled:" in said, said
    make = torch.compile(lambda: torch.ones(3) * 2)
    assert make().tolist() == make().tolist() == [2.0, 2.0, 2.0]
    assert "it reads no tensor" in compiler.explain("compile")

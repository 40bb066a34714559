"""A compiled call returns what the eager call would (issue 25, items 1 and 2): what the trace
read of a module (its mode, parameters, buffers, submodules, `eps`, `p`, `momentum`) is guarded
however the module is reached, and only what it read: a loop variable `step` next to
`opt.step()` or `data` next to `w.data` costs no retrace. Retraces say why, are logged on
request, and warn once past PyTorch's recompile limit.

Values are checked against numpy float64 written from the layers' formulas."""
import logging
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch import _logging
from fusetorch.compile import RECOMPILE_LIMIT
from fusetorch.nn.module import Module


def _np(t) -> np.ndarray:
    return t.detach().numpy().astype(np.float64)


def _reference(model, x: np.ndarray, rm: np.ndarray, rv: np.ndarray):
    """Linear -> BatchNorm1d -> Dropout(p in {0, 1}) in float64; BatchNorm's running stats
    `rm`, `rv` as they were before the call, and after it."""
    lin, bn, drop = model[0], model[1], model[2]
    h = x @ _np(lin.weight).T + _np(lin.bias)
    if model.training:
        mean, var = h.mean(0), h.var(0)
        m = bn.momentum
        rm, rv = (1 - m) * rm + m * mean, (1 - m) * rv + m * h.var(0, ddof=1)
    else:
        mean, var = rm, rv
    y = (h - mean) / np.sqrt(var + bn.eps) * _np(bn.weight) + _np(bn.bias)
    if isinstance(drop, nn.Dropout) and drop.training and drop.p == 1.0:
        y = np.zeros_like(y)
    return y, rm, rv


class _Holder:
    pass


class _Trainer:
    def __init__(self, model):
        self.model = model

    def predict(self, x):
        return self.model(x)


_GLOBAL_MODEL = None


def _through_a_global(x):
    return _GLOBAL_MODEL(x)


def _compiled(reach: str, model):
    """The model compiled, reached the way `reach` says."""
    global _GLOBAL_MODEL
    if reach == "compiled module":
        return torch.compile(model)
    if reach == "global":
        _GLOBAL_MODEL = model
        return torch.compile(_through_a_global)
    if reach == "closure cell":
        return torch.compile(lambda x: model(x))
    if reach == "attribute of an object":
        holder = _Holder()
        holder.model = model
        return torch.compile(lambda x: holder.model(x))
    return torch.compile(_Trainer(model).predict)  # `self`


def _replace_submodule(model):
    lin = nn.Linear(4, 3)
    with torch.no_grad():
        lin.weight.copy_(torch.arange(12.0).reshape(3, 4) / 10)
    model[0] = lin


CHANGES = [
    ("drop.p", lambda m: setattr(m[2], "p", 1.0)),
    ("bn.momentum", lambda m: setattr(m[1], "momentum", 0.5)),
    ("eval()", lambda m: m.eval()),
    ("bn.eps", lambda m: setattr(m[1], "eps", 10.0)),
    ("a new parameter", lambda m: setattr(m[0], "weight", nn.Parameter(torch.ones(3, 4)))),
    ("a new buffer", lambda m: setattr(m[1], "running_var", torch.full((3,), 4.0))),
    ("a new submodule", _replace_submodule),
    ("train()", lambda m: m.train()),
]


@pytest.mark.filterwarnings("ignore:.*traced again")  # (eight changes: the limit's warning)
@pytest.mark.parametrize("reach", ["compiled module", "global", "closure cell",
                                   "attribute of an object", "self"])
def test_a_compiled_call_sees_every_change_of_the_module_it_reads(reach):
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Dropout(0.0))
    f = _compiled(reach, model)
    x = np.random.default_rng(0).standard_normal((5, 4))
    xt = torch.tensor(x, dtype=torch.float32)
    for change, apply in [("none", None)] + CHANGES:
        if apply is not None:
            apply(model)
        for _ in range(2):  # the call that traces again, then its replay
            rm, rv = _np(model[1].running_mean), _np(model[1].running_var)
            want, want_rm, want_rv = _reference(model, x, rm, rv)
            got = f(xt)
            np.testing.assert_allclose(_np(got), want, rtol=1e-4, atol=1e-5, err_msg=change)
            np.testing.assert_allclose(_np(model[1].running_mean), want_rm, rtol=1e-5,
                                       atol=1e-6, err_msg=change)
            np.testing.assert_allclose(_np(model[1].running_var), want_rv, rtol=1e-5,
                                       atol=1e-6, err_msg=change)
    assert f.retrace_count == len(CHANGES)


def test_the_issues_example_follows_eval_and_a_new_weight():
    model = nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.5))
    predict = torch.compile(lambda t: model(t))
    x = torch.ones(2, 4)
    predict(x)
    predict(x)
    model.eval()
    bias = _np(model[0].bias)
    want = x.numpy().astype(np.float64) @ _np(model[0].weight).T + bias
    np.testing.assert_allclose(_np(predict(x)), want, rtol=1e-5)  # applied dropout before
    assert "Dropout.training" in predict.last_retrace_reason
    model[0].weight = nn.Parameter(torch.ones(3, 4))
    np.testing.assert_allclose(_np(predict(x)), np.broadcast_to(4.0 + bias, (2, 3)), rtol=1e-5)
    assert "Linear.weight" in predict.last_retrace_reason


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [2.0]  # a list the forward indexes

    def forward(self, x):
        return x * self.scales[0]


def test_a_list_read_from_a_module_and_a_rebound_holder_attribute_are_guarded():
    holder = _Holder()
    holder.model = _Scaled()
    f = torch.compile(lambda t: holder.model(t) + 1)
    x = torch.ones(2)
    assert f(x).tolist() == f(x).tolist() == [3.0, 3.0]
    holder.model.scales[0] = 5.0  # mutated in place
    assert f(x).tolist() == [6.0, 6.0]
    assert f.last_retrace_reason.startswith("attribute _Scaled.scales changed its items (read "
                                            f"at {__file__}:")
    holder.model = _Scaled()  # another module under the same attribute
    assert f(x).tolist() == [3.0, 3.0]
    assert f.last_retrace_reason.startswith("attribute _Holder.model is another _Scaled object")
    assert f(x).tolist() == [3.0, 3.0] and f.retrace_count == 2


def test_a_module_held_by_a_namespace_object_is_guarded():
    import argparse
    from types import SimpleNamespace

    for ns in (SimpleNamespace(model=nn.Linear(2, 1, bias=False)),
               argparse.Namespace(model=nn.Linear(2, 1, bias=False))):
        with torch.no_grad():
            ns.model.weight.fill_(1.0)
        f = torch.compile(lambda t: ns.model(t) * 1)
        x = torch.ones(1, 2)
        assert f(x).tolist() == f(x).tolist() == [[2.0]]
        ns.model = nn.Linear(2, 1, bias=False)
        with torch.no_grad():
            ns.model.weight.fill_(3.0)
        assert f(x).tolist() == [[6.0]]
        assert f.last_retrace_reason == "attribute 'model' is another Linear object"


_OFFSET = 1.0


class _Offset(nn.Module):
    def forward(self, x):
        return self.lin(x) + _OFFSET  # a global its forward reads


def _offset_model(w: float):
    m = _Offset()
    m.lin = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        m.lin.weight.fill_(w)
    return m


def test_a_module_passed_as_an_argument_is_compiled_and_guarded(monkeypatch):
    f = torch.compile(lambda m, t: m(t) * 2)
    a, b, x = _offset_model(1.0), _offset_model(-2.0), torch.ones(1, 2)
    assert f(a, x).tolist() == f(a, x).tolist() == [[6.0]]
    assert f.retrace_count == 0 and f.programs()  # compiled, replayed
    assert f(b, x).tolist() == [[-6.0]]
    assert f.last_retrace_reason == "argument 0: another module"
    a.lin.weight = nn.Parameter(torch.full((1, 2), 3.0))
    assert f(a, x).tolist() == [[14.0]]
    monkeypatch.setitem(globals(), "_OFFSET", 0.0)
    assert f(a, x).tolist() == [[12.0]] and f(b, x).tolist() == [[-8.0]]


def test_an_attribute_the_trace_did_not_read_costs_no_retrace():
    model = nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.5))
    model.eval()
    holder = _Holder()
    holder.model, holder.calls = model, 0
    f = torch.compile(lambda t: holder.model(t))
    x = torch.ones(2, 4)
    for i in range(4):
        model.step_count = i  # set on the module, never read by its forward
        model[0].note = str(i)
        holder.calls = i
        f(x)
    assert f.retrace_count == 0


def test_train_and_eval_in_turn_reuse_their_variants():
    model = nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.5))
    f = torch.compile(lambda t: model(t))
    x = torch.ones(2, 4)
    for i in range(6):
        model.train(i % 2 == 0)
        f(x)
    assert f.retrace_count == 1


def test_the_recording_hooks_are_gone_after_a_trace_that_raised():
    model = nn.Linear(4, 3)

    def broken(x):
        model(x)
        raise KeyError("in the user's code")

    with pytest.raises(KeyError):
        torch.compile(broken)(torch.ones(2, 4))
    assert "__getattribute__" not in vars(Module)
    assert not getattr(Module.__getattr__, "recording", False)


# ------------------------------------------------------------------ retracing


step = 0  # the README's loop variable, a global next to `opt.step()`
data = None  # and one next to `w.data`
_W = nn.Parameter(torch.ones(3))
_OPT = torch.optim.SGD([_W], lr=0.1, momentum=0.9)


def _train_step(x):
    _OPT.zero_grad()
    loss = (x * _W).sum() + _W.data.sum() * 0
    loss.backward()
    _OPT.step()
    return loss


def test_a_global_named_like_an_attribute_costs_no_retrace(monkeypatch):
    f = torch.compile(_train_step)
    x = torch.ones(3)
    with torch.no_grad():
        _W.fill_(1.0)
    w, v = 1.0, 0.0
    for i in range(10):
        monkeypatch.setitem(globals(), "step", i)
        monkeypatch.setitem(globals(), "data", i)
        loss = f(x).item()
        assert loss == pytest.approx(3 * w)
        v = 0.9 * v + 1.0  # SGD with momentum, its gradient is x
        w -= 0.1 * v
    np.testing.assert_allclose(_np(_W), [w] * 3, rtol=1e-5)
    # the optimizer's first step creates its momentum buffer: one retrace, then replays (every
    # call traced before)
    assert f.retrace_count == 1


_FACTOR = 1.0


def _scaled(x):
    return x * _FACTOR


def test_past_the_recompile_limit_one_warning_names_the_guard_and_the_line(monkeypatch):
    f = torch.compile(_scaled)
    x = torch.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(RECOMPILE_LIMIT + 4):
            monkeypatch.setitem(globals(), "_FACTOR", float(i))
            assert f(x).tolist() == [float(i)] * 2
    msgs = [str(w.message) for w in caught if "traced again" in str(w.message)]
    assert len(msgs) == 1
    assert "'_scaled'" in msgs[0] and "test_compile_guards.py:" in msgs[0]
    assert f"global '_FACTOR' changed ({RECOMPILE_LIMIT - 1}.0 -> {RECOMPILE_LIMIT}.0)" \
        in msgs[0]
    assert [w.filename for w in caught if "traced again" in str(w.message)] == [__file__]
    assert f.retrace_count == RECOMPILE_LIMIT + 3
    assert f.last_retrace_reason == (f"global '_FACTOR' changed ({RECOMPILE_LIMIT + 2}.0 -> "
                                     f"{RECOMPILE_LIMIT + 3}.0)")


def test_a_new_shape_is_the_reason_given():
    f = torch.compile(lambda t: t * 2)
    f(torch.ones(2, 3))
    assert f.last_retrace_reason is None and f.retrace_count == 0
    f(torch.ones(4, 3))
    assert f.last_retrace_reason == "argument 0: tensor shape changed ((2, 3) -> (4, 3))"


def test_every_retrace_is_logged_when_asked_for(capfd, monkeypatch):
    f = torch.compile(_scaled)
    x = torch.ones(2)
    try:
        _logging.set_logs(recompiles=True)
        for i in range(3):
            monkeypatch.setitem(globals(), "_FACTOR", float(i))
            f(x)
    finally:
        _logging.set_logs(recompiles=False)
    err = capfd.readouterr().err
    assert err.count("Recompiling function '_scaled'") == 2
    assert "triggered by: global '_FACTOR' changed (0.0 -> 1.0)" in err
    assert "triggered by: global '_FACTOR' changed (1.0 -> 2.0)" in err
    monkeypatch.setitem(globals(), "_FACTOR", 5.0)
    f(x)
    assert "Recompiling" not in capfd.readouterr().err  # off again


@pytest.mark.parametrize("var,value", [("FUSETORCH_LOGS", "recompiles"),
                                       ("TORCH_LOGS", "+dynamo,recompiles")])
def test_the_environment_turns_the_log_on(monkeypatch, var, value):
    monkeypatch.delenv("FUSETORCH_LOGS", raising=False)
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    monkeypatch.setenv(var, value)
    try:
        _logging._from_environment()
        assert _logging.recompiles.isEnabledFor(logging.DEBUG)
        assert _logging.recompiles.handlers
    finally:
        _logging.set_logs(recompiles=False)
    assert not _logging.recompiles.handlers


# ------------------------------------------------------------------ returning an input


def test_a_function_returning_its_argument_returns_that_tensor():
    f = torch.compile(lambda t: t)
    x = torch.ones(3)
    assert f(x) is x and f(x) is x  # traced, then replayed
    w = torch.ones(2, requires_grad=True)
    g = torch.compile(lambda t: (t, t * 3))
    for _ in range(2):
        same, tripled = g(w)
        assert same is w and same.grad_fn is None
        tripled.sum().backward()
    np.testing.assert_allclose(_np(w.grad), [6.0, 6.0])


# ------------------------------------------------------------------ the recording hooks


def test_a_trace_ending_in_one_thread_leaves_another_threads_recording_on():
    import threading

    from fusetorch._reads import recording

    lin = nn.Linear(2, 2)
    started, main_done, names = threading.Event(), threading.Event(), []

    def other():
        with recording() as log:
            started.set()
            main_done.wait()
            lin.weight, lin.training  # read after the main thread's recording ended
        names.extend(e[2] for e in log.entries)

    t = threading.Thread(target=other)
    t.start()
    started.wait()
    with recording() as mine:
        lin.bias
    main_done.set()
    t.join()
    assert [e[2] for e in mine.entries] == ["bias"]  # this thread's reads only
    assert names == ["weight", "training"]
    assert "__getattribute__" not in vars(Module)


# ------------------------------------------------ Python arguments the function never reads

def test_an_argument_the_function_never_reads_costs_no_retrace():
    w = torch.tensor([1.0, 2.0])

    @torch.compile
    def step_fn(x, step, *, tag="a"):
        return (x * w).sum()

    x = torch.tensor([3.0, 4.0])
    for step in range(12):
        assert step_fn(x, step, tag=str(step)).item() == 11.0
    assert step_fn.retrace_count == 0


@pytest.mark.parametrize("body", ["x * step", "x + len([step])", "x * (lambda: step)()",
                                  "x * locals()['step']", "x * [step for _ in (1,)][0]"])
def test_an_argument_the_function_reads_keys_its_variants(body):
    ns = {}
    exec(f"def fn(x, step):\n    return {body}\n", ns)
    f = torch.compile(ns["fn"])
    x = torch.tensor([1.0, 2.0])
    got = [f(x, s).tolist() for s in (1, 2, 3)]
    want = [[2.0, 3.0] if "len" in body else [s * 1.0, s * 2.0] for s in (1, 2, 3)]
    assert got == want
    assert f.retrace_count == 2  # (read, so keyed, even where its value does not matter)


def test_a_positional_only_name_passed_as_a_keyword_reaches_kwargs():
    ns = {}
    exec("def fn(x, step, /, **kw):\n    return x * kw['step']\n", ns)
    f = torch.compile(ns["fn"])
    x = torch.tensor([1.0])
    assert [f(x, 0, step=s).item() for s in (2.0, 3.0)] == [2.0, 3.0]


class _Scale(Module):
    def forward(self, x, step):
        return x * 2.0


def test_a_modules_unread_argument_is_keyed_again_while_a_hook_may_read_it():
    m = _Scale()
    f = torch.compile(m)
    x = torch.tensor([1.0])
    assert [f(x, s).item() for s in range(4)] == [2.0] * 4 and f.retrace_count == 0
    seen = []
    h = m.register_forward_pre_hook(lambda mod, args: seen.append(args[1]))
    assert [f(x, s).item() for s in (7, 8)] == [2.0, 2.0]
    h.remove()
    assert seen[-1] == 8  # the hook ran with each call's own argument


def test_set_logs_takes_pytorchs_keywords():
    # the compile tutorial's `torch._logging.set_logs(graph_breaks=True)`, component levels
    # too; an unknown keyword is Python's TypeError
    import logging
    _logging.set_logs(graph_breaks=True, dynamo=logging.INFO, guards=True)
    _logging.set_logs(recompiles_verbose=True)
    assert _logging.recompiles.level == logging.DEBUG
    _logging.set_logs()
    assert _logging.recompiles.level == logging.NOTSET
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_log'"):
        _logging.set_logs(no_such_log=True)


_SETTINGS = {"scale": 2.0}


def test_items_of_a_global_dict_and_a_closed_over_list_are_guarded():
    """`cfg["scale"] = 3` or `k[0] = 5.0` between calls: the next call sees the new value, as
    eager does (torch.compile guards the items it read); the reason names the container."""
    def make():
        shift = [1.0]
        return (lambda t: t * _SETTINGS["scale"] + shift[0]), shift
    fn, shift = make()
    f = torch.compile(fn)
    x = torch.tensor([1.0, -2.0])
    assert f(x).tolist() == f(x).tolist() == [3.0, -3.0]
    shift[0] = 5.0
    assert f(x).tolist() == [7.0, 1.0]
    assert f.last_retrace_reason == "closure variable 'shift' changed its items"
    _SETTINGS["scale"] = -1.0
    try:
        assert f(x).tolist() == [4.0, 7.0]
        assert f.last_retrace_reason == "global '_SETTINGS' changed its items"
    finally:
        _SETTINGS["scale"] = 2.0
    # the variant traced for these items again serves, without a trace
    assert f(x).tolist() == [7.0, 1.0] and f.retrace_count == 2

"""The fused eager optimizer step (fusetorch/optim/_fused.py: each optimizer's update rule traced
and compiled into one batched kernel) against the optimizers' Python loops, which run the rule:
the same parameters, gradients and schedules through both, bit for bit equal after every step, for
every combination of the options the kernels branch on, in float32 and float64, with parameters
lacking gradients, mixed dtypes and shapes, state replaced mid-run, and with the fused path off or
without a C compiler."""
import copy
import itertools
import os
import subprocess
import sys

import jinja2
import numpy as np
import pytest

import fusetorch as torch
from fusetorch import nn, optim
from fusetorch._policy import POLICY
from fusetorch.codegen import environment
from fusetorch.optim import _fused, adam
from fusetorch.runtime import build, cbuild

SHAPES = [(3, 4), (5,), (2, 3, 2), (), (7,)]
NO_GRAD = 4  # the parameter at this position never has a gradient


@pytest.fixture(autouse=True)
def _enabled(monkeypatch):
    """The fused path on, also when the suite runs under FUSETORCH_EAGER_COMPILE=0 (which
    test_environment_variable_turns_it_off checks in a process of its own)."""
    monkeypatch.setattr(POLICY, "fused_optimizers", True)


@pytest.fixture
def calls(monkeypatch):
    """Counts fused kernel calls (one per group and dtype per step)."""
    seen = []
    run = _fused._run

    def counted(*args):
        seen.append(args[0])
        return run(*args)
    monkeypatch.setattr(_fused, "_run", counted)
    return seen


def _params(dtypes, seed=0):
    rng = np.random.default_rng(seed)
    return [nn.Parameter(torch.tensor(rng.standard_normal(s), dtype=d))
            for s, d in zip(SHAPES, dtypes)]


def _train(make_opt, dtypes, fused, steps=6, schedule=True, skip=None, seed=0, between=None):
    """Parameters after each step; gradients drawn per step (large first, so AMSGrad's max
    matters); `skip`: (step, position) pairs whose gradient is None."""
    old = POLICY.fused_optimizers
    POLICY.fused_optimizers = fused
    try:
        params = _params(dtypes, seed)
        opt = make_opt(params)
        sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.8) if schedule else None
        rng = np.random.default_rng(seed + 1)
        out = []
        for i in range(steps):
            for j, p in enumerate(params):
                scale = 3.0 if i < 2 else 0.3
                g = torch.tensor(rng.standard_normal(p.shape) * scale, dtype=p.dtype)
                p.grad = None if j == NO_GRAD or (i, j) in (skip or ()) else g
            opt.step()
            if sched is not None:
                sched.step()
            if between is not None:
                between(i, opt, params)
            out.append([p.detach().numpy().copy() for p in params])
        return out, opt
    finally:
        POLICY.fused_optimizers = old


def _assert_bitwise(a, b):
    for step, (xs, ys) in enumerate(zip(a, b)):
        for k, (x, y) in enumerate(zip(xs, ys)):
            assert x.dtype == y.dtype
            assert np.array_equal(x, y), f"step {step}, param {k}: max diff {np.abs(x - y).max()}"


def _state(opt) -> list:
    return [(i, k, v.numpy().copy() if isinstance(v, torch.Tensor) else v)
            for i, st in opt.state_dict()["state"].items() for k, v in sorted(st.items())]


def _check(make_opt, calls, dtypes=(torch.float64,) * 5, expect_fused=True, **kw):
    loop, loop_opt = _train(make_opt, dtypes, fused=False, **kw)
    n = len(calls)
    fused, opt = _train(make_opt, dtypes, fused=True, **kw)
    _assert_bitwise(loop, fused)
    a, b = _state(loop_opt), _state(opt)  # every state tensor, step counters included
    assert [x[:2] for x in a] == [x[:2] for x in b]
    _assert_bitwise([[x[2] for x in a]], [[x[2] for x in b]])
    assert (len(calls) > n) == expect_fused
    return opt


def _combos(**options):
    names = list(options)
    return [dict(zip(names, values)) for values in itertools.product(*options.values())]


SGD = [c for c in _combos(momentum=[0, 0.9], nesterov=[False, True], dampening=[0, 0.3],
                          weight_decay=[0, 0.1], maximize=[False, True])
       if not (c["nesterov"] and (c["momentum"] == 0 or c["dampening"] != 0))]
ADAM = _combos(amsgrad=[False, True], weight_decay=[0, 0.1], decoupled_weight_decay=[False, True],
               maximize=[False, True], betas=[(0.9, 0.999), (0.3, 0.6)])
RMSPROP = _combos(centered=[False, True], momentum=[0, 0.5], weight_decay=[0, 0.1],
                  maximize=[False, True], alpha=[0.99, 0.3])
ADAGRAD = _combos(lr_decay=[0, 0.05], weight_decay=[0, 0.1], maximize=[False, True],
                  initial_accumulator_value=[0, 0.5])
ADAMAX = _combos(weight_decay=[0, 0.1], maximize=[False, True], betas=[(0.9, 0.999), (0.3, 0.6)],
                 eps=[1e-8, 0.05])
RADAM = _combos(weight_decay=[0, 0.1], decoupled_weight_decay=[False, True],
                maximize=[False, True], betas=[(0.9, 0.999), (0.3, 0.9)])
NADAM = _combos(weight_decay=[0, 0.1], decoupled_weight_decay=[False, True],
                maximize=[False, True], betas=[(0.9, 0.999), (0.3, 0.6)],
                momentum_decay=[4e-3, 0.5])
RPROP = _combos(maximize=[False, True], etas=[(0.5, 1.2), (0.3, 1.9)],
                step_sizes=[(1e-6, 50), (0.02, 0.08)])
ADADELTA = _combos(weight_decay=[0, 0.1], maximize=[False, True], rho=[0.9, 0.3],
                   eps=[1e-6, 0.05])


# every optimizer the step fuses: (class, lr, option combinations, steps). RAdam: both betas
# rectify the variance from the sixth step on, so 8 steps cover both branches of its update;
# (0.3, 0.9) also takes lerp's other form. NAdam's mu_product (a 0-d state tensor, updated in
# Python per parameter) is compared with the rest of the state. Rprop's second step_sizes
# clamp its steps on both sides.
EVERY = [("SGD", 0.1, SGD, 6), ("Adam", 0.05, ADAM, 6),
         ("AdamW", 0.05, [dict(), dict(amsgrad=True), dict(weight_decay=0)], 6),
         ("RMSprop", 0.01, RMSPROP, 6), ("Adagrad", 0.1, ADAGRAD, 6),
         ("Adamax", 0.05, ADAMAX, 6), ("RAdam", 0.05, RADAM, 8), ("NAdam", 0.05, NADAM, 6),
         ("Rprop", 0.05, RPROP, 6), ("Adadelta", 0.5, ADADELTA, 6)]


@pytest.mark.parametrize("name,lr,kw,steps", [
    pytest.param(n, lr, kw, steps, id=f"{n}-{kw}") for n, lr, combos, steps in EVERY
    for kw in combos])
def test_every_option_combination(name, lr, kw, steps, calls):
    _check(lambda ps: getattr(optim, name)(ps, lr=lr, **kw), calls, steps=steps)


@pytest.mark.parametrize("fused", [False, True])
def test_nadam_with_a_mu_product_it_cannot_update_runs_the_loop(fused, calls):
    # an integer mu_product (a hand-made state dict): the loop's `mul_` raises PyTorch's
    # error, and the fused step must leave it to the loop rather than update it in place
    def between(i, opt, params):
        if i == 2:
            for p in params:
                if p in opt.state:
                    opt.state[p]["mu_product"] = torch.tensor(1)
    with pytest.raises(RuntimeError, match="can't be cast"):
        _train(lambda ps: optim.NAdam(ps, lr=0.05), (torch.float64,) * 5, fused=fused,
               steps=5, between=between)


MAKERS = [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
          lambda ps: optim.Adam(ps, lr=0.05, amsgrad=True, weight_decay=0.01),
          lambda ps: optim.AdamW(ps, lr=0.05),
          lambda ps: optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5),
          lambda ps: optim.Adagrad(ps, lr=0.1, lr_decay=0.01),
          lambda ps: optim.Adadelta(ps, lr=1.0, weight_decay=0.01),
          lambda ps: optim.Adamax(ps, lr=0.05, weight_decay=0.01),
          lambda ps: optim.RAdam(ps, lr=0.05, betas=(0.3, 0.9)),
          lambda ps: optim.NAdam(ps, lr=0.05, weight_decay=0.01),
          lambda ps: optim.Rprop(ps, lr=0.05)]


@pytest.mark.parametrize("make_opt", MAKERS)
def test_float32(make_opt, calls):
    _check(make_opt, calls, dtypes=(torch.float32,) * 5)


@pytest.mark.parametrize("make_opt", MAKERS)
def test_mixed_dtypes_in_one_group_run_one_kernel_per_dtype(make_opt, calls):
    _check(make_opt, calls, dtypes=(torch.float32, torch.float64, torch.float32, torch.float64,
                                    torch.float32))
    assert {len(b.params) for b in calls} == {2}  # two float32 and two float64 with grads


@pytest.mark.parametrize("make_opt", MAKERS)
def test_params_losing_and_regaining_gradients(make_opt, calls):
    _check(make_opt, calls, steps=8, skip={(2, 1), (3, 0), (3, 1), (5, 2)})


def test_a_learning_rate_changed_by_hand_and_no_scheduler(calls):
    def halve(i, opt, params):
        for g in opt.param_groups:
            g["lr"] = g["lr"] * 0.5 if i % 2 else g["lr"]
            g["momentum"] = 0.5  # a new value of a runtime argument, same structure
    _check(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), calls, schedule=False,
           between=halve)


def test_groups_with_their_own_options(calls):
    def make(ps):
        return optim.Adam([{"params": ps[:2], "amsgrad": True},
                           {"params": ps[2:], "lr": 0.2, "betas": (0.5, 0.9)}], lr=0.05)
    _check(make, calls)
    assert len({id(b.kernel.func) for b in calls}) == 2


def test_state_replaced_mid_run_is_followed(calls):
    # load_state_dict copies the state tensors; the kernel must write the new ones
    def reload(i, opt, params):
        if i == 3:
            opt.load_state_dict(copy.deepcopy(opt.state_dict()))
        if i == 4:
            params[0].data = params[0].data.clone()  # a parameter's array replaced too
        if i == 5 and "step" in opt.state[params[1]]:  # and a step counter
            opt.state[params[1]]["step"] = opt.state[params[1]]["step"].clone()
    _check(lambda ps: optim.Adam(ps, lr=0.05), calls, steps=8, between=reload)
    _check(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), calls, steps=7, between=reload)


def test_a_parameter_the_kernel_cannot_read_runs_the_loop(calls):
    def transposed(ps):  # a parameter that is a transposed view: not C-contiguous
        ps[0] = nn.Parameter(torch.tensor(np.linspace(-1, 1, 12).reshape(4, 3)).t())
        return optim.SGD(ps, lr=0.1, momentum=0.9)
    _check(transposed, calls, expect_fused=False)


def test_strided_gradients_run_the_loop(calls, monkeypatch):
    results = []
    for fused in (False, True):
        monkeypatch.setattr(POLICY, "fused_optimizers", fused)
        rng = np.random.default_rng(0)
        p = nn.Parameter(torch.tensor(rng.standard_normal((3, 4))))
        opt = optim.SGD([p], lr=0.1, momentum=0.9)
        for _ in range(4):
            p.grad = torch.tensor(rng.standard_normal((4, 3))).t()
            opt.step()
        results.append(p.detach().numpy().copy())
    assert np.array_equal(*results)
    assert not calls


def test_float16_and_foreach_false_run_the_loop(calls):
    _check(lambda ps: optim.Adam(ps, lr=0.05), calls, dtypes=(torch.float16,) * 5,
           expect_fused=False)
    _check(lambda ps: optim.SGD(ps, lr=0.1, foreach=False), calls, expect_fused=False)


def test_updates_bump_version_counters(calls):
    p = nn.Parameter(torch.randn(6, dtype=torch.float64))
    opt = optim.Adam([p], lr=0.1)
    p.grad = torch.randn(6, dtype=torch.float64)
    opt.step()  # (the loop's: it creates the state)
    for _ in range(3):
        p.grad = torch.randn(6, dtype=torch.float64)
        before = (p._version, opt.state[p]["exp_avg"]._version, opt.state[p]["step"]._version)
        opt.step()
        after = (p._version, opt.state[p]["exp_avg"]._version, opt.state[p]["step"]._version)
        assert all(a > b for a, b in zip(after, before))
    assert len(calls) == 3  # the second step on
    assert float(opt.state[p]["step"]) == 4.0


def test_disabled_builds_nothing(calls, monkeypatch):
    monkeypatch.setattr(POLICY, "fused_optimizers", False)
    monkeypatch.setattr(_fused, "_FUNCS", {})
    p = nn.Parameter(torch.randn(5))
    opt = optim.SGD([p], lr=0.1)
    for _ in range(3):
        p.grad = torch.ones(5)
        opt.step()
    assert not calls and not _fused._FUNCS


def test_environment_variable_turns_it_off():
    code = "from fusetorch._policy import POLICY; print(POLICY.fused_optimizers)"
    env = dict(os.environ, FUSETORCH_EAGER_COMPILE="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_no_compiler_warns_once_and_runs_the_loop(calls, monkeypatch):
    def no_cc(*a, **k):
        raise cbuild.CompilerUnavailable("no C compiler found")
    monkeypatch.setattr(cbuild, "build_all", no_cc)
    monkeypatch.setattr(_fused, "_FUNCS", {})
    monkeypatch.setattr(_fused, "_compiler", True)
    monkeypatch.setattr(build, "_warned", set())  # the one "cannot build kernels" warning
    loop, _ = _train(lambda ps: optim.Adam(ps, lr=0.05), (torch.float32,) * 5, fused=False)
    with pytest.warns(UserWarning, match="no C compiler") as record:
        fused, _ = _train(lambda ps: optim.Adam(ps, lr=0.05), (torch.float32,) * 5, fused=True)
        fused2, _ = _train(lambda ps: optim.SGD(ps, lr=0.1), (torch.float32,) * 5, fused=True)
    assert len([w for w in record if "cannot build kernels" in str(w.message)]) == 1
    _assert_bitwise(loop, fused)
    assert not calls


def test_generated_source_reads_as_the_update():
    # AdamW with AMSGrad and maximize in float32: one batched kernel (a table of pointers per
    # operand, a length per parameter), its inputs named by role, its statements the rule's
    p = nn.Parameter(torch.zeros(3))
    opt = optim.AdamW([p], lr=0.1, amsgrad=True, maximize=True)
    f = dict(adam.RULE.flags(opt.param_groups[0]))
    assert f == dict(maximize=True, weight_decay=True, decoupled=True, amsgrad=True,
                     lerp_from_end=False)
    source = _fused.source(adam.RULE, f, np.float32)
    assert "int64_t n_sets, const int64_t* numel, float* const* in0_sets" in source
    assert "for (long i = 0; i < numel[t]; i++)" in source and "#pragma omp simd" in source
    for role in ("param f32", "grad f32", "max_exp_avg_sq f32", "decay_factor f32[]",
                 "neg_step_size f32[]"):
        assert role in source
    assert "sqrtf(" in source and "FT_MAX(" in source and "(-x" in source  # maximize: -g
    with pytest.raises(jinja2.TemplateNotFound):  # no hand-written update any more
        environment("c").get_template("optim.c.j2")


def test_zero_size_and_one_element_parameters(calls):
    for shapes in ([(0,), (1,), (3, 0)], [(1,)]):
        results = []
        for fused in (False, True):
            POLICY.fused_optimizers = fused
            params = [nn.Parameter(torch.tensor(np.full(s, 0.5))) for s in shapes]
            opt = optim.Adam(params, lr=0.1, amsgrad=True)
            for i in range(3):
                for p in params:
                    p.grad = torch.tensor(np.full(p.shape, 1.0 + i))
                opt.step()
            results.append([p.detach().numpy().copy() for p in params])
        _assert_bitwise([results[0]], [results[1]])
    assert calls


_MEMORY_PROBE = """
import sys, tracemalloc
import numpy as np
import fusetorch as torch
from fusetorch import nn, optim
from fusetorch._policy import POLICY
rng = np.random.default_rng(0)
params = [nn.Parameter(torch.tensor(rng.standard_normal(s), dtype=torch.float32))
          for s in SHAPES]
opt = optim.Adam(params, lr=1e-3, amsgrad=True)
sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.999)
grads = [torch.randn(p.shape) for p in params]

def steps(n):
    for _ in range(n):
        for p, g in zip(params, grads):
            p.grad = g.clone()
        opt.step()
        sched.step()
# (CPython keeps up to 2000 freed tuples of each size for reuse, ~150 KB that tracemalloc
# counts as held until the pool is full: fill it first)
steps(2100)
tracemalloc.start()
steps(50)
marks = [tracemalloc.get_traced_memory()[0]]
for _ in range(2):
    steps(500)
    marks.append(tracemalloc.get_traced_memory()[0])
tracemalloc.stop()
assert all(plan.batches for plan in opt._fused_plans.values()), "should have run fused"
print(*[b - a for a, b in zip(marks, marks[1:])])
"""


def test_memory_stays_flat():
    """1000 fused Adam steps hold no more memory. In a fresh interpreter: in the test
    process, what earlier tests left behind grew in both windows (30-40 KB each) when the
    whole suite ran before it, and nothing alone."""
    code = f"SHAPES = {SHAPES!r}\n" + _MEMORY_PROBE
    env = dict(os.environ, FUSETORCH_EAGER_COMPILE="1")  # the fused path on, as `_enabled`
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    grown = [int(v) for v in out.stdout.split()[-2:]]
    # two windows of 500 steps: a leak grows in both, a one-off allocation in one at most
    assert min(grown) < 4_000, grown


def test_a_tensor_hyperparameter_runs_the_loop(calls):
    def tensor_momentum(i, opt, params):
        if i == 2:
            opt.param_groups[0]["momentum"] = torch.tensor(0.5, dtype=torch.float64)
    n = len(calls)
    _check(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), calls, between=tensor_momentum)
    assert len(calls) - n == 2  # steps 2 and 3 (0-based 1, 2) fused; the tensor's, the loop


def test_plain_sgd_prepares_its_tables_once(calls, monkeypatch):
    # SGD without momentum keeps no state: its pointer tables still stay valid from step to
    # step (they were rebuilt on every step, ~30 us of a two-layer step)
    prepared = []
    prepare = _fused._prepare
    monkeypatch.setattr(_fused, "_prepare", lambda *a: prepared.append(1) or prepare(*a))
    out, _ = _train(lambda ps: optim.SGD(ps, lr=0.1), (torch.float32,) * 5, fused=True,
                    steps=6, schedule=True)
    assert len(calls) == 5 and len(prepared) == 1
    loop, _ = _train(lambda ps: optim.SGD(ps, lr=0.1), (torch.float32,) * 5, fused=False,
                     steps=6, schedule=True)
    _assert_bitwise(loop, out)


def test_batched_kernels_are_flat_pointwise_and_c_only():
    from fusetorch.codegen import fuse, lower, render_cuda, render_base
    from fusetorch.tracer.trace import trace
    # a traced update's kernel: the CUDA renderer refuses it (a fused step runs on the CPU)
    kernel, roles = _fused.kernel_for(adam.RULE, dict(maximize=False, weight_decay=False,
                                                      decoupled=False, amsgrad=False,
                                                      lerp_from_end=False), np.float64)
    assert kernel.batched and {r[0] for r in roles} == {"tensor", "scalar"}
    from fusetorch.codegen.strategy import schedule
    with pytest.raises(render_base.Refused, match="batch of operand sets"):
        render_cuda.CUDA.check(schedule(kernel, "cuda"))
    # a group that is not one flat loop (a transposed read) cannot be batched
    x = torch.randn(3, 4)
    with trace(x) as rec:
        y = x.t() * 2.0
    graph = rec.graph(y)
    group = fuse.partition(graph, cpu=True).groups()[0]
    layouts = {id(group.inputs[0]): lower.Layout((4, 3), (1, 4))}  # (x.t() read in place)
    with pytest.raises(ValueError, match="flat pointwise"):
        lower.lower(group, layouts, batched=True)


def test_a_tensor_lr_is_read_as_a_number(calls):
    # lr as a 1-element tensor (PyTorch's capturable form): the loop reads it with .item(),
    # the fused step too; other hyperparameters as tensors run the loop (above)
    for make in (lambda ps: optim.Adam(ps, lr=torch.tensor(0.05)),
                 lambda ps: optim.SGD(ps, lr=torch.tensor(0.1), momentum=0.9)):
        _check(make, calls, schedule=False)

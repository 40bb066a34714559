"""What the profiler costs: nothing measurable when no profile records, a few microseconds per
event when one does.

    python benchmarks/bench_profiler.py

1. The flag check: `dispatch.binary/unary/apply` as shipped against copies compiled from
   their own source with the two `PROFILE` lines removed, in one process, interleaved, best of
   many rounds (the difference is the check; target: under 0.05 us); then the check alone
   (a function holding only it against an empty one), which the ops' own noise cannot hide.
2. `x + y` on 10x10 float32 through the operator, with no profile and inside one (default
   options, then record_shapes, then with_stack).
3. One eager training step of a small MLP (forward, backward, SGD step), without and with a
   profile, and a compiled one.
"""
from __future__ import annotations

import inspect
import sys
import textwrap
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402
from fusetorch.profiler import profile  # noqa: E402
from fusetorch.tracer import dispatch as D  # noqa: E402


def best(fn, number: int, rounds: int = 5) -> float:
    """Best seconds per call over `rounds` repeats."""
    return min(timeit.repeat(fn, number=number, repeat=rounds)) / number


def paired(a, b, batch: int = 1000, batches: int = 3000) -> tuple:
    """Best seconds per call of `a` and of `b`, over many short interleaved batches: on a
    loaded machine some batches of each run undisturbed, and the minimum finds them."""
    ta = tb = float("inf")
    ra = ra_ = range(batch)  # two names: the loops are alike
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in ra:
            a()
        t1 = time.perf_counter_ns()
        for _ in ra_:
            b()
        t2 = time.perf_counter_ns()
        ta, tb = min(ta, t1 - t0), min(tb, t2 - t1)
    return ta / batch / 1e9, tb / batch / 1e9


def without_check(name: str):
    """`dispatch.<name>` compiled from its source minus the profiler's two lines."""
    src = textwrap.dedent(inspect.getsource(getattr(D, name)))
    lines = src.splitlines()
    keep = []
    skip = 0
    for ln in lines:
        if "PROFILE is not None and PROFILE.enter()" in ln:
            skip = 2
        if skip:
            skip -= 1
            continue
        keep.append(ln)
    assert len(keep) == len(lines) - 2, name
    code = "\n".join(keep).replace(f"def {name}(", f"def _{name}_nocheck(", 1)
    exec(code, D.__dict__)
    return D.__dict__[f"_{name}_nocheck"]


def flag_check() -> None:
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    attrs = {"dims": (0, 1), "keepdim": False}
    cases = [("binary add 10x10", D.binary, ("add", x, y)),
             ("binary mul by 2.0", D.binary, ("mul", x, 2.0)),
             ("unary exp 10x10", D.unary, ("exp", x)),
             ("apply sum 10x10", D.apply, ("sum", [x], attrs))]
    for label, fn, args in cases:
        plain = without_check(fn.__name__)
        a, b = paired(lambda: fn(*args), lambda: plain(*args), 200, 3000)
        a, b = a * 1e6, b * 1e6
        print(f"{label:22s} with check {a:7.3f} us   without {b:7.3f} us   "
              f"difference {a - b:+.3f} us")


def check_alone() -> None:
    """The check's own cost, free of the ops' noise: a function holding only the check
    against an empty one, both in dispatch's namespace (1M calls, interleaved)."""
    exec("def _with_check(a, b):\n"
         "    if PROFILE is not None and PROFILE.enter():\n"
         "        return None\n"
         "    return a\n"
         "def _without_check(a, b):\n"
         "    return a\n", D.__dict__)
    w, wo = D.__dict__["_with_check"], D.__dict__["_without_check"]
    a, b = paired(lambda: w(1, 2), lambda: wo(1, 2))
    print(f"the check alone: {(a - b) * 1e9:+.1f} ns per call "
          f"({a * 1e9:.1f} ns against {b * 1e9:.1f} ns)")


def with_and_without(fn, kw: dict, batch: int, batches: int) -> tuple:
    """Best seconds per call of `fn` outside a profile and inside one (started before each
    timed batch and stopped after it), interleaved; and events recorded per call."""
    prof = profile(**kw)
    t_off = t_on = float("inf")
    events = 0
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        t1 = time.perf_counter_ns()
        prof.start()
        t2 = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        t3 = time.perf_counter_ns()
        prof.stop()
        events = len(prof._raw) / batch
        t_off, t_on = min(t_off, t1 - t0), min(t_on, t3 - t2)
    return t_off / batch / 1e9, t_on / batch / 1e9, events


def per_op() -> None:
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    for kw in ({}, {"record_shapes": True}, {"with_stack": True}):
        off, on, n = with_and_without(lambda: x + y, kw, 200, 500)
        opts = ", ".join(f"{k}=True" for k in kw)
        print(f"x + y 10x10: {off * 1e6:.3f} us, inside profile({opts}) {on * 1e6:.3f} us "
              f"(+{(on - off) * 1e6:.2f} us per event)")


def training_step() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled = torch.compile(step)
    for _ in range(3):
        step(x, y)
        compiled(x, y)
    assert compiled.kernels(), "the compiled step runs eagerly"
    for label, fn in (("eager", step), ("compiled", compiled)):
        off, on, n = with_and_without(lambda: fn(x, y), {}, 5, 200)
        print(f"MLP training step, {label}: {off * 1e6:.1f} us, profiled {on * 1e6:.1f} us "
              f"({on / off:.2f}x, {n:.0f} events per step)")


if __name__ == "__main__":
    flag_check()
    check_alone()
    per_op()
    training_step()

"""What the profiler costs: nothing measurable when no profile records, a few microseconds per
event when one does.

    python benchmarks/bench_profiler.py

1. The flag check: `dispatch.binary/unary/apply` as shipped against copies compiled from
   their own source with the two `PROFILE` lines removed, in one process, interleaved, best of
   many rounds (the difference is the check; target: under 0.05 us).
2. `x + y` on 10x10 float32 through the operator, with no profile and inside one (default
   options, then record_shapes, then with_stack).
3. One eager training step of a small MLP (forward, backward, SGD step), without and with a
   profile, and a compiled one.
"""
from __future__ import annotations

import inspect
import sys
import textwrap
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402
from fusetorch.profiler import profile  # noqa: E402
from fusetorch.tracer import dispatch as D  # noqa: E402


def best(fn, number: int, rounds: int = 5) -> float:
    """Best seconds per call over `rounds` repeats."""
    return min(timeit.repeat(fn, number=number, repeat=rounds)) / number


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
        t_new, t_old = [], []
        for _ in range(30):  # interleaved: machine load drifts over both alike
            t_new.append(best(lambda: fn(*args), 20000, 3))
            t_old.append(best(lambda: plain(*args), 20000, 3))
        a, b = min(t_new) * 1e6, min(t_old) * 1e6
        print(f"{label:22s} with check {a:7.3f} us   without {b:7.3f} us   "
              f"difference {a - b:+.3f} us")


def per_op() -> None:
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    off = best(lambda: x + y, 50000)
    print(f"x + y 10x10, no profile: {off * 1e6:.3f} us")
    for kw in ({}, {"record_shapes": True}, {"with_stack": True}):
        with profile(**kw):
            on = best(lambda: x + y, 20000)
        opts = ", ".join(f"{k}=True" for k in kw)
        print(f"x + y 10x10, profile({opts}): {on * 1e6:.3f} us "
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
    off = best(lambda: step(x, y), 200)
    with profile() as prof:
        on = best(lambda: step(x, y), 200)
    n = len(prof.events()) / (200 * 5)
    print(f"MLP step, eager: no profile {off * 1e6:8.1f} us, profiled {on * 1e6:8.1f} us "
          f"({on / off:.2f}x, {n:.0f} events per step)")
    off = best(lambda: compiled(x, y), 200)
    with profile() as prof:
        on = best(lambda: compiled(x, y), 200)
    n = len(prof.events()) / (200 * 5)
    print(f"MLP step, compiled: no profile {off * 1e6:8.1f} us, profiled {on * 1e6:8.1f} us "
          f"({on / off:.2f}x, {n:.0f} events per step)")


if __name__ == "__main__":
    flag_check()
    per_op()
    training_step()

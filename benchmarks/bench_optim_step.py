"""Eager optimizer steps (issue 13, item 1): the optimizers' Python loops against the fused step
(fusetorch/optim/_fused.py: each optimizer's update rule traced and compiled into one batched
kernel, one call per parameter group and dtype).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/bench_optim_step.py

Parameters of LeNet (bench_training.py, 10 tensors, 62k elements), of the two-layer net
1000x100x10 (4 tensors, 101k elements) and ten tensors of 2^20 elements, float32, with fixed
gradients; each `opt.step()` is timed with the fused path off and on (`POLICY.fused_optimizers`, what
FUSETORCH_EAGER_COMPILE=0 turns off), taking turns in one process, best CPU time
(time.process_time) of many rounds. Then the resident memory of 2000 fused Adam steps over
LeNet's parameters (grads replaced every step, as backward does).
"""
from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fusetorch as torch  # noqa: E402
from fusetorch import nn, optim  # noqa: E402
from fusetorch._policy import POLICY  # noqa: E402
from bench_training import LeNet  # noqa: E402

OPTIMIZERS = {
    "SGD(momentum=0.9)": lambda ps: optim.SGD(ps, lr=1e-3, momentum=0.9),
    "Adam": lambda ps: optim.Adam(ps, lr=1e-3),
    "AdamW(amsgrad)": lambda ps: optim.AdamW(ps, lr=1e-3, amsgrad=True),
    "Adadelta": lambda ps: optim.Adadelta(ps, lr=1.0),  # (PyTorch's MNIST example)
    "Adamax": lambda ps: optim.Adamax(ps, lr=2e-3),
    "RAdam": lambda ps: optim.RAdam(ps, lr=1e-3),
    "NAdam": lambda ps: optim.NAdam(ps, lr=1e-3),
    "Rprop": lambda ps: optim.Rprop(ps, lr=1e-3),
}


def workloads() -> dict:
    torch.manual_seed(0)
    two = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10))
    return {"LeNet (10 tensors)": list(LeNet().parameters()),
            "two-layer 1000x100x10 (4)": list(two.parameters()),
            "10 x 2^20": [nn.Parameter(torch.randn(1 << 20)) for _ in range(10)]}


def best_step(opt, fused: bool, number: int) -> float:
    POLICY.fused_optimizers = fused
    t = time.process_time()
    for _ in range(number):
        opt.step()
    return (time.process_time() - t) / number


def measure(params: list, make, number: int, rounds: int) -> tuple[float, float]:
    for p in params:
        p.grad = torch.randn(p.shape) * 0.01
    opt = make(params)
    for fused in (False, True, True):  # state created, kernel built, both warm
        best_step(opt, fused, 1)
    loop = fused = float("inf")
    for _ in range(rounds):
        loop = min(loop, best_step(opt, False, number))
        fused = min(fused, best_step(opt, True, number))
    return loop, fused


def rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def memory(steps: int = 2000) -> None:
    POLICY.fused_optimizers = True
    params = list(LeNet().parameters())
    opt = optim.Adam(params, lr=1e-3)
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.9999)
    grads = [torch.randn(p.shape) * 0.01 for p in params]
    marks = []
    for i in range(steps + 1):
        for p, g in zip(params, grads):
            p.grad = g.clone()
        opt.step()
        sched.step()
        if i in (100, steps // 2, steps):
            marks.append((i, rss_kb()))
    print("RSS over fused Adam steps (LeNet params): " +
          ", ".join(f"step {i}: {kb} KiB" for i, kb in marks))


def main() -> None:
    print(f"{'workload':28s} {'optimizer':20s} {'loop':>10s} {'fused':>10s} {'ratio':>7s}")
    for name, params in workloads().items():
        big = params[0].numel() >= 1 << 20
        for oname, make in OPTIMIZERS.items():
            loop, fused = measure(params, make, number=3 if big else 50,
                                  rounds=5 if big else 15)
            print(f"{name:28s} {oname:20s} {loop * 1e6:8.0f}us {fused * 1e6:8.0f}us "
                  f"{loop / fused:6.1f}x")
    memory()


if __name__ == "__main__":
    main()

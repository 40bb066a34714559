"""Eager forward hot spots (issue 13, item 2): eager kernels and composite replays off and on.

    python benchmarks/bench_eager_forward.py

"off" is numpy and plain composites, "on" eager kernels plus composite replays: the switch is
`fusetorch._policy.POLICY.eager_kernels` (what FUSETORCH_EAGER_COMPILE=0 turns off at import, which
would also turn off the compiled eager backward; here the backward is compiled in both). Each
variant runs in its own process, the two taking turns three times (flipping the switch inside
one process measures the other variant's leftovers: buffers, allocator state); rows are
medians of the processes' best CPU times (time.process_time):
- the LeNet training step of bench_training.py (batch 64), its forward, and each layer of the
  forward inside a training loop;
then, in this process, large composites (softmax, log_softmax, cross_entropy, layer_norm,
batch_norm's training part) with autograd recording, replayed against the same function
unwrapped. Run with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 on a loaded machine.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fusetorch as torch  # noqa: E402
import fusetorch.nn.functional as F  # noqa: E402
from fusetorch._policy import POLICY  # noqa: E402


def cpu_best(fn, number: int) -> float:
    best = float("inf")
    for _ in range(number):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def lenet_child(on: bool) -> dict:
    """One variant's LeNet numbers, in seconds: step, forward, each layer (min over steps)."""
    import bench_training
    from bench_training import LeNet
    POLICY.eager_kernels = on
    torch.manual_seed(0)
    model = LeNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 1, 32, 32), torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):  # builds, captures
        step()
    res = {"step": cpu_best(step, 30),
           "forward + loss": cpu_best(lambda: F.cross_entropy(model(x), y), 30)}
    times: dict = {}

    def timed(key, fn):
        def run(*a, **k):
            t = time.process_time()
            r = fn(*a, **k)
            times.setdefault(key(a), []).append(time.process_time() - t)
            return r
        return run

    for name in ("conv1", "conv2", "fc1", "fc2", "fc3"):
        m = getattr(model, name)
        m.forward = timed(lambda a, n=name: n, m.forward)
    bench_training.F.max_pool2d = timed(lambda a: f"max_pool2d {list(a[0].shape)}",
                                        F.max_pool2d)
    bench_training.F.relu = timed(lambda a: f"relu {list(a[0].shape)}", F.relu)
    ce = timed(lambda a: "cross_entropy", F.cross_entropy)
    for _ in range(30):
        opt.zero_grad()
        loss = ce(model(x), y)
        loss.backward()
        opt.step()
    res.update({k: min(v) for k, v in times.items()})
    return res


def lenet() -> None:
    runs = {False: [], True: []}
    for _ in range(3):
        for on in (False, True):
            out = subprocess.run([sys.executable, __file__, "--child", "1" if on else "0"],
                                 check=True, capture_output=True, text=True,
                                 env=dict(os.environ)).stdout
            runs[on].append(json.loads(out.splitlines()[-1]))
    print("LeNet, batch 64 (CPU ms; off: numpy and plain composites, on: eager kernels and "
          "composite replays)")
    for k in runs[False][0]:
        off = statistics.median(r[k] for r in runs[False])
        on = statistics.median(r[k] for r in runs[True])
        print(f"  {k:28s} off {off * 1e3:7.3f}   on {on * 1e3:7.3f}   ({off / on:.2f}x)")


def interleaved(variants: dict, number: int = 5, rounds: int = 5) -> dict:
    """{name: median over rounds of the best of `number` calls}, the variants taking turns."""
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for k, fn in variants.items():
            times[k].append(cpu_best(fn, number))
    return {k: statistics.median(v) for k, v in times.items()}


def composites() -> None:
    from fusetorch.nn._functional import normalization
    torch.manual_seed(0)
    x = torch.randn(256, 10000, requires_grad=True)
    y = torch.randint(0, 10000, (256,))
    h = torch.randn(512, 1024, requires_grad=True)
    w, b = torch.randn(1024, requires_grad=True), torch.randn(1024, requires_grad=True)
    z = torch.randn(32, 64, 32, 32, requires_grad=True)
    g, c = torch.randn(64, requires_grad=True), torch.randn(64, requires_grad=True)
    cases = [("softmax 256x10000", F.softmax, (x, 1)),
             ("log_softmax 256x10000", F.log_softmax, (x, 1)),
             ("cross_entropy 256x10000", F.cross_entropy, (x, y)),
             ("layer_norm 512x1024", F.layer_norm, (h, (1024,), w, b)),
             ("batch_norm train 32x64x32x32", normalization._batch_norm_train, (z, g, c, 1e-5))]
    POLICY.eager_kernels = True
    for name, fn, args in cases:
        for _ in range(3):
            fn(*args)
        res = interleaved({"plain": lambda: fn.__wrapped__(*args), "replay": lambda: fn(*args)})
        print(f"{name:30s} plain {res['plain'] * 1e3:6.2f} ms   replayed "
              f"{res['replay'] * 1e3:6.2f} ms   ({res['plain'] / res['replay']:.2f}x)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(lenet_child(sys.argv[2] == "1")))
    else:
        lenet()
        composites()

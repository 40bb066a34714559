"""CUDA kernels rendered from the compiler's loop kernels against cupy, in one process (GPU only).

    python benchmarks/bench_cuda_kernels.py

The loop kernels are the compiler's (trace, passes, fusion, lowering on the CPU); the CUDA
source comes from `codegen/render_cuda.py` and runs through `runtime/cudabuild.py` on cupy
arrays, so this measures the generated CUDA before `compile` itself dispatches to it.
- `tanh(exp(x*0.5+1).clamp(max=10) * x - 0.25)` over 2**26 float32: the fused kernel against a
  device-to-device copy of the array (the bandwidth floor; target within 1.25x) and against
  cupy's eager chain.
- `((a - b) ** 2).sum()` over 2**26 float32 (one whole-tensor reduction) and the same summed per
  row of [2**16, 1024] (one block per row), against cupy.
Times come from CUDA events around 20 launches, best of 5.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402
from fusetorch.ir import passes  # noqa: E402
from fusetorch.runtime import kernel_plan  # noqa: E402
from fusetorch.runtime.layouts import layouts_of  # noqa: E402
from fusetorch.tracer.trace import trace  # noqa: E402

N = 1 << 26


def kernels_of(fn, *shapes) -> list:
    """The compiler's loop kernels for fn on contiguous float32 inputs of these shapes, as a
    CUDA program would have them (traced and planned on the CPU at full size: shapes are
    constants of the kernels; nothing is built or run)."""
    ts = [torch.zeros(*s) for s in shapes]
    with trace(*ts) as rec:
        out = fn(*ts)
    graph = passes.optimize(rec.graph(out))
    return kernel_plan.make(graph, layouts_of(graph.inputs, [t._data for t in ts]),
                            cpu=False).kernels


def gpu_time(cp, fn, number: int = 20, repeat: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, end) / 1e3 / number)
    return best


def main() -> None:
    if not torch.cuda.is_available():
        print("no CUDA device (cupy and an NVIDIA GPU are needed): nothing to measure")
        return
    import cupy as cp
    from fusetorch.runtime.cudabuild import CudaKernels

    print(f"device: {torch.cuda.get_device_name()}")
    x = cp.random.standard_normal(N, dtype=cp.float32)
    (k,) = kernels_of(lambda t: torch.tanh(torch.exp(t * 0.5 + 1).clamp(max=10) * t - 0.25), (N,))
    ks, out = CudaKernels([k]), cp.empty_like(x)
    t_k = gpu_time(cp, lambda: ks.launch(0, [x, out]))
    want = cp.tanh(cp.minimum(cp.exp(x * 0.5 + 1), 10) * x - 0.25)
    assert cp.allclose(out, want, rtol=1e-5, atol=1e-6)
    copy = cp.empty_like(x)
    t_copy = gpu_time(cp, lambda: cp.copyto(copy, x))
    t_eager = gpu_time(cp, lambda: cp.tanh(cp.minimum(cp.exp(x * 0.5 + 1), 10) * x - 0.25))
    gbs = 2 * x.nbytes / t_k / 1e9
    print(f"6-op chain, 2**26 f32: kernel {t_k * 1e3:.3f} ms ({gbs:.0f} GB/s)  d2d copy "
          f"{t_copy * 1e3:.3f} ms ({t_k / t_copy:.2f}x a copy; target <= 1.25x)  cupy eager "
          f"{t_eager * 1e3:.3f} ms ({t_eager / t_k:.1f}x slower)")

    a, b = x, cp.random.standard_normal(N, dtype=cp.float32)
    (k,) = kernels_of(lambda p, q: ((p - q) ** 2).sum(), (N,), (N,))
    ks, s = CudaKernels([k]), cp.empty((), cp.float32)
    t_k = gpu_time(cp, lambda: ks.launch(0, [a, b, s]))
    ref = float(cp.sum((a.astype(cp.float64) - b) ** 2))
    assert abs(float(s) - ref) <= 1e-5 * abs(ref)
    t_cp = gpu_time(cp, lambda: ((a - b) ** 2).sum())
    print(f"sum of squared differences, 2**26 f32: kernel {t_k * 1e3:.3f} ms  cupy "
          f"{t_cp * 1e3:.3f} ms ({t_cp / t_k:.1f}x)")

    rows = (1 << 16, 1024)
    a2, b2 = a.reshape(rows), b.reshape(rows)
    (k,) = kernels_of(lambda p, q: ((p - q) ** 2).sum(-1), rows, rows)
    ks, s2 = CudaKernels([k]), cp.empty(rows[0], cp.float32)
    t_k = gpu_time(cp, lambda: ks.launch(0, [a2, b2, s2]))
    ref2 = cp.sum((a2.astype(cp.float64) - b2) ** 2, axis=-1)
    assert cp.allclose(s2, ref2, rtol=1e-5)
    t_cp = gpu_time(cp, lambda: ((a2 - b2) ** 2).sum(-1))
    print(f"row sums of squared differences, [2**16, 1024] f32: kernel {t_k * 1e3:.3f} ms  "
          f"cupy {t_cp * 1e3:.3f} ms ({t_cp / t_k:.1f}x)")


if __name__ == "__main__":
    main()

"""Issue 27's new ops at 2^20 elements: eager fusetorch and compiled fusetorch against numpy or
scipy doing the same thing, in the same run.

    python benchmarks/bench_new_ops.py [--numel 1048576] [--repeat 7] [--all] [--only a,b]

Every candidate's eager time is measured first; the ten slowest (or all, with --all) are then
timed eager / compiled / reference in interleaved rounds (so machine load drifts onto all
three), and the best time of each is reported with the ratios to the reference. float32
inputs; the references compute in float32 where numpy/scipy can, as fusetorch does.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scipy.linalg as sl  # noqa: E402
import scipy.special as sp  # noqa: E402

import fusetorch as torch  # noqa: E402


def _candidates(n: int):
    """name -> (fusetorch fn of tensors, numpy/scipy fn of arrays, input arrays)."""
    r = np.random.default_rng(0)
    u = r.uniform(-3, 3, n).astype(np.float32)
    p = r.uniform(0.01, 0.99, n).astype(np.float32)
    q = r.uniform(0.5, 4, n).astype(np.float32)
    k = r.random(n) > 0.3
    i = r.integers(-1000, 1000, n)
    j = r.integers(1, 1000, n)
    m = u.reshape(1024, -1)
    km = k.reshape(1024, -1)
    S, MK = torch.special, torch.masked
    # the slowest of the factorization family (issue 27) at a mid size: 64 least-squares
    # problems of 128x128 by 4 columns (2^20 elements of A), scipy's gelsy per matrix
    ls_a = (r.standard_normal((64, 128, 128)) + 12 * np.eye(128)).astype(np.float32)
    ls_b = r.standard_normal((64, 128, 4)).astype(np.float32)

    def np_masked_softmax(a, keep):
        e = np.where(keep, np.exp(a - np.where(keep, a, -np.inf).max(1, keepdims=True)), 0)
        return e / e.sum(1, keepdims=True)

    def np_masked_var(a, keep):
        return np.ma.masked_array(a, ~keep).var(1, ddof=1).filled(np.nan)

    return {
        "erfc": (torch.erfc, sp.erfc, [u]),
        "i0": (torch.i0, sp.i0, [u]),
        "special.i1e": (S.i1e, sp.i1e, [u]),
        "special.erfcx": (S.erfcx, sp.erfcx, [u]),
        "special.log_ndtr": (S.log_ndtr, sp.log_ndtr, [u]),
        "special.ndtri": (S.ndtri, sp.ndtri, [p]),
        "special.bessel_j0": (S.bessel_j0, sp.j0, [u]),
        "special.zeta": (S.zeta, sp.zeta, [q + 1.5, q]),
        "special.gammainc": (S.gammainc, sp.gammainc, [q, q]),
        "special.entr": (S.entr, sp.entr, [p]),
        "logit": (torch.logit, sp.logit, [p]),
        "sinc": (torch.sinc, np.sinc, [u]),
        "logaddexp2": (torch.logaddexp2, np.logaddexp2, [u, u[::-1].copy()]),
        "copysign": (torch.copysign, np.copysign, [u, u[::-1].copy()]),
        "fmax": (torch.fmax, np.fmax, [u, u[::-1].copy()]),
        "signbit": (torch.signbit, np.signbit, [u]),
        "nextafter": (torch.nextafter, np.nextafter, [u, q]),
        "gcd": (torch.gcd, np.gcd, [i, j]),
        "isin": (lambda a: torch.isin(a, torch.arange(0, 1000, 7)),
                 lambda a: np.isin(a, np.arange(0, 1000, 7)), [i]),
        "diff": (lambda a: torch.diff(a, n=2), lambda a: np.diff(a, n=2), [u]),
        "gradient": (lambda a: torch.gradient(a)[0], lambda a: np.gradient(a), [u]),
        "trapezoid": (torch.trapezoid, np.trapezoid, [m]),
        "cumulative_trapezoid": (lambda a: torch.cumulative_trapezoid(a),
                                 lambda a: np.cumsum((a[:, 1:] + a[:, :-1]) / 2, 1), [m]),
        "renorm": (lambda a: torch.renorm(a, 2, 0, 1.0),
                   lambda a: a * np.minimum(1.0, 1.0 / (np.linalg.norm(a, axis=1, keepdims=True)
                                                        + 1e-7)), [m]),
        "masked.softmax": (lambda a, b: MK.softmax(a, 1, mask=b), np_masked_softmax, [m, km]),
        "masked.var": (lambda a, b: MK.var(a, 1, mask=b), np_masked_var, [m, km]),
        "var_mean": (lambda a: torch.var_mean(a, 1), lambda a: (a.var(1, ddof=1), a.mean(1)),
                     [m]),
        "linalg.lstsq": (lambda a, b: torch.linalg.lstsq(a, b).solution,
                         lambda a, b: [sl.lstsq(x, y, lapack_driver="gelsy", check_finite=False)
                                       for x, y in zip(a, b)], [ls_a, ls_b]),
    }


def _newops_candidates(n: int):
    """The newops branch's ops (histograms, strided writes, aten's native norms, 3-d grid
    sampling, the legacy LRN) at n elements, against numpy / scipy doing the same."""
    import scipy.ndimage as nd
    r = np.random.default_rng(1)
    u = r.uniform(-3, 3, n).astype(np.float32)
    img = u.reshape(16, 64, -1, 32)
    sq = u.reshape(1024, -1)
    vol = u[:n // 8].reshape(1, 4, 32, 32, -1)
    grid = r.uniform(-1, 1, (1, 64, 64, n // (4 * 64 * 64), 3)).astype(np.float32)
    half = n // 2

    def np_nonzero_static(a):
        out = np.full((half, 1), -1)
        w = np.argwhere(a > 0)[:half]
        out[:len(w)] = w
        return out

    def np_as_strided_scatter(a, b):
        out = a.copy()
        out[::2] = b
        return out

    def np_batch_norm(x):
        m, v = x.mean((0, 2, 3)), x.var((0, 2, 3))
        inv = 1 / np.sqrt(v + 1e-5)
        return (x - m[:, None, None]) * inv[:, None, None], m, inv

    def np_layer_norm(x):
        m = x.mean(1, keepdims=True)
        inv = 1 / np.sqrt(x.var(1, keepdims=True) + 1e-5)
        return (x - m) * inv, m, inv

    def np_group_norm(x):
        g = x.reshape(16, 8, -1)
        m = g.mean(2, keepdims=True)
        inv = 1 / np.sqrt(g.var(2, keepdims=True) + 1e-5)
        return ((g - m) * inv).reshape(x.shape), m, inv

    def scipy_grid_sample_3d(v, g):  # trilinear, zeros outside, align_corners=True
        size = np.array(v.shape[2:][::-1], np.float32)
        pts = ((g[0] + 1) / 2 * (size - 1))[..., ::-1].reshape(-1, 3).T
        return np.stack([nd.map_coordinates(v[0, c], pts, order=1, mode="constant")
                         for c in range(v.shape[1])])

    def np_lrn(x, size=5, alpha=1e-4, beta=0.75, k=1.0):  # the legacy windows, by cumsums
        sq = x * x
        c = x.shape[1]
        p = int((size - 1) / 2 + 1)
        cs = np.concatenate([np.zeros_like(sq[:, :1]), np.cumsum(sq, 1)], 1)
        hi = np.minimum(np.arange(c) + p, c)
        lo = np.maximum(np.arange(c) - p + 1, 1)
        scale = cs[:, hi] - cs[:, lo] + sq[:, :1]
        return (k + alpha / size * scale) ** -beta * x

    seg_lengths = np.full(1024, n // 1024)

    def np_segment_max(a):
        return np.maximum.reduceat(a, np.concatenate([[0], np.cumsum(seg_lengths)[:-1]]))

    lrn = torch.nn.CrossMapLRN2d(5)
    return {
        "histogram": (lambda a: torch.histogram(a, 100, range=(-3.0, 3.0)),
                      lambda a: np.histogram(a, 100, range=(-3.0, 3.0)), [u]),
        "histogramdd": (lambda a: torch.histogramdd(a, [32, 32], range=[-3.0, 3.0] * 2),
                        lambda a: np.histogramdd(a, [32, 32], range=[(-3.0, 3.0)] * 2),
                        [u.reshape(-1, 2)]),
        "nonzero_static": (lambda a: torch.nonzero_static(a > 0, size=half), np_nonzero_static,
                           [u]),
        "as_strided_scatter": (lambda a, b: torch.as_strided_scatter(a, b, (512, 1024),
                                                                     (2048, 1)),
                               np_as_strided_scatter, [sq, sq[::2].copy()]),
        "native_batch_norm": (lambda x: torch.native_batch_norm(x, None, None, None, None, True,
                                                                0.1, 1e-5), np_batch_norm, [img]),
        "native_layer_norm": (lambda x: torch.native_layer_norm(x, [1024], None, None, 1e-5),
                              np_layer_norm, [sq]),
        "native_group_norm": (lambda x: torch.native_group_norm(x, None, None, 16, 64, 1024, 8,
                                                                1e-5), np_group_norm, [img]),
        "grid_sampler_3d": (lambda v, g: torch.grid_sampler_3d(v, g, 0, 0, True),
                            scipy_grid_sample_3d, [vol, grid]),
        "CrossMapLRN2d": (lrn, np_lrn, [img]),
        "segment_reduce": (lambda a: torch.segment_reduce(a, "max", lengths=torch.from_numpy(
            seg_lengths)), np_segment_max, [u]),
    }


def _best(fn, args, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main(numel: int, repeat: int, everything: bool, only: str | None = None) -> None:
    warnings.simplefilter("ignore")
    cands = {**_candidates(numel), **_newops_candidates(numel)}
    if only:
        cands = {k: cands[k] for k in only.split(",")}
    tensors = {name: [torch.from_numpy(a) for a in arrays] for name, (_, _, arrays) in
               cands.items()}
    eager = {}
    for name, (ours, _, _) in cands.items():
        ours(*tensors[name])
        eager[name] = _best(ours, tensors[name], 3)
    chosen = sorted(eager, key=eager.get, reverse=True)
    chosen = chosen if everything else chosen[:10]
    print(f"{numel:,} elements, float32 (gcd/isin: int64), best of {repeat} x 3 interleaved rounds")
    print(f"{'op':22} {'eager ms':>9} {'compiled':>9} {'numpy/scipy':>11} {'eager/ref':>10} "
          f"{'comp/ref':>9}")
    for name in chosen:
        ours, ref, arrays = cands[name]
        ts = tensors[name]
        compiled = torch.compile(ours)
        compiled(*ts)
        compiled(*ts)
        t = {"eager": [], "compiled": [], "ref": []}
        for _ in range(3):
            t["eager"].append(_best(ours, ts, repeat))
            t["compiled"].append(_best(compiled, ts, repeat))
            t["ref"].append(_best(ref, arrays, repeat))
        e, c, f = (min(t[k]) for k in ("eager", "compiled", "ref"))
        print(f"{name:22} {e * 1e3:9.2f} {c * 1e3:9.2f} {f * 1e3:11.2f} {e / f:10.2f} "
              f"{c / f:9.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--numel", type=int, default=1 << 20)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--only", help="comma-separated op names: time just these")
    a = ap.parse_args()
    main(a.numel, a.repeat, a.all, a.only)

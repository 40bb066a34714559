"""Developer tool, NOT a test: runs PyTorch's own ModuleInfo samples against fusetorch.

This script imports torch (the project never does otherwise) and is run by hand:

    PYTHONPATH=<fusetorch checkout> /tmp/tv/bin/python tools/torch_moduleinfo_check.py \
        [--only Linear,BatchNorm1d] [--json out.json] [--max-samples N] [--dtypes float16]

For each entry of `torch.testing._internal.common_modules.module_db` and each of its
ModuleInputs it builds the torch module and the fusetorch module with the same constructor
arguments, copies the torch state_dict into fusetorch, runs forward on the same inputs
(float32 and float64, or --dtypes; train and eval where the entry says they differ),
compares outputs and the state after forward, then backward with a random cotangent
(float64) and compares input and parameter gradients. Error inputs compare the exception
type. repr, extra_repr and state_dict keys/shapes of the fresh modules are compared too.
Modules whose torch output changes with the seed (dropout) are compared by shape and the
share of zeros only.

Per entry the worst finding wins: WRONG VALUE > WRONG GRAD > RAISES > WRONG ERROR >
WRONG REPR/STATE > TORCH GRAD DIFFERS (fusetorch matches central differences where torch
does not) > OK; MISSING (no fusetorch class) and OUT OF SCOPE (fusetorch raises
its OutOfScopeError) are listed apart. A summary is printed and JSON written.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib
import json
import signal
import sys
import traceback
import warnings
from typing import Any

import numpy as np
import torch
from torch.testing._internal import common_modules as cm

import fusetorch
import fusetorch.nn as fnn
from fusetorch._out_of_scope import OutOfScopeError

ORDER = ["WRONG VALUE", "WRONG GRAD", "RAISES", "WRONG ERROR", "WRONG REPR/STATE",
         "TORCH GRAD DIFFERS", "OK"]
SAMPLE_SECONDS = 60
HALF_TOL = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}  # torch.testing's
DTYPES = [torch.float32, torch.float64]
STATS = {"outputs compared": 0, "gradients compared": 0, "error inputs matched": 0}


# --- recording constructor arguments, so module arguments (TransformerEncoder's layer)
# can be rebuilt in fusetorch with the same arguments
def _recording_new(cls, *args, **kwargs):
    obj = object.__new__(cls)
    object.__setattr__(obj, "_ft_ctor", (args, kwargs))
    return obj


torch.nn.Module.__new__ = _recording_new


class Unconvertible(Exception):
    pass


def counterpart(obj: Any) -> Any:
    """fusetorch's object at torch's module path and name, or None."""
    mod = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name is None:
        return None
    candidates = []
    if mod.startswith("torch"):
        candidates.append("fusetorch" + mod[len("torch"):])
    candidates += ["fusetorch.nn.functional", "fusetorch.nn", "fusetorch"]
    for path in candidates:
        try:
            m = importlib.import_module(path)
        except Exception:
            continue
        found = getattr(m, name, None)
        if found is not None:
            return found
    return None


def fdtype(d: torch.dtype):
    return getattr(fusetorch, str(d).split(".")[1])


def to_np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().resolve_conj().numpy()


def convert(obj: Any) -> Any:
    """torch argument -> fusetorch argument."""
    if isinstance(obj, torch.nn.Parameter):
        return fnn.Parameter(fusetorch.tensor(to_np(obj).copy()), requires_grad=obj.requires_grad)
    if isinstance(obj, torch.Tensor):
        t = fusetorch.from_numpy(to_np(obj).copy())
        t.requires_grad_(obj.requires_grad)
        return t
    if isinstance(obj, torch.dtype):
        return fdtype(obj)
    if isinstance(obj, torch.device):
        return str(obj)
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[convert(x) for x in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(convert(x) for x in obj)
    if isinstance(obj, dict):
        return {k: convert(v) for k, v in obj.items()}
    if isinstance(obj, torch.nn.Module):
        args, kwargs = obj._ft_ctor
        cls = counterpart(type(obj))
        if cls is None:
            raise Unconvertible(f"no fusetorch {type(obj).__name__}")
        m = cls(*convert(args), **convert(kwargs))
        m.load_state_dict(convert_state(obj.state_dict()))
        m.train(obj.training)
        return m
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = counterpart(type(obj))
        if cls is None:
            raise Unconvertible(f"no fusetorch {type(obj).__name__}")
        return cls(**{f.name: convert(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                      if f.init})
    if callable(obj) and not isinstance(obj, type) and (
            getattr(obj, "__module__", "") or "").startswith("torch"):
        found = counterpart(obj)
        if found is None:
            raise Unconvertible(f"no fusetorch {obj.__name__}")
        return found
    return obj


def clone(obj: Any) -> Any:
    """A fresh copy of a sample's tensors (deepcopy refuses non-leaf ones); each becomes a
    leaf with the sample's requires_grad."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone().requires_grad_(obj.requires_grad)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[clone(x) for x in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(clone(x) for x in obj)
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    return obj


def convert_state(sd: dict) -> dict:
    return {k: fusetorch.tensor(to_np(v).copy()) for k, v in sd.items()}


def flat(obj: Any) -> list:
    if isinstance(obj, (list, tuple)):
        return [x for o in obj for x in flat(o)]
    if isinstance(obj, dict):
        return [x for o in obj.values() for x in flat(o)]
    if obj is None or isinstance(obj, (int, float, bool)):
        return [obj]
    if hasattr(obj, "data") and hasattr(obj, "batch_sizes"):  # PackedSequence
        return flat(tuple(obj))
    return [obj]


def as_array(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return to_np(x)
    if isinstance(x, fusetorch.Tensor):
        return np.asarray(x.detach().numpy())
    return x


def compare(ref: Any, got: Any, dtype: torch.dtype, what: str, grad: bool = False) -> str | None:
    """None when equal, else a short description of the first difference."""
    rs, gs = flat(ref), flat(got)
    if len(rs) != len(gs):
        return f"{what}: {len(rs)} results, fusetorch {len(gs)}"
    for i, (r, g) in enumerate(zip(rs, gs)):
        r, g = as_array(r), as_array(g)
        if isinstance(r, np.ndarray) != isinstance(g, np.ndarray):
            return f"{what}[{i}]: {type(r).__name__} vs {type(g).__name__}"
        if not isinstance(r, np.ndarray):
            if r != g and not (isinstance(r, float) and np.isnan(r) and np.isnan(g)):
                return f"{what}[{i}]: {r!r} vs {g!r}"
            continue
        if r.shape != g.shape:
            return f"{what}[{i}]: shape {r.shape} vs {g.shape}"
        if r.dtype != g.dtype:
            return f"{what}[{i}]: dtype {r.dtype} vs {g.dtype}"
        if r.dtype.kind in "fc":
            rtol, atol = HALF_TOL.get(dtype) or ((1e-4, 1e-5) if dtype == torch.float32 else
                                                 (1e-6, 1e-8) if grad else (1e-7, 1e-9))
            scale = float(np.nanmax(np.abs(r), initial=1.0)) if np.isfinite(r).any() else 1.0
            ok = np.isclose(g, r, rtol=rtol, atol=atol * max(1.0, scale), equal_nan=True)
        else:
            ok = g == r
        if not ok.all():
            bad = int((~ok).sum())
            diff = (np.nanmax(np.abs(g.astype(np.float64) - r.astype(np.float64)))
                    if r.size else 0)
            return f"{what}[{i}]: {bad}/{r.size} differ (max abs diff {diff:.3g})"
    return None


class SampleTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise SampleTimeout(f"over {SAMPLE_SECONDS} s")


def describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def grads_of(inputs: list, module) -> list:
    gs = [x.grad for x in inputs]
    gs += [p.grad for _, p in module.named_parameters()]
    return gs


def float_outputs_t(out) -> list:
    return [o for o in flat(out) if isinstance(o, torch.Tensor) and o.requires_grad]


def run_sample(info, fcls, sample, dtype, training, findings: list) -> None:
    def note(kind: str, text: str) -> None:
        findings.append({"kind": kind, "dtype": str(dtype), "training": training,
                         "desc": sample.desc, "text": text})

    ca, ck = sample.constructor_input.args, sample.constructor_input.kwargs
    fa_in, fk_in = sample.forward_input.args, sample.forward_input.kwargs
    torch.manual_seed(0)
    try:
        tm = info.module_cls(*ca, **ck).to(dtype)
        tm.train(training)
    except Exception:
        return  # torch refuses the sample itself
    try:
        fm = fcls(*convert(ca), **convert(ck)).to(fdtype(dtype))
        fm.train(training)
    except Unconvertible as e:
        note("OUT OF SCOPE", f"argument: {e}")
        return
    except OutOfScopeError as e:
        note("OUT OF SCOPE", describe(e))
        return
    except Exception as e:
        note("RAISES", "construction: " + describe(e))
        return
    lazy = any(isinstance(p, torch.nn.parameter.UninitializedParameter)
               for p in list(tm.parameters()) + list(tm.buffers()))
    if not lazy:
        fresh_checks(tm, fm, note)
    if lazy:  # materialize both with a forward, then copy
        with torch.no_grad():
            tm(*clone(fa_in), **clone(fk_in))
        with fusetorch.no_grad():
            try:
                fm(*convert(fa_in), **convert(fk_in))
            except Exception as e:
                note("RAISES", "lazy forward: " + describe(e))
                return
    tsd = tm.state_dict()
    try:
        fm.load_state_dict(convert_state(tsd), strict=False)
    except Exception as e:
        note("RAISES", "load_state_dict: " + describe(e))
        return

    t_args, t_kwargs = clone(fa_in), clone(fk_in)
    f_args, f_kwargs = convert(t_args), convert(t_kwargs)
    t_inputs = [x for x in flat((t_args, t_kwargs))
                if isinstance(x, torch.Tensor) and x.requires_grad]
    f_inputs = [x for x in flat((f_args, f_kwargs))
                if isinstance(x, fusetorch.Tensor) and x.requires_grad]
    torch.manual_seed(1)
    try:
        t_out = tm(*t_args, **t_kwargs)
    except Exception:
        return
    # a second torch run with another seed tells whether the output depends on the seed
    random = False
    tm2 = copy.deepcopy(tm)
    tm2.load_state_dict(tsd)
    torch.manual_seed(2)
    try:
        with torch.no_grad():
            t_out2 = tm2(*clone(fa_in), **clone(fk_in))
        random = compare(t_out, t_out2, dtype, "seed") is not None
    except Exception:
        pass
    fusetorch.manual_seed(1)
    try:
        f_out = fm(*f_args, **f_kwargs)
    except OutOfScopeError as e:
        note("OUT OF SCOPE", describe(e))
        return
    except SampleTimeout as e:
        note("RAISES", "forward: " + describe(e))
        return
    except Exception as e:
        note("RAISES", "forward: " + describe(e))
        return
    if random:
        rs, gs = flat(t_out), flat(f_out)
        shapes = [tuple(getattr(x, "shape", ())) for x in rs]
        fshapes = [tuple(getattr(x, "shape", ())) for x in gs]
        if shapes != fshapes:
            note("WRONG VALUE", f"random output shapes {shapes} vs {fshapes}")
            return
        for r, g in zip(rs, gs):  # statistics: the share of zeros (dropped), finiteness
            r, g = as_array(r), as_array(g)
            if isinstance(r, np.ndarray) and r.dtype.kind == "f" and r.size >= 20:
                zr, zg = float((r == 0).mean()), float((g == 0).mean())
                if abs(zr - zg) > 0.2 or np.isfinite(r).all() != np.isfinite(g).all():
                    note("WRONG VALUE", f"random output: zeros {zr:.2f} vs {zg:.2f}")
        return
    d = compare(t_out, f_out, dtype, "output")
    STATS["outputs compared"] += 1
    if d:
        note("WRONG VALUE", d)
        return
    d = compare(list(tm.state_dict().values()),
                [v for v in fm.state_dict().values()], dtype, "state after forward")
    if d:
        note("WRONG VALUE", d)
    if dtype != torch.float64:
        return
    touts = float_outputs_t(t_out)
    if not touts:
        return
    rng = np.random.default_rng(0)
    cots = [rng.standard_normal(tuple(o.shape)) for o in touts]
    fouts = [o for o, t in zip(flat(f_out), flat(t_out))
             if isinstance(t, torch.Tensor) and t.requires_grad]
    try:
        torch.autograd.backward(touts, [torch.from_numpy(c.copy()).to(o.dtype)
                                        for c, o in zip(cots, touts)])
    except Exception:
        return
    try:
        bad = [o for o in fouts if not (isinstance(o, fusetorch.Tensor) and o.requires_grad)]
        if bad:
            note("WRONG GRAD", "an output that requires grad in torch does not in fusetorch")
            return
        fusetorch.autograd.backward(fouts, [fusetorch.tensor(c).to(o.dtype)
                                            for c, o in zip(cots, fouts)])
    except Exception as e:
        note("RAISES", "backward: " + describe(e))
        return
    d = compare(grads_of(t_inputs, tm), grads_of(f_inputs, fm), dtype, "grad", grad=True)
    STATS["gradients compared"] += sum(g is not None for g in grads_of(t_inputs, tm))
    if d:
        names = ["input%d" % i for i in range(len(t_inputs))] + [
            n for n, _ in tm.named_parameters()]
        kind = judge_by_differences(tm, t_args, t_kwargs, t_inputs, f_inputs, cots)
        note(kind, d + f" (grads in order {names})")


def judge_by_differences(tm, t_args, t_kwargs, t_inputs, f_inputs, cots) -> str:
    """Central differences of <output, cotangent> (float64, torch's forward) at up to 8
    elements where the input gradients differ: 'TORCH GRAD DIFFERS' where fusetorch's
    gradient is the derivative and torch's is not (CTC loss's gradient assumes its input
    came from log_softmax), else 'WRONG GRAD'."""
    def objective() -> float:
        with torch.no_grad():
            outs = float_outputs_like(tm(*t_args, **t_kwargs))
        return sum(float((o * torch.from_numpy(c)).sum()) for o, c in zip(outs, cots))

    def float_outputs_like(out):
        return [o for o in flat(out) if isinstance(o, torch.Tensor) and o.is_floating_point()]

    fusetorch_right = torch_right = 0
    for t, f in zip(t_inputs, f_inputs):
        if t.grad is None or f.grad is None:
            continue
        tg, fg = to_np(t.grad), np.asarray(f.grad.detach().numpy())
        bad = np.argwhere(~np.isclose(fg, tg, rtol=1e-6, atol=1e-8))[:8]
        for pos in map(tuple, bad):
            keep = float(t.data[pos])
            with torch.no_grad():
                t.data[pos] = keep + 1e-6
                hi = objective()
                t.data[pos] = keep - 1e-6
                lo = objective()
                t.data[pos] = keep
            fd = (hi - lo) / 2e-6
            gap = abs(tg[pos] - fg[pos])  # which of the two the difference is nearer
            fusetorch_right += abs(fg[pos] - fd) < 0.1 * gap
            torch_right += abs(tg[pos] - fd) < 0.1 * gap
    if fusetorch_right and not torch_right:
        return "TORCH GRAD DIFFERS"
    return "WRONG GRAD"


def fresh_checks(tm, fm, note) -> None:
    if repr(tm) != repr(fm):
        tl, fl = repr(tm).splitlines(), repr(fm).splitlines()
        i = next((i for i, (a, b) in enumerate(zip(tl, fl)) if a != b), min(len(tl), len(fl)))
        note("WRONG REPR/STATE", f"repr line {i}: {tl[i:i + 1]} vs {fl[i:i + 1]}")
    elif tm.extra_repr() != fm.extra_repr():
        note("WRONG REPR/STATE", f"extra_repr {tm.extra_repr()!r} vs {fm.extra_repr()!r}")
    ts = {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    fs = {k: tuple(v.shape) for k, v in fm.state_dict().items()}
    if ts != fs:
        note("WRONG REPR/STATE", f"state_dict {ts} vs {fs}")


def run_errors(info, fcls, findings: list) -> None:
    if info.module_error_inputs_func is None:
        return
    for training in (True, False):
        try:
            errs = info.module_error_inputs_func(info, device="cpu", dtype=torch.float32,
                                                 requires_grad=False, training=training)
        except Exception:
            continue
        for err in errs:
            s = err.module_error_input
            what = err.error_on.name
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = fcls(*convert(s.constructor_input.args),
                             **convert(s.constructor_input.kwargs))
                    if err.error_on == cm.ModuleErrorEnum.FORWARD_ERROR:
                        # as PyTorch's test_errors: a fresh module, in training mode
                        m(*convert(s.forward_input.args), **convert(s.forward_input.kwargs))
            except err.error_type:
                STATS["error inputs matched"] += 1
                continue
            except Exception as e:
                findings.append({"kind": "WRONG ERROR", "desc": s.desc, "training": training,
                                 "text": f"{what}: want {err.error_type.__name__} "
                                         f"({err.error_regex!r}), got {describe(e)}"})
                continue
            findings.append({"kind": "WRONG ERROR", "desc": s.desc, "training": training,
                             "text": f"{what}: want {err.error_type.__name__} "
                                     f"({err.error_regex!r}), fusetorch accepts"})


def check_entry(info, max_samples: int | None) -> dict:
    name = info.module_cls.__name__
    fcls = getattr(fnn, name, None)
    if fcls is None:
        return {"status": "MISSING", "findings": [], "samples": 0}
    findings: list = []
    count = 0
    trainings = (True, False) if info.train_and_eval_differ else (True,)
    for dtype in DTYPES:
        for training in trainings:
            torch.manual_seed(0)
            samples = info.module_inputs_func(info, device="cpu", dtype=dtype,
                                              requires_grad=dtype == torch.float64,
                                              training=training)
            for sample in samples[:max_samples]:
                count += 1
                signal.alarm(SAMPLE_SECONDS)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        run_sample(info, fcls, sample, dtype, training, findings)
                except SampleTimeout as e:
                    findings.append({"kind": "RAISES", "desc": sample.desc,
                                     "text": describe(e)})
                except Exception as e:
                    findings.append({"kind": "RAISES", "desc": sample.desc,
                                     "text": "tool: " + describe(e) + " " +
                                     traceback.format_exc().splitlines()[-3][:200]})
                finally:
                    signal.alarm(0)
    run_errors(info, fcls, findings)
    kinds = {f["kind"] for f in findings}
    status = next((k for k in ORDER if k in kinds), "OK")
    if status == "OK" and "OUT OF SCOPE" in kinds:
        status = "OUT OF SCOPE"
    return {"status": status, "findings": findings, "samples": count}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated class names")
    ap.add_argument("--json", default="moduleinfo_check.json")
    ap.add_argument("--max-samples", type=int, default=None)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--dtypes", default="float32,float64",
                    help="forward dtypes, float16 too (gradients are compared in float64 "
                         "only; bfloat16 samples are not converted yet: numpy has no bfloat16)")
    args = ap.parse_args()
    DTYPES[:] = [getattr(torch, d) for d in args.dtypes.split(",") if d]
    signal.signal(signal.SIGALRM, _alarm)
    only = {s for s in args.only.split(",") if s}
    results = {}
    for info in cm.module_db:
        name = info.module_cls.__name__
        if only and name not in only:
            continue
        r = check_entry(info, args.max_samples)
        results[info.name] = r
        kinds = {}
        for f in r["findings"]:
            kinds.setdefault(f["kind"], f)
        print(f"{info.name:32s} {r['status']:17s} samples={r['samples']:4d}"
              f" findings={len(r['findings'])}", flush=True)
        for f in (r["findings"] if args.verbose else kinds.values()):
            print(f"    {f['kind']}: [{f.get('desc', '')}] {f['text'][:300]}", flush=True)
    counts: dict = {}
    for r in results.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print("\nSUMMARY:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print("       ", ", ".join(f"{k} {v}" for k, v in STATS.items()))
    with open(args.json, "w") as fh:
        json.dump({"summary": counts, "stats": STATS, "entries": results}, fh, indent=1,
                  default=str)
    print("wrote", args.json)


if __name__ == "__main__":
    sys.exit(main())

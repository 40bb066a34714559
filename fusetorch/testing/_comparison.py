"""`assert_close`: PyTorch's comparison rules, default tolerances and messages.

As in `torch/testing/_comparison.py`: the inputs are paired up first (sequences by position,
mappings by key, then each leaf pair as None, bools, Python/numpy numbers, or tensor-likes of
directly related types); a problem pairing them (lengths, keys, types, tolerances) raises at
once with the generated message; then pairs are compared in order and the first mismatch
raises AssertionError (or `msg`). Tensors: shape, then stride (`check_stride`), device and
dtype (`check_*`), then values after moving to a common device and promoted dtype, through
`isclose`. Messages name the greatest absolute and relative differences among the mismatches,
computed in the compared dtype as PyTorch does.
"""
from __future__ import annotations

import cmath
import collections.abc
from typing import Any, Callable

import numpy as np

from ..ir import dtypes as dt
from ..tracer.tensor import Tensor

# (rtol, atol) per dtype; any other dtype compares exactly
_DTYPE_PRECISIONS = {dt.float16: (0.001, 1e-5), dt.bfloat16: (0.016, 1e-5),
                     dt.float32: (1.3e-6, 1e-5), dt.float64: (1e-7, 1e-7)}


def _number_precision(x) -> tuple[float, float]:
    """Python numbers compare with the tolerances of the dtype PyTorch maps them to: float64,
    int64 (exact), complex64."""
    if isinstance(x, complex):
        return (1.3e-6, 1e-5)
    return _DTYPE_PRECISIONS[dt.float64] if isinstance(x, float) else (0.0, 0.0)


class _Mismatch(Exception):
    """A comparison failure before it becomes the user's error (PyTorch's ErrorMeta)."""

    def __init__(self, kind: type, msg: str, id: tuple = ()) -> None:
        super().__init__(msg)
        self.kind, self.msg, self.id = kind, msg, id

    def to_error(self, msg: str | Callable[[str], str] | None = None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              + "".join(str([item]) for item in self.id))
            msg = msg(generated) if callable(msg) else generated
        return self.kind(msg)


class _Unsupported(Exception):
    """This pair kind does not handle these inputs; try the next."""


def default_tolerances(*inputs) -> tuple[float, float]:
    """The loosest (rtol, atol) among the inputs' dtypes (tensors or dtypes)."""
    dtypes = []
    for x in inputs:
        if isinstance(x, Tensor):
            dtypes.append(x.dtype)
        elif isinstance(x, dt.DType):
            dtypes.append(x)
        else:
            raise TypeError(f"Expected a torch.Tensor or a torch.dtype, but got {type(x)} "
                            "instead.")
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(precisions: list, rtol, atol, id: tuple) -> tuple[float, float]:
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                        f"omitted, but got no {'rtol' if rtol is None else 'atol'}.", id)
    if rtol is not None:
        return rtol, atol
    return max(p[0] for p in precisions), max(p[1] for p in precisions)


def _mismatch_msg(identifier: str, extra: str, abs_diff, abs_idx, atol: float, rel_diff,
                  rel_idx, rtol: float) -> str:
    equality = rtol == 0 and atol == 0

    def diff_msg(kind: str, diff, idx, tol) -> str:
        msg = (f"{kind.title()} difference: {diff}" if idx is None
               else f"Greatest {kind} difference: {diff} at index {idx}")
        return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_msg(actual, expected, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


def _tensor_msg(actual: Tensor, expected: Tensor, matches: Tensor, rtol: float,
                atol: float) -> str:
    shape = tuple(matches.shape)

    def unravel(flat: int) -> tuple:
        return tuple(int(i) for i in np.unravel_index(flat, shape))

    n = matches.numel()
    mismatches = n - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    a, e, m = actual.flatten(), expected.flatten(), matches.flatten()
    if not a.dtype.is_floating_point:
        a, e = a.to(dt.int64), e.to(dt.int64)
    abs_diff = (a - e).abs()
    abs_diff[m] = 0  # only mismatches count
    max_abs, abs_at = abs_diff.max(0)
    rel_diff = abs_diff / e.abs()
    rel_diff[m] = 0
    max_rel, rel_at = rel_diff.max(0)
    return _mismatch_msg("Tensor-likes", extra, max_abs.item(), unravel(int(abs_at)), atol,
                         max_rel.item(), unravel(int(rel_at)), rtol)


# ----------------------------------------------------------------------------- pairs


def _none_pair(actual, expected, id: tuple, **_) -> Callable[[], None]:
    if not (actual is None or expected is None):
        raise _Unsupported

    def compare() -> None:
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id)
    return compare


def _bool_pair(actual, expected, id: tuple, **_) -> Callable[[], None]:
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    a, e = bool(actual), bool(expected)

    def compare() -> None:
        if a is not e:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {a} is not {e}", id)
    return compare


def _number_pair(actual, expected, id: tuple, rtol=None, atol=None, equal_nan: bool = False,
                 check_dtype: bool = False, **_) -> Callable[[], None]:
    if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
        raise _Unsupported
    a, e = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    rtol, atol = _tolerances([_number_precision(a), _number_precision(e)], rtol, atol, id)

    def compare() -> None:
        if check_dtype and type(a) is not type(e):
            raise _Mismatch(AssertionError,
                            f"The (d)types do not match: {type(a)} != {type(e)}.", id)
        if a == e or (equal_nan and cmath.isnan(a) and cmath.isnan(e)):
            return
        diff = abs(a - e)
        if cmath.isfinite(diff) and diff <= atol + rtol * abs(e):
            return
        raise _Mismatch(AssertionError, _scalar_msg(a, e, rtol, atol), id)
    return compare


def _as_tensor(x) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from ..tracer.creation import as_tensor
    try:
        return as_tensor(x)
    except Exception:  # noqa: BLE001  (anything as_tensor refuses is not a tensor-like)
        raise _Unsupported from None


def _tensor_pair(actual, expected, id: tuple, allow_subclasses: bool = True, rtol=None,
                 atol=None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, **_) -> Callable[[], None]:
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not allow_subclasses and type(actual) is not type(expected):
        raise _Unsupported
    a, e = _as_tensor(actual), _as_tensor(expected)
    rtol, atol = _tolerances([_DTYPE_PRECISIONS.get(t.dtype, (0.0, 0.0)) for t in (a, e)],
                             rtol, atol, id)

    def fail(attribute: str, got, want):
        raise _Mismatch(AssertionError, f"The values for attribute '{attribute}' do not match: "
                        f"{got} != {want}.", id)

    def compare() -> None:
        nonlocal a, e
        if a.shape != e.shape:
            fail("shape", a.shape, e.shape)
        if check_stride and a.stride() != e.stride():
            fail("stride()", a.stride(), e.stride())
        if check_device and a.device != e.device:
            fail("device", a.device, e.device)
        if check_dtype and a.dtype != e.dtype:
            fail("dtype", a.dtype, e.dtype)
        if a.device != e.device:
            a, e = a.cpu(), e.cpu()
        if a.dtype != e.dtype:
            common = dt.promote_types(a.dtype, e.dtype)
            a, e = a.to(common), e.to(common)
        from ..tracer.autograd import no_grad
        with no_grad():
            a_, e_ = a.detach(), e.detach()
            from ..tracer.functional_math import isclose
            matches = isclose(a_, e_, rtol=rtol, atol=atol, equal_nan=equal_nan)
            if bool(matches.all()):
                return
            if a_.dim() == 0:
                msg = _scalar_msg(a_.item(), e_.item(), rtol, atol)
            else:
                msg = _tensor_msg(a_, e_, matches, rtol, atol)
        raise _Mismatch(AssertionError, msg, id)
    return compare


_PAIRS = (_none_pair, _bool_pair, _number_pair, _tensor_pair)


def _originate(actual, expected, id: tuple, options: dict) -> list:
    seq, mapping = collections.abc.Sequence, collections.abc.Mapping
    if isinstance(actual, seq) and not isinstance(actual, str) and \
            isinstance(expected, seq) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, "The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}", id)
        return [c for i in range(len(actual))
                for c in _originate(actual[i], expected[i], (*id, i), options)]
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        akeys, ekeys = set(actual.keys()), set(expected.keys())
        if akeys != ekeys:
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(ekeys - akeys)}\n"
                            f"Additional keys in the actual mapping: {sorted(akeys - ekeys)}",
                            id)
        try:
            keys = sorted(akeys)
        except Exception:  # noqa: BLE001  (unorderable keys keep set order, as PyTorch)
            keys = list(akeys)
        return [c for k in keys for c in _originate(actual[k], expected[k], (*id, k), options)]
    for pair in _PAIRS:
        try:
            return [pair(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
    raise _Mismatch(TypeError, "No comparison pair was able to handle inputs of type "
                    f"{type(actual)} and {type(expected)}.", id)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise AssertionError unless `actual` and `expected` are close: PyTorch's
    `torch.testing.assert_close`, with its default tolerances per dtype (float32: rtol 1.3e-6,
    atol 1e-5; float64: 1e-7, 1e-7; float16: 1e-3, 1e-5; bfloat16: 1.6e-2, 1e-5; integers and
    bools exactly) and its messages.

        torch.testing.assert_close(model(x), expected)
    """
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                   equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        comparisons = _originate(actual, expected, (), options)
    except _Mismatch as m:
        raise m.to_error() from None
    for compare in comparisons:
        try:
            compare()
        except _Mismatch as m:
            raise m.to_error(msg) from None

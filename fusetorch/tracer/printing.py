"""PyTorch-identical tensor printing, as pure functions over numpy arrays.

``format_tensor(data, dtype_name)`` returns exactly what ``repr(tensor)`` prints
in PyTorch for a dense CPU tensor holding ``data`` with dtype
``torch.<dtype_name>``.  The layout rules (element width, fixed / integer /
scientific float modes, 80-column wrapping, ``...`` summarization, suffix
placement) follow PyTorch's printing behaviour, re-implemented on numpy.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

__all__ = ["format_tensor", "set_printoptions", "get_printoptions"]


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_OPTS = _PrintOptions()

_PROFILES: dict[str, dict[str, Any]] = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}

# numpy dtype each torch dtype is printed from.  bfloat16 (ml_dtypes' type, which
# numpy's formatting does not know) is widened to float32 here, exactly.
_NUMPY_DTYPES: dict[str, Any] = {
    "bool": np.bool_,
    "uint8": np.uint8,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "float16": np.float16,
    "bfloat16": np.float32,
    "float32": np.float32,
    "float64": np.float64,
}
_FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
# PyTorch omits the dtype suffix for the default float dtype and for the dtypes
# Python literals infer (int -> int64, bool -> bool).
_IMPLIED_DTYPES = frozenset({"float32", "int64", "bool"})


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set printing options, with the semantics of ``torch.set_printoptions``.

    ``profile`` ("default", "short", "full") is applied first and the explicit
    arguments override it.  Unknown profiles are ignored, as in PyTorch.
    """
    if profile is not None and profile in _PROFILES:
        for name, value in _PROFILES[profile].items():
            setattr(_OPTS, name, value)
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            setattr(_OPTS, name, value)
    # PyTorch assigns sci_mode unconditionally: any call that omits it goes
    # back to automatic selection.
    _OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Current options, as keyword arguments accepted by ``set_printoptions``."""
    return dataclasses.asdict(_OPTS)


class _Formatter:
    """Chooses one element width and float style for a whole tensor."""

    def __init__(self, values: np.ndarray, is_float: bool) -> None:
        self.is_float = is_float
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if values.size == 0:
            return
        if not is_float:
            # str() length only grows with magnitude, so the extremes decide
            # (for bool, min() is False, the longer word, whenever present).
            extremes = [values.min().item(), values.max().item()]
            self.width = max(len(str(v)) for v in extremes)
            return

        flat = values.reshape(-1).astype(np.float64)
        # Zeros and non-finite values never influence the mode or the width.
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite)
        lo, hi = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if _OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = bool(_OPTS.sci_mode)

        # Formatted length is monotone in magnitude for each sign (rounding is
        # monotone; the exponent's digit count grows away from 1e0), so the
        # smallest and largest magnitude of each sign are the only candidates.
        candidates = []
        for part in (finite[finite > 0], finite[finite < 0]):
            if part.size:
                candidates += [float(part.min()), float(part.max())]
        p = _OPTS.precision
        if self.sci_mode:
            lengths = [len(f"{v:.{p}e}") for v in candidates]
        elif self.int_mode:
            # Integer-valued floats print as "3." - one extra char for the dot.
            lengths = [len(f"{v:.0f}") + 1 for v in candidates]
        else:
            lengths = [len(f"{v:.{p}f}") for v in candidates]
        self.width = max([self.width] + lengths)

    def format(self, value: float | int | bool) -> str:
        if not self.is_float:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{_OPTS.precision}f}"
        return text.rjust(self.width)


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The elements that will actually be shown when summarizing."""
    edge = _OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1 and not edge:
        # PyTorch keeps t[:0] ++ t[-0:], i.e. the whole vector, here.
        return arr
    if not edge:
        return arr[(slice(0, 0),) * arr.ndim]
    index = [
        np.r_[0:edge, n - edge:n] if n > 2 * edge else np.arange(n)
        for n in arr.shape
    ]
    return arr[np.ix_(*index)]


def _body(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    """Nested-bracket text of a non-empty array; `indent` is its start column."""
    if arr.ndim == 0:
        return fmt.format(arr.item())
    edge = _OPTS.edgeitems
    n = arr.shape[0]
    if arr.ndim == 1:
        if summarize and not edge:
            items = ["..."]
        elif summarize and n > 2 * edge:
            items = (
                [fmt.format(v) for v in arr[:edge].tolist()]
                + [" ..."]
                + [fmt.format(v) for v in arr[-edge:].tolist()]
            )
        else:
            items = [fmt.format(v) for v in arr.tolist()]
        # Every element, " ..." included, counts as width + ", ".
        per_line = max(1, math.floor((_OPTS.linewidth - indent) / (fmt.width + 2)))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"

    if summarize and n > 2 * edge:
        rows = list(range(edge)) + [None] + list(range(n - edge, n))
    else:
        rows = list(range(n))
    parts = ["..." if i is None else _body(arr[i], indent + 1, summarize, fmt) for i in rows]
    # Blocks of a k-d tensor are separated by k-1 newlines (blank lines for 3-d+).
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _add_suffixes(text: str, suffixes: Sequence[str], indent: int) -> str:
    out = [text]
    # PyTorch's own measure of the last line (it overcounts by two); kept
    # verbatim because it decides where suffixes wrap.
    last_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_len + len(suffix) + 2 > _OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_len = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_len += len(suffix) + 2
    out.append(")")
    return "".join(out)


def format_tensor(data: np.ndarray, dtype_name: str, suffixes: Sequence[str] = ()) -> str:
    """Return PyTorch's ``repr`` of a CPU tensor holding ``data`` as ``torch.<dtype_name>``.

    ``suffixes`` are pre-formatted extra items such as ``"requires_grad=True"``
    or ``"grad_fn=<AddBackward0>"``; they follow the dtype, except a
    ``"device=..."`` item, which PyTorch prints before the dtype.
    """
    if dtype_name not in _NUMPY_DTYPES:
        raise ValueError(f"format_tensor: unsupported dtype {dtype_name!r}")
    arr = np.asarray(data, dtype=_NUMPY_DTYPES[dtype_name])
    prefix = "tensor("
    indent = len(prefix)

    items = [s for s in suffixes if s.startswith("device=")]
    dtype_suffix = f"dtype=torch.{dtype_name}"
    if arr.size == 0:
        # Mirrors NumPy: the shape is spelled out unless it is plain (0,).
        if arr.ndim != 1:
            items.append(f"size={tuple(arr.shape)}")
        # No elements to infer the dtype from, so only float32 stays implicit.
        if dtype_name != "float32":
            items.append(dtype_suffix)
        body = "[]"
    else:
        if not _OPTS.edgeitems:
            items.append(f"size={tuple(arr.shape)}")
        if dtype_name not in _IMPLIED_DTYPES:
            items.append(dtype_suffix)
        summarize = arr.size > _OPTS.threshold
        shown = _summarized(arr) if summarize else arr
        fmt = _Formatter(shown, dtype_name in _FLOAT_DTYPES)
        body = _body(arr, indent, summarize, fmt)
    items += [s for s in suffixes if not s.startswith("device=")]
    return _add_suffixes(prefix + body, items, indent)

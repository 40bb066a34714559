"""`torch.utils.benchmark`: timing Python statements as PyTorch's tutorials do.

    t = benchmark.Timer(stmt="x @ x", globals={"x": x}, label="mm", description="matmul")
    m = t.blocked_autorange(min_run_time=0.2)   # a Measurement: m.mean, m.median, m.iqr
    benchmark.Compare([m, ...]).print()

`Timer` runs `setup` once and then `stmt` in blocks under `num_threads` threads (as
`torch.set_num_threads`), `timeit`, `blocked_autorange` and `adaptive_autorange` measure it as
PyTorch's do, `Measurement` prints PyTorch's summary and `Compare` its table. Callgrind
counting and the fuzzers are not built (NotImplementedError)."""
from __future__ import annotations

import dataclasses
import math
import re
import statistics
import sys
import textwrap
import timeit as _timeit
from typing import Any, Callable

__all__ = ["Timer", "Measurement", "TaskSpec", "Compare", "Language", "select_unit",
           "trim_sigfig", "unit_to_english"]


class Language:
    PYTHON = 0
    CPP = 1


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and the labels a Compare table groups by."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return (f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n"
                f"{textwrap.indent(self.stmt, '  ')}")

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The title, description and setup, as a Measurement prints them."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{i}\n" if "\n" in i else i for i in sections if i)


def select_unit(t: float) -> tuple[str, float]:
    """The unit PyTorch prints a time of `t` seconds in, and its scale."""
    time_unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s") if t > 0 else "s"
    return time_unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[time_unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    assert n == int(n)
    magnitude = int(math.ceil(math.log10(abs(x)))) if x else 0
    scale = 10 ** (magnitude - n)
    return float(round(x / scale) * scale)


class Measurement:
    """The times of one Timer run: `raw_times` per block of `number_per_run` runs."""

    def __init__(self, number_per_run: int, raw_times: list, task_spec: TaskSpec,
                 metadata: dict | None = None) -> None:
        self.number_per_run, self.raw_times = number_per_run, list(raw_times)
        self.task_spec, self.metadata = task_spec, metadata
        self.times = [t / number_per_run for t in self.raw_times]
        qs = _quantiles(self.times)
        self._p25, self.median, self._p75 = qs
        self.mean = statistics.fmean(self.times)
        self.iqr = self._p75 - self._p25

    def __getattr__(self, name: str) -> Any:
        spec = self.__dict__.get("task_spec")
        if spec is not None and name in {f.name for f in dataclasses.fields(TaskSpec)}:
            return getattr(spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        return self.task_spec.env

    @property
    def significant_figures(self) -> int:
        """How many digits of the median the spread justifies (PyTorch's rule)."""
        n = len(self.times)
        if n < 2 or self.median == 0:
            return 1
        std = statistics.stdev(self.times)
        interval = 1.645 * std / math.sqrt(n) / self.median
        if interval <= 0:
            return 4
        return int(min(max(-math.log10(interval) + 1, 1), 4))

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings())

    def _warnings(self) -> list:
        rel = self.iqr / self.median if self.median else 0.0
        if len(self.times) < 4 or rel <= 0.1:
            return []
        if rel > 0.5:
            return [f"  WARNING: Interquartile range is {rel * 100:.1f}% of the median "
                    f"measurement.\n           This suggests significant environmental "
                    f"influence."]
        return [f"  WARNING: Interquartile range is {rel * 100:.1f}% of the median "
                f"measurement.\n           This could indicate system fluctuation."]

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        lines = [super().__repr__(), self.task_spec.summarize()]
        n = len(self.times)
        threads = self.task_spec.num_threads
        thread_text = f"{threads} thread{'s' if threads > 1 else ''}"
        if n == 1:
            lines.append(f"  {self.median / scale:.2f} {unit}")
            lines.append(f"  1 measurement, {self.number_per_run} runs , {thread_text}")
        else:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            if n >= 4:
                lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                             f"({self._p25 / scale:.2f} to {self._p75 / scale:.2f})")
            lines.append(f"  {n} measurements, {self.number_per_run} runs per measurement, "
                         f"{thread_text}")
        lines.extend(self._warnings())
        return "\n".join(lines)


def _as_fusetorch(code: str) -> str:
    """`import torch` lines of a statement or its setup import fusetorch under that name, as
    `import fusetorch as torch` stands for PyTorch in the user's own module."""
    return re.sub(r"^(\s*)(import|from)(\s+)torch\b([\w.]*)(\s+as\s+\w+)?",
                  lambda m: (f"{m[1]}{m[2]}{m[3]}fusetorch{m[4]}" + (m[5] or (
                      " as torch" if m[2] == "import" and not m[4] else ""))),
                  code, flags=re.M)


def _quantiles(times: list) -> tuple:
    """The 25th, 50th and 75th percentiles, linearly interpolated (numpy's and PyTorch's)."""
    s = sorted(times)

    def q(p):
        k = (len(s) - 1) * p
        lo = int(math.floor(k))
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (k - lo)
    return q(0.25), q(0.5), q(0.75)


class Timer:
    """Time `stmt` after `setup` with the names in `globals`, under `num_threads` threads."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = _timeit.default_timer, globals: dict | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language=Language.PYTHON) -> None:
        if language not in (Language.PYTHON, "py", "python"):
            raise NotImplementedError("fusetorch's benchmark.Timer times Python statements "
                                      "only (C++ statements need PyTorch's C++ toolchain)")
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        g = dict(globals or {})
        if "torch" not in g:
            # PyTorch's Timer puts torch in its globals: the package this module is part of
            # (loaded by now; no import of the front end from below it)
            g["torch"] = sys.modules[__name__.split(".")[0]]
        self._globals = g
        self._timer = _timeit.Timer(stmt=_as_fusetorch(stmt), setup=_as_fusetorch(setup),
                                    timer=timer, globals=g)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                   label=label, sub_label=sub_label, description=description,
                                   env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        from ... import _threads
        prior = _threads.get_num_threads()
        _threads.set_num_threads(self._task_spec.num_threads)
        try:
            return max(self._timer.timeit(number), 1e-9)
        finally:
            _threads.set_num_threads(prior)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of `number` runs (after one warm-up block of at most 100 runs)."""
        self._timeit(number=max(int(number // 100), 2))
        return Measurement(number_per_run=number, raw_times=[self._timeit(number=number)],
                           task_spec=self._task_spec)

    def _estimate_block_size(self, min_run_time: float) -> int:
        """PyTorch's: the smallest power of ten of runs whose time dwarfs an empty block's
        (10**4 times) and is at least a thousandth of `min_run_time`."""
        overhead = statistics.median(self._timeit(0) for _ in range(5))
        number = 1
        while True:
            time_taken = self._timeit(number)
            relative_overhead = overhead / time_taken
            if relative_overhead <= 1e-4 and time_taken >= min_run_time / 1000:
                break
            if time_taken > min_run_time:
                break
            if number * 10 > 10 ** 9:
                break
            number *= 10
        return number

    def blocked_autorange(self, callback: Callable | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks sized to about a thousandth of `min_run_time`, repeated until it is spent."""
        number = self._estimate_block_size(min_run_time)
        times, total = [], 0.0
        while total < min_run_time or not times:
            t = self._timeit(number)
            if callback is not None:
                callback(number, t)
            times.append(t)
            total += t
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback: Callable | None = None
                           ) -> Measurement:
        """Blocks until the IQR is below `threshold` of the median (at least 3 of them and
        `min_run_time`), or `max_run_time` is spent."""
        number = self._estimate_block_size(min_run_time=0.05)
        times, total = [], 0.0
        while True:
            t = self._timeit(number)
            if callback is not None:
                callback(number, t)
            times.append(t)
            total += t
            if total >= min_run_time and len(times) > 3:
                m = Measurement(number, times, self._task_spec)
                if m.iqr / m.median < threshold:
                    break
            if total > max_run_time:
                break
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("fusetorch does not implement Timer.collect_callgrind "
                                  "(valgrind instruction counts of PyTorch's C++ build)")


class Compare:
    """PyTorch's table of Measurements: one block per label, rows by sub_label within each
    thread count, columns by description; times in one unit, trimmed to significant digits."""

    def __init__(self, results: list) -> None:
        self._results = list(results)
        self._trim = False
        self._colorize = False

    def trim_significant_figures(self) -> None:
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = True  # (plain text: no terminal colours)

    def extend_results(self, results: list) -> None:
        self._results.extend(results)

    def print(self) -> None:
        print(str(self))

    def __str__(self) -> str:
        blocks, by_label = [], {}
        for m in self._results:
            by_label.setdefault(m.task_spec.label, []).append(m)
        for label, ms in by_label.items():
            blocks.append(self._block(label, ms))
        return "\n".join(blocks)

    def _block(self, label, ms: list) -> str:
        descriptions = list(dict.fromkeys(m.task_spec.description for m in ms))
        unit, scale = select_unit(min(m.median for m in ms))
        cells: dict = {}
        fmt = {}
        for d in descriptions:  # PyTorch's column rule: one width and precision per column
            col = [m for m in ms if m.task_spec.description == d]
            leading = [int(math.ceil(math.log10(m.median / scale))) for m in col]
            unit_digits = max(leading)
            decimal = min(max(m.significant_figures - lead, 0) for lead, m in
                          zip(leading, col)) if self._trim else 1
            fmt[d] = (unit_digits + decimal + (decimal > 0), decimal)
        for m in ms:
            spec = m.task_spec
            v = m.median / scale
            if self._trim:
                v = trim_sigfig(v, m.significant_figures)
            w, dec = fmt[spec.description]
            cells[(spec.num_threads, spec.sub_label, spec.description)] = f"{v:>{w}.{dec}f}"
        rows_by_threads: dict = {}
        for (threads, sub, _d) in cells:
            rows_by_threads.setdefault(threads, [])
            if sub not in rows_by_threads[threads]:
                rows_by_threads[threads].append(sub)
        col_names = [d or "" for d in descriptions]
        row_names = [s or "" for rows in rows_by_threads.values() for s in rows]
        first = max([len(r) for r in row_names] + [0]) + 6
        widths = [max(len(c), 6) + 2 for c in col_names]
        header = " " * first + "|" + "|".join(f"{c:^{w}}" for c, w in zip(col_names, widths))
        width = len(header)
        title = f" {label} " if label else ""
        lines = [f"[{title:-^{width - 2}}]", header]
        for threads, rows in sorted(rows_by_threads.items()):
            lines.append(f"{threads} threads: ".ljust(width, "-"))
            for sub in rows:
                vals = []
                for d, w in zip(descriptions, widths):
                    v = cells.get((threads, sub, d))
                    vals.append(f"{v:^{w}}" if v is not None else " " * w)
                lines.append(f"{(sub or ''):>{first - 2}}  |" + "|".join(vals))
        lines.append("")
        lines.append(f"Times are in {unit_to_english(unit)}s ({unit}).")
        lines.append("")
        return "\n".join(lines)


def __getattr__(name: str):
    if name in ("Fuzzer", "FuzzedParameter", "FuzzedTensor", "FuzzedSparseTensor",
                "ParameterAlias", "CallgrindStats", "FunctionCounts", "FunctionCount",
                "CopyIfCallgrind"):
        raise NotImplementedError(f"fusetorch does not implement "
                                  f"torch.utils.benchmark.{name} (only Timer, Measurement "
                                  f"and Compare are built)")
    raise AttributeError(f"module 'fusetorch.utils.benchmark' has no attribute '{name}'")

"""What every backend's renderer shares: loop kernels -> one module of source, per backend.

A backend is a small subclass of `Renderer` (as tinygrad's C-style renderer base with its Clang
and CUDA subclasses): `render.py` (C with OpenMP, built with cffi) and `render_cuda.py` (CUDA,
built with NVRTC). The base holds what was once written twice:

- the Jinja environment (`codegen.environment`: the backend's templates, then `common/`),
- kernel deduplication (`unique`) and the module skeleton (`render_module`: each kernel once,
  the op table's C helpers its kernels call, `templates/common/helpers.j2` for the `FT_*`
  macros both backends define),
- parameter lists (`params`, `signature`), and the one map from the IR's C type names
  (`DType.c_type`, which `lower` writes into every `Param` and `Stmt`) to each backend's
  spelling (`ARRAY_TYPES`, `VALUE_TYPES`),
- what a reduction folds (`reduction`): read from the reduce primitive's `Reduction` in the op
  table, never from its name.

A subclass sets its names (`backend`, `suffix`, `FN_QUALIFIER`, `RESTRICT`, type overrides,
`STRATEGY`: the class of the loop structure it prints, made by its step in
codegen/strategy.py) and prints one kernel (`render_kernel`) as its strategy says, deciding
nothing itself; `check` refuses, per kernel, what it cannot render exactly (`Refused`,
naming the kernel and the reason), so a caller can fall back.

    from fusetorch.codegen.render import C
    source = C.render_module(kernels)
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.ops import OPS
from . import environment
from .lower import LoopKernel

# the C type names kernels may hold (DType.c_type of the kernel dtypes, int64 compare operands
# and argmax/argmin results)
KNOWN_CTYPES = ("float", "double", "bool", "int64_t")


class Refused(NotImplementedError):
    """A kernel a backend's renderer cannot render exactly; the message names the kernel."""


@dataclass(frozen=True)
class ReduceText:
    """A kernel's reduction as its templates spell it, from the op's `Reduction`: `combine`
    is OpenMP's operator ('+', 'max', 'min'); `better` the comparison by which a new value
    replaces the accumulator ('>' for max), `not_below` its negation with a NaN counting as
    better (one comparison: `!(v <= acc)`); `init` the accumulator's start."""
    index: bool  # argmax/argmin: the position of the kept value is the result
    nan: bool  # carries a "saw a NaN" flag beside the accumulator
    combine: str
    better: str
    not_below: str
    init: str


_COMBINE = {"add": ("+", "", ""), "max": ("max", ">", "<="), "min": ("min", "<", ">=")}


def reduction(k: LoopKernel) -> ReduceText | None:
    """The reduction `k` folds, or None for a kernel without one (or one no template folds:
    a product)."""
    if k.reduce_out is None:
        return None
    r = OPS[k.reduce_op].reduction
    if r is None or r.combine not in _COMBINE:
        return None
    combine, better, not_below = _COMBINE[r.combine]
    return ReduceText(r.index, r.propagates_nan, combine, better, not_below, k.acc_init)


class Renderer:
    name = ""  # for messages: "C", "CUDA"
    STRATEGY: type = object  # the loop structure this renderer prints (codegen/strategy.py)
    backend = ""  # templates/<backend>/
    suffix = ""  # template file suffix: "c.j2", "cu.j2"
    FN_QUALIFIER = ""  # how the op table's C helpers are declared (FT_FN)
    RESTRICT = ""  # the pointer qualifier saying parameters do not alias
    ARRAY_TYPES: dict = {}  # IR C type -> this backend's element type of a pointer
    VALUE_TYPES: dict = {}  # IR C type -> this backend's type of a temporary

    # ------------------------------------------------------------ shared pieces

    def template(self, name: str):
        return environment(self.backend).get_template(f"{name}.{self.suffix}")

    def array_type(self, ctype: str) -> str:
        return self.ARRAY_TYPES.get(ctype, ctype)

    def value_type(self, ctype: str) -> str:
        return self.VALUE_TYPES.get(ctype, ctype)

    def params(self, k: LoopKernel, qualifier: str | None = None) -> list:
        """Each parameter as declared: inputs const (an input written in place is not),
        elements in this backend's types, `qualifier` (default: RESTRICT) on every pointer."""
        q = self.RESTRICT if qualifier is None else qualifier
        if k.batched:  # (LoopKernel.batched) a table of pointers per parameter, set by set
            return ["int64_t n_sets", "const int64_t* numel"] + [
                f"{'' if p.output or p.inout else 'const '}{self.array_type(p.ctype)}* const* "
                f"{p.name}_sets" for p in k.params]
        return [f"{'' if p.output or p.inout else 'const '}{self.array_type(p.ctype)}* "
                f"{q}{p.name}" for p in k.params]

    def set_pointers(self, k: LoopKernel) -> list:
        """A batched kernel's declarations of set t's pointers, from its tables."""
        if not k.batched:
            return []
        return [f"{'' if p.output or p.inout else 'const '}{self.array_type(p.ctype)}* "
                f"{self.RESTRICT}{p.name} = {p.name}_sets[t];" for p in k.params]

    def signature(self, k: LoopKernel, qualifier: str | None = None) -> str:
        return ", ".join(self.params(k, qualifier))

    @staticmethod
    def unique(kernels: list) -> list:
        """Kernels named alike are alike (the name hashes everything the source depends on):
        a module defines each once."""
        return list({k.name: k for k in kernels}.values())

    @staticmethod
    def helpers(sources: list) -> list:
        """The op table's C helper functions (`c_helper`) these kernels call, by the
        `ft_<op>` name each defines; written once for every backend (`FT_FN`)."""
        text = "\n".join(sources)
        # (one source may serve several ops: the Bessel functions share theirs)
        return list(dict.fromkeys(d.c_helper for name, d in sorted(OPS.items())
                                  if d.c_helper and f"ft_{name}" in text))

    def check(self, k: LoopKernel) -> None:
        """Refused unless this renderer renders `k` exactly."""
        if not isinstance(k.strategy, self.STRATEGY):
            raise Refused(f"the {self.name} renderer cannot render kernel {k.name}: it is "
                          f"scheduled as {type(k.strategy).__name__} (strategy.schedule(k, "
                          f"{self.backend!r}) schedules it for {self.name})")
        for p in k.params:
            if p.ctype not in KNOWN_CTYPES:
                raise Refused(f"the {self.name} renderer cannot render kernel {k.name}: "
                              f"parameter {p.name} has C type {p.ctype}")
        if k.reduce_out is not None and reduction(k) is None:
            raise Refused(f"the {self.name} renderer cannot render kernel {k.name}: "
                          f"reduction {k.reduce_op!r}")

    # ------------------------------------------------------------ per backend

    def render_kernel(self, k: LoopKernel) -> str:
        raise NotImplementedError

    def module_context(self, sources: list) -> dict:
        """What this backend's module template needs besides kernels and helpers."""
        return {}

    def render_module(self, kernels: list) -> str:
        """One source holding every kernel once, the helpers they call, and the backend's
        preamble (templates/<backend>/module.*, which includes common/helpers.j2)."""
        return self.module([self.render_kernel(k) for k in self.unique(kernels)])

    def module(self, sources: list, part: tuple[int, int] | None = None) -> str:
        """`render_module` for kernels already rendered (`sources`); `part` (i, n) says it is
        the i-th of n modules one program's kernels were split into."""
        return self.template("module").render(
            kernels=sources, helpers=self.helpers(sources), fn_qualifier=self.FN_QUALIFIER,
            part=part, **self.module_context(sources))

"""Symbolic sizes for `dynamic_axes`, found by tracing again with other sizes.

The IR is specialised on shapes: a reshape records `shape=(6, 8, 4)`, a mean divides by the
constant 6. Which of those numbers are really a dynamic size (batch * heads, the batch itself)
the graph cannot say, so the exporter asks the model: it traces once with the user's inputs
and, per symbol (a dim_param name; axes that share a name share a symbol), twice more with
that size grown by 3g and 7g, g its power-of-two factor up to 8, so that sizes a model needs
divisible stay so (the inputs' values are tiled along the axis). Graphs that
differ in more than numbers mean the Python code depends on the size (a loop over it): that
axis cannot be dynamic. Each number that varies must then be `c0 + c1 * (product of the
symbols it varies with)` with integer c0 and c1, checked on every trace; that covers batch,
batch * heads, seq - 1, and rules out a stride's floor division. A number that fits no such
form becomes `Bad`, an error raised only if an exported ONNX node needs it (a Conv exported
natively does not need its output size, an unfolded one does).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Dim:
    """c0 + c1 * prod(syms); static when `syms` is empty (then c1 is 0)."""

    c0: int
    c1: int = 0
    syms: tuple = ()

    @property
    def static(self) -> bool:
        return not self.syms

    def shift(self, k: int) -> "Dim":
        return Dim(self.c0 + k, self.c1, self.syms)

    def scale(self, k: int) -> "Dim":
        return Dim(self.c0 * k, self.c1 * k, self.syms) if self.syms else Dim(self.c0 * k)

    def __str__(self) -> str:
        if not self.syms:
            return str(self.c0)
        prod = "*".join(self.syms)
        s = prod if self.c1 == 1 else f"{self.c1}*{prod}"
        return s if not self.c0 else f"{s}{'+' if self.c0 > 0 else '-'}{abs(self.c0)}"


@dataclass(frozen=True, eq=False)  # two Bad sizes are never known to be equal
class Bad:
    """A number that changes with a dynamic size in a way an ONNX shape cannot follow."""

    reason: str

    static = False


def static(v) -> Dim:
    return Dim(int(v))


def fit(values: list, envs: list[dict]) -> Dim | Bad:
    """The Dim taking `values[t]` when the symbols have sizes `envs[t]` (t = 0 is the base
    trace; every other trace changes one symbol)."""
    v0 = values[0]
    if all(v == v0 for v in values):
        return Dim(int(v0)) if float(v0).is_integer() else Bad(f"{v0!r} is not a size")
    syms = tuple(sorted({s for t in range(1, len(values)) if values[t] != v0
                         for s, n in envs[t].items() if n != envs[0][s]}))
    prods = []
    for env in envs:
        p = 1
        for s in syms:
            p *= env[s]
        prods.append(p)
    other = next(t for t in range(len(values)) if prods[t] != prods[0])
    try:
        c1 = Fraction(values[other] - v0) / (prods[other] - prods[0])
        c0 = Fraction(v0) - c1 * prods[0]
    except (TypeError, ValueError):
        return Bad(f"{values} are not sizes")
    seen = ", ".join(f"{v} at {'/'.join(str(e[s]) for s in syms)}"
                     for v, e in zip(values, envs))
    if c1.denominator != 1 or c0.denominator != 1 or \
            any(Fraction(v) != c0 + c1 * p for v, p in zip(values, prods)):
        return Bad(f"a size that is no c0 + c1*{'*'.join(syms)} with integers c0, c1 "
                   f"({seen})")
    return Dim(int(c0), int(c1), syms)

"""Loop nests and index arithmetic as data (`Loop`, `Block`, `Index`, `Split`: what
codegen/strategy.py and codegen/template_nests.py build) and their one printer, for every
backend's kernel templates: any nest, at any depth, with its indentation; any offset, any
decomposition of a thread's linear index, so no renderer forms index text itself. A template
calls it as `nest(sched.nest, text, pragmas)`, `text(name, pad)` being its own macro that
prints the part `name` (a declaration, the element's statements, a fold, a store: what is not
a loop) at indentation `pad`, each line led by a newline, as the templates write lines. Python
rather than a recursive Jinja macro: a macro call per loop doubled the time to render a kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

PAD = "    "


@dataclass(frozen=True)
class Loop:
    """One loop of a nest, as the printer (codegen/printer.py `nest`) writes it:
    `for (ctype var = start; var cmp stop; var step) { body }`, opened by `#pragma` with the
    renderer's spelling of `pragma` (a CStrategy pragma key). `clip`: the loop stops at the
    smaller of `stop` and `clip` (a last, shorter block), a bound declared just before it as
    `<var>_end`. `body`, in order: inner Loops and the names of what the kernel's template
    prints there (its declarations, initialisations, the element's loads and statements,
    folds and stores: everything that is not a loop)."""
    var: str
    stop: str
    body: tuple
    start: str = "0"
    pragma: str = ""
    step: str = "++"
    cmp: str = "<"
    clip: str = ""
    ctype: str = "long"
    also: str = ""  # a further condition the loop runs while (`&&` after its bound)


@dataclass(frozen=True)
class Block:
    """A braced statement of a nest that is not a loop: `<head> { body }`, `head` the name of
    the template's part that opens it (an `if` on an alignment, on the first thread), or ""
    for a bare block opened by `#pragma` with the spelling of `pragma` (an OpenMP parallel
    region whose threads each allocate their own scratch in it)."""
    head: str
    body: tuple
    pragma: str = ""


@dataclass(frozen=True)
class Index:
    """An element offset: the sum of each loop variable times its stride, `terms` the
    (variable, stride) pairs of the nonzero strides. Printed as C spells it, `i0 * 6 + i1`
    (a unit stride bare; no terms: `0`)."""
    terms: tuple = ()

    def __str__(self) -> str:
        return " + ".join(v if s == 1 else f"{v} * {s}" for v, s in self.terms) or "0"


def index(strides: tuple, names: tuple) -> Index:
    """The offset of an array with `strides` (one per loop) at the loop variables `names`
    (a stride past the last name is not indexed: a reduction's output by its kept loops)."""
    return Index(tuple((v, s) for v, s in zip(names, strides) if s))


@dataclass(frozen=True)
class Split:
    """A linear index `source` split, row-major over `extents`, into one `ctype` index per
    loop (`names`): a CUDA thread's element or row as loop indices. A unit extent's index is
    0; the split divides a running remainder `ft_r`."""
    source: str
    names: tuple
    extents: tuple
    ctype: str

    def lines(self) -> list:
        """The statements declaring each of `names`, innermost first."""
        names, it = self.names, self.ctype
        if not names:
            return []
        out = [f"{it} ft_r = {self.source};"] if len(names) > 1 else []
        for d in range(len(names) - 1, 0, -1):
            n = self.extents[d]
            out.append(f"const {it} {names[d]} = 0;" if n == 1 else
                       f"const {it} {names[d]} = ft_r % {n}; ft_r /= {n};")
        out.append(f"const {it} {names[0]} = {'ft_r' if len(names) > 1 else self.source};")
        return out


def nested(loops: list, inner: tuple) -> tuple:
    """`loops` (Loop fields but the body), each inside the one before, around `inner`."""
    for spec in reversed(loops):
        inner = (Loop(body=inner, **spec),)
    return inner


def nest(items: tuple, text: Callable, pragmas: dict | None = None, pad: str = PAD) -> str:
    """The C of `items` (Loops, Blocks and part names) at indentation `pad`; `pragmas` spells
    each Loop's pragma key (the C renderer's `render.pragmas`)."""
    out: list = []
    _print(items, text, pragmas or {}, pad, out)
    return "".join(out)


def _print(items: tuple, text: Callable, pragmas: dict, pad: str, out: list) -> None:
    for it in items:
        if isinstance(it, str):
            out.append(text(it, pad))
            continue
        head = getattr(it, "head", None)
        if head is not None:  # a Block: its opening part, then the braced body
            if it.pragma:
                out.append(f"\n{pad}#pragma {pragmas[it.pragma]}")
            out.append(f"{text(head, pad)} {{" if head else f"\n{pad}{{")
        else:
            stop = it.stop
            if it.clip:  # the smaller of stop and clip, named before the loop
                stop = f"{it.var}_end"
                out.append(f"\n{pad}const {it.ctype} {stop} = {it.stop} < {it.clip} ? "
                           f"{it.stop} : {it.clip};")
            if it.pragma:
                out.append(f"\n{pad}#pragma {pragmas[it.pragma]}")
            if it.also:
                stop = f"{stop} && {it.also}"
            out.append(f"\n{pad}for ({it.ctype} {it.var} = {it.start}; {it.var} {it.cmp} {stop}; "
                       f"{it.var}{it.step}) {{")
        _print(it.body, text, pragmas, pad + PAD, out)
        out.append(f"\n{pad}}}")

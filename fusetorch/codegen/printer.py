"""Loop nests as data (`Loop`, `Block`: what codegen/strategy.py and codegen/template_nests.py
build) and their one printer, for every backend's kernel templates: any nest, at any depth,
with its indentation. A template calls it as
`nest(sched.nest, text, pragmas)`, `text(name, pad)` being its own macro that prints the part
`name` (a declaration, the element's statements, a fold, a store: what is not a loop) at
indentation `pad`, each line led by a newline, as the templates write lines. Python rather
than a recursive Jinja macro: a macro call per loop doubled the time to render a kernel.
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

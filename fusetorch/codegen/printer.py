"""The one printer of loop nests (codegen/strategy.py `Loop`, `Block`), for every backend's
loop-kernel templates: any nest, at any depth, with its indentation. A template calls it as
`nest(sched.nest, text, pragmas)`, `text(name, pad)` being its own macro that prints the part
`name` (a declaration, the element's statements, a fold, a store: what is not a loop) at
indentation `pad`, each line led by a newline, as the templates write lines. Python rather
than a recursive Jinja macro: a macro call per loop doubled the time to render a kernel.
"""
from __future__ import annotations

from typing import Callable

PAD = "    "


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
            out.append(f"{text(head, pad)} {{")
        else:
            stop = it.stop
            if it.clip:  # the smaller of stop and clip, named before the loop
                stop = f"{it.var}_end"
                out.append(f"\n{pad}const {it.ctype} {stop} = {it.stop} < {it.clip} ? "
                           f"{it.stop} : {it.clip};")
            if it.pragma:
                out.append(f"\n{pad}#pragma {pragmas[it.pragma]}")
            out.append(f"\n{pad}for ({it.ctype} {it.var} = {it.start}; {it.var} {it.cmp} {stop}; "
                       f"{it.var}{it.step}) {{")
        _print(it.body, text, pragmas, pad + PAD, out)
        out.append(f"\n{pad}}}")

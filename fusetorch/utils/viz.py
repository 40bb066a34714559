"""Pictures of graphs: `render(graph, "out.svg")` draws Graphviz source, an IR graph or a
compiled function's last variant through the `graphviz` package and Graphviz's `dot` program.

    step = fusetorch.compile(train_step)
    step(x, y); step(x, y)
    fusetorch.utils.viz.render(step, "step.svg")          # = render(step.graph(format="dot"), ...)

Both are optional (`pip install "fusetorch[viz]"` or `pip install graphviz`, and Graphviz
itself, `apt-get install graphviz` on Debian and Ubuntu); without them `render` raises
`GraphvizUnavailable` saying what to install. Writing `.dot`/`.gv` needs neither.
"""
from __future__ import annotations

import os
import shutil
from typing import Any

from ..ir.dot import to_dot
from ..ir.graph import Graph

_INSTALL = ("install the graphviz Python package (pip install graphviz, or pip install "
            "'fusetorch[viz]') and Graphviz's dot program (Debian/Ubuntu: apt-get install "
            "graphviz; elsewhere see https://graphviz.org/download/)")
_SOURCE_ONLY = ("dot", "gv")


class GraphvizUnavailable(RuntimeError):
    """`render` needs the graphviz package and the `dot` program; one of them is missing."""


def dot_source(graph: Any) -> str:
    """Graphviz source for `graph`: DOT text as given, an `ir.Graph`, or anything with
    `graph(format="dot")` (a compiled function: its last variant's forward program)."""
    if isinstance(graph, str):
        return graph
    if isinstance(graph, Graph):
        return to_dot(graph)
    method = getattr(graph, "graph", None)
    if callable(method):
        source = method(format="dot")
        if not source:
            raise ValueError("nothing to draw: the compiled function has not run a compiled "
                             "call yet")
        return source
    raise TypeError(f"render expects DOT source, a fusetorch IR Graph or a compiled function, "
                    f"got {type(graph).__name__}")


def render(graph: Any, path: str | os.PathLike, format: str | None = None,
           engine: str = "dot") -> str:
    """Draw `graph` (see `dot_source`) into `path`; the format is `format`, else the path's
    extension (svg, png, pdf, ...; dot or gv write the source itself, needing no Graphviz).
    Returns the path."""
    source = dot_source(graph)
    path = os.fspath(path)
    fmt = (format or os.path.splitext(path)[1].lstrip(".") or "svg").lower()
    if fmt in _SOURCE_ONLY:
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return path
    data = _pipe(source, fmt, engine)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _pipe(source: str, fmt: str, engine: str) -> bytes:
    try:
        import graphviz
    except ImportError:
        raise GraphvizUnavailable(f"fusetorch.utils.viz.render needs the graphviz Python "
                                  f"package, which is not installed: {_INSTALL}") from None
    if shutil.which(engine) is None:
        raise GraphvizUnavailable(f"fusetorch.utils.viz.render needs Graphviz's {engine} "
                                  f"program, which is not on PATH: {_INSTALL}")
    try:
        return graphviz.Source(source).pipe(format=fmt, engine=engine)
    except graphviz.ExecutableNotFound as e:
        raise GraphvizUnavailable(f"{e}: {_INSTALL}") from None

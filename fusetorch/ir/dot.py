"""Graphviz DOT source for a graph: one box per node, labelled with its op, number, dtype and
shape, and the user's `file:line` where the node records it; optional clusters (the nodes one
compiled kernel fuses); fills by phase (forward, backward, update: `meta['phase']`).

    print(to_dot(graph))                                   # digraph fusetorch { ... }
    to_dot(graph, clusters=[Cluster("k0", "ft_pointwise_ab12 (forward)", nodes)])

Pure text, no Graphviz needed to make it (`fusetorch.utils.viz.render` draws it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .graph import PHASES, Graph, Node, _fmt_attr, _shown

# fills by phase, and for what is neither (graph inputs, constants)
FILLS = {"forward": "#dbe9f6", "backward": "#fde2c8", "update": "#d7efd2"}
_INPUT_FILL = "#eeeeee"
_MAX_ATTRS = 40  # characters of attributes shown in a node's label


@dataclass
class Cluster:
    """Nodes drawn inside one box: `name` becomes `cluster_<name>` (Graphviz draws only
    subgraphs named cluster* as boxes), `label` its caption."""
    name: str
    label: str
    nodes: list = field(default_factory=list)


def quote(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as `\\n`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def node_label(n: Node, number: int, name: str | None = None) -> str:
    """`%12 add` / `dims=(1,)` / `float32[8, 16]` / `train.py:10`: op (and `name`, say of an
    input) and its attributes, dtype and shape, and the user's line when the node records
    one."""
    lines = [f"%{number} {n.op}" + (f" {name}" if name else "")]
    attrs = ", ".join(f"{k}={_fmt_attr(k, v, n)}" for k, v in n.attrs.items()
                      if _shown(k, n) and k != "digest")
    if attrs:
        lines.append(attrs if len(attrs) <= _MAX_ATTRS else attrs[:_MAX_ATTRS - 3] + "...")
    lines.append(f"{n.dtype.name}[{', '.join(str(d) for d in n.shape)}]")
    where = (n.meta or {}).get("source")
    if where:
        lines.append(where)
    return "\n".join(lines)


def phase_of(n: Node, default: str = "forward") -> str:
    """The phase a node was recorded in (`meta['phase']`), else `default`."""
    return (n.meta or {}).get("phase") or default


def to_dot(graph: Graph, clusters: Sequence[Cluster] = (), title: str | None = None,
           updates: dict[int, int] | None = None, default_phase: str = "forward",
           input_names: Sequence[str | None] = (), name: str = "fusetorch") -> str:
    """DOT source of `graph`. Node `n<k>` is `graph.nodes[k]` (numbered as `graph.text()`);
    `input_names[i]` names `graph.inputs[i]`; `updates` (output index -> input index: the
    output is the input's new value, an optimizer's update) add "-> new %k" to the output's
    label. Outputs have a double border."""
    num = {id(n): i for i, n in enumerate(graph.nodes)}
    names = {id(n): s for n, s in zip(graph.inputs, input_names) if s}
    notes: dict = {}
    for out_index, in_index in sorted((updates or {}).items()):
        x = graph.inputs[in_index]
        what = f"%{num[id(x)]}" + (f" {names[id(x)]}" if id(x) in names else "")
        notes.setdefault(id(graph.outputs[out_index]), []).append(f"new value of {what}")
    outputs = {id(o) for o in graph.outputs}
    clustered = {id(n) for c in clusters for n in c.nodes}
    phases = {phase_of(n, default_phase) for n in graph.nodes if n.op != "input"}
    lines = [f"digraph {quote(name)} {{",
             "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
             '  edge [color="#555555", arrowsize=0.6];']
    caption = [title] if title else []
    if len(phases) > 1:
        caption.append("fill: " + ", ".join(f"{p} {_colour_name(p)}" for p in PHASES
                                           if p in phases))
    if caption:
        lines.append(f"  label={quote(chr(10).join(caption))}; labelloc=t; "
                     'fontname="Helvetica"; fontsize=12;')

    def node_line(n: Node, indent: str) -> str:
        k = num[id(n)]
        label = "\n".join([node_label(n, k, names.get(id(n)))] + notes.get(id(n), []))
        attrs = [f"label={quote(label)}"]
        if n.op == "input":
            attrs.append(f'fillcolor="{_INPUT_FILL}"')
        elif n.op == "constant" and not n.shape:
            attrs += ["shape=plaintext", 'style=""']
        else:
            attrs.append(f'fillcolor="{FILLS.get(phase_of(n, default_phase), _INPUT_FILL)}"')
        if id(n) in outputs:
            attrs.append("peripheries=2")
        return f"{indent}n{k} [{', '.join(attrs)}];"

    for c in clusters:
        lines.append(f"  subgraph {quote('cluster_' + c.name)} {{")
        lines.append(f"    label={quote(c.label)}; style=\"rounded,dashed\"; "
                     'color="#777777"; fontsize=10;')
        lines += [node_line(n, "    ") for n in c.nodes]
        lines.append("  }")
    lines += [node_line(n, "  ") for n in graph.nodes if id(n) not in clustered]
    for n in graph.nodes:
        for i in n.inputs:
            lines.append(f"  n{num[id(i)]} -> n{num[id(n)]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _colour_name(phase: str) -> str:
    return {"forward": "(blue)", "backward": "(orange)", "update": "(green)"}[phase]

"""Reading compiled programs: every kernel of a set of programs, labelled forward, backward
or update; their C under one banner per program; a program's graph as Graphviz source with
each kernel's nodes in one cluster.

Whatever holds compiled programs shows them through these, given as `(role, Program)` pairs
(`CompiledFunction.programs()`), so every holder lists its kernels the same way.
"""
from __future__ import annotations

import re

from ..ir.dot import Cluster, phase_of, to_dot
from ..ir.graph import PHASES as _ORDER
from .program import Program


def kernel_lines(programs: list) -> list:
    """`Program.describe()` of each program, in order: one labelled line per kernel."""
    return [line for _role, p in programs for line in p.describe()]


def kernel_labels(program: Program) -> dict:
    """kernel name -> label (see `Program.labels`); a kernel used by several groups (one
    definition per name) gets the union of their labels, in phase order."""
    labels: dict = {}
    for k, label in zip(program.kernels, program.labels()):
        parts = labels.setdefault(k.name, [])
        parts += [p for p in label.split("+") if p not in parts]
    return {name: "+".join(sorted(parts, key=_ORDER.index)) for name, parts in labels.items()}


def labelled_source(programs: list) -> str:
    """The C module of each program under a banner naming it; each kernel's header comment
    (`/* ft_...: ...`) gains its label. The modules are otherwise exactly what was built."""
    parts = []
    for role, p in programs:
        if p.source is None:
            if p.plan.groups():
                parts.append(f"/* ===== {role} program: not built yet (its kernels are "
                             "generated on its first run) ===== */\n")
            continue
        labels = kernel_labels(p)
        banner = f"/* ===== {describe(role, p)}: {len(labels)} kernel(s) ===== */\n"
        parts.append(banner + _label_headers(p.source, labels))
    return "\n".join(parts)


def describe(role: str, program: Program) -> str:
    """`forward program`, or for a training step `forward program (forward + backward +
    update)`: the phases its nodes were recorded in, when they are not just its role."""
    phases = {phase_of(n, program.role) for n in program.graph.nodes
              if n.op not in ("input", "constant")}
    if phases <= {role}:
        return f"{role} program"
    return f"{role} program ({' + '.join(p for p in _ORDER if p in phases)})"


def _label_headers(source: str, labels: dict) -> str:
    def sub(m: re.Match) -> str:
        label = labels.get(m.group(1))
        return f"/* {m.group(1)} ({label}): " if label else m.group(0)
    return re.sub(r"(?m)^/\* (ft_\w+): ", sub, source)


def program_dot(program: Program, title: str | None = None,
                input_names: list | None = None) -> str:
    """DOT source of a program's graph: the nodes each kernel fuses in a cluster captioned
    with the kernel's name (once built), label, kind and iteration space; `input_names` name
    the graph's inputs."""
    groups = program.plan.groups()
    names = [k.name for k in program.kernels] if len(program.kernels) == len(groups) else \
        [f"group {i}" for i in range(len(groups))]
    clusters = [Cluster(f"k{i}", f"{name} ({label})\n{g.kind} over {list(g.shape)}",
                        list(g.nodes))
                for i, (g, name, label) in enumerate(zip(groups, names, program.labels()))]
    if title is None:
        title = f"{describe(program.role, program)}: {len(groups)} kernel(s)"
    return to_dot(program.graph, clusters, title=title, updates=program.updates,
                  default_phase=program.role, input_names=input_names or ())

"""Graph + input layouts -> the kernels, as data: no arrays, no eager run, nothing built.

    plan = kernel_plan.make(graph, layouts_of(graph.inputs, arrays))
    plan.partition.steps   # [Group | Extern] in execution order (codegen/fuse.py)
    plan.kernels           # one LoopKernel per group (codegen/lower.py)

The steps: partition the graph into fused groups and extern steps, follow the layouts through
them (`layouts.derive`), choose which updates a kernel writes in place (`in_place.choose`), and
lower every group for the layouts of its inputs. `cpu=False` plans for the CUDA renderer (no
C-only groups or layouts).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..codegen import fuse, lower
from ..ir.graph import Graph
from . import in_place as _in_place
from . import layouts as _layouts


@dataclass
class KernelPlan:
    partition: fuse.Plan
    kernels: list  # LoopKernel per group, in the partition's order
    layouts: dict  # id(node) -> Layout, of every graph input and every value a group reads
    in_place: dict = field(default_factory=dict)  # id(output node) -> the input it overwrites

    def input_layouts(self, k: int) -> list:
        """The layouts kernel `k` was generated for, one per input of its group."""
        return [self.layouts[id(n)] for n in self.partition.groups()[k].inputs]


def make(graph: Graph, layouts: dict, *, cpu: bool = True, updates: dict | None = None,
         partition: fuse.Plan | None = None, impl: dict | None = None, xp=None) -> KernelPlan:
    """The kernel plan of `graph` for `layouts` (id(node) -> Layout of at least every graph
    input; values missing are derived). `partition`: the graph's, if already made (with the
    same `cpu`). `impl`/`xp`: the eager table and array module the movement steps' layouts
    are found with (the CPU's by default). Raises `layouts.LayoutUnknown` when a step's
    output layout cannot be derived: the caller may then pass observed layouts."""
    if partition is None:
        partition = fuse.partition(graph, cpu=cpu)
    groups = partition.groups()
    if any(id(n) not in layouts for g in groups for n in g.inputs):
        if impl is None:
            from .device import cpu_backend
            impl, xp = cpu_backend().impl, cpu_backend().xp
        layouts = _layouts.derive(partition, layouts, impl, xp)
    chosen = _in_place.choose(graph, partition, updates, layouts) if updates else {}
    names = {id(n): f"%{i}" for i, n in enumerate(graph.nodes)}  # as graph.text()
    kernels = [lower.lower(g, layouts, names, chosen, "c" if cpu else "cuda") for g in groups]
    return KernelPlan(partition, kernels, layouts, chosen)

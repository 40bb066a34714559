"""Compiled eager backward: a backward graph that a training loop runs again and again is turned
into a compiled `Program` (fused C kernels, externs for the rest) the second time its structure
comes back (`POLICY.backward_compile_at`), instead of being interpreted node by node every
step.

Autograd already caches one backward graph per forward structure (`autograd._plan`); this module
attaches a `BackwardRunner` to each cached graph. The runner interprets the uses before
`POLICY.backward_compile_at` (a graph seen once is not worth a build), compiles there, and
keeps one program per input layout (a program's kernels are generated for the strides they were
built with). A graph the compiler
cannot take (a custom Function's backward, random numbers, a crossing of devices, a
data-dependent shape) and graphs too small for kernels to win stay with the interpreter, as
does everything when no C compiler is found (one warning) or FUSETORCH_EAGER_COMPILE=0.
"""
from __future__ import annotations

import itertools
import weakref

from .._policy import POLICY, note
from ..ir.graph import Graph
from ..runtime.schedule import Schedule
from ..runtime import build as _build
from ..runtime.runner import Runner  # (first: it loads runtime.device before eager_kernels)
from ..runtime.program import kernel_safe, obtain, why_interpreted
from ..ir.roles import Role


class BackwardRunner:
    """Runs one cached backward graph: interpreted, or through a compiled program. Each
    decision, and why, is noted for `fusetorch.compiler.explain` when it changes."""

    __slots__ = ("graph", "uses", "programs", "compilable", "crosses_device", "interpreter",
                 "label", "why", "_schedule")

    def __init__(self, graph: Graph):
        self.graph = graph
        # (asked after every run: gradients then go where their forward values live)
        self.crosses_device = any(Role.CROSSES_DEVICE in n.opdef.roles for n in graph.nodes)
        self.interpreter = None  # made at the first interpreted run, per array module
        self._schedule = None  # the graph's Schedule: its interpreters' and tensor-mode runs'
        self.uses = 0
        self.programs: dict = {}  # input layout -> Program (None: not built, interpret)
        self.compilable = POLICY.backward_programs and all(n.opdef.compilable for n in graph.nodes)
        self.label = (f"#{next(_NUMBERS)}", f"({len(graph.nodes)} nodes)")
        self.why = None  # the code last noted

    def run(self, arrays: list, be, hook=None, consume: bool = False) -> list:
        """`hook`: a profiler's, told as each interpreted node starts and ends. `consume`: the
        caller hands the arrays over (the saved values of a backward that retains no graph),
        so each may be let go after its last reader."""
        self.uses += 1
        at = POLICY.backward_compile_at
        if self.compilable and self.uses >= at and be.device.type == "cpu":
            program = self._program(arrays, be)
            if program is not None:
                return program.run(arrays, consume)
        elif self.uses < at:  # (noted at each of these uses: its count is in the reason)
            self.why = "first_use"
            note("backward", self.label, "first_use", self.uses, at)
        elif not self.compilable:
            self._decide(*self._not_compilable())
        elif be.device.type != "cpu":
            self._decide("not_cpu", be.device.type)
        return self.interpreted(arrays, be, hook, consume)

    def interpreted(self, arrays: list, be, hook=None, consume: bool = False) -> list:
        """The graph interpreted (anomaly mode's checks run it so, node by node)."""
        interpreter = self.interpreter
        if interpreter is None or interpreter.xp is not be.xp:
            interpreter = self.interpreter = Runner(self.graph, be.impl, be.xp,
                                                    schedule=self.schedule())
        return interpreter.run(arrays, consume=consume, hook=hook)

    def schedule(self) -> Schedule:
        """The graph's slots, steps and drop points, made once for every way it runs
        (interpreted on arrays, or on Tensors through dispatch: `autograd._run_recorded`)."""
        s = self._schedule
        if s is None:
            s = self._schedule = Schedule(self.graph)
        return s

    def _decide(self, code: str, *args) -> None:
        if code != self.why:
            self.why = code
            note("backward", self.label, code, *args)

    def _not_compilable(self) -> tuple:
        if not POLICY.backward_programs:
            return ("off", "backward_programs")
        op = next((n.op for n in self.graph.nodes if not n.opdef.compilable), None)
        if op is None:  # (compilable ops, and yet off: `obtain` found no compiler)
            return ("no_compiler", _build.last_unavailable)
        return ("not_compilable", op)

    def _program(self, arrays: list, be):
        # an array kernels may not read (frombuffer at an odd offset, which PyTorch accepts) is
        # interpreted, also when a program exists for its shape and strides: the program's
        # layout guard would refuse it
        if not kernel_safe(arrays):
            self._decide("unaligned")
            return None
        key = tuple((a.shape, a.strides) for a in arrays)
        if key in self.programs:
            program = self.programs[key]
            if self.why != "program" and program is not None:
                self.why = "program"
                note("backward", self.label, "program", weakref.ref(program))
            return program
        if len(self.programs) >= POLICY.backward_layouts:
            self._decide("layout_limit", POLICY.backward_layouts)
            return None
        why = why_interpreted(arrays)
        if why is not None:
            self._decide(*why)
            return None
        program = self.programs[key] = obtain(self.graph, be, arrays, role="backward",
                                              tiered=True)
        if program is None:  # no compiler here (said once): interpret from now on
            self.compilable = False
            self._decide("no_compiler", _build.last_unavailable)
        else:
            self.why = "program"
            note("backward", self.label, "program", weakref.ref(program))
        return program


_NUMBERS = itertools.count(1)

